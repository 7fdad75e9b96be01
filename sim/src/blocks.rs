//! Port glue between weft-hdl's blocks and weft-model's port structs.

use weft_hdl::csr::Csr;
use weft_model::csr::{CsrIn, CsrOut};

crate::hdl_ports!(
    Csr,
    CsrIn {
        s_axil_awaddr,
        s_axil_awvalid,
        s_axil_wdata,
        s_axil_wstrb,
        s_axil_wvalid,
        s_axil_bready,
        s_axil_araddr,
        s_axil_arvalid,
        s_axil_rready,
        eng_rdata,
    },
    CsrOut {
        s_axil_awready,
        s_axil_wready,
        s_axil_bresp,
        s_axil_bvalid,
        s_axil_arready,
        s_axil_rdata,
        s_axil_rresp,
        s_axil_rvalid,
        irq,
        eng_raddr,
        eng_re,
        eng_waddr,
        eng_wdata,
        eng_wstrb,
        eng_we,
    }
);
