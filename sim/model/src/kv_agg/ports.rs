//! Port structs of the `kv_agg` block, one pair per stream width, and
//! width-independent views of them for the driver.

/// Width-independent inputs of the engine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InView {
    /// `s_tdata` as 32-bit words, word 0 = bits 31:0.
    pub s_tdata: Vec<u32>,
    /// `s_tlast`.
    pub s_tlast: bool,
    /// `s_tvalid`.
    pub s_tvalid: bool,
    /// `s_tuser_size`.
    pub s_tuser_size: u16,
    /// `s_tret`: the packet's return address (97 bits).
    pub s_tret: [u32; 4],
    /// `m_tready`.
    pub m_tready: bool,
    /// `a_tready`.
    pub a_tready: bool,
    /// `eng_raddr`.
    pub eng_raddr: u16,
    /// `eng_re`.
    pub eng_re: bool,
    /// `eng_waddr`.
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
    /// `m_tdata` words.
    pub m_tdata: Vec<u32>,
    /// `m_tkeep`, one bit per lane.
    pub m_tkeep: u8,
    /// `m_tuser`.
    pub m_tuser: u8,
    /// `m_tlast`.
    pub m_tlast: bool,
    /// `m_tvalid`.
    pub m_tvalid: bool,
    /// `a_tdata`.
    pub a_tdata: u64,
    /// `a_tret`.
    pub a_tret: [u32; 4],
    /// `a_tjob`.
    pub a_tjob: u16,
    /// `a_tvalid`.
    pub a_tvalid: bool,
    /// `job_out`.
    pub job_out: u16,
    /// `eng_rdata`.
    pub eng_rdata: u32,
}

/// A port-struct pair of the engine at one width.
pub trait KvPorts {
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

macro_rules! kv_ports {
    ($marker:ident, $in:ident, $out:ident, $lanes:expr) => {
        crate::ports! {
            /// Inputs of the engine at this width.
            pub struct $in {
                /// Input stream data.
                pub s_tdata: [u32; 2 * $lanes] = 64 * $lanes,
                /// Input stream last beat.
                pub s_tlast: bool = 1,
                /// Input stream valid.
                pub s_tvalid: bool = 1,
                /// Packet length in bytes.
                pub s_tuser_size: u16 = 16,
                /// The packet's return address.
                pub s_tret: [u32; 4] = weft_regs::wire::RET_BITS,
                /// Record stream ready.
                pub m_tready: bool = 1,
                /// Ack stream ready.
                pub a_tready: bool = 1,
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
                /// Record stream data.
                pub m_tdata: [u32; 2 * $lanes] = 64 * $lanes,
                /// Record lanes present.
                pub m_tkeep: u8 = $lanes,
                /// Record kind.
                pub m_tuser: u8 = 2,
                /// Record stream last.
                pub m_tlast: bool = 1,
                /// Record stream valid.
                pub m_tvalid: bool = 1,
                /// Ack record.
                pub a_tdata: u64 = 64,
                /// The acked packet's return address.
                pub a_tret: [u32; 4] = weft_regs::wire::RET_BITS,
                /// The acked packet's job.
                pub a_tjob: u16 = 16,
                /// Ack valid.
                pub a_tvalid: bool = 1,
                /// The active job.
                pub job_out: u16 = 16,
                /// Engine register read data.
                pub eng_rdata: u32 = 32,
            }
        }

        /// The engine's ports at this width.
        pub struct $marker;

        impl KvPorts for $marker {
            type In = $in;
            type Out = $out;
            const LANES: usize = $lanes;
            fn inputs(v: &InView) -> $in {
                let mut s_tdata = [0u32; 2 * $lanes];
                for (d, s) in s_tdata.iter_mut().zip(&v.s_tdata) {
                    *d = *s;
                }
                $in {
                    s_tdata,
                    s_tlast: v.s_tlast,
                    s_tvalid: v.s_tvalid,
                    s_tuser_size: v.s_tuser_size,
                    s_tret: v.s_tret,
                    m_tready: v.m_tready,
                    a_tready: v.a_tready,
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
                    s_tret: i.s_tret,
                    m_tready: i.m_tready,
                    a_tready: i.a_tready,
                    eng_raddr: i.eng_raddr,
                    eng_re: i.eng_re,
                    eng_waddr: i.eng_waddr,
                    eng_wdata: i.eng_wdata,
                    eng_wstrb: i.eng_wstrb,
                    eng_we: i.eng_we,
                }
            }
            fn outputs_of(v: &OutView) -> $out {
                let mut m_tdata = [0u32; 2 * $lanes];
                for (d, s) in m_tdata.iter_mut().zip(&v.m_tdata) {
                    *d = *s;
                }
                $out {
                    s_tready: v.s_tready,
                    m_tdata,
                    m_tkeep: v.m_tkeep,
                    m_tuser: v.m_tuser,
                    m_tlast: v.m_tlast,
                    m_tvalid: v.m_tvalid,
                    a_tdata: v.a_tdata,
                    a_tret: v.a_tret,
                    a_tjob: v.a_tjob,
                    a_tvalid: v.a_tvalid,
                    job_out: v.job_out,
                    eng_rdata: v.eng_rdata,
                }
            }
            fn outputs(o: &$out) -> OutView {
                OutView {
                    s_tready: o.s_tready,
                    m_tdata: o.m_tdata.to_vec(),
                    m_tkeep: o.m_tkeep,
                    m_tuser: o.m_tuser,
                    m_tlast: o.m_tlast,
                    m_tvalid: o.m_tvalid,
                    a_tdata: o.a_tdata,
                    a_tret: o.a_tret,
                    a_tjob: o.a_tjob,
                    a_tvalid: o.a_tvalid,
                    job_out: o.job_out,
                    eng_rdata: o.eng_rdata,
                }
            }
        }
    };
}

kv_ports!(Lanes2, KvIn2, KvOut2, 2);
kv_ports!(Lanes4, KvIn4, KvOut4, 4);
kv_ports!(Lanes8, KvIn8, KvOut8, 8);
