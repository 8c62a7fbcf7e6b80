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
use crate::jit::lower;
use crate::structure::Role;

struct InitSystem {
    free: Vec<u32>,
    /// Fixed non-state variables: (variable, start value).
    fixed_algebraic: Vec<(u32, f64)>,
}

fn residuals(run: &mut Run, sys: &InitSystem, x: &[f64]) -> Result<Vec<f64>, Diagnostic> {
    let l = run.p.layout.clone();
    for (&s, &v) in sys.free.iter().zip(x) {
        run.buf[l.var(s) as usize] = v;
    }
    run.call(Entry::Ode)?;
    run.call(Entry::InitialResiduals)?;
    let mut r: Vec<f64> = (0..l.n_init_res).map(|k| run.buf[(l.init_res + k) as usize]).collect();
    for &(v, s) in &sys.fixed_algebraic {
        r.push(run.buf[l.var(v) as usize] - s);
    }
    Ok(r)
}

fn norm_inf(v: &[f64]) -> f64 {
    v.iter().fold(0.0f64, |a, x| a.max(x.abs()))
}

pub(super) fn initialize(run: &mut Run, opts: &Options) -> Result<(), Diagnostic> {
    let l = run.p.layout.clone();
    let c = run.c;
    run.buf[lower::TIME as usize] = opts.start;
    run.buf[lower::INITIAL as usize] = 1.0;
    run.buf[lower::MODE as usize] = 1.0;
    for v in 0..l.n_vars {
        run.buf[l.pre(v) as usize] = run.buf[l.var(v) as usize];
    }
    let free: Vec<u32> = c.states.iter().copied().filter(|&s| c.vars[s as usize].fixed != Some(true)).collect();
    let fixed_algebraic: Vec<(u32, f64)> = (0..c.vars.len() as u32)
        .filter(|&v| {
            let var = &c.vars[v as usize];
            c.roles[v as usize] == Role::Algebraic && var.fixed == Some(true) && var.start.is_some()
        })
        .map(|v| (v, run.buf[l.var(v) as usize]))
        .collect();
    let mut sys = InitSystem { free, fixed_algebraic };
    let n_res = l.n_init_res as usize + sys.fixed_algebraic.len();
    if n_res > 0 {
        solve_initial(run, &mut sys, n_res)?;
    } else {
        run.call(Entry::Ode)?;
    }
    run.event_iteration(true)?;
    run.buf[lower::INITIAL as usize] = 0.0;
    // Conditions true at the start are not events; their rise is.
    run.buf[lower::MODE as usize] = 1.0;
    run.call(Entry::Ode)?;
    run.call(Entry::Conditions)?;
    run.cond_pre = (0..run.p.branches.len()).map(|b| run.buf[(l.cond + b as u32) as usize] != 0.0).collect();
    run.buf[lower::MODE as usize] = 0.0;
    run.call(Entry::Ode)?;
    Ok(())
}

fn solve_initial(run: &mut Run, sys: &mut InitSystem, n_res: usize) -> Result<(), Diagnostic> {
    let l = run.p.layout.clone();
    let c = run.c;
    let mut x: Vec<f64> = sys.free.iter().map(|&s| run.buf[l.var(s) as usize]).collect();
    let mut r = residuals(run, sys, &x)?;
    let jacobian = |run: &mut Run, sys: &InitSystem, x: &[f64], r: &[f64]| -> Result<Vec<Vec<f64>>, Diagnostic> {
        let mut cols = Vec::with_capacity(x.len());
        for j in 0..x.len() {
            let h = 1e-7 * x[j].abs().max(1e-3);
            let mut xp = x.to_vec();
            xp[j] += h;
            let rp = residuals(run, sys, &xp)?;
            cols.push(rp.iter().zip(r).map(|(a, b)| (a - b) / h).collect::<Vec<f64>>());
        }
        residuals(run, sys, x)?;
        Ok(cols)
    };
    // Choose which free states the initial equations determine: a greedy
    // rank-revealing pass over the Jacobian's columns.
    let cols = jacobian(run, sys, &x, &r)?;
    let mut basis: Vec<Vec<f64>> = Vec::new();
    let mut chosen: Vec<usize> = Vec::new();
    for (j, col) in cols.iter().enumerate() {
        if chosen.len() == n_res {
            break;
        }
        let n0 = col.iter().map(|v| v * v).sum::<f64>().sqrt();
        if n0 == 0.0 {
            continue;
        }
        let mut v = col.clone();
        for b in &basis {
            let d: f64 = v.iter().zip(b).map(|(p, q)| p * q).sum();
            for (p, q) in v.iter_mut().zip(b) {
                *p -= d * q;
            }
        }
        let nv = v.iter().map(|p| p * p).sum::<f64>().sqrt();
        if nv > 1e-8 * n0 {
            for p in v.iter_mut() {
                *p /= nv;
            }
            basis.push(v);
            chosen.push(j);
        }
    }
    if chosen.len() < n_res {
        let span = c.initial_equations.first().map(|e| e.span);
        let msg = format!(
            "the initial system is over-determined: {n_res} initial condition(s) but only {} of them can be met by the {} free state(s)",
            chosen.len(),
            sys.free.len()
        );
        let d = match span {
            Some(s) => Diagnostic::error(s, msg),
            None => Diagnostic::error_nospan(msg),
        };
        let fixed: Vec<String> = c
            .states
            .iter()
            .filter(|&&s| c.vars[s as usize].fixed == Some(true))
            .map(|&s| format!("`{}`", c.vars[s as usize].name))
            .collect();
        return Err(d
            .with_note(format!("states fixed by `fixed = true`: {}", if fixed.is_empty() { "none".into() } else { fixed.join(", ") }))
            .with_hint("remove an initial equation, or set fixed = false on a state it competes with"));
    }
    // Newton on the chosen states; the others keep their start values.
    let sel: Vec<usize> = chosen;
    for _ in 0..100 {
        let rn = norm_inf(&r);
        if rn <= 1e-12 {
            break;
        }
        let cols = jacobian(run, sys, &x, &r)?;
        let m = sel.len();
        // Least squares would also do; with as many chosen states as
        // residuals the system is square.
        let mut a = vec![0.0; m * m];
        for i in 0..m {
            for (k, &j) in sel.iter().enumerate() {
                a[i * m + k] = cols[j][i];
            }
        }
        let mut b: Vec<f64> = r.iter().map(|v| -v).collect();
        if !solve_dense(m, &mut a, &mut b) {
            break;
        }
        // Damped step: halve until the residual decreases.
        let mut lambda = 1.0;
        let mut improved = false;
        for _ in 0..30 {
            let mut xn = x.clone();
            for (k, &j) in sel.iter().enumerate() {
                xn[j] += lambda * b[k];
            }
            match residuals(run, sys, &xn) {
                Ok(rn_vec) if norm_inf(&rn_vec) < rn || norm_inf(&rn_vec) <= 1e-12 => {
                    x = xn;
                    r = rn_vec;
                    improved = true;
                    break;
                }
                _ => lambda *= 0.5,
            }
        }
        let step: f64 = sel.iter().enumerate().map(|(k, &j)| (lambda * b[k]).abs() / x[j].abs().max(1e-300)).fold(0.0, f64::max);
        if !improved || step < 1e-14 {
            break;
        }
    }
    r = residuals(run, sys, &x)?;
    let scale = x.iter().fold(1.0f64, |a, v| a.max(v.abs()));
    if norm_inf(&r) > 1e-8 * scale {
        let worst = r
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.abs().partial_cmp(&b.1.abs()).unwrap_or(std::cmp::Ordering::Equal))
            .map(|(k, _)| k)
            .unwrap_or(0);
        let span = if worst < c.initial_equations.len() {
            Some(c.initial_equations[worst].span)
        } else {
            sys.fixed_algebraic.get(worst - c.initial_equations.len()).map(|&(v, _)| c.vars[v as usize].span)
        };
        let msg = format!("initialization failed: the initial equations cannot be satisfied (largest residual {:e})", r[worst]);
        let d = match span {
            Some(s) => Diagnostic::error(s, msg).with_label("this initial condition is not met"),
            None => Diagnostic::error_nospan(msg),
        };
        let free: Vec<String> = sys.free.iter().map(|&s| format!("`{}`", c.vars[s as usize].name)).collect();
        return Err(d
            .with_note(format!("the free states were {}", free.join(", ")))
            .with_hint("give better start values, or check that the initial conditions are consistent"));
    }
    Ok(())
}
