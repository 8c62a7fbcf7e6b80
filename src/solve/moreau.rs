//! Moreau-Jean time-stepping for models with unilateral contacts.
//!
//! The scheme of Moreau (1988) and Jean (1999) in its midpoint form (Acary &
//! Brogliato, *Numerical Methods for Nonsmooth Dynamical Systems*, 2008,
//! section 10.1; seed 004, eqs. 11-15): at every fixed step h
//!
//! 1. positions advance half a step with the old velocities:
//!    `q_m = q_k + h/2 q'(q_k, v_k)`;
//! 2. velocities take the smooth forces of the midpoint:
//!    `v_free = v_k + h v'(t_m, q_m, v_k)` (contact forces zero);
//! 3. the contacts whose gap is closed at the midpoint (`g(q_m) <= 0`) get
//!    impulses `P >= 0` from the linear complementarity problem of Newton's
//!    impact law, `0 <= U_{k+1} + e U_k  _|_  P >= 0`, with the gap rates
//!    `U = D P + U_free` ([`lcp::lemke`], projected Gauss-Seidel as the
//!    fallback);
//! 4. `v_{k+1} = v_free + (impulse response) P`, and positions finish the
//!    step with the new velocities: `q_{k+1} = q_m + h/2 q'(q_m, v_{k+1})`.
//!
//! The model is the compiled ODE of the index-reduced DAE, with each contact
//! force in a slot that the stepper writes. Nothing about the mechanics is
//! assumed beyond what the scheme needs, and it is found by probing: the
//! "velocities" are the states whose derivatives depend on a contact force
//! (they must depend on it affinely, as forces do in mechanics), the others
//! are "positions". The response of the velocities to a unit impulse of
//! contact j is the change of their derivatives under a unit force; the
//! Delassus matrix `D` (`W^T M^-1 W` of the textbook) is the response of
//! the gap rates to those velocity changes, which are linear in the
//! velocities. The gap rates come from the model: `unilateral(g, f, e)`
//! defines `der(g)` and index reduction differentiates the gap.

use super::lcp;
use super::model::Entry;
use super::{Options, Run};
use crate::diag::Diagnostic;
use crate::jit::lower;
use crate::structure::Role;

/// Counters of a Moreau run.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct ContactStats {
    pub steps: u64,
    /// Steps with at least one nonzero contact impulse.
    pub impact_steps: u64,
    pub lcp_solves: u64,
    pub lemke_pivots: u64,
    /// LCPs that Lemke's algorithm could not solve (projected Gauss-Seidel
    /// solved them).
    pub fallbacks: u64,
}

impl std::fmt::Display for ContactStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Moreau-Jean steps {}, steps with impulses {}, LCPs {} (Lemke pivots {}, Gauss-Seidel fallbacks {})",
            self.steps, self.impact_steps, self.lcp_solves, self.lemke_pivots, self.fallbacks
        )
    }
}

/// Where the model's values of one contact live in the buffer.
struct ContactSlots {
    gap: Slot,
    gap_rate: Slot,
    force: usize,
    restitution: usize,
}

/// A buffer slot, negated for a variable eliminated as `v = -w`.
#[derive(Clone, Copy)]
struct Slot {
    index: usize,
    negated: bool,
}

impl Slot {
    fn read(self, buf: &[f64]) -> f64 {
        if self.negated {
            -buf[self.index]
        } else {
            buf[self.index]
        }
    }
}

fn slot_of(run: &Run, v: u32) -> Slot {
    let c = run.c;
    if c.roles[v as usize] == Role::Alias
        && let Some(a) = c.aliases.iter().find(|a| a.var == v)
    {
        return Slot {
            index: run.l().var(a.of) as usize,
            negated: a.negated,
        };
    }
    Slot {
        index: run.l().var(v) as usize,
        negated: false,
    }
}

/// Integrates from the initialized state to `opts.stop` with fixed steps.
pub(super) fn integrate(run: &mut Run, opts: &Options, h: f64) -> Result<ContactStats, Diagnostic> {
    if !run.c.whens.is_empty() || run.l().n_samples > 0 {
        return Err(Diagnostic::error_nospan(
            "the Moreau time-stepper does not handle when-clauses or samples yet",
        )
        .with_hint(
            "remove the when-clauses, or model the discrete behaviour with unilateral contacts",
        ));
    }
    let contacts: Vec<ContactSlots> = run
        .c
        .contacts
        .iter()
        .map(|k| ContactSlots {
            gap: slot_of(run, k.gap),
            gap_rate: slot_of(run, k.gap_rate),
            force: run.l().var(k.force) as usize,
            restitution: run.l().var(k.restitution) as usize,
        })
        .collect();
    let (_, der_slots, _, _) = run.state_slots();
    let n = der_slots.len();
    let m = contacts.len();
    let mut stats = ContactStats::default();
    let span = opts.stop - opts.start;
    let steps = (span / h).ceil().max(1.0) as u64;
    let record_every = ((opts.interval / h).round() as u64).max(1);
    let mut t = opts.start;
    let mut x: Vec<f64> = run.states();
    let mut is_velocity = vec![false; n];
    let mut impulses = vec![0.0; m];
    // Evaluates the state derivatives at (t, x) with contact forces `forces`.
    let derivatives =
        |run: &mut Run, t: f64, x: &[f64], forces: &[f64]| -> Result<Vec<f64>, Diagnostic> {
            for (c, f) in contacts.iter().zip(forces) {
                run.buf[c.force] = *f;
            }
            run.set_states(t, x);
            run.buf[lower::MODE as usize] = 1.0;
            run.call(Entry::Ode)?;
            Ok(der_slots.iter().map(|&s| run.buf[s as usize]).collect())
        };
    let zero = vec![0.0; m];
    for k in 0..steps {
        let h_k = if k + 1 == steps { opts.stop - t } else { h };
        if h_k <= 0.0 {
            break;
        }
        let t_mid = t + h_k / 2.0;
        // 1. positions to the midpoint.
        let f0 = derivatives(run, t, &x, &zero)?;
        let mut x_mid = x.clone();
        // 2. smooth forces at the midpoint; probe which states feel contact
        //    forces (the velocities) and how.
        let mut response: Vec<Vec<f64>> = Vec::with_capacity(m);
        // Positions first need the velocity split, which the probe gives.
        for j in 0..m {
            let mut unit = zero.clone();
            unit[j] = 1.0;
            let fj = derivatives(run, t, &x, &unit)?;
            let bj: Vec<f64> = fj.iter().zip(&f0).map(|(a, b)| a - b).collect();
            for (i, b) in bj.iter().enumerate() {
                if *b != 0.0 {
                    is_velocity[i] = true;
                }
            }
            response.push(bj);
        }
        for i in 0..n {
            if !is_velocity[i] {
                x_mid[i] += h_k / 2.0 * f0[i];
            }
        }
        let f_mid = derivatives(run, t_mid, &x_mid, &zero)?;
        let gaps: Vec<f64> = contacts.iter().map(|c| c.gap.read(&run.buf)).collect();
        let rates_before: Vec<f64> = contacts.iter().map(|c| c.gap_rate.read(&run.buf)).collect();
        let restitution: Vec<f64> = contacts.iter().map(|c| run.buf[c.restitution]).collect();
        let mut x_next = x_mid.clone();
        for i in 0..n {
            if is_velocity[i] {
                x_next[i] = x[i] + h_k * f_mid[i];
            }
        }
        // 3. impulses of the contacts closed at the midpoint.
        let active: Vec<usize> = (0..m).filter(|&j| gaps[j] <= 0.0).collect();
        impulses.iter_mut().for_each(|p| *p = 0.0);
        if !active.is_empty() {
            // The velocity response to a unit impulse, at the midpoint.
            let mut b: Vec<Vec<f64>> = Vec::with_capacity(active.len());
            for &j in &active {
                let mut unit = zero.clone();
                unit[j] = 1.0;
                let fj = derivatives(run, t_mid, &x_mid, &unit)?;
                b.push(
                    fj.iter()
                        .zip(&f_mid)
                        .enumerate()
                        .map(|(i, (a, c))| if is_velocity[i] { a - c } else { 0.0 })
                        .collect(),
                );
            }
            let rates_at = |run: &mut Run, v: &[f64]| -> Result<Vec<f64>, Diagnostic> {
                derivatives(run, t_mid, v, &zero)?;
                Ok(active
                    .iter()
                    .map(|&j| contacts[j].gap_rate.read(&run.buf))
                    .collect())
            };
            let u_free = rates_at(run, &x_next)?;
            let na = active.len();
            let mut delassus = vec![0.0; na * na];
            for (c, bc) in b.iter().enumerate() {
                let shifted: Vec<f64> = x_next.iter().zip(bc).map(|(a, d)| a + d).collect();
                let u = rates_at(run, &shifted)?;
                for r in 0..na {
                    delassus[r * na + c] = u[r] - u_free[r];
                }
            }
            let q: Vec<f64> = active
                .iter()
                .enumerate()
                .map(|(r, &j)| u_free[r] + restitution[j] * rates_before[j].min(0.0))
                .collect();
            stats.lcp_solves += 1;
            let solution = match lcp::lemke(&delassus, &q) {
                Ok(s) => {
                    stats.lemke_pivots += s.pivots as u64;
                    s
                }
                Err(first) => {
                    stats.fallbacks += 1;
                    lcp::projected_gauss_seidel(&delassus, &q, 1.0, 1e-12, 10_000).map_err(|e| {
                        Diagnostic::error_nospan(format!(
                            "the contact problem at t = {t_mid} has no solution: {first}; {e}"
                        ))
                        .with_note(super::STOPPED)
                    })?
                }
            };
            if solution.z.iter().any(|&p| p > 0.0) {
                stats.impact_steps += 1;
            }
            for (r, &j) in active.iter().enumerate() {
                impulses[j] = solution.z[r];
                for i in 0..n {
                    x_next[i] += solution.z[r] * b[r][i];
                }
            }
        }
        // 4. positions finish the step with the new velocities.
        let t_next = t + h_k;
        let f_end = derivatives(
            run,
            t_next,
            &{
                let mut y = x_mid.clone();
                for i in 0..n {
                    if is_velocity[i] {
                        y[i] = x_next[i];
                    }
                }
                y
            },
            &zero,
        )?;
        for i in 0..n {
            if !is_velocity[i] {
                x_next[i] = x_mid[i] + h_k / 2.0 * f_end[i];
            }
        }
        // 5. The scheme keeps the constraints at velocity level only, so a
        //    gap can end a step at -O(h v). Project the positions back onto
        //    the admissible set along the mass-weighted gap gradients (the
        //    direct projection of Acary 2013, "Projected event-capturing
        //    time-stepping schemes"), velocities unchanged.
        project_positions(
            run,
            t_next,
            &mut x_next,
            &is_velocity,
            &contacts,
            &derivatives,
            &mut stats,
        )?;
        x = x_next;
        t = t_next;
        stats.steps += 1;
        if x.iter().any(|v| !v.is_finite()) {
            return Err(Diagnostic::error_nospan(format!(
                "the Moreau time-stepper produced a non-finite state at t = {t}"
            ))
            .with_hint("reduce --step")
            .with_note(super::STOPPED));
        }
        if (k + 1) % record_every == 0 || k + 1 == steps {
            // The contact forces of the output are the step's mean forces.
            let forces: Vec<f64> = impulses.iter().map(|p| p / h_k).collect();
            for (c, f) in contacts.iter().zip(&forces) {
                run.buf[c.force] = *f;
            }
            run.set_states(t, &x);
            run.buf[lower::MODE as usize] = 1.0;
            run.call(Entry::Ode)?;
            run.check_asserts()?;
            run.record(t);
        }
    }
    Ok(stats)
}

/// The state derivatives at (t, states) with the given contact forces.
type Derivatives<'a> = dyn Fn(&mut Run, f64, &[f64], &[f64]) -> Result<Vec<f64>, Diagnostic> + 'a;

/// Gaps below this (relative to 1 + the largest position) are projected.
const PROJECTION_TOL: f64 = 1e-13;

/// Moves the positions of `x` so that no gap is negative: the position
/// change per unit "impulse" of contact j is the change of the position
/// derivatives under the velocity response to that impulse, and the
/// multipliers solve the LCP `0 <= g + G mu _|_ mu >= 0` (a few Newton
/// passes for curved gaps).
fn project_positions(
    run: &mut Run,
    t: f64,
    x: &mut [f64],
    is_velocity: &[bool],
    contacts: &[ContactSlots],
    derivatives: &Derivatives,
    stats: &mut ContactStats,
) -> Result<(), Diagnostic> {
    let m = contacts.len();
    let n = x.len();
    let zero = vec![0.0; m];
    let scale = 1.0
        + x.iter()
            .zip(is_velocity)
            .filter(|(_, v)| !**v)
            .fold(0.0f64, |a, (x, _)| a.max(x.abs()));
    for _ in 0..4 {
        let f0 = derivatives(run, t, x, &zero)?;
        let gaps: Vec<f64> = contacts.iter().map(|c| c.gap.read(&run.buf)).collect();
        let violated: Vec<usize> = (0..m)
            .filter(|&j| gaps[j] < -PROJECTION_TOL * scale)
            .collect();
        if violated.is_empty() {
            return Ok(());
        }
        // Position direction of each violated contact.
        let mut dirs: Vec<Vec<f64>> = Vec::with_capacity(violated.len());
        for &j in &violated {
            let mut unit = zero.clone();
            unit[j] = 1.0;
            let fj = derivatives(run, t, x, &unit)?;
            let dv: Vec<f64> = (0..n)
                .map(|i| if is_velocity[i] { fj[i] - f0[i] } else { 0.0 })
                .collect();
            let shifted: Vec<f64> = x.iter().zip(&dv).map(|(a, b)| a + b).collect();
            let f_shift = derivatives(run, t, &shifted, &zero)?;
            dirs.push(
                (0..n)
                    .map(|i| {
                        if is_velocity[i] {
                            0.0
                        } else {
                            f_shift[i] - f0[i]
                        }
                    })
                    .collect(),
            );
        }
        // G[r][c]: gap r's change per unit multiplier of contact c (by a
        // small step along the direction; exact for gaps linear in q).
        let nv = violated.len();
        let mut g_matrix = vec![0.0; nv * nv];
        for (c, d) in dirs.iter().enumerate() {
            let size = d.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            if size == 0.0 {
                continue;
            }
            let s = 1e-7 * scale / size;
            let moved: Vec<f64> = x.iter().zip(d).map(|(a, b)| a + s * b).collect();
            derivatives(run, t, &moved, &zero)?;
            for (r, &j) in violated.iter().enumerate() {
                g_matrix[r * nv + c] = (contacts[j].gap.read(&run.buf) - gaps[j]) / s;
            }
        }
        let q: Vec<f64> = violated.iter().map(|&j| gaps[j]).collect();
        stats.lcp_solves += 1;
        let mu = match lcp::lemke(&g_matrix, &q) {
            Ok(s) => {
                stats.lemke_pivots += s.pivots as u64;
                s.z
            }
            Err(_) => {
                stats.fallbacks += 1;
                match lcp::projected_gauss_seidel(&g_matrix, &q, 1.0, 1e-12, 10_000) {
                    Ok(s) => s.z,
                    // A gap the positions cannot open (no mobility): leave it.
                    Err(_) => return Ok(()),
                }
            }
        };
        for (r, d) in dirs.iter().enumerate() {
            for i in 0..n {
                x[i] += mu[r] * d[i];
            }
        }
    }
    Ok(())
}
