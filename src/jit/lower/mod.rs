//! Lowering of the causal model to IR: the entry functions the solvers call
//! and the user functions they use.
//!
//! All model values live in one f64 buffer laid out by [`Layout`]. The entry
//! points, each an IR [`Func`] over that buffer:
//! - `parameters`: parameter values from their bindings (except overridden ones);
//! - `starts`: start values of all other variables;
//! - `ode`: the BLT blocks: every non-state unknown, including the state
//!   derivatives, from time, states, parameters and discrete variables;
//! - `tangent`: the directional derivative of `ode` for a direction of the
//!   states (one column of the Jacobian df/dx per call);
//! - `zero_crossings`: `lhs - rhs` of every event relation;
//! - `conditions` and `actions`: when-clause conditions, and the statements
//!   of the active branches;
//! - `initial_residuals`, `asserts`;
//! - `residuals`: `lhs - rhs` of every equation, which no solver runs (tests
//!   check consistent points with it): it stores nothing unless
//!   [`lower_residuals`] fills it, which would cost a twentieth of
//!   compiling a large model.
//!
//! Event relations are frozen between events: in the normal mode they read
//! their stored truth value; in event mode (`MODE = 1`) they are evaluated and
//! the value stored (Cellier & Kofman, ch. 9, "discontinuity handling").
//! A mixed system (a loop of blocks whose equations hold event relations on
//! its own unknowns, as the MSL's friction modes) is solved in event mode
//! with its relations frozen (`FREEZE`), which are then evaluated at the
//! solution and stored; while one changed, the loop is solved again (a
//! fixed point of the continuous and the discrete part, as Modelica tools
//! iterate mixed systems).

use super::ir::{Func, IrExpr, Op1, Op2, Stmt, status};
use crate::flat::{self, ExprArena, ExprId, Fn1, Node, RelOp, VarId, WhenStatement};
use crate::structure::{Block, Causal, Role};
use crate::symbolic;
use crate::symbolic::tangent::{self, TangentMemo, TangentSpace};
use rustc_hash::FxHashMap as HashMap;

mod blocks;
mod expr;
mod functions;
mod jacobian;

use functions::lower_functions;
use jacobian::{prepare_partials, prepare_tangent, torn_parts};

// The buffer's layout and fixed slots live with the rest of the compiled
// model's interface.
pub use super::frame::{FREEZE, HEADER, INITIAL, Layout, MODE, TERMINAL, TERMINATE, TIME};

/// An event relation: its truth value is frozen between events.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Relation {
    pub op: RelOp,
    /// Whether it depends on time or continuous variables (needs a zero crossing).
    pub crossing: bool,
    pub expr: ExprId,
}

/// One `when`/`elsewhen` branch.
#[derive(Clone, Debug, serde::Serialize)]
pub struct WhenBranch {
    pub clause: usize,
    pub index: usize,
    /// States this branch may reinitialize.
    pub reinits: Vec<VarId>,
}

#[derive(Clone, Debug)]
pub struct Program {
    pub layout: Layout,
    pub parameters: Func,
    pub starts: Func,
    pub ode: Func,
    pub tangent: Func,
    /// False for a program made by [`lower_for_check`]: its `tangent` is
    /// empty, so it can be initialized but not integrated by the BDF.
    pub has_tangent: bool,
    pub zero_crossings: Func,
    pub conditions: Func,
    pub actions: Func,
    pub initial_residuals: Func,
    pub asserts: Func,
    /// Stores nothing unless [`lower_residuals`] has filled it.
    pub residuals: Func,
    pub user: Vec<Func>,
    pub relations: Vec<Relation>,
    pub branches: Vec<WhenBranch>,
    /// The run-time checks inside user functions (asserts, while-loop
    /// limits), indexed by the status codes `FN_ASSERT` and `LOOP`.
    pub function_checks: Vec<FunctionCheck>,
    /// The slots of the warm-start variables of each call site (by arena
    /// call id) that existed when the layout was made; call sites that
    /// lowering adds later (derivative calls) have none.
    pub warm_sites: HashMap<u32, u32>,
}

/// A check inside a user function, for the message when it fails.
#[derive(Clone, Debug)]
pub struct FunctionCheck {
    pub function: String,
    pub span: crate::diag::Span,
    /// The assert's message; empty for a while loop.
    pub message: String,
    /// The text under `span` in the diagnostic.
    pub label: &'static str,
    /// What a failure reports: the function's own `assert`, or a guard
    /// rmoc adds (a zero `for` step: `Evaluation`; a runaway `while`: `Limit`).
    pub kind: crate::diag::DiagnosticKind,
}

pub use crate::flat::MAX_WHILE_ITERATIONS;

impl Program {
    /// The ten entries, in the order of `frame::Entry::ALL`.
    pub fn entries(&self) -> [&Func; 10] {
        [
            &self.parameters,
            &self.starts,
            &self.ode,
            &self.tangent,
            &self.zero_crossings,
            &self.conditions,
            &self.actions,
            &self.initial_residuals,
            &self.asserts,
            &self.residuals,
        ]
    }
}

/// Lowers a causal model. Fails only if a derivative needed for a Jacobian
/// cannot be formed (it names the equation).
pub fn lower(c: &mut Causal) -> Result<Program, String> {
    lower_entries(c, true, false)
}

/// As [`lower`], with the runs of every entry rolled into loops
/// ([`super::reroll`]), each entry as soon as it is lowered (the tangent's
/// parts on the threads that lower them).
pub fn lower_rerolled(c: &mut Causal) -> Result<Program, String> {
    lower_entries(c, true, true)
}

/// As [`lower`] without the tangent code (the BDF's Jacobians), which
/// `rmoc check` never runs: it only initializes the model. The tangent is
/// the directional derivative of every block, about a tenth of checking
/// the gearbox.
pub fn lower_for_check(c: &mut Causal) -> Result<Program, String> {
    lower_entries(c, false, false)
}

/// The model's event relations and samples, in a stable order, and their
/// indices by expression.
struct EventExprs {
    relations: Vec<Relation>,
    rel_index: HashMap<ExprId, u32>,
    samples: Vec<ExprId>,
    sample_index: HashMap<ExprId, u32>,
}

fn event_exprs(c: &Causal) -> EventExprs {
    let mut relations: Vec<Relation> = Vec::new();
    let mut rel_index: HashMap<ExprId, u32> = HashMap::default();
    let mut samples: Vec<ExprId> = Vec::new();
    let mut sample_index: HashMap<ExprId, u32> = HashMap::default();
    // Most large models have no events: a scan of the arena (a few
    // instructions a node) spares them the walk of the whole model.
    let any = c
        .arena
        .nodes()
        .iter()
        .any(|n| matches!(n, Node::Rel { event: true, .. } | Node::Sample(..)));
    let roots = if any { model_roots(c) } else { Vec::new() };
    for id in c.arena.reachable(&roots) {
        match c.arena.node(id) {
            Node::Rel {
                op,
                event: true,
                lhs,
                rhs,
            } => {
                let crossing = !matches!(op, RelOp::Eq | RelOp::Ne)
                    && (depends_on_time(c, lhs) || depends_on_time(c, rhs));
                rel_index.insert(id, relations.len() as u32);
                relations.push(Relation {
                    op,
                    crossing,
                    expr: id,
                });
            }
            Node::Sample(..) => {
                sample_index.insert(id, samples.len() as u32);
                samples.push(id);
            }
            _ => {}
        }
    }
    EventExprs {
        relations,
        rel_index,
        samples,
        sample_index,
    }
}

/// The buffer slot of the warm-start variables of each call site (by arena
/// call id) whose function has some, from `l.warm` on; `l.n_warm` is set to
/// their total.
fn warm_start_slots(c: &Causal, l: &mut Layout) -> HashMap<u32, u32> {
    let fn_warm = fn_warm_counts(&c.functions.functions);
    let mut warm_sites = HashMap::default();
    l.n_warm = 0;
    for (k, site) in c.arena.calls.iter().enumerate() {
        let w = fn_warm.get(site.func as usize).copied().unwrap_or(0);
        if w > 0 {
            warm_sites.insert(k as u32, l.warm + l.n_warm);
            l.n_warm += w;
        }
    }
    warm_sites
}

/// Fills `p.residuals` (left empty by [`lower`]): `lhs - rhs` of every
/// equation of `c`, the model `p` was lowered from, into the `residual`
/// slots.
pub fn lower_residuals(c: &mut Causal, p: &mut Program) {
    let ev = event_exprs(c);
    debug_assert_eq!(ev.relations.len(), p.relations.len());
    let l = p.layout.clone();
    let ctx = lowering_context(c, &l, ev.rel_index, ev.sample_index, p.warm_sites.clone());
    let mut rs = Lowerer::new(&ctx, "residuals");
    for k in 0..c.equations.len() {
        let eq = c.equations[k].clone();
        let r = eq.residual(&mut c.arena);
        let x = rs.expr(&c.arena, r);
        rs.stmts.push(Stmt::Store(l.residual + k as u32, x));
    }
    p.residuals = rs.finish(&l);
}

/// What the lowering of the model's entries shares: `l`, the model's
/// layout, the event relations' and samples' indices, the call sites'
/// warm-start slots ([`warm_start_slots`], before lowering added any call
/// site), the functions' outputs.
fn lowering_context(
    c: &Causal,
    l: &Layout,
    rel_index: HashMap<ExprId, u32>,
    sample_index: HashMap<ExprId, u32>,
    warm_sites: HashMap<u32, u32>,
) -> Shared {
    let fn_warm = fn_warm_counts(&c.functions.functions);
    Shared {
        layout: l.clone(),
        rel_index,
        sample_index,
        fn_outputs: fn_outputs(&c.functions.functions),
        tangent_args: c.functions.tangent_args(),
        fn_warm,
        warm_sites,
        function_frame: false,
    }
}

fn lower_entries(c: &mut Causal, with_tangent: bool, reroll: bool) -> Result<Program, String> {
    let n_vars = c.vars.len() as u32;
    let EventExprs {
        relations,
        rel_index,
        samples,
        sample_index,
    } = event_exprs(c);
    let branches: Vec<WhenBranch> = c
        .whens
        .iter()
        .enumerate()
        .flat_map(|(ci, w)| {
            w.branches
                .iter()
                .enumerate()
                .map(move |(bi, (_, stmts))| WhenBranch {
                    clause: ci,
                    index: bi,
                    reinits: stmts
                        .iter()
                        .filter_map(|s| match s {
                            WhenStatement::Reinit { var, .. } => Some(*var),
                            _ => None,
                        })
                        .collect(),
                })
        })
        .collect();
    let n_rel = relations.len() as u32;
    let n_br = branches.len() as u32;
    let n_samples = samples.len() as u32;
    let mut l = Layout {
        n_vars,
        vars: HEADER,
        ..Layout::default()
    };
    l.pre = l.vars + n_vars;
    l.tangent = l.pre + n_vars;
    l.rel = l.tangent + n_vars;
    l.n_rel = n_rel;
    l.zc = l.rel + n_rel;
    l.cond = l.zc + n_rel;
    l.active = l.cond + n_br;
    l.n_branches = n_br;
    l.sample = l.active + n_br;
    l.sample_param = l.sample + n_samples;
    l.n_samples = n_samples;
    l.override_flag = l.sample_param + 2 * n_samples;
    l.residual = l.override_flag + n_vars;
    l.n_residuals = c.equations.len() as u32;
    l.init_res = l.residual + l.n_residuals;
    l.n_init_res = c.initial_equations.len() as u32;
    l.assert = l.init_res + l.n_init_res;
    l.n_asserts = c.asserts.len() as u32;
    // Each call site of the model's code to a function with warm-start
    // variables keeps them in slots of its own.
    l.warm = l.assert + l.n_asserts;
    let warm_sites = warm_start_slots(c, &mut l);
    l.len = l.warm + l.n_warm;

    // The partial derivatives of the blocks' Newton matrices may need
    // derivative functions; make them all first, so that every function the
    // code will call is known before lowering starts.
    for b in c.blocks.clone().iter() {
        prepare_partials(c, b)?;
    }
    // The tangent code, the directional derivatives of every block (most of
    // lowering a large model), is formed and lowered in two parts: the first
    // half of the blocks on a second thread, from a copy of the model, the
    // others on this one after the other entries (the second thread's
    // blocks cost it more, in memory it has not used yet: on the grid,
    // halves end together where thirds left this thread waiting). Its
    // derivatives are read by no other entry. A model with functions is
    // not split (derivative functions made on two copies would clash): the
    // second thread lowers all of its tangent code, and the copy's
    // functions are the model's.
    let tangent_blocks = if with_tangent {
        c.blocks.clone()
    } else {
        Vec::new()
    };
    let split = if c.functions.functions.is_empty() {
        tangent_blocks.len() / 2
    } else {
        tangent_blocks.len()
    };
    let tangent_model = with_tangent.then(|| c.clone());
    let n_functions = c.functions.functions.len();
    let ctx = lowering_context(c, &l, rel_index, sample_index, warm_sites.clone());
    std::thread::scope(|scope| {
        let tangent_job = match tangent_model.map(|mut tc| {
            let (ctx, blocks) = (&ctx, &tangent_blocks[..split]);
            std::thread::Builder::new()
                .name("rmoc-tangent".into())
                .stack_size(TANGENT_THREAD_STACK)
                .spawn_scoped(scope, move || {
                    lower_tangent(&mut tc, blocks, 0, ctx, reroll).map(|f| (f, tc.functions))
                })
        }) {
            Some(Err(e)) => return Err(format!("cannot start a thread to lower the tangent: {e}")),
            Some(Ok(job)) => Some(job),
            None => None,
        };
        let rest = lower_but_tangent(c, &l, &ctx, &samples, &relations, reroll);
        let own = match rest {
            Ok(_) if split < tangent_blocks.len() => {
                lower_tangent(c, &tangent_blocks[split..], split, &ctx, reroll).map(Some)
            }
            _ => Ok(None),
        };
        let (mut tangent, functions) = match tangent_job {
            Some(job) => match job.join() {
                Ok(done) => {
                    let (f, functions) = done?;
                    (f, Some(functions))
                }
                Err(panic) => std::panic::resume_unwind(panic),
            },
            None => (Lowerer::new(&ctx, "tangent").into_part(&l), None),
        };
        let rest = rest?;
        if let Some(part) = own? {
            append_code(&mut tangent, part);
        }
        expr::entry_frame(&mut tangent);
        if let Some(f) = functions.filter(|_| split == tangent_blocks.len()) {
            // The other entries made no derivative function after the
            // copy (the partials were formed before it): the copy's table
            // extends the model's.
            if c.functions.functions.len() != n_functions {
                return Err("internal error: derivative functions were made on two threads".into());
            }
            c.functions = f;
        }
        // Derivative functions made for the tangent code are lowered last.
        let (user, function_checks) = lower_functions(&c.functions);
        Ok(Program {
            layout: l.clone(),
            parameters: rest.parameters,
            starts: rest.starts,
            ode: rest.ode,
            tangent,
            has_tangent: with_tangent,
            zero_crossings: rest.zero_crossings,
            conditions: rest.conditions,
            actions: rest.actions,
            initial_residuals: rest.initial_residuals,
            asserts: rest.asserts,
            residuals: rest.residuals,
            user,
            relations,
            branches,
            function_checks,
            warm_sites,
        })
    })
}

/// The stack of the thread that lowers the tangent: lowering recurses over
/// an expression's depth (a sum of 20 000 terms), as much as on the thread
/// that runs the pipeline (`main.rs`, the FMU's `on_big_stack`); the
/// address space is reserved, the pages used are mapped.
const TANGENT_THREAD_STACK: usize = 512 << 20;

/// The tangent code of `blocks` (numbered from `first`), a part of the
/// entry ([`expr::entry_frame`] completes it), with their directional
/// derivatives formed into `c`'s arena; `base` is the other entries'
/// context, whose layout and indices it shares.
fn lower_tangent(
    c: &mut Causal,
    blocks: &[Block],
    first: usize,
    base: &Shared,
    reroll: bool,
) -> Result<Func, String> {
    // Every directional derivative first, so that the derivative functions
    // they call are known to the lowering context.
    let mut tangents = TangentMemo::default();
    for (k, b) in blocks.iter().enumerate() {
        prepare_tangent(c, b, (first + k) as u32, &mut tangents)?;
    }
    // A context of its own: the derivative functions made above have
    // outputs and tangent arguments of their own.
    let l = &base.layout;
    let ctx = lowering_context(
        c,
        l,
        base.rel_index.clone(),
        base.sample_index.clone(),
        base.warm_sites.clone(),
    );
    let mut t = Lowerer::new(&ctx, "tangent");
    for (k, b) in blocks.iter().enumerate() {
        t.block_tangent(c, b, (first + k) as u32, &mut tangents)?;
    }
    let mut part = t.into_part(l);
    if reroll {
        super::reroll::reroll(&mut part);
    }
    Ok(part)
}

/// An entry's function, its runs rolled into loops if `reroll`.
fn finish_entry(lowerer: Lowerer, l: &Layout, reroll: bool) -> Func {
    let mut f = lowerer.finish(l);
    if reroll {
        super::reroll::reroll(&mut f);
    }
    f
}

/// Appends the statements of `part` to `f`, its locals after `f`'s.
fn append_code(f: &mut Func, part: Func) {
    let shift = f.n_locals;
    f.body.extend(part.body.into_iter().map(|mut s| {
        super::ir::shift_locals(&mut s, shift);
        s
    }));
    f.n_locals += part.n_locals;
}

/// The entries other than the tangent.
struct EntriesButTangent {
    parameters: Func,
    starts: Func,
    ode: Func,
    zero_crossings: Func,
    conditions: Func,
    actions: Func,
    initial_residuals: Func,
    asserts: Func,
    residuals: Func,
}

fn lower_but_tangent(
    c: &mut Causal,
    l: &Layout,
    ctx: &Shared,
    samples: &[ExprId],
    relations: &[Relation],
    reroll: bool,
) -> Result<EntriesButTangent, String> {
    let n_vars = c.vars.len() as u32;

    // parameters
    let mut p = Lowerer::with_live_relations(ctx, "parameters");
    for v in parameter_order(c) {
        // A parameter without a binding takes its start value (MLS 4.4.4).
        let var = &c.vars[v as usize];
        let Some(b) = var.binding.or(var.start) else {
            continue;
        };
        let mut inner = Lowerer::with_live_relations(ctx, "");
        // The elements of an array parameter bound to a function's result
        // read its outputs: the call is made once, where its first output
        // is needed, outside the elements' override checks (its arguments
        // come earlier in the order), not once per element.
        if let Node::Call { call, .. } = c.arena.node(b) {
            if !p.calls.contains_key(&call) {
                let _ = p.expr(&c.arena, b);
            }
            inner.calls = p.calls.clone();
        }
        inner.n_locals = p.n_locals;
        let e = inner.expr(&c.arena, b);
        inner.stmts.push(Stmt::Store(l.var(v), e));
        p.n_locals = inner.n_locals;
        let cond = IrExpr::Bin(
            Op2::Rel(RelOp::Eq),
            Box::new(IrExpr::Load(l.override_flag + v)),
            Box::new(IrExpr::Const(0.0)),
        );
        p.stmts.push(Stmt::If(cond, inner.stmts, vec![]));
    }
    for (k, &s) in samples.iter().enumerate() {
        if let Node::Sample(a, b) = c.arena.node(s) {
            let ea = p.expr(&c.arena, a);
            p.stmts.push(Stmt::Store(l.sample_param + 2 * k as u32, ea));
            let eb = p.expr(&c.arena, b);
            p.stmts
                .push(Stmt::Store(l.sample_param + 2 * k as u32 + 1, eb));
        }
    }
    let parameters = finish_entry(p, l, reroll);

    // starts
    let mut s = Lowerer::with_live_relations(ctx, "starts");
    for v in 0..n_vars {
        let var = &c.vars[v as usize];
        if var.is_parameter() || c.roles[v as usize] == Role::Alias {
            continue;
        }
        if let Some(st) = var.start {
            let e = s.expr(&c.arena, st);
            s.stmts.push(Stmt::Store(l.var(v), e));
        }
    }
    let starts = finish_entry(s, l, reroll);

    // ode
    let mut o = Lowerer::new(ctx, "ode");
    let blocks = c.blocks.clone();
    for (bi, b) in blocks.iter().enumerate() {
        o.block(c, b, bi as u32)?;
    }
    let ode = finish_entry(o, l, reroll);

    // zero crossings
    let mut z = Lowerer::new(ctx, "zero_crossings");
    for (k, r) in relations.iter().enumerate() {
        if !r.crossing {
            continue;
        }
        let Node::Rel { lhs, rhs, .. } = c.arena.node(r.expr) else {
            continue;
        };
        let a = z.expr(&c.arena, lhs);
        let b = z.expr(&c.arena, rhs);
        z.stmts.push(Stmt::Store(
            l.zc + k as u32,
            IrExpr::Bin(Op2::Sub, Box::new(a), Box::new(b)),
        ));
    }
    let zero_crossings = finish_entry(z, l, reroll);

    // when conditions and actions
    let mut cd = Lowerer::new(ctx, "conditions");
    let mut act = Lowerer::new(ctx, "actions");
    let mut bidx = 0u32;
    let whens = c.whens.clone();
    for w in &whens {
        for (cond, stmts) in &w.branches {
            let e = cd.expr(&c.arena, *cond);
            cd.stmts.push(Stmt::Store(l.cond + bidx, e));
            let mut body = Lowerer::new(ctx, "");
            body.n_locals = act.n_locals;
            // The branch's equations `v = e` are solved together (MLS
            // 8.3.5): one that reads another's variable (not its `pre`)
            // comes after it and reads its new value (the MSL's
            // CombiTimeTable: nextTimeEvent = nextTimeEventScaled*timeScale).
            // Without such reads, or in a cycle of them, every right-hand
            // side reads the values before the event (a simultaneous
            // assignment), as do reinits.
            let ordered = ordered_when_assignments(&c.arena, stmts);
            let mut pending = Vec::new();
            for st in stmts {
                match st {
                    WhenStatement::Assign { .. } if ordered.is_some() => {}
                    WhenStatement::Assign { var, value, .. }
                    | WhenStatement::Reinit { var, value, .. } => {
                        let e = body.expr(&c.arena, *value);
                        let tmp = body.local();
                        body.stmts.push(Stmt::Set(tmp, e));
                        pending.push((*var, tmp));
                    }
                    WhenStatement::Assert(a) => {
                        let e = body.expr(&c.arena, a.condition);
                        if a.level == flat::AssertLevel::Error {
                            body.stmts.push(Stmt::If(
                                e,
                                vec![],
                                vec![Stmt::Return(status::encode(status::ASSERT, bidx))],
                            ));
                        }
                    }
                    WhenStatement::Terminate { .. } => body
                        .stmts
                        .push(Stmt::Store(TERMINATE, IrExpr::Const(bidx as f64 + 1.0))),
                }
            }
            for (var, value) in ordered.unwrap_or_default() {
                let e = body.expr(&c.arena, value);
                body.stmts.push(Stmt::Store(l.var(var), e));
                // (Values computed before this store must not be reused.)
                body.memo.clear();
                body.calls.clear();
            }
            for (var, tmp) in pending {
                body.stmts.push(Stmt::Store(l.var(var), IrExpr::Local(tmp)));
            }
            act.n_locals = body.n_locals;
            let active = IrExpr::Bin(
                Op2::Rel(RelOp::Ne),
                Box::new(IrExpr::Load(l.active + bidx)),
                Box::new(IrExpr::Const(0.0)),
            );
            act.stmts.push(Stmt::If(active, body.stmts, vec![]));
            bidx += 1;
        }
    }
    let conditions = finish_entry(cd, l, reroll);
    let actions = finish_entry(act, l, reroll);

    // initial residuals, asserts, residuals
    let mut ir = Lowerer::new(ctx, "initial_residuals");
    for (k, e) in c.initial_equations.iter().enumerate() {
        let r = c.arena.sub(e.lhs, e.rhs);
        let x = ir.expr(&c.arena, r);
        ir.stmts.push(Stmt::Store(l.init_res + k as u32, x));
    }
    let initial_residuals = finish_entry(ir, l, reroll);
    let mut asr = Lowerer::new(ctx, "asserts");
    for (k, a) in c.asserts.iter().enumerate() {
        let slot = l.assert + k as u32;
        if a.initial {
            // An initial equation's assert is computed (calls included)
            // only at the initial point, under the frame's initial flag,
            // and holds elsewhere.
            let body = asr.scoped(|s| {
                let x = s.expr(&c.arena, a.condition);
                s.stmts.push(Stmt::Store(slot, x));
            });
            asr.stmts.push(Stmt::If(
                IrExpr::Load(INITIAL),
                body,
                vec![Stmt::Store(slot, IrExpr::Const(1.0))],
            ));
        } else {
            let x = asr.expr(&c.arena, a.condition);
            asr.stmts.push(Stmt::Store(slot, x));
        }
    }
    let asserts = finish_entry(asr, l, reroll);
    let residuals = Lowerer::new(ctx, "residuals").finish(l);
    Ok(EntriesButTangent {
        parameters,
        starts,
        ode,
        zero_crossings,
        conditions,
        actions,
        initial_residuals,
        asserts,
        residuals,
    })
}

/// Every expression root of the model's run-time code.
fn model_roots(c: &Causal) -> Vec<ExprId> {
    let mut roots = Vec::new();
    for b in &c.blocks {
        match b {
            Block::Explicit { value, .. } => roots.push(*value),
            Block::Implicit { residual, .. } => roots.push(*residual),
            Block::Torn {
                inner, residuals, ..
            } => {
                roots.extend(inner.iter().map(|x| x.1));
                roots.extend(residuals.iter().map(|x| x.0));
            }
        }
    }
    for w in &c.whens {
        for (cond, stmts) in &w.branches {
            roots.push(*cond);
            for s in stmts {
                match s {
                    WhenStatement::Assign { value, .. } | WhenStatement::Reinit { value, .. } => {
                        roots.push(*value)
                    }
                    WhenStatement::Assert(a) => roots.push(a.condition),
                    WhenStatement::Terminate { .. } => {}
                }
            }
        }
    }
    for a in &c.asserts {
        roots.push(a.condition);
    }
    for e in &c.initial_equations {
        roots.push(e.lhs);
        roots.push(e.rhs);
    }
    for v in &c.vars {
        roots.extend(v.binding);
    }
    roots
}

/// Whether an expression can change continuously (mentions time, a state,
/// another continuous unknown, or a top-level input, which an FMU's host
/// drives).
fn depends_on_time(c: &Causal, e: ExprId) -> bool {
    c.arena
        .reachable(&[e])
        .into_iter()
        .any(|id| match c.arena.node(id) {
            Node::Time => true,
            Node::Var(v) => {
                (matches!(c.roles[v as usize], Role::State | Role::Algebraic)
                    || c.is_top_level_input(v))
                    && c.vars[v as usize].ty == flat::ScalarType::Real
            }
            _ => false,
        })
}

/// Parameters in an order where each binding's dependencies come first.
fn parameter_order(c: &Causal) -> Vec<VarId> {
    let n = c.vars.len();
    let mut state = vec![0u8; n];
    let mut out = Vec::new();
    let mut memo = crate::flat::VarsMemo::default();
    fn visit(
        c: &Causal,
        v: VarId,
        state: &mut [u8],
        out: &mut Vec<VarId>,
        memo: &mut crate::flat::VarsMemo,
    ) {
        if state[v as usize] != 0 {
            return;
        }
        state[v as usize] = 1;
        let var = &c.vars[v as usize];
        if let Some(b) = var.binding.or(var.start) {
            for &d in c.arena.vars_of_memo(b, memo).iter() {
                if c.vars[d as usize].is_parameter() {
                    visit(c, d, state, out, memo);
                }
            }
        }
        state[v as usize] = 2;
        out.push(v);
    }
    for v in 0..n as VarId {
        if c.vars[v as usize].is_parameter() {
            visit(c, v, &mut state, &mut out, &mut memo);
        }
    }
    out
}

struct Shared {
    layout: Layout,
    rel_index: HashMap<ExprId, u32>,
    sample_index: HashMap<ExprId, u32>,
    /// Scalarized output count of each user function.
    fn_outputs: Vec<usize>,
    /// Where the tangent arguments of a derivative function start
    /// ([`crate::symbolic::fndiff::Derivatives::tangent_args`]).
    tangent_args: Vec<Option<usize>>,
    /// Scalar warm-start variables of each user function: extra inputs
    /// and outputs after its own ([`flat::Function::warm_start`]).
    fn_warm: Vec<u32>,
    /// The model slots of each call site's warm-start values, by the call's
    /// index in the model's arena (none in a function body: its calls
    /// start them at zero).
    warm_sites: HashMap<u32, u32>,
    /// In a user function, `Var(i)` is frame slot `i` (no model layout).
    function_frame: bool,
}

/// The number of scalar warm-start variables of each function.
fn fn_warm_counts(fs: &[flat::Function]) -> Vec<u32> {
    fs.iter()
        .map(|f| f.warm_start.iter().map(|r| r.end - r.start).sum())
        .collect()
}

/// Builds one IR function from arena expressions, sharing subexpressions.
struct Lowerer<'s> {
    sh: &'s Shared,
    name: String,
    stmts: Vec<Stmt>,
    n_locals: u32,
    memo: HashMap<ExprId, IrExpr>,
    calls: HashMap<u32, Vec<u32>>,
    /// Checks of user-function bodies, numbered from `check_base`.
    checks: Vec<FunctionCheck>,
    check_base: u32,
    /// While a mixed system is lowered: the local that is 1 in its first
    /// solve at an event, when its discrete unknowns keep their left
    /// limits (`pre`), as Modelica tools start a mixed system's iteration.
    mixed_first: Option<u32>,
    /// The event relations of that mixed system on its own unknowns.
    mixed_relations: Vec<ExprId>,
    /// Event relations are evaluated where they stand, neither read from
    /// nor stored to their slots: in `parameters` and `starts`, which run
    /// before any event has stored a relation (a binding `if r < 0 then
    /// -1 else 1` read the slot's initial false).
    live_relations: bool,
}

/// In tangent code, `Var(TANGENT + v)` stands for the tangent of `v`.
const TANGENT: VarId = u32::MAX / 4;

/// The assignments of a when-branch in an order where each comes after
/// those whose variables it reads; `None` when none reads another (or
/// they read each other in a cycle): then all read the values before the
/// event.
fn ordered_when_assignments(
    arena: &ExprArena,
    stmts: &[WhenStatement],
) -> Option<Vec<(VarId, ExprId)>> {
    let assigns: Vec<(VarId, ExprId)> = stmts
        .iter()
        .filter_map(|st| match st {
            WhenStatement::Assign { var, value, .. } => Some((*var, *value)),
            _ => None,
        })
        .collect();
    let reads: Vec<Vec<usize>> = assigns
        .iter()
        .map(|&(_, value)| {
            let vars = arena.vars_of(value);
            (0..assigns.len())
                .filter(|&j| vars.binary_search(&assigns[j].0).is_ok())
                .collect()
        })
        .collect();
    if reads.iter().all(|r| r.is_empty()) {
        return None;
    }
    // Depth-first topological order; a cycle gives up.
    let mut state = vec![0u8; assigns.len()];
    let mut order = Vec::new();
    fn visit(i: usize, reads: &[Vec<usize>], state: &mut [u8], order: &mut Vec<usize>) -> bool {
        match state[i] {
            2 => return true,
            1 => return false,
            _ => {}
        }
        state[i] = 1;
        for &j in &reads[i] {
            if j != i && !visit(j, reads, state, order) {
                return false;
            }
        }
        state[i] = 2;
        order.push(i);
        true
    }
    for i in 0..assigns.len() {
        if !visit(i, &reads, &mut state, &mut order) {
            return None;
        }
    }
    Some(order.into_iter().map(|i| assigns[i]).collect())
}

/// Whether evaluating `e` can fail or cost much where its branch is not
/// taken: a function call, or a run-time array index (`if i <= n then v[i]`).
fn needs_lazy_branch(a: &ExprArena, e: ExprId) -> bool {
    a.reachable(&[e])
        .into_iter()
        .any(|id| matches!(a.node(id), Node::Call { .. } | Node::Elem { .. }))
}

fn fn_outputs(fs: &[flat::Function]) -> Vec<usize> {
    fs.iter()
        .map(|f| f.outputs.iter().map(|r| r.len()).sum())
        .collect()
}

/// The directional derivative of `e`, an equation of block `bi`, with the
/// tangents of `exclude` (the block's own unknowns) held: the tangent of
/// every state and algebraic unknown is its tangent variable, and so is a
/// top-level input's (a parameter of the run, which a linearization
/// perturbs: its slot is zero otherwise); other parameters and discrete
/// variables have none.
fn directional(
    c: &mut Causal,
    e: ExprId,
    exclude: &[VarId],
    bi: u32,
    done: &mut TangentMemo,
) -> Result<ExprId, String> {
    let (roles, vars) = (&c.roles, &c.vars);
    let has_tangent = |v: VarId| {
        matches!(roles[v as usize], Role::State | Role::Algebraic)
            || (roles[v as usize] == Role::Parameter
                && vars[v as usize].causality == flat::Causality::Input)
    };
    let space = TangentSpace {
        arena: &mut c.arena,
        functions: &mut c.functions,
        has_tangent: &has_tangent,
        tangent_base: TANGENT,
    };
    tangent::directional(space, e, exclude, bi, done)
}

/// Symbolic partial derivatives of `e` with respect to each of `vars` it mentions.
fn partials(c: &mut Causal, e: ExprId, vars: &[VarId]) -> Result<Vec<(VarId, ExprId)>, String> {
    tangent::partials(&mut c.arena, &mut c.functions, e, vars)
}

/// Σ coefficient * tangent over the terms whose tangent is not zero.
fn combine(terms: Vec<(IrExpr, IrExpr)>) -> IrExpr {
    let mut acc: Option<IrExpr> = None;
    for (coef, t) in terms {
        if t == IrExpr::Const(0.0) {
            continue;
        }
        let term = if t == IrExpr::Const(1.0) {
            coef
        } else {
            IrExpr::Bin(Op2::Mul, Box::new(coef), Box::new(t))
        };
        acc = Some(match acc {
            None => term,
            Some(a) => IrExpr::Bin(Op2::Add, Box::new(a), Box::new(term)),
        });
    }
    acc.unwrap_or(IrExpr::Const(0.0))
}

fn abs(e: IrExpr) -> IrExpr {
    IrExpr::Un(Op1::F(Fn1::Abs), Box::new(e))
}

fn bin(op: Op2, a: IrExpr, b: IrExpr) -> IrExpr {
    IrExpr::Bin(op, Box::new(a), Box::new(b))
}
