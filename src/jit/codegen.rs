//! Machine code for the IR, by cranelift, in process.
//!
//! Every IR function becomes a native function: a model entry has the C
//! signature `fn(frame: *mut f64, len: u64) -> i32` and first checks that the
//! frame is at least as long as the program's layout (the ABI bounds check;
//! within the function every constant slot is below that length, which the IR
//! verifier guarantees, and every computed index is checked before use); a
//! user function has `fn(frame: *mut f64) -> i32`, its frame being a stack
//! slot of its caller. Math functions without a cranelift instruction are
//! calls of Rust's libm routines, registered as JIT symbols, so compiled code
//! and the interpreter compute the very same values.

use super::ir::{self as rir, Func, IrExpr, Op1, Op2, Stmt, status};
use super::lower::Program;
use crate::flat::{Fn1, Fn2, RelOp};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    self, AbiParam, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, types,
};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module};
use std::collections::HashMap;

type EntryFn = unsafe extern "C" fn(*mut f64, u64) -> i32;

/// The compiled program. Holds the code memory for as long as it lives.
pub struct Jit {
    _module: JITModule,
    /// Indexed like [`Program::entries`]; `None` for an entry not compiled.
    entries: Vec<Option<(String, EntryFn, u32)>>,
}

// The compiled functions only touch the frame they are given.
unsafe impl Send for Jit {}
unsafe impl Sync for Jit {}

impl Jit {
    /// Runs entry `k` (in the order of [`Program::entries`]) on `frame`.
    /// Entries not compiled return [`status::NOT_COMPILED`].
    pub fn run_index(&self, k: usize, frame: &mut [f64]) -> i32 {
        // Borrowed, not cloned: a clone of the entry's name would be an
        // allocation per call, several times the cost of a small model.
        let Some((_, f, _)) = self.entries.get(k).and_then(|e| e.as_ref()) else {
            return status::NOT_COMPILED;
        };
        // Safety: the function checks `frame.len()` against its frame size
        // before any access, and only touches `frame`.
        unsafe { f(frame.as_mut_ptr(), frame.len() as u64) }
    }
}

macro_rules! libm1 {
    ($($name:ident => $e:expr),* $(,)?) => {
        $(extern "C" fn $name(x: f64) -> f64 { let f: fn(f64) -> f64 = $e; f(x) })*
    };
}

libm1! {
    rmoc_sin => f64::sin,
    rmoc_cos => f64::cos,
    rmoc_tan => f64::tan,
    rmoc_asin => f64::asin,
    rmoc_acos => f64::acos,
    rmoc_atan => f64::atan,
    rmoc_sinh => f64::sinh,
    rmoc_cosh => f64::cosh,
    rmoc_tanh => f64::tanh,
    rmoc_exp => f64::exp,
    rmoc_log => f64::ln,
    rmoc_log10 => f64::log10,
}

extern "C" fn rmoc_pow(x: f64, y: f64) -> f64 {
    crate::jit::interp::apply2(Op2::Pow, x, y)
}

extern "C" fn rmoc_atan2(y: f64, x: f64) -> f64 {
    y.atan2(x)
}

/// `a x = b` for an n x n row-major `a`; the solution replaces `b`.
/// Returns 1 on success, 0 for a singular matrix.
extern "C" fn rmoc_solve(n: u64, a: *mut f64, b: *mut f64) -> i32 {
    let n = n as usize;
    // Safety: the generated code passes stack slots of exactly n*n and n f64.
    let (a, b) = unsafe {
        (
            std::slice::from_raw_parts_mut(a, n * n),
            std::slice::from_raw_parts_mut(b, n),
        )
    };
    i32::from(crate::jit::interp::solve_consistent(n, a, b))
}

fn symbol_of(f: Fn1) -> Option<(&'static str, *const u8)> {
    Some(match f {
        Fn1::Sin => ("rmoc_sin", rmoc_sin as *const u8),
        Fn1::Cos => ("rmoc_cos", rmoc_cos as *const u8),
        Fn1::Tan => ("rmoc_tan", rmoc_tan as *const u8),
        Fn1::Asin => ("rmoc_asin", rmoc_asin as *const u8),
        Fn1::Acos => ("rmoc_acos", rmoc_acos as *const u8),
        Fn1::Atan => ("rmoc_atan", rmoc_atan as *const u8),
        Fn1::Sinh => ("rmoc_sinh", rmoc_sinh as *const u8),
        Fn1::Cosh => ("rmoc_cosh", rmoc_cosh as *const u8),
        Fn1::Tanh => ("rmoc_tanh", rmoc_tanh as *const u8),
        Fn1::Exp => ("rmoc_exp", rmoc_exp as *const u8),
        Fn1::Log => ("rmoc_log", rmoc_log as *const u8),
        Fn1::Log10 => ("rmoc_log10", rmoc_log10 as *const u8),
        _ => return None,
    })
}

/// Compiles every entry of a verified program.
pub fn compile(p: &Program) -> Result<Jit, String> {
    compile_entries(p, &[true; 10])
}

/// Compiles every entry with parts of about `part_statements` statements
/// (however small the entry): for tests of the split.
pub fn compile_in_parts(p: &Program, part_statements: usize) -> Result<Jit, String> {
    compile_with(p, &[true; 10], part_statements.max(1), 0)
}

impl Jit {
    /// Whether entry `k` was compiled.
    pub fn has(&self, k: usize) -> bool {
        self.entries.get(k).is_some_and(|e| e.is_some())
    }
}

/// Programs whose compiled entries have more IR statements than this get
/// cranelift's single-pass register allocator.
pub const SINGLE_PASS_ABOVE: usize = 3_000;

/// IR statements of a body, nested ones included.
fn statements(body: &[Stmt]) -> usize {
    body.iter()
        .map(|s| {
            1 + match s {
                Stmt::If(_, a, b) => statements(a) + statements(b),
                Stmt::Loop(a) | Stmt::Repeat { body: a, .. } => statements(a),
                _ => 0,
            }
        })
        .sum()
}

/// Compiles the entries `want[k]` of a verified program (user functions
/// always).
pub fn compile_entries(p: &Program, want: &[bool; 10]) -> Result<Jit, String> {
    compile_with(p, want, PART_STATEMENTS, 2 * PART_STATEMENTS)
}

/// Entries with more than `split_above` statements are compiled in parts of
/// about `part_statements`.
fn compile_with(
    p: &Program,
    want: &[bool; 10],
    part_statements: usize,
    split_above: usize,
) -> Result<Jit, String> {
    let mut flags = settings::builder();
    let set = |f: &mut settings::Builder, k: &str, v: &str| {
        f.set(k, v)
            .map_err(|e| format!("cranelift setting {k}: {e}"))
    };
    set(&mut flags, "use_colocated_libcalls", "false")?;
    set(&mut flags, "is_pic", "false")?;
    set(&mut flags, "opt_level", "speed")?;
    // Register allocation is most of the JIT's time on large entries
    // (backtracking: 360 ms of the humpage reducer's 430 ms compile); the
    // single-pass allocator compiles them 2-8x faster for code that runs
    // 10-15% slower, so small models keep the better code.
    let size: usize = (0..p.entries().len())
        .filter(|&k| want[k])
        .map(|k| statements(&p.entries()[k].body))
        .sum();
    if std::env::var_os("RMOC_DEBUG_JIT_SIZE").is_some() {
        eprintln!("jit: {size} statements");
    }
    if size > SINGLE_PASS_ABOVE {
        set(&mut flags, "regalloc_algorithm", "single_pass")?;
    }
    // The IR verifier has checked the program; cranelift's own verifier would
    // only re-check our translation, at a third of the compile time.
    set(&mut flags, "enable_verifier", "false")?;
    let isa = cranelift_native::builder()
        .map_err(|e| format!("this machine is not supported by the JIT: {e}"))?
        .finish(settings::Flags::new(flags))
        .map_err(|e| format!("cranelift: {e}"))?;
    let mut jb = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
    for f in Fn1::ALL {
        if let Some((n, ptr)) = symbol_of(f) {
            jb.symbol(n, ptr);
        }
    }
    jb.symbol("rmoc_pow", rmoc_pow as *const u8);
    jb.symbol("rmoc_atan2", rmoc_atan2 as *const u8);
    jb.symbol("rmoc_solve", rmoc_solve as *const u8);
    let mut module = JITModule::new(jb);
    let ptr = module.target_config().pointer_type();

    // Imported math functions.
    let mut sig1 = module.make_signature();
    sig1.params.push(AbiParam::new(types::F64));
    sig1.returns.push(AbiParam::new(types::F64));
    let mut sig2 = sig1.clone();
    sig2.params.push(AbiParam::new(types::F64));
    let mut imports: HashMap<&'static str, FuncId> = HashMap::new();
    for f in Fn1::ALL {
        if let Some((n, _)) = symbol_of(f) {
            let id = module
                .declare_function(n, Linkage::Import, &sig1)
                .map_err(|e| e.to_string())?;
            imports.insert(n, id);
        }
    }
    for n in ["rmoc_pow", "rmoc_atan2"] {
        let id = module
            .declare_function(n, Linkage::Import, &sig2)
            .map_err(|e| e.to_string())?;
        imports.insert(n, id);
    }
    let mut solve_sig = module.make_signature();
    solve_sig.params.push(AbiParam::new(types::I64));
    solve_sig.params.push(AbiParam::new(ptr));
    solve_sig.params.push(AbiParam::new(ptr));
    solve_sig.returns.push(AbiParam::new(types::I32));
    let solve_id = module
        .declare_function("rmoc_solve", Linkage::Import, &solve_sig)
        .map_err(|e| e.to_string())?;
    imports.insert("rmoc_solve", solve_id);

    // User functions: fn(frame) -> i32.
    let mut user_sig = module.make_signature();
    user_sig.params.push(AbiParam::new(ptr));
    user_sig.returns.push(AbiParam::new(types::I32));
    let mut user_ids = Vec::new();
    for (i, f) in p.user.iter().enumerate() {
        let id = module
            .declare_function(
                &format!("user{i}_{}", sanitize(&f.name)),
                Linkage::Local,
                &user_sig,
            )
            .map_err(|e| e.to_string())?;
        user_ids.push(id);
    }
    let mut entry_sig = module.make_signature();
    entry_sig.params.push(AbiParam::new(ptr));
    entry_sig.params.push(AbiParam::new(types::I64));
    entry_sig.returns.push(AbiParam::new(types::I32));
    let mut entry_ids = Vec::new();
    for (k, f) in p.entries().iter().enumerate() {
        if !want[k] {
            entry_ids.push(None);
            continue;
        }
        let id = module
            .declare_function(&f.name, Linkage::Export, &entry_sig)
            .map_err(|e| e.to_string())?;
        entry_ids.push(Some(id));
    }

    // Translate every function to cranelift IR here (declaring the callees
    // needs the module), compile them to machine code on all cores, then
    // hand the code to the module. The two large entries of a big model
    // (`ode`, `tangent`) take most of the time and compile side by side.
    let mut fctx = FunctionBuilderContext::new();
    let env = CallTargets {
        imports: &imports,
        user_ids: &user_ids,
        user: &p.user,
    };
    let mut built: Vec<Translated> = Vec::new();
    for (i, f) in p.user.iter().enumerate() {
        let mut func = ir::Function::with_name_signature(
            ir::UserFuncName::user(0, user_ids[i].as_u32()),
            user_sig.clone(),
        );
        build(
            &mut module,
            &mut func,
            &mut fctx,
            f,
            false,
            status::OK,
            &env,
        )?;
        built.push(Translated {
            id: user_ids[i],
            name: f.name.clone(),
            weight: f.body.len(),
            func,
        });
    }
    for (k, f) in p.entries().iter().enumerate() {
        let Some(id) = entry_ids[k] else { continue };
        let mut func = ir::Function::with_name_signature(
            ir::UserFuncName::user(0, id.as_u32()),
            entry_sig.clone(),
        );
        let ranges = match statements(&f.body) > split_above {
            true => parts(&f.body, part_statements),
            false => Vec::new(),
        };
        if ranges.len() <= 1 {
            build(&mut module, &mut func, &mut fctx, f, true, status::OK, &env)?;
            built.push(Translated {
                id,
                name: f.name.clone(),
                weight: statements(&f.body),
                func,
            });
            continue;
        }
        let mut part_ids = Vec::new();
        for (i, r) in ranges.into_iter().enumerate() {
            let part = Func {
                name: format!("{} part {i}", f.name),
                frame_size: f.frame_size,
                n_locals: f.n_locals,
                inputs: Vec::new(),
                outputs: Vec::new(),
                body: f.body[r].to_vec(),
            };
            let part_id = module
                .declare_function(&format!("{}_part{i}", f.name), Linkage::Local, &user_sig)
                .map_err(|e| e.to_string())?;
            let mut part_func = ir::Function::with_name_signature(
                ir::UserFuncName::user(0, part_id.as_u32()),
                user_sig.clone(),
            );
            build(
                &mut module,
                &mut part_func,
                &mut fctx,
                &part,
                false,
                CONTINUE,
                &env,
            )?;
            built.push(Translated {
                id: part_id,
                weight: statements(&part.body),
                name: part.name,
                func: part_func,
            });
            part_ids.push(part_id);
        }
        build_parts_entry(&mut module, &mut func, &mut fctx, f.frame_size, &part_ids);
        built.push(Translated {
            id,
            name: f.name.clone(),
            weight: 0,
            func,
        });
    }
    let compiled = compile_all(module.isa(), built)?;
    let timing = std::env::var_os("RMOC_TIMING").is_some();
    for c in compiled {
        module
            .define_function_bytes(c.id, c.alignment, &c.code, &c.relocs)
            .map_err(|e| format!("{}: {e:?}", c.name))?;
        if timing {
            eprintln!("  jit: {} {:.2} ms", c.name, c.millis);
        }
    }
    module.finalize_definitions().map_err(|e| e.to_string())?;
    if timing {
        eprintln!("  jit: done{}", crate::peak_memory());
    }
    let entries = p
        .entries()
        .iter()
        .zip(&entry_ids)
        .map(|(f, id)| {
            let code = module.get_finalized_function((*id)?);
            // Safety: the function was defined with `entry_sig`, which is
            // `extern "C" fn(*mut f64, u64) -> i32` on this target.
            let fp: EntryFn = unsafe { std::mem::transmute::<*const u8, EntryFn>(code) };
            Some((f.name.clone(), fp, f.frame_size))
        })
        .collect();
    Ok(Jit {
        _module: module,
        entries,
    })
}

/// A builder on `func` at its start block, and the frame parameter.
fn begin<'a>(
    func: &'a mut ir::Function,
    fctx: &'a mut FunctionBuilderContext,
) -> (FunctionBuilder<'a>, ir::Block, ir::Value) {
    let mut b = FunctionBuilder::new(func, fctx);
    let start = b.create_block();
    b.append_block_params_for_function_params(start);
    b.switch_to_block(start);
    b.seal_block(start);
    let frame = b.block_params(start)[0];
    (b, start, frame)
}

/// The ABI bounds check of an entry: the frame (its length is the second
/// parameter of `start`) must hold the whole layout.
fn check_frame_length(b: &mut FunctionBuilder, start: ir::Block, frame_size: u32) {
    let len = b.block_params(start)[1];
    let ok = b
        .ins()
        .icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, len, frame_size as i64);
    let body = b.create_block();
    let bad = b.create_block();
    b.ins().brif(ok, body, &[], bad, &[]);
    b.switch_to_block(bad);
    b.seal_block(bad);
    let code = b
        .ins()
        .iconst(types::I32, status::encode(status::FRAME, 0) as i64);
    b.ins().return_(&[code]);
    b.switch_to_block(body);
    b.seal_block(body);
}

/// An entry compiled in parts: checks the frame, then calls each part on
/// it; a part that does not return [`CONTINUE`] ends the entry with its
/// status.
fn build_parts_entry(
    module: &mut JITModule,
    func: &mut ir::Function,
    fctx: &mut FunctionBuilderContext,
    frame_size: u32,
    parts: &[FuncId],
) {
    let (mut b, start, frame) = begin(func, fctx);
    check_frame_length(&mut b, start, frame_size);
    for &id in parts {
        let r = module.declare_func_in_func(id, b.func);
        let call = b.ins().call(r, &[frame]);
        let code = b.inst_results(call)[0];
        let done = b.ins().icmp_imm_s(IntCC::NotEqual, code, CONTINUE as i64);
        let stop = b.create_block();
        let next = b.create_block();
        b.ins().brif(done, stop, &[], next, &[]);
        b.switch_to_block(stop);
        b.seal_block(stop);
        b.ins().return_(&[code]);
        b.switch_to_block(next);
        b.seal_block(next);
    }
    let ok = b.ins().iconst(types::I32, status::OK as i64);
    b.ins().return_(&[ok]);
    let cfg = module.target_config();
    b.finalize(cfg);
}

/// Entries with more IR statements than twice this are compiled as parts of
/// about this many statements, called in turn by the entry: the parts
/// compile in parallel, and a large function's compile time and memory
/// grow faster than its size.
const PART_STATEMENTS: usize = 2_000;

/// What a part that ran to its end returns: go on with the next part
/// (compiled code's statuses are 0 or negative).
const CONTINUE: i32 = 1;

/// Splits a body into ranges of top-level statements of about
/// `part_statements`
/// statements each, cut only where no local is live: one written before
/// the cut and read after it.
fn parts(body: &[Stmt], part_statements: usize) -> Vec<std::ops::Range<usize>> {
    let n = body.len();
    let mut first_write: HashMap<u32, usize> = HashMap::new();
    let mut last_read: HashMap<u32, usize> = HashMap::new();
    for (k, s) in body.iter().enumerate() {
        rir::for_each_local(s, &mut |l, write| {
            if write {
                first_write.entry(l).or_insert(k);
            } else {
                last_read.insert(l, k);
            }
        });
    }
    // live[k]: locals written at or before k and read after it.
    let mut live = vec![0i64; n + 1];
    for (l, &w) in &first_write {
        if let Some(&r) = last_read.get(l)
            && r > w
        {
            live[w] += 1;
            live[r] -= 1;
        }
    }
    let mut out = Vec::new();
    let (mut start, mut size, mut open) = (0usize, 0usize, 0i64);
    for k in 0..n {
        open += live[k];
        size += statements(&body[k..k + 1]);
        if size >= part_statements && open == 0 && k + 1 < n {
            out.push(start..k + 1);
            start = k + 1;
            size = 0;
        }
    }
    out.push(start..n);
    out
}

/// A function translated to cranelift IR, waiting for code generation.
struct Translated {
    id: FuncId,
    name: String,
    /// Statements of the rmoc IR: the order in which to start compiling.
    weight: usize,
    func: ir::Function,
}

/// Machine code of one function, ready for the module.
struct MachineCode {
    id: FuncId,
    name: String,
    alignment: u64,
    code: Vec<u8>,
    relocs: Vec<cranelift_module::ModuleReloc>,
    millis: f64,
}

fn generate(
    isa: &dyn cranelift_codegen::isa::TargetIsa,
    t: Translated,
) -> Result<MachineCode, String> {
    let t0 = std::time::Instant::now();
    let mut ctx = cranelift_codegen::Context::for_function(t.func);
    let alignment = ctx
        .compile(
            isa,
            &mut cranelift_codegen::control::ControlPlane::default(),
        )
        .map_err(|e| format!("{}: {:?}", t.name, e.inner))?
        .buffer
        .alignment as u64;
    let code = ctx
        .compiled_code()
        .ok_or_else(|| format!("{}: no code generated", t.name))?;
    let relocs = code
        .buffer
        .relocs()
        .iter()
        .map(|r| cranelift_module::ModuleReloc::from_mach_reloc(r, &ctx.func, t.id))
        .collect();
    Ok(MachineCode {
        id: t.id,
        name: t.name,
        alignment,
        code: code.code_buffer().to_vec(),
        relocs,
        millis: t0.elapsed().as_secs_f64() * 1e3,
    })
}

/// Code generation of independent functions on up to one thread per core,
/// largest first; the results come back in the input order.
fn compile_all(
    isa: &dyn cranelift_codegen::isa::TargetIsa,
    functions: Vec<Translated>,
) -> Result<Vec<MachineCode>, String> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let n = functions.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(functions[i].weight));
    let queue: Vec<Mutex<Option<Translated>>> =
        functions.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let results: Vec<Mutex<Option<Result<MachineCode, String>>>> =
        (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let work = || {
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(&i) = order.get(k) else { break };
            let taken = queue[i].lock().map(|mut q| q.take()).unwrap_or(None);
            if let Some(t) = taken {
                let r = generate(isa, t);
                if let Ok(mut slot) = results[i].lock() {
                    *slot = Some(r);
                }
            }
        }
    };
    // `RMOC_JIT_THREADS` overrides the thread count (1 compiles in order,
    // for measuring what the parallel compile gains).
    let threads = std::env::var("RMOC_JIT_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .or_else(|| std::thread::available_parallelism().ok().map(|c| c.get()))
        .unwrap_or(1)
        .clamp(1, n.max(1));
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(work);
        }
        work();
    });
    results
        .into_iter()
        .map(|m| {
            m.into_inner()
                .ok()
                .flatten()
                .unwrap_or_else(|| Err("code generation did not finish".into()))
        })
        .collect()
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// What a translated function can call: the imported math functions and
/// the model's user functions.
struct CallTargets<'a> {
    imports: &'a HashMap<&'static str, FuncId>,
    user_ids: &'a [FuncId],
    user: &'a [Func],
}

struct Gen<'a, 'b> {
    b: FunctionBuilder<'b>,
    module: &'a mut JITModule,
    env: &'a CallTargets<'a>,
    frame: ir::Value,
    /// Declared on first use: a local read before any assignment is 0
    /// (cranelift's SSA builder gives an undefined variable the value 0, as
    /// the interpreter starts its locals), and a part of a large entry
    /// declares only the locals it uses.
    locals: Vec<Option<Variable>>,
    loop_exits: Vec<ir::Block>,
    /// The index k of the repeat being translated (an i64 variable).
    repeat_index: Option<Variable>,
    func_refs: HashMap<FuncId, ir::FuncRef>,
}

/// Translates `f` into `func`. An entry checks the frame's length first; a
/// function that runs to its end returns `fall_through`.
#[allow(clippy::too_many_arguments)]
fn build(
    module: &mut JITModule,
    func: &mut ir::Function,
    fctx: &mut FunctionBuilderContext,
    f: &Func,
    entry: bool,
    fall_through: i32,
    env: &CallTargets,
) -> Result<(), String> {
    let (mut b, start, frame) = begin(func, fctx);
    if entry {
        check_frame_length(&mut b, start, f.frame_size);
    }
    let mut g = Gen {
        b,
        module,
        env,
        frame,
        locals: vec![None; f.n_locals as usize],
        loop_exits: Vec::new(),
        repeat_index: None,
        func_refs: HashMap::new(),
    };
    g.stmts(&f.body)?;
    // Whatever block is current (possibly unreachable) gets a terminator.
    let ok = g.b.ins().iconst(types::I32, fall_through as i64);
    g.b.ins().return_(&[ok]);
    g.b.seal_all_blocks();
    let cfg = g.module.target_config();
    g.b.finalize(cfg);
    Ok(())
}

impl Gen<'_, '_> {
    fn flags() -> MemFlagsData {
        MemFlagsData::trusted()
    }

    fn local(&mut self, l: u32) -> Variable {
        match self.locals[l as usize] {
            Some(v) => v,
            None => {
                let v = self.b.declare_var(types::F64);
                self.locals[l as usize] = Some(v);
                v
            }
        }
    }

    fn func_ref(&mut self, id: FuncId) -> ir::FuncRef {
        if let Some(&r) = self.func_refs.get(&id) {
            return r;
        }
        let r = self.module.declare_func_in_func(id, self.b.func);
        self.func_refs.insert(id, r);
        r
    }

    fn call_import(&mut self, name: &str, args: &[ir::Value]) -> ir::Value {
        let id = self.env.imports[name];
        let r = self.func_ref(id);
        let call = self.b.ins().call(r, args);
        self.b.inst_results(call)[0]
    }

    fn bool_to_f64(&mut self, c: ir::Value) -> ir::Value {
        let one = self.b.ins().f64const(1.0);
        let zero = self.b.ins().f64const(0.0);
        self.b.ins().select(c, one, zero)
    }

    fn truth(&mut self, v: ir::Value) -> ir::Value {
        let zero = self.b.ins().f64const(0.0);
        self.b.ins().fcmp(FloatCC::NotEqual, v, zero)
    }

    /// Leaves the current block after a terminator: code that follows is
    /// unreachable but must still go somewhere.
    fn fresh_block(&mut self) {
        let nb = self.b.create_block();
        self.b.switch_to_block(nb);
    }

    fn ret(&mut self, code: i32) {
        let c = self.b.ins().iconst(types::I32, code as i64);
        self.b.ins().return_(&[c]);
        self.fresh_block();
    }

    /// Returns `code` when `bad` (an i8 truth value) holds.
    fn fail_if(&mut self, bad: ir::Value, code: i32) {
        let fail = self.b.create_block();
        let cont = self.b.create_block();
        self.b.ins().brif(bad, fail, &[], cont, &[]);
        self.b.switch_to_block(fail);
        let c = self.b.ins().iconst(types::I32, code as i64);
        self.b.ins().return_(&[c]);
        self.b.switch_to_block(cont);
    }

    fn elem_addr(&mut self, base: u32, len: u32, index: &IrExpr) -> Result<ir::Value, String> {
        let i = self.expr(index)?;
        let one = self.b.ins().f64const(1.0);
        let lenf = self.b.ins().f64const(len as f64);
        let ge = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, i, one);
        let le = self.b.ins().fcmp(FloatCC::LessThanOrEqual, i, lenf);
        let ok = self.b.ins().band(ge, le);
        let bad = self.b.ins().bnot(ok);
        let bad = self.b.ins().band_imm_u(bad, 1);
        self.fail_if(bad, status::encode(status::INDEX, 0));
        let k = self.b.ins().fcvt_to_sint_sat(types::I64, i);
        let k = self.b.ins().iadd_imm_s(k, base as i64 - 1);
        let off = self.b.ins().imul_imm_s(k, 8);
        Ok(self.b.ins().iadd(self.frame, off))
    }

    /// The address `frame + 8 (stride k)` of a strided access in a repeat;
    /// the access adds `8 base` as its offset.
    fn strided_addr(&mut self, stride: i32) -> Result<ir::Value, String> {
        let k = self.repeat_index.ok_or("strided access outside a repeat")?;
        let k = self.b.use_var(k);
        let off = self.b.ins().imul_imm_s(k, stride as i64 * 8);
        Ok(self.b.ins().iadd(self.frame, off))
    }

    fn expr(&mut self, e: &IrExpr) -> Result<ir::Value, String> {
        Ok(match e {
            IrExpr::Const(c) => self.b.ins().f64const(*c),
            IrExpr::Load(s) => {
                self.b
                    .ins()
                    .load(types::F64, Self::flags(), self.frame, (*s as i32) * 8)
            }
            IrExpr::LoadElem { base, len, index } => {
                let addr = self.elem_addr(*base, *len, index)?;
                self.b.ins().load(types::F64, Self::flags(), addr, 0)
            }
            IrExpr::LoadStrided { base, stride } => {
                let addr = self.strided_addr(*stride)?;
                self.b
                    .ins()
                    .load(types::F64, Self::flags(), addr, (*base as i32) * 8)
            }
            IrExpr::Local(l) => {
                let v = self.local(*l);
                self.b.use_var(v)
            }
            IrExpr::Un(op, a) => {
                let x = self.expr(a)?;
                match op {
                    Op1::Neg => self.b.ins().fneg(x),
                    Op1::Not => {
                        let zero = self.b.ins().f64const(0.0);
                        let c = self.b.ins().fcmp(FloatCC::Equal, x, zero);
                        self.bool_to_f64(c)
                    }
                    Op1::F(f) => match f {
                        Fn1::Abs => self.b.ins().fabs(x),
                        Fn1::Sqrt => self.b.ins().sqrt(x),
                        Fn1::Floor | Fn1::Integer => self.b.ins().floor(x),
                        Fn1::Ceil => self.b.ins().ceil(x),
                        Fn1::Sign => {
                            let zero = self.b.ins().f64const(0.0);
                            let one = self.b.ins().f64const(1.0);
                            let mone = self.b.ins().f64const(-1.0);
                            let gt = self.b.ins().fcmp(FloatCC::GreaterThan, x, zero);
                            let lt = self.b.ins().fcmp(FloatCC::LessThan, x, zero);
                            let neg = self.b.ins().select(lt, mone, zero);
                            self.b.ins().select(gt, one, neg)
                        }
                        other => {
                            let (name, _) = symbol_of(*other)
                                .ok_or_else(|| format!("no symbol for {other:?}"))?;
                            self.call_import(name, &[x])
                        }
                    },
                }
            }
            IrExpr::Bin(op, a, c) => {
                let x = self.expr(a)?;
                let y = self.expr(c)?;
                match op {
                    Op2::Add => self.b.ins().fadd(x, y),
                    Op2::Sub => self.b.ins().fsub(x, y),
                    Op2::Mul => self.b.ins().fmul(x, y),
                    Op2::Div => self.b.ins().fdiv(x, y),
                    Op2::Pow => match &**c {
                        IrExpr::Const(k) if *k == k.trunc() && k.abs() <= 64.0 => {
                            self.powi(x, *k as i32)
                        }
                        _ => self.call_import("rmoc_pow", &[x, y]),
                    },
                    Op2::And | Op2::Or => {
                        let tx = self.truth(x);
                        let ty = self.truth(y);
                        let c = if *op == Op2::And {
                            self.b.ins().band(tx, ty)
                        } else {
                            self.b.ins().bor(tx, ty)
                        };
                        self.bool_to_f64(c)
                    }
                    Op2::Rel(r) => {
                        let cc = match r {
                            RelOp::Lt => FloatCC::LessThan,
                            RelOp::Le => FloatCC::LessThanOrEqual,
                            RelOp::Gt => FloatCC::GreaterThan,
                            RelOp::Ge => FloatCC::GreaterThanOrEqual,
                            RelOp::Eq => FloatCC::Equal,
                            RelOp::Ne => FloatCC::NotEqual,
                        };
                        let c = self.b.ins().fcmp(cc, x, y);
                        self.bool_to_f64(c)
                    }
                    Op2::F(f) => match f {
                        Fn2::Atan2 => self.call_import("rmoc_atan2", &[x, y]),
                        Fn2::Min => {
                            let c = self.b.ins().fcmp(FloatCC::LessThan, x, y);
                            self.b.ins().select(c, x, y)
                        }
                        Fn2::Max => {
                            let c = self.b.ins().fcmp(FloatCC::GreaterThan, x, y);
                            self.b.ins().select(c, x, y)
                        }
                        Fn2::Mod => {
                            let q = self.b.ins().fdiv(x, y);
                            let f = self.b.ins().floor(q);
                            let m = self.b.ins().fmul(f, y);
                            self.b.ins().fsub(x, m)
                        }
                        Fn2::Rem => {
                            let q = self.b.ins().fdiv(x, y);
                            let f = self.b.ins().trunc(q);
                            let m = self.b.ins().fmul(f, y);
                            self.b.ins().fsub(x, m)
                        }
                        Fn2::Div => {
                            let q = self.b.ins().fdiv(x, y);
                            self.b.ins().trunc(q)
                        }
                    },
                }
            }
            IrExpr::Select(c, a, d) => {
                let cv = self.expr(c)?;
                let av = self.expr(a)?;
                let dv = self.expr(d)?;
                let t = self.truth(cv);
                self.b.ins().select(t, av, dv)
            }
        })
    }

    /// `x^k` for a constant whole `k`, by the same multiplications as the
    /// runtime's `__powidf2` (what `f64::powi` calls), so that compiled code
    /// and the interpreter agree to the last bit.
    fn powi(&mut self, x: ir::Value, k: i32) -> ir::Value {
        let recip = k < 0;
        let mut b = k;
        let mut a = x;
        let mut r: Option<ir::Value> = None;
        loop {
            if b & 1 != 0 {
                r = Some(match r {
                    None => a,
                    Some(r) => self.b.ins().fmul(r, a),
                });
            }
            b /= 2;
            if b == 0 {
                break;
            }
            a = self.b.ins().fmul(a, a);
        }
        let r = r.unwrap_or_else(|| self.b.ins().f64const(1.0));
        if recip {
            let one = self.b.ins().f64const(1.0);
            self.b.ins().fdiv(one, r)
        } else {
            r
        }
    }

    /// `dst[at..at + n] = value` (f64 slots) by a loop.
    fn fill_loop(&mut self, dst: ir::Value, at: usize, n: usize, value: ir::Value) {
        let start = self.b.ins().iadd_imm_s(dst, (at * 8) as i64);
        self.slot_loop(n, |b, offset| {
            let to = b.ins().iadd(start, offset);
            b.ins().store(Self::flags(), value, to, 0);
        });
    }

    /// `dst[to..to + n] = frame[from..from + n]` (f64 slots) by a loop.
    fn copy_loop(&mut self, from: usize, dst: ir::Value, to: usize, n: usize) {
        let src = self.b.ins().iadd_imm_s(self.frame, (from * 8) as i64);
        let start = self.b.ins().iadd_imm_s(dst, (to * 8) as i64);
        self.slot_loop(n, |b, offset| {
            let a = b.ins().iadd(src, offset);
            let v = b.ins().load(types::F64, Self::flags(), a, 0);
            let d = b.ins().iadd(start, offset);
            b.ins().store(Self::flags(), v, d, 0);
        });
    }

    /// Runs `body` with the byte offsets 0, 8, ..., 8 (n - 1) (n >= 1).
    fn slot_loop(&mut self, n: usize, body: impl Fn(&mut FunctionBuilder, ir::Value)) {
        self.counted_loop(8, (n * 8) as i64, |s, offset| {
            let o = s.b.use_var(offset);
            body(&mut s.b, o);
            Ok(())
        })
        .expect("a slot loop's body cannot fail");
    }

    /// `v = 0; do { body(v); v += step } while v < end` (unsigned; the body
    /// runs at least once), `v` an I64 variable the body reads.
    fn counted_loop(
        &mut self,
        step: i64,
        end: i64,
        body: impl FnOnce(&mut Self, Variable) -> Result<(), String>,
    ) -> Result<(), String> {
        let v = self.b.declare_var(types::I64);
        let zero = self.b.ins().iconst(types::I64, 0);
        self.b.def_var(v, zero);
        let head = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        body(self, v)?;
        let now = self.b.use_var(v);
        let next = self.b.ins().iadd_imm_s(now, step);
        self.b.def_var(v, next);
        let more = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThan, next, end);
        self.b.ins().brif(more, head, &[], exit, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    fn stack(&mut self, n: usize) -> ir::StackSlot {
        self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            (8 * n.max(1)) as u32,
            3,
        ))
    }

    fn stmts(&mut self, body: &[Stmt]) -> Result<(), String> {
        for s in body {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), String> {
        match s {
            Stmt::Store(slot, e) => {
                let v = self.expr(e)?;
                self.b
                    .ins()
                    .store(Self::flags(), v, self.frame, (*slot as i32) * 8);
            }
            Stmt::StoreElem {
                base,
                len,
                index,
                value,
            } => {
                let addr = self.elem_addr(*base, *len, index)?;
                let v = self.expr(value)?;
                self.b.ins().store(Self::flags(), v, addr, 0);
            }
            Stmt::Set(l, e) => {
                let v = self.expr(e)?;
                let var = self.local(*l);
                self.b.def_var(var, v);
            }
            Stmt::StoreStrided {
                base,
                stride,
                value,
            } => {
                let v = self.expr(value)?;
                let addr = self.strided_addr(*stride)?;
                self.b
                    .ins()
                    .store(Self::flags(), v, addr, (*base as i32) * 8);
            }
            Stmt::Repeat { count, body } => {
                // k = 0; do { body; k += 1 } while k < count (count >= 1).
                self.counted_loop(1, *count as i64, |s, k| {
                    s.repeat_index = Some(k);
                    s.stmts(body)?;
                    s.repeat_index = None;
                    Ok(())
                })?;
            }
            Stmt::If(c, t, e) => {
                let cv = self.expr(c)?;
                let cond = self.truth(cv);
                let tb = self.b.create_block();
                let eb = self.b.create_block();
                let join = self.b.create_block();
                self.b.ins().brif(cond, tb, &[], eb, &[]);
                self.b.switch_to_block(tb);
                self.stmts(t)?;
                self.b.ins().jump(join, &[]);
                self.b.switch_to_block(eb);
                self.stmts(e)?;
                self.b.ins().jump(join, &[]);
                self.b.switch_to_block(join);
            }
            Stmt::Loop(body) => {
                let head = self.b.create_block();
                let exit = self.b.create_block();
                self.b.ins().jump(head, &[]);
                self.b.switch_to_block(head);
                self.loop_exits.push(exit);
                self.stmts(body)?;
                self.loop_exits.pop();
                self.b.ins().jump(head, &[]);
                self.b.switch_to_block(exit);
            }
            Stmt::Break => {
                let exit = *self.loop_exits.last().ok_or("break outside loop")?;
                self.b.ins().jump(exit, &[]);
                self.fresh_block();
            }
            Stmt::Return(code) => self.ret(*code),
            Stmt::Call { func, args, outs } => {
                let callee = &self.env.user[*func as usize];
                let slot = self.stack(callee.frame_size as usize);
                let base = self.b.ins().stack_addr(types::I64, slot, 0);
                // Zero the callee's frame: its locals start at 0 as in the
                // interpreter. (The inputs' slots are written below.)
                // (The IR's check makes every call give every input.)
                let inputs = callee.inputs.clone();
                let mut written = vec![false; callee.frame_size as usize];
                for &slot_in in &inputs {
                    written[slot_in as usize] = true;
                }
                let zero = self.b.ins().f64const(0.0);
                let mut k = 0;
                while k < written.len() {
                    if written[k] {
                        k += 1;
                        continue;
                    }
                    let run = written[k..].iter().take_while(|w| !**w).count();
                    if run >= COPY_LOOP_MIN {
                        self.fill_loop(base, k, run, zero);
                    } else {
                        for j in k..k + run {
                            self.b
                                .ins()
                                .store(Self::flags(), zero, base, (j * 8) as i32);
                        }
                    }
                    k += run;
                }
                let outputs = callee.outputs.clone();
                // A run of arguments that are consecutive slots of this
                // frame going to consecutive input slots (an array
                // parameter given whole: a contact's curve) is copied by a
                // loop, not an instruction per element.
                let mut j = 0;
                while j < args.len() {
                    let run = copy_run(&args[j..], &inputs[j..]);
                    if run >= COPY_LOOP_MIN {
                        let (IrExpr::Load(from), to) = (&args[j], inputs[j]) else {
                            unreachable!("copy_run starts at a load")
                        };
                        self.copy_loop(*from as usize, base, to as usize, run);
                        j += run;
                        continue;
                    }
                    let v = self.expr(&args[j])?;
                    self.b
                        .ins()
                        .store(Self::flags(), v, base, (inputs[j] * 8) as i32);
                    j += 1;
                }
                let id = self.env.user_ids[*func as usize];
                let r = self.func_ref(id);
                let call = self.b.ins().call(r, &[base]);
                let code = self.b.inst_results(call)[0];
                // A failing callee's status is passed on.
                let bad = self.b.ins().icmp_imm_s(IntCC::NotEqual, code, 0);
                let fail = self.b.create_block();
                let cont = self.b.create_block();
                self.b.ins().brif(bad, fail, &[], cont, &[]);
                self.b.switch_to_block(fail);
                self.b.ins().return_(&[code]);
                self.b.switch_to_block(cont);
                for (&o, &slot_out) in outs.iter().zip(&outputs) {
                    let v =
                        self.b
                            .ins()
                            .load(types::F64, Self::flags(), base, (slot_out * 8) as i32);
                    let var = self.local(o);
                    self.b.def_var(var, v);
                }
            }
            Stmt::Solve { n, a, b, x, fail } => {
                let n = *n as usize;
                let sa = self.stack(n * n);
                let sb = self.stack(n);
                for (k, &l) in a.iter().enumerate() {
                    let var = self.local(l);
                    let v = self.b.use_var(var);
                    self.b.ins().stack_store(types::I64, v, sa, (k * 8) as i32);
                }
                for (k, &l) in b.iter().enumerate() {
                    let var = self.local(l);
                    let v = self.b.use_var(var);
                    self.b.ins().stack_store(types::I64, v, sb, (k * 8) as i32);
                }
                let pa = self.b.ins().stack_addr(types::I64, sa, 0);
                let pb = self.b.ins().stack_addr(types::I64, sb, 0);
                let nn = self.b.ins().iconst(types::I64, n as i64);
                let ok = self.call_import("rmoc_solve", &[nn, pa, pb]);
                let bad = self.b.ins().icmp_imm_s(IntCC::Equal, ok, 0);
                self.fail_if(bad, *fail);
                for (k, &l) in x.iter().enumerate() {
                    let v = self
                        .b
                        .ins()
                        .stack_load(types::I64, types::F64, sb, (k * 8) as i32);
                    let var = self.local(l);
                    self.b.def_var(var, v);
                }
            }
        }
        Ok(())
    }
}

/// Runs of at least this many slots are copied or zeroed by a loop.
const COPY_LOOP_MIN: usize = 16;

/// How many of `args`, from the first, load consecutive slots of the frame
/// into consecutive slots `inputs` of a callee's frame.
fn copy_run(args: &[IrExpr], inputs: &[u32]) -> usize {
    let Some(IrExpr::Load(first)) = args.first() else {
        return 0;
    };
    args.iter()
        .zip(inputs)
        .enumerate()
        .take_while(|(t, (a, slot))| {
            **a == IrExpr::Load(first + *t as u32) && **slot == inputs[0] + *t as u32
        })
        .count()
}
