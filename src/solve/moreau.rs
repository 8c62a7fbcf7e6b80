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

/// Where a friction law's values live, and the normal contact it belongs to.
struct FrictionSlots {
    contact: usize,
    slip: Slot,
    force: usize,
    mu: usize,
    restitution: usize,
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
    let mut frictions: Vec<FrictionSlots> = Vec::new();
    for fr in &run.c.frictions {
        let Some(contact) = run
            .c
            .contacts
            .iter()
            .position(|k| k.force == fr.normal_force)
        else {
            return Err(Diagnostic::error(
                fr.span,
                format!(
                    "`{}` is not the force of a `unilateral` contact",
                    run.c.vars[fr.normal_force as usize].name
                ),
            )
            .with_hint(
                "friction acts at a unilateral contact: pass the force of its `unilateral(...)`",
            ));
        };
        frictions.push(FrictionSlots {
            contact,
            slip: slot_of(run, fr.slip),
            force: run.l().var(fr.force) as usize,
            mu: run.l().var(fr.mu) as usize,
            restitution: run.l().var(fr.restitution) as usize,
        });
    }
    // Every force slot the stepper writes: normal forces first.
    let force_slots: Vec<usize> = contacts
        .iter()
        .map(|c| c.force)
        .chain(frictions.iter().map(|f| f.force))
        .collect();
    let (_, der_slots, _, _) = run.state_slots();
    let n = der_slots.len();
    let m = force_slots.len();
    let mut stats = ContactStats::default();
    let span = opts.stop - opts.start;
    let steps = (span / h).ceil().max(1.0) as u64;
    let record_every = ((opts.interval / h).round() as u64).max(1);
    let mut t = opts.start;
    let mut x: Vec<f64> = run.states();
    let mut is_velocity = vec![false; n];
    let mut impulses = vec![0.0; m];
    let mut closed_before = vec![false; contacts.len()];
    // The state derivatives at (t, x) with the forces `forces`.
    let derivatives =
        |run: &mut Run, t: f64, x: &[f64], forces: &[f64]| -> Result<Vec<f64>, Diagnostic> {
            for (&slot, f) in force_slots.iter().zip(forces) {
                run.buf[slot] = *f;
            }
            run.set_states(t, x);
            run.buf[lower::MODE as usize] = 1.0;
            run.call(Entry::Ode)?;
            Ok(der_slots.iter().map(|&s| run.buf[s as usize]).collect())
        };
    // The change of the velocity derivatives under a unit force `j`.
    let unit_response = |run: &mut Run,
                         t: f64,
                         x: &[f64],
                         base: &[f64],
                         j: usize,
                         is_velocity: &[bool]|
     -> Result<Vec<f64>, Diagnostic> {
        let mut unit = vec![0.0; m];
        unit[j] = 1.0;
        let fj = derivatives(run, t, x, &unit)?;
        Ok((0..n)
            .map(|i| if is_velocity[i] { fj[i] - base[i] } else { 0.0 })
            .collect())
    };
    let zero = vec![0.0; m];
    for k in 0..steps {
        let h_k = if k + 1 == steps { opts.stop - t } else { h };
        if h_k <= 0.0 {
            break;
        }
        let t_mid = t + h_k / 2.0;
        // Which states feel contact forces: the velocities.
        let f0 = derivatives(run, t, &x, &zero)?;
        let all = vec![true; n];
        for j in 0..m {
            for (i, b) in unit_response(run, t, &x, &f0, j, &all)?.iter().enumerate() {
                if *b != 0.0 {
                    is_velocity[i] = true;
                }
            }
        }
        // 1. positions to the midpoint.
        let mut x_mid = x.clone();
        for i in 0..n {
            if !is_velocity[i] {
                x_mid[i] += h_k / 2.0 * f0[i];
            }
        }
        // 2. smooth forces at the midpoint.
        let f_mid = derivatives(run, t_mid, &x_mid, &zero)?;
        let gaps: Vec<f64> = contacts.iter().map(|c| c.gap.read(&run.buf)).collect();
        let rates_before: Vec<f64> = contacts.iter().map(|c| c.gap_rate.read(&run.buf)).collect();
        let slips_before: Vec<f64> = frictions.iter().map(|f| f.slip.read(&run.buf)).collect();
        let mut x_next = x_mid.clone();
        for i in 0..n {
            if is_velocity[i] {
                x_next[i] = x[i] + h_k * f_mid[i];
            }
        }
        // 3. impulses of the contacts closed at the midpoint.
        let active: Vec<usize> = (0..contacts.len()).filter(|&j| gaps[j] <= 0.0).collect();
        let active_friction: Vec<usize> = (0..frictions.len())
            .filter(|&s| active.contains(&frictions[s].contact))
            .collect();
        impulses.iter_mut().for_each(|p| *p = 0.0);
        if !active.is_empty() {
            let (na, nf) = (active.len(), active_friction.len());
            // Force indices of the unknown impulses: normals, then frictions.
            let columns: Vec<usize> = active
                .iter()
                .copied()
                .chain(active_friction.iter().map(|&s| contacts.len() + s))
                .collect();
            let mut b: Vec<Vec<f64>> = Vec::with_capacity(columns.len());
            for &j in &columns {
                b.push(unit_response(run, t_mid, &x_mid, &f_mid, j, &is_velocity)?);
            }
            // Normal gap rates and slips, linear in the velocities.
            let rates = |run: &mut Run, v: &[f64]| -> Result<Vec<f64>, Diagnostic> {
                derivatives(run, t_mid, v, &zero)?;
                Ok(active
                    .iter()
                    .map(|&j| contacts[j].gap_rate.read(&run.buf))
                    .chain(
                        active_friction
                            .iter()
                            .map(|&s| frictions[s].slip.read(&run.buf)),
                    )
                    .collect())
            };
            let u_free = rates(run, &x_next)?;
            let nc = columns.len();
            // d[r][c]: rate r per unit impulse c.
            let mut d = vec![vec![0.0; nc]; nc];
            for (c, bc) in b.iter().enumerate() {
                let shifted: Vec<f64> = x_next.iter().zip(bc).map(|(a, v)| a + v).collect();
                let u = rates(run, &shifted)?;
                for r in 0..nc {
                    d[r][c] = u[r] - u_free[r];
                }
            }
            // The LCP in z = (P_N, P_T+, P_T-, beta) (friction pyramid of
            // Stewart & Trinkle 1996 / Anitescu & Potra 1997 in the plane):
            //   w_N  =  q_N + D_NN P_N + D_NT (P+ - P-)            _|_ P_N
            //   w_+  =  q_T + D_TN P_N + D_TT (P+ - P-) + beta     _|_ P+
            //   w_-  = -q_T - D_TN P_N - D_TT (P+ - P-) + beta     _|_ P-
            //   w_b  =  mu P_N - P+ - P-                           _|_ beta
            let size = na + 3 * nf;
            let mut mat = vec![0.0; size * size];
            let mut q = vec![0.0; size];
            for (r, &j) in active.iter().enumerate() {
                let e = run.buf[contacts[j].restitution];
                q[r] = u_free[r] + e * rates_before[j].min(0.0);
            }
            for (s, &fs) in active_friction.iter().enumerate() {
                let f = &frictions[fs];
                // Tangential restitution only at the impact that closes the contact.
                let e_t = if closed_before[f.contact] {
                    0.0
                } else {
                    run.buf[f.restitution]
                };
                let qt = u_free[na + s] + e_t * slips_before[fs];
                q[na + s] = qt;
                q[na + nf + s] = -qt;
            }
            for r in 0..size {
                let (row_kind, row_sign, rate_row) = if r < na {
                    (0, 1.0, r)
                } else if r < na + nf {
                    (1, 1.0, na + (r - na))
                } else if r < na + 2 * nf {
                    (1, -1.0, na + (r - na - nf))
                } else {
                    (2, 0.0, 0)
                };
                if row_kind == 2 {
                    let s = r - na - 2 * nf;
                    let f = &frictions[active_friction[s]];
                    let normal_col = active.iter().position(|&j| j == f.contact).unwrap_or(0);
                    mat[r * size + normal_col] = run.buf[f.mu];
                    mat[r * size + na + s] = -1.0;
                    mat[r * size + na + nf + s] = -1.0;
                    continue;
                }
                for c in 0..na {
                    mat[r * size + c] = row_sign * d[rate_row][c];
                }
                for s in 0..nf {
                    let v = row_sign * d[rate_row][na + s];
                    mat[r * size + na + s] = v;
                    mat[r * size + na + nf + s] = -v;
                }
                if row_kind == 1 {
                    let s = if r < na + nf { r - na } else { r - na - nf };
                    mat[r * size + na + 2 * nf + s] = 1.0;
                }
            }
            stats.lcp_solves += 1;
            let solution = match lcp::lemke(&mat, &q) {
                Ok(sol) => {
                    stats.lemke_pivots += sol.pivots as u64;
                    sol
                }
                Err(first) => {
                    stats.fallbacks += 1;
                    lcp::projected_gauss_seidel(&mat, &q, 1.0, 1e-12, 10_000).map_err(|e| {
                        Diagnostic::error_nospan(format!(
                            "the contact problem at t = {t_mid} has no solution: {first}; {e}"
                        ))
                        .with_note(super::STOPPED)
                    })?
                }
            };
            let z = &solution.z;
            if z[..na].iter().any(|&p| p > 0.0) {
                stats.impact_steps += 1;
            }
            for (c, &j) in columns.iter().enumerate() {
                let p = if c < na { z[c] } else { z[c] - z[c + nf] };
                impulses[j] = p;
                for i in 0..n {
                    x_next[i] += p * b[c][i];
                }
            }
        }
        for (j, closed) in closed_before.iter_mut().enumerate() {
            *closed = gaps[j] <= 0.0;
        }
        // 4. positions finish the step with the new velocities.
        let t_next = t + h_k;
        let y: Vec<f64> = (0..n)
            .map(|i| if is_velocity[i] { x_next[i] } else { x_mid[i] })
            .collect();
        let f_end = derivatives(run, t_next, &y, &zero)?;
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
        let split = Split {
            contacts: &contacts,
            is_velocity: &is_velocity,
            forces: m,
        };
        project_positions(run, t_next, &mut x_next, &split, &derivatives, &mut stats)?;
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
            for (&slot, f) in force_slots.iter().zip(&forces) {
                run.buf[slot] = *f;
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

/// The normal contacts, which states are velocities, and how many force
/// slots the stepper writes.
#[derive(Clone, Copy)]
struct Split<'a> {
    contacts: &'a [ContactSlots],
    is_velocity: &'a [bool],
    forces: usize,
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
    split: &Split,
    derivatives: &Derivatives,
    stats: &mut ContactStats,
) -> Result<(), Diagnostic> {
    let Split {
        contacts,
        is_velocity,
        forces,
    } = *split;
    let m = contacts.len();
    let n = x.len();
    let zero = vec![0.0; forces];
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
