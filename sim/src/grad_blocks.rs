//! Port glue between weft-hdl's gradient aggregation engine and
//! weft-model's `grad_agg` port structs, at the geometries the tests and
//! tools build it with.

use weft_hdl::grad_agg::GradAgg;
use weft_model::grad_agg::ports::{GradIn16, GradIn4, GradIn8, GradOut16, GradOut4, GradOut8};

macro_rules! grad_glue {
    ($($block:ty => $in:ident, $out:ident;)*) => {$(
        crate::hdl_ports!(
            $block,
            $in {
                s_tdata,
                s_tlast,
                s_tvalid,
                s_tuser_size,
                m_tready,
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
                m_tuser,
                m_tlast,
                m_tvalid,
                eng_rdata,
            }
        );
    )*};
}

grad_glue! {
    GradAgg<4, 128, 2, 2, 3> => GradIn4, GradOut4;
    GradAgg<4, 128, 3, 1, 3> => GradIn4, GradOut4;
    GradAgg<4, 128, 1, 4, 3> => GradIn4, GradOut4;
    GradAgg<8, 256, 3, 2, 4> => GradIn8, GradOut8;
    GradAgg<16, 512, 8, 4, 10> => GradIn16, GradOut16;
    GradAgg<16, 512, 4, 4, 6> => GradIn16, GradOut16;
}
