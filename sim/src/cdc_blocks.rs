//! Port glue between weft-hdl's clock-domain crossing blocks and
//! weft-model's port structs (`weft_model::cdc`), with their clock lists.

use weft_hdl::cdc::{AsyncFifo, AxilCdc, Cdc2Phase, SyncBit};
use weft_model::cdc::axil::{AxilCdcIn, AxilCdcOut};
use weft_model::cdc::fifo::{FifoIn, FifoOut};
use weft_model::cdc::two_phase::{TwoPhaseIn, TwoPhaseOut};
use weft_model::cdc::{SyncBitIn, SyncBitOut};

crate::hdl_ports!(SyncBit, SyncBitIn { sig_in }, SyncBitOut { sig_out });

/// The dual-clock FIFO the witness tests run: 4 words of 16 bits, so `full`
/// is reached often.
pub type Fifo4 = AsyncFifo<rust_hdl::prelude::Bits<16>, 4, 3>;
/// The same at the typical depth of 16 words.
pub type Fifo16 = AsyncFifo<rust_hdl::prelude::Bits<16>, 16, 5>;

macro_rules! fifo_glue {
    ($($block:ty),*) => {$(
        crate::hdl_ports!(
            $block,
            clocks [wr_clock, rd_clock],
            FifoIn { reset, push, data_in, pop },
            FifoOut { full, data_out, empty }
        );
    )*};
}

fifo_glue!(Fifo4, Fifo16);

/// The two-phase crossing the witness tests run: one 16-bit word.
pub type TwoPhase16 = Cdc2Phase<rust_hdl::prelude::Bits<16>>;

crate::hdl_ports!(
    TwoPhase16,
    clocks [src_clock, dst_clock],
    TwoPhaseIn { src_valid, src_data, dst_ready },
    TwoPhaseOut { src_ready, dst_valid, dst_data }
);

crate::hdl_ports!(
    AxilCdc,
    clocks [s_aclk, m_aclk],
    AxilCdcIn {
        s_axil_awaddr,
        s_axil_awvalid,
        s_axil_wdata,
        s_axil_wstrb,
        s_axil_wvalid,
        s_axil_bready,
        s_axil_araddr,
        s_axil_arvalid,
        s_axil_rready,
        m_axil_awready,
        m_axil_wready,
        m_axil_bresp,
        m_axil_bvalid,
        m_axil_arready,
        m_axil_rdata,
        m_axil_rresp,
        m_axil_rvalid,
    },
    AxilCdcOut {
        s_axil_awready,
        s_axil_wready,
        s_axil_bresp,
        s_axil_bvalid,
        s_axil_arready,
        s_axil_rdata,
        s_axil_rresp,
        s_axil_rvalid,
        m_axil_awaddr,
        m_axil_awvalid,
        m_axil_wdata,
        m_axil_wstrb,
        m_axil_wvalid,
        m_axil_bready,
        m_axil_araddr,
        m_axil_arvalid,
        m_axil_rready,
    }
);
