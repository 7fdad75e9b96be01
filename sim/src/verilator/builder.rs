//! The build pipeline: key, cache lookup, verilate, compile, link, load.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::cache::{default_cache_dir, FileLock, KeyHasher};
use super::cppgen::{self, Layout};
use super::model::Library;
use super::toolchain::{cached_toolchain, Toolchain};
use super::{trim_log, BuildOptions, ModelSource, Optimisation, VerilatorError};

/// Parallel compiler jobs.
const JOBS: usize = 2;
/// File name of a built model inside its cache directory.
const SO_NAME: &str = "libweftmodel.so";
/// Bump when the build recipe changes in a way the key does not see.
const RECIPE: &str = "weft-verilator-model-v2";
/// Total size of fast-path C++ above which it is split into two
/// translation units compiled in parallel.
const SPLIT_FAST_BYTES: u64 = 1 << 20;

/// Runtime sources compiled once per Verilator version into the cache.
const RT_BASE: [&str; 2] = ["verilated", "verilated_threads"];
const RT_TRACE: &str = "verilated_vcd_c";

/// Build (or fetch from the cache) the shared object of a design and load it.
///
/// The cache key is a SHA-256 of the Verilog text, the generated wrapper,
/// the Verilator version, the compiler and all flags; see the [module
/// documentation](super). Concurrent builders of the same design (threads
/// or processes) are serialised by a file lock and all but the first get a
/// cache hit. Tool output is captured and returned only on failure.
///
/// Errors: [`VerilatorError::Ports`] for an invalid port list or one that
/// does not match the design, [`VerilatorError::Verilate`] when Verilator
/// rejects the Verilog, [`VerilatorError::Compile`] when the C++ build
/// fails, [`VerilatorError::NotFound`] without Verilator or a C++ compiler.
pub fn build(src: &ModelSource, opts: &BuildOptions) -> Result<Arc<Library>, VerilatorError> {
    let k = keyed(src, opts)?;
    let Keyed {
        layout,
        tc,
        mk,
        wrapper,
        vflags,
        cflags,
        vdir,
        fast_opt,
        keydir,
    } = k;
    let cxx = tc.cxx.as_deref().ok_or_else(|| VerilatorError::NotFound {
        hint: "no C++ compiler: install g++ (Debian: `apt-get install g++`) or set CXX".into(),
    })?;
    let progress = |stage: &str| {
        if let Some(p) = opts.progress {
            p(stage)
        }
    };
    let so = keydir.join(SO_NAME);

    // Fast path: already built.
    if so.is_file() {
        if let Ok(lib) = Library::load(&so, &layout, opts.trace, true) {
            progress("cached");
            return Ok(Arc::new(lib));
        }
    }

    fs::create_dir_all(&keydir).map_err(VerilatorError::io(format!(
        "creating cache directory {}",
        keydir.display()
    )))?;
    let _lock = FileLock::acquire(&keydir.join("build.lock"))?;
    if so.is_file() {
        // Built by a concurrent builder while we waited for the lock.
        match Library::load(&so, &layout, opts.trace, true) {
            Ok(lib) => {
                progress("cached");
                return Ok(Arc::new(lib));
            }
            Err(_) => {
                // Unusable (e.g. truncated by a crash): rebuild it.
                let _ = fs::remove_file(&so);
            }
        }
    }

    let work = keydir.join("work");
    if work.exists() {
        fs::remove_dir_all(&work).map_err(VerilatorError::io(format!(
            "removing stale build directory {}",
            work.display()
        )))?;
    }
    fs::create_dir_all(&work).map_err(VerilatorError::io(format!(
        "creating build directory {}",
        work.display()
    )))?;

    let built = build_in(
        tc, cxx, &mk, &layout, src, &wrapper, &vflags, &cflags, fast_opt, &vdir, &work, opts,
        &progress,
    )?;
    fs::rename(&built, &so).map_err(VerilatorError::io(format!(
        "moving {} into the cache",
        built.display()
    )))?;
    // A model with line tables keeps its sources, for the profiler that
    // annotates them.
    if !debuginfo() {
        let _ = fs::remove_dir_all(&work);
    }
    Ok(Arc::new(Library::load(&so, &layout, opts.trace, false)?))
}

/// Where [`build`] puts (or finds) the shared object of `src` built with
/// `opts`, without building it; for [`Optimisation::FastIfBuilt`] the
/// optimised one when it is there, else the quick one.
pub fn library_path(src: &ModelSource, opts: &BuildOptions) -> Result<PathBuf, VerilatorError> {
    Ok(keyed(src, opts)?.keydir.join(SO_NAME))
}

/// Everything a build of one design is keyed by.
struct Keyed {
    layout: Layout,
    tc: &'static Toolchain,
    mk: MkFlags,
    wrapper: String,
    vflags: Vec<String>,
    cflags: Vec<String>,
    vdir: PathBuf,
    fast_opt: &'static str,
    keydir: PathBuf,
}

fn keyed(src: &ModelSource, opts: &BuildOptions) -> Result<Keyed, VerilatorError> {
    let layout = cppgen::layout(src)?;
    let cache = opts.cache_dir.clone().unwrap_or_else(default_cache_dir);
    // Tools run in subdirectories: every path handed to them is absolute.
    let cache = std::path::absolute(&cache).map_err(VerilatorError::io(format!(
        "locating cache directory {}",
        cache.display()
    )))?;
    let tc = cached_toolchain(Some(&cache.join("verilator")))?;
    let mk = MkFlags::read(&tc.root);
    let wrapper = cppgen::wrapper(&layout, opts.trace);
    let vflags = verilate_flags(&layout.top, opts.trace, src.split);
    let cflags = cxx_flags(tc, &mk, opts.trace);
    let vdir = cache.join("verilator").join(path_safe(&tc.version));
    // The model's cache directory when its evaluation is compiled at `opt`.
    let keydir_at = |opt: &str| {
        let mut key = KeyHasher::new(RECIPE);
        key.field(src.verilog.as_bytes())
            .field(wrapper.as_bytes())
            .field(tc.version.as_bytes())
            .field(vflags.join("\0").as_bytes())
            .field(cflags.join("\0").as_bytes())
            .field(opt.as_bytes())
            .field(mk.ldlibs.join("\0").as_bytes())
            .field(tc.cxx_version.as_bytes())
            .field(&[u8::from(opts.trace)]);
        // A trained build is its training's: another training, another build.
        if let Some(t) = opts.training.filter(|_| trains(tc, opt)) {
            key.field(b"pgo")
                .field(PGO_USE.join(" ").as_bytes())
                .field(t.name.as_bytes());
        }
        vdir.join(&key.hex()[..20])
    };
    let fast_opt = match opts.optimisation {
        Optimisation::Fast => FAST_OPT,
        Optimisation::Quick => QUICK_OPT,
        Optimisation::FastIfBuilt if keydir_at(FAST_OPT).join(SO_NAME).is_file() => FAST_OPT,
        Optimisation::FastIfBuilt => QUICK_OPT,
    };
    let keydir = keydir_at(fast_opt);
    Ok(Keyed {
        layout,
        tc,
        mk,
        wrapper,
        vflags,
        cflags,
        vdir,
        fast_opt,
        keydir,
    })
}

/// Verilate, compile and link in `work`; returns the path of the linked
/// shared object (inside `work`). The Verilator runtime (once per version)
/// compiles on its own thread while Verilator runs.
#[allow(clippy::too_many_arguments)]
fn build_in(
    tc: &Toolchain,
    cxx: &Path,
    mk: &MkFlags,
    layout: &Layout,
    src: &ModelSource,
    wrapper: &str,
    vflags: &[String],
    cflags: &[String],
    fast_opt: &str,
    vdir: &Path,
    work: &Path,
    opts: &BuildOptions,
    progress: &dyn Fn(&str),
) -> Result<PathBuf, VerilatorError> {
    let trace = opts.trace;
    if runtime_objects(tc, cflags, vdir, trace)
        .1
        .iter()
        .any(|o| !o.is_file())
    {
        progress("compiling Verilator runtime (once per version)");
    }
    let training = opts.training.filter(|_| trains(tc, fast_opt));
    let generate: &[&str] = if training.is_some() {
        &PGO_GENERATE
    } else {
        &[]
    };
    let (units, rt_objs) = std::thread::scope(|scope| {
        let rt = scope.spawn(|| runtime(tc, cxx, cflags, vdir, trace));
        let model = build_model(
            tc, cxx, layout, src, wrapper, vflags, cflags, fast_opt, generate, work, progress,
        );
        let rt_objs = rt.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
        Ok::<_, VerilatorError>((model?, rt_objs))
    })?;
    progress("linking");
    let so = work.join(SO_NAME);
    let link_generate: &[&str] = if training.is_some() {
        &PGO_GENERATE_LINK
    } else {
        &[]
    };
    link(cxx, mk, &units, &rt_objs, link_generate, &so)?;
    let Some(training) = training else {
        return Ok(so);
    };
    progress("training");
    train(&so, layout, trace, training)?;
    if let Some(u) = units
        .fast
        .iter()
        .find(|u| !units.obj.join(format!("{u}.gcda")).is_file())
    {
        return Err(VerilatorError::Training {
            name: training.name.to_string(),
            message: format!(
                "the training left no profile of {u} in {}",
                units.obj.display()
            ),
        });
    }
    // The same units, optimised with the profile the run left beside
    // their objects.
    progress("compiling model with its profile");
    let jobs = units
        .fast
        .iter()
        .map(|u| fast_job(cxx, cflags, fast_opt, &PGO_USE, &units.obj, u))
        .collect();
    run_jobs(jobs)?;
    progress("linking");
    link(cxx, mk, &units, &rt_objs, &[], &so)?;
    Ok(so)
}

/// Link `units` and the runtime into the shared object `so`.
fn link(
    cxx: &Path,
    mk: &MkFlags,
    units: &Units,
    rt_objs: &[PathBuf],
    extra: &[&str],
    so: &Path,
) -> Result<(), VerilatorError> {
    let mut link = Command::new(cxx);
    link.args([
        "-shared",
        "-fPIC",
        "-pthread",
        "-Wl,-Bsymbolic",
        "-Wl,--no-undefined",
    ])
    .args(extra)
    .arg("-o")
    .arg(so)
    .args(&units.objects)
    .args(rt_objs)
    .args(&mk.ldlibs)
    .current_dir(&units.obj);
    let (out, log) = run(&mut link, "linking")?;
    if !out.status.success() {
        return Err(VerilatorError::Compile {
            log: trim_log(&log),
        });
    }
    Ok(())
}

/// gcc's instrumentation for a training build: the model runs on one
/// thread, so its counters need no atomics.
const PGO_GENERATE: [&str; 2] = ["-fprofile-generate", "-fprofile-update=single"];
/// Linking a training build: the wrapper's reference to `__gcov_dump` is
/// weak (so other builds link without gcov), and a weak reference does not
/// pull the function out of libgcov's archive by itself.
const PGO_GENERATE_LINK: [&str; 2] = ["-fprofile-generate", "-Wl,-u,__gcov_dump"];
/// gcc's optimisation from the training's profile. Code the training never
/// ran (partial training) keeps its ordinary optimisation instead of being
/// optimised for size as never executed.
const PGO_USE: [&str; 3] = [
    "-fprofile-use",
    "-fprofile-partial-training",
    "-Wno-missing-profile",
];

/// Whether a build at `fast_opt` with this toolchain is trained: the
/// optimised evaluation only, and only by gcc (whose profile files the
/// recipe uses; clang's need llvm-profdata).
fn trains(tc: &Toolchain, fast_opt: &str) -> bool {
    fast_opt == FAST_OPT && is_gcc(&tc.cxx_version)
}

/// Whether a compiler's `--version` line is gcc's (`g++ (Debian 12.2.0-14)
/// 12.2.0`, `c++ (GCC) 13.1.0`), not clang's.
fn is_gcc(version: &str) -> bool {
    let v = version.to_ascii_lowercase();
    !v.contains("clang") && (v.contains("g++") || v.contains("gcc") || v.starts_with("c++ ("))
}

/// Run `training` on the instrumented model at `so`, then have the model
/// write its profile (beside its objects). The builder holds its own
/// handle on the library so the training's handles closing cannot unload
/// it before the profile is written.
fn train(
    so: &Path,
    layout: &Layout,
    trace: bool,
    training: super::Training,
) -> Result<(), VerilatorError> {
    let lib = Library::load(so, layout, trace, false)?;
    (training.run)(so).map_err(|e| VerilatorError::Training {
        name: training.name.to_string(),
        message: e,
    })?;
    if !lib.dump_profile() {
        return Err(VerilatorError::Training {
            name: training.name.to_string(),
            message: "the instrumented model has no profile to write (no gcov runtime)".into(),
        });
    }
    Ok(())
}

/// The Verilator runtime's objects for this version, compiler and flags,
/// compiled into the cache the first time (under a lock: concurrent
/// builders wait for one another).
fn runtime(
    tc: &Toolchain,
    cxx: &Path,
    cflags: &[String],
    vdir: &Path,
    trace: bool,
) -> Result<Vec<PathBuf>, VerilatorError> {
    let (rt_dir, rt_objs) = runtime_objects(tc, cflags, vdir, trace);
    if rt_objs.iter().all(|o| o.is_file()) {
        return Ok(rt_objs);
    }
    fs::create_dir_all(&rt_dir).map_err(VerilatorError::io(format!(
        "creating runtime cache {}",
        rt_dir.display()
    )))?;
    let _lock = FileLock::acquire(&rt_dir.join("rt.lock"))?;
    let include = tc.root.join("include");
    // The same objects serve traced and untraced models.
    let rt_flags: Vec<String> = cflags
        .iter()
        .map(|f| match f.split_once('=') {
            Some((k @ ("-DVM_TRACE" | "-DVM_TRACE_VCD"), _)) => format!("{k}=1"),
            _ => f.clone(),
        })
        .collect();
    let mut jobs = Vec::new();
    for o in &rt_objs {
        if o.is_file() {
            // Built by a concurrent builder while we waited for the lock.
            continue;
        }
        let name = o.file_stem().and_then(|n| n.to_str()).unwrap_or("runtime");
        let tmp = rt_dir.join(format!("{name}.o.tmp{}", std::process::id()));
        let mut job = Job::compile(
            cxx,
            &rt_flags,
            RT_OPT,
            &rt_dir,
            &include.join(format!("{name}.cpp")),
            tmp,
        );
        job.rename_to = Some(o.clone());
        jobs.push(job);
    }
    run_jobs(jobs)?;
    Ok(rt_objs)
}

/// The runtime cache directory and the objects a model links with.
fn runtime_objects(
    tc: &Toolchain,
    cflags: &[String],
    vdir: &Path,
    trace: bool,
) -> (PathBuf, Vec<PathBuf>) {
    let dir = vdir.join(format!("rt-{}", rt_key(tc, cflags)));
    let mut names: Vec<&str> = RT_BASE.to_vec();
    if trace {
        names.push(RT_TRACE);
    }
    let objs = names.iter().map(|n| dir.join(format!("{n}.o"))).collect();
    (dir, objs)
}

/// Verilate and compile the model's translation units in `work`; returns
/// the object directory and the objects.
#[allow(clippy::too_many_arguments)]
fn build_model(
    tc: &Toolchain,
    cxx: &Path,
    layout: &Layout,
    src: &ModelSource,
    wrapper: &str,
    vflags: &[String],
    cflags: &[String],
    fast_opt: &str,
    fast_extra: &[&str],
    work: &Path,
    progress: &dyn Fn(&str),
) -> Result<Units, VerilatorError> {
    // 1. Verilate.
    progress("verilating");
    let vfile = format!("{}.v", layout.top);
    write(&work.join(&vfile), &src.verilog)?;
    let mut cmd = Command::new(&tc.bin);
    cmd.args(vflags).arg(&vfile).current_dir(work);
    let (out, log) = run(&mut cmd, "verilator")?;
    if !out.status.success() {
        return Err(VerilatorError::Verilate {
            log: trim_log(&log),
        });
    }
    let obj = work.join("obj");
    let header = read(&obj.join("Vtop.h"))?;
    let ports_h = cppgen::ports_header(layout, &cppgen::header_ports(&header))?;
    write(&obj.join("weft_ports.h"), &ports_h)?;
    let mut fast_cpp = Vec::new();
    for entry in
        std::fs::read_dir(&obj).map_err(VerilatorError::io(format!("listing {}", obj.display())))?
    {
        let path = entry
            .map_err(VerilatorError::io(format!("listing {}", obj.display())))?
            .path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        // 5.006 names them Vtop___024root__DepSet_*, the 5.04x releases
        // Vtop___024root__N.cpp.
        if name.starts_with("Vtop___024root__") && name.ends_with(".cpp") && !name.contains("Slow")
        {
            fast_cpp.push(read(&path)?);
        }
    }
    let root_h = read(&obj.join("Vtop___024root.h")).unwrap_or_default();
    write(
        &obj.join("weft_trig.h"),
        &super::streams::triggers_header(&root_h, &fast_cpp),
    )?;
    write(&obj.join("weft_wrapper.cpp"), wrapper)?;
    let classes = cppgen::classes_mk(&read(&obj.join("Vtop_classes.mk"))?);
    if classes.fast.is_empty() {
        return Err(VerilatorError::Verilate {
            log: format!(
                "unexpected Verilator output: no fast-path classes in {}\n{}",
                obj.join("Vtop_classes.mk").display(),
                trim_log(&log)
            ),
        });
    }

    // 2. Translation units: the fast-path classes with the wrapper (so that
    // eval can be inlined into weft_eval), split in two when large, and the
    // slow-path (initialisation) classes.
    let size = |c: &String| {
        fs::metadata(obj.join(format!("{c}.cpp")))
            .map(|m| m.len())
            .unwrap_or(0)
    };
    let mut fast: Vec<(u64, String)> = classes.fast.iter().map(|c| (size(c), c.clone())).collect();
    let total: u64 = fast.iter().map(|f| f.0).sum();
    fast.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let nbuckets = if total > SPLIT_FAST_BYTES && fast.len() > 1 {
        2
    } else {
        1
    };
    let mut buckets: Vec<(u64, Vec<String>)> = vec![(0, Vec::new()); nbuckets];
    // The model class (Vtop.cpp, holding eval_step) goes with the wrapper.
    if let Some(pos) = fast.iter().position(|f| f.1 == "Vtop") {
        let f = fast.remove(pos);
        buckets[0].0 += f.0;
        buckets[0].1.push(f.1);
    }
    for (sz, name) in fast {
        if let Some(b) = buckets.iter_mut().min_by_key(|b| b.0) {
            b.0 += sz;
            b.1.push(name);
        }
    }

    let mut jobs: Vec<Job> = Vec::new();
    let mut fast_units = Vec::new();
    for (i, (_, names)) in buckets.iter().enumerate() {
        let mut unit = String::from(
            "// Generated by weft-sim: fast-path unity build\n#define VL_INCLUDE_OPT include\n",
        );
        for n in names {
            unit.push_str(&format!("#include \"{n}.cpp\"\n"));
        }
        if i == 0 {
            unit.push_str("#include \"weft_wrapper.cpp\"\n");
        }
        let file = format!("weft_fast_{i}");
        write(&obj.join(format!("{file}.cpp")), &unit)?;
        jobs.push(fast_job(cxx, cflags, fast_opt, fast_extra, &obj, &file));
        fast_units.push(file);
    }
    let mut slow_job = None;
    if !classes.slow.is_empty() {
        let mut unit = String::from(
            "// Generated by weft-sim: slow-path unity build\n#define VL_INCLUDE_OPT include\n",
        );
        for n in &classes.slow {
            unit.push_str(&format!("#include \"{n}.cpp\"\n"));
        }
        write(&obj.join("weft_slow.cpp"), &unit)?;
        slow_job = Some(Job::compile(
            cxx,
            cflags,
            SLOW_OPT,
            &obj,
            "weft_slow.cpp".as_ref(),
            obj.join("weft_slow.o"),
        ));
    }
    let model_objs: Vec<PathBuf> = jobs
        .iter()
        .chain(&slow_job)
        .map(|j| j.output.clone())
        .collect();

    jobs.extend(slow_job);

    // 3. Compile.
    progress("compiling model");
    run_jobs(jobs)?;
    Ok(Units {
        obj,
        objects: model_objs,
        fast: fast_units,
    })
}

/// A verilated model's translation units, compiled.
struct Units {
    /// The object directory (Verilator's output).
    obj: PathBuf,
    /// Every object the model links (fast path first).
    objects: Vec<PathBuf>,
    /// Names (without extension) of the fast-path units, each compiled
    /// from `NAME.cpp` to `NAME.o` in `obj`.
    fast: Vec<String>,
}

/// The compile of one fast-path unit `name` in `obj`.
fn fast_job(
    cxx: &Path,
    cflags: &[String],
    opt: &str,
    extra: &[&str],
    obj: &Path,
    name: &str,
) -> Job {
    let flags: Vec<String> = cflags
        .iter()
        .cloned()
        .chain(extra.iter().map(|f| f.to_string()))
        .collect();
    Job::compile(
        cxx,
        &flags,
        opt,
        obj,
        format!("{name}.cpp").as_ref(),
        obj.join(format!("{name}.o")),
    )
}

/// Optimisation of the model's fast path (evaluation) and wrapper: on
/// weft_top, -O2 simulates as fast as -O3 (within 2%, and -march=native
/// and clang slower; measured with `weft bench sim`) and compiles in 60%
/// of the time.
const FAST_OPT: &str = "-O2";
/// Optimisation of the fast path of [`Optimisation::Quick`]: on weft_top
/// its compile takes about a seventh of `-O2`'s CPU time (1.9 s against
/// 14.6 s) and the model runs about five times slower (`weft bench sim`).
const QUICK_OPT: &str = "-O0";
/// Optimisation of the slow path (construction, initial blocks, trace
/// declarations), run once: Verilator's default (none) compiles fastest.
const SLOW_OPT: &str = "-O0";
/// Optimisation of the Verilator runtime (Verilator's default `-Os`).
const RT_OPT: &str = "-Os";

/// Verilator's flags. `--x-initial 0` starts every variable without a
/// reset value at zero, as the FPGA's configuration does for flops and
/// block RAM without an INIT and as rust-hdl's simulator does; `fast`
/// leaves them as whatever the heap held, which neither does.
///
/// For Verilog with one combinational block per signal
/// ([`ModelSource::split`]) two of Verilator's own optimisations are off:
/// `-fno-split` (its splitting of always blocks, which that Verilog does
/// not need) and `-fno-dfg` (its data-flow-graph rewrites). The model runs
/// a few more instructions a step but faster: on `weft_top` under `weft
/// bench sim`'s traffic (profile-guided builds, runs alternating, two
/// builds each) 0.93 M cycles/s against 0.86 M with Verilator's defaults.
/// `WEFT_VERILATOR_FLAGS` adds flags of one's own (whitespace- or
/// comma-separated; part of the cache key), for such experiments.
fn verilate_flags(top: &str, trace: bool, split: bool) -> Vec<String> {
    let mut f: Vec<String> = [
        "--cc",
        "-O3",
        "--x-assign",
        "fast",
        "--x-initial",
        "0",
        "--prefix",
        "Vtop",
        "--top-module",
        top,
        "-Wno-fatal",
        "--Mdir",
        "obj",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if trace {
        f.push("--trace".into());
    }
    if split {
        f.extend(["-fno-split".into(), "-fno-dfg".into()]);
    }
    f.extend(extra_flags("WEFT_VERILATOR_FLAGS"));
    f
}

/// Flags of one's own from the environment variable `var`, separated by
/// whitespace or commas.
fn extra_flags(var: &str) -> Vec<String> {
    std::env::var(var)
        .map(|v| {
            v.split(|c: char| c.is_whitespace() || c == ',')
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// Flags for every C++ compile (model and runtime), after Verilator's
/// `verilated.mk` (whose flags already include `-fcf-protection=none`).
/// `WEFT_CXXFLAGS` adds flags of one's own (part of the cache key).
fn cxx_flags(tc: &Toolchain, mk: &MkFlags, trace: bool) -> Vec<String> {
    let inc = tc.root.join("include");
    let t = u8::from(trace);
    let mut f = vec![
        format!("-I{}", inc.display()),
        format!("-I{}", inc.join("vltstd").display()),
        "-DVM_COVERAGE=0".into(),
        "-DVM_SC=0".into(),
        format!("-DVM_TRACE={t}"),
        "-DVM_TRACE_FST=0".into(),
        format!("-DVM_TRACE_VCD={t}"),
        // Time comes from each model's own VerilatedContext, never from a
        // global sc_time_stamp().
        "-DVL_TIME_CONTEXT".into(),
        "-fPIC".into(),
        // Export only the wrapper's C ABI; every model library carries its
        // own copy of the runtime.
        "-fvisibility=hidden".into(),
    ];
    f.extend(mk.cxxflags.iter().cloned());
    if debuginfo() {
        f.push("-g".into());
    }
    f.extend(extra_flags("WEFT_CXXFLAGS"));
    f
}

/// Whether models are compiled with line tables
/// (`WEFT_VERILATOR_DEBUGINFO=1`).
fn debuginfo() -> bool {
    std::env::var("WEFT_VERILATOR_DEBUGINFO").is_ok_and(|v| v == "1")
}

/// Key of the runtime objects: they depend on the Verilator install, the
/// compiler and the flags, but not on the trace switch (`VM_TRACE` only
/// sets a compatibility macro in the runtime; they are always compiled with
/// it on), so one set serves both.
fn rt_key(tc: &Toolchain, cflags: &[String]) -> String {
    let flags: Vec<&str> = cflags
        .iter()
        .map(String::as_str)
        .filter(|f| !f.starts_with("-DVM_TRACE"))
        .collect();
    let mut k = KeyHasher::new("weft-verilator-rt-v1");
    k.field(tc.version.as_bytes())
        .field(tc.root.to_string_lossy().as_bytes())
        .field(tc.cxx_version.as_bytes())
        .field(flags.join("\0").as_bytes())
        .field(RT_OPT.as_bytes());
    let hex = k.hex();
    hex[..12].to_string()
}

/// Compiler settings read from `$VERILATOR_ROOT/include/verilated.mk`.
struct MkFlags {
    cxxflags: Vec<String>,
    ldlibs: Vec<String>,
}

impl MkFlags {
    fn read(root: &Path) -> MkFlags {
        let text =
            fs::read_to_string(root.join("include").join("verilated.mk")).unwrap_or_default();
        let var = |name: &str| -> Option<Vec<String>> {
            text.lines().find_map(|l| {
                let (k, v) = l.split_once('=')?;
                (k.trim() == name).then(|| v.split_whitespace().map(String::from).collect())
            })
        };
        let mut cxxflags = var("CFG_CXXFLAGS_NO_UNUSED").unwrap_or_else(|| {
            [
                "-faligned-new",
                "-Wno-sign-compare",
                "-Wno-unused-parameter",
                "-Wno-unused-variable",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect()
        });
        cxxflags.extend(var("CFG_CXXFLAGS_STD").unwrap_or_default());
        let ldlibs = var("CFG_LDLIBS_THREADS")
            .unwrap_or_else(|| vec!["-pthread".into(), "-lpthread".into(), "-latomic".into()]);
        MkFlags { cxxflags, ldlibs }
    }
}

/// One compiler invocation.
struct Job {
    cmd: Command,
    label: String,
    output: PathBuf,
    /// Rename the output here once it compiled (atomic publication).
    rename_to: Option<PathBuf>,
}

impl Job {
    fn compile(
        cxx: &Path,
        cflags: &[String],
        opt: &str,
        dir: &Path,
        src: &Path,
        output: PathBuf,
    ) -> Job {
        let mut cmd = Command::new(cxx);
        cmd.args(cflags)
            .arg(opt)
            .arg("-c")
            .arg("-o")
            .arg(&output)
            .arg(src)
            .current_dir(dir);
        Job {
            label: format!("compiling {}", src.display()),
            cmd,
            output,
            rename_to: None,
        }
    }
}

/// Run the jobs, `JOBS` at a time, in order; fail with every failed job's
/// log.
fn run_jobs(jobs: Vec<Job>) -> Result<(), VerilatorError> {
    let jobs: Vec<Mutex<Job>> = jobs.into_iter().map(Mutex::new).collect();
    let next = AtomicUsize::new(0);
    let failures: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let io_error: Mutex<Option<VerilatorError>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..JOBS.min(jobs.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(job) = jobs.get(i) else { break };
                let mut job = match job.lock() {
                    Ok(j) => j,
                    Err(p) => p.into_inner(),
                };
                let label = job.label.clone();
                match run(&mut job.cmd, &label) {
                    Ok((out, _)) if out.status.success() => {
                        if let Some(to) = &job.rename_to {
                            if let Err(e) = fs::rename(&job.output, to) {
                                let mut slot = io_error.lock().unwrap_or_else(|p| p.into_inner());
                                *slot = Some(VerilatorError::Io {
                                    context: format!("publishing {}", to.display()),
                                    source: e,
                                });
                            }
                        }
                    }
                    Ok((_, log)) => {
                        let _ = fs::remove_file(&job.output);
                        failures
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push(trim_log(&log));
                    }
                    Err(e) => {
                        let mut slot = io_error.lock().unwrap_or_else(|p| p.into_inner());
                        *slot = Some(e);
                    }
                }
            });
        }
    });
    if let Some(e) = io_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let failures = failures.into_inner().unwrap_or_else(|p| p.into_inner());
    if !failures.is_empty() {
        return Err(VerilatorError::Compile {
            log: failures.join("\n\n"),
        });
    }
    Ok(())
}

/// Run a command to completion, capturing its output; the log starts with
/// the command line.
fn run(cmd: &mut Command, what: &str) -> Result<(Output, String), VerilatorError> {
    let line = format!("$ {cmd:?}");
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(VerilatorError::io(format!("running {what}: {line}")))?;
    let mut log = line;
    log.push('\n');
    log.push_str(&String::from_utf8_lossy(&out.stderr));
    log.push_str(&String::from_utf8_lossy(&out.stdout));
    Ok((out, log))
}

fn write(path: &Path, text: &str) -> Result<(), VerilatorError> {
    fs::write(path, text).map_err(VerilatorError::io(format!("writing {}", path.display())))
}

fn read(path: &Path) -> Result<String, VerilatorError> {
    fs::read_to_string(path).map_err(VerilatorError::io(format!("reading {}", path.display())))
}

/// A version string as one path component.
fn path_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
