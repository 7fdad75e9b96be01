//! Port glue between weft-hdl's `GradFanout` and weft-model's `grad_fanout`
//! port structs, at the beat counts the tests build it with (5 on the card).

use weft_hdl::grad_fanout::GradFanout;
use weft_model::grad_fanout::{FanoutIn, FanoutOut};

macro_rules! fanout_glue {
    ($($beats:literal),*) => {$(
        crate::hdl_ports!(
            GradFanout<$beats>,
            FanoutIn {
                s_tdata,
                s_tuser,
                s_tlast,
                s_tvalid,
                fb_mac,
                fb_ip,
                fb_port,
                wt_we,
                wt_addr,
                wt_data,
                h_ready,
                m_tready,
            },
            FanoutOut {
                s_tready,
                h_valid,
                h_dmac,
                h_dip,
                h_dport,
                h_host,
                h_tag,
                m_tdata,
                m_tvalid,
                ev_copy,
                ev_skip,
            }
        );
    )*};
}

fanout_glue!(2, 3, 5);
