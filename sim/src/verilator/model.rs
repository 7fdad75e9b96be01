//! Loading a built model and running instances of it.

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::cppgen::{Layout, ABI_VERSION};
use super::{PortSpec, VerilatorError};

type AbiFn = unsafe extern "C" fn() -> u32;
type SignatureFn = unsafe extern "C" fn() -> *const c_char;
type NewFn = unsafe extern "C" fn(*const c_char, *mut i32) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type EvalFn = unsafe extern "C" fn(*mut c_void, *const u32, *mut u32);
type TickFn = unsafe extern "C" fn(*mut c_void, u32);
type StepFn = unsafe extern "C" fn(*mut c_void, *const u32, *mut u32, u32);
type PushFn = unsafe extern "C" fn(*mut c_void, u32, *const u8, u32) -> i32;
type CountFn = unsafe extern "C" fn(*mut c_void, u32) -> u32;
type PopFn = unsafe extern "C" fn(*mut c_void, u32, *mut u8, u64, *mut u64, *mut u32) -> i64;
type ProfileFn = unsafe extern "C" fn(*mut c_void, u32) -> u64;
type OneEvalFn = unsafe extern "C" fn(*mut c_void, u32) -> u32;
type RunFn = unsafe extern "C" fn(*mut c_void, *const u32, *mut u32, *const u32, u64, u64, u32);

/// A frame an output stream of the model finished.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamFrame {
    /// Its bytes (those its beats kept).
    pub bytes: Vec<u8>,
    /// The base step of its last beat.
    pub step: u64,
    /// Its last beat's `tuser_size` (0 for a stream without one).
    pub size: u32,
}

/// A built design: the loaded shared object plus its port metadata. Shared
/// by every [`Model`] instantiated from it; the shared object stays loaded
/// while any of them lives.
pub struct Library {
    path: PathBuf,
    cache_hit: bool,
    trace: bool,
    layout: Layout,
    in_words: usize,
    out_words: usize,
    new_fn: NewFn,
    free_fn: FreeFn,
    eval_fn: EvalFn,
    tick_fn: TickFn,
    step_fn: StepFn,
    push_fn: PushFn,
    backlog_fn: CountFn,
    partial_fn: CountFn,
    pop_fn: PopFn,
    profile_fn: ProfileFn,
    one_eval_fn: OneEvalFn,
    run_fn: RunFn,
    streams: Vec<super::Stream>,
    // Last: the function pointers above point into it.
    _lib: libloading::Library,
}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library")
            .field("path", &self.path)
            .field("cache_hit", &self.cache_hit)
            .field("trace", &self.trace)
            .field("top", &self.layout.top)
            .field("clocks", &self.layout.clocks)
            .field("inputs", &self.layout.inputs)
            .field("outputs", &self.layout.outputs)
            .finish()
    }
}

impl Library {
    /// Have a training build (instrumented by gcc's `-fprofile-generate`)
    /// write its profile now; false for any other build, which has none.
    pub(crate) fn dump_profile(&self) -> bool {
        type DumpFn = unsafe extern "C" fn() -> i32;
        // SAFETY: the wrapper defines weft_dump_profile with this type; it
        // only flushes the gcov runtime's counters to files.
        unsafe {
            self._lib
                .get::<DumpFn>(b"weft_dump_profile\0")
                .map(|f| f() == 1)
                .unwrap_or(false)
        }
    }

    /// Load the shared object at `path` and check that it was built from
    /// `layout` (ABI version and port signature).
    pub(crate) fn load(
        path: &Path,
        layout: &Layout,
        trace: bool,
        cache_hit: bool,
    ) -> Result<Library, VerilatorError> {
        let load_err = |what: &str, e: libloading::Error| {
            VerilatorError::Load(format!("{}: {what}: {e}", path.display()))
        };
        // SAFETY: loading runs the library's static constructors; the library
        // is one this module generated (Verilator runtime plus model).
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| load_err("dlopen", e))?;
        // SAFETY: the symbol types match the generated wrapper's definitions,
        // which the ABI version check below confirms.
        unsafe {
            let abi: AbiFn = *lib
                .get::<AbiFn>(b"weft_abi_version\0")
                .map_err(|e| load_err("weft_abi_version", e))?;
            let version = abi();
            if version != ABI_VERSION {
                return Err(VerilatorError::Load(format!(
                    "{}: wrapper ABI version {version}, expected {ABI_VERSION}",
                    path.display()
                )));
            }
            let sig: SignatureFn = *lib
                .get::<SignatureFn>(b"weft_signature\0")
                .map_err(|e| load_err("weft_signature", e))?;
            let sig_ptr = sig();
            if sig_ptr.is_null() {
                return Err(VerilatorError::Load(format!(
                    "{}: null port signature",
                    path.display()
                )));
            }
            let got = CStr::from_ptr(sig_ptr).to_string_lossy();
            let want = layout.signature(trace);
            if got != want {
                return Err(VerilatorError::Load(format!(
                    "{}: built for ports {got:?}, expected {want:?}",
                    path.display()
                )));
            }
            let new_fn: NewFn = *lib
                .get::<NewFn>(b"weft_new\0")
                .map_err(|e| load_err("weft_new", e))?;
            let free_fn: FreeFn = *lib
                .get::<FreeFn>(b"weft_free\0")
                .map_err(|e| load_err("weft_free", e))?;
            let eval_fn: EvalFn = *lib
                .get::<EvalFn>(b"weft_eval\0")
                .map_err(|e| load_err("weft_eval", e))?;
            let tick_fn: TickFn = *lib
                .get::<TickFn>(b"weft_tick\0")
                .map_err(|e| load_err("weft_tick", e))?;
            let step_fn: StepFn = *lib
                .get::<StepFn>(b"weft_step\0")
                .map_err(|e| load_err("weft_step", e))?;
            let push_fn: PushFn = *lib
                .get::<PushFn>(b"weft_push\0")
                .map_err(|e| load_err("weft_push", e))?;
            let backlog_fn: CountFn = *lib
                .get::<CountFn>(b"weft_backlog\0")
                .map_err(|e| load_err("weft_backlog", e))?;
            let partial_fn: CountFn = *lib
                .get::<CountFn>(b"weft_partial\0")
                .map_err(|e| load_err("weft_partial", e))?;
            let pop_fn: PopFn = *lib
                .get::<PopFn>(b"weft_pop\0")
                .map_err(|e| load_err("weft_pop", e))?;
            let profile_fn: ProfileFn = *lib
                .get::<ProfileFn>(b"weft_profile\0")
                .map_err(|e| load_err("weft_profile", e))?;
            let one_eval_fn: OneEvalFn = *lib
                .get::<OneEvalFn>(b"weft_one_eval\0")
                .map_err(|e| load_err("weft_one_eval", e))?;
            let run_fn: RunFn = *lib
                .get::<RunFn>(b"weft_run\0")
                .map_err(|e| load_err("weft_run", e))?;
            Ok(Library {
                path: path.to_path_buf(),
                cache_hit,
                trace,
                in_words: layout.in_words(),
                out_words: layout.out_words(),
                layout: layout.clone(),
                new_fn,
                free_fn,
                eval_fn,
                tick_fn,
                step_fn,
                push_fn,
                backlog_fn,
                partial_fn,
                pop_fn,
                profile_fn,
                one_eval_fn,
                run_fn,
                streams: super::streams::streams(layout),
                _lib: lib,
            })
        }
    }

    /// Path of the shared object.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether [`build`](super::build) found this design already built (in
    /// the cache, possibly built by a concurrent builder) instead of
    /// building it.
    pub fn cache_hit(&self) -> bool {
        self.cache_hit
    }

    /// Whether the library was built with VCD tracing support.
    pub fn traced(&self) -> bool {
        self.trace
    }

    /// Name of the top module.
    pub fn top(&self) -> &str {
        &self.layout.top
    }

    /// Name of the first clock port, if the design has one.
    pub fn clock(&self) -> Option<&str> {
        self.layout.clocks.first().map(String::as_str)
    }

    /// Names of the clock ports, in the bit order of [`Model::step`].
    pub fn clocks(&self) -> &[String] {
        &self.layout.clocks
    }

    /// Input ports in packing order (port order, the clocks excluded).
    pub fn inputs(&self) -> &[PortSpec] {
        &self.layout.inputs
    }

    /// Output ports in packing order (port order).
    pub fn outputs(&self) -> &[PortSpec] {
        &self.layout.outputs
    }

    /// Length of the packed `inputs` slice of [`Model::eval`].
    pub fn input_words(&self) -> usize {
        self.in_words
    }

    /// Length of the packed `outputs` slice of [`Model::eval`].
    pub fn output_words(&self) -> usize {
        self.out_words
    }

    /// The design's AXI4-Stream bundles, which [`Model::run`] drives: the
    /// inputs (numbered from 0 in this order for [`Model::push`]) first,
    /// then the outputs (numbered from 0 among themselves for
    /// [`Model::pop`]).
    pub fn streams(&self) -> &[super::Stream] {
        &self.streams
    }

    /// The number of input stream `name` for [`Model::push`], or of output
    /// stream `name` for [`Model::pop`].
    pub fn stream(&self, name: &str) -> Option<u32> {
        let s = self.streams.iter().find(|s| s.name == name)?;
        let n = self
            .streams
            .iter()
            .filter(|t| t.dir == s.dir)
            .position(|t| t.name == name)?;
        Some(n as u32)
    }
}

/// One instance of a design, with its own Verilator context. Instances are
/// independent and may run on different threads at once.
pub struct Model {
    lib: Arc<Library>,
    ptr: *mut c_void,
    /// Where [`pop`](Model::pop) takes a frame first: most fit, so a pop is
    /// one call and one copy out.
    scratch: Vec<u8>,
}

/// Bytes of [`Model`]'s pop scratch buffer: a jumbo frame (9,600 bytes)
/// and then some.
const POP_SCRATCH: usize = 16 * 1024;

// SAFETY: the C++ model is owned by this value alone and touched only
// through `&mut self` (or on drop); every instance has its own
// VerilatedContext, which Verilator allows to run on any one thread at a
// time.
unsafe impl Send for Model {}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("top", &self.lib.layout.top)
            .field("path", &self.lib.path)
            .finish()
    }
}

impl Model {
    /// Instantiate the design (runs its `initial` blocks and settles it with
    /// all inputs zero). With `vcd`, every [`tick`](Model::tick) is dumped to
    /// that file (created or truncated), which needs a library built with
    /// [`BuildOptions::trace`](super::BuildOptions::trace); the file is
    /// flushed and closed when the model is dropped.
    ///
    /// In the VCD a step ([`tick`](Model::tick) or [`step`](Model::step))
    /// is 10 time units: the inputs set by the [`eval`](Model::eval)s before
    /// it appear 4 units before its rising edges, the clocks that rise do so
    /// at 10n and fall at 10n+5 (so a clock rising every second step shows a
    /// short high phase: only its edges are meaningful).
    pub fn new(lib: &Arc<Library>, vcd: Option<&Path>) -> Result<Model, VerilatorError> {
        let vcd_c = match vcd {
            None => None,
            Some(path) => {
                if !lib.trace {
                    return Err(VerilatorError::Trace(format!(
                        "a VCD file ({}) needs a library built with trace = true",
                        path.display()
                    )));
                }
                // Create the file here for a proper I/O error.
                std::fs::File::create(path).map_err(VerilatorError::io(format!(
                    "creating VCD file {}",
                    path.display()
                )))?;
                let bytes = path.as_os_str().as_encoded_bytes().to_vec();
                Some(CString::new(bytes).map_err(|_| {
                    VerilatorError::Trace(format!("VCD path {} contains NUL", path.display()))
                })?)
            }
        };
        let mut status: i32 = 0;
        let vcd_ptr = vcd_c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
        // SAFETY: weft_new takes a nullable NUL-terminated path and a status
        // out-pointer; both outlive the call.
        let ptr = unsafe { (lib.new_fn)(vcd_ptr, &mut status) };
        if ptr.is_null() {
            return Err(match status {
                1 => VerilatorError::Trace("library built without tracing".into()),
                2 => VerilatorError::Trace(format!(
                    "the model could not open VCD file {}",
                    vcd.map_or_else(String::new, |p| p.display().to_string())
                )),
                _ => VerilatorError::Load(format!(
                    "instantiating {} failed (status {status})",
                    lib.layout.top
                )),
            });
        }
        Ok(Model {
            lib: Arc::clone(lib),
            ptr,
            scratch: vec![0; POP_SCRATCH],
        })
    }

    /// The library this model was instantiated from.
    pub fn library(&self) -> &Arc<Library> {
        &self.lib
    }

    /// Set all inputs (packed), evaluate, read all outputs (packed); see the
    /// [module documentation](super) for the packing.
    ///
    /// # Panics
    ///
    /// If `inputs` is not [`Library::input_words`] long or `outputs` not
    /// [`Library::output_words`] long (a caller bug: the C++ side would read
    /// or write out of bounds).
    pub fn eval(&mut self, inputs: &[u32], outputs: &mut [u32]) {
        assert_eq!(
            inputs.len(),
            self.lib.in_words,
            "Model::eval: {} input words given, design {} takes {}",
            inputs.len(),
            self.lib.layout.top,
            self.lib.in_words
        );
        assert_eq!(
            outputs.len(),
            self.lib.out_words,
            "Model::eval: room for {} output words, design {} gives {}",
            outputs.len(),
            self.lib.layout.top,
            self.lib.out_words
        );
        // SAFETY: the slices have exactly the lengths the wrapper was
        // generated for; ptr is a live model.
        unsafe { (self.lib.eval_fn)(self.ptr, inputs.as_ptr(), outputs.as_mut_ptr()) }
    }

    /// [`eval`](Model::eval) then [`step`](Model::step) in one call: the
    /// outputs are those before the clocks of `rising` rise.
    ///
    /// # Panics
    ///
    /// As [`eval`](Model::eval), for slices of the wrong length.
    pub fn eval_step(&mut self, inputs: &[u32], outputs: &mut [u32], rising: u32) {
        assert_eq!(
            inputs.len(),
            self.lib.in_words,
            "Model::eval_step: input words"
        );
        assert_eq!(
            outputs.len(),
            self.lib.out_words,
            "Model::eval_step: output words"
        );
        // SAFETY: as in eval: the slices have exactly the lengths the
        // wrapper was generated for, and ptr is a live model.
        unsafe { (self.lib.step_fn)(self.ptr, inputs.as_ptr(), outputs.as_mut_ptr(), rising) }
    }

    /// One clock cycle of every clock at once: [`step`](Model::step) with
    /// all clocks rising. For a single-clock design: clock = 1, evaluate,
    /// clock = 0, evaluate. Without a clock port this only evaluates.
    pub fn tick(&mut self) {
        let n = self.lib.layout.clocks.len();
        self.step(if n >= 32 { u32::MAX } else { (1u32 << n) - 1 });
    }

    /// One base step: every clock `i` with bit `i` of `rising` set goes high
    /// at one instant (one evaluation), then low (dumping the VCD around each
    /// edge when tracing). Inputs keep the values of the last
    /// [`eval`](Model::eval). Bits above the clock count are ignored; with
    /// no bit set time advances and a design with clocks is not evaluated
    /// (nothing can change), one without clocks is.
    pub fn step(&mut self, rising: u32) {
        // SAFETY: ptr is a live model; the wrapper tests each bit it knows.
        unsafe { (self.lib.tick_fn)(self.ptr, rising) }
    }

    /// Queue `frame` on input stream `stream` ([`Library::stream`]) for
    /// [`run`](Model::run).
    ///
    /// # Panics
    ///
    /// If there is no such input stream or the frame is empty (caller
    /// bugs: a frame has at least one beat).
    pub fn push(&mut self, stream: u32, frame: &[u8]) {
        let len = u32::try_from(frame.len()).expect("a frame under 4 GiB");
        // SAFETY: ptr is a live model; the bytes outlive the call, which
        // copies them.
        let r = unsafe { (self.lib.push_fn)(self.ptr, stream, frame.as_ptr(), len) };
        assert_eq!(r, 0, "Model::push: stream {stream}, {len} bytes refused");
    }

    /// Frames waiting on input stream `stream`, the one going in included.
    pub fn backlog(&self, stream: u32) -> usize {
        // SAFETY: ptr is a live model; an unknown stream reads as 0.
        unsafe { (self.lib.backlog_fn)(self.ptr, stream) as usize }
    }

    /// Bytes output stream `stream` has collected of a frame not finished.
    pub fn partial(&self, stream: u32) -> usize {
        // SAFETY: ptr is a live model; an unknown stream reads as 0.
        unsafe { (self.lib.partial_fn)(self.ptr, stream) as usize }
    }

    /// The oldest frame output stream `stream` finished, if any.
    pub fn pop(&mut self, stream: u32) -> Option<StreamFrame> {
        let (mut step, mut size) = (0u64, 0u32);
        // Into the scratch buffer first: the wrapper copies the frame and
        // drops it when it fits, else only says its length.
        // SAFETY: ptr is a live model, scratch has scratch.len() writable
        // bytes and the out-pointers are valid for the call.
        let n = unsafe {
            (self.lib.pop_fn)(
                self.ptr,
                stream,
                self.scratch.as_mut_ptr(),
                self.scratch.len() as u64,
                &mut step,
                &mut size,
            )
        };
        let n = usize::try_from(n).ok()?;
        if n <= self.scratch.len() {
            let bytes = self.scratch[..n].to_vec();
            return Some(StreamFrame { bytes, step, size });
        }
        let mut bytes = vec![0u8; n];
        // SAFETY: bytes has n writable bytes, the out-pointers are valid
        // for the call, and the frame (still queued) is n bytes long.
        let got = unsafe {
            (self.lib.pop_fn)(
                self.ptr,
                stream,
                bytes.as_mut_ptr(),
                n as u64,
                &mut step,
                &mut size,
            )
        };
        assert_eq!(got, n as i64, "Model::pop: the frame changed length");
        Some(StreamFrame { bytes, step, size })
    }

    /// Take one evaluation a step in [`run`](Model::run) (after the first
    /// step of each call) instead of two, and whether the model can (all
    /// its triggers rising clock edges, built without tracing). Sound only
    /// for a design none of whose outputs an input stream reaches
    /// combinationally: [`run`](Model::run) then reads, before each edge,
    /// the outputs after the last one, which are the same exactly then.
    /// `weft_top` is checked for it (`sim/tests/top.rs`).
    pub fn set_one_eval(&mut self, on: bool) -> bool {
        // SAFETY: ptr is a live model.
        unsafe { (self.lib.one_eval_fn)(self.ptr, u32::from(on)) != 0 }
    }

    /// Time [`run`](Model::run)'s evaluations from now on (or stop), and
    /// the seconds timed so far.
    pub fn profile_eval(&mut self, on: bool) -> f64 {
        // SAFETY: ptr is a live model.
        let ns = unsafe { (self.lib.profile_fn)(self.ptr, u32::from(on)) };
        ns as f64 * 1e-9
    }

    /// `rising.len()` base steps numbered from `first` in one call, step
    /// `i`'s clocks rising as `rising[i]` says, with the non-stream inputs
    /// `inputs` (packed; the stream ports' words are ignored) throughout.
    /// With `drive`, every input stream offers its queue's head one beat a
    /// step and moves on where the design took it; without, the input
    /// streams are idle. Every output stream collects the beats the design
    /// hands over. Each step is [`eval_step`](Model::eval_step)'s, in the
    /// same order; `outputs` gets the outputs before the last step's edge.
    ///
    /// # Panics
    ///
    /// As [`eval`](Model::eval), for slices of the wrong length.
    pub fn run(
        &mut self,
        inputs: &[u32],
        outputs: &mut [u32],
        rising: &[u32],
        first: u64,
        drive: bool,
    ) {
        assert_eq!(inputs.len(), self.lib.in_words, "Model::run: input words");
        assert_eq!(
            outputs.len(),
            self.lib.out_words,
            "Model::run: output words"
        );
        if rising.is_empty() {
            return;
        }
        // SAFETY: the slices have the lengths the wrapper was generated for
        // (rising: exactly n masks), and ptr is a live model.
        unsafe {
            (self.lib.run_fn)(
                self.ptr,
                inputs.as_ptr(),
                outputs.as_mut_ptr(),
                rising.as_ptr(),
                rising.len() as u64,
                first,
                u32::from(drive),
            )
        }
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: ptr came from weft_new and is freed exactly once; the
        // library outlives this call through self.lib.
        unsafe { (self.lib.free_fn)(self.ptr) }
    }
}
