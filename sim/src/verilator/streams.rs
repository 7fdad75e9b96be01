//! AXI4-Stream ports driven inside the model: the wrapper's own stream
//! runner.
//!
//! A design's AXI4-Stream bundles are found by their port names: an input
//! bundle `P` has inputs `P_tvalid` (1 bit), `P_tdata` (whole bytes),
//! `P_tkeep` (a bit per byte), `P_tlast` (1 bit) and the output
//! `P_tready` (1 bit), and may have a 16-bit input `P_tuser_size` (the
//! frame's length, as the OpenNIC shell's streams carry it); an output
//! bundle is the same with the directions swapped. For each, the wrapper
//! keeps a queue of frames (inputs) or of the frames collected (outputs),
//! and `weft_run` steps the design many base steps in one call, offering
//! each input queue's head one beat a step and collecting every beat an
//! output hands over. It does per step what a harness stepping the model
//! one [`weft_step`](super::cppgen) at a time does, in the same order
//! (drive, evaluate, hand-shake, clock edge), so both give the same run;
//! only the FFI call, the packing of the ports into words and the
//! harness's per-beat work go.

use super::cppgen::Layout;
use super::Dir;
use std::fmt::Write;

/// Which way a stream flows, seen from the design.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamDir {
    /// Into the design (`P_tvalid` an input).
    In,
    /// Out of the design.
    Out,
}

/// One AXI4-Stream bundle of a design.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stream {
    /// The ports' common prefix, e.g. `s_axis_qdma_h2c`.
    pub name: String,
    /// Its direction.
    pub dir: StreamDir,
    /// Bytes per beat (`P_tdata`'s width over 8).
    pub bytes: usize,
    /// Whether it has a 16-bit `P_tuser_size`.
    pub size: bool,
}

/// Widest beat the runner handles: 4096 bits (`P_tkeep` then has 512 bits;
/// beyond 64 it is a word array).
const MAX_BYTES: usize = 512;

/// The stream bundles of `layout`, inputs first, each in port order.
pub(crate) fn streams(layout: &Layout) -> Vec<Stream> {
    let mut found = Vec::new();
    for (dir, own) in [(StreamDir::In, Dir::In), (StreamDir::Out, Dir::Out)] {
        let (mine, theirs) = match own {
            Dir::In => (&layout.inputs, &layout.outputs),
            Dir::Out => (&layout.outputs, &layout.inputs),
        };
        let width = |list: &[super::PortSpec], name: &str| {
            list.iter().find(|p| p.name == name).map(|p| p.width)
        };
        for p in mine {
            let Some(prefix) = p.name.strip_suffix("_tvalid") else {
                continue;
            };
            if p.width != 1 {
                continue;
            }
            let Some(data) = width(mine, &format!("{prefix}_tdata")) else {
                continue;
            };
            if data % 8 != 0 || data == 0 || data / 8 > MAX_BYTES {
                continue;
            }
            let bytes = data / 8;
            if width(mine, &format!("{prefix}_tkeep")) != Some(bytes)
                || width(mine, &format!("{prefix}_tlast")) != Some(1)
                || width(theirs, &format!("{prefix}_tready")) != Some(1)
            {
                continue;
            }
            found.push(Stream {
                name: prefix.to_string(),
                dir,
                bytes,
                size: width(mine, &format!("{prefix}_tuser_size")) == Some(16),
            });
        }
    }
    found
}

/// The C++ spelling of a port member, through the wrapper's macros.
fn member(layout: &Layout, name: &str) -> String {
    if let Some(i) = layout.inputs.iter().position(|p| p.name == name) {
        return format!("t->WEFT_I{i}");
    }
    let i = layout
        .outputs
        .iter()
        .position(|p| p.name == name)
        .expect("streams() only lists bundles whose ports exist");
    format!("t->WEFT_O{i}")
}

/// Code setting a `bytes`-byte data member from `src` (`n` valid bytes,
/// the rest zero).
fn set_data(m: &str, bytes: usize) -> String {
    if bytes <= 8 {
        let ty = match bytes {
            1 => "CData",
            2 => "SData",
            3 | 4 => "IData",
            _ => "QData",
        };
        format!("{{ uint64_t v = 0; std::memcpy(&v, src, n); {m} = static_cast<{ty}>(v); }}\n")
    } else {
        // Straight into the port's words (little-endian, as the bytes of
        // a beat are): a bounce through a local array made the word loads
        // wait on the byte stores behind them. A whole beat is a copy of
        // known size, which the compiler inlines.
        let span = bytes.div_ceil(4) * 4;
        format!(
            "{{ uint8_t* d = reinterpret_cast<uint8_t*>(&{m}[0]); if (n == {bytes}) std::memcpy(d, src, {bytes}); else {{ std::memcpy(d, src, n); std::memset(d + n, 0, {span} - n); }} }}\n"
        )
    }
}

/// Code clearing a `bytes`-byte data or keep member.
fn zero_data(m: &str, bytes: usize) -> String {
    if bytes <= 8 {
        format!("{m} = 0;\n")
    } else {
        format!(
            "for (int j = 0; j < {}; ++j) {m}[j] = 0;\n",
            bytes.div_ceil(4)
        )
    }
}

/// Code clearing a keep member of `bytes` bits.
fn zero_keep(m: &str, bytes: usize) -> String {
    if bytes <= 64 {
        format!("{m} = 0;\n")
    } else {
        format!(
            "for (int j = 0; j < {}; ++j) {m}[j] = 0;\n",
            bytes.div_ceil(32)
        )
    }
}

/// Code pointing `buf` at the bytes of a `bytes`-byte data member: the
/// port's own words when it is wide (little-endian, as a beat's bytes
/// are), else a copy.
fn get_data(m: &str, bytes: usize) -> String {
    if bytes <= 8 {
        format!("uint8_t bytes[8]; {{ const uint64_t v = {m}; std::memcpy(bytes, &v, 8); }}\n        const uint8_t* const buf = bytes;\n")
    } else {
        format!("const uint8_t* const buf = reinterpret_cast<const uint8_t*>(&{m}[0]);\n")
    }
}

/// Code setting a keep member of `bytes` bits to its low `n` bits set.
fn set_keep(m: &str, bytes: usize) -> String {
    if bytes <= 64 {
        let ty = match bytes {
            1..=8 => "CData",
            9..=16 => "SData",
            17..=32 => "IData",
            _ => "QData",
        };
        format!("{m} = static_cast<{ty}>(n >= 64 ? ~0ull : ((1ull << n) - 1));\n")
    } else {
        let words = bytes.div_ceil(32);
        format!(
            "for (int j = 0; j < {words}; ++j) {{ const size_t b = 32 * j; {m}[j] = n >= b + 32 ? ~0u : (n > b ? ((1u << (n - b)) - 1) : 0u); }}\n"
        )
    }
}

/// Code testing keep bit `i` of a keep member of `bytes` bits.
fn keep_bit(m: &str, bytes: usize) -> String {
    if bytes <= 64 {
        format!("((static_cast<uint64_t>({m}) >> i) & 1)")
    } else {
        format!("(({m}[i / 32] >> (i % 32)) & 1)")
    }
}

/// The runner's C++: declarations to put inside `WeftModel` (`fields`) and
/// the functions (`code`), which use the wrapper's `weft_fall`, `weft_at`,
/// `weft_tick_in` and the `set`/`get` port packing.
pub(crate) struct Runner {
    pub(crate) fields: String,
    pub(crate) code: String,
}

/// Generate the stream runner for `layout`; `set` and `get` are the
/// wrapper's packing statements (inputs from `in`, outputs to `out`).
pub(crate) fn runner(layout: &Layout, set: &str, get: &str) -> Runner {
    let list = streams(layout);
    let ins: Vec<&Stream> = list.iter().filter(|s| s.dir == StreamDir::In).collect();
    let outs: Vec<&Stream> = list.iter().filter(|s| s.dir == StreamDir::Out).collect();
    let fields = format!(
        "    WeftInStream ins[{}];\n    WeftOutStream outs[{}];\n    // Frame buffers to reuse (weft_recycle, weft_reuse).\n    std::vector<std::vector<uint8_t>> pool;\n    // Nanoseconds spent in eval() by weft_run, when profiling.\n    bool profile = false;\n    uint64_t eval_ns = 0;\n",
        ins.len().max(1),
        outs.len().max(1)
    );

    // Per step: drive every input stream from its queue (or idle).
    let mut drive = String::new();
    for (k, s) in ins.iter().enumerate() {
        let valid = member(layout, &format!("{}_tvalid", s.name));
        let data = member(layout, &format!("{}_tdata", s.name));
        let keep = member(layout, &format!("{}_tkeep", s.name));
        let last = member(layout, &format!("{}_tlast", s.name));
        let size = s
            .size
            .then(|| member(layout, &format!("{}_tuser_size", s.name)));
        let _ = writeln!(drive, "    {{  // {}", s.name);
        let _ = writeln!(drive, "        WeftInStream& s = m->ins[{k}];");
        let _ = writeln!(drive, "        if (drive && !s.q.empty()) {{");
        let _ = writeln!(
            drive,
            "            const std::vector<uint8_t>& f = s.q.front();\n            const size_t at = {} * s.beat;\n            const size_t n = std::min<size_t>(f.size() - at, {});\n            const uint8_t* src = f.data() + at;",
            s.bytes, s.bytes
        );
        let _ = write!(drive, "            {}", set_data(&data, s.bytes));
        let _ = write!(drive, "            {}", set_keep(&keep, s.bytes));
        let _ = writeln!(drive, "            {last} = at + n == f.size();");
        if let Some(z) = &size {
            let _ = writeln!(drive, "            {z} = static_cast<SData>(f.size());");
        }
        let _ = writeln!(drive, "            {valid} = 1;\n        }} else {{");
        let _ = write!(drive, "            {}", zero_data(&data, s.bytes));
        let _ = write!(drive, "            {}", zero_keep(&keep, s.bytes));
        let _ = writeln!(drive, "            {last} = 0;");
        if let Some(z) = &size {
            let _ = writeln!(drive, "            {z} = 0;");
        }
        let _ = writeln!(drive, "            {valid} = 0;\n        }}\n    }}");
    }

    // After the evaluation, before the edge: the hand-shakes of this step.
    let mut shake = String::new();
    for (k, s) in ins.iter().enumerate() {
        let valid = member(layout, &format!("{}_tvalid", s.name));
        let ready = member(layout, &format!("{}_tready", s.name));
        let last = member(layout, &format!("{}_tlast", s.name));
        let _ = writeln!(
            shake,
            "    if ({valid} && {ready}) {{ WeftInStream& s = m->ins[{k}]; if ({last}) {{ weft_recycle(m, s.q.front()); s.q.pop_front(); s.beat = 0; }} else {{ ++s.beat; }} }}"
        );
    }
    for (k, s) in outs.iter().enumerate() {
        let valid = member(layout, &format!("{}_tvalid", s.name));
        let ready = member(layout, &format!("{}_tready", s.name));
        let data = member(layout, &format!("{}_tdata", s.name));
        let keep = member(layout, &format!("{}_tkeep", s.name));
        let last = member(layout, &format!("{}_tlast", s.name));
        let size = if s.size {
            format!(
                "static_cast<uint32_t>({})",
                member(layout, &format!("{}_tuser_size", s.name))
            )
        } else {
            "0u".to_string()
        };
        let _ = writeln!(shake, "    if ({valid} && {ready}) {{  // {}", s.name);
        let _ = writeln!(shake, "        WeftOutStream& o = m->outs[{k}];");
        // A new frame's buffer is a recycled one when there is one.
        let _ = writeln!(
            shake,
            "        if (o.cur.capacity() == 0) weft_reuse(m, o.cur);"
        );
        if s.size {
            // The frame's size comes with its first beat: its buffer is
            // allocated once (a hint only; a wrong size costs a regrowth).
            let _ = writeln!(shake, "        if (o.cur.empty()) o.cur.reserve({size});");
        }
        let _ = write!(shake, "        {}", get_data(&data, s.bytes));
        if s.bytes <= 64 {
            // Keep is almost always its low bytes (a full beat, or a
            // frame's last): those go in one piece.
            let _ = writeln!(
                shake,
                "        const uint64_t k = static_cast<uint64_t>({keep});\n        if ((k & (k + 1)) == 0) o.cur.insert(o.cur.end(), buf, buf + (~k ? __builtin_ctzll(~k) : 64));\n        else"
            );
        }
        let _ = writeln!(
            shake,
            "        for (size_t i = 0; i < {}; ++i) if ({}) o.cur.push_back(buf[i]);",
            s.bytes,
            keep_bit(&keep, s.bytes)
        );
        let _ = writeln!(
            shake,
            "        if ({last}) {{ o.done.push_back(WeftOutFrame{{std::move(o.cur), step, {size}}}); o.cur.clear(); }}\n    }}"
        );
    }

    let code = format!(
        r#"
namespace {{
inline void weft_set_in(WeftModel* m, const uint32_t* in) {{
    Vtop* const t = m->top;
    (void)in;
{set}}}

inline void weft_get_out(WeftModel* m, uint32_t* out) {{
    Vtop* const t = m->top;
    (void)out;
{get}}}

// Frame buffers go back to a pool when their frame is done and come out
// for the next one: a frame then costs no allocation once the pool holds
// as many buffers as frames are in flight.
inline void weft_recycle(WeftModel* m, std::vector<uint8_t>& v) {{
    if (m->pool.size() < 256 && v.capacity() != 0) {{
        v.clear();
        m->pool.push_back(std::move(v));
    }}
}}

inline void weft_reuse(WeftModel* m, std::vector<uint8_t>& v) {{
    if (!m->pool.empty()) {{
        v = std::move(m->pool.back());
        m->pool.pop_back();
    }}
}}

inline void weft_drive(WeftModel* m, bool drive) {{
    Vtop* const t = m->top;
    (void)t;
    (void)drive;
{drive}}}

inline void weft_shake(WeftModel* m, uint64_t step) {{
    Vtop* const t = m->top;
    (void)t;
    (void)step;
{shake}}}

inline uint64_t weft_now_ns() {{
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now().time_since_epoch()).count());
}}
}}  // namespace

// Queue a frame on input stream `s` (0 ok, 1 no such stream, 2 empty).
WEFT_API int32_t weft_push(void* p, uint32_t s, const uint8_t* bytes, uint32_t len) {{
    WeftModel* const m = static_cast<WeftModel*>(p);
    if (s >= {n_in}u) return 1;
    if (len == 0) return 2;
    std::vector<uint8_t> v;
    weft_reuse(m, v);
    v.assign(bytes, bytes + len);
    m->ins[s].q.push_back(std::move(v));
    return 0;
}}

// Frames queued on input stream `s`, the one going in included.
WEFT_API uint32_t weft_backlog(void* p, uint32_t s) {{
    WeftModel* const m = static_cast<WeftModel*>(p);
    return s < {n_in}u ? static_cast<uint32_t>(m->ins[s].q.size()) : 0u;
}}

// Bytes collected on output stream `s` of a frame not finished yet.
WEFT_API uint32_t weft_partial(void* p, uint32_t s) {{
    WeftModel* const m = static_cast<WeftModel*>(p);
    return s < {n_out}u ? static_cast<uint32_t>(m->outs[s].cur.size()) : 0u;
}}

// The oldest finished frame of output stream `s`: -1 when there is none;
// else its length, and when it fits in `cap` bytes it is copied to `buf`,
// with the base step of its last beat and its tuser_size, and dropped.
WEFT_API int64_t weft_pop(void* p, uint32_t s, uint8_t* buf, uint64_t cap, uint64_t* step, uint32_t* size) {{
    WeftModel* const m = static_cast<WeftModel*>(p);
    if (s >= {n_out}u || m->outs[s].done.empty()) return -1;
    WeftOutFrame& f = m->outs[s].done.front();
    const int64_t len = static_cast<int64_t>(f.bytes.size());
    if (f.bytes.size() > cap) return len;
    if (len) std::memcpy(buf, f.bytes.data(), f.bytes.size());
    *step = f.step;
    *size = f.size;
    weft_recycle(m, f.bytes);
    m->outs[s].done.pop_front();
    return len;
}}

// One evaluation a step in weft_run after the first step of each call
// (on: 1), for a design none of whose outputs an input stream reaches
// combinationally; 1 if the model can (its triggers are all clock edges,
// no tracing), else 0 and two evaluations a step stay.
WEFT_API uint32_t weft_one_eval(void* p, uint32_t on) {{
    WeftModel* const m = static_cast<WeftModel*>(p);
#if WEFT_ONE_EVAL && !WEFT_TRACE
    m->one_eval = on != 0;
    m->trig_saved = false;
    return 1u;
#else
    (void)m;
    (void)on;
    return 0u;
#endif
}}

// Time the evaluations of weft_run (on: 1) and report the total so far.
WEFT_API uint64_t weft_profile(void* p, uint32_t on) {{
    WeftModel* const m = static_cast<WeftModel*>(p);
    m->profile = on != 0;
    return m->eval_ns;
}}

// `n` base steps numbered from `first`, clock mask `rising[i]` for step i,
// the non-stream inputs `in` throughout; with `drive` the input streams
// offer their queues (else they are idle). The outputs before the last
// step's edge go to `out`. Each step is weft_step's: drive, evaluate,
// hand-shake (a beat moves where valid and ready were both high before
// the edge), clock edge.
WEFT_API void weft_run(void* p, const uint32_t* in, uint32_t* out, const uint32_t* rising, uint64_t n, uint64_t first, uint32_t drive) {{
    WeftModel* const m = static_cast<WeftModel*>(p);
    weft_bind(m);
    weft_set_in(m, in);
    const bool timed = m->profile;
    for (uint64_t i = 0; i < n; ++i) {{
        weft_drive(m, drive != 0);
#if WEFT_ONE_EVAL && !WEFT_TRACE
        // After the first step of a call (whose non-stream inputs may have
        // changed) the only inputs that change are the streams': with
        // one_eval the caller vouches that none reaches an output
        // combinationally, so the outputs after the last edge are those
        // the hand-shakes see before this one.
        if (m->one_eval && m->trig_saved && i > 0) {{
            if (i + 1 == n) weft_get_out(m, out);
            weft_shake(m, first + i);
            const uint64_t t0 = timed ? weft_now_ns() : 0;
            weft_one_step(m, rising[i]);
            if (timed) m->eval_ns += weft_now_ns() - t0;
            continue;
        }}
#endif
        const uint64_t t0 = timed ? weft_now_ns() : 0;
        weft_fall(m);
        m->top->eval();
        const uint64_t t1 = timed ? weft_now_ns() : 0;
#if WEFT_ONE_EVAL && !WEFT_TRACE
        if (m->one_eval && !m->trig_saved) weft_save_triggers(m);
#endif
        if (i + 1 == n) weft_get_out(m, out);
        weft_shake(m, first + i);
        const uint64_t t2 = timed ? weft_now_ns() : 0;
        weft_tick_in(m, rising[i]);
        if (timed) m->eval_ns += (t1 - t0) + (weft_now_ns() - t2);
    }}
}}
"#,
        n_in = ins.len(),
        n_out = outs.len(),
    );
    Runner { fields, code }
}

/// `weft_trig.h` for a verilated model: the members of its root class
/// that hold each trigger's last value, from the root header, and whether
/// one evaluation a step is possible: every trigger in the model's trigger
/// function (found in the fast-path sources `cpp`) must be a rising edge
/// of one of them. Two Verilator shapes are known: 5.006's
/// (`__Vtrigrprev__*` members, one `__VactTriggered.at(i)` assignment a
/// trigger in `_eval_triggers__act`) and that of the 5.04x releases
/// (`__Vtrigprevexpr___*` members, every trigger a bit of one packed
/// `__VactTriggered[0U]` in `_eval_triggers_vec__act`). Any other shape
/// (another Verilator's names, a falling edge, a trigger that is not an
/// edge) turns it off.
pub(crate) fn triggers_header(root_header: &str, cpp: &[String]) -> String {
    const PREV: [&str; 2] = ["__Vtrigrprev__", "__Vtrigprevexpr___"];
    let members: Vec<&str> = root_header
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l.strip_prefix("CData/*0:0*/ ")?;
            let name = rest.strip_suffix(';')?;
            PREV.iter().any(|p| name.starts_with(p)).then_some(name)
        })
        .collect();
    let body = cpp.iter().find_map(|text| {
        let at = [
            "___eval_triggers__act(Vtop___024root* vlSelf) {",
            "___eval_triggers_vec__act(Vtop___024root* vlSelf) {",
        ]
        .iter()
        .find_map(|f| text.find(f))?;
        let rest = &text[at..];
        let end = rest.find("\n}\n")?;
        Some(&rest[..end])
    });
    let ok = body.is_some_and(|b| {
        let rising_in = |text: &str| -> usize {
            members
                .iter()
                .map(|m| {
                    text.matches(&format!("& (~ (IData)(vlSelf->{m})))"))
                        .count()
                        + text
                            .matches(&format!("& (~ (IData)(vlSelfRef.{m})))"))
                            .count()
                })
                .sum()
        };
        if members.is_empty() {
            return false;
        }
        let indexed = b.matches("__VactTriggered.at(").count();
        if indexed > 0 {
            return indexed == members.len() && rising_in(b) == indexed;
        }
        // The packed shape: one assignment whose every term is a clock and
        // its last value, each last value in a rising edge once.
        let Some(at) = b.find("__VactTriggered[0U] = ") else {
            return false;
        };
        let expr = &b[at..];
        let expr = &expr[..expr.find(';').unwrap_or(expr.len())];
        b.matches("__VactTriggered[").count() == 1
            && rising_in(expr) == members.len()
            && expr.matches("(IData)(vlSelfRef.").count() == 2 * members.len()
    });
    let mut h = String::from("// Generated by weft-sim after verilating: the model's triggers.\n");
    let _ = writeln!(h, "#define WEFT_ONE_EVAL {}", u8::from(ok));
    let _ = writeln!(
        h,
        "#define WEFT_NTRIG {}",
        if ok { members.len() } else { 0 }
    );
    let list: String = if ok {
        members.iter().map(|m| format!(" X({m})")).collect()
    } else {
        String::new()
    };
    let _ = writeln!(h, "#define WEFT_TRIGGERS(X){list}");
    // The root's evaluation, callable without the wrapper's `eval()`
    // around it (whose per-call work, a thread-local task id and the
    // end-of-evaluation message queue, a single-threaded model without
    // `$display` does not need once it has been initialised).
    const ROOT_EVAL: &str = "void Vtop___024root___eval(Vtop___024root* vlSelf) {";
    let direct = ok && cpp.iter().any(|text| text.contains(ROOT_EVAL));
    let _ = writeln!(h, "#define WEFT_DIRECT_EVAL {}", u8::from(direct));
    if direct {
        let _ = writeln!(
            h,
            "class Vtop___024root;\nvoid Vtop___024root___eval(Vtop___024root* vlSelf);"
        );
    }
    // Its phases, callable one by one (`weft_phased_eval`), where the
    // evaluation is 5.006's: an input region whose only trigger is its
    // first iteration, then the active and NBA regions of clock edges.
    let phased = direct && five_006_phases(cpp);
    let _ = writeln!(h, "#define WEFT_PHASED_EVAL {}", u8::from(phased));
    if phased {
        for f in PHASES {
            let _ = writeln!(h, "void Vtop___024root___{f}(Vtop___024root* vlSelf);");
        }
    }
    h
}

/// Verilator 5.006's phase functions of the root, in the order one
/// evaluation with only clock-edge triggers runs them.
const PHASES: [&str; 4] = ["eval_ico", "eval_triggers__act", "eval_act", "eval_nba"];

/// Whether the model's evaluation is Verilator 5.006's (`cpp`, its
/// fast-path sources): the phase functions exist, the input region's one
/// trigger is its first iteration, and the root's evaluation loops over
/// exactly those regions. Its loops then run the input region once and
/// one active and one NBA iteration where a clock rose, the rest of the
/// looping only finding nothing else triggered.
fn five_006_phases(cpp: &[String]) -> bool {
    let all = |needle: &str| cpp.iter().any(|t| t.contains(needle));
    let defined = PHASES.iter().all(|f| {
        all(&format!(
            "void Vtop___024root___{f}(Vtop___024root* vlSelf) {{"
        ))
    });
    let ico_first = all("vlSelf->__VicoTriggered.at(0U) = (0U == vlSelf->__VicoIterCount);")
        && cpp
            .iter()
            .map(|t| t.matches("__VicoTriggered.at(").count())
            .sum::<usize>()
            == 2;
    let root = cpp.iter().find_map(|t| {
        let at = t.find("void Vtop___024root___eval(Vtop___024root* vlSelf) {")?;
        let rest = &t[at..];
        Some(&rest[..rest.find("\n}\n")?])
    });
    // The root's calls of its own functions (its debug dumps aside), in
    // order, and the NBA triggers taken from the active ones.
    let loops = root.is_some_and(|b| {
        let calls: Vec<&str> = b
            .split("Vtop___024root___")
            .skip(1)
            .filter_map(|rest| rest.split_once("(vlSelf);").map(|(name, _)| name))
            .filter(|name| {
                !name.starts_with("dump_triggers")
                    && name.chars().all(|c| c.is_alphanumeric() || c == '_')
            })
            .collect();
        calls
            == [
                "eval_triggers__ico",
                "eval_ico",
                "eval_triggers__act",
                "eval_act",
                "eval_nba",
            ]
            && b.matches("vlSelf->__VnbaTriggered.clear();").count() == 1
            && b.matches("vlSelf->__VnbaTriggered.set(vlSelf->__VactTriggered);")
                .count()
                == 1
    });
    defined && ico_first && loops
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verilator::PortSpec;

    fn layout(ports: Vec<PortSpec>) -> Layout {
        Layout {
            top: "top".into(),
            clocks: vec!["clk".into()],
            inputs: ports.iter().filter(|p| p.dir == Dir::In).cloned().collect(),
            outputs: ports
                .iter()
                .filter(|p| p.dir == Dir::Out)
                .cloned()
                .collect(),
        }
    }

    fn bundle(p: &str, into: bool, bytes: usize, size: bool) -> Vec<PortSpec> {
        type Make = fn(String, usize) -> PortSpec;
        let (mine, theirs): (Make, Make) = if into {
            (PortSpec::input, PortSpec::output)
        } else {
            (PortSpec::output, PortSpec::input)
        };
        let mut v = vec![
            mine(format!("{p}_tvalid"), 1),
            mine(format!("{p}_tdata"), 8 * bytes),
            mine(format!("{p}_tkeep"), bytes),
            mine(format!("{p}_tlast"), 1),
            theirs(format!("{p}_tready"), 1),
        ];
        if size {
            v.push(mine(format!("{p}_tuser_size"), 16));
        }
        v
    }

    #[test]
    fn finds_the_bundles_by_name() {
        let mut ports = bundle("s_axis_rx", true, 64, true);
        ports.extend(bundle("m_axis_tx", false, 4, false));
        // No tready: not a stream.
        ports.push(PortSpec::input("x_tvalid", 1));
        ports.push(PortSpec::input("x_tdata", 8));
        ports.push(PortSpec::input("x_tkeep", 1));
        ports.push(PortSpec::input("x_tlast", 1));
        // tkeep of the wrong width: not a stream.
        ports.extend(bundle("y", true, 2, false));
        for p in &mut ports {
            if p.name == "y_tkeep" {
                p.width = 3;
            }
        }
        let l = layout(ports);
        let s = streams(&l);
        assert_eq!(
            s,
            vec![
                Stream {
                    name: "s_axis_rx".into(),
                    dir: StreamDir::In,
                    bytes: 64,
                    size: true
                },
                Stream {
                    name: "m_axis_tx".into(),
                    dir: StreamDir::Out,
                    bytes: 4,
                    size: false
                },
            ]
        );
        let r = runner(&l, "", "");
        assert!(r.code.contains("// s_axis_rx"), "{}", r.code);
        assert!(r.code.contains("// m_axis_tx"), "{}", r.code);
        assert!(r.fields.contains("ins[1]") && r.fields.contains("outs[1]"));
    }

    #[test]
    fn one_evaluation_only_with_rising_clock_triggers() {
        let root = "    CData/*0:0*/ clk;\n    CData/*0:0*/ __Vtrigrprev__TOP__clk;\n";
        let rising = "void Vtop___024root___eval_triggers__act(Vtop___024root* vlSelf) {\n    vlSelf->__VactTriggered.at(0U) = ((IData)(vlSelf->clk) \n                                      & (~ (IData)(vlSelf->__Vtrigrprev__TOP__clk)));\n    vlSelf->__Vtrigrprev__TOP__clk = vlSelf->clk;\n}\n";
        let h = triggers_header(root, &[rising.to_string()]);
        assert!(h.contains("#define WEFT_ONE_EVAL 1"), "{h}");
        assert!(h.contains("X(__Vtrigrprev__TOP__clk)"), "{h}");
        let falling = rising.replace(
            "((IData)(vlSelf->clk) \n                                      & (~ (IData)(vlSelf->__Vtrigrprev__TOP__clk)))",
            "((~ (IData)(vlSelf->clk)) & (IData)(vlSelf->__Vtrigrprev__TOP__clk))",
        );
        assert!(triggers_header(root, &[falling]).contains("#define WEFT_ONE_EVAL 0"));
        assert!(triggers_header("", &[rising.to_string()]).contains("#define WEFT_ONE_EVAL 0"));
        assert!(triggers_header(root, &[]).contains("#define WEFT_ONE_EVAL 0"));
        // The root's evaluation is called directly only where it is found.
        assert!(h.contains("#define WEFT_DIRECT_EVAL 0"), "{h}");
        let eval = "void Vtop___024root___eval(Vtop___024root* vlSelf) {\n}\n";
        let h = triggers_header(root, &[rising.to_string(), eval.to_string()]);
        assert!(h.contains("#define WEFT_DIRECT_EVAL 1"), "{h}");
        assert!(h.contains("void Vtop___024root___eval(Vtop___024root* vlSelf);"));
    }

    #[test]
    fn phases_called_one_by_one_only_for_verilator_5006s_evaluation() {
        let root = "    CData/*0:0*/ clk;\n    CData/*0:0*/ __Vtrigrprev__TOP__clk;\n";
        let act = "void Vtop___024root___eval_triggers__act(Vtop___024root* vlSelf) {\n    vlSelf->__VactTriggered.at(0U) = ((IData)(vlSelf->clk) \n                                      & (~ (IData)(vlSelf->__Vtrigrprev__TOP__clk)));\n    vlSelf->__Vtrigrprev__TOP__clk = vlSelf->clk;\n}\n";
        let ico = "void Vtop___024root___eval_triggers__ico(Vtop___024root* vlSelf) {\n    vlSelf->__VicoTriggered.at(0U) = (0U == vlSelf->__VicoIterCount);\n}\nvoid Vtop___024root___eval_ico(Vtop___024root* vlSelf) {\n    if (vlSelf->__VicoTriggered.at(0U)) {\n    }\n}\nvoid Vtop___024root___eval_act(Vtop___024root* vlSelf) {\n}\nvoid Vtop___024root___eval_nba(Vtop___024root* vlSelf) {\n}\n";
        let eval = "void Vtop___024root___eval(Vtop___024root* vlSelf) {\n    while (__VicoContinue) {\n        Vtop___024root___eval_triggers__ico(vlSelf);\n        Vtop___024root___eval_ico(vlSelf);\n    }\n    while (__VnbaContinue) {\n        vlSelf->__VnbaTriggered.clear();\n        while (vlSelf->__VactContinue) {\n            Vtop___024root___eval_triggers__act(vlSelf);\n            vlSelf->__VnbaTriggered.set(vlSelf->__VactTriggered);\n            Vtop___024root___eval_act(vlSelf);\n        }\n        Vtop___024root___eval_nba(vlSelf);\n    }\n}\n";
        let cpp = |parts: &[&str]| parts.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        let h = triggers_header(root, &cpp(&[act, ico, eval]));
        assert!(h.contains("#define WEFT_PHASED_EVAL 1"), "{h}");
        assert!(
            h.contains("void Vtop___024root___eval_nba(Vtop___024root* vlSelf);"),
            "{h}"
        );
        // Another input trigger, another phase in the loop, or a phase
        // missing: the root's evaluation as a whole.
        let other_ico = ico.replace(
            "(0U == vlSelf->__VicoIterCount);",
            "(0U == vlSelf->__VicoIterCount);\n    vlSelf->__VicoTriggered.at(1U) = vlSelf->go;",
        );
        let more = eval.replace(
            "        Vtop___024root___eval_nba(vlSelf);",
            "        Vtop___024root___eval_nba(vlSelf);\n        Vtop___024root___eval_other(vlSelf);",
        );
        let missing = ico.replace("eval_act(", "eval_active(");
        for c in [
            cpp(&[act, &other_ico, eval]),
            cpp(&[act, ico, &more]),
            cpp(&[act, &missing, eval]),
        ] {
            let h = triggers_header(root, &c);
            assert!(h.contains("#define WEFT_PHASED_EVAL 0"), "{h}");
            assert!(h.contains("#define WEFT_DIRECT_EVAL 1"), "{h}");
        }
    }

    #[test]
    fn one_evaluation_with_the_packed_triggers_of_newer_verilators() {
        let root = "    CData/*0:0*/ a;\n    CData/*0:0*/ b;\n    CData/*0:0*/ __Vtrigprevexpr___TOP__a__0;\n    CData/*0:0*/ __Vtrigprevexpr___TOP__b__0;\n";
        let edge = |x: &str| {
            format!("((IData)(vlSelfRef.{x}) \n & (~ (IData)(vlSelfRef.__Vtrigprevexpr___TOP__{x}__0)))")
        };
        let body = |a: String, b: String| {
            format!(
                "void Vtop___024root___eval_triggers_vec__act(Vtop___024root* vlSelf) {{\n    vlSelfRef.__VactTriggered[0U] = (QData)((IData)(\n ({a} << 1U) | {b}));\n    vlSelfRef.__Vtrigprevexpr___TOP__a__0 = vlSelfRef.a;\n    vlSelfRef.__Vtrigprevexpr___TOP__b__0 = vlSelfRef.b;\n}}\n"
            )
        };
        let h = triggers_header(root, &[body(edge("a"), edge("b"))]);
        assert!(h.contains("#define WEFT_ONE_EVAL 1"), "{h}");
        assert!(h.contains("#define WEFT_NTRIG 2"), "{h}");
        assert!(
            h.contains("X(__Vtrigprevexpr___TOP__a__0) X(__Vtrigprevexpr___TOP__b__0)"),
            "{h}"
        );
        // A falling edge, or a trigger that is no edge of a clock, turns it off.
        let falling = "((~ (IData)(vlSelfRef.b)) & (IData)(vlSelfRef.__Vtrigprevexpr___TOP__b__0))";
        let h = triggers_header(root, &[body(edge("a"), falling.into())]);
        assert!(h.contains("#define WEFT_ONE_EVAL 0"), "{h}");
        let level = format!("({} | (IData)(vlSelfRef.go))", edge("b"));
        let h = triggers_header(root, &[body(edge("a"), level)]);
        assert!(h.contains("#define WEFT_ONE_EVAL 0"), "{h}");
    }

    #[test]
    fn a_design_without_streams_has_an_empty_runner() {
        let l = layout(vec![PortSpec::input("a", 3), PortSpec::output("b", 1)]);
        assert!(streams(&l).is_empty());
        let r = runner(&l, "", "");
        assert!(r.code.contains("if (s >= 0u) return 1;"));
    }
}
