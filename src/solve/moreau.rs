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

use super::integrator::{Behaviour, DenseOutput, Integrator, Outputs, Relations, StopReason};
use super::lcp;
use super::model::Entry;
use super::{Options, Run, STOPPED};
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::structure::Role;

/// Counters of a Moreau run.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct ContactStats {
    pub steps: u64,
    /// Steps with at least one nonzero contact impulse.
    pub impact_steps: u64,
    /// Impacts: a contact approaching faster than the smooth forces alone
    /// would make it (so restitution applies) that takes a normal impulse.
    /// A contact coming to rest, resting or sliding is not an impact.
    pub impacts: u64,
    pub lcp_solves: u64,
    pub lemke_pivots: u64,
    /// LCPs that Lemke's algorithm could not solve (projected Gauss-Seidel
    /// solved them).
    pub fallbacks: u64,
    /// Impacts whose LCP had no solution with restitution (opposed
    /// contacts closed at once) and were solved as plastic.
    pub plastic_impacts: u64,
    /// A run of the event-driven variant (`solve::event_driven`): no
    /// time steps of its own; impacts and lift-offs are events.
    pub event_driven: bool,
    /// Closed contacts whose force reached zero (event-driven only).
    pub lift_offs: u64,
}

impl std::fmt::Display for ContactStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.event_driven {
            return write!(
                f,
                "contact events: impacts {}, lift-offs {}, LCPs {} (Lemke pivots {}, Gauss-Seidel fallbacks {}, plastic {})",
                self.impacts,
                self.lift_offs,
                self.lcp_solves,
                self.lemke_pivots,
                self.fallbacks,
                self.plastic_impacts
            );
        }
        write!(
            f,
            "Moreau-Jean steps {}, steps with impulses {}, impacts {}, LCPs {} (Lemke pivots {}, Gauss-Seidel fallbacks {}, plastic {})",
            self.steps,
            self.impact_steps,
            self.impacts,
            self.lcp_solves,
            self.lemke_pivots,
            self.fallbacks,
            self.plastic_impacts
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

/// The Moreau-Jean time-stepper as an [`Integrator`]: fixed steps of `h`
/// on the grid start + j h (computed, not accumulated), a step shortened to
/// end on a time event or the stop time.
///
/// A contact that is open at the start of a step and would be closed at
/// its end by the smooth motion is an impact: the step is split at the
/// contact instant (found by the Illinois method on the gap of the smooth
/// sub-step), Newton's law is applied there as a pure impact, and the rest
/// of the step is an ordinary Moreau-Jean step. Impact times are then as
/// accurate as the smooth motion, not quantized to the step; resting and
/// sliding contacts (closed at the step start) take the ordinary step.
///
/// When-clauses are checked at the end of every step, as time-stepping
/// schemes do (Acary & Brogliato, *Numerical Methods for Nonsmooth Dynamical
/// Systems*, 2008, ch. 10: the scheme locates no events): a condition that
/// became true fires at the first step end where it holds, so a state event
/// is late by less than one step ([`Outputs::AtStepEnds`]). Sample instants
/// are hit exactly: the step before one is shortened to end on it.
pub(super) struct MoreauIntegrator {
    st: Stepper,
    h: f64,
    start: f64,
    /// The next grid node: start + j h.
    j: u64,
    /// Steps ending within this of a bound land on it (a step a millionth
    /// of `h` long does nothing useful).
    snap: f64,
    /// The last step, linear between its ends (the scheme has no
    /// interpolant; the hybrid loop reads it at the ends).
    dense: Linear,
    /// The mean contact forces of the last step (its impulses over its
    /// length), which the output rows show.
    forces: Vec<f64>,
}

impl MoreauIntegrator {
    pub(super) fn new(run: &Run, opts: &Options, h: f64) -> Result<MoreauIntegrator, Diagnostic> {
        let st = Stepper::new(run)?;
        let m = st.m();
        let start = opts.start;
        Ok(MoreauIntegrator {
            st,
            h,
            start,
            j: 1,
            snap: 1e-6 * h,
            dense: Linear {
                t0: start,
                t1: start,
                x0: Vec::new(),
                x1: Vec::new(),
            },
            forces: vec![0.0; m],
        })
    }
}

impl Integrator for MoreauIntegrator {
    fn behaviour(&self) -> Behaviour {
        Behaviour {
            relations: Relations::Live,
            outputs: Outputs::AtStepEnds { snap: self.snap },
            chatter_events: 50,
            chatter_hint: super::integrator::CHATTER_HINT,
            frame_at_last_iterate: false,
        }
    }

    fn start(&mut self, run: &mut Run, t: f64, x: &mut Vec<f64>) -> Result<(), Diagnostic> {
        self.st.check_start_gaps(run, t, x)?;
        self.restart(run, t, x)
    }

    fn step(
        &mut self,
        run: &mut Run,
        t: f64,
        x: &[f64],
        t_bound: f64,
    ) -> Result<StopReason, Diagnostic> {
        let mut t_next = self.start + self.j as f64 * self.h;
        if t_next <= t_bound + self.snap {
            self.j += 1;
        }
        // A time event ends the step exactly (however close: a sample fires
        // only once its time is reached); so does the stop time.
        let reached = t_next >= t_bound - self.snap;
        if reached {
            t_next = t_bound;
        }
        let h_k = t_next - t;
        // Which states are velocities is structural; probing now and then
        // (it is sticky) catches a force whose effect vanished at the start.
        if self.st.stats.steps.is_multiple_of(256) {
            self.st.probe_velocities(run, t, x)?;
        }
        let (x_next, impulses) = self.st.step_with_impacts(run, t, x, h_k)?;
        self.st.stats.steps += 1;
        run.stats.contacts = Some(self.st.stats);
        if x_next.iter().any(|v| !v.is_finite()) {
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::Solver,
                format!("the Moreau time-stepper produced a non-finite state at t = {t_next}"),
            )
            .with_hint("reduce --step")
            .with_note(super::STOPPED));
        }
        self.forces = impulses.iter().map(|p| p / h_k).collect();
        self.dense.t0 = t;
        self.dense.t1 = t_next;
        self.dense.x0.clear();
        self.dense.x0.extend_from_slice(x);
        self.dense.x1 = x_next;
        Ok(if reached {
            StopReason::BoundReached
        } else {
            StopReason::InternalStep
        })
    }

    fn dense(&self) -> &dyn DenseOutput {
        &self.dense
    }

    /// The model with the last step's mean contact forces.
    fn evaluate(&self, run: &mut Run, t: f64, x: &[f64]) -> Result<(), Diagnostic> {
        self.st.derivatives(run, t, x, &self.forces).map(|_| ())
    }

    fn restart(&mut self, run: &mut Run, _t: f64, _x: &mut Vec<f64>) -> Result<(), Diagnostic> {
        run.stats.contacts = Some(self.st.stats);
        Ok(())
    }
}

/// The straight line between a step's ends.
struct Linear {
    t0: f64,
    t1: f64,
    x0: Vec<f64>,
    x1: Vec<f64>,
}

impl DenseOutput for Linear {
    fn span(&self) -> (f64, f64) {
        (self.t0, self.t1)
    }

    fn eval(&self, t: f64, out: &mut [f64]) {
        if t >= self.t1 || self.t1 <= self.t0 {
            out.copy_from_slice(&self.x1);
            return;
        }
        let s = (t - self.t0) / (self.t1 - self.t0);
        for ((o, a), b) in out.iter_mut().zip(&self.x0).zip(&self.x1) {
            *o = a + s * (b - a);
        }
    }
}

/// The stepper's view of the model: where the contacts live, which states
/// are velocities, and its counters.
pub(super) struct Stepper {
    contacts: Vec<ContactSlots>,
    frictions: Vec<FrictionSlots>,
    /// Every force slot the stepper writes: normal forces first.
    force_slots: Vec<usize>,
    der_slots: Vec<u32>,
    pub(super) is_velocity: Vec<bool>,
    /// Whether each contact was closed in the previous step (tangential
    /// restitution acts only at the impact that closes a contact).
    closed_before: Vec<bool>,
    pub(super) stats: ContactStats,
}

/// Gaps above this (relative to 1 + the largest position) count as open.
const OPEN_TOL: f64 = 1e-12;

impl Stepper {
    pub(super) fn new(run: &Run) -> Result<Stepper, Diagnostic> {
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
                return Err(Diagnostic::error(DiagnosticKind::Call,
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
        let force_slots: Vec<usize> = contacts
            .iter()
            .map(|c| c.force)
            .chain(frictions.iter().map(|f| f.force))
            .collect();
        let der_slots = super::model::StateSlots::of(run.c, run.l()).ders;
        Ok(Stepper {
            closed_before: vec![false; contacts.len()],
            is_velocity: vec![false; der_slots.len()],
            contacts,
            frictions,
            force_slots,
            der_slots,
            stats: ContactStats::default(),
        })
    }

    pub(super) fn contact_count(&self) -> usize {
        self.contacts.len()
    }

    pub(super) fn n(&self) -> usize {
        self.der_slots.len()
    }

    pub(super) fn m(&self) -> usize {
        self.force_slots.len()
    }

    /// The state derivatives at (t, x) with the forces `forces`; the
    /// buffer then holds every variable at that point.
    pub(super) fn derivatives(
        &self,
        run: &mut Run,
        t: f64,
        x: &[f64],
        forces: &[f64],
    ) -> Result<Vec<f64>, Diagnostic> {
        for (&slot, f) in self.force_slots.iter().zip(forces) {
            run.frame.values()[slot] = *f;
        }
        run.set_states(t, x);
        run.frame.set_event_mode(true);
        run.call(Entry::Ode)?;
        Ok(self
            .der_slots
            .iter()
            .map(|&s| run.frame.slots()[s as usize])
            .collect())
    }

    pub(super) fn smooth(&self, run: &mut Run, t: f64, x: &[f64]) -> Result<Vec<f64>, Diagnostic> {
        self.derivatives(run, t, x, &vec![0.0; self.m()])
    }

    /// The state derivatives under a unit force `j` (every other force zero).
    fn unit_force_derivatives(
        &self,
        run: &mut Run,
        t: f64,
        x: &[f64],
        j: usize,
    ) -> Result<Vec<f64>, Diagnostic> {
        let mut unit = vec![0.0; self.m()];
        unit[j] = 1.0;
        self.derivatives(run, t, x, &unit)
    }

    /// The change of the velocity derivatives under a unit force `j`.
    pub(super) fn unit_response(
        &self,
        run: &mut Run,
        t: f64,
        x: &[f64],
        base: &[f64],
        j: usize,
    ) -> Result<Vec<f64>, Diagnostic> {
        let fj = self.unit_force_derivatives(run, t, x, j)?;
        Ok((0..self.n())
            .map(|i| {
                if self.is_velocity[i] {
                    fj[i] - base[i]
                } else {
                    0.0
                }
            })
            .collect())
    }

    /// Marks the states whose derivatives feel a contact force: the mask
    /// that [`Stepper::unit_response`] applies.
    pub(super) fn probe_velocities(
        &mut self,
        run: &mut Run,
        t: f64,
        x: &[f64],
    ) -> Result<(), Diagnostic> {
        let f0 = self.smooth(run, t, x)?;
        for j in 0..self.m() {
            let fj = self.unit_force_derivatives(run, t, x, j)?;
            for (v, (a, b)) in self.is_velocity.iter_mut().zip(fj.iter().zip(&f0)) {
                *v |= a != b;
            }
        }
        Ok(())
    }

    pub(super) fn gaps(&self, run: &Run) -> Vec<f64> {
        self.contacts
            .iter()
            .map(|c| c.gap.read(run.frame.slots()))
            .collect()
    }

    /// Gaps, gap rates and slips of every contact, as the buffer holds them.
    pub(super) fn contact_values(&self, run: &Run) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let rates = self
            .contacts
            .iter()
            .map(|c| c.gap_rate.read(run.frame.slots()))
            .collect();
        let slips = self
            .frictions
            .iter()
            .map(|f| f.slip.read(run.frame.slots()))
            .collect();
        (self.gaps(run), rates, slips)
    }

    pub(super) fn scale(&self, x: &[f64]) -> f64 {
        1.0 + x
            .iter()
            .zip(&self.is_velocity)
            .filter(|(_, v)| !**v)
            .fold(0.0f64, |a, (x, _)| a.max(x.abs()))
    }

    /// `x` with the positions (or the velocities) advanced by `dt` times
    /// their derivatives `f`; the other components unchanged.
    fn advance(&self, x: &[f64], f: &[f64], dt: f64, velocities: bool) -> Vec<f64> {
        x.iter()
            .zip(f)
            .zip(&self.is_velocity)
            .map(|((x, f), &v)| if v == velocities { x + dt * f } else { *x })
            .collect()
    }

    /// The midpoint step without contact forces.
    fn smooth_step(
        &self,
        run: &mut Run,
        t: f64,
        x: &[f64],
        h: f64,
    ) -> Result<Vec<f64>, Diagnostic> {
        let f0 = self.smooth(run, t, x)?;
        let x_mid = self.advance(x, &f0, h / 2.0, false);
        let f_mid = self.smooth(run, t + h / 2.0, &x_mid)?;
        let y = self.advance(&x_mid, &f_mid, h, true);
        let f_end = self.smooth(run, t + h, &y)?;
        Ok(self.advance(&y, &f_end, h / 2.0, false))
    }

    /// One step of length h; an impact inside it is located first.
    fn step_with_impacts(
        &mut self,
        run: &mut Run,
        t: f64,
        x: &[f64],
        h: f64,
    ) -> Result<(Vec<f64>, Vec<f64>), Diagnostic> {
        let f0 = self.smooth(run, t, x)?;
        let (g0, u0, _) = self.contact_values(run);
        let tol = OPEN_TOL * self.scale(x);
        // A contact that closed exactly at the step boundary while
        // approaching (it was open during the last step): its impact is now.
        // An approach no faster than what the smooth forces build up in one
        // step is a contact coming to rest, not an impact (else restitution
        // would keep it hopping at about e*a*h).
        let candidates: Vec<usize> = (0..g0.len())
            .filter(|&j| g0[j] <= tol && u0[j] < 0.0 && !self.closed_before[j])
            .collect();
        let arriving = if candidates.is_empty() {
            false
        } else {
            let y = self.advance(x, &f0, h, true);
            self.smooth(run, t, &y)?;
            let (_, u1, _) = self.contact_values(run);
            candidates
                .iter()
                .any(|&j| u0[j].abs() > 2.0 * (u1[j] - u0[j]).abs())
        };
        if arriving {
            let (x_plus, mut impulses) = self.impact(run, t, x)?;
            let f_plus = self.smooth(run, t, &x_plus)?;
            let (x_next, rest) = self.contact_step(run, t, &x_plus, &f_plus, h)?;
            for (a, b) in impulses.iter_mut().zip(&rest) {
                *a += b;
            }
            return Ok((x_next, impulses));
        }
        let open: Vec<usize> = (0..g0.len()).filter(|&j| g0[j] > tol).collect();
        // A cheap first-order look ahead (positions advanced by h times
        // their rates): only a contact that may close within about two
        // steps is checked along the exact smooth step.
        let near = if open.is_empty() {
            Vec::new()
        } else {
            let ahead = self.advance(x, &f0, h, false);
            self.smooth(run, t + h, &ahead)?;
            let g_ahead = self.gaps(run);
            open.iter()
                .copied()
                .filter(|&j| g_ahead[j] <= 2.0 * (g0[j] - g_ahead[j]).abs())
                .collect()
        };
        if !near.is_empty() {
            let free = self.smooth_step(run, t, x, h)?;
            self.smooth(run, t + h, &free)?;
            let g1 = self.gaps(run);
            let closing: Vec<usize> = near.iter().copied().filter(|&j| g1[j] <= 0.0).collect();
            if !closing.is_empty() {
                let tau = self.contact_instant(run, t, x, h, &closing)?;
                let x_tau = self.smooth_step(run, t, x, tau)?;
                let (x_plus, mut impulses) = self.impact(run, t + tau, &x_tau)?;
                let f_plus = self.smooth(run, t + tau, &x_plus)?;
                let (x_next, rest) = self.contact_step(run, t + tau, &x_plus, &f_plus, h - tau)?;
                for (a, b) in impulses.iter_mut().zip(&rest) {
                    *a += b;
                }
                return Ok((x_next, impulses));
            }
        }
        self.contact_step(run, t, x, &f0, h)
    }

    /// The first instant in (0, h] at which one of `closing` reaches a zero
    /// gap along the smooth motion (Illinois variant of regula falsi).
    fn contact_instant(
        &self,
        run: &mut Run,
        t: f64,
        x: &[f64],
        h: f64,
        closing: &[usize],
    ) -> Result<f64, Diagnostic> {
        let least_gap = |run: &mut Run, tau: f64| -> Result<f64, Diagnostic> {
            let y = self.smooth_step(run, t, x, tau)?;
            self.smooth(run, t + tau, &y)?;
            let g = self.gaps(run);
            Ok(closing.iter().map(|&j| g[j]).fold(f64::INFINITY, f64::min))
        };
        let (mut a, mut fa) = (0.0, least_gap(run, 0.0)?);
        let (mut b, mut fb) = (h, least_gap(run, h)?);
        let mut side = 0;
        for _ in 0..60 {
            if (b - a) <= 1e-15 * (1.0 + t.abs()) {
                break;
            }
            let c = (a * fb - b * fa) / (fb - fa);
            let c = if c.is_finite() && c > a && c < b {
                c
            } else {
                (a + b) / 2.0
            };
            let fc = least_gap(run, c)?;
            if fc > 0.0 {
                a = c;
                fa = fc;
                if side == -1 {
                    fb /= 2.0;
                }
                side = -1;
            } else {
                b = c;
                fb = fc;
                if fc == 0.0 {
                    break;
                }
                if side == 1 {
                    fa /= 2.0;
                }
                side = 1;
            }
        }
        Ok(b)
    }

    /// Rates of the given contacts (gap rates) and frictions (slips) at x.
    fn rates(
        &self,
        run: &mut Run,
        t: f64,
        x: &[f64],
        normals: &[usize],
        frictions: &[usize],
    ) -> Result<Vec<f64>, Diagnostic> {
        self.smooth(run, t, x)?;
        Ok(normals
            .iter()
            .map(|&j| self.contacts[j].gap_rate.read(run.frame.slots()))
            .chain(
                frictions
                    .iter()
                    .map(|&s| self.frictions[s].slip.read(run.frame.slots())),
            )
            .collect())
    }

    /// The laws' coefficients of the contacts `active` and the friction
    /// laws `friction` as the model computes them at t: restitutions in
    /// [0, 1] (more than 1 would make energy at every impact) and friction
    /// coefficients finite and nonnegative (a negative one pushes along the
    /// slip). A coefficient may depend on the state, so this is checked
    /// wherever the laws are applied.
    fn check_coefficients(
        &self,
        run: &Run,
        t: f64,
        active: &[usize],
        friction: &[usize],
    ) -> Result<(), Diagnostic> {
        let bad = |span, what: &str, value: f64, range: &str| {
            Err(Diagnostic::error(
                DiagnosticKind::OutOfRange,
                span,
                format!("the {what} of this contact is {value} at t = {t}; it must be {range}"),
            )
            .with_label("here")
            .with_note(STOPPED))
        };
        for &j in active {
            let e = run.frame.slots()[self.contacts[j].restitution];
            if !(0.0..=1.0).contains(&e) {
                return bad(
                    run.c.contacts[j].span,
                    "coefficient of restitution",
                    e,
                    "in [0, 1]",
                );
            }
        }
        for &s in friction {
            let (mu, e) = (
                run.frame.slots()[self.frictions[s].mu],
                run.frame.slots()[self.frictions[s].restitution],
            );
            let span = run.c.frictions[s].span;
            if !(mu.is_finite() && mu >= 0.0) {
                return bad(span, "friction coefficient", mu, "finite and nonnegative");
            }
            if !(0.0..=1.0).contains(&e) {
                return bad(span, "tangential restitution", e, "in [0, 1]");
            }
        }
        Ok(())
    }

    /// The initial state must satisfy every contact: a gap below zero
    /// (beyond rounding: 1e-9 of the position scale) or not a number at
    /// the start is the model's error, which neither solver should repair
    /// silently (the time-stepper would project it away, the event-driven
    /// solver rewrite the fixed start values by an impact).
    pub(super) fn check_start_gaps(
        &self,
        run: &mut Run,
        t: f64,
        x: &[f64],
    ) -> Result<(), Diagnostic> {
        self.smooth(run, t, x)?;
        let tol = 1e-9 * self.scale(x);
        for (j, g) in self.gaps(run).into_iter().enumerate() {
            if g >= -tol {
                continue;
            }
            return Err(Diagnostic::error(
                DiagnosticKind::Initialization,
                run.c.contacts[j].span,
                format!("the gap of this contact is {g} at the start (t = {t})"),
            )
            .with_label("its gap must not be negative")
            .with_hint(
                "start the bodies apart or touching: the start values of the positions \
                 the gap depends on",
            )
            .with_note(STOPPED));
        }
        Ok(())
    }

    /// The diagonal of a Delassus matrix over the contacts `normal` and
    /// then the friction laws `friction`: a unit force must open its own
    /// gap (or increase its own slip). It does not when the force is
    /// missing from the equations of motion, enters them with the wrong
    /// sign or times zero, or when the gap does not depend on the state;
    /// then no force can hold the law, and the contact is named rather than
    /// the complementarity problem's failure.
    pub(super) fn check_diagonal(
        &self,
        run: &Run,
        t: f64,
        normal: &[usize],
        friction: &[usize],
        diagonal: &[f64],
    ) -> Result<(), Diagnostic> {
        let scale = diagonal.iter().fold(0.0f64, |m, d| m.max(d.abs()));
        for (r, &d) in diagonal.iter().enumerate() {
            if d > 1e-12 * scale {
                continue;
            }
            let (span, what, var) = if r < normal.len() {
                let k = &run.c.contacts[normal[r]];
                (k.span, "gap rate", k.force)
            } else {
                let f = &run.c.frictions[friction[r - normal.len()]];
                (f.span, "slip", f.force)
            };
            let force = &run.c.vars[var as usize].name;
            return Err(Diagnostic::error(
                DiagnosticKind::Solver,
                span,
                format!(
                    "at t = {t} a unit impulse of `{force}` changes this contact's {what} by {d}: \
                     the force cannot hold the contact law"
                ),
            )
            .with_label("here")
            .with_hint(format!(
                "`{force}` must enter the equations of motion linearly, with the sign that \
                 increases the {what}, and the contact must depend on the model's state"
            ))
            .with_note(STOPPED));
        }
        Ok(())
    }

    /// Impulses of the closed contacts `active` (and their friction) that
    /// take the rates `u_free` (at velocities `x_free`) to the laws'
    /// targets: Newton's law `U+ + e U- >= 0 _|_ P_N >= 0` and the planar
    /// friction pyramid. Returns the new state and the impulse of every
    /// force slot.
    #[allow(clippy::too_many_arguments)]
    fn solve_impulses(
        &mut self,
        run: &mut Run,
        t: f64,
        x_at: &[f64],
        x_free: &[f64],
        active: &[usize],
        rates_before: &[f64],
        slips_before: &[f64],
    ) -> Result<(Vec<f64>, Vec<f64>), Diagnostic> {
        let n = self.n();
        let m = self.m();
        let active_friction: Vec<usize> = (0..self.frictions.len())
            .filter(|&s| active.contains(&self.frictions[s].contact))
            .collect();
        let (na, nf) = (active.len(), active_friction.len());
        let columns: Vec<usize> = active
            .iter()
            .copied()
            .chain(active_friction.iter().map(|&s| self.contacts.len() + s))
            .collect();
        let base = self.smooth(run, t, x_at)?;
        self.check_coefficients(run, t, active, &active_friction)?;
        let mut b: Vec<Vec<f64>> = Vec::with_capacity(columns.len());
        for &j in &columns {
            b.push(self.unit_response(run, t, x_at, &base, j)?);
        }
        let u_free = self.rates(run, t, x_free, active, &active_friction)?;
        let nc = columns.len();
        let mut d = vec![vec![0.0; nc]; nc];
        for (c, bc) in b.iter().enumerate() {
            let shifted: Vec<f64> = x_free.iter().zip(bc).map(|(a, v)| a + v).collect();
            let u = self.rates(run, t, &shifted, active, &active_friction)?;
            for r in 0..nc {
                d[r][c] = u[r] - u_free[r];
            }
        }
        let diagonal: Vec<f64> = (0..nc).map(|r| d[r][r]).collect();
        self.check_diagonal(run, t, active, &active_friction, &diagonal)?;
        // The LCP in z = (P_N, P_T+, P_T-, beta) (the friction pyramid of
        // Stewart & Trinkle 1996 / Anitescu & Potra 1997, in the plane):
        //   w_N = q_N + D_NN P_N + D_NT (P+ - P-)            _|_ P_N
        //   w_+ = q_T + D_TN P_N + D_TT (P+ - P-) + beta     _|_ P+
        //   w_- = -q_T - D_TN P_N - D_TT (P+ - P-) + beta    _|_ P-
        //   w_b = mu P_N - P+ - P-                           _|_ beta
        let size = na + 3 * nf;
        let mut mat = vec![0.0; size * size];
        let mut q = vec![0.0; size];
        // The same problem without restitution (a plastic impact).
        let mut q_plastic = vec![0.0; size];
        let mut impacting = vec![false; na];
        for (r, &j) in active.iter().enumerate() {
            let e = run.frame.slots()[self.contacts[j].restitution];
            // Restitution acts on an approach faster than what the smooth
            // forces build up within the step; a slower one is a resting
            // contact.
            let approach = rates_before[j].min(0.0);
            let resting = approach.abs() <= 2.0 * (u_free[r] - rates_before[j]).abs();
            impacting[r] = !resting && approach < 0.0;
            q[r] = u_free[r] + if resting { 0.0 } else { e * approach };
            q_plastic[r] = u_free[r];
        }
        for (s, &fs) in active_friction.iter().enumerate() {
            let f = &self.frictions[fs];
            let e_t = if self.closed_before[f.contact] {
                0.0
            } else {
                run.frame.slots()[f.restitution]
            };
            let qt = u_free[na + s] + e_t * slips_before[fs];
            q[na + s] = qt;
            q[na + nf + s] = -qt;
            q_plastic[na + s] = u_free[na + s];
            q_plastic[na + nf + s] = -u_free[na + s];
        }
        for r in 0..na + 2 * nf {
            // Normal and T+ rows read rate r; T- rows the same slip, negated.
            let (sign, rate_row) = if r < na + nf {
                (1.0, r)
            } else {
                (-1.0, r - nf)
            };
            for c in 0..na {
                mat[r * size + c] = sign * d[rate_row][c];
            }
            for s in 0..nf {
                let v = sign * d[rate_row][na + s];
                mat[r * size + na + s] = v;
                mat[r * size + na + nf + s] = -v;
            }
            if r >= na {
                let s = if r < na + nf { r - na } else { r - na - nf };
                mat[r * size + na + 2 * nf + s] = 1.0;
            }
        }
        for (s, &fs) in active_friction.iter().enumerate() {
            let f = &self.frictions[fs];
            let r = na + 2 * nf + s;
            let normal_col = active.iter().position(|&j| j == f.contact).unwrap_or(0);
            mat[r * size + normal_col] = run.frame.slots()[f.mu];
            mat[r * size + na + s] = -1.0;
            mat[r * size + na + nf + s] = -1.0;
        }
        // Newton's law cannot hold at two opposed contacts that are closed
        // at once (a clearance of zero: restitution at one wall drives the
        // other into its wall), and that LCP has no solution; the impact
        // is then plastic, which always is.
        let solution = match self.solve_lcp(&mat, &q) {
            Ok(sol) => Ok(sol),
            Err(first) if q_plastic != q => {
                let plastic = self
                    .solve_lcp(&mat, &q_plastic)
                    .map_err(|e| format!("{first}; without restitution: {e}"));
                if plastic.is_ok() {
                    self.stats.plastic_impacts += 1;
                }
                plastic
            }
            Err(first) => Err(first),
        }
        .map_err(|e| {
            Diagnostic::error_nospan(
                DiagnosticKind::Solver,
                format!("the contact problem at t = {t} has no solution: {e}"),
            )
            .with_note(super::STOPPED)
        })?;
        let z = &solution.z;
        if z[..na].iter().any(|&p| p > 0.0) {
            self.stats.impact_steps += 1;
        }
        self.stats.impacts += (0..na).filter(|&r| impacting[r] && z[r] > 0.0).count() as u64;
        let mut impulses = vec![0.0; m];
        let mut x_next = x_free.to_vec();
        for (c, &j) in columns.iter().enumerate() {
            let p = if c < na { z[c] } else { z[c] - z[c + nf] };
            impulses[j] = p;
            for i in 0..n {
                x_next[i] += p * b[c][i];
            }
        }
        Ok((x_next, impulses))
    }

    /// Lemke's algorithm, then projected Gauss-Seidel if it fails.
    fn solve_lcp(&mut self, mat: &[f64], q: &[f64]) -> Result<lcp::LcpSolution, String> {
        self.stats.lcp_solves += 1;
        match lcp::lemke(mat, q) {
            Ok(sol) => {
                self.stats.lemke_pivots += sol.pivots as u64;
                Ok(sol)
            }
            Err(first) => {
                self.stats.fallbacks += 1;
                lcp::projected_gauss_seidel(mat, q, 1.0, 1e-12, 10_000)
                    .map_err(|e| format!("{first}; {e}"))
            }
        }
    }

    /// A pure impact at (t, x): no smooth forces act during it; the
    /// contacts closed at x (approaching or resting) take impulses.
    pub(super) fn impact(
        &mut self,
        run: &mut Run,
        t: f64,
        x: &[f64],
    ) -> Result<(Vec<f64>, Vec<f64>), Diagnostic> {
        self.smooth(run, t, x)?;
        let (gaps, rates_before, slips_before) = self.contact_values(run);
        let tol = 1e-9 * self.scale(x);
        let active: Vec<usize> = (0..self.contacts.len())
            .filter(|&j| gaps[j] <= tol)
            .collect();
        if active.is_empty() {
            return Ok((x.to_vec(), vec![0.0; self.m()]));
        }
        self.closed_before.iter_mut().for_each(|c| *c = false);
        let result = self.solve_impulses(run, t, x, x, &active, &rates_before, &slips_before)?;
        for &j in &active {
            self.closed_before[j] = true;
        }
        Ok(result)
    }

    /// The Moreau-Jean midpoint step of length h with contacts, from x
    /// whose smooth derivatives are `f0`.
    fn contact_step(
        &mut self,
        run: &mut Run,
        t: f64,
        x: &[f64],
        f0: &[f64],
        h: f64,
    ) -> Result<(Vec<f64>, Vec<f64>), Diagnostic> {
        let t_mid = t + h / 2.0;
        // 1. positions to the midpoint.
        let x_mid = self.advance(x, f0, h / 2.0, false);
        // 2. smooth forces at the midpoint.
        let f_mid = self.smooth(run, t_mid, &x_mid)?;
        let (gaps, rates_before, slips_before) = self.contact_values(run);
        let x_free = self.advance(&x_mid, &f_mid, h, true);
        // 3. impulses of the contacts closed at the midpoint.
        // Closed, or open by no more than rounding (a contact the LCP left
        // at a gap rate of 1e-16 is still closed).
        let closed_tol = OPEN_TOL * self.scale(&x_mid);
        let active: Vec<usize> = (0..self.contacts.len())
            .filter(|&j| gaps[j] <= closed_tol)
            .collect();
        let (x_next, impulses) = if active.is_empty() {
            (x_free, vec![0.0; self.m()])
        } else {
            self.solve_impulses(
                run,
                t_mid,
                &x_mid,
                &x_free,
                &active,
                &rates_before,
                &slips_before,
            )?
        };
        for (j, closed) in self.closed_before.iter_mut().enumerate() {
            *closed = gaps[j] <= closed_tol;
        }
        // 4. positions finish the step with the new velocities (impulses
        //    change only velocities, so x_next still has the midpoint
        //    positions).
        let f_end = self.smooth(run, t + h, &x_next)?;
        let mut x_next = self.advance(&x_next, &f_end, h / 2.0, false);
        // 5. The scheme keeps the constraints at velocity level only, so a
        //    gap can end a step at -O(h v). Project the positions back onto
        //    the admissible set along the mass-weighted gap gradients (the
        //    direct projection of Acary 2013, "Projected event-capturing
        //    time-stepping schemes"), velocities unchanged.
        self.project_positions(run, t + h, &mut x_next)?;
        Ok((x_next, impulses))
    }

    /// Moves the positions of `x` so that no gap is negative: the position
    /// change per unit "impulse" of contact j is the change of the position
    /// derivatives under the velocity response to that impulse, and the
    /// multipliers solve the LCP `0 <= g + G mu _|_ mu >= 0` (a few Newton
    /// passes for curved gaps).
    pub(super) fn project_positions(
        &mut self,
        run: &mut Run,
        t: f64,
        x: &mut [f64],
    ) -> Result<(), Diagnostic> {
        let m = self.contacts.len();
        let n = x.len();
        let scale = self.scale(x);
        for _ in 0..4 {
            let f0 = self.smooth(run, t, x)?;
            let gaps = self.gaps(run);
            let violated: Vec<usize> = (0..m)
                .filter(|&j| gaps[j] < -PROJECTION_TOL * scale)
                .collect();
            if violated.is_empty() {
                return Ok(());
            }
            // Position direction of each violated contact.
            let mut dirs: Vec<Vec<f64>> = Vec::with_capacity(violated.len());
            for &j in &violated {
                let dv = self.unit_response(run, t, x, &f0, j)?;
                let shifted: Vec<f64> = x.iter().zip(&dv).map(|(a, b)| a + b).collect();
                let f_shift = self.smooth(run, t, &shifted)?;
                dirs.push(
                    (0..n)
                        .map(|i| {
                            if self.is_velocity[i] {
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
                self.smooth(run, t, &moved)?;
                for (r, &j) in violated.iter().enumerate() {
                    g_matrix[r * nv + c] =
                        (self.contacts[j].gap.read(run.frame.slots()) - gaps[j]) / s;
                }
            }
            let q: Vec<f64> = violated.iter().map(|&j| gaps[j]).collect();
            self.stats.lcp_solves += 1;
            let mu = match lcp::lemke(&g_matrix, &q) {
                Ok(sol) => {
                    self.stats.lemke_pivots += sol.pivots as u64;
                    sol.z
                }
                Err(_) => {
                    self.stats.fallbacks += 1;
                    match lcp::projected_gauss_seidel(&g_matrix, &q, 1.0, 1e-12, 10_000) {
                        Ok(sol) => sol.z,
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
}

/// Gaps below this (relative to 1 + the largest position) are projected.
const PROJECTION_TOL: f64 = 1e-15;
