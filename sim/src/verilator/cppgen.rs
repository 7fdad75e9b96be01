//! The C++ side: validating the port list, generating the C ABI wrapper,
//! and reading what Verilator generated (the port declarations of `Vtop.h`
//! and the class lists of `Vtop_classes.mk`).

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use super::{Dir, ModelSource, PortSpec, VerilatorError};

/// Version of the wrapper ABI; `weft_abi_version()` returns it.
/// 2: `weft_tick` takes a mask of rising clocks (several clocks).
/// 3: `weft_step` (eval and tick in one call); clocks fall with the next
/// inputs when not tracing.
/// 4: the stream runner (`weft_run`, `weft_push`, `weft_pop`, ...; see
/// [`super::streams`]).
pub(crate) const ABI_VERSION: u32 = 4;

/// Most clocks a design may have: `weft_tick`'s mask is 32 bits.
pub(crate) const MAX_CLOCKS: usize = 32;

/// The validated port layout of a design.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub(crate) top: String,
    /// Clock inputs, in mask bit order.
    pub(crate) clocks: Vec<String>,
    /// Inputs in port order, the clocks excluded.
    pub(crate) inputs: Vec<PortSpec>,
    /// Outputs in port order.
    pub(crate) outputs: Vec<PortSpec>,
}

impl Layout {
    pub(crate) fn in_words(&self) -> usize {
        self.inputs.iter().map(PortSpec::words).sum()
    }

    pub(crate) fn out_words(&self) -> usize {
        self.outputs.iter().map(PortSpec::words).sum()
    }

    /// The string `weft_signature()` of a matching library returns.
    pub(crate) fn signature(&self, trace: bool) -> String {
        let clocks = if self.clocks.is_empty() {
            "-".to_string()
        } else {
            self.clocks.join(",")
        };
        let mut s = format!(
            "weft-abi{ABI_VERSION};top={};trace={};clocks={clocks}",
            self.top,
            u8::from(trace),
        );
        for p in &self.inputs {
            let _ = write!(s, ";i:{}:{}", p.name, p.width);
        }
        for p in &self.outputs {
            let _ = write!(s, ";o:{}:{}", p.name, p.width);
        }
        s
    }
}

/// A Verilog simple identifier (what the wrapper and the cache support).
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// Check the top name and port list, and split the ports into inputs
/// (clocks excluded) and outputs.
pub(crate) fn layout(src: &ModelSource) -> Result<Layout, VerilatorError> {
    if !is_identifier(&src.top) {
        return Err(VerilatorError::Ports(format!(
            "top module name {:?} is not a plain Verilog identifier",
            src.top
        )));
    }
    let mut seen = HashSet::new();
    for p in &src.ports {
        if !is_identifier(&p.name) {
            return Err(VerilatorError::Ports(format!(
                "port name {:?} is not a plain Verilog identifier",
                p.name
            )));
        }
        if p.width == 0 {
            return Err(VerilatorError::Ports(format!(
                "port {} has width 0",
                p.name
            )));
        }
        if !seen.insert(p.name.as_str()) {
            return Err(VerilatorError::Ports(format!(
                "port {} is listed twice",
                p.name
            )));
        }
    }
    if src.clocks.len() > MAX_CLOCKS {
        return Err(VerilatorError::Ports(format!(
            "{} clocks: at most {MAX_CLOCKS} are supported",
            src.clocks.len()
        )));
    }
    for (i, clk) in src.clocks.iter().enumerate() {
        if src.clocks[..i].contains(clk) {
            return Err(VerilatorError::Ports(format!(
                "clock {clk} is listed twice"
            )));
        }
        match src.ports.iter().find(|p| &p.name == clk) {
            None => {
                return Err(VerilatorError::Ports(format!(
                    "clock {clk} is not in the port list"
                )))
            }
            Some(p) if p.dir != Dir::In || p.width != 1 => {
                return Err(VerilatorError::Ports(format!(
                    "clock {clk} must be a 1-bit input"
                )))
            }
            Some(_) => {}
        }
    }
    let is_clock = |p: &PortSpec| src.clocks.contains(&p.name);
    Ok(Layout {
        top: src.top.clone(),
        clocks: src.clocks.clone(),
        inputs: src
            .ports
            .iter()
            .filter(|p| p.dir == Dir::In && !is_clock(p))
            .cloned()
            .collect(),
        outputs: src
            .ports
            .iter()
            .filter(|p| p.dir == Dir::Out)
            .cloned()
            .collect(),
    })
}

/// Mask of the valid bits of a port's top word.
fn top_mask(width: usize) -> u32 {
    match width % 32 {
        0 => u32::MAX,
        r => (1u32 << r) - 1,
    }
}

/// The C++ wrapper. It refers to ports through the macros `WEFT_CLK<n>`,
/// `WEFT_I<n>` and `WEFT_O<n>`, defined in `weft_ports.h` (written by
/// [`ports_header`] once Verilator has named the C++ members), so that the
/// wrapper text, part of the cache key, is known before verilating.
pub(crate) fn wrapper(layout: &Layout, trace: bool) -> String {
    let mut set = String::new();
    let mut k = 0usize;
    for (i, p) in layout.inputs.iter().enumerate() {
        let n = p.words();
        let mask = top_mask(p.width);
        let m = format!("t->WEFT_I{i}");
        match p.width {
            0..=8 => {
                let _ = writeln!(set, "    {m} = static_cast<CData>(in[{k}] & {mask:#x}u);");
            }
            9..=16 => {
                let _ = writeln!(set, "    {m} = static_cast<SData>(in[{k}] & {mask:#x}u);");
            }
            17..=32 => {
                let _ = writeln!(set, "    {m} = static_cast<IData>(in[{k}] & {mask:#x}u);");
            }
            33..=64 => {
                let _ = writeln!(
                    set,
                    "    {m} = static_cast<QData>(in[{k}]) | (static_cast<QData>(in[{}] & {mask:#x}u) << 32);",
                    k + 1
                );
            }
            _ => {
                let _ = writeln!(
                    set,
                    "    for (int j = 0; j < {}; ++j) {m}[j] = in[{k} + j];",
                    n - 1
                );
                let _ = writeln!(set, "    {m}[{}] = in[{}] & {mask:#x}u;", n - 1, k + n - 1);
            }
        }
        k += n;
    }

    let mut get = String::new();
    let mut k = 0usize;
    for (i, p) in layout.outputs.iter().enumerate() {
        let n = p.words();
        let mask = top_mask(p.width);
        let m = format!("t->WEFT_O{i}");
        match p.width {
            0..=32 => {
                let _ = writeln!(
                    get,
                    "    out[{k}] = static_cast<uint32_t>({m}) & {mask:#x}u;"
                );
            }
            33..=64 => {
                let _ = writeln!(
                    get,
                    "    {{ const QData v = {m}; out[{k}] = static_cast<uint32_t>(v); out[{}] = static_cast<uint32_t>(v >> 32) & {mask:#x}u; }}",
                    k + 1
                );
            }
            _ => {
                let _ = writeln!(
                    get,
                    "    for (int j = 0; j < {}; ++j) out[{k} + j] = {m}[j];",
                    n - 1
                );
                let _ = writeln!(get, "    out[{}] = {m}[{}] & {mask:#x}u;", k + n - 1, n - 1);
            }
        }
        k += n;
    }

    // One line per clock and edge: the clocks of the mask go high together
    // before one eval (one edge instant), then low together.
    let mut rise = String::new();
    let mut fall = String::new();
    for i in 0..layout.clocks.len() {
        let _ = writeln!(
            rise,
            "        if (rising & {:#x}u) m->top->WEFT_CLK{i} = 1;",
            1u32 << i
        );
        let _ = writeln!(
            fall,
            "        if (rising & {:#x}u) m->top->WEFT_CLK{i} = 0;",
            1u32 << i
        );
    }
    let runner = super::streams::runner(layout, &set, &get);
    let fields = runner.fields;
    let run_code = runner.code;
    let signature = layout.signature(trace);
    let has_clock = u8::from(!layout.clocks.is_empty());
    let trace = u8::from(trace);
    format!(
        r#"// Generated by weft-sim's Verilator builder: a C ABI over the verilated
// model Vtop, with all inputs and all outputs packed as little-endian u32
// words (one FFI call per eval). Do not edit.
#define WEFT_TRACE {trace}
#define WEFT_HAS_CLOCK {has_clock}
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>
#include "verilated.h"
#include "Vtop.h"
#include "weft_ports.h"
#include "weft_trig.h"
#if WEFT_ONE_EVAL
#include "Vtop___024root.h"
#endif
#if WEFT_TRACE
#include "verilated_vcd_c.h"
#endif

#define WEFT_API extern "C" __attribute__((visibility("default")))

namespace {{
// An input stream's queue: the head frame goes in one beat a step.
struct WeftInStream {{
    std::deque<std::vector<uint8_t>> q;
    size_t beat = 0;
}};
// A frame an output stream finished, with the base step of its last beat.
struct WeftOutFrame {{
    std::vector<uint8_t> bytes;
    uint64_t step;
    uint32_t size;
}};
struct WeftOutStream {{
    std::vector<uint8_t> cur;
    std::deque<WeftOutFrame> done;
}};

struct WeftModel {{
    VerilatedContext* ctx = nullptr;
    Vtop* top = nullptr;
#if WEFT_TRACE
    VerilatedVcdC* tfp = nullptr;
#endif
    uint64_t last_dump = 0;
    uint64_t next_rise = 10;  // one step is 10 time units, edges at 10, 20, ...
    // Clocks raised by the last tick and not yet lowered: without a trace
    // they fall together with the next inputs, in one evaluation (rust-hdl
    // designs have no negedge logic, so nothing sees the fall by itself).
    uint32_t high = 0;
    // One evaluation a step in weft_run (weft_one_eval), and the triggers'
    // state with every clock low it needs.
    bool one_eval = false;
    bool trig_saved = false;
    CData trig_low[WEFT_NTRIG > 0 ? WEFT_NTRIG : 1] = {{0}};
{fields}}};

#if WEFT_ONE_EVAL
// The edge-detection state of every trigger (a clock's last value), as it
// is after an evaluation with every clock low: restored before a step that
// raises clocks in the same evaluation as its inputs change.
inline void weft_save_triggers(WeftModel* m) {{
    Vtop___024root* const r = m->top->rootp;
    int i = 0;
#define WEFT_SAVE(x) m->trig_low[i++] = r->x;
    WEFT_TRIGGERS(WEFT_SAVE)
#undef WEFT_SAVE
    m->trig_saved = true;
}}

inline void weft_restore_triggers(WeftModel* m) {{
    Vtop___024root* const r = m->top->rootp;
    int i = 0;
#define WEFT_RESTORE(x) r->x = m->trig_low[i++];
    WEFT_TRIGGERS(WEFT_RESTORE)
#undef WEFT_RESTORE
}}
#endif

#if WEFT_PHASED_EVAL
// Verilator 5.006's evaluation of a step whose only triggers are clock
// edges, without its loops: the input region once (its one trigger is the
// first iteration), the edges, the active region and the NBA region once.
// The loops would run the same and then only confirm, with three more
// trigger computations and six trigger-vector scans, that nothing else
// is triggered: the clocks do not change inside an evaluation.
inline void weft_phased_eval(Vtop___024root* r) {{
    r->__VicoTriggered.at(0U) = 1U;
    Vtop___024root___eval_ico(r);
    Vtop___024root___eval_triggers__act(r);
    r->__VnbaTriggered.clear();
    r->__VnbaTriggered.set(r->__VactTriggered);
    Vtop___024root___eval_act(r);
    Vtop___024root___eval_nba(r);
}}
#endif

// Lower the clocks the last tick left high (the caller then evaluates).
inline void weft_fall(WeftModel* m) {{
    const uint32_t rising = m->high;
    m->high = 0;
{fall}}}

inline void weft_at(WeftModel* m, uint64_t t) {{
    m->ctx->time(t);
#if WEFT_TRACE
    if (m->tfp) m->tfp->dump(t);
#endif
    m->last_dump = t;
}}

// Verilator's runtime keeps a per-thread "current context" (used by trace
// set-up, $display, $finish, ...) and a global "last context", and never
// clears them when a context is deleted. Every entry point binds the model's
// own context to the calling thread, and destroy unbinds it, so that
// neither ever points at a deleted context.
inline void weft_bind(WeftModel* m) {{
    if (VL_UNLIKELY(Verilated::threadContextp() != m->ctx)) Verilated::threadContextp(m->ctx);
}}

void weft_destroy(WeftModel* m) {{
    if (!m) return;
    if (m->ctx) weft_bind(m);
#if WEFT_TRACE
    if (m->tfp) {{
        // The inputs set since the last tick.
        if (m->tfp->isOpen() && m->last_dump < m->next_rise - 4) weft_at(m, m->next_rise - 4);
        m->tfp->close();
        delete m->tfp;
    }}
#endif
    if (m->top) {{
        m->top->final();
        delete m->top;
    }}
    delete m->ctx;
    delete m;
    Verilated::threadContextp(nullptr);
}}
}}  // namespace

WEFT_API uint32_t weft_abi_version(void) {{ return {ABI_VERSION}u; }}

// A training build (linked with gcc's -fprofile-generate) writes its
// profile beside its objects; any other build has no gcov runtime, the
// weak symbol stays null and this returns 0.
extern "C" void __gcov_dump(void) __attribute__((weak));
WEFT_API int32_t weft_dump_profile(void) {{
    if (!__gcov_dump) return 0;
    __gcov_dump();
    return 1;
}}

WEFT_API const char* weft_signature(void) {{ return "{signature}"; }}

// status: 0 ok, 1 tracing not built in, 2 VCD file not opened, 3 exception.
WEFT_API void* weft_new(const char* vcd_path, int32_t* status) {{
    WeftModel* m = nullptr;
    *status = 0;
    try {{
        m = new WeftModel();
        m->ctx = new VerilatedContext();
#if WEFT_TRACE
        if (vcd_path) m->ctx->traceEverOn(true);
#else
        if (vcd_path) {{
            weft_destroy(m);
            *status = 1;
            return nullptr;
        }}
#endif
        m->top = new Vtop(m->ctx, "TOP");
#if WEFT_TRACE
        if (vcd_path) {{
            m->tfp = new VerilatedVcdC();
            m->top->trace(m->tfp, 99);
            m->tfp->open(vcd_path);
            if (!m->tfp->isOpen()) {{
                weft_destroy(m);
                *status = 2;
                return nullptr;
            }}
        }}
#endif
        m->top->eval();  // initial blocks, settle
        weft_at(m, 0);
        return m;
    }} catch (...) {{
        weft_destroy(m);
        *status = 3;
        return nullptr;
    }}
}}

WEFT_API void weft_free(void* p) {{ weft_destroy(static_cast<WeftModel*>(p)); }}

namespace {{
inline void weft_eval_in(WeftModel* m, const uint32_t* in, uint32_t* out) {{
    Vtop* const t = m->top;
    (void)in;
    (void)out;
{set}    weft_fall(m);
    t->eval();
{get}}}

// One base step: bit i of `rising` raises clock i; all of them rise at one
// instant (one eval). When tracing they fall at once (another eval) and the
// state set by the last evals is dumped just after the previous falling
// edge (rise - 4), then at each edge; otherwise they fall with the next
// inputs (or at the next tick, if no inputs come first).
#if WEFT_ONE_EVAL && !WEFT_TRACE
// One base step in one evaluation: the clocks of the last step go low and
// those of `rising` high at once, with the inputs already set, and the
// triggers are told every clock was low before, so the evaluation settles
// the new inputs and then takes the edge, as the two evaluations of
// weft_eval_in and weft_tick_in do. What it cannot give is the outputs
// between the two: a caller that reads them before the edge reads those
// after the last edge, which is the same only where no input that changed
// reaches an output combinationally.
inline void weft_one_step(WeftModel* m, uint32_t rising) {{
    const uint64_t rise = m->next_rise;
    weft_fall(m);
    {{
{rise}    }}
    weft_restore_triggers(m);
#if WEFT_PHASED_EVAL
    weft_phased_eval(m->top->rootp);
#elif WEFT_DIRECT_EVAL
    Vtop___024root___eval(m->top->rootp);
#else
    m->top->eval();
#endif
    weft_at(m, rise);
    m->high = rising;
    m->next_rise = rise + 10;
}}
#endif

inline void weft_tick_in(WeftModel* m, uint32_t rising) {{
    const uint64_t rise = m->next_rise;
    if (m->last_dump < rise - 4) weft_at(m, rise - 4);
#if WEFT_HAS_CLOCK
    if (rising != 0) {{
        if (m->high != 0) {{
            weft_fall(m);
            m->top->eval();
        }}
{rise}        m->top->eval();
        weft_at(m, rise);
        m->high = rising;
#if WEFT_TRACE
        if (m->tfp) {{
            weft_fall(m);
            m->top->eval();
            weft_at(m, rise + 5);
        }}
#endif
    }}
#else
    (void)rising;
    m->top->eval();
    weft_at(m, rise);
#endif
    m->next_rise = rise + 10;
}}
}}  // namespace

WEFT_API void weft_eval(void* p, const uint32_t* in, uint32_t* out) {{
    WeftModel* const m = static_cast<WeftModel*>(p);
    weft_bind(m);
    weft_eval_in(m, in, out);
}}

WEFT_API void weft_tick(void* p, uint32_t rising) {{
    WeftModel* const m = static_cast<WeftModel*>(p);
    weft_bind(m);
    weft_tick_in(m, rising);
}}

// weft_eval then weft_tick, in one call: the outputs are those before the
// edge.
WEFT_API void weft_step(void* p, const uint32_t* in, uint32_t* out, uint32_t rising) {{
    WeftModel* const m = static_cast<WeftModel*>(p);
    weft_bind(m);
    weft_eval_in(m, in, out);
    weft_tick_in(m, rising);
}}
{run_code}"#
    )
}

/// A port declaration of the generated `Vtop.h`, e.g. `VL_INW(&x,69,0,3);`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeaderPort {
    pub(crate) cname: String,
    /// `"IN"`, `"OUT"` or `"INOUT"`.
    pub(crate) dir: String,
    /// `"8"`, `"16"`, `""` (32), `"64"` or `"W"`.
    pub(crate) kind: String,
    pub(crate) width: usize,
}

/// Every `VL_IN*`/`VL_OUT*`/`VL_INOUT*` declaration of a model header.
pub(crate) fn header_ports(header: &str) -> Vec<HeaderPort> {
    let mut ports = Vec::new();
    for line in header.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("VL_") else {
            continue;
        };
        let Some((mac, args)) = rest.split_once('(') else {
            continue;
        };
        let (dir, kind) = if let Some(k) = mac.strip_prefix("INOUT") {
            ("INOUT", k)
        } else if let Some(k) = mac.strip_prefix("IN") {
            ("IN", k)
        } else if let Some(k) = mac.strip_prefix("OUT") {
            ("OUT", k)
        } else {
            continue;
        };
        if !matches!(kind, "" | "8" | "16" | "64" | "W") {
            continue;
        }
        let Some(args) = args.strip_suffix(");") else {
            continue;
        };
        let parts: Vec<&str> = args.split(',').map(str::trim).collect();
        if parts.len() < 3 {
            continue;
        }
        let Some(cname) = parts[0].strip_prefix('&') else {
            continue;
        };
        let (Ok(msb), Ok(lsb)) = (parts[1].parse::<i64>(), parts[2].parse::<i64>()) else {
            continue;
        };
        ports.push(HeaderPort {
            cname: cname.to_string(),
            dir: dir.to_string(),
            kind: kind.to_string(),
            width: (msb - lsb).unsigned_abs() as usize + 1,
        });
    }
    ports
}

/// Verilator's C++ spelling of a Verilog identifier (its
/// `AstNode::encodeName`): `__` becomes `___05F`, other non-alphanumerics
/// `__0XX`. C++ keywords additionally get a `__SYM__` prefix, which
/// [`ports_header`] tries as a second candidate.
pub(crate) fn encode_name(name: &str) -> String {
    let b = name.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let ok = if i == 0 {
            c.is_ascii_alphabetic()
        } else {
            c.is_ascii_alphanumeric()
        };
        if ok {
            out.push(c as char);
        } else if c == b'_' {
            if b.get(i + 1) == Some(&b'_') {
                out.push_str("___05F");
                i += 1;
            } else {
                out.push('_');
            }
        } else {
            let _ = write!(out, "__0{c:02X}");
        }
        i += 1;
    }
    out
}

fn expected_kind(width: usize) -> &'static str {
    match width {
        0..=8 => "8",
        9..=16 => "16",
        17..=32 => "",
        33..=64 => "64",
        _ => "W",
    }
}

/// Match the port list against the ports Verilator declared in `Vtop.h` and
/// write `weft_ports.h`, which maps the wrapper's port macros to the C++
/// member names. Every design port must be listed, with its width and
/// direction.
pub(crate) fn ports_header(
    layout: &Layout,
    header: &[HeaderPort],
) -> Result<String, VerilatorError> {
    let by_name: HashMap<&str, &HeaderPort> =
        header.iter().map(|h| (h.cname.as_str(), h)).collect();
    let mut used = HashSet::new();
    let mut out = String::from(
        "// Generated by weft-sim after verilating: the C++ member names of the ports.\n",
    );
    let mut resolve = |p: &PortSpec, mac: String| -> Result<(), VerilatorError> {
        let enc = encode_name(&p.name);
        let sym = format!("__SYM__{enc}");
        let h = by_name
            .get(enc.as_str())
            .or_else(|| by_name.get(sym.as_str()))
            .ok_or_else(|| {
                VerilatorError::Ports(format!(
                    "port {} is not a port of the verilated top module (it has: {})",
                    p.name,
                    header
                        .iter()
                        .map(|h| h.cname.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
        let want_dir = match p.dir {
            Dir::In => "IN",
            Dir::Out => "OUT",
        };
        if h.dir != want_dir {
            return Err(VerilatorError::Ports(format!(
                "port {} is listed as {:?} but the design declares it {}",
                p.name,
                p.dir,
                h.dir.to_lowercase()
            )));
        }
        if h.width != p.width || h.kind != expected_kind(p.width) {
            return Err(VerilatorError::Ports(format!(
                "port {} is listed with width {} but the design declares width {}",
                p.name, p.width, h.width
            )));
        }
        used.insert(h.cname.clone());
        let _ = writeln!(out, "#define {mac} {}", h.cname);
        Ok(())
    };
    for (i, clk) in layout.clocks.iter().enumerate() {
        resolve(&PortSpec::input(clk.clone(), 1), format!("WEFT_CLK{i}"))?;
    }
    for (i, p) in layout.inputs.iter().enumerate() {
        resolve(p, format!("WEFT_I{i}"))?;
    }
    for (i, p) in layout.outputs.iter().enumerate() {
        resolve(p, format!("WEFT_O{i}"))?;
    }
    let missing: Vec<String> = header
        .iter()
        .filter(|h| !used.contains(&h.cname))
        .map(|h| format!("{} {} [{}]", h.dir.to_lowercase(), h.cname, h.width))
        .collect();
    if !missing.is_empty() {
        return Err(VerilatorError::Ports(format!(
            "the design has ports missing from the port list: {}",
            missing.join(", ")
        )));
    }
    Ok(out)
}

/// The generated `.cpp` files of a model, by optimisation class.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Classes {
    pub(crate) fast: Vec<String>,
    pub(crate) slow: Vec<String>,
}

/// Read `VM_CLASSES_FAST`, `VM_SUPPORT_FAST`, `VM_CLASSES_SLOW` and
/// `VM_SUPPORT_SLOW` from `Vtop_classes.mk` (class names, without `.cpp`).
pub(crate) fn classes_mk(text: &str) -> Classes {
    let mut c = Classes::default();
    let mut current: Option<bool> = None; // Some(true) = fast list
    for line in text.lines() {
        let mut body = line.trim();
        if current.is_none() {
            let Some((var, rest)) = body.split_once('=') else {
                continue;
            };
            let var = var.trim_end_matches(['+', ':', '?']).trim();
            current = match var {
                "VM_CLASSES_FAST" | "VM_SUPPORT_FAST" => Some(true),
                "VM_CLASSES_SLOW" | "VM_SUPPORT_SLOW" => Some(false),
                _ => continue,
            };
            body = rest.trim();
        }
        let continued = body.ends_with('\\');
        let body = body.trim_end_matches('\\');
        for word in body.split_whitespace() {
            match current {
                Some(true) => c.fast.push(word.to_string()),
                Some(false) => c.slow.push(word.to_string()),
                None => {}
            }
        }
        if !continued {
            current = None;
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_names_like_verilator() {
        assert_eq!(encode_name("count"), "count");
        assert_eq!(encode_name("_x"), "_x");
        assert_eq!(encode_name("a__b"), "a___05Fb");
        assert_eq!(encode_name("esc$id"), "esc__024id");
    }

    #[test]
    fn parses_header_ports() {
        let h = "    VL_IN8(&clk,0,0);\n    VL_OUTW(&wide_out,69,0,3);\n    VL_OUT64(&cnt40,39,0);\n    VL_IN(&x,31,0);\n    VL_IN16(&__SYM__new,15,1);\n    VL_UNCOPYABLE(Vtop);\n";
        let p = header_ports(h);
        assert_eq!(p.len(), 5);
        assert_eq!(p[1].cname, "wide_out");
        assert_eq!(
            (p[1].dir.as_str(), p[1].kind.as_str(), p[1].width),
            ("OUT", "W", 70)
        );
        assert_eq!((p[3].kind.as_str(), p[3].width), ("", 32));
        assert_eq!((p[4].cname.as_str(), p[4].width), ("__SYM__new", 15));
    }

    #[test]
    fn parses_classes_mk() {
        let mk =
            "VM_C11 = 1\nVM_CLASSES_FAST += \\\n\tVtop \\\n\tVtop___024root__DepSet_h1__0 \\\n\n\
                  VM_CLASSES_SLOW += \\\n\tVtop___024root__Slow \\\n\n\
                  VM_SUPPORT_FAST += \\\n\tVtop__Trace__0 \\\n\n\
                  VM_SUPPORT_SLOW += \\\n\tVtop__Syms \\\n\n\
                  VM_GLOBAL_FAST += \\\n\tverilated \\\n\n";
        let c = classes_mk(mk);
        assert_eq!(
            c.fast,
            vec!["Vtop", "Vtop___024root__DepSet_h1__0", "Vtop__Trace__0"]
        );
        assert_eq!(c.slow, vec!["Vtop___024root__Slow", "Vtop__Syms"]);
    }

    #[test]
    fn masks() {
        assert_eq!(top_mask(1), 1);
        assert_eq!(top_mask(32), u32::MAX);
        assert_eq!(top_mask(40), 0xff);
        assert_eq!(top_mask(70), 0x3f);
    }

    #[test]
    fn rejects_bad_port_lists() {
        let src = |ports: Vec<PortSpec>, clock: Option<&str>| ModelSource {
            verilog: String::new(),
            top: "top".into(),
            ports,
            clocks: clock.into_iter().map(String::from).collect(),
            split: true,
        };
        assert!(layout(&src(vec![PortSpec::input("a b", 1)], None)).is_err());
        assert!(layout(&src(vec![PortSpec::input("a", 0)], None)).is_err());
        assert!(layout(&src(
            vec![PortSpec::input("a", 1), PortSpec::output("a", 1)],
            None
        ))
        .is_err());
        assert!(layout(&src(vec![PortSpec::input("a", 1)], Some("clk"))).is_err());
        assert!(layout(&src(vec![PortSpec::input("clk", 2)], Some("clk"))).is_err());
        let l = layout(&src(
            vec![
                PortSpec::input("clk", 1),
                PortSpec::input("a", 70),
                PortSpec::output("b", 33),
            ],
            Some("clk"),
        ))
        .unwrap();
        assert_eq!((l.inputs.len(), l.in_words(), l.out_words()), (1, 3, 2));
        let two = |clocks: &[&str]| ModelSource {
            verilog: String::new(),
            top: "top".into(),
            ports: vec![
                PortSpec::input("wclk", 1),
                PortSpec::input("rclk", 1),
                PortSpec::input("a", 3),
            ],
            clocks: clocks.iter().map(|c| c.to_string()).collect(),
            split: true,
        };
        assert!(layout(&two(&["wclk", "wclk"])).is_err());
        assert!(layout(&two(&["wclk", "a"])).is_err());
        let l = layout(&two(&["rclk", "wclk"])).unwrap();
        assert_eq!(l.inputs.len(), 1);
        assert!(l.signature(false).contains(";clocks=rclk,wclk;"));
        let w = wrapper(&l, false);
        assert!(
            w.contains("if (rising & 0x1u) m->top->WEFT_CLK0 = 1;"),
            "{w}"
        );
        assert!(
            w.contains("if (rising & 0x2u) m->top->WEFT_CLK1 = 0;"),
            "{w}"
        );
    }
}
