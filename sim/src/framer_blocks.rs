//! Port glue of the framer (`weft_hdl::framer::Framer`,
//! `weft_model::framer`).

use weft_model::framer::{FramerIn, FramerOut};

crate::hdl_ports!(
    weft_hdl::framer::Framer,
    FramerIn {
        card_mac,
        card_ip,
        h_valid,
        h_dmac,
        h_dip,
        h_sport,
        h_dport,
        h_app,
        h_has_app,
        h_blen,
        h_host,
        h_tag,
        s_tdata,
        s_tvalid,
        m_tready,
    },
    FramerOut {
        h_ready,
        s_tready,
        m_tdata,
        m_tkeep,
        m_tlast,
        m_tvalid,
        m_tuser_size,
        m_host,
        m_tag,
    }
);
