//! Tests of the Verilator builder (`weft_sim::verilator`) on small
//! hand-written designs.
//!
//! They skip (with a message) when Verilator or a C++ compiler is missing,
//! unless `WEFT_REQUIRE_VERILATOR=1`, in which case they fail.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use weft_sim::verilator::{
    build, default_cache_dir_from, lint, load, toolchain, BuildOptions, Dir, Library, Model,
    ModelSource, Optimisation, PortSpec, Training, VerilatorError,
};

/// Whether the tests can run; panics when Verilator is required but absent.
fn have_verilator() -> bool {
    let why = match toolchain() {
        Ok(tc) if tc.cxx.is_some() => return true,
        Ok(_) => "no C++ compiler (g++ or $CXX) found".to_string(),
        Err(e) => e.to_string(),
    };
    if std::env::var("WEFT_REQUIRE_VERILATOR").as_deref() == Ok("1") {
        panic!("WEFT_REQUIRE_VERILATOR=1 but Verilator is unusable: {why}");
    }
    // Straight to stderr, past the test harness's output capture, so the
    // skip shows in a normal `cargo test` run.
    let _ = writeln!(std::io::stderr(), "skipping Verilator test: {why}");
    false
}

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let p =
            std::env::temp_dir().join(format!("weft-vltest-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const COUNTER_V: &str = r#"
module counter(
    input clk,
    input en,
    input [32:0] add,
    input [69:0] wide_in,
    output reg [7:0] count,
    output reg [39:0] big,
    output [69:0] wide_out
);
    initial count = 8'd5;
    initial big = 40'h00_FFFF_FFF0;
    always @(posedge clk) begin
        if (en) begin
            count <= count + 8'd1;
            big <= big + {7'd0, add};
        end
    end
    assign wide_out = wide_in ^ {big, 22'd0, count};
endmodule
"#;

fn counter_source() -> ModelSource {
    ModelSource {
        verilog: COUNTER_V.to_string(),
        top: "counter".into(),
        ports: vec![
            PortSpec::input("clk", 1),
            PortSpec::input("en", 1),
            PortSpec::input("add", 33),
            PortSpec::input("wide_in", 70),
            PortSpec::output("count", 8),
            PortSpec::output("big", 40),
            PortSpec::output("wide_out", 70),
        ],
        clocks: vec!["clk".into()],
        split: true,
    }
}

/// One port of each width class, combinational, no clock.
fn widths_source() -> ModelSource {
    ModelSource {
        verilog: "module widths(\n\
            input [11:0] a, input [31:0] b, input [63:0] c, input [95:0] d, input [64:0] e,\n\
            output [11:0] ya, output [31:0] yb, output [63:0] yc, output [95:0] yd,\n\
            output [64:0] ye);\n\
            assign ya = ~a;\n  assign yb = b + 32'd1;\n  assign yc = ~c;\n\
            assign yd = ~d;\n  assign ye = ~e;\nendmodule\n"
            .into(),
        top: "widths".into(),
        ports: vec![
            PortSpec::input("a", 12),
            PortSpec::input("b", 32),
            PortSpec::input("c", 64),
            PortSpec::input("d", 96),
            PortSpec::input("e", 65),
            PortSpec::output("ya", 12),
            PortSpec::output("yb", 32),
            PortSpec::output("yc", 64),
            PortSpec::output("yd", 96),
            PortSpec::output("ye", 65),
        ],
        clocks: vec![],
        split: true,
    }
}

/// Expected outputs of `widths` for packed inputs (a: word 0, b: 1,
/// c: 2-3, d: 4-6, e: 7-9; the outputs likewise).
fn widths_reference(i: &[u32; 10]) -> [u32; 10] {
    [
        !i[0] & 0xfff,
        i[1].wrapping_add(1),
        !i[2],
        !i[3],
        !i[4],
        !i[5],
        !i[6],
        !i[7],
        !i[8],
        !i[9] & 1,
    ]
}

const MASK40: u64 = (1 << 40) - 1;
const MASK70: u128 = (1 << 70) - 1;

/// Rust reference of `counter`.
struct RefCounter {
    count: u8,
    big: u64,
}

impl RefCounter {
    fn new() -> Self {
        RefCounter {
            count: 5,
            big: 0xFFFF_FFF0,
        }
    }

    fn outputs(&self, wide_in: u128) -> [u32; 6] {
        let wide = (wide_in ^ ((self.big as u128) << 30) ^ self.count as u128) & MASK70;
        [
            self.count as u32,
            self.big as u32,
            (self.big >> 32) as u32,
            wide as u32,
            (wide >> 32) as u32,
            (wide >> 64) as u32,
        ]
    }

    fn tick(&mut self, en: bool, add: u64) {
        if en {
            self.count = self.count.wrapping_add(1);
            self.big = (self.big + (add & ((1 << 33) - 1))) & MASK40;
        }
    }
}

/// Packed inputs of `counter`: en (1 word), add (2), wide_in (3).
fn pack(en: u32, add: u64, wide_in: u128) -> [u32; 6] {
    [
        en,
        add as u32,
        (add >> 32) as u32,
        wide_in as u32,
        (wide_in >> 32) as u32,
        (wide_in >> 64) as u32,
    ]
}

/// xorshift64*, deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn opts(cache: &Path, trace: bool) -> BuildOptions<'static> {
    BuildOptions {
        trace,
        cache_dir: Some(cache.to_path_buf()),
        progress: None,
        optimisation: Optimisation::Fast,
        training: None,
    }
}

fn build_logged(
    src: &ModelSource,
    cache: &Path,
    trace: bool,
) -> (Result<Arc<Library>, VerilatorError>, Vec<String>) {
    let stages = Mutex::new(Vec::new());
    let record = |s: &str| stages.lock().unwrap().push(s.to_string());
    let o = BuildOptions {
        trace,
        cache_dir: Some(cache.to_path_buf()),
        progress: Some(&record),
        optimisation: Optimisation::Fast,
        training: None,
    };
    let r = build(src, &o);
    (r, stages.into_inner().unwrap())
}

#[test]
fn counter_builds_caches_and_runs() {
    if !have_verilator() {
        return;
    }
    let cache = TempDir::new("counter");
    let src = counter_source();

    let (lib, stages) = build_logged(&src, cache.path(), false);
    let lib = lib.unwrap_or_else(|e| panic!("build failed: {e}"));
    assert!(!lib.cache_hit());
    for s in [
        "verilating",
        "compiling Verilator runtime (once per version)",
        "compiling model",
        "linking",
    ] {
        assert!(
            stages.iter().any(|x| x == s),
            "no stage {s:?} in {stages:?}"
        );
    }
    assert!(lib.path().is_file());
    assert!(lib.path().starts_with(cache.path().join("verilator")));
    assert_eq!(lib.clock(), Some("clk"));
    assert_eq!(
        lib.inputs()
            .iter()
            .map(|p| (p.name.as_str(), p.width, p.dir))
            .collect::<Vec<_>>(),
        vec![
            ("en", 1, Dir::In),
            ("add", 33, Dir::In),
            ("wide_in", 70, Dir::In)
        ]
    );
    assert_eq!(
        lib.outputs()
            .iter()
            .map(|p| (p.name.as_str(), p.width))
            .collect::<Vec<_>>(),
        vec![("count", 8), ("big", 40), ("wide_out", 70)]
    );
    assert_eq!((lib.input_words(), lib.output_words()), (6, 6));

    // Same source again: a cache hit, same shared object.
    let (again, stages) = build_logged(&src, cache.path(), false);
    let again = again.unwrap();
    assert!(again.cache_hit());
    assert_eq!(stages, vec!["cached".to_string()]);
    assert_eq!(again.path(), lib.path());

    // Step it against the reference, wide ports included.
    let mut m = Model::new(&lib, None).unwrap();
    let mut r = RefCounter::new();
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut out = [0u32; 6];
    let wide0 = 0x2A_5555_5555_AAAA_AAAAu128;
    m.eval(&pack(0, 0, wide0), &mut out);
    assert_eq!(out, r.outputs(wide0), "initial blocks honoured");
    for cycle in 0..2000 {
        let en = rng.next() & 3 != 0;
        let add = rng.next() & ((1 << 33) - 1);
        let wide = ((rng.next() as u128) << 64 | rng.next() as u128) & MASK70;
        m.eval(&pack(en as u32, add, wide), &mut out);
        assert_eq!(out, r.outputs(wide), "cycle {cycle} before the edge");
        m.tick();
        r.tick(en, add);
        m.eval(&pack(en as u32, add, wide), &mut out);
        assert_eq!(out, r.outputs(wide), "cycle {cycle} after the edge");
    }

    // Bits above a port's width are ignored on input.
    let junk = [0xFFFF_FFFEu32, 0, 0xFFFF_FFFE, 0, 0, 0xFFFF_FFC0];
    m.eval(&junk, &mut out);
    assert_eq!(out, r.outputs(0));
    m.tick(); // en reads as 0: nothing moves
    m.eval(&junk, &mut out);
    assert_eq!(out, r.outputs(0));
    let junk_en = [0xFFFF_FFFFu32, 3, 0xFFFF_FFFE, 0, 0, 0];
    m.eval(&junk_en, &mut out);
    m.tick(); // en = 1, add = 3 (the 33rd bit is 0)
    r.tick(true, 3);
    m.eval(&pack(0, 0, 0), &mut out);
    assert_eq!(out, r.outputs(0));
    // ... and zero above the width on output.
    assert_eq!(out[0] >> 8, 0);
    assert_eq!(out[2] >> 8, 0);
    assert_eq!(out[5] >> 6, 0);

    // Instances are independent, and can move to another thread.
    let mut fresh = Model::new(&again, None).unwrap();
    let h = std::thread::spawn(move || {
        let mut out = [0u32; 6];
        fresh.eval(&pack(1, 1, 0), &mut out);
        fresh.tick();
        fresh.eval(&pack(0, 0, 0), &mut out);
        out
    });
    let mut r2 = RefCounter::new();
    r2.tick(true, 1);
    assert_eq!(h.join().unwrap(), r2.outputs(0));
    m.eval(&pack(0, 0, 0), &mut out);
    assert_eq!(out, r.outputs(0));

    // Every width class (CData .. VlWide, full and partial top words), no
    // clock; built in the same cache, so the runtime is not compiled again.
    let (widths, stages) = build_logged(&widths_source(), cache.path(), false);
    let widths = widths.unwrap_or_else(|e| panic!("build failed: {e}"));
    assert!(
        !stages.iter().any(|s| s.contains("runtime")),
        "runtime rebuilt: {stages:?}"
    );
    assert_eq!(widths.clock(), None);
    assert_eq!((widths.input_words(), widths.output_words()), (10, 10));
    let mut w = Model::new(&widths, None).unwrap();
    let mut out = [0u32; 10];
    for _ in 0..200 {
        let mut inp = [0u32; 10];
        for x in inp.iter_mut() {
            *x = rng.next() as u32;
        }
        w.eval(&inp, &mut out);
        w.tick(); // no clock: just evaluates
        assert_eq!(out, widths_reference(&inp));
    }

    // A VCD needs a library built with tracing.
    let vcd = cache.path().join("no.vcd");
    assert!(matches!(
        Model::new(&lib, Some(&vcd)),
        Err(VerilatorError::Trace(_))
    ));
}

/// A short run's model: `FastIfBuilt` builds the unoptimised model while
/// there is no optimised one (a model of its own in the cache, stepping as
/// the reference does), and takes the optimised one once it is built.
#[test]
fn short_runs_take_the_quick_model_until_the_fast_one_is_built() {
    if !have_verilator() {
        return;
    }
    let cache = TempDir::new("quick");
    let src = counter_source();
    let at = |o: Optimisation| {
        let b = BuildOptions {
            optimisation: o,
            ..opts(cache.path(), false)
        };
        build(&src, &b).unwrap_or_else(|e| panic!("{o:?}: {e}"))
    };
    let quick = at(Optimisation::FastIfBuilt);
    assert!(!quick.cache_hit());
    assert_eq!(at(Optimisation::Quick).path(), quick.path());
    let fast = at(Optimisation::Fast);
    assert!(
        !fast.cache_hit(),
        "the optimised model is a build of its own"
    );
    assert_ne!(fast.path(), quick.path());
    let again = at(Optimisation::FastIfBuilt);
    assert!(again.cache_hit());
    assert_eq!(again.path(), fast.path());
    // Both step as the reference does.
    for lib in [&quick, &fast] {
        counter_matches_reference(lib, 7);
    }
}

#[test]
fn trace_writes_a_vcd() {
    if !have_verilator() {
        return;
    }
    let cache = TempDir::new("trace");
    let lib = build(&counter_source(), &opts(cache.path(), true))
        .unwrap_or_else(|e| panic!("build failed: {e}"));
    assert!(lib.traced());
    let vcd = cache.path().join("counter.vcd");
    {
        let mut m = Model::new(&lib, Some(&vcd)).unwrap();
        let mut out = [0u32; 6];
        for i in 0..10u32 {
            m.eval(&pack(1, i as u64, 0), &mut out);
            m.tick();
        }
        m.eval(&pack(0, 0, 0), &mut out);
        assert_eq!(out[0], 15);
    } // drop flushes and closes the file
    let text = std::fs::read_to_string(&vcd).unwrap();
    assert!(text.contains("$enddefinitions"), "not a VCD:\n{text}");
    for signal in ["clk", "count", "big", "wide_out"] {
        assert!(
            text.contains(&format!(" {signal} ")),
            "no {signal} in VCD header"
        );
    }
    assert!(
        text.contains("#10\n") && text.contains("#105\n"),
        "ticks not dumped"
    );

    // A directory that does not exist is an I/O error, not a crash.
    let bad = cache.path().join("missing-dir").join("x.vcd");
    assert!(matches!(
        Model::new(&lib, Some(&bad)),
        Err(VerilatorError::Io { .. })
    ));
}

#[test]
fn syntax_error_is_a_verilate_error_with_a_log() {
    if !have_verilator() {
        return;
    }
    let cache = TempDir::new("syntax");
    let mut src = counter_source();
    src.verilog = src.verilog.replace("assign wide_out", "asign wide_out");
    match build(&src, &opts(cache.path(), false)) {
        Err(VerilatorError::Verilate { log }) => {
            assert!(log.contains("%Error"), "log: {log}");
            assert!(log.contains("counter.v:"), "log names no location: {log}");
        }
        other => panic!("expected a Verilate error, got {other:?}"),
    }
}

#[test]
fn port_list_must_match_the_design() {
    if !have_verilator() {
        return;
    }
    let cache = TempDir::new("ports");
    let mut wrong_width = counter_source();
    wrong_width.ports[2].width = 32;
    let e = build(&wrong_width, &opts(cache.path(), false)).unwrap_err();
    assert!(
        matches!(&e, VerilatorError::Ports(m) if m.contains("add")),
        "{e}"
    );

    let mut missing = counter_source();
    missing.ports.retain(|p| p.name != "big");
    let e = build(&missing, &opts(cache.path(), false)).unwrap_err();
    assert!(
        matches!(&e, VerilatorError::Ports(m) if m.contains("big")),
        "{e}"
    );

    let mut bad_clock = counter_source();
    bad_clock.clocks = vec!["clock".into()];
    let e = build(&bad_clock, &opts(cache.path(), false)).unwrap_err();
    assert!(matches!(e, VerilatorError::Ports(_)), "{e}");
}

#[test]
fn concurrent_builders_build_once() {
    if !have_verilator() {
        return;
    }
    let cache = TempDir::new("concurrent");
    let mut src = counter_source();
    src.verilog.push_str("// concurrent\n");
    let libs: Vec<Arc<Library>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..3)
            .map(|_| s.spawn(|| build(&src, &opts(cache.path(), false)).unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(libs.iter().filter(|l| !l.cache_hit()).count(), 1);
    let mut m = Model::new(&libs[2], None).unwrap();
    let mut out = [0u32; 6];
    m.eval(&pack(0, 0, 0), &mut out);
    assert_eq!(out, RefCounter::new().outputs(0));
}

#[test]
fn lint_flags_width_problems_and_passes_clean_code() {
    if !have_verilator() {
        return;
    }
    let sloppy =
        "module sloppy(input [7:0] a, output [3:0] y);\n  assign y = a + 8'd1;\nendmodule\n";
    let r = lint(sloppy, "sloppy", None).unwrap();
    assert!(!r.clean);
    assert!(
        r.warnings.iter().any(|w| w.starts_with("%Warning-WIDTH")),
        "warnings: {:?}\noutput:\n{}",
        r.warnings,
        r.output
    );
    assert!(r.warnings.iter().all(|w| !w.contains("Exiting due to")));

    let clean = "module tidy(input [7:0] a, output [7:0] y);\n  assign y = ~a;\nendmodule\n";
    let r = lint(clean, "tidy", None).unwrap();
    assert!(r.clean, "warnings: {:?}\n{}", r.warnings, r.output);
    assert!(r.warnings.is_empty());

    // A waiver file silences the width warning.
    let dir = TempDir::new("lint");
    let vlt = dir.path().join("waivers.vlt");
    std::fs::write(
        &vlt,
        "`verilator_config\nlint_off -rule WIDTH -file \"*sloppy.v\"\n",
    )
    .unwrap();
    let r = lint(sloppy, "sloppy", Some(&vlt)).unwrap();
    assert!(r.clean, "warnings: {:?}\n{}", r.warnings, r.output);

    assert!(matches!(
        lint(clean, "tidy", Some(&dir.path().join("none.vlt"))),
        Err(VerilatorError::Io { .. })
    ));
}

#[test]
fn default_cache_dir_rules() {
    use std::ffi::OsStr;
    let s = |x: &'static str| Some(OsStr::new(x));
    assert_eq!(
        default_cache_dir_from(s("/c"), s("/x"), s("/h")),
        Some(PathBuf::from("/c"))
    );
    assert_eq!(
        default_cache_dir_from(None, s("/x"), s("/h")),
        Some(PathBuf::from("/x/weft"))
    );
    assert_eq!(
        default_cache_dir_from(s(""), s(""), s("/h")),
        Some(PathBuf::from("/h/.cache/weft"))
    );
    assert_eq!(default_cache_dir_from(None, None, None), None);
}

/// Build and simulation timings of the counter; run with
/// `cargo test -p weft-sim --test verilator_builder -- --ignored --nocapture`.
#[test]
#[ignore = "timing report, not a check"]
fn timings() {
    if !have_verilator() {
        return;
    }
    let cache = TempDir::new("timings");
    let src = counter_source();
    let t = Instant::now();
    let lib = build(&src, &opts(cache.path(), false)).unwrap();
    let cold = t.elapsed();
    let mut other = src.clone();
    other.verilog.push_str("// another design\n");
    let t = Instant::now();
    build(&other, &opts(cache.path(), false)).unwrap();
    let warm = t.elapsed();
    let t = Instant::now();
    let hit = build(&src, &opts(cache.path(), false)).unwrap();
    let hit_time = t.elapsed();
    assert!(hit.cache_hit());

    let mut m = Model::new(&lib, None).unwrap();
    let mut out = [0u32; 6];
    let n = 2_000_000u32;
    let t = Instant::now();
    for i in 0..n {
        m.eval(&pack(1, i as u64, (i as u128) << 40), &mut out);
        m.tick();
    }
    let rate = n as f64 / t.elapsed().as_secs_f64();
    eprintln!(
        "cold build {cold:?}, warm build {warm:?}, cache hit {hit_time:?}, \
         {:.2} M cycles/s (eval + tick)",
        rate / 1e6
    );
}

/// Step `lib`'s counter 500 cycles on stimulus seeded by `seed`, checking
/// it against the reference.
fn counter_matches_reference(lib: &Arc<Library>, seed: u64) {
    let mut m = Model::new(lib, None).unwrap();
    let mut r = RefCounter::new();
    let mut rng = Rng(seed);
    let mut out = [0u32; 6];
    for cycle in 0..500 {
        let en = rng.next() & 1 != 0;
        let add = rng.next() & ((1 << 33) - 1);
        m.eval(&pack(en as u32, add, 0), &mut out);
        m.tick();
        r.tick(en, add);
        m.eval(&pack(0, 0, 0), &mut out);
        assert_eq!(out, r.outputs(0), "{}: cycle {cycle}", lib.path().display());
    }
}

/// A profile-guided build (gcc): the training drives the instrumented
/// model, whose profile the optimised build is compiled with; the trained
/// model is a build of its own, steps as the reference does, is cached
/// (no second training), and a failed training fails the build with its
/// message.
#[test]
fn a_trained_build_runs_its_training_and_steps_as_the_reference() {
    if !have_verilator() {
        return;
    }
    if !toolchain().is_ok_and(|t| !t.cxx_version.to_ascii_lowercase().contains("clang")) {
        let _ = writeln!(std::io::stderr(), "skipping: training builds are gcc's");
        return;
    }
    let cache = TempDir::new("trained");
    let src = counter_source();
    let runs = Mutex::new(Vec::new());
    let run = |so: &Path| -> Result<(), String> {
        let lib = load(so, &counter_source(), false).map_err(|e| e.to_string())?;
        counter_matches_reference(&lib, 11);
        runs.lock().unwrap().push(so.to_path_buf());
        Ok(())
    };
    let trained = BuildOptions {
        training: Some(Training {
            name: "counter, 500 seeded cycles",
            run: &run,
        }),
        ..opts(cache.path(), false)
    };
    let stages = Mutex::new(Vec::new());
    let record = |s: &str| stages.lock().unwrap().push(s.to_string());
    let lib = build(
        &src,
        &BuildOptions {
            progress: Some(&record),
            ..trained.clone()
        },
    )
    .unwrap_or_else(|e| panic!("trained build: {e}"));
    let stages = stages.into_inner().unwrap();
    assert_eq!(runs.lock().unwrap().len(), 1, "trained once");
    for s in ["training", "compiling model with its profile"] {
        assert!(stages.iter().any(|x| x == s), "stage {s:?} in {stages:?}");
    }
    // The profile was written beside the instrumented objects, which the
    // build then removed with its work directory.
    assert!(!lib.cache_hit());
    counter_matches_reference(&lib, 11);
    let plain = build(&src, &opts(cache.path(), false)).unwrap();
    assert_ne!(
        plain.path(),
        lib.path(),
        "a trained model is a build of its own"
    );
    let again = build(&src, &trained).unwrap();
    assert!(again.cache_hit());
    assert_eq!(
        runs.lock().unwrap().len(),
        1,
        "a cached trained build is not trained again"
    );

    let failing = |_: &Path| -> Result<(), String> { Err("no stimulus".into()) };
    let e = build(
        &src,
        &BuildOptions {
            training: Some(Training {
                name: "failing",
                run: &failing,
            }),
            ..opts(cache.path(), false)
        },
    )
    .expect_err("a failed training fails the build");
    assert!(
        matches!(&e, VerilatorError::Training { name, message } if name == "failing" && message == "no stimulus"),
        "{e}"
    );
}
