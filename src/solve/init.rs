//! Consistent initialization.
//!
//! States with `fixed = true` start at their start values. The other states
//! are the unknowns of the initial system, whose equations are the `initial
//! equation`s and `v = start(v)` for every other unknown with `fixed = true`
//! (a fixed variable that index reduction made a dummy state keeps its
//! initial condition this way). The residuals are evaluated through the
//! model's own blocks, so a dummy state or a constraint's derivative is
//! consistent by construction (for `gear_velocity_init.rmo`, `w1 = 3` is met
//! by solving for the state `w2`). A square system whose Jacobian pattern
//! (from the causal model, as the integrators' `JacobianPattern`) is sparse
//! is solved by Newton's method with a line search on a finite-difference
//! Jacobian, one residual evaluation per column colour, factored by sparse
//! LU: its cost grows linearly with the model, not with its square. Other
//! systems are solved by Levenberg-Marquardt with a dense finite-difference
//! Jacobian; when it has fewer equations than free states, the states it
//! does not determine keep their start values (as Modelica tools do, MLS
//! 8.6).

use super::jacobian::{Jacobian, JacobianPattern, LinearSolver, StateDeps};
use super::linalg::IterationMatrix;
use super::model::Entry;
use super::{Options, Run};
use crate::diag::Diagnostic;
use crate::jit::interp::solve_dense;
use crate::structure::Role;
use std::sync::Arc;

struct InitSystem {
    free: Vec<u32>,
    /// Fixed non-state variables: (variable, start value).
    fixed_algebraic: Vec<(u32, f64)>,
}

fn residuals(run: &mut Run, sys: &InitSystem, x: &[f64]) -> Result<Vec<f64>, Diagnostic> {
    let l = run.p.layout.clone();
    for (&s, &v) in sys.free.iter().zip(x) {
        run.frame.set_var(s, v);
    }
    run.call(Entry::Ode)?;
    run.call(Entry::InitialResiduals)?;
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
            c.roles[v as usize] == Role::Algebraic && var.fixed == Some(true) && var.start.is_some()
        })
        .map(|v| (v, run.frame.var(v)))
        .collect();
    let mut sys = InitSystem {
        free,
        fixed_algebraic,
    };
    let n_res = l.n_init_res as usize + sys.fixed_algebraic.len();
    if n_res > 0 {
        solve_initial(run, &mut sys, n_res, opts.linear_solver)?;
    } else {
        run.call(Entry::Ode)?;
    }
    run.event_iteration(true)?;
    run.frame.set_initial(false);
    // Conditions true at the start are not events; their rise is.
    run.settle_conditions()?;
    run.call(Entry::Ode)?;
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
        levenberg_marquardt(run, sys, n_res, &mut x)?;
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
            Some(s) => Diagnostic::error(s, msg).with_label(format!("{what} is not met")),
            None => Diagnostic::error_nospan(msg),
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
        let mut improved = false;
        for _ in 0..30 {
            let mut m = a.clone();
            for p in 0..n {
                m[p * n + p] += damping * (a[p * n + p] + 1e-12 * diag_max);
            }
            let mut dx = g.clone();
            if !solve_dense(n, &mut m, &mut dx) {
                damping = damping * 10.0 + 1e-12;
                continue;
            }
            let xn: Vec<f64> = x.iter().zip(&dx).map(|(a, b)| a + b).collect();
            match residuals(run, sys, &xn) {
                Ok(rv) if norm_inf(&rv) < rn => {
                    *x = xn;
                    r = rv;
                    damping = (damping * 0.1).max(1e-15);
                    improved = true;
                    break;
                }
                _ => damping = damping * 10.0 + 1e-12,
            }
        }
        if !improved {
            break;
        }
    }
    Ok(())
}

/// The pattern of the square initial system's Jacobian (residuals over
/// free states, diagonal included) when it should be solved sparse.
fn sparse_pattern(
    run: &Run,
    sys: &InitSystem,
    linear_solver: LinearSolver,
) -> Option<Arc<JacobianPattern>> {
    let c = run.c;
    let n = sys.free.len();
    if linear_solver == LinearSolver::Dense || n <= super::jacobian::SPARSE_ABOVE {
        return None;
    }
    let mut column_of = vec![None; c.states.len()];
    for (j, &s) in sys.free.iter().enumerate() {
        let k = c.states.iter().position(|&x| x == s)?;
        column_of[k] = Some(j);
    }
    let deps = StateDeps::of_model(c);
    let rows = c
        .initial_equations
        .iter()
        .map(|e| deps.of_exprs(c, &[e.lhs, e.rhs]))
        .chain(
            sys.fixed_algebraic
                .iter()
                .map(|&(v, _)| deps.of_var(v).map(|d| d.to_vec())),
        );
    let mut cols: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, row) in rows.enumerate() {
        match row {
            None => cols.iter_mut().for_each(|col| col.push(i)),
            Some(states) => {
                for k in states {
                    if let Some(j) = column_of[k as usize] {
                        cols[j].push(i);
                    }
                }
            }
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
        let mut xp = x.to_vec();
        for colour in &pattern.colours {
            for &j in colour {
                let j = j as usize;
                xp[j] = x[j] + 1e-7 * x[j].abs().max(1e-3);
            }
            let rp = residuals(run, sys, &xp)?;
            for &j in colour {
                let j = j as usize;
                let h = xp[j] - x[j];
                for k in pattern.column(j) {
                    let i = pattern.row_idx[k];
                    jac.set_entry(k, i, j, (rp[i] - r[i]) / h);
                }
                xp[j] = x[j];
            }
        }
        let Some(mut lu) = IterationMatrix::factor_jacobian(&jac) else {
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
