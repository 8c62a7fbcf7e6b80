//! Consistent initialization.
//!
//! States with `fixed = true` start at their start values. The other states
//! are the unknowns of the initial system, whose equations are the `initial
//! equation`s and `v = start(v)` for every other unknown with `fixed = true`
//! (a fixed variable that index reduction made a dummy state keeps its
//! initial condition this way). The residuals are evaluated through the
//! model's own blocks, so a dummy state or a constraint's derivative is
//! consistent by construction (for `gear_velocity_init.rmo`, `w1 = 3` is met
//! by solving for the state `w2`). The system is solved by a damped Newton
//! method with a finite-difference Jacobian; when it has fewer equations
//! than free states, the states it does not determine keep their start values
//! (as Modelica tools do, MLS 8.6).

use super::model::Entry;
use super::{Options, Run};
use crate::diag::Diagnostic;
use crate::jit::interp::solve_dense;
use crate::structure::Role;

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
        solve_initial(run, &mut sys, n_res)?;
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
fn solve_initial(run: &mut Run, sys: &mut InitSystem, n_res: usize) -> Result<(), Diagnostic> {
    let c = run.c;
    let n = sys.free.len();
    let mut x: Vec<f64> = sys.free.iter().map(|&s| run.frame.var(s)).collect();
    let mut r = residuals(run, sys, &x)?;
    let scale = |x: &[f64]| x.iter().fold(1.0f64, |a, v| a.max(v.abs()));
    let mut damping = 1e-12;
    for _ in 0..100 {
        let rn = norm_inf(&r);
        if rn <= 1e-13 * scale(&x) || n == 0 {
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
                    x = xn;
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
    r = residuals(run, sys, &x)?;
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
