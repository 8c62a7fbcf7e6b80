//! The event-driven variant for set-valued contacts (`--solver
//! event-driven`): the BDF integrates the smooth motion between impacts,
//! and every change of the contact state is an event (Pfeiffer & Glocker,
//! "Multibody Dynamics with Unilateral Contacts", 1996, ch. 6; Acary &
//! Brogliato 2008, ch. 7).
//!
//! Each contact is open or closed.
//! - An open contact has no force; its gap is a zero-crossing function. Its
//!   closing is an impact: Newton's law with the velocity-level LCP of the
//!   Moreau stepper ([`Stepper::impact`]) at the located instant.
//! - A closed contact keeps its gap at zero: its force makes the gap's
//!   acceleration vanish (a linear system over the closed contacts, each
//!   right-hand side evaluation), and the force is a zero-crossing function.
//!   When it would turn negative (the normal-force sign test) the contact
//!   opens: a lift-off. Redundant contacts make the system singular; their
//!   forces then come from Lemke's algorithm, never negative, and a contact
//!   left without force whose gap accelerates open lifts off instead
//!   ([`HeldMotion::lift`]).
//! - After an impact a contact is closed if its rebound would last less
//!   than [`MIN_FLIGHT`] of the smooth motion (the end of a Zeno sequence of
//!   ever smaller bounces), or if it takes no rebound at all.
//!
//! Between events the motion is smooth, so the BDF's accuracy holds: impact
//! times are as accurate as the tolerance (a bouncing ball's to 1e-10 at
//! `--tolerance 1e-12`), and the forces in the results are the true contact
//! forces rather than a step's mean impulse. This suits isolated impacts;
//! for many contacts closing and opening at once (chatter, clearances
//! under load) the Moreau time-stepper is the robust choice.
//!
//! Friction is not handled here (stick-slip transitions would be further
//! events); a model with `friction(...)` is refused with a pointer to the
//! time-stepper.

use super::bdf::{Bdf, Dense, EvalFail, OdeProblem, Settings, StepError};
use super::integrator::{Behaviour, DenseOutput, Integrator, Outputs, Relations, StopReason};
use super::jacobian::{Jacobian, JacobianPattern, StateDeps};
use super::lcp;
use super::moreau::Stepper;
use super::{Options, Run, STOPPED};
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::structure::Causal;
use std::sync::Arc;

/// A rebound shorter than this (relative to 1 + |t|) closes the contact.
const MIN_FLIGHT: f64 = 1e-9;

/// The smooth motion with the closed contacts held: the problem the BDF
/// integrates between events.
struct HeldContacts<'s, 'r, 'a> {
    st: &'s Stepper,
    run: &'r mut Run<'a>,
    closed: &'s [usize],
    /// The pattern of the held motion's Jacobian (`held_pattern`).
    pattern: Option<Arc<JacobianPattern>>,
    /// The last failure inside a right-hand side (the BDF sees only that
    /// the evaluation failed), cleared at every step.
    failure: Option<Diagnostic>,
}

impl OdeProblem for HeldContacts<'_, '_, '_> {
    fn n(&self) -> usize {
        self.st.n()
    }

    fn rhs(&mut self, t: f64, x: &[f64], dx: &mut [f64]) -> Result<(), EvalFail> {
        match held_motion(self.st, self.run, t, x, self.closed) {
            Ok(held) => {
                dx.copy_from_slice(&held.derivatives);
                Ok(())
            }
            Err(d) => {
                self.failure = Some(d);
                Err(EvalFail(-1))
            }
        }
    }

    fn pattern(&self) -> Option<Arc<JacobianPattern>> {
        self.pattern.clone()
    }

    /// Forward differences of the right-hand side: the contact forces
    /// depend on the state through the Delassus matrix, which the model's
    /// own tangent does not know. On sparse storage one difference per
    /// colour of the pattern (Curtis, Powell & Reid: the columns of a
    /// colour share no row); on dense storage one per state.
    fn jacobian(&mut self, t: f64, x: &[f64], jac: &mut Jacobian) -> Result<(), EvalFail> {
        let n = x.len();
        let mut f0 = vec![0.0; n];
        self.rhs(t, x, &mut f0)?;
        let mut f1 = vec![0.0; n];
        let mut xp = x.to_vec();
        let increment = |j: usize| f64::EPSILON.sqrt() * x[j].abs().max(1e-6);
        if let Jacobian::Sparse { pattern, .. } = jac {
            let pattern = pattern.clone();
            jac.clear();
            for colour in &pattern.colours {
                for &j in colour {
                    xp[j as usize] += increment(j as usize);
                }
                let r = self.rhs(t, &xp, &mut f1);
                for &j in colour {
                    xp[j as usize] = x[j as usize];
                }
                r?;
                for &j in colour {
                    let j = j as usize;
                    for k in pattern.column(j) {
                        let i = pattern.row_idx[k];
                        jac.set_entry(k, i, j, (f1[i] - f0[i]) / increment(j));
                    }
                }
            }
            return Ok(());
        }
        for j in 0..n {
            let dxj = increment(j);
            xp[j] = x[j] + dxj;
            self.rhs(t, &xp, &mut f1)?;
            xp[j] = x[j];
            for i in 0..n {
                jac.set(i, j, (f1[i] - f0[i]) / dxj);
            }
        }
        Ok(())
    }
}

/// The pattern of the held motion's Jacobian, for every set of closed
/// contacts: the model's own pattern, plus a block coupling the rows the
/// contact forces reach (derivatives that depend on a force variable) with
/// every state the forces depend on: those the gaps and gap rates read,
/// those the reached rows read (the free gap accelerations and, through
/// the directions of the forces, the Delassus matrix), and the reached
/// states themselves. `None` where a dependence is on all states.
fn held_pattern(c: &Causal) -> Option<JacobianPattern> {
    let n = c.states.len();
    let forces: Vec<u32> = c.contacts.iter().map(|k| k.force).collect();
    let deps = StateDeps::with_sources(c, &forces);
    let model_rows: Vec<&[u32]> = c
        .state_ders
        .iter()
        .map(|&d| deps.of_var(d))
        .collect::<Option<_>>()?;
    let reached: Vec<usize> = (0..n)
        .filter(|&i| model_rows[i].iter().any(|&s| s as usize >= n))
        .collect();
    let mut read: Vec<usize> = reached.clone();
    for k in &c.contacts {
        for v in [k.gap, k.gap_rate] {
            read.extend(deps.of_var(v)?.iter().map(|&s| s as usize));
        }
    }
    for &i in &reached {
        read.extend(model_rows[i].iter().map(|&s| s as usize));
    }
    read.retain(|&s| s < n);
    read.sort_unstable();
    read.dedup();
    let mut cols: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, row) in model_rows.iter().enumerate() {
        for &j in row.iter().filter(|&&j| (j as usize) < n) {
            cols[j as usize].push(i);
        }
    }
    for &j in &read {
        cols[j].extend_from_slice(&reached);
    }
    for (j, col) in cols.iter_mut().enumerate() {
        col.push(j);
        col.sort_unstable();
        col.dedup();
    }
    Some(JacobianPattern::from_columns(n, cols))
}

/// The motion with the contacts `closed` held: the state derivatives,
/// every contact's force (zero for open ones), and for each closed contact
/// its lift-off function, which turns negative where the contact should
/// open (the normal-force sign test).
struct HeldMotion {
    derivatives: Vec<f64>,
    forces: Vec<f64>,
    /// The force of a contact the system holds; minus its gap acceleration
    /// where Lemke's algorithm left it without force (it separates). Zero
    /// for open contacts.
    lift: Vec<f64>,
}

/// The state derivatives at (t, x) with the contacts `closed` held (gap
/// acceleration zero), every contact's force and its lift-off function.
///
/// The gap rate is linear in the velocities: with u' the velocity
/// derivatives, the gap acceleration is rate(q, u + u') - rate(q, u) plus
/// the curvature term, the rate's change along q' at fixed u (a difference
/// quotient; zero for gaps linear in q). A unit force k changes u' by b_k,
/// so the forces N solve D N = -a with D[j][k] = rate_j(q, u + b_k) -
/// rate_j(q, u). A singular D (redundant contacts) takes a complementarity
/// solution from Lemke's algorithm instead: 0 <= N, D N + a >= 0. There a
/// force never turns negative, so a contact whose force has fallen to zero
/// and whose gap accelerates open (D N + a > 0) reports minus that
/// acceleration as its lift-off function: N - (D N + a) is continuous
/// through the switch, and without it the contact would stay in the held
/// set, pushing from a distance once its gap had opened.
fn held_motion(
    st: &Stepper,
    run: &mut Run,
    t: f64,
    x: &[f64],
    closed: &[usize],
) -> Result<HeldMotion, Diagnostic> {
    let f0 = st.smooth(run, t, x)?;
    let mut forces = vec![0.0; st.m()];
    let mut lift = vec![0.0; st.m()];
    if closed.is_empty() {
        return Ok(HeldMotion {
            derivatives: f0,
            forces,
            lift,
        });
    }
    let r0 = rates_of(st, run, closed);
    let a = free_gap_accelerations(st, run, t, x, &f0, closed, &r0)?;
    let Delassus { d, responses } = delassus(st, run, t, x, &f0, closed, &r0)?;
    let k = closed.len();
    let rhs: Vec<f64> = a.iter().map(|v| -v).collect();
    let (n_closed, separating) = match solve_dense(&d, &rhs, k) {
        Some(n) => (n, vec![0.0; k]),
        None => {
            let lcp::LcpSolution { z, w, .. } = lcp::lemke(&d, &a).map_err(|e| {
                Diagnostic::error_nospan(
                    DiagnosticKind::Solver,
                    format!("the contact forces at t = {t} have no solution: {e}"),
                )
                .with_hint("simulate it with `--solver moreau`")
                .with_note(STOPPED)
            })?;
            (z, w)
        }
    };
    let mut f = f0;
    for (c, &j) in closed.iter().enumerate() {
        forces[j] = n_closed[c];
        lift[j] = n_closed[c] - separating[c];
        for (fi, bi) in f.iter_mut().zip(&responses[c]) {
            *fi += n_closed[c] * bi;
        }
    }
    Ok(HeldMotion {
        derivatives: f,
        forces,
        lift,
    })
}

/// The gap rates of `contacts`, as the buffer holds them.
fn rates_of(st: &Stepper, run: &Run, contacts: &[usize]) -> Vec<f64> {
    let (_, rates, _) = st.contact_values(run);
    contacts.iter().map(|&j| rates[j]).collect()
}

/// The velocity-level Delassus matrix of `contacts` at (t, x), whose
/// smooth derivatives are `f0` and gap rates `rates` (both from the
/// evaluation at x the caller made; not repeated here): a unit force (or
/// impulse) k changes the velocities by `responses[k]` and the gap rate r
/// by d[r * k_len + k] (exact for gap rates linear in the velocities). The
/// same matrix maps forces to gap accelerations.
struct Delassus {
    /// Row-major, contacts x contacts.
    d: Vec<f64>,
    responses: Vec<Vec<f64>>,
}

fn delassus(
    st: &Stepper,
    run: &mut Run,
    t: f64,
    x: &[f64],
    f0: &[f64],
    contacts: &[usize],
    rates: &[f64],
) -> Result<Delassus, Diagnostic> {
    let k = contacts.len();
    let mut d = vec![0.0; k * k];
    let mut responses = Vec::with_capacity(k);
    for (c, &j) in contacts.iter().enumerate() {
        // Zero on the positions: only velocities move.
        let b = st.unit_response(run, t, x, f0, j)?;
        let moved: Vec<f64> = x.iter().zip(&b).map(|(x, b)| x + b).collect();
        st.smooth(run, t, &moved)?;
        for (r, (rate, r0)) in rates_of(st, run, contacts).iter().zip(rates).enumerate() {
            d[r * k + c] = rate - r0;
        }
        responses.push(b);
    }
    let diagonal: Vec<f64> = (0..k).map(|r| d[r * k + r]).collect();
    st.check_diagonal(run, t, contacts, &[], &diagonal)?;
    Ok(Delassus { d, responses })
}

/// The gap accelerations of `contacts` at (t, x) without contact forces,
/// from the smooth derivatives `f0` there. The gap rate is J(q, t) u +
/// dg/dt at fixed q, linear in the velocities u, so its rate of change is
/// J u' (exactly: the rate at u + u' minus the rate at u) plus its change
/// along (t, q) at fixed u (a central difference over eps in time and eps q'
/// in the positions; exact for gaps linear in q and t). The time term is
/// what holds a contact on a moving surface (a shaken table). `r0` are the
/// gap rates at (t, x), from the caller's evaluation there.
fn free_gap_accelerations(
    st: &Stepper,
    run: &mut Run,
    t: f64,
    x: &[f64],
    f0: &[f64],
    contacts: &[usize],
    r0: &[f64],
) -> Result<Vec<f64>, Diagnostic> {
    let rates_of = |run: &Run| rates_of(st, run, contacts);
    let moved = |eps: f64, velocities: bool| -> Vec<f64> {
        x.iter()
            .zip(f0)
            .zip(&st.is_velocity)
            .map(|((x, d), &v)| if v == velocities { x + eps * d } else { *x })
            .collect()
    };
    st.smooth(run, t, &moved(1.0, true))?;
    let mut a: Vec<f64> = rates_of(run).iter().zip(r0).map(|(r, r0)| r - r0).collect();
    let speed = x
        .iter()
        .zip(f0)
        .zip(&st.is_velocity)
        .filter(|(_, v)| !**v)
        .fold(0.0f64, |m, ((_, d), _)| m.max(d.abs()));
    // A central difference over (t -+ eps, q -+ eps q'): truncation eps^2,
    // rounding 1e-16 / eps, both about 1e-10 relative.
    let mut eps = 1e-6 * (1.0 + t.abs());
    if speed > 0.0 {
        eps = eps.min(1e-6 * st.scale(x) / speed);
    }
    st.smooth(run, t + eps, &moved(eps, false))?;
    let ahead = rates_of(run);
    st.smooth(run, t - eps, &moved(-eps, false))?;
    for (ai, (r, b)) in a.iter_mut().zip(ahead.iter().zip(rates_of(run))) {
        *ai += (r - b) / (2.0 * eps);
    }
    Ok(a)
}

/// Gaussian elimination with partial pivoting on the k x k row-major `a`;
/// `None` when a pivot is negligible (a singular, redundant system).
fn solve_dense(a: &[f64], b: &[f64], k: usize) -> Option<Vec<f64>> {
    let mut m = a.to_vec();
    let mut x = b.to_vec();
    let size = a.iter().fold(0.0f64, |s, v| s.max(v.abs()));
    for col in 0..k {
        let p = (col..k).max_by(|&i, &j| m[i * k + col].abs().total_cmp(&m[j * k + col].abs()))?;
        if m[p * k + col].abs() <= 1e-12 * size {
            return None;
        }
        if p != col {
            for c in 0..k {
                m.swap(p * k + c, col * k + c);
            }
            x.swap(p, col);
        }
        for r in col + 1..k {
            let factor = m[r * k + col] / m[col * k + col];
            for c in col..k {
                m[r * k + c] -= factor * m[col * k + c];
            }
            x[r] -= factor * x[col];
        }
    }
    for col in (0..k).rev() {
        let s: f64 = (col + 1..k).map(|c| m[col * k + c] * x[c]).sum();
        x[col] = (x[col] - s) / m[col * k + col];
    }
    Some(x)
}

/// A change of the contact state.
#[derive(Clone, Copy, Debug, PartialEq)]
enum ContactEvent {
    /// An open contact's gap reached zero.
    Impact(usize),
    /// A closed contact's force reached zero.
    LiftOff(usize),
    /// An open contact rebounded by less than the step resolves (its gap
    /// stayed below zero over a whole step while the free motion pulls it
    /// back): the end of a Zeno sequence, it closes.
    ComesToRest(usize),
}

/// The event-driven contact solver as an [`Integrator`]: BDF steps of the
/// motion with the closed contacts held; a contact event inside a step ends
/// it ([`StopReason::RootFound`]) at the located instant.
///
/// When-clauses and samples are the hybrid loop's events like any other: a
/// rising when-condition is located on the dense output by bisection
/// ([`Relations::Live`]), a sample instant bounds the step; after either
/// the contacts are settled again ([`Integrator::restart`]: a `reinit` may
/// drive one into its wall).
pub(super) struct EventDrivenIntegrator {
    st: Stepper,
    /// The contacts held closed.
    closed: Vec<usize>,
    settings: Settings,
    /// The BDF of the current smooth phase (none right after an event).
    bdf: Option<Bdf>,
    dense: Clipped,
    /// The contact event that ended the last step.
    pending: Option<ContactEvent>,
    /// The length of the run (the shortest rebound followed scales with
    /// it).
    span: f64,
    /// The held motion's Jacobian pattern.
    pattern: Option<Arc<JacobianPattern>>,
}

impl EventDrivenIntegrator {
    pub(super) fn new(run: &Run, opts: &Options) -> Result<EventDrivenIntegrator, Diagnostic> {
        if let Some(fr) = run.c.frictions.first() {
            return Err(Diagnostic::error(
                DiagnosticKind::Unsupported,
                fr.span,
                "the event-driven contact solver does not handle friction",
            )
            .with_label("Coulomb friction")
            .with_hint(
                "simulate it with `--solver moreau` (the default for models with contacts)",
            ));
        }
        let mut st = Stepper::new(run)?;
        st.stats.event_driven = true;
        let n = st.n();
        Ok(EventDrivenIntegrator {
            st,
            closed: Vec::new(),
            settings: Settings {
                rtol: opts.tolerance,
                atol: vec![opts.atol.unwrap_or(opts.tolerance); n],
                max_step: (opts.stop - opts.start).abs(),
                first_step: None,
                linear_solver: opts.linear_solver,
                // Measured: on the resting mass of
                // tests/models/contacts/liftoff.rmo the order-2 start took
                // 14% more steps; the impacts here are located at the run's
                // tolerance without it.
                taylor_start: false,
            },
            bdf: None,
            dense: Clipped {
                dense: Dense::constant(opts.start, opts.start, vec![0.0; n]),
                end: opts.start,
            },
            pending: None,
            span: (opts.stop - opts.start).abs(),
            pattern: held_pattern(run.c).map(Arc::new),
        })
    }
}

impl Integrator for EventDrivenIntegrator {
    fn behaviour(&self) -> Behaviour {
        Behaviour {
            relations: Relations::Live,
            outputs: Outputs::Interpolated,
            chatter_events: 1000,
            chatter_hint: "contacts chatter here; simulate it with `--solver moreau`",
            frame_at_last_iterate: false,
        }
    }

    fn start(&mut self, run: &mut Run, t: f64, x: &mut Vec<f64>) -> Result<(), Diagnostic> {
        self.st.check_start_gaps(run, t, x)?;
        self.st.probe_velocities(run, t, x)?;
        // Closed contacts that approach at the start are an impact now.
        self.restart(run, t, x)
    }

    fn step(
        &mut self,
        run: &mut Run,
        t: f64,
        x: &[f64],
        t_bound: f64,
    ) -> Result<StopReason, Diagnostic> {
        let mut held = HeldContacts {
            st: &self.st,
            run,
            closed: &self.closed,
            pattern: self.pattern.clone(),
            failure: None,
        };
        if self.bdf.is_none() {
            match Bdf::new(&mut held, t, x, t_bound, self.settings.clone()) {
                Ok(b) => self.bdf = Some(b),
                Err(_) => return Err(failure(held.failure, t)),
            }
        }
        let Some(bdf) = self.bdf.as_mut() else {
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::Internal,
                "internal error: the BDF did not start",
            ));
        };
        bdf.t_bound = t_bound;
        held.failure = None;
        let r = bdf.step(&mut held);
        held.run.stats.integrator.add(&bdf.stats);
        bdf.stats = Default::default();
        if let Err(StepError::TooSmallStep {
            t, h, last_failure, ..
        }) = r
        {
            // The model's own failure only if this step failed on one.
            let d = held
                .failure
                .take()
                .filter(|_| last_failure.is_some())
                .unwrap_or_else(|| {
                    Diagnostic::error_nospan(
                        DiagnosticKind::Solver,
                        format!("the step size fell to {h:e} at t = {t} between contact events"),
                    )
                    .with_hint("try --solver moreau, or a looser --tolerance")
                });
            return Err(d.with_note(STOPPED));
        }
        bdf.dense_into(&mut self.dense.dense);
        self.dense.end = self.dense.dense.t;
        let reached = bdf.t >= t_bound;
        let found = first_event(&self.st, run, &self.dense.dense, &self.closed)?;
        run.stats.contacts = Some(self.st.stats);
        Ok(match found {
            Some((te, e)) => {
                self.pending = Some(e);
                self.dense.end = te;
                StopReason::RootFound
            }
            None if reached => StopReason::BoundReached,
            None => StopReason::InternalStep,
        })
    }

    fn dense(&self) -> &dyn DenseOutput {
        &self.dense
    }

    /// The model with the closed contacts' forces.
    fn evaluate(&self, run: &mut Run, t: f64, x: &[f64]) -> Result<(), Diagnostic> {
        let forces = held_motion(&self.st, run, t, x, &self.closed)?.forces;
        self.st.derivatives(run, t, x, &forces).map(|_| ())
    }

    /// A contact closes (an impact, or a rebound too short to follow) or
    /// opens (a lift-off).
    fn handle_root(&mut self, run: &mut Run, t: f64, x: &mut Vec<f64>) -> Result<(), Diagnostic> {
        let Some(what) = self.pending.take() else {
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::Internal,
                "internal error: no contact event to handle",
            ));
        };
        self.closed = match what {
            ContactEvent::LiftOff(j) => {
                self.st.stats.lift_offs += 1;
                let mut closed = std::mem::take(&mut self.closed);
                closed.retain(|&k| k != j);
                // The remaining closed contacts may now pull: settle them.
                hold_pushing(&self.st, run, t, x, closed)?
            }
            ContactEvent::Impact(_) => settle(&mut self.st, run, t, x, self.span, None)?,
            ContactEvent::ComesToRest(j) => settle(&mut self.st, run, t, x, self.span, Some(j))?,
        };
        self.bdf = None;
        run.stats.contacts = Some(self.st.stats);
        Ok(())
    }

    /// Settles the contacts at (t, x): an impact for those that approach,
    /// and the set held closed.
    fn restart(&mut self, run: &mut Run, t: f64, x: &mut Vec<f64>) -> Result<(), Diagnostic> {
        self.closed = settle(&mut self.st, run, t, x, self.span, None)?;
        self.bdf = None;
        self.pending = None;
        run.stats.contacts = Some(self.st.stats);
        Ok(())
    }
}

/// A BDF step's dense output, ending at a contact event inside it.
struct Clipped {
    dense: Dense,
    end: f64,
}

impl DenseOutput for Clipped {
    fn span(&self) -> (f64, f64) {
        (self.dense.t_old, self.end)
    }

    fn eval(&self, t: f64, out: &mut [f64]) {
        self.dense.eval(t, out)
    }
}

fn failure(d: Option<Diagnostic>, t: f64) -> Diagnostic {
    d.unwrap_or_else(|| {
        Diagnostic::error_nospan(
            DiagnosticKind::Solver,
            format!("the model cannot be evaluated at t = {t}"),
        )
    })
    .with_note(STOPPED)
}

/// At a contact event (or the start): applies the impact law to the
/// contacts that are closed at x and approach, then returns the contacts
/// that stay closed: zero gap and a rebound shorter than [`MIN_FLIGHT`]
/// (or none), and `force` (a rebound the step could not resolve), holding
/// with a nonnegative force. Their remaining gap rates (rebounds too short
/// to follow, rounding) are set to zero by the impulses that do so, so that
/// the held phase starts on the constraint; the kinetic energy this
/// removes is below that of the shortest followed rebound.
fn settle(
    st: &mut Stepper,
    run: &mut Run,
    t: f64,
    x: &mut Vec<f64>,
    span: f64,
    force: Option<usize>,
) -> Result<Vec<usize>, Diagnostic> {
    // The event locator leaves a closing gap at zero or just below; a gap
    // above rounding is open.
    let tol = 1e-12 * st.scale(x);
    st.smooth(run, t, x)?;
    let (gaps, rates, _) = st.contact_values(run);
    let touching: Vec<usize> = (0..gaps.len()).filter(|&j| gaps[j] <= tol).collect();
    if touching.is_empty() {
        return Ok(Vec::new());
    }
    if touching.iter().any(|&j| rates[j] < 0.0) {
        let (x_plus, _) = st.impact(run, t, x)?;
        *x = x_plus;
    }
    // Rebounds: the flight time 2 v / |a| of each touching contact under
    // its free gap acceleration a.
    let f0 = st.smooth(run, t, x)?;
    let (_, rates, _) = st.contact_values(run);
    let touching_rates: Vec<f64> = touching.iter().map(|&j| rates[j]).collect();
    let accelerations = free_gap_accelerations(st, run, t, x, &f0, &touching, &touching_rates)?;
    let shortest = MIN_FLIGHT * (1.0 + t.abs()).max(span * 1e-12);
    let candidates: Vec<usize> = touching
        .iter()
        .zip(&accelerations)
        .filter(|&(&j, &a)| {
            let v = rates[j];
            v <= 0.0 || (a < 0.0 && 2.0 * v / -a < shortest) || force == Some(j)
        })
        .map(|(&j, _)| j)
        .collect();
    let closed = hold_pushing(st, run, t, x, candidates)?;
    zero_rates(st, run, t, x, &closed)?;
    // Integration error lets held gaps drift by about the tolerance: put
    // the positions back on the admissible set at every event.
    st.project_positions(run, t, x)?;
    Ok(closed)
}

/// Sets the gap rates of `closed` to zero by impulses along their unit
/// responses (the velocity-level Delassus system; see [`held_motion`]).
fn zero_rates(
    st: &Stepper,
    run: &mut Run,
    t: f64,
    x: &mut [f64],
    closed: &[usize],
) -> Result<(), Diagnostic> {
    if closed.is_empty() {
        return Ok(());
    }
    let f0 = st.smooth(run, t, x)?;
    let r0 = rates_of(st, run, closed);
    let Delassus { d, responses } = delassus(st, run, t, x, &f0, closed, &r0)?;
    let k = closed.len();
    let rhs: Vec<f64> = r0.iter().map(|v| -v).collect();
    // Redundant contacts (a singular system): their rates are zero already
    // or cannot all be made so; leave the velocities.
    if let Some(p) = solve_dense(&d, &rhs, k) {
        for (pc, b) in p.iter().zip(&responses) {
            for (xi, bi) in x.iter_mut().zip(b) {
                *xi += pc * bi;
            }
        }
    }
    Ok(())
}

/// Of the candidate closed contacts, those that hold with nonnegative
/// forces: contacts whose force comes out negative open, one at a time
/// (the most negative first), until all remaining forces are nonnegative.
fn hold_pushing(
    st: &Stepper,
    run: &mut Run,
    t: f64,
    x: &[f64],
    mut closed: Vec<usize>,
) -> Result<Vec<usize>, Diagnostic> {
    while !closed.is_empty() {
        let lift = held_motion(st, run, t, x, &closed)?.lift;
        let tol = force_tolerance(&lift);
        let Some(&worst) = closed
            .iter()
            .filter(|&&j| lift[j] < -tol)
            .min_by(|&&a, &&b| lift[a].total_cmp(&lift[b]))
        else {
            break;
        };
        closed.retain(|&j| j != worst);
    }
    Ok(closed)
}

/// Forces within this of zero (relative to the largest) count as zero: a
/// contact that carries no load stays closed instead of opening and closing
/// on rounding.
fn force_tolerance(forces: &[f64]) -> f64 {
    1e-10 * forces.iter().fold(0.0f64, |m, f| m.max(f.abs()))
}

/// The earliest contact event inside the step that `dense` covers, located
/// by the Illinois method on the dense output. A lift-off is a force below
/// minus the phase's [`force_tolerance`]; an impact at the step's start
/// (a gap already below zero) only when the contact approaches.
fn first_event(
    st: &Stepper,
    run: &mut Run,
    dense: &Dense,
    closed: &[usize],
) -> Result<Option<(f64, ContactEvent)>, Diagnostic> {
    let n = st.n();
    let mut y = vec![0.0; n];
    let (t0, t1) = (dense.t_old, dense.t);
    if t1 <= t0 {
        return Ok(None);
    }
    dense.eval(t0, &mut y);
    let tol = force_tolerance(&held_motion(st, run, t0, &y, closed)?.lift);
    let mut value = |run: &mut Run, t: f64, e: ContactEvent| -> Result<f64, Diagnostic> {
        dense.eval(t, &mut y);
        Ok(match e {
            ContactEvent::Impact(j) | ContactEvent::ComesToRest(j) => {
                st.smooth(run, t, &y)?;
                st.gaps(run)[j]
            }
            ContactEvent::LiftOff(j) => held_motion(st, run, t, &y, closed)?.lift[j] + tol,
        })
    };
    let mut best: Option<(f64, ContactEvent)> = None;
    let events: Vec<ContactEvent> = (0..st.contact_count())
        .map(|j| {
            if closed.contains(&j) {
                ContactEvent::LiftOff(j)
            } else {
                ContactEvent::Impact(j)
            }
        })
        .collect();
    for e in events {
        let f1 = value(run, t1, e)?;
        if f1 >= 0.0 {
            continue;
        }
        let mut f0 = value(run, t0, e)?;
        let mut t0 = t0;
        if f0 < 0.0 {
            // Below zero at the step's start too: a contact that rebounded
            // from a gap of rounding size, or a force that started at
            // rounding size. The crossing is the return below zero after
            // the first positive sample; with none, it is now.
            let mut lifted = None;
            for k in 1..16 {
                let tk = t0 + (t1 - t0) * k as f64 / 16.0;
                let fk = value(run, tk, e)?;
                if fk >= 0.0 {
                    lifted = Some((tk, fk));
                    break;
                }
            }
            match lifted {
                Some((tk, fk)) => (t0, f0) = (tk, fk),
                None => {
                    // An open contact below zero over the whole step: an
                    // impact now if it approaches; a rebound the step
                    // cannot resolve if it separates while the free motion
                    // pulls it back; neither if it separates freely (a gap
                    // that drifted below zero before a lift-off).
                    let now = match e {
                        ContactEvent::Impact(j) => {
                            let mut y0 = vec![0.0; n];
                            dense.eval(dense.t_old, &mut y0);
                            let f = st.smooth(run, dense.t_old, &y0)?;
                            let rate = st.contact_values(run).1[j];
                            let a = free_gap_accelerations(
                                st,
                                run,
                                dense.t_old,
                                &y0,
                                &f,
                                &[j],
                                &[rate],
                            )?[0];
                            if rate < 0.0 {
                                Some(e)
                            } else if a < 0.0 {
                                Some(ContactEvent::ComesToRest(j))
                            } else {
                                None
                            }
                        }
                        _ => Some(e),
                    };
                    if let Some(e) = now {
                        best = Some(earlier(best, (dense.t_old, e)));
                    }
                    continue;
                }
            }
        }
        let (mut a, mut fa, mut b, mut fb) = (t0, f0, t1, f1);
        let mut side = 0;
        for _ in 0..100 {
            if b - a <= 4.0 * f64::EPSILON * (1.0 + b.abs()) {
                break;
            }
            let c = (a * fb - b * fa) / (fb - fa);
            let c = if c.is_finite() && c > a && c < b {
                c
            } else {
                0.5 * (a + b)
            };
            let fc = value(run, c, e)?;
            if fc >= 0.0 {
                (a, fa) = (c, fc);
                if side == -1 {
                    fb /= 2.0;
                }
                side = -1;
            } else {
                (b, fb) = (c, fc);
                if side == 1 {
                    fa /= 2.0;
                }
                side = 1;
            }
        }
        best = Some(earlier(best, (b, e)));
    }
    Ok(best)
}

fn earlier(a: Option<(f64, ContactEvent)>, b: (f64, ContactEvent)) -> (f64, ContactEvent) {
    match a {
        Some(a) if a.0 <= b.0 => a,
        _ => b,
    }
}

#[cfg(test)]
mod tests {
    use super::{held_pattern, solve_dense};

    /// The held motion's pattern of the column on a sprung plate
    /// (`tests/models/contacts/stack_on_floor.rmo`, 82 states): the chain's
    /// band plus the contact's block, a few colours. (That the coloured
    /// differences equal the full ones is checked end to end in
    /// `tests/event_driven.rs`, sparse against dense.)
    #[test]
    fn the_held_motion_of_a_column_on_a_floor_has_a_sparse_pattern() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/models/contacts/stack_on_floor.rmo");
        let (mut lib, loaded) = crate::load(&path);
        let loaded = loaded.expect("parses");
        let m = crate::select_model(&mut lib, &loaded, None).expect("model");
        let c = crate::compile(&mut lib, m).expect("compiles");
        let p = held_pattern(&c.causal).expect("a pattern");
        assert_eq!(p.n, 82);
        assert!(p.nnz() <= 400, "{} entries", p.nnz());
        assert!(p.colours.len() <= 8, "{} colours", p.colours.len());
        // The contact force reaches the lowest body's velocity and the
        // plate's, and depends on the lowest body's height (the gap) and on
        // its neighbour's (the spring above), so the plate's acceleration
        // does too (an entry the model's own pattern does not have).
        let states: Vec<&str> = (c.causal.states.iter())
            .map(|&s| c.causal.vars[s as usize].name.as_str())
            .collect();
        let index = |name: &str| states.iter().position(|s| *s == name).expect(name);
        let (v1, y2, vp) = (index("v[1]"), index("y[2]"), index("vp"));
        for j in [index("y[1]"), y2, v1] {
            let rows = &p.row_idx[p.column(j)];
            assert!(
                rows.contains(&v1) && rows.contains(&vp),
                "column {}",
                states[j]
            );
        }
        // With the contact held, at a point off the equilibrium: the
        // coloured differences on the pattern are the differences of every
        // state one at a time (an entry the pattern missed would be one
        // the full differences have and the coloured ones lack).
        let jit = crate::jit::codegen::compile(&c.program).expect("JIT");
        let opts = crate::solve::settings::RunRequest::default()
            .resolve(&c.causal)
            .expect("settings");
        let mut run = crate::solve::Run::new(&c.causal, &c.program, &jit, &opts);
        run.call(crate::solve::model::Entry::Parameters)
            .expect("parameters");
        run.call(crate::solve::model::Entry::Starts)
            .expect("starts");
        crate::solve::init::initialize(&mut run, &opts).expect("initializes");
        let mut st = crate::solve::moreau::Stepper::new(&run).expect("contacts");
        let (t0, x0) = (run.frame.time(), run.states());
        st.probe_velocities(&mut run, t0, &x0).expect("velocities");
        let x: Vec<f64> = (run.states().iter().enumerate())
            .map(|(i, x)| x + 1e-3 * ((i * 7 % 11) as f64 - 5.0))
            .collect();
        let pattern = std::sync::Arc::new(p);
        let closed = [0];
        let mut held = super::HeldContacts {
            st: &st,
            run: &mut run,
            closed: &closed,
            pattern: Some(pattern.clone()),
            failure: None,
        };
        let n = x.len();
        let mut sparse = super::Jacobian::new(n, Some(pattern), true);
        let mut dense = super::Jacobian::new(n, None, false);
        use crate::solve::bdf::OdeProblem;
        if held.jacobian(0.5, &x, &mut sparse).is_err() {
            panic!("{:?}", held.failure.map(|d| d.message));
        }
        held.jacobian(0.5, &x, &mut dense).expect("full");
        let mut reached = 0;
        for i in 0..n {
            for j in 0..n {
                let (a, b) = (sparse.get(i, j), dense.get(i, j));
                assert!(
                    (a - b).abs() <= 1e-9 * (1.0 + b.abs()),
                    "d {} / d {}: {a} coloured, {b} full",
                    states[i],
                    states[j]
                );
                reached += usize::from(b != 0.0 && i == vp);
            }
        }
        assert!(reached >= 5, "the contact couples vp to {reached} states");
    }

    #[test]
    fn dense_solve_pivots_and_detects_singular_systems() {
        // [[0, 2], [3, 1]] x = [4, 5] -> x = [1, 2] (needs a row swap).
        let x = solve_dense(&[0.0, 2.0, 3.0, 1.0], &[4.0, 5.0], 2).expect("regular");
        assert!((x[0] - 1.0).abs() < 1e-15 && (x[1] - 2.0).abs() < 1e-15);
        // Two opposed contacts at one place: D = [[a, -a], [-a, a]].
        assert!(solve_dense(&[1.0, -1.0, -1.0, 1.0], &[0.0, 0.0], 2).is_none());
    }
}
