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

macro_rules! kv_glue {
    ($($block:ty => $in:ident, $out:ident;)*) => {$(
        crate::hdl_ports!(
            $block,
            $in {
                s_tdata,
                s_tlast,
                s_tvalid,
                s_tuser_size,
                s_tret,
                m_tready,
                a_tready,
                eng_raddr,
                eng_re,
                eng_waddr,
                eng_wdata,
                eng_wstrb,
                eng_we,
            },
            $out {
                s_tready,
                m_tdata,
                m_tkeep,
                m_tuser,
                m_tlast,
                m_tvalid,
                a_tdata,
                a_tret,
                a_tjob,
                a_tvalid,
                job_out,
                eng_rdata,
            }
        );
    )*};
}

use weft_hdl::kv_agg::KvAgg;
use weft_model::kv_agg::ports::{KvIn2, KvIn4, KvIn8, KvOut2, KvOut4, KvOut8};

kv_glue! {
    KvAgg<2, 128, 2> => KvIn2, KvOut2;
    KvAgg<4, 256, 3> => KvIn4, KvOut4;
    KvAgg<8, 512, 9> => KvIn8, KvOut8;
    KvAgg<8, 512, 3> => KvIn8, KvOut8;
}

use weft_model::memops::driver::{MemIn, MemOut};

macro_rules! memops_glue {
    ($($k:literal),*) => {$(
        crate::hdl_ports!(
            weft_hdl::memops::Memops<$k>,
            MemIn {
                req_valid, req_src, req_op, req_al, req_ah, req_len, req_tag, req_dl, req_dh,
                out_ready, cin_valid, cin_stag, cin_status, cin_dl, cin_dh, cout_ready, mir_ready,
                eng_raddr, eng_re, eng_waddr, eng_wdata, eng_wstrb, eng_we,
            },
            MemOut {
                req_ready, out_valid, out_dst, out_op, out_al, out_ah, out_len, out_stag, out_dl,
                out_dh, cin_ready, cout_valid, cout_dst, cout_tag, cout_status, cout_dl, cout_dh,
                mir_valid, mir_src, mir_op, mir_al, mir_ah, mir_len, mir_tag, eng_rdata,
            }
        );
    )*};
}

memops_glue!(3, 8);

use weft_model::avm::{AvmIn, AvmOut};

crate::hdl_ports!(
    weft_hdl::avm::Avm,
    AvmIn {
        req_valid,
        req_write,
        req_addr,
        req_wdata,
        eng_raddr,
        eng_re,
        eng_waddr,
        eng_wdata,
        eng_wstrb,
        eng_we,
    },
    AvmOut {
        req_ready,
        resp_valid,
        resp_consumer,
        resp_fault,
        resp_data,
        reclaim_valid,
        reclaim_consumer,
        reclaim_vpage,
        eng_rdata,
    }
);

use weft_model::classify::{ClassifyIn, ClassifyOut};
use weft_model::steer::{DeframeIn, DeframeOut, Mux2In, Mux2Out, MuxIn, MuxOut, SliceIn, SliceOut};

crate::hdl_ports!(
    weft_hdl::steer::Slice,
    SliceIn {
        s_tdata,
        s_tkeep,
        s_tlast,
        s_tvalid,
        s_tuser_size,
        s_tuser_src,
        s_tuser_dst,
        s_tmeta,
        m_tready
    },
    SliceOut {
        s_tready,
        m_tdata,
        m_tkeep,
        m_tlast,
        m_tvalid,
        m_tuser_size,
        m_tuser_src,
        m_tuser_dst,
        m_tmeta
    }
);

crate::hdl_ports!(
    weft_hdl::classify::Classify,
    ClassifyIn {
        s_tdata,
        s_tkeep,
        s_tlast,
        s_tvalid,
        s_tuser_size,
        card_mac,
        card_ip,
        enable,
        m_tready
    },
    ClassifyOut {
        s_tready,
        m_tdata,
        m_tkeep,
        m_tlast,
        m_tvalid,
        m_tuser_size,
        m_tcls,
        m_tbad,
        m_teff
    }
);

crate::hdl_ports!(
    weft_hdl::steer::Deframe,
    DeframeIn {
        s_tdata,
        s_tkeep,
        s_tlast,
        s_tvalid,
        s_tuser_size,
        s_tcls,
        s_tbad,
        s_teff,
        m_tready
    },
    DeframeOut {
        s_tready,
        m_tdata,
        m_tkeep,
        m_tlast,
        m_tvalid,
        m_tuser_size,
        m_tdest,
        m_tret,
        ev_engine,
        ev_pass,
        ev_malformed
    }
);

crate::hdl_ports!(
    weft_hdl::steer::PktMux2<{ weft_model::steer::MUX2_META }>,
    Mux2In {
        s0_tdata,
        s0_tkeep,
        s0_tlast,
        s0_tvalid,
        s0_tuser_size,
        s0_tmeta,
        s1_tdata,
        s1_tkeep,
        s1_tlast,
        s1_tvalid,
        s1_tuser_size,
        s1_tmeta,
        m_tready,
    },
    Mux2Out {
        s0_tready,
        s1_tready,
        m_tdata,
        m_tkeep,
        m_tlast,
        m_tvalid,
        m_tuser_size,
        m_tmeta,
    }
);

crate::hdl_ports!(
    weft_hdl::steer::PktMux4,
    MuxIn {
        s0_tdata,
        s0_tkeep,
        s0_tlast,
        s0_tvalid,
        s0_tuser_size,
        s0_tuser_src,
        s0_tuser_dst,
        s1_tdata,
        s1_tkeep,
        s1_tlast,
        s1_tvalid,
        s1_tuser_size,
        s1_tuser_src,
        s1_tuser_dst,
        s2_tdata,
        s2_tkeep,
        s2_tlast,
        s2_tvalid,
        s2_tuser_size,
        s2_tuser_src,
        s2_tuser_dst,
        s3_tdata,
        s3_tkeep,
        s3_tlast,
        s3_tvalid,
        s3_tuser_size,
        s3_tuser_src,
        s3_tuser_dst,
        m_tready,
    },
    MuxOut {
        s0_tready,
        s1_tready,
        s2_tready,
        s3_tready,
        m_tdata,
        m_tkeep,
        m_tlast,
        m_tvalid,
        m_tuser_size,
        m_tuser_src,
        m_tuser_dst,
    }
);

use weft_model::top::{TopIn, TopOut};

crate::hdl_ports!(
    weft_hdl::top::WeftTop,
    clocks [axil_aclk, axis_aclk],
    TopIn {
        s_axil_awvalid, s_axil_awaddr, s_axil_wvalid, s_axil_wdata, s_axil_bready, s_axil_arvalid, s_axil_araddr, s_axil_rready, s_axis_qdma_h2c_tvalid, s_axis_qdma_h2c_tdata, s_axis_qdma_h2c_tkeep, s_axis_qdma_h2c_tlast, s_axis_qdma_h2c_tuser_size, s_axis_qdma_h2c_tuser_src, s_axis_qdma_h2c_tuser_dst, m_axis_qdma_c2h_tready, m_axis_adap_tx_250mhz_tready, s_axis_adap_rx_250mhz_tvalid, s_axis_adap_rx_250mhz_tdata, s_axis_adap_rx_250mhz_tkeep, s_axis_adap_rx_250mhz_tlast, s_axis_adap_rx_250mhz_tuser_size, s_axis_adap_rx_250mhz_tuser_src, s_axis_adap_rx_250mhz_tuser_dst, mod_rstn,
    },
    TopOut {
        s_axil_awready, s_axil_wready, s_axil_bvalid, s_axil_bresp, s_axil_arready, s_axil_rvalid, s_axil_rdata, s_axil_rresp, s_axis_qdma_h2c_tready, m_axis_qdma_c2h_tvalid, m_axis_qdma_c2h_tdata, m_axis_qdma_c2h_tkeep, m_axis_qdma_c2h_tlast, m_axis_qdma_c2h_tuser_size, m_axis_qdma_c2h_tuser_src, m_axis_qdma_c2h_tuser_dst, m_axis_adap_tx_250mhz_tvalid, m_axis_adap_tx_250mhz_tdata, m_axis_adap_tx_250mhz_tkeep, m_axis_adap_tx_250mhz_tlast, m_axis_adap_tx_250mhz_tuser_size, m_axis_adap_tx_250mhz_tuser_src, m_axis_adap_tx_250mhz_tuser_dst, s_axis_adap_rx_250mhz_tready, mod_rst_done,
    }
);
