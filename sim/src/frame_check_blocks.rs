//! Port glue of `frame_check`: the card's build (`AB = 9`) and a small
//! buffer for tests of the capacity rule (`AB = 6`, 63 beats).

use weft_hdl::frame_check::FrameCheck;
use weft_model::frame_check::{FrameCheckIn, FrameCheckOut};

macro_rules! frame_check_glue {
    ($($ab:literal),*) => {$(
        crate::hdl_ports!(
            FrameCheck<$ab>,
            FrameCheckIn {
                s_tdata,
                s_tkeep,
                s_tlast,
                s_tvalid,
                s_tuser_size,
                m_tready,
            },
            FrameCheckOut {
                s_tready,
                m_tdata,
                m_tkeep,
                m_tlast,
                m_tvalid,
                m_tuser_size,
                ev_frame,
                ev_bad,
            }
        );
    )*};
}

frame_check_glue!(6, 9);
