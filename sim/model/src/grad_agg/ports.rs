//! Port structs of the `grad_agg` block, one pair per stream width, and
//! width-independent views of them for the model and the driver.

/// Width-independent inputs of the engine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InView {
    /// `s_tdata` as 32-bit lanes, lane 0 = bits 31:0.
    pub s_tdata: Vec<u32>,
    /// `s_tlast`.
    pub s_tlast: bool,
    /// `s_tvalid`.
    pub s_tvalid: bool,
    /// `s_tuser_size`: packet length in bytes.
    pub s_tuser_size: u16,
    /// `m_tready`.
    pub m_tready: bool,
    /// `eng_raddr` (word address).
    pub eng_raddr: u16,
    /// `eng_re`.
    pub eng_re: bool,
    /// `eng_waddr` (word address).
    pub eng_waddr: u16,
    /// `eng_wdata`.
    pub eng_wdata: u32,
    /// `eng_wstrb`.
    pub eng_wstrb: u8,
    /// `eng_we`.
    pub eng_we: bool,
}

/// Width-independent outputs of the engine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutView {
    /// `s_tready`.
    pub s_tready: bool,
    /// `m_tdata` lanes (0 while `m_tvalid` is low).
    pub m_tdata: Vec<u32>,
    /// `m_tuser`: the output packet's kind code.
    pub m_tuser: u8,
    /// `m_tlast`.
    pub m_tlast: bool,
    /// `m_tvalid`.
    pub m_tvalid: bool,
    /// `eng_rdata`.
    pub eng_rdata: u32,
}

/// A port-struct pair of the engine at one width.
pub trait GradPorts {
    /// Input struct.
    type In: crate::PortSet;
    /// Output struct.
    type Out: crate::PortSet;
    /// Lanes of this width.
    const LANES: usize;
    /// Build inputs from a view.
    fn inputs(v: &InView) -> Self::In;
    /// View inputs.
    fn in_view(i: &Self::In) -> InView;
    /// Build outputs from a view.
    fn outputs_of(v: &OutView) -> Self::Out;
    /// View outputs.
    fn outputs(o: &Self::Out) -> OutView;
}

macro_rules! grad_ports {
    ($marker:ident, $in:ident, $out:ident, $lanes:expr) => {
        crate::ports! {
            /// Inputs of the engine at this width.
            pub struct $in {
                /// Input stream data.
                pub s_tdata: [u32; $lanes] = 32 * $lanes,
                /// Input stream last beat.
                pub s_tlast: bool = 1,
                /// Input stream valid.
                pub s_tvalid: bool = 1,
                /// Packet length in bytes.
                pub s_tuser_size: u16 = 16,
                /// Output stream ready.
                pub m_tready: bool = 1,
                /// Engine register read address (word).
                pub eng_raddr: u16 = 14,
                /// Engine register read accepted.
                pub eng_re: bool = 1,
                /// Engine register write address (word).
                pub eng_waddr: u16 = 14,
                /// Engine register write data.
                pub eng_wdata: u32 = 32,
                /// Engine register write strobes.
                pub eng_wstrb: u8 = 4,
                /// Engine register write enable.
                pub eng_we: bool = 1,
            }
        }
        crate::ports! {
            /// Outputs of the engine at this width.
            pub struct $out {
                /// Input stream ready.
                pub s_tready: bool = 1,
                /// Output stream data.
                pub m_tdata: [u32; $lanes] = 32 * $lanes,
                /// Output packet kind (1 RESULT, 2 EVICT, 3 FALLBACK).
                pub m_tuser: u8 = 2,
                /// Output stream last beat.
                pub m_tlast: bool = 1,
                /// Output stream valid.
                pub m_tvalid: bool = 1,
                /// Engine register read data.
                pub eng_rdata: u32 = 32,
            }
        }

        /// The engine's ports at this width.
        pub struct $marker;

        impl GradPorts for $marker {
            type In = $in;
            type Out = $out;
            const LANES: usize = $lanes;
            fn inputs(v: &InView) -> $in {
                let mut s_tdata = [0u32; $lanes];
                for (d, s) in s_tdata.iter_mut().zip(&v.s_tdata) {
                    *d = *s;
                }
                $in {
                    s_tdata,
                    s_tlast: v.s_tlast,
                    s_tvalid: v.s_tvalid,
                    s_tuser_size: v.s_tuser_size,
                    m_tready: v.m_tready,
                    eng_raddr: v.eng_raddr,
                    eng_re: v.eng_re,
                    eng_waddr: v.eng_waddr,
                    eng_wdata: v.eng_wdata,
                    eng_wstrb: v.eng_wstrb,
                    eng_we: v.eng_we,
                }
            }
            fn in_view(i: &$in) -> InView {
                InView {
                    s_tdata: i.s_tdata.to_vec(),
                    s_tlast: i.s_tlast,
                    s_tvalid: i.s_tvalid,
                    s_tuser_size: i.s_tuser_size,
                    m_tready: i.m_tready,
                    eng_raddr: i.eng_raddr,
                    eng_re: i.eng_re,
                    eng_waddr: i.eng_waddr,
                    eng_wdata: i.eng_wdata,
                    eng_wstrb: i.eng_wstrb,
                    eng_we: i.eng_we,
                }
            }
            fn outputs_of(v: &OutView) -> $out {
                let mut m_tdata = [0u32; $lanes];
                for (d, s) in m_tdata.iter_mut().zip(&v.m_tdata) {
                    *d = *s;
                }
                $out {
                    s_tready: v.s_tready,
                    m_tdata,
                    m_tuser: v.m_tuser,
                    m_tlast: v.m_tlast,
                    m_tvalid: v.m_tvalid,
                    eng_rdata: v.eng_rdata,
                }
            }
            fn outputs(o: &$out) -> OutView {
                OutView {
                    s_tready: o.s_tready,
                    m_tdata: o.m_tdata.to_vec(),
                    m_tuser: o.m_tuser,
                    m_tlast: o.m_tlast,
                    m_tvalid: o.m_tvalid,
                    eng_rdata: o.eng_rdata,
                }
            }
        }
    };
}

grad_ports!(Lanes4, GradIn4, GradOut4, 4);
grad_ports!(Lanes8, GradIn8, GradOut8, 8);
grad_ports!(Lanes16, GradIn16, GradOut16, 16);
