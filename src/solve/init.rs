//! Consistent initialization.
//!
//! States with `fixed = true` start at their start values. The other states
//! are the unknowns of the initial system, whose equations are the `initial
//! equation`s and `v = start(v)` for every other unknown with `fixed = true`
//! (a fixed variable that index reduction made a dummy state keeps its
//! initial condition this way). For a discrete variable (Integer, Boolean)
//! `fixed = true` means `pre(v) = start` (MLS 8.6): the left limits start
//! at the start values and v follows its equations. The residuals are evaluated through the
//! model's own blocks, so a dummy state or a constraint's derivative is
//! consistent by construction (for `gear_velocity_init.rmo`, `w1 = 3` is met
//! by solving for the state `w2`). A square system whose Jacobian pattern
//! (from the causal model, as the integrators' `JacobianPattern`) is sparse
//! is solved by Newton's method with a line search on a finite-difference
//! Jacobian, one residual evaluation per column colour, factored by sparse
//! LU: its cost grows linearly with the model, not with its square. Other
//! systems (over- and under-determined ones, and square ones where Newton
//! failed) are solved by Levenberg-Marquardt: above 48 free states on the
//! sparse pattern of J^T J (coloured differences, sparse LU), else, or
//! where that pattern is too full, with a dense finite-difference Jacobian.
//! When there are fewer equations than free states, the states they do not
//! determine keep their start values (as Modelica tools do, MLS 8.6).

use super::jacobian::{Jacobian, JacobianPattern, LinearSolver, StateDeps};
use super::linalg::IterationMatrix;
use super::model::Entry;
use super::{Options, Run};
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::jit::interp::solve_dense;
use crate::structure::Role;
use std::sync::Arc;

struct InitSystem {
    free: Vec<u32>,
    /// Fixed non-state variables: (variable, start value).
    fixed_algebraic: Vec<(u32, f64)>,
    /// Initial equations `v = e` or `pre(v) = e` of a discrete `v` that
    /// `e` does not mention (an `initial algorithm`'s assignments, as the
    /// MSL's `Blocks.Sources.Pulse` counts its periods): (equation, v).
    assigned: Vec<(usize, u32)>,
}

fn residuals(run: &mut Run, sys: &InitSystem, x: &[f64]) -> Result<Vec<f64>, Diagnostic> {
    let l = run.p.layout.clone();
    for (&s, &v) in sys.free.iter().zip(x) {
        run.frame.set_var(s, v);
    }
    run.call(Entry::Ode)?;
    run.call(Entry::InitialResiduals)?;
    // The assignments, in as many passes as they are (one may use another),
    // their left limits with them.
    for _ in 0..sys.assigned.len() {
        let mut moved = false;
        for &(k, v) in &sys.assigned {
            let r = run.frame.initial_residual(k);
            if r != 0.0 && r.is_finite() {
                run.frame.set_var(v, run.frame.var(v) - r);
                run.frame.keep_pre(v);
                moved = true;
            }
        }
        if !moved {
            break;
        }
        run.call(Entry::Ode)?;
        run.call(Entry::InitialResiduals)?;
    }
    let mut r: Vec<f64> = (0..l.n_init_res)
        .map(|k| run.frame.initial_residual(k as usize))
        .collect();
    for &(v, s) in &sys.fixed_algebraic {
        r.push(run.frame.var(v) - s);
    }
    Ok(r)
}

fn norm_inf(v: &[f64]) -> f64 {
    v.iter().fold(0.0f64, |a, x| a.max(x.abs()))
}

pub(super) fn initialize(run: &mut Run, opts: &Options) -> Result<(), Diagnostic> {
    let l = run.p.layout.clone();
    let c = run.c;
    run.frame.set_time(opts.start);
    run.frame.set_initial(true);
    run.frame.set_event_mode(true);
    run.frame.keep_all_pre();
    let free: Vec<u32> = c
        .states
        .iter()
        .copied()
        .filter(|&s| c.vars[s as usize].fixed != Some(true))
        .collect();
    let fixed_algebraic: Vec<(u32, f64)> = (0..c.vars.len() as u32)
        .filter(|&v| {
            let var = &c.vars[v as usize];
            // A discrete variable's `fixed = true` fixes its left limit,
            // `pre(v) = start` (MLS 8.6): the frame's pre values are the
            // start values here; v itself follows its equations.
            c.roles[v as usize] == Role::Algebraic
                && var.ty == crate::flat::ScalarType::Real
                && var.fixed == Some(true)
                && var.start.is_some()
        })
        .map(|v| (v, run.frame.var(v)))
        .collect();
    let assigned: Vec<(usize, u32)> = c
        .initial_equations
        .iter()
        .enumerate()
        .filter_map(|(k, eq)| match c.arena.node(eq.lhs) {
            // `v = e`, or `pre(v) = e` (which sets the left limit, and v
            // with it until an event changes it).
            crate::flat::Node::Var(v) | crate::flat::Node::Pre(v)
                if run.is_discrete(v)
                    && !crate::symbolic::mentions(&c.arena, eq.rhs, v)
                    && !c.arena.any_node(eq.rhs, |n| n == crate::flat::Node::Pre(v)) =>
            {
                Some((k, v))
            }
            _ => None,
        })
        .collect();
    let mut sys = InitSystem {
        free,
        fixed_algebraic,
        assigned,
    };
    let n_res = l.n_init_res as usize + sys.fixed_algebraic.len();
    if sys.free.len() > n_res {
        warn_underspecified(run, &sys.free, n_res);
    }
    if n_res > 0 {
        solve_initial(run, &mut sys, n_res, opts.linear_solver).map_err(|d| {
            // A failed initialization shows the warning that may explain it.
            match run.results.warnings.last() {
                Some(w) if sys.free.len() > n_res => d.with_note(w.message.clone()),
                _ => d,
            }
        })?;
    } else {
        run.call(Entry::Ode)?;
    }
    run.event_iteration(true)?;
    run.frame.set_initial(false);
    // Conditions true at the start are not events; their rise is, and so
    // is the rise of one that was false while `initial()` was true (`when
    // not initial()` fires as initialization ends, MLS 8.6).
    if run.conditions_rise_after_initialization()? {
        run.event_iteration(false)?;
    } else {
        run.settle_conditions()?;
    }
    run.call(Entry::Ode)?;
    Ok(())
}

/// Initial conditions not fully specified (MLS 8.6): more states without
/// `fixed = true` than initial equations. The ones left over start at their
/// start values; the user is told which states were free.
fn warn_underspecified(run: &mut Run, free: &[u32], n_res: usize) {
    let c = run.c;
    let names = crate::diag::short_list(
        free.iter()
            .map(|&s| format!("{} (start {})", c.vars[s as usize].name, run.frame.var(s))),
    );
    let left = free.len() - n_res;
    let span = c.vars[free[0] as usize].span;
    let message = if n_res == 0 {
        format!(
            "initial conditions are not fully specified: {left} state(s) start at their start values without `fixed = true`"
        )
    } else {
        format!(
            "initial conditions are not fully specified: {} states without `fixed = true` and {n_res} initial condition(s); {left} state(s) keep their start values",
            free.len()
        )
    };
    run.results.warnings.push(
        Diagnostic::warning(DiagnosticKind::Initialization, span, message)
            .with_label("a state without `fixed = true` or an initial equation")
            .with_note(format!("states not fixed: {names}"))
            .with_hint("give each state `fixed = true` (or an initial equation) to say which values the simulation starts from"),
    );
}

/// Every parameter within its `min` and `max` (MLS 4.8.4: a value outside
/// them is an error), checked once the parameters are known. The error
/// names the parameter and points at the binding or modifier that set it,
/// or says it came from `-p` (`overridden`).
pub(super) fn check_parameter_ranges(
    run: &Run,
    overridden: &[(u32, f64)],
) -> Result<(), Diagnostic> {
    let c = run.c;
    let bounded: Vec<usize> = (0..c.vars.len())
        .filter(|&v| {
            c.vars[v].is_parameter() && (c.vars[v].min.is_some() || c.vars[v].max.is_some())
        })
        .collect();
    if bounded.is_empty() {
        return Ok(());
    }
    let values: Vec<f64> = (0..c.vars.len() as u32).map(|v| run.frame.var(v)).collect();
    let env = crate::symbolic::eval::LeafValues {
        values: &values,
        pre: None,
        time: 0.0,
        functions: &c.functions.functions,
        initial: true,
        calls: None,
    };
    for v in bounded {
        let var = &c.vars[v];
        let x = values[v];
        let bound = |e: Option<crate::flat::ExprId>| {
            e.and_then(|e| crate::symbolic::eval::eval(&c.arena, e, &env).ok())
        };
        let (min, max) = (bound(var.min), bound(var.max));
        // (Round-off of a computed value is not a violation.)
        let slack = |b: f64| 1e-12 * b.abs().max(1.0);
        let broken = match (min, max) {
            (Some(lo), _) if x < lo - slack(lo) => Some(("below its minimum", lo, "min")),
            (_, Some(hi)) if x > hi + slack(hi) => Some(("above its maximum", hi, "max")),
            _ => None,
        };
        let Some((what, limit, attr)) = broken else {
            continue;
        };
        let message = format!("parameter `{}` = {x} is {what} {limit}", var.name);
        let from_command_line = overridden.iter().any(|&(o, _)| o as usize == v);
        let d = match var.value_span {
            Some(at) if !from_command_line => {
                Diagnostic::error(DiagnosticKind::OutOfRange, at, message)
                    .with_label("the value is set here")
                    .with_secondary(var.span, format!("declared with {attr} = {limit}"))
            }
            _ => Diagnostic::error(DiagnosticKind::OutOfRange, var.span, message)
                .with_label(format!("declared with {attr} = {limit}"))
                .with_note(if from_command_line {
                    "the value was set on the command line (`-p`)"
                } else {
                    "the value is its type's default"
                }),
        };
        return Err(d.with_hint(format!(
            "give `{}` a value in [{}, {}] (MLS 4.8.4: min and max bound a parameter's value)",
            var.name,
            min.map_or("-inf".to_string(), |m| m.to_string()),
            max.map_or("inf".to_string(), |m| m.to_string())
        )));
    }
    Ok(())
}

/// Damped Gauss-Newton (Levenberg-Marquardt) on the free states: square,
/// under- and over-determined initial systems alike. Redundant conditions are
/// accepted when they are consistent (a body starting at rest with all its
/// velocities fixed, although a constraint ties them); the residuals are
/// checked at the end, so an inconsistent set is reported by name.
fn solve_initial(
    run: &mut Run,
    sys: &mut InitSystem,
    n_res: usize,
    linear_solver: LinearSolver,
) -> Result<(), Diagnostic> {
    let c = run.c;
    let n = sys.free.len();
    let mut x: Vec<f64> = sys.free.iter().map(|&s| run.frame.var(s)).collect();
    let sparse = match n_res == n {
        true => sparse_pattern(run, sys, linear_solver),
        false => None,
    };
    let converged = match sparse {
        Some(pattern) => sparse_newton(run, sys, &pattern, &mut x)?,
        None => false,
    };
    if !converged {
        let rows = match linear_solver {
            LinearSolver::Dense => None,
            _ if n <= super::jacobian::SPARSE_ABOVE => None,
            _ => residual_rows(run, sys),
        };
        let solved_sparse = match rows {
            Some(rows) => sparse_levenberg_marquardt(run, sys, &rows, linear_solver, &mut x)?,
            None => false,
        };
        if !solved_sparse {
            levenberg_marquardt(run, sys, n_res, &mut x)?;
        }
    }
    let scale = |x: &[f64]| x.iter().fold(1.0f64, |a, v| a.max(v.abs()));
    let r = residuals(run, sys, &x)?;
    if norm_inf(&r) > 1e-8 * scale(&x) {
        let worst = r
            .iter()
            .enumerate()
            .max_by(|a, b| {
                a.1.abs()
                    .partial_cmp(&b.1.abs())
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
            .map(|(k, _)| k)
            .unwrap_or(0);
        let span = if worst < c.initial_equations.len() {
            Some(c.initial_equations[worst].span)
        } else {
            sys.fixed_algebraic
                .get(worst - c.initial_equations.len())
                .map(|&(v, _)| c.vars[v as usize].span)
        };
        let what = if worst < c.initial_equations.len() {
            "this initial equation".to_string()
        } else {
            let v = sys.fixed_algebraic[worst - c.initial_equations.len()].0;
            format!(
                "`{}` = its start value (fixed = true)",
                c.vars[v as usize].name
            )
        };
        let msg = format!(
            "initialization failed: the initial conditions cannot all be met (largest residual {:e})",
            r[worst]
        );
        let d = match span {
            Some(s) => Diagnostic::error(DiagnosticKind::Initialization, s, msg)
                .with_label(format!("{what} is not met")),
            None => Diagnostic::error_nospan(DiagnosticKind::Initialization, msg),
        };
        let free: Vec<String> = sys
            .free
            .iter()
            .map(|&s| format!("`{}`", c.vars[s as usize].name))
            .collect();
        let fixed: Vec<String> = c
            .states
            .iter()
            .filter(|&&s| c.vars[s as usize].fixed == Some(true))
            .map(|&s| format!("`{}`", c.vars[s as usize].name))
            .collect();
        return Err(d
            .with_note(format!("free states: {}", if free.is_empty() { "none".into() } else { free.join(", ") }))
            .with_note(format!("states fixed by `fixed = true`: {}", if fixed.is_empty() { "none".into() } else { fixed.join(", ") }))
            .with_hint("the initial conditions contradict each other or the model; remove one, or set fixed = false on a state it competes with"));
    }
    Ok(())
}

/// Damped Gauss-Newton (Levenberg-Marquardt) from `x` on a dense
/// finite-difference Jacobian, for any shape of system.
fn levenberg_marquardt(
    run: &mut Run,
    sys: &InitSystem,
    n_res: usize,
    x: &mut Vec<f64>,
) -> Result<(), Diagnostic> {
    let n = sys.free.len();
    let scale = |x: &[f64]| x.iter().fold(1.0f64, |a, v| a.max(v.abs()));
    let mut r = residuals(run, sys, x)?;
    let mut damping = 1e-12;
    for _ in 0..100 {
        let rn = norm_inf(&r);
        if rn <= 1e-13 * scale(x) || n == 0 {
            break;
        }
        // Finite-difference Jacobian, column by column.
        let mut jac = vec![vec![0.0; n]; n_res];
        for j in 0..n {
            let h = 1e-7 * x[j].abs().max(1e-3);
            let mut xp = x.clone();
            xp[j] += h;
            let rp = residuals(run, sys, &xp)?;
            for i in 0..n_res {
                jac[i][j] = (rp[i] - r[i]) / h;
            }
        }
        // (J^T J + damping diag) dx = -J^T r
        let mut a = vec![0.0; n * n];
        let mut g = vec![0.0; n];
        for i in 0..n_res {
            for p in 0..n {
                g[p] -= jac[i][p] * r[i];
                for q in 0..n {
                    a[p * n + q] += jac[i][p] * jac[i][q];
                }
            }
        }
        let diag_max = (0..n)
            .map(|p| a[p * n + p])
            .fold(0.0f64, f64::max)
            .max(1e-300);
        let solve = |damping: f64| {
            let mut m = a.clone();
            for p in 0..n {
                m[p * n + p] += damping * (a[p * n + p] + 1e-12 * diag_max);
            }
            let mut dx = g.clone();
            solve_dense(n, &mut m, &mut dx).then_some(dx)
        };
        if !damped_step(run, sys, x, &mut r, &mut damping, solve)? {
            break;
        }
    }
    Ok(())
}

/// Forward differences of the residuals at `x`, one evaluation per colour
/// of `pattern` (its columns of one colour share no residual): `store(j,
/// perturbed residuals, increment)` for each free state j.
fn coloured_differences(
    run: &mut Run,
    sys: &InitSystem,
    pattern: &JacobianPattern,
    x: &[f64],
    mut store: impl FnMut(usize, &[f64], f64),
) -> Result<(), Diagnostic> {
    let mut xp = x.to_vec();
    for colour in &pattern.colours {
        for &j in colour {
            let j = j as usize;
            xp[j] = x[j] + 1e-7 * x[j].abs().max(1e-3);
        }
        let rp = residuals(run, sys, &xp)?;
        for &j in colour {
            let j = j as usize;
            store(j, &rp, xp[j] - x[j]);
            xp[j] = x[j];
        }
    }
    Ok(())
}

/// One step of Levenberg-Marquardt from `x` (residuals `r`): the damping
/// grows tenfold until `solve(damping)` gives a step that lowers the
/// largest residual (at most 30 tries), then shrinks tenfold. Returns
/// whether it found one; `x` and `r` are the new point.
fn damped_step(
    run: &mut Run,
    sys: &InitSystem,
    x: &mut Vec<f64>,
    r: &mut Vec<f64>,
    damping: &mut f64,
    mut solve: impl FnMut(f64) -> Option<Vec<f64>>,
) -> Result<bool, Diagnostic> {
    let rn = norm_inf(r);
    for _ in 0..30 {
        let Some(dx) = solve(*damping) else {
            *damping = *damping * 10.0 + 1e-12;
            continue;
        };
        let xn: Vec<f64> = x.iter().zip(&dx).map(|(a, b)| a + b).collect();
        match residuals(run, sys, &xn) {
            Ok(rv) if norm_inf(&rv) < rn => {
                *x = xn;
                *r = rv;
                *damping = (*damping * 0.1).max(1e-15);
                return Ok(true);
            }
            _ => *damping = *damping * 10.0 + 1e-12,
        }
    }
    Ok(false)
}

/// Levenberg-Marquardt on the sparse pattern, for systems of any shape
/// (the square ones whose Newton iteration failed, and the over- and
/// under-determined ones): the normal equations (J^T J + damping diag) dx
/// = -J^T r on the pattern of J^T J (two free states are coupled when a
/// residual reads both), J by finite differences over the colours of that
/// pattern (columns of one colour share no residual), factored by sparse
/// LU. Returns false, leaving `x` as it was, when the pattern is too full
/// for sparse LU to pay; otherwise `x` is the best point reached.
fn sparse_levenberg_marquardt(
    run: &mut Run,
    sys: &InitSystem,
    rows: &[Vec<usize>],
    linear_solver: LinearSolver,
    x: &mut Vec<f64>,
) -> Result<bool, Diagnostic> {
    let n = x.len();
    // The pattern of J^T J, diagonal included.
    let mut normal_cols: Vec<Vec<usize>> = (0..n).map(|j| vec![j]).collect();
    let mut pairs = 0usize;
    for row in rows {
        pairs += row.len() * row.len();
        if pairs > 50_000_000 {
            return Ok(false);
        }
        for &q in row {
            normal_cols[q].extend_from_slice(row);
        }
    }
    for col in normal_cols.iter_mut() {
        col.sort_unstable();
        col.dedup();
    }
    let pattern = Arc::new(JacobianPattern::from_columns(n, normal_cols));
    if !linear_solver.sparse_for(Some(&pattern)) {
        return Ok(false);
    }
    // J's entries by column: (residual, position in its row).
    let mut by_column: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
    for (i, row) in rows.iter().enumerate() {
        for (k, &j) in row.iter().enumerate() {
            by_column[j].push((i, k));
        }
    }
    // Where J[i, p] J[i, q] goes in the pattern's values, for each
    // residual's pairs in order.
    let position = |p: usize, q: usize| -> usize {
        let col = pattern.column(q);
        let at = pattern.row_idx[col.clone()].binary_search(&p).unwrap_or(0);
        col.start + at
    };
    let slots: Vec<Vec<usize>> = rows
        .iter()
        .map(|row| {
            row.iter()
                .flat_map(|&q| row.iter().map(move |&p| (p, q)))
                .map(|(p, q)| position(p, q))
                .collect()
        })
        .collect();
    let diagonal: Vec<usize> = (0..n).map(|j| position(j, j)).collect();
    let scale = |x: &[f64]| x.iter().fold(1.0f64, |a, v| a.max(v.abs()));
    let mut r = residuals(run, sys, x)?;
    let mut jv: Vec<Vec<f64>> = rows.iter().map(|row| vec![0.0; row.len()]).collect();
    let mut work = Vec::new();
    let mut damping = 1e-12;
    for _ in 0..100 {
        let rn = norm_inf(&r);
        if rn <= 1e-13 * scale(x) || n == 0 {
            break;
        }
        coloured_differences(run, sys, &pattern, x, |j, rp, h| {
            for &(i, k) in &by_column[j] {
                jv[i][k] = (rp[i] - r[i]) / h;
            }
        })?;
        let mut normal = vec![0.0; pattern.nnz()];
        let mut g = vec![0.0; n];
        for (i, row) in rows.iter().enumerate() {
            let w = row.len();
            for (b, &q) in row.iter().enumerate() {
                g[q] -= jv[i][b] * r[i];
                for a in 0..w {
                    normal[slots[i][b * w + a]] += jv[i][a] * jv[i][b];
                }
            }
        }
        let diag_max = diagonal
            .iter()
            .map(|&k| normal[k])
            .fold(0.0f64, f64::max)
            .max(1e-300);
        let solve = |damping: f64| {
            let mut values = normal.clone();
            for &k in &diagonal {
                values[k] += damping * (normal[k] + 1e-12 * diag_max);
            }
            let m = Jacobian::Sparse {
                pattern: pattern.clone(),
                values,
            };
            let mut lu = IterationMatrix::factor_jacobian(&m, None)?;
            let mut dx = g.clone();
            lu.solve(&mut dx, &mut work);
            Some(dx)
        };
        if !damped_step(run, sys, x, &mut r, &mut damping, solve)? {
            break;
        }
    }
    Ok(true)
}

/// For each residual of the initial system, the free states (indices into
/// `sys.free`) it reads, from the causal model; `None` if one reads all.
fn residual_rows(run: &Run, sys: &InitSystem) -> Option<Vec<Vec<usize>>> {
    let c = run.c;
    let mut column_of = vec![None; c.states.len()];
    for (j, &s) in sys.free.iter().enumerate() {
        let k = c.states.iter().position(|&x| x == s)?;
        column_of[k] = Some(j);
    }
    let deps = StateDeps::of_model(c);
    c.initial_equations
        .iter()
        .map(|e| deps.of_exprs(c, &[e.lhs, e.rhs]))
        .chain(
            sys.fixed_algebraic
                .iter()
                .map(|&(v, _)| deps.of_var(v).map(|d| d.to_vec())),
        )
        .map(|row| {
            let mut cols: Vec<usize> = row?.iter().filter_map(|&k| column_of[k as usize]).collect();
            cols.sort_unstable();
            cols.dedup();
            Some(cols)
        })
        .collect()
}

/// The pattern of the square initial system's Jacobian (residuals over
/// free states, diagonal included) when it should be solved sparse.
fn sparse_pattern(
    run: &Run,
    sys: &InitSystem,
    linear_solver: LinearSolver,
) -> Option<Arc<JacobianPattern>> {
    let n = sys.free.len();
    if linear_solver == LinearSolver::Dense || n <= super::jacobian::SPARSE_ABOVE {
        return None;
    }
    let rows = residual_rows(run, sys)?;
    let mut cols: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, row) in rows.iter().enumerate() {
        for &j in row {
            cols[j].push(i);
        }
    }
    for (j, col) in cols.iter_mut().enumerate() {
        col.push(j);
        col.sort_unstable();
        col.dedup();
    }
    let pattern = JacobianPattern::from_columns(n, cols);
    linear_solver
        .sparse_for(Some(&pattern))
        .then(|| Arc::new(pattern))
}

/// Newton's method with a backtracking line search on the square system,
/// the Jacobian by finite differences over the pattern's column colours
/// and factored by sparse LU. Returns whether it converged; `x` holds the
/// best point reached either way.
fn sparse_newton(
    run: &mut Run,
    sys: &InitSystem,
    pattern: &Arc<JacobianPattern>,
    x: &mut [f64],
) -> Result<bool, Diagnostic> {
    let n = x.len();
    let scale = |x: &[f64]| x.iter().fold(1.0f64, |a, v| a.max(v.abs()));
    let mut r = residuals(run, sys, x)?;
    let mut jac = Jacobian::new(n, Some(pattern.clone()), true);
    let mut work = Vec::new();
    for _ in 0..50 {
        let rn = norm_inf(&r);
        if rn <= 1e-13 * scale(x) {
            return Ok(true);
        }
        coloured_differences(run, sys, pattern, x, |j, rp, h| {
            for k in pattern.column(j) {
                let i = pattern.row_idx[k];
                jac.set_entry(k, i, j, (rp[i] - r[i]) / h);
            }
        })?;
        let Some(mut lu) = IterationMatrix::factor_jacobian(&jac, None) else {
            return Ok(false);
        };
        let mut dx: Vec<f64> = r.iter().map(|v| -v).collect();
        lu.solve(&mut dx, &mut work);
        let mut lambda = 1.0;
        let mut improved = false;
        for _ in 0..30 {
            let xn: Vec<f64> = x.iter().zip(&dx).map(|(a, d)| a + lambda * d).collect();
            if let Ok(rv) = residuals(run, sys, &xn)
                && norm_inf(&rv) < rn
            {
                x.copy_from_slice(&xn);
                r = rv;
                improved = true;
                break;
            }
            lambda *= 0.5;
        }
        if !improved {
            return Ok(false);
        }
    }
    Ok(norm_inf(&r) <= 1e-13 * scale(x))
}
