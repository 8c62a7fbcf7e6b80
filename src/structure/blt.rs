//! Causalization: matching of the index-reduced system, block lower
//! triangular (BLT) ordering by Tarjan's strongly connected components, and
//! tearing of the algebraic loops.
//!
//! Each block computes its variables from those of earlier blocks. A block of
//! one equation linear in its variable is solved symbolically (explicit); a
//! nonlinear one is solved by Newton's method. A larger block (an algebraic
//! loop) is torn with a greedy heuristic in the manner of Cellier & Kofman
//! ("Continuous System Simulation", ch. 7): equations that can be solved
//! explicitly for one still-unknown variable are used in turn; when none is
//! left, the variable occurring in the most remaining equations becomes a
//! tearing variable. The loop is then a small system in the tearing variables
//! alone, marked linear when every equation is linear in the block's variables.

use super::matching::{self, Incidence};
use super::{Analysis, Role};
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::flat::{ExprArena, ExprId, Node, VarId};
use crate::symbolic;
use petgraph::graph::DiGraph;
use rustc_hash::FxHashMap as HashMap;

#[derive(Clone, Debug, serde::Serialize)]
pub enum Block {
    /// `var := value`.
    Explicit {
        var: VarId,
        value: ExprId,
        eq: usize,
    },
    /// One nonlinear equation `residual(var) = 0`, solved by Newton.
    Implicit {
        var: VarId,
        residual: ExprId,
        eq: usize,
    },
    /// An algebraic loop: the tearing variables are iterated; `inner`
    /// assignments, in order, compute the others; `residuals` must vanish.
    Torn {
        tear: Vec<VarId>,
        inner: Vec<(VarId, ExprId, usize)>,
        residuals: Vec<(ExprId, usize)>,
        linear: bool,
    },
}

impl Block {
    pub fn kind(&self) -> &'static str {
        match self {
            Block::Explicit { .. } => "explicit",
            Block::Implicit { .. } => "nonlinear equation",
            Block::Torn { linear: true, .. } => "linear loop",
            Block::Torn { linear: false, .. } => "nonlinear loop",
        }
    }
    /// Variables the block computes.
    pub fn vars(&self) -> Vec<VarId> {
        match self {
            Block::Explicit { var, .. } | Block::Implicit { var, .. } => vec![*var],
            Block::Torn { tear, inner, .. } => tear
                .iter()
                .copied()
                .chain(inner.iter().map(|x| x.0))
                .collect(),
        }
    }
    pub fn size(&self) -> usize {
        self.vars().len()
    }
}

/// Matches, sorts and tears the index-reduced system.
pub fn sort(s: &mut Analysis) -> Result<Vec<Block>, Diagnostic> {
    // Unknowns of the causal system: every unknown that is not a state.
    let cols: Vec<VarId> = (0..s.vars.len() as VarId)
        .filter(|&v| s.unknown[v as usize] && s.roles[v as usize] != Role::State)
        .collect();
    let col_of: HashMap<VarId, usize> = cols.iter().enumerate().map(|(i, &v)| (v, i)).collect();
    let neq = s.equations.len();
    let rows: Vec<Vec<usize>> = (0..neq)
        .map(|e| {
            s.eq_dependencies(e)
                .into_iter()
                .filter_map(|v| col_of.get(&v).copied())
                .collect()
        })
        .collect();
    let inc = Incidence {
        rows,
        ncols: cols.len(),
    };
    // Prefer to solve each equation for a variable whose coefficient does not
    // vanish at the start: `fx*ex + fy*ey = -f` with ey = 0 must determine fx.
    // The start point is evaluated when a coefficient needs it (a model
    // whose coefficients are all numbers, as the large grids and chains,
    // never does: it is a walk over every variable and equation).
    let timing = std::env::var_os("RMOC_TIMING").is_some();
    let c0 = std::time::Instant::now();
    let mut start = StartValues::default();
    let quality = solvability(s, &inc, &cols, &mut start);
    if timing {
        eprintln!(
            "    blt: solvability {:.2} ms (start point {})",
            c0.elapsed().as_secs_f64() * 1e3,
            if start.used_point {
                "used"
            } else {
                "not needed"
            }
        );
    }
    let good = Incidence {
        rows: inc
            .rows
            .iter()
            .enumerate()
            .map(|(e, r)| {
                r.iter()
                    .copied()
                    .filter(|&c| quality.of(e, c) > 0)
                    .collect()
            })
            .collect(),
        ncols: cols.len(),
    };
    let mut m = matching::maximum_matching(&good);
    if m.size() != neq {
        m = matching::maximum_matching(&inc);
    }
    if m.size() != neq || neq != cols.len() {
        return Err(singular(s, &inc, &m, &cols));
    }
    // Dependency graph: equation e depends on the equation matched to each
    // other variable it mentions.
    let mut g: DiGraph<usize, ()> = DiGraph::with_capacity(neq, neq * 3);
    let nodes: Vec<_> = (0..neq).map(|e| g.add_node(e)).collect();
    for e in 0..neq {
        for &c in &inc.rows[e] {
            let other = m.row_of[c].expect("perfect matching");
            if other != e {
                g.add_edge(nodes[e], nodes[other], ());
            }
        }
    }
    // Tarjan emits each component after the components it reaches, that is
    // after the equations it depends on: already an evaluation order.
    let sccs = petgraph::algo::tarjan_scc(&g);
    let mut blocks = Vec::with_capacity(sccs.len());
    for scc in sccs {
        let mut eqs: Vec<usize> = scc.iter().map(|&n| g[n]).collect();
        eqs.sort_unstable();
        let vars: Vec<VarId> = eqs
            .iter()
            .map(|&e| cols[m.col_of[e].expect("matched")])
            .collect();
        blocks.push(make_block(s, &eqs, &vars, &quality, &col_of)?);
    }
    Ok(blocks)
}

/// How well each (equation, unknown) pair can be solved: 2 for a constant
/// nonzero coefficient, 1 for a coefficient that is nonzero at the start
/// point (or a nonlinear occurrence), 0 for one that vanishes there. By
/// equation, sorted by unknown; a pair not rated (the one unknown of its
/// equation, or a coefficient that could not be formed) is 1.
struct Solvability {
    rows: Vec<Vec<(usize, u8)>>,
}

impl Solvability {
    fn of(&self, e: usize, c: usize) -> u8 {
        let rated = &self.rows[e];
        rated
            .binary_search_by_key(&c, |x| x.0)
            .map_or(1, |k| rated[k].1)
    }
}

fn solvability(
    s: &mut Analysis,
    inc: &Incidence,
    cols: &[VarId],
    start: &mut StartValues,
) -> Solvability {
    let mut q = Solvability {
        rows: vec![Vec::new(); inc.rows.len()],
    };
    for (e, row) in inc.rows.iter().enumerate() {
        if row.len() < 2 {
            continue;
        }
        let rated = &mut q.rows[e];
        rated.reserve_exact(row.len());
        let eq = s.equations[e].clone();
        let r = eq.residual(&mut s.arena);
        let in_calls = vars_in_call_arguments(&s.arena, r);
        for &c in row {
            let v = cols[c];
            // `v = expr` (or `expr = v`) without v on the other side: coefficient 1.
            let var = s.arena.var(v);
            if (eq.lhs == var && !symbolic::mentions(&s.arena, eq.rhs, v))
                || (eq.rhs == var && !symbolic::mentions(&s.arena, eq.lhs, v))
            {
                rated.push((c, 2));
                continue;
            }
            // Through a function call the coefficient is the derivative
            // function's value at the start point: one interpretation of the
            // body per (equation, unknown) pair, which for a call with many
            // arguments and outputs (a contact search over a curve and a
            // hundred circles) is millions of loop iterations. Such an
            // occurrence is nonlinear: usable, as below.
            if in_calls.contains(&v) {
                rated.push((c, 1));
                continue;
            }
            // Most equations are linear in each unknown along sums and
            // products by known factors: read the coefficient off the tree
            // and build the symbolic derivative only when that fails.
            let found = {
                let b: &Analysis = s;
                let mut at_start = |x: ExprId| start.eval(b, x).ok();
                linear_walk(
                    &b.arena,
                    r,
                    v,
                    &mut at_start,
                    &mut LINEAR_WALK_BUDGET.clone(),
                )
            };
            let coefficient = match found {
                Some(coef) => coef,
                None => {
                    let Ok(d) = symbolic::partial(&mut s.arena, r, v, &mut s.functions) else {
                        continue;
                    };
                    match s.arena.as_const(d) {
                        Some(x) => Coefficient::Literal(x),
                        None => Coefficient::Value(start.eval(s, d).unwrap_or(f64::NAN)),
                    }
                }
            };
            let quality = match coefficient {
                Coefficient::Absent => 0,
                Coefficient::Literal(x) if x != 0.0 => 2,
                Coefficient::Literal(_) => 0,
                Coefficient::Value(x) if x.abs() > 1e-12 => 1,
                Coefficient::Value(x) if x.is_finite() => 0,
                // Not finite (or not computable) at the start point: usable.
                Coefficient::Value(_) => 1,
            };
            rated.push((c, quality));
        }
        rated.sort_unstable_by_key(|x| x.0);
    }
    q
}

/// Expressions at the start point, each part evaluated when first needed
/// (the variables and equations it depends on do not change while the
/// blocks are sorted).
#[derive(Default)]
struct StartValues {
    /// The parameters bound to numbers (`parameter Real C = 1`) with their
    /// values, the other variables 0, and which they are: the start point
    /// gives those parameters the same values, without a walk over the
    /// whole model.
    literals: Option<(Vec<f64>, Vec<bool>)>,
    /// The calls made by these evaluations.
    calls: symbolic::eval::CallMemo,
    /// Whether an evaluation needed the start point.
    used_point: bool,
}

impl StartValues {
    /// `x` at the start point: from the parameters bound to numbers when it
    /// reads no other variable, else from the whole start point.
    fn eval(&mut self, s: &Analysis, x: ExprId) -> Result<f64, String> {
        let (numbers, known) = self.literals.get_or_insert_with(|| {
            let mut values = vec![0.0; s.vars.len()];
            let mut known = vec![false; s.vars.len()];
            for (v, var) in s.vars.iter().enumerate() {
                if var.is_parameter()
                    && let Some(x) = var.binding.or(var.start).and_then(|e| s.arena.as_const(e))
                {
                    values[v] = x;
                    known[v] = true;
                }
            }
            (values, known)
        });
        let values = if reads_only(&s.arena, x, known) {
            numbers.as_slice()
        } else {
            self.used_point = true;
            s.start()
        };
        let env = symbolic::eval::LeafValues {
            calls: Some(&self.calls),
            ..start_env(values, &s.functions.functions)
        };
        symbolic::eval::eval(&s.arena, x, &env)
    }
}

/// The variables that occur in `r` inside the arguments of a function call.
fn vars_in_call_arguments(arena: &ExprArena, r: ExprId) -> rustc_hash::FxHashSet<VarId> {
    let args: Vec<ExprId> = arena
        .reachable(&[r])
        .into_iter()
        .filter_map(|id| match arena.node(id) {
            Node::Call { call, .. } => Some(arena.calls[call as usize].args.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    if args.is_empty() {
        return Default::default();
    }
    arena
        .reachable(&args)
        .into_iter()
        .filter_map(|id| match arena.node(id) {
            Node::Var(v) => Some(v),
            _ => None,
        })
        .collect()
}

/// Whether `x` reads no variable but those `known`, and no derivative,
/// left limit, array element or function call.
fn reads_only(arena: &ExprArena, x: ExprId, known: &[bool]) -> bool {
    arena
        .reachable(&[x])
        .into_iter()
        .all(|id| match arena.node(id) {
            Node::Var(v) => known.get(v as usize).copied().unwrap_or(false),
            Node::Der(_) | Node::Pre(_) | Node::Elem { .. } | Node::Call { .. } => false,
            _ => true,
        })
}

/// Evaluation at the start point, as during initialization.
fn start_env<'a>(
    start: &'a [f64],
    functions: &'a [crate::flat::Function],
) -> symbolic::eval::LeafValues<'a> {
    symbolic::eval::LeafValues {
        values: start,
        pre: None,
        time: 0.0,
        functions,
        initial: true,
        calls: None,
    }
}

/// The coefficient of an unknown in an expression that is linear in it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Coefficient {
    /// The expression does not mention the unknown.
    Absent,
    /// A number written in the model (or folded from such numbers).
    Literal(f64),
    /// A coefficient made of parameters or other unknowns, evaluated at the
    /// start point.
    Value(f64),
}

/// The coefficient of `v` in `e` when `v` enters only through sums,
/// differences, negations, products with factors free of `v` and divisions by
/// them; `None` otherwise (the caller falls back to the symbolic derivative,
/// which agrees with this wherever both apply). The walk follows every path
/// of the expression DAG, so it gives up after [`LINEAR_WALK_BUDGET`] nodes
/// rather than explode on heavily shared (differentiated) expressions.
#[cfg(test)]
fn linear_coefficient(
    arena: &ExprArena,
    e: ExprId,
    v: VarId,
    env: &symbolic::eval::LeafValues,
) -> Option<Coefficient> {
    let mut value = |x: ExprId| symbolic::eval::eval(arena, x, env).ok();
    linear_walk(arena, e, v, &mut value, &mut LINEAR_WALK_BUDGET.clone())
}

const LINEAR_WALK_BUDGET: usize = 64;

/// `at_start` evaluates a factor free of `v` at the start point.
fn linear_walk(
    arena: &ExprArena,
    e: ExprId,
    v: VarId,
    at_start: &mut dyn FnMut(ExprId) -> Option<f64>,
    budget: &mut usize,
) -> Option<Coefficient> {
    use Coefficient::*;
    *budget = budget.checked_sub(1)?;
    // A factor's value, and whether it is a number of the model.
    fn value(
        arena: &ExprArena,
        x: ExprId,
        at_start: &mut dyn FnMut(ExprId) -> Option<f64>,
    ) -> Option<(bool, f64)> {
        match arena.as_const(x) {
            Some(c) => Some((true, c)),
            None => at_start(x).map(|y| (false, y)),
        }
    }
    let scale = |c: Coefficient, literal: bool, k: f64| match c {
        Absent => Absent,
        Literal(x) if literal => Literal(x * k),
        Literal(x) | Value(x) => Value(x * k),
    };
    let sum = |a: Coefficient, b: Coefficient| match (a, b) {
        (Absent, c) | (c, Absent) => c,
        (Literal(x), Literal(y)) => Literal(x + y),
        (Literal(x) | Value(x), Literal(y) | Value(y)) => Value(x + y),
    };
    Some(match arena.node(e) {
        Node::Var(x) if x == v => Literal(1.0),
        Node::Neg(a) => scale(linear_walk(arena, a, v, at_start, budget)?, true, -1.0),
        Node::Add(a, b) => sum(
            linear_walk(arena, a, v, at_start, budget)?,
            linear_walk(arena, b, v, at_start, budget)?,
        ),
        Node::Sub(a, b) => sum(
            linear_walk(arena, a, v, at_start, budget)?,
            scale(linear_walk(arena, b, v, at_start, budget)?, true, -1.0),
        ),
        Node::Mul(a, b) => match (
            linear_walk(arena, a, v, at_start, budget)?,
            linear_walk(arena, b, v, at_start, budget)?,
        ) {
            (Absent, Absent) => Absent,
            (Absent, c) => {
                let (literal, k) = value(arena, a, at_start)?;
                scale(c, literal, k)
            }
            (c, Absent) => {
                let (literal, k) = value(arena, b, at_start)?;
                scale(c, literal, k)
            }
            _ => return None,
        },
        Node::Div(a, b) => {
            if linear_walk(arena, b, v, at_start, budget)? != Absent {
                return None;
            }
            match linear_walk(arena, a, v, at_start, budget)? {
                Absent => Absent,
                c => {
                    let (literal, k) = value(arena, b, at_start)?;
                    scale(c, literal, 1.0 / k)
                }
            }
        }
        _ => {
            if symbolic::mentions(arena, e, v) {
                return None;
            }
            Absent
        }
    })
}

fn make_block(
    s: &mut Analysis,
    eqs: &[usize],
    vars: &[VarId],
    quality: &Solvability,
    col_of: &HashMap<VarId, usize>,
) -> Result<Block, Diagnostic> {
    if eqs.len() == 1 {
        let (e, v) = (eqs[0], vars[0]);
        let eq = s.equations[e].clone();
        if let Some(value) =
            symbolic::solve_equation(&mut s.arena, eq.lhs, eq.rhs, v, &mut s.functions)
        {
            return Ok(Block::Explicit {
                var: v,
                value,
                eq: e,
            });
        }
        if s.vars[v as usize].ty != crate::flat::ScalarType::Real {
            return Err(Diagnostic::error(
                DiagnosticKind::Type,
                eq.span,
                format!(
                    "`{}` is not a Real, so this equation must give it explicitly (`{} = ...`)",
                    s.vars[v as usize].name, s.vars[v as usize].name
                ),
            ));
        }
        let residual = eq.residual(&mut s.arena);
        return Ok(Block::Implicit {
            var: v,
            residual,
            eq: e,
        });
    }
    tear(s, eqs, vars, &|e, v| quality.of(e, col_of[&v]))
}

/// Greedy tearing of one algebraic loop.
fn tear(
    s: &mut Analysis,
    eqs: &[usize],
    vars: &[VarId],
    quality: &dyn Fn(usize, VarId) -> u8,
) -> Result<Block, Diagnostic> {
    let in_block: HashMap<VarId, usize> = vars.iter().enumerate().map(|(i, &v)| (v, i)).collect();
    let residuals: Vec<ExprId> = eqs
        .iter()
        .map(|&e| {
            let eq = s.equations[e].clone();
            eq.residual(&mut s.arena)
        })
        .collect();
    let occ: Vec<Vec<usize>> = eqs
        .iter()
        .map(|&e| {
            s.eq_dependencies(e)
                .into_iter()
                .filter_map(|v| in_block.get(&v).copied())
                .collect()
        })
        .collect();
    // Which (equation, variable) pairs can be solved explicitly, and whether
    // every equation is linear in the block's variables.
    let mut solvable: HashMap<(usize, usize), ExprId> = HashMap::default();
    let mut linear = true;
    for (k, &e) in eqs.iter().enumerate() {
        let eq = s.equations[e].clone();
        for &j in &occ[k] {
            let v = vars[j];
            let coeff = symbolic::partial(&mut s.arena, residuals[k], v, &mut s.functions).ok();
            let coeff_free =
                coeff.is_some_and(|c| vars.iter().all(|&w| !symbolic::mentions(&s.arena, c, w)));
            if !coeff_free {
                linear = false;
            }
            if quality(e, v) == 0 {
                // The coefficient vanishes at the start: dividing by it is unsafe.
                continue;
            }
            if let Some(sol) =
                symbolic::solve_equation(&mut s.arena, eq.lhs, eq.rhs, v, &mut s.functions)
            {
                // Prefer solutions that do not divide by an expression that may vanish:
                // a coefficient that depends on the block's own variables is not explicit.
                if vars
                    .iter()
                    .filter(|&&w| w != v)
                    .all(|&w| coeff.is_none_or(|c| !symbolic::mentions(&s.arena, c, w)))
                {
                    solvable.insert((k, j), sol);
                }
            }
        }
    }
    let n = eqs.len();
    let mut known = vec![false; n];
    let mut used = vec![false; n];
    let mut tear_vars = Vec::new();
    let mut inner = Vec::new();
    loop {
        // Causalize every equation with exactly one unknown left that it can solve.
        let mut progress = true;
        while progress {
            progress = false;
            for k in 0..n {
                if used[k] {
                    continue;
                }
                let unknown: Vec<usize> = occ[k].iter().copied().filter(|&j| !known[j]).collect();
                if unknown.len() == 1
                    && let Some(&sol) = solvable.get(&(k, unknown[0]))
                {
                    let j = unknown[0];
                    used[k] = true;
                    known[j] = true;
                    inner.push((vars[j], sol, eqs[k]));
                    progress = true;
                }
            }
        }
        if known.iter().all(|&x| x) {
            break;
        }
        // Tear the unknown that occurs in the most unused equations; a
        // Real one before a Boolean or Integer (a mixed system: Newton
        // iterates on the continuous unknowns, the discrete ones follow
        // from their equations).
        let mut count = vec![0usize; n];
        for k in 0..n {
            if !used[k] {
                for &j in &occ[k] {
                    if !known[j] {
                        count[j] += 1;
                    }
                }
            }
        }
        let best = (0..n)
            .filter(|&j| !known[j])
            .max_by_key(|&j| {
                (
                    s.vars[vars[j] as usize].ty == crate::flat::ScalarType::Real,
                    count[j],
                    s.integral[vars[j] as usize].is_none(),
                    std::cmp::Reverse(j),
                )
            })
            .expect("some variable is unknown");
        known[best] = true;
        tear_vars.push(vars[best]);
    }
    let res: Vec<(ExprId, usize)> = (0..n)
        .filter(|&k| !used[k])
        .map(|k| (residuals[k], eqs[k]))
        .collect();
    if res.len() != tear_vars.len() {
        // The greedy order failed to balance; iterate on every variable instead.
        return Ok(Block::Torn {
            tear: vars.to_vec(),
            inner: Vec::new(),
            residuals: (0..n).map(|k| (residuals[k], eqs[k])).collect(),
            linear,
        });
    }
    Ok(Block::Torn {
        tear: tear_vars,
        inner,
        residuals: res,
        linear,
    })
}

/// A diagnostic for a system that index reduction could not make regular.
fn singular(s: &Analysis, inc: &Incidence, m: &matching::Matching, cols: &[VarId]) -> Diagnostic {
    let dm = matching::dulmage_mendelsohn(inc, m);
    let names = |vs: &[usize]| {
        let v: Vec<String> = vs
            .iter()
            .take(6)
            .map(|&c| format!("`{}`", s.vars[cols[c] as usize].name))
            .collect();
        v.join(", ")
    };
    // Point at the first over-determining equation, or with none (an
    // under-determined part only) at the first undetermined variable.
    let span = match (dm.over_rows.first(), dm.under_cols.first()) {
        (Some(&e), _) => s.equations.get(e).map(|e| e.span),
        (None, Some(&c)) => Some(s.vars[cols[c] as usize].span),
        (None, None) => s.equations.first().map(|e| e.span),
    }
    .unwrap_or_default();
    let mut parts = Vec::new();
    if !dm.over_rows.is_empty() {
        parts.push(format!(
            "{} equation(s) over-determine {}",
            dm.over_rows.len(),
            names(&dm.over_cols)
        ));
    }
    if !dm.under_cols.is_empty() {
        parts.push(format!("{} remain undetermined", names(&dm.under_cols)));
    }
    let mut d = Diagnostic::error(
        DiagnosticKind::Singular,
        span,
        format!(
            "the model is structurally singular after index reduction: {}",
            parts.join(", and ")
        ),
    );
    for &e in dm.over_rows.iter().skip(1).take(4) {
        d = d.with_secondary(s.equations[e].span, "over-determining equation");
    }
    d.with_hint("check for redundant constraints (a loop of rigid joints) or a missing equation")
}

#[cfg(test)]
mod tests {
    use super::{Coefficient, linear_coefficient, start_env};
    use crate::flat::{ExprArena, Fn1, Node};

    /// Variables 0 (x, the unknown), 1 (y) and 2 (c); start values 1, 2, 3.
    fn check(build: impl Fn(&mut ExprArena) -> crate::flat::ExprId, expected: Option<Coefficient>) {
        let mut a = ExprArena::default();
        let e = build(&mut a);
        let start = [1.0, 2.0, 3.0];
        let env = start_env(&start, &[]);
        assert_eq!(linear_coefficient(&a, e, 0, &env), expected);
    }

    #[test]
    fn coefficients_of_linear_occurrences() {
        // 2 x - x/4 + y: literal 1.75.
        check(
            |a| {
                let (x, y, two, four) = (a.var(0), a.var(1), a.constant(2.0), a.constant(4.0));
                let t1 = a.mul(two, x);
                let t2 = a.div(x, four);
                let s = a.sub(t1, t2);
                a.add(s, y)
            },
            Some(Coefficient::Literal(1.75)),
        );
        // -(c x)/y: c and y known at the start point, -3/2.
        check(
            |a| {
                let (x, y, c) = (a.var(0), a.var(1), a.var(2));
                let cx = a.mul(c, x);
                let q = a.div(cx, y);
                a.neg(q)
            },
            Some(Coefficient::Value(-1.5)),
        );
        // x - x cancels to a literal zero: not solvable for x.
        check(
            |a| {
                let (x, y) = (a.var(0), a.var(1));
                let s = a.add(x, y);
                a.sub(s, x)
            },
            Some(Coefficient::Literal(0.0)),
        );
        // sin(y) does not mention x.
        check(
            |a| {
                let y = a.var(1);
                a.intern(Node::Call1(Fn1::Sin, y))
            },
            Some(Coefficient::Absent),
        );
    }

    #[test]
    fn nonlinear_occurrences_fall_back_to_the_derivative() {
        check(
            |a| {
                let (x, y) = (a.var(0), a.var(1));
                let xy = a.mul(x, y);
                a.mul(xy, x)
            },
            None,
        );
        check(
            |a| {
                let (x, y) = (a.var(0), a.var(1));
                a.div(y, x)
            },
            None,
        );
        check(
            |a| {
                let x = a.var(0);
                a.intern(Node::Call1(Fn1::Sin, x))
            },
            None,
        );
    }
}
