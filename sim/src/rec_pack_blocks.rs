//! Port glue of `rec_pack`.

use weft_hdl::rec_pack::RecPack;
use weft_model::rec_pack::{RecPackIn, RecPackOut};

crate::hdl_ports!(
    RecPack,
    RecPackIn {
        s_tdata,
        s_tkeep,
        s_tuser,
        s_tvalid,
        max,
        wait_cycles,
        job,
        seq_we,
        seq_wdata,
        h_ready,
        m_tready,
    },
    RecPackOut {
        s_tready,
        seq,
        h_valid,
        h_app,
        h_blen,
        m_tdata,
        m_tvalid,
        ev_frame,
    }
);
