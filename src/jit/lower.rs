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
//! - `initial_residuals`, `asserts`, `residuals`.
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
use crate::symbolic::{self, DiffRules};
use rustc_hash::FxHashMap as HashMap;

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
    pub residuals: Func,
    pub user: Vec<Func>,
    pub relations: Vec<Relation>,
    pub branches: Vec<WhenBranch>,
    /// The run-time checks inside user functions (asserts, while-loop
    /// limits), indexed by the status codes `FN_ASSERT` and `LOOP`.
    pub function_checks: Vec<FunctionCheck>,
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
}

pub use crate::flat::MAX_WHILE_ITERATIONS;

/// The ten entries of a program in `entries()` order (the order of
/// `frame::Entry::ALL`), borrowed shared or `mut`: one list for both.
macro_rules! entry_list {
    ($p:expr $(, $m:tt)?) => {
        [
            &$($m)? $p.parameters,
            &$($m)? $p.starts,
            &$($m)? $p.ode,
            &$($m)? $p.tangent,
            &$($m)? $p.zero_crossings,
            &$($m)? $p.conditions,
            &$($m)? $p.actions,
            &$($m)? $p.initial_residuals,
            &$($m)? $p.asserts,
            &$($m)? $p.residuals,
        ]
    };
}

impl Program {
    pub fn entries(&self) -> [&Func; 10] {
        entry_list!(self)
    }

    /// The entries, mutable, in the order of [`Program::entries`].
    pub fn entries_mut(&mut self) -> [&mut Func; 10] {
        entry_list!(self, mut)
    }
}

/// Lowers a causal model. Fails only if a derivative needed for a Jacobian
/// cannot be formed (it names the equation).
pub fn lower(c: &mut Causal) -> Result<Program, String> {
    lower_entries(c, true)
}

/// As [`lower`] without the tangent code (the BDF's Jacobians), which
/// `rmoc check` never runs: it only initializes the model. The tangent is
/// the directional derivative of every block, about a tenth of checking
/// the gearbox.
pub fn lower_for_check(c: &mut Causal) -> Result<Program, String> {
    lower_entries(c, false)
}

fn lower_entries(c: &mut Causal, with_tangent: bool) -> Result<Program, String> {
    let n_vars = c.vars.len() as u32;
    // Event relations, in a stable order.
    let mut relations: Vec<Relation> = Vec::new();
    let mut rel_index: HashMap<ExprId, u32> = HashMap::default();
    let mut samples: Vec<ExprId> = Vec::new();
    let mut sample_index: HashMap<ExprId, u32> = HashMap::default();
    let roots = model_roots(c);
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
    l.len = l.assert + l.n_asserts;

    // The derivatives of the blocks (Newton Jacobians, tangent code) may need
    // derivative functions; make them all first, so that every function the
    // code will call is known before lowering starts.
    let mut tangents = Tangents::default();
    for (bi, b) in c.blocks.clone().iter().enumerate() {
        prepare_derivatives(c, b, bi as u32, with_tangent.then_some(&mut tangents))?;
    }
    let ctx = Shared {
        layout: l.clone(),
        rel_index,
        sample_index,
        fn_outputs: fn_outputs(&c.functions.functions),
        tangent_args: c.functions.tangent_args(),
        function_frame: false,
    };

    // parameters
    let mut p = Lowerer::with_live_relations(&ctx, "parameters");
    for v in parameter_order(c) {
        // A parameter without a binding takes its start value (MLS 4.4.4).
        let var = &c.vars[v as usize];
        let Some(b) = var.binding.or(var.start) else {
            continue;
        };
        let mut inner = Lowerer::with_live_relations(&ctx, "");
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
    let parameters = p.finish(&l);

    // starts
    let mut s = Lowerer::with_live_relations(&ctx, "starts");
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
    let starts = s.finish(&l);

    // ode
    let mut o = Lowerer::new(&ctx, "ode");
    let blocks = c.blocks.clone();
    for (bi, b) in blocks.iter().enumerate() {
        o.block(c, b, bi as u32)?;
    }
    let ode = o.finish(&l);

    // tangent
    let mut t = Lowerer::new(&ctx, "tangent");
    if with_tangent {
        for (bi, b) in blocks.iter().enumerate() {
            t.block_tangent(c, b, bi as u32, &mut tangents)?;
        }
    }
    let tangent = t.finish(&l);
    // Derivative functions made for the tangent code are lowered last.
    let (user, function_checks) = lower_functions(&c.functions);

    // zero crossings
    let mut z = Lowerer::new(&ctx, "zero_crossings");
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
    let zero_crossings = z.finish(&l);

    // when conditions and actions
    let mut cd = Lowerer::new(&ctx, "conditions");
    let mut act = Lowerer::new(&ctx, "actions");
    let mut bidx = 0u32;
    let whens = c.whens.clone();
    for w in &whens {
        for (cond, stmts) in &w.branches {
            let e = cd.expr(&c.arena, *cond);
            cd.stmts.push(Stmt::Store(l.cond + bidx, e));
            let mut body = Lowerer::new(&ctx, "");
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
    let conditions = cd.finish(&l);
    let actions = act.finish(&l);

    // initial residuals, asserts, residuals
    let mut ir = Lowerer::new(&ctx, "initial_residuals");
    for (k, e) in c.initial_equations.iter().enumerate() {
        let r = c.arena.sub(e.lhs, e.rhs);
        let x = ir.expr(&c.arena, r);
        ir.stmts.push(Stmt::Store(l.init_res + k as u32, x));
    }
    let initial_residuals = ir.finish(&l);
    let mut asr = Lowerer::new(&ctx, "asserts");
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
    let asserts = asr.finish(&l);
    let mut rs = Lowerer::new(&ctx, "residuals");
    for k in 0..c.equations.len() {
        let eq = c.equations[k].clone();
        let r = eq.residual(&mut c.arena);
        let x = rs.expr(&c.arena, r);
        rs.stmts.push(Stmt::Store(l.residual + k as u32, x));
    }
    let residuals = rs.finish(&l);

    Ok(Program {
        layout: l,
        parameters,
        starts,
        ode,
        tangent,
        has_tangent: with_tangent,
        zero_crossings,
        conditions,
        actions,
        initial_residuals,
        asserts,
        residuals,
        user,
        relations,
        branches,
        function_checks,
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
    /// In a user function, `Var(i)` is frame slot `i` (no model layout).
    function_frame: bool,
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

impl<'s> Lowerer<'s> {
    fn new(sh: &'s Shared, name: &str) -> Lowerer<'s> {
        Lowerer {
            sh,
            name: name.to_string(),
            stmts: Vec::new(),
            n_locals: 0,
            memo: HashMap::default(),
            calls: HashMap::default(),
            checks: Vec::new(),
            check_base: 0,
            mixed_first: None,
            mixed_relations: Vec::new(),
            live_relations: false,
        }
    }

    /// A lowerer whose event relations are evaluated live (see
    /// `live_relations`).
    fn with_live_relations(sh: &'s Shared, name: &str) -> Lowerer<'s> {
        Lowerer {
            live_relations: true,
            ..Lowerer::new(sh, name)
        }
    }

    fn finish(mut self, l: &Layout) -> Func {
        self.stmts
            .insert(0, Stmt::Store(FREEZE, IrExpr::Const(0.0)));
        self.stmts.push(Stmt::Return(status::OK));
        Func {
            name: self.name,
            frame_size: l.len,
            n_locals: self.n_locals,
            inputs: vec![],
            outputs: vec![],
            body: self.stmts,
        }
    }

    fn local(&mut self) -> u32 {
        self.n_locals += 1;
        self.n_locals - 1
    }

    /// Lowers `body` into a separate statement list whose shared values do
    /// not escape (a loop body, a lazy branch).
    fn scoped(&mut self, f: impl FnOnce(&mut Self)) -> Vec<Stmt> {
        let saved_stmts = std::mem::take(&mut self.stmts);
        let saved_memo = self.memo.clone();
        let saved_calls = self.calls.clone();
        f(self);
        self.memo = saved_memo;
        self.calls = saved_calls;
        std::mem::replace(&mut self.stmts, saved_stmts)
    }

    fn expr(&mut self, a: &ExprArena, id: ExprId) -> IrExpr {
        // Another output of a call already made (the elements of an array
        // bound to one call: without this, each walked the call's
        // arguments again, quadratic in the array's size).
        if let Node::Call { call, .. } = a.node(id)
            && self.calls.contains_key(&call)
        {
            return self.expr_rec(a, id, &HashMap::default());
        }
        // Nodes used more than once below `id` are computed once into a local.
        let order = a.reachable(&[id]);
        let mut uses: HashMap<ExprId, u32> =
            HashMap::with_capacity_and_hasher(order.len(), Default::default());
        for &n in &order {
            for ch in a.children(n) {
                *uses.entry(ch).or_default() += 1;
            }
        }
        self.expr_rec(a, id, &uses)
    }

    fn expr_rec(&mut self, a: &ExprArena, id: ExprId, uses: &HashMap<ExprId, u32>) -> IrExpr {
        if let Some(e) = self.memo.get(&id) {
            return e.clone();
        }
        let l = &self.sh.layout;
        let n = a.node(id);
        let e = match n {
            Node::Const(b) => return IrExpr::Const(f64::from_bits(b)),
            Node::Var(v) if self.sh.function_frame => return IrExpr::Load(v),
            Node::Var(v) if v >= TANGENT => return IrExpr::Load(l.tan(v - TANGENT)),
            Node::Var(v) => return IrExpr::Load(l.var(v)),
            Node::Pre(v) => return IrExpr::Load(l.pre(v)),
            Node::Time => return IrExpr::Load(TIME),
            Node::Initial => return IrExpr::Load(INITIAL),
            Node::Terminal => return IrExpr::Load(TERMINAL),
            Node::Der(v) => return IrExpr::Load(l.var(v)),
            Node::Sample(..) => {
                let k = self.sh.sample_index.get(&id).copied().unwrap_or(0);
                return IrExpr::Load(l.sample + k);
            }
            Node::Neg(x) => IrExpr::Un(Op1::Neg, Box::new(self.expr_rec(a, x, uses))),
            Node::Not(x) => IrExpr::Un(Op1::Not, Box::new(self.expr_rec(a, x, uses))),
            Node::Call1(f, x) => IrExpr::Un(Op1::F(f), Box::new(self.expr_rec(a, x, uses))),
            Node::Add(x, y) => self.bin(a, Op2::Add, x, y, uses),
            Node::Sub(x, y) => self.bin(a, Op2::Sub, x, y, uses),
            Node::Mul(x, y) => self.bin(a, Op2::Mul, x, y, uses),
            Node::Div(x, y) => self.bin(a, Op2::Div, x, y, uses),
            Node::Pow(x, y) => self.bin(a, Op2::Pow, x, y, uses),
            Node::And(x, y) => self.bin(a, Op2::And, x, y, uses),
            Node::Or(x, y) => self.bin(a, Op2::Or, x, y, uses),
            Node::Call2(f, x, y) => self.bin(a, Op2::F(f), x, y, uses),
            Node::Rel {
                op,
                lhs,
                rhs,
                event,
            } => {
                let live = self.bin(a, Op2::Rel(op), lhs, rhs, uses);
                match (event, self.sh.rel_index.get(&id)) {
                    (true, Some(&k)) if !self.live_relations => {
                        // Frozen between events, evaluated and stored at events.
                        let t = self.local();
                        let slot = l.rel + k;
                        let is_event = bin(
                            Op2::And,
                            bin(Op2::Rel(RelOp::Ne), IrExpr::Load(MODE), IrExpr::Const(0.0)),
                            bin(
                                Op2::Rel(RelOp::Eq),
                                IrExpr::Load(FREEZE),
                                IrExpr::Const(0.0),
                            ),
                        );
                        self.stmts.push(Stmt::If(
                            is_event,
                            vec![Stmt::Set(t, live), Stmt::Store(slot, IrExpr::Local(t))],
                            vec![Stmt::Set(t, IrExpr::Load(slot))],
                        ));
                        self.memo.insert(id, IrExpr::Local(t));
                        return IrExpr::Local(t);
                    }
                    _ => live,
                }
            }
            Node::If(c, x, y) => {
                let cond = self.expr_rec(a, c, uses);
                if needs_lazy_branch(a, x) || needs_lazy_branch(a, y) {
                    // Lazy: only the taken branch runs (a function or an array
                    // index may be undefined, or costly, where its branch is not
                    // taken).
                    let t = self.local();
                    let then = self.scoped(|s| {
                        let v = s.expr_rec(a, x, uses);
                        s.stmts.push(Stmt::Set(t, v));
                    });
                    let els = self.scoped(|s| {
                        let v = s.expr_rec(a, y, uses);
                        s.stmts.push(Stmt::Set(t, v));
                    });
                    self.stmts.push(Stmt::If(cond, then, els));
                    self.memo.insert(id, IrExpr::Local(t));
                    return IrExpr::Local(t);
                }
                let xa = self.expr_rec(a, x, uses);
                let ya = self.expr_rec(a, y, uses);
                IrExpr::Select(Box::new(cond), Box::new(xa), Box::new(ya))
            }
            Node::Call { call, output } => {
                let outs = match self.calls.get(&call) {
                    Some(o) => o.clone(),
                    None => {
                        let site = a.calls[call as usize].clone();
                        let args: Vec<IrExpr> = site
                            .args
                            .iter()
                            .map(|&x| self.expr_rec(a, x, uses))
                            .collect();
                        let nout = self.sh_function_outputs(site.func);
                        let outs: Vec<u32> = (0..nout).map(|_| self.local()).collect();
                        self.call_unless_tangents_vanish(site.func, args, &outs);
                        self.calls.insert(call, outs.clone());
                        outs
                    }
                };
                return IrExpr::Local(outs[output as usize]);
            }
            Node::Elem { base, len, index } => IrExpr::LoadElem {
                base,
                len,
                index: Box::new(self.expr_rec(a, index, uses)),
            },
        };
        if uses.get(&id).copied().unwrap_or(0) > 1 {
            let t = self.local();
            self.stmts.push(Stmt::Set(t, e));
            self.memo.insert(id, IrExpr::Local(t));
            return IrExpr::Local(t);
        }
        e
    }

    /// Calls `func`; a derivative function whose tangent arguments are all
    /// zero (a colour's seeds that do not reach the call) is not called
    /// and its outputs are zero, since it is linear in them.
    fn call_unless_tangents_vanish(&mut self, func: u32, mut args: Vec<IrExpr>, outs: &[u32]) {
        let from = self.sh.tangent_args.get(func as usize).copied().flatten();
        let Some(from) = from.filter(|&k| k < args.len()) else {
            self.stmts.push(Stmt::Call {
                func,
                args,
                outs: outs.to_vec(),
            });
            return;
        };
        let zeros = |outs: &[u32]| -> Vec<Stmt> {
            outs.iter()
                .map(|&o| Stmt::Set(o, IrExpr::Const(0.0)))
                .collect()
        };
        let mut any: Option<IrExpr> = None;
        for arg in &mut args[from..] {
            if matches!(arg, IrExpr::Const(x) if *x == 0.0) {
                continue;
            }
            if !matches!(arg, IrExpr::Local(_) | IrExpr::Load(_) | IrExpr::Const(_)) {
                let t = self.local();
                self.stmts
                    .push(Stmt::Set(t, std::mem::replace(arg, IrExpr::Local(t))));
            }
            let nonzero = IrExpr::Bin(
                Op2::Rel(RelOp::Ne),
                Box::new(arg.clone()),
                Box::new(IrExpr::Const(0.0)),
            );
            any = Some(match any {
                None => nonzero,
                Some(a) => IrExpr::Bin(Op2::Or, Box::new(a), Box::new(nonzero)),
            });
        }
        let Some(any) = any else {
            self.stmts.extend(zeros(outs));
            return;
        };
        let call = Stmt::Call {
            func,
            args,
            outs: outs.to_vec(),
        };
        self.stmts.push(Stmt::If(any, vec![call], zeros(outs)));
    }

    fn sh_function_outputs(&self, f: u32) -> usize {
        self.sh.fn_outputs.get(f as usize).copied().unwrap_or(1)
    }

    fn bin(
        &mut self,
        a: &ExprArena,
        op: Op2,
        x: ExprId,
        y: ExprId,
        uses: &HashMap<ExprId, u32>,
    ) -> IrExpr {
        let xa = self.expr_rec(a, x, uses);
        let ya = self.expr_rec(a, y, uses);
        IrExpr::Bin(op, Box::new(xa), Box::new(ya))
    }
}

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

/// Forms (and caches, through the arena and the derivative-function table)
/// every derivative that lowering `b` and its tangent will ask for; the
/// tangent's directional derivatives go to `tangents` (`None`: no tangent
/// code), where the tangent code finds them instead of differentiating the
/// block's equations a second time.
fn prepare_derivatives(
    c: &mut Causal,
    b: &Block,
    bi: u32,
    tangents: Option<&mut Tangents>,
) -> Result<(), String> {
    match b {
        Block::Explicit { value, .. } => {
            if let Some(t) = tangents {
                directional(c, *value, &[], bi, t)?;
            }
        }
        Block::Implicit { var, residual, .. } => {
            symbolic::partial(&mut c.arena, *residual, *var, &mut c.functions)?;
            if let Some(t) = tangents {
                directional(c, *residual, &[*var], bi, t)?;
            }
        }
        Block::Torn {
            tear,
            inner,
            residuals,
            ..
        } => {
            torn_parts(c, tear, inner, residuals)?;
            if let Some(t) = tangents {
                let block: Vec<VarId> = tear
                    .iter()
                    .copied()
                    .chain(inner.iter().map(|x| x.0))
                    .collect();
                for (_, e, _) in inner {
                    directional(c, *e, &block, bi, t)?;
                }
                for (e, _) in residuals {
                    directional(c, *e, &block, bi, t)?;
                }
            }
        }
    }
    Ok(())
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

/// Directional derivative rules: the tangent of every time-varying variable
/// not in `exclude` is its tangent slot, and so is a top-level input's (a
/// parameter of the run, which a linearization perturbs: its slot is zero
/// otherwise); other parameters and discrete variables have none.
struct Directional<'a> {
    exclude: &'a [VarId],
    roles: &'a [Role],
    vars: &'a [flat::Variable],
    functions: &'a mut crate::symbolic::fndiff::Derivatives,
}

impl DiffRules for Directional<'_> {
    fn leaf(&mut self, arena: &mut ExprArena, node: Node) -> Result<Option<ExprId>, String> {
        Ok(match node {
            Node::Var(v)
                if !self.exclude.contains(&v)
                    && (matches!(self.roles[v as usize], Role::State | Role::Algebraic)
                        || (self.roles[v as usize] == Role::Parameter
                            && self.vars[v as usize].causality == flat::Causality::Input)) =>
            {
                Some(arena.var(TANGENT + v))
            }
            _ => None,
        })
    }
    fn derivatives(&mut self) -> &mut crate::symbolic::fndiff::Derivatives {
        self.functions
    }
}

/// Directional derivatives already formed.
#[derive(Default)]
struct Tangents {
    /// The derivative of every node differentiated with no variable held
    /// (explicit blocks): the same whichever equation it is part of, so
    /// shared subexpressions are differentiated once.
    held_none: crate::flat::RewriteMemo,
    /// The others, by expression and the block whose equation it is
    /// (which decides the variables held).
    held: rustc_hash::FxHashMap<(ExprId, u32), ExprId>,
}

/// The directional derivative of `e`, an equation of block `bi`, with the
/// tangents of `exclude` (the block's own unknowns) left out.
fn directional(
    c: &mut Causal,
    e: ExprId,
    exclude: &[VarId],
    bi: u32,
    done: &mut Tangents,
) -> Result<ExprId, String> {
    let mut rules = Directional {
        exclude,
        roles: &c.roles,
        vars: &c.vars,
        functions: &mut c.functions,
    };
    if exclude.is_empty() {
        // The memo holds `e`'s derivative once it was formed.
        return symbolic::differentiate(&mut c.arena, e, &mut rules, &mut done.held_none);
    }
    if let Some(&d) = done.held.get(&(e, bi)) {
        return Ok(d);
    }
    let mut memo = crate::flat::RewriteMemo::default();
    let d = symbolic::differentiate(&mut c.arena, e, &mut rules, &mut memo)?;
    done.held.insert((e, bi), d);
    Ok(d)
}

/// Symbolic partial derivatives of `e` with respect to each of `vars` it mentions.
fn partials(c: &mut Causal, e: ExprId, vars: &[VarId]) -> Result<Vec<(VarId, ExprId)>, String> {
    let mentioned = c.arena.vars_of(e);
    let mut out = Vec::new();
    for &w in vars {
        if mentioned.binary_search(&w).is_ok() {
            let d = symbolic::partial(&mut c.arena, e, w, &mut c.functions)?;
            if !c.arena.is_const(d, 0.0) {
                out.push((w, d));
            }
        }
    }
    Ok(out)
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

/// Precomputed symbolic pieces of a torn block.
struct TornParts {
    /// For each inner assignment: partials w.r.t. earlier block variables.
    inner_partials: Vec<Vec<(VarId, ExprId)>>,
    /// For each residual: partials w.r.t. all block variables.
    res_partials: Vec<Vec<(VarId, ExprId)>>,
}

fn torn_parts(
    c: &mut Causal,
    tear: &[VarId],
    inner: &[(VarId, ExprId, usize)],
    residuals: &[(ExprId, usize)],
) -> Result<TornParts, String> {
    let mut block: Vec<VarId> = tear.to_vec();
    let mut inner_partials = Vec::new();
    for (u, e, _) in inner {
        inner_partials.push(partials(c, *e, &block)?);
        block.push(*u);
    }
    let mut res_partials = Vec::new();
    for (r, _) in residuals {
        res_partials.push(partials(c, *r, &block)?);
    }
    Ok(TornParts {
        inner_partials,
        res_partials,
    })
}

/// Newton's convergence test for one variable: |dx| <= 1e-12 |x| + 1e-15 nominal.
fn converged(slot: u32, dx: u32, nominal: f64, rel: f64) -> IrExpr {
    let tol = bin(
        Op2::Add,
        bin(Op2::Mul, IrExpr::Const(rel), abs(IrExpr::Load(slot))),
        IrExpr::Const(rel * 1e-3 * nominal),
    );
    bin(Op2::Rel(RelOp::Le), abs(IrExpr::Local(dx)), tol)
}

fn nominal_of(c: &Causal, v: VarId) -> f64 {
    c.vars[v as usize]
        .nominal
        .and_then(|e| c.arena.as_const(e))
        .map(f64::abs)
        .filter(|x| *x > 0.0)
        .unwrap_or(1.0)
}

const MAX_NEWTON: f64 = 50.0;

/// An event relation of a block: its stored value's slot, operator,
/// operands, and the relation itself.
type BlockRelation = (u32, RelOp, ExprId, ExprId, ExprId);

/// Solves of a mixed system at one event before it is refused.
const MAX_MIXED: f64 = 20.0;

impl Lowerer<'_> {
    fn block(&mut self, c: &mut Causal, b: &Block, bi: u32) -> Result<(), String> {
        let (rels, given) = self.block_relations(c, b);
        if rels.is_empty() {
            return self.block_solve(c, b, bi);
        }
        // Relations on values computed before the block are evaluated
        // (in event mode) before it is solved with its relations frozen.
        let before = self.scoped(|s| {
            for &(slot, op, lhs, rhs, _) in &given {
                let live = bin(Op2::Rel(op), s.expr(&c.arena, lhs), s.expr(&c.arena, rhs));
                s.stmts.push(Stmt::Store(slot, live));
            }
        });
        if !before.is_empty() {
            self.stmts.push(Stmt::If(
                bin(Op2::Rel(RelOp::Ne), IrExpr::Load(MODE), IrExpr::Const(0.0)),
                before,
                vec![],
            ));
        }
        // A mixed system: solve with the relations frozen, evaluate them
        // at the solution; again while one changed (in event mode only).
        let saved_stmts = std::mem::take(&mut self.stmts);
        let saved_memo = self.memo.clone();
        let saved_calls = self.calls.clone();
        self.stmts.push(Stmt::Store(FREEZE, IrExpr::Load(MODE)));
        let first = self.local();
        self.mixed_first = Some(first);
        self.mixed_relations = rels.iter().map(|r| r.4).collect();
        let solved = self.block_solve(c, b, bi);
        self.mixed_first = None;
        self.mixed_relations.clear();
        self.stmts.push(Stmt::Store(FREEZE, IrExpr::Const(0.0)));
        self.stmts.push(Stmt::Set(first, IrExpr::Const(0.0)));
        let changed = self.local();
        self.stmts.push(Stmt::Set(changed, IrExpr::Const(0.0)));
        // Whether each relation flipped already at this evaluation: it does
        // not flip back in it. At a switching point a relation such as
        // `sa > tau0_max` holds by a hair, and the solution of the new mode
        // may land a hair (or, past a hysteresis, clearly) on the other
        // side; the next event iteration, with the left limits updated,
        // decides (the MSL's one-way clutch keeps sliding through
        // `pre(startForward) and sa > tau0`).
        let flipped: Vec<u32> = rels.iter().map(|_| self.local()).collect();
        let l = self.sh.layout.clone();
        let inner: &[(VarId, ExprId, usize)] = match b {
            Block::Torn { inner, .. } => inner,
            _ => &[],
        };
        // Relations that a Real equation of the block uses itself (not
        // through a Boolean): their flip alone needs another solve. (A
        // flip that changes no discrete unknown otherwise changes nothing:
        // a free clutch's `sa > 0` at sa = 1e-17.)
        let real_roots: Vec<ExprId> = match b {
            Block::Torn { residuals, .. } => inner
                .iter()
                .filter(|x| c.vars[x.0 as usize].ty == flat::ScalarType::Real)
                .map(|x| x.1)
                .chain(residuals.iter().map(|x| x.0))
                .collect(),
            Block::Implicit { residual, .. } => vec![*residual],
            Block::Explicit { .. } => Vec::new(),
        };
        let direct: std::collections::HashSet<ExprId> =
            c.arena.reachable(&real_roots).into_iter().collect();
        let update = self.scoped(|s| {
            // Values lowered inside the block read the frozen relations,
            // and so do relations nested in these operands.
            s.memo.clear();
            s.calls.clear();
            s.stmts.push(Stmt::Store(FREEZE, IrExpr::Const(1.0)));
            for (&(slot, op, lhs, rhs, rel), &f) in rels.iter().zip(&flipped) {
                let live = bin(Op2::Rel(op), s.expr(&c.arena, lhs), s.expr(&c.arena, rhs));
                let t = s.local();
                s.stmts.push(Stmt::Set(t, live));
                let mut store = vec![
                    Stmt::Store(slot, IrExpr::Local(t)),
                    Stmt::Set(f, IrExpr::Const(1.0)),
                ];
                if direct.contains(&rel) {
                    store.insert(0, Stmt::Set(changed, IrExpr::Const(1.0)));
                }
                let may_flip = bin(Op2::Rel(RelOp::Eq), IrExpr::Local(f), IrExpr::Const(0.0));
                s.stmts.push(Stmt::If(
                    bin(
                        Op2::And,
                        bin(Op2::Rel(RelOp::Ne), IrExpr::Local(t), IrExpr::Load(slot)),
                        may_flip,
                    ),
                    store,
                    vec![],
                ));
            }
            // The discrete unknowns recomputed from the relations now
            // stored: one that differs from the value the solve used (the
            // first solve used left limits) needs another solve. (When
            // none differs and no relation flipped, the recomputed values
            // are the solve's own.)
            s.memo.clear();
            s.calls.clear();
            for &(u, e, _) in inner {
                let x = s.expr(&c.arena, e);
                let t = s.local();
                s.stmts.push(Stmt::Set(t, x));
                if c.vars[u as usize].ty != flat::ScalarType::Real {
                    s.stmts.push(Stmt::If(
                        bin(
                            Op2::Rel(RelOp::Ne),
                            IrExpr::Local(t),
                            IrExpr::Load(l.var(u)),
                        ),
                        vec![Stmt::Set(changed, IrExpr::Const(1.0))],
                        vec![],
                    ));
                }
                s.stmts.push(Stmt::Store(l.var(u), IrExpr::Local(t)));
            }
            s.stmts.push(Stmt::Store(FREEZE, IrExpr::Const(0.0)));
        });
        self.stmts.push(Stmt::If(
            bin(Op2::Rel(RelOp::Ne), IrExpr::Load(MODE), IrExpr::Const(0.0)),
            update,
            vec![],
        ));
        self.stmts.push(Stmt::If(
            bin(
                Op2::Rel(RelOp::Eq),
                IrExpr::Local(changed),
                IrExpr::Const(0.0),
            ),
            vec![Stmt::Break],
            vec![],
        ));
        let solves = self.local();
        self.stmts.push(Stmt::Set(
            solves,
            bin(Op2::Add, IrExpr::Local(solves), IrExpr::Const(1.0)),
        ));
        self.stmts.push(Stmt::If(
            bin(
                Op2::Rel(RelOp::Ge),
                IrExpr::Local(solves),
                IrExpr::Const(MAX_MIXED),
            ),
            vec![Stmt::Return(status::encode(status::MIXED, bi))],
            vec![],
        ));
        let body = std::mem::replace(&mut self.stmts, saved_stmts);
        self.memo = saved_memo;
        self.calls = saved_calls;
        solved?;
        self.stmts.push(Stmt::Set(solves, IrExpr::Const(0.0)));
        self.stmts.push(Stmt::Set(first, IrExpr::Load(MODE)));
        for &f in &flipped {
            self.stmts.push(Stmt::Set(f, IrExpr::Const(0.0)));
        }
        self.stmts.push(Stmt::Loop(body));
        Ok(())
    }

    /// The event relations of block `b`: those on its own unknowns, and
    /// the others.
    fn block_relations(&self, c: &Causal, b: &Block) -> (Vec<BlockRelation>, Vec<BlockRelation>) {
        let roots: Vec<ExprId> = match b {
            Block::Explicit { .. } => return (Vec::new(), Vec::new()),
            Block::Implicit { residual, .. } => vec![*residual],
            Block::Torn {
                inner, residuals, ..
            } => inner
                .iter()
                .map(|x| x.1)
                .chain(residuals.iter().map(|x| x.0))
                .collect(),
        };
        let mut vars = b.vars();
        vars.sort_unstable();
        let l = &self.sh.layout;
        let (mut own, mut given) = (Vec::new(), Vec::new());
        for id in c.arena.reachable(&roots) {
            if let Node::Rel {
                op,
                lhs,
                rhs,
                event: true,
            } = c.arena.node(id)
                && let Some(&k) = self.sh.rel_index.get(&id)
            {
                let r = (l.rel + k, op, lhs, rhs, id);
                if c.arena
                    .vars_of(id)
                    .iter()
                    .any(|v| vars.binary_search(v).is_ok())
                {
                    own.push(r);
                } else {
                    given.push(r);
                }
            }
        }
        // Operands that may fail or cost where their branch is not taken (a
        // call, a run-time index) are not evaluated outside it: such a
        // block is solved as any other.
        let lazy = own
            .iter()
            .chain(&given)
            .any(|r| needs_lazy_branch(&c.arena, r.2) || needs_lazy_branch(&c.arena, r.3));
        if own.is_empty() || lazy {
            return (Vec::new(), Vec::new());
        }
        (own, given)
    }

    /// `x`, or for a discrete unknown of a mixed system in its first solve
    /// at an event, its left limit.
    fn discrete_start(&self, discrete: bool, u: VarId, x: IrExpr) -> IrExpr {
        match self.mixed_first {
            Some(first) if discrete => IrExpr::Select(
                Box::new(bin(
                    Op2::Rel(RelOp::Ne),
                    IrExpr::Local(first),
                    IrExpr::Const(0.0),
                )),
                Box::new(IrExpr::Load(self.sh.layout.pre(u))),
                Box::new(x),
            ),
            _ => x,
        }
    }

    /// The code that solves block `b` for its variables.
    fn block_solve(&mut self, c: &mut Causal, b: &Block, bi: u32) -> Result<(), String> {
        let l = self.sh.layout.clone();
        match b {
            Block::Explicit { var, value, .. } => {
                let e = self.expr(&c.arena, *value);
                self.stmts.push(Stmt::Store(l.var(*var), e));
            }
            Block::Implicit { var, residual, .. } => {
                let d = symbolic::partial(&mut c.arena, *residual, *var, &mut c.functions)?;
                let nominal = nominal_of(c, *var);
                self.reset_if_not_finite(&[*var], c);
                let it = self.local();
                self.stmts.push(Stmt::Set(it, IrExpr::Const(0.0)));
                let arena = &c.arena;
                let body = self.scoped(|s| {
                    let r = s.expr(arena, *residual);
                    let j = s.expr(arena, d);
                    let dx = s.local();
                    s.stmts.push(Stmt::Set(dx, bin(Op2::Div, r, j)));
                    s.unstick(dx, nominal);
                    s.newton_tail(&[(l.var(*var), dx, nominal)], it, bi, None);
                });
                self.stmts.push(Stmt::Loop(body));
            }
            Block::Torn {
                tear,
                inner,
                residuals,
                linear,
            } => {
                let parts = torn_parts(c, tear, inner, residuals)?;
                let m = tear.len();
                // The discrete unknowns decided by the loop's own relations
                // (`startForward`, not `locked` which follows from them).
                let own: std::collections::HashSet<ExprId> =
                    self.mixed_relations.iter().copied().collect();
                let discrete: HashMap<VarId, bool> = inner
                    .iter()
                    .map(|&(u, e, _)| {
                        let decided = c.vars[u as usize].ty != flat::ScalarType::Real
                            && c.arena.reachable(&[e]).iter().any(|id| own.contains(id));
                        (u, decided)
                    })
                    .collect();
                let discrete = &discrete;
                let arena = &c.arena;
                let noms: Vec<f64> = tear.iter().map(|&t| nominal_of(c, t)).collect();
                let restart = if *linear {
                    None
                } else {
                    self.reset_if_not_finite(tear, c);
                    self.restart_from_starts(c, tear)
                };
                let it = self.local();
                self.stmts.push(Stmt::Set(it, IrExpr::Const(0.0)));
                let step = |s: &mut Self| {
                    for (u, e, _) in inner {
                        let x = s.expr(arena, *e);
                        let x = s.discrete_start(discrete[u], *u, x);
                        s.stmts.push(Stmt::Store(l.var(*u), x));
                    }
                    let r: Vec<u32> = residuals
                        .iter()
                        .map(|(e, _)| {
                            let x = s.expr(arena, *e);
                            let t = s.local();
                            s.stmts.push(Stmt::Set(t, x));
                            t
                        })
                        .collect();
                    let a = s.block_jacobian(arena, tear, inner, &parts);
                    let dx: Vec<u32> = (0..m).map(|_| s.local()).collect();
                    if m == 1 {
                        s.stmts.push(Stmt::Set(
                            dx[0],
                            bin(Op2::Div, IrExpr::Local(r[0]), IrExpr::Local(a[0])),
                        ));
                        if !*linear {
                            s.unstick(dx[0], noms[0]);
                        }
                    } else {
                        s.stmts.push(Stmt::Solve {
                            n: m as u32,
                            a,
                            b: r,
                            x: dx.clone(),
                            fail: status::encode(status::SINGULAR, bi),
                        });
                    }
                    dx
                };
                if *linear {
                    // One exact step from zero (a linear system does not need a
                    // guess, and a stale value could be NaN from a rejected
                    // step), then the inner assignments at the solution.
                    for &t in tear.iter() {
                        self.stmts.push(Stmt::Store(l.var(t), IrExpr::Const(0.0)));
                    }
                    let body = self.scoped(|s| {
                        let dx = step(s);
                        for (k, &t) in tear.iter().enumerate() {
                            s.stmts.push(Stmt::Store(
                                l.var(t),
                                bin(Op2::Sub, IrExpr::Load(l.var(t)), IrExpr::Local(dx[k])),
                            ));
                        }
                    });
                    self.stmts.extend(body);
                } else {
                    let body = self.scoped(|s| {
                        let dx = step(s);
                        let vars: Vec<(u32, u32, f64)> = tear
                            .iter()
                            .enumerate()
                            .map(|(k, &t)| (l.var(t), dx[k], noms[k]))
                            .collect();
                        s.newton_tail(&vars, it, bi, restart.as_ref());
                    });
                    self.stmts.push(Stmt::Loop(body));
                }
                let fin = self.scoped(|s| {
                    for (u, e, _) in inner {
                        let x = s.expr(arena, *e);
                        let x = s.discrete_start(discrete[u], *u, x);
                        s.stmts.push(Stmt::Store(l.var(*u), x));
                    }
                });
                self.stmts.extend(fin);
            }
        }
        Ok(())
    }

    /// A Newton guess left non-finite by a failed evaluation (at a rejected
    /// step) restarts from the variable's start value (or 0).
    fn reset_if_not_finite(&mut self, vars: &[VarId], c: &Causal) {
        let l = self.sh.layout.clone();
        for &v in vars {
            let slot = l.var(v);
            let guess = c.vars[v as usize]
                .start
                .and_then(|e| c.arena.as_const(e))
                .unwrap_or(0.0);
            let x = IrExpr::Load(slot);
            let bad = bin(
                Op2::Or,
                bin(Op2::Rel(RelOp::Ne), x.clone(), x.clone()),
                bin(Op2::Rel(RelOp::Gt), abs(x), IrExpr::Const(1e300)),
            );
            self.stmts.push(Stmt::If(
                bad,
                vec![Stmt::Store(slot, IrExpr::Const(guess))],
                vec![],
            ));
        }
    }

    /// A scalar Newton step through a zero derivative (`y*y = c` from
    /// `y = 0`) is infinite; step off the stationary point by a thousandth of
    /// the nominal instead, and let the iteration limit catch a root that is
    /// not there.
    fn unstick(&mut self, dx: u32, nominal: f64) {
        let d = IrExpr::Local(dx);
        let bad = bin(
            Op2::Or,
            bin(Op2::Rel(RelOp::Ne), d.clone(), d.clone()),
            bin(Op2::Rel(RelOp::Gt), abs(d), IrExpr::Const(1e300)),
        );
        self.stmts.push(Stmt::If(
            bad,
            vec![Stmt::Set(dx, IrExpr::Const(-1e-3 * nominal))],
            vec![],
        ));
    }

    /// Update `x -= dx` for each variable, then stop on convergence, fail on
    /// NaN, on overflow, or after too many iterations.
    fn newton_tail(
        &mut self,
        vars: &[(u32, u32, f64)],
        it: u32,
        bi: u32,
        restart: Option<&(u32, Vec<Stmt>)>,
    ) {
        let mut all_conv: Option<IrExpr> = None;
        let mut bad: Option<IrExpr> = None;
        for &(slot, dx, nominal) in vars {
            self.stmts.push(Stmt::Store(
                slot,
                bin(Op2::Sub, IrExpr::Load(slot), IrExpr::Local(dx)),
            ));
            let conv = converged(slot, dx, nominal, 1e-12);
            all_conv = Some(match all_conv {
                None => conv,
                Some(a) => bin(Op2::And, a, conv),
            });
            // NaN fails `x == x`; an infinite iterate would pass the
            // convergence test (inf <= inf) and must not.
            let nan = bin(
                Op2::Or,
                bin(Op2::Rel(RelOp::Ne), IrExpr::Load(slot), IrExpr::Load(slot)),
                bin(
                    Op2::Rel(RelOp::Gt),
                    abs(IrExpr::Load(slot)),
                    IrExpr::Const(1e300),
                ),
            );
            bad = Some(match bad {
                None => nan,
                Some(b) => bin(Op2::Or, b, nan),
            });
        }
        // With a restart, a diverged iterate (NaN, overflow) or too many
        // iterations start the second attempt; without, or on it, they fail.
        let retry_or = |fail: Stmt| match restart {
            Some((attempt, resets)) => {
                let mut again = resets.clone();
                again.push(Stmt::Set(*attempt, IrExpr::Const(1.0)));
                again.push(Stmt::Set(it, IrExpr::Const(0.0)));
                Stmt::If(
                    bin(
                        Op2::Rel(RelOp::Eq),
                        IrExpr::Local(*attempt),
                        IrExpr::Const(0.0),
                    ),
                    again,
                    vec![fail],
                )
            }
            None => fail,
        };
        if let Some(b) = bad {
            self.stmts.push(Stmt::If(
                b,
                vec![retry_or(Stmt::Return(status::encode(status::NAN, bi)))],
                vec![],
            ));
        }
        if let Some(cv) = all_conv {
            self.stmts.push(Stmt::If(cv, vec![Stmt::Break], vec![]));
        }
        self.stmts.push(Stmt::Set(
            it,
            bin(Op2::Add, IrExpr::Local(it), IrExpr::Const(1.0)),
        ));
        // After many iterations accept a looser tolerance (round-off limits the
        // last digits), else fail.
        let mut loose: Option<IrExpr> = None;
        for &(slot, dx, nominal) in vars {
            let conv = converged(slot, dx, nominal, 1e-8);
            loose = Some(match loose {
                None => conv,
                Some(a) => bin(Op2::And, a, conv),
            });
        }
        let limit = bin(
            Op2::Rel(RelOp::Ge),
            IrExpr::Local(it),
            IrExpr::Const(MAX_NEWTON),
        );
        let fail = retry_or(Stmt::Return(status::encode(status::NEWTON, bi)));
        self.stmts.push(Stmt::If(
            limit,
            vec![Stmt::If(
                loose.unwrap_or(IrExpr::Const(0.0)),
                vec![Stmt::Break],
                vec![fail],
            )],
            vec![],
        ));
    }

    /// For a nonlinear loop: a local that counts its attempts (set to 0
    /// here) and the statements that put the start values into the tearing
    /// variables that have one given by parameters, for a second attempt
    /// when Newton's method fails from the previous values (a contact that
    /// jumped to the next tooth pair, back where it started). `None` when
    /// no tearing variable has such a start value.
    fn restart_from_starts(&mut self, c: &Causal, tear: &[VarId]) -> Option<(u32, Vec<Stmt>)> {
        let l = self.sh.layout.clone();
        let starts: Vec<(VarId, ExprId)> = tear
            .iter()
            .filter_map(|&v| {
                let e = c.vars[v as usize].start?;
                let by_parameters =
                    c.arena
                        .reachable(&[e])
                        .iter()
                        .all(|&n| match c.arena.node(n) {
                            Node::Var(u) => {
                                matches!(c.roles[u as usize], Role::Parameter | Role::Constant)
                            }
                            Node::Time => false,
                            _ => true,
                        });
                by_parameters.then_some((v, e))
            })
            .collect();
        if starts.is_empty() {
            return None;
        }
        let resets = self.scoped(|s| {
            for &(v, e) in &starts {
                let x = s.expr(&c.arena, e);
                s.stmts.push(Stmt::Store(l.var(v), x));
            }
        });
        let attempt = self.local();
        self.stmts.push(Stmt::Set(attempt, IrExpr::Const(0.0)));
        Some((attempt, resets))
    }

    /// The total derivative of the residuals with respect to the tearing
    /// variables, through the inner assignments (forward mode, one tearing
    /// variable at a time). Returns the m x m matrix, row-major, in locals.
    fn block_jacobian(
        &mut self,
        a: &ExprArena,
        tear: &[VarId],
        inner: &[(VarId, ExprId, usize)],
        parts: &TornParts,
    ) -> Vec<u32> {
        let m = tear.len();
        let mut jac = vec![0u32; m * m];
        for j in 0..m {
            let mut tang: HashMap<VarId, IrExpr> = HashMap::default();
            for (k, &t) in tear.iter().enumerate() {
                tang.insert(t, IrExpr::Const(if k == j { 1.0 } else { 0.0 }));
            }
            for (k, (u, _, _)) in inner.iter().enumerate() {
                let terms: Vec<(IrExpr, IrExpr)> = parts.inner_partials[k]
                    .iter()
                    .map(|&(w, d)| {
                        (
                            self.expr(a, d),
                            tang.get(&w).cloned().unwrap_or(IrExpr::Const(0.0)),
                        )
                    })
                    .collect();
                let e = combine(terms);
                let t = self.local();
                self.stmts.push(Stmt::Set(t, e));
                tang.insert(*u, IrExpr::Local(t));
            }
            for i in 0..m {
                let terms: Vec<(IrExpr, IrExpr)> = parts.res_partials[i]
                    .iter()
                    .map(|&(w, d)| {
                        (
                            self.expr(a, d),
                            tang.get(&w).cloned().unwrap_or(IrExpr::Const(0.0)),
                        )
                    })
                    .collect();
                let e = combine(terms);
                let t = self.local();
                self.stmts.push(Stmt::Set(t, e));
                jac[i * m + j] = t;
            }
        }
        jac
    }

    /// Tangent code of one block: the directional derivative of its
    /// variables given the tangents of everything computed before it.
    fn block_tangent(
        &mut self,
        c: &mut Causal,
        b: &Block,
        bi: u32,
        tangents: &mut Tangents,
    ) -> Result<(), String> {
        let l = self.sh.layout.clone();
        match b {
            Block::Explicit { var, value, .. } => {
                let d = directional(c, *value, &[], bi, tangents)?;
                let e = self.expr(&c.arena, d);
                self.stmts.push(Stmt::Store(l.tan(*var), e));
            }
            Block::Implicit { var, residual, .. } => {
                let dout = directional(c, *residual, &[*var], bi, tangents)?;
                let dr = symbolic::partial(&mut c.arena, *residual, *var, &mut c.functions)?;
                let q = c.arena.div(dout, dr);
                let neg = c.arena.neg(q);
                let e = self.expr(&c.arena, neg);
                self.stmts.push(Stmt::Store(l.tan(*var), e));
            }
            Block::Torn {
                tear,
                inner,
                residuals,
                ..
            } => {
                let block: Vec<VarId> = tear
                    .iter()
                    .copied()
                    .chain(inner.iter().map(|x| x.0))
                    .collect();
                let parts = torn_parts(c, tear, inner, residuals)?;
                let inner_out: Vec<ExprId> = inner
                    .iter()
                    .map(|(_, e, _)| directional(c, *e, &block, bi, tangents))
                    .collect::<Result<_, _>>()?;
                let res_out: Vec<ExprId> = residuals
                    .iter()
                    .map(|(e, _)| directional(c, *e, &block, bi, tangents))
                    .collect::<Result<_, _>>()?;
                let a = &c.arena;
                let m = tear.len();
                // Tangents with the tearing variables held: the outside's effect.
                let mut tang: HashMap<VarId, IrExpr> =
                    tear.iter().map(|&t| (t, IrExpr::Const(0.0))).collect();
                for (k, (u, _, _)) in inner.iter().enumerate() {
                    let mut terms: Vec<(IrExpr, IrExpr)> = parts.inner_partials[k]
                        .iter()
                        .map(|&(w, d)| {
                            (
                                self.expr(a, d),
                                tang.get(&w).cloned().unwrap_or(IrExpr::Const(0.0)),
                            )
                        })
                        .collect();
                    terms.push((self.expr(a, inner_out[k]), IrExpr::Const(1.0)));
                    let e = combine(terms);
                    let t = self.local();
                    self.stmts.push(Stmt::Set(t, e));
                    tang.insert(*u, IrExpr::Local(t));
                }
                let r0: Vec<u32> = (0..m)
                    .map(|i| {
                        let mut terms: Vec<(IrExpr, IrExpr)> = parts.res_partials[i]
                            .iter()
                            .map(|&(w, d)| {
                                (
                                    self.expr(a, d),
                                    tang.get(&w).cloned().unwrap_or(IrExpr::Const(0.0)),
                                )
                            })
                            .collect();
                        terms.push((self.expr(a, res_out[i]), IrExpr::Const(1.0)));
                        let e = combine(terms);
                        let t = self.local();
                        self.stmts
                            .push(Stmt::Set(t, bin(Op2::Sub, IrExpr::Const(0.0), e)));
                        t
                    })
                    .collect();
                let jac = self.block_jacobian(a, tear, inner, &parts);
                let dt: Vec<u32> = (0..m).map(|_| self.local()).collect();
                if m == 1 {
                    self.stmts.push(Stmt::Set(
                        dt[0],
                        bin(Op2::Div, IrExpr::Local(r0[0]), IrExpr::Local(jac[0])),
                    ));
                } else {
                    self.stmts.push(Stmt::Solve {
                        n: m as u32,
                        a: jac,
                        b: r0,
                        x: dt.clone(),
                        fail: status::encode(status::SINGULAR, bi),
                    });
                }
                let mut tang: HashMap<VarId, IrExpr> = HashMap::default();
                for (k, &t) in tear.iter().enumerate() {
                    self.stmts.push(Stmt::Store(l.tan(t), IrExpr::Local(dt[k])));
                    tang.insert(t, IrExpr::Local(dt[k]));
                }
                for (k, (u, _, _)) in inner.iter().enumerate() {
                    let mut terms: Vec<(IrExpr, IrExpr)> = parts.inner_partials[k]
                        .iter()
                        .map(|&(w, d)| {
                            (
                                self.expr(a, d),
                                tang.get(&w).cloned().unwrap_or(IrExpr::Const(0.0)),
                            )
                        })
                        .collect();
                    terms.push((self.expr(a, inner_out[k]), IrExpr::Const(1.0)));
                    let e = combine(terms);
                    let t = self.local();
                    self.stmts.push(Stmt::Set(t, e));
                    self.stmts.push(Stmt::Store(l.tan(*u), IrExpr::Local(t)));
                    tang.insert(*u, IrExpr::Local(t));
                }
            }
        }
        Ok(())
    }
}

/// User functions (and the derivative functions made from them) as IR, and
/// the run-time checks in their bodies.
fn lower_functions(
    derivatives: &crate::symbolic::fndiff::Derivatives,
) -> (Vec<Func>, Vec<FunctionCheck>) {
    let fs = &derivatives.functions;
    let outs = fn_outputs(fs);
    let tangent_args = derivatives.tangent_args();
    let mut checks = Vec::new();
    let funcs = fs
        .iter()
        .map(|f| {
            let sh = Shared {
                layout: Layout::default(),
                rel_index: HashMap::default(),
                sample_index: HashMap::default(),
                fn_outputs: outs.clone(),
                tangent_args: tangent_args.clone(),
                function_frame: true,
            };
            let mut lw = Lowerer::new(&sh, &f.name);
            lw.check_base = checks.len() as u32;
            for &(slot, e) in &f.init {
                let x = lw.statement_expr(&f.arena, e);
                lw.stmts.push(Stmt::Store(slot, x));
            }
            let body = lw.fn_statements(&f.arena, &f.body, f);
            lw.stmts.extend(body);
            lw.stmts.push(Stmt::Return(status::OK));
            checks.append(&mut lw.checks);
            Func {
                name: f.name.clone(),
                frame_size: f.slots.len() as u32,
                n_locals: lw.n_locals,
                inputs: f.inputs.iter().flat_map(|r| r.clone()).collect(),
                outputs: f.outputs.iter().flat_map(|r| r.clone()).collect(),
                body: lw.stmts,
            }
        })
        .collect();
    (funcs, checks)
}

/// Whether call `call`'s arguments read any of `slots`.
fn call_reads(a: &ExprArena, call: u32, slots: &[u32]) -> bool {
    a.reachable(&a.calls[call as usize].args)
        .iter()
        .any(|&n| match a.node(n) {
            Node::Var(v) | Node::Pre(v) | Node::Der(v) => slots.contains(&v),
            Node::Elem { base, len, .. } => slots.iter().any(|&v| v >= base && v < base + len),
            _ => false,
        })
}

impl Lowerer<'_> {
    /// An expression of a function body: slots change between statements,
    /// so nothing is shared across statements.
    fn statement_expr(&mut self, a: &ExprArena, e: ExprId) -> IrExpr {
        self.memo.clear();
        self.calls.clear();
        self.expr(a, e)
    }

    /// A new check of the function body; its status index.
    fn add_check(
        &mut self,
        f: &flat::Function,
        span: crate::diag::Span,
        message: &str,
        label: &'static str,
    ) -> u32 {
        self.checks.push(FunctionCheck {
            function: f.name.clone(),
            span,
            message: message.to_string(),
            label,
        });
        self.check_base + self.checks.len() as u32 - 1
    }

    fn fn_statements(
        &mut self,
        a: &ExprArena,
        body: &[flat::FunctionStatement],
        f: &flat::Function,
    ) -> Vec<Stmt> {
        self.scoped(|s| {
            // The call whose outputs the last statements assigned, and the
            // slots stored since it ran: `(a, b) := f(x)` is one statement
            // per output, and f runs once while no slot its arguments read
            // has changed.
            let mut recent: Option<(u32, Vec<u32>)> = None;
            for st in body {
                if !matches!(st, flat::FunctionStatement::Assign { .. }) {
                    recent = None;
                }
                match st {
                    flat::FunctionStatement::Assign { slot, value } => {
                        let projection = match a.node(*value) {
                            Node::Call { call, output } => Some((call, output)),
                            _ => None,
                        };
                        let reused = match (projection, &recent) {
                            (Some((call, output)), Some((ran, stored)))
                                if call == *ran && !call_reads(a, call, stored) =>
                            {
                                s.calls
                                    .get(&call)
                                    .map(|outs| IrExpr::Local(outs[output as usize]))
                            }
                            _ => None,
                        };
                        let x = match reused {
                            Some(x) => x,
                            None => {
                                recent = projection.map(|(call, _)| (call, Vec::new()));
                                s.statement_expr(a, *value)
                            }
                        };
                        if let Some((_, stored)) = &mut recent {
                            stored.push(*slot);
                        }
                        s.stmts.push(Stmt::Store(*slot, x));
                    }
                    flat::FunctionStatement::AssignElem {
                        base,
                        len,
                        index,
                        value,
                    } => {
                        let i = s.statement_expr(a, *index);
                        let v = s.expr(a, *value);
                        s.stmts.push(Stmt::StoreElem {
                            base: *base,
                            len: *len,
                            index: i,
                            value: v,
                        });
                    }
                    flat::FunctionStatement::If { branches, else_ } => {
                        let mut tail = s.fn_statements(a, else_, f);
                        for (c, b) in branches.iter().rev() {
                            let cond = s.statement_expr(a, *c);
                            let then = s.fn_statements(a, b, f);
                            tail = vec![Stmt::If(cond, then, tail)];
                        }
                        s.stmts.extend(tail);
                    }
                    flat::FunctionStatement::While { cond, body, span } => {
                        let check = s.add_check(f, *span, "", "this condition stayed true");
                        let count = s.local();
                        s.stmts.push(Stmt::Set(count, IrExpr::Const(0.0)));
                        let inner = s.scoped(|t| {
                            let c = t.statement_expr(a, *cond);
                            t.stmts.push(Stmt::If(c, vec![], vec![Stmt::Break]));
                            t.stmts.push(Stmt::Set(
                                count,
                                bin(Op2::Add, IrExpr::Local(count), IrExpr::Const(1.0)),
                            ));
                            let runaway = bin(
                                Op2::Rel(RelOp::Gt),
                                IrExpr::Local(count),
                                IrExpr::Const(MAX_WHILE_ITERATIONS),
                            );
                            t.stmts.push(Stmt::If(
                                runaway,
                                vec![Stmt::Return(status::encode(status::LOOP, check))],
                                vec![],
                            ));
                            let b = t.fn_statements(a, body, f);
                            t.stmts.extend(b);
                        });
                        s.stmts.push(Stmt::Loop(inner));
                    }
                    flat::FunctionStatement::For {
                        slot,
                        start,
                        step,
                        stop,
                        body,
                    } => {
                        let x = s.statement_expr(a, *start);
                        s.stmts.push(Stmt::Store(*slot, x));
                        let st_l = s.local();
                        let x = s.statement_expr(a, *step);
                        s.stmts.push(Stmt::Set(st_l, x));
                        // A zero step would never end the loop.
                        let check = s.add_check(
                            f,
                            f.span,
                            "a for-loop range has step 0 (it would never end)",
                            "in this function",
                        );
                        let zero =
                            bin(Op2::Rel(RelOp::Eq), IrExpr::Local(st_l), IrExpr::Const(0.0));
                        s.stmts.push(Stmt::If(
                            zero,
                            vec![Stmt::Return(status::encode(status::FN_ASSERT, check))],
                            vec![],
                        ));
                        let sp_l = s.local();
                        let x = s.statement_expr(a, *stop);
                        s.stmts.push(Stmt::Set(sp_l, x));
                        let slot = *slot;
                        let inner = s.scoped(|t| {
                            // Stop when past the end in the direction of the step.
                            let up =
                                bin(Op2::Rel(RelOp::Gt), IrExpr::Local(st_l), IrExpr::Const(0.0));
                            let past_up =
                                bin(Op2::Rel(RelOp::Gt), IrExpr::Load(slot), IrExpr::Local(sp_l));
                            let past_down =
                                bin(Op2::Rel(RelOp::Lt), IrExpr::Load(slot), IrExpr::Local(sp_l));
                            let past = IrExpr::Select(
                                Box::new(up),
                                Box::new(past_up),
                                Box::new(past_down),
                            );
                            t.stmts.push(Stmt::If(past, vec![Stmt::Break], vec![]));
                            let b = t.fn_statements(a, body, f);
                            t.stmts.extend(b);
                            t.stmts.push(Stmt::Store(
                                slot,
                                bin(Op2::Add, IrExpr::Load(slot), IrExpr::Local(st_l)),
                            ));
                        });
                        s.stmts.push(Stmt::Loop(inner));
                    }
                    flat::FunctionStatement::Break => s.stmts.push(Stmt::Break),
                    flat::FunctionStatement::Return => s.stmts.push(Stmt::Return(status::OK)),
                    flat::FunctionStatement::Assert {
                        condition,
                        message,
                        span,
                    } => {
                        let check = s.add_check(f, *span, message, "this assert");
                        let c = s.statement_expr(a, *condition);
                        s.stmts.push(Stmt::If(
                            c,
                            vec![],
                            vec![Stmt::Return(status::encode(status::FN_ASSERT, check))],
                        ));
                    }
                }
            }
        })
    }
}
