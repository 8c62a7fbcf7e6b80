//! The structural-dynamics integrators: generalized-alpha (Chung & Hulbert,
//! "A time integration algorithm for structural dynamics with improved
//! numerical dissipation: the generalized-alpha method", J. Appl. Mech. 60,
//! 1993) and, as its member with alpha_m = alpha_f = 0, Newmark's method
//! (Newmark, "A method of computation for structural dynamics", J. Eng.
//! Mech. Div. 85, 1959).
//!
//! rmoc's model is a first-order ODE x' = f(t, x) over the states of the
//! index-reduced model. Its second-order structure is found in the causal
//! model: a *position* state q whose derivative is computed as exactly
//! another state v (`der(q) = v`), its *velocity*. Every other state is
//! *first order*. Constrained mechanical systems come index-reduced (the
//! dummy-derivative method of `structure/`): a constraint on positions is
//! an algebraic equation the model solves at every evaluation, with some
//! positions as dummy states, so the constraint holds at each step end to
//! the model's own solve (no drift, no projection) and the method only
//! sees an ODE in the remaining states. The method works in the form of
//! Arnold & Brüls
//! ("Convergence of the generalized-alpha scheme for constrained
//! mechanical systems", Multibody Syst. Dyn. 18, 2007), with an
//! acceleration-like vector a (one entry per velocity and first-order
//! state) next to the true derivatives z = f(t, x):
//!
//! ```text
//! (1 - alpha_m) a[n+1] + alpha_m a[n] = (1 - alpha_f) z[n+1] + alpha_f z[n]
//! v[n+1] = v[n] + h ((1 - gamma) a[n] + gamma a[n+1])
//! q[n+1] = q[n] + h v[n] + h^2 ((1/2 - beta) a_v[n] + beta a_v[n+1])
//! y[n+1] = y[n] + h ((1 - gamma) a_y[n] + gamma a_y[n+1])   (first order)
//! ```
//!
//! The unknowns of a step are z[n+1] for the velocities and first-order
//! states (the *rates*), solved by Newton's method on the residual z -
//! f(t[n+1], x(z)) with the matrix I - c J D on the rates: J the model's
//! Jacobian df/dx (coloured tangent runs on [`JacobianPattern`]), D =
//! dx/dz, c = (1 - alpha_f) / (1 - alpha_m). A position's equation is
//! der(q) = v, which its recurrence satisfies, so the Newton system has one
//! unknown per rate and the sparse pattern of J on them (for a chain of
//! masses, the band of its stiffness). Newton's method stops when its last
//! correction, scaled by the contraction rate carried from step to step,
//! is below the tolerance: one iteration per step on a linear model.
//!
//! The first-order states take the same recurrence, which
//! is second-order accurate with gamma = 1/2 - alpha_m + alpha_f (Jansen,
//! Whiting & Hulbert 2000 derive the first-order generalized-alpha method
//! from the same condition), and with Newmark's (1/4, 1/2) is the
//! trapezoidal rule.
//!
//! Chung-Hulbert parameters from the spectral radius at infinity rho:
//! alpha_m = (2 rho - 1) / (rho + 1), alpha_f = rho / (rho + 1), gamma =
//! 1/2 - alpha_m + alpha_f, beta = (1 - alpha_m + alpha_f)^2 / 4. Newmark's
//! average acceleration (beta 1/4, gamma 1/2) conserves the energy of a
//! linear undamped system and dissipates nothing.
//!
//! Steps are fixed (`--step`): they end on the grid start + j h, a step
//! shortened to end on a time event or the stop time. After a step that
//! halvings cut short, the next ones double (2x the last) until one
//! reaches the grid again, instead of trying the whole way at once: across
//! a contact's impact each failed attempt costs a Jacobian, and a needle
//! thrown across its clearance
//! (`tests/models/structural/needle_in_clearance.rmo`) halved 927 times
//! without this, 298 with it. Without a step they are adaptive: the
//! local error is the distance of the step's end from the extrapolated
//! cubic of the last step, held to the run's tolerances.
//!
//! Relations are live (the discontinuity handling of Miao et al., seed 000,
//! section 4.3, for penalty contacts written with if-expressions): the
//! model is evaluated in event mode, so a relation takes its value at each
//! Newton iterate, and when-conditions are events the hybrid loop locates
//! on the dense output. The truth values of the relations that switch with
//! the states are the *active set*. A Newton iterate whose active set
//! differs from the one the Jacobian was evaluated with re-evaluates the
//! Jacobian there (`AlphaStats::active_set_changes`). A converged step
//! whose active set differs from its start's measures the jump: the end's
//! derivatives under both sets, as the change gamma h |dz| it makes in the
//! states, in units of the tolerances (seed 000's eq. 24 compares the
//! forces); above 1 the step is halved (`discontinuity_halvings`), down to
//! the smallest step, so that the steps close in on the switch. max() and
//! min() are not relations: their kinks change the Jacobian, not the
//! force, and a Newton iteration that fails on one re-evaluates it. The Newton matrix is
//! kept while the step keeps its length; the Jacobian is evaluated at a
//! (re)start and when Newton fails with an older one; a step whose Newton
//! iteration fails with a fresh Jacobian is halved (counted). The dense
//! output is the cubic Hermite interpolant of the states and their
//! derivatives at the step's ends.
//!
//! Cost per step (benchmark 3c, `cargo bench --bench structural -- step`):
//! the step's loops run over runs of consecutive rates and positions (an
//! array of bodies declares its states as arrays), which vectorize; the
//! last Newton iterate's evaluation serves the hybrid loop's per-step
//! checks ([`Behaviour::frame_at_last_iterate`]), so a linear model costs
//! one model evaluation, one solve and a few vector passes a step.

use super::integrator::{Behaviour, DenseOutput, Integrator, Outputs, Relations, StopReason};
use super::jacobian::{Jacobian, JacobianPattern};
use super::linalg::IterationMatrix;
use super::model::{Entry, ModelOde, StateSlots};
use super::{Options, Run, STOPPED};
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::flat::Node;
use crate::structure::{Block, Causal};
use std::sync::Arc;

/// The parameters of a member of the family.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct AlphaParameters {
    pub alpha_m: f64,
    pub alpha_f: f64,
    pub beta: f64,
    pub gamma: f64,
}

impl AlphaParameters {
    /// Newmark's method (alpha_m = alpha_f = 0).
    pub fn newmark(beta: f64, gamma: f64) -> AlphaParameters {
        AlphaParameters {
            alpha_m: 0.0,
            alpha_f: 0.0,
            beta,
            gamma,
        }
    }

    /// Chung & Hulbert's optimal parameters for the spectral radius
    /// `rho_inf` in [0, 1] at infinite frequency.
    pub fn chung_hulbert(rho_inf: f64) -> AlphaParameters {
        let alpha_m = (2.0 * rho_inf - 1.0) / (rho_inf + 1.0);
        let alpha_f = rho_inf / (rho_inf + 1.0);
        AlphaParameters {
            alpha_m,
            alpha_f,
            gamma: 0.5 - alpha_m + alpha_f,
            beta: 0.25 * (1.0 - alpha_m + alpha_f).powi(2),
        }
    }
}

/// What a state is to the method.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// A position: its derivative is the state at this index.
    Position(usize),
    /// A velocity of a position, or a first-order state.
    Rate,
}

/// The second-order structure: for each state, whether its derivative is
/// exactly another state (`der(q) = v`, an explicit block or an alias).
fn kinds(c: &Causal) -> Vec<Kind> {
    let state_index = |v: u32| c.states.iter().position(|&s| s == v);
    let alias: rustc_hash::FxHashMap<u32, (u32, bool)> = c
        .aliases
        .iter()
        .map(|a| (a.var, (a.of, a.negated)))
        .collect();
    let mut computed_as: rustc_hash::FxHashMap<u32, u32> = Default::default();
    for b in &c.blocks {
        if let Block::Explicit { var, value, .. } = b
            && let Node::Var(v) = c.arena.node(*value)
        {
            computed_as.insert(*var, v);
        }
    }
    let kinds: Vec<Kind> = c
        .state_ders
        .iter()
        .enumerate()
        .map(|(k, &d)| {
            let source = match alias.get(&d) {
                Some(&(of, false)) => Some(of),
                Some(&(_, true)) => None,
                None => computed_as.get(&d).copied(),
            };
            // The velocity may itself be known under an alias.
            let source = source.map(|v| match alias.get(&v) {
                Some(&(of, false)) => of,
                _ => v,
            });
            match source.and_then(state_index) {
                Some(v) if v != k => Kind::Position(v),
                _ => Kind::Rate,
            }
        })
        .collect();
    // A position's velocity must be a rate: in a chain der(x) = y, der(y)
    // = z, x is taken as first order.
    (0..kinds.len())
        .map(|i| match kinds[i] {
            Kind::Position(v) if kinds[v] != Kind::Rate => Kind::Rate,
            k => k,
        })
        .collect()
}

/// Statistics of a run, as `--stats` reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct AlphaStats {
    pub steps: u64,
    /// Steps the error estimate rejected (adaptive steps only).
    pub rejected: u64,
    pub newton_iterations: u64,
    pub newton_failures: u64,
    pub rhs_evaluations: u64,
    /// Jacobian evaluations (a refresh after a failed Newton iteration
    /// included).
    pub jacobians: u64,
    pub factorizations: u64,
    /// Steps halved because Newton's method failed with a fresh Jacobian.
    pub halvings: u64,
    /// Steps halved because the model's relations switched inside them with
    /// a jump in the derivatives above the tolerances (seed 000, 4.3).
    pub discontinuity_halvings: u64,
    /// Newton iterations at which the active set of relations differed from
    /// the one the Jacobian was evaluated with (each refreshes it).
    pub active_set_changes: u64,
    /// Position states (the rest are velocities or first order).
    pub positions: u64,
}

/// `len` consecutive rates from state `x` on, which are the Newton
/// unknowns from `k` on.
#[derive(Clone, Copy, Debug)]
struct RateRun {
    x: usize,
    k: usize,
    len: usize,
}

/// `len` consecutive positions from state `q` on whose velocities are the
/// consecutive states from `v` on, the Newton unknowns from `k` on.
#[derive(Clone, Copy, Debug)]
struct PositionRun {
    q: usize,
    v: usize,
    k: usize,
    len: usize,
}

/// The rates and positions as runs of consecutive states (an array of
/// bodies declares its positions and velocities as arrays, so a model has
/// few), so that the step's loops run over slices, which vectorize.
fn runs(kinds: &[Kind], rate_index: &[usize]) -> (Vec<RateRun>, Vec<PositionRun>) {
    let (mut rates, mut positions): (Vec<RateRun>, Vec<PositionRun>) = (Vec::new(), Vec::new());
    for (i, kind) in kinds.iter().enumerate() {
        match *kind {
            Kind::Rate => match rates.last_mut() {
                Some(r) if r.x + r.len == i && r.k + r.len == rate_index[i] => r.len += 1,
                _ => rates.push(RateRun {
                    x: i,
                    k: rate_index[i],
                    len: 1,
                }),
            },
            Kind::Position(v) => match positions.last_mut() {
                Some(r) if r.q + r.len == i && r.v + r.len == v && r.k + r.len == rate_index[v] => {
                    r.len += 1
                }
                _ => positions.push(PositionRun {
                    q: i,
                    v,
                    k: rate_index[v],
                    len: 1,
                }),
            },
        }
    }
    (rates, positions)
}

/// A converged step: the derivatives z and the states at its end, and the
/// active set of relations they were computed with.
struct StepEnd {
    z: Vec<f64>,
    x: Vec<f64>,
    active: Vec<bool>,
}

/// How step lengths are chosen.
#[derive(Clone, Copy, Debug)]
enum Control {
    /// Fixed steps `h` on the grid start + j h.
    Fixed(f64),
    /// Steps chosen by the local error estimate; `next` is the next one.
    Adaptive { next: f64 },
}

/// Newton iterations per attempt.
const MAX_NEWTON: usize = 8;
/// Newton's method has converged when the weighted RMS of the last state
/// change is below this (the weights: atol + rtol |x|).
const NEWTON_TOL: f64 = 1e-3;
/// A step is not halved below this fraction of `h`.
const MIN_FRACTION: f64 = 1.0 / 1024.0;

/// The generalized-alpha family as an [`Integrator`].
pub(super) struct GeneralizedAlpha {
    p: AlphaParameters,
    control: Control,
    start: f64,
    /// The next grid node of fixed steps: start + j h.
    j: u64,
    /// The longest fixed step to try next: twice the last one while the
    /// steps grow back after halvings, unbounded once they reach the grid.
    regrowth: f64,
    /// Whether `dense` holds the last step since the (re)start (its
    /// extrapolation is the error estimate's predictor).
    history: bool,
    rtol: f64,
    atol: Vec<f64>,
    kinds: Vec<Kind>,
    /// The rates (the Newton system's unknowns).
    rates: Vec<usize>,
    /// The rates, and the positions with their velocities, as runs of
    /// consecutive states: the step's loops run over these.
    rate_runs: Vec<RateRun>,
    position_runs: Vec<PositionRun>,
    /// Newton's convergence rate, carried from step to step (1 after a
    /// factorization), as CVODE carries its `crate`.
    rate: f64,
    slots: StateSlots,
    pattern: Arc<JacobianPattern>,
    /// The Newton matrix's pattern (sparse path only).
    matrix_pattern: Option<Arc<JacobianPattern>>,
    /// The relations that switch with the states (those with a zero
    /// crossing), whose truth values are the active set.
    relations: Vec<usize>,
    /// The active set at the current step's start, and the one the
    /// Jacobian was evaluated with.
    step_active: Vec<bool>,
    jac_active: Vec<bool>,
    /// The smallest step the adaptive control takes.
    min_step: f64,
    jac: Jacobian,
    /// Whether `jac` was evaluated at the current step's start.
    jac_fresh: bool,
    lu: Option<IterationMatrix>,
    /// The storage of factors made stale by a new Jacobian, for the next
    /// factorization to reuse (a sparse LU keeps its pivots in it).
    stale_lu: Option<IterationMatrix>,
    /// The step length `lu` was factored for.
    lu_h: f64,
    /// The derivatives z and the acceleration-like vector a at the last
    /// step's end (none before the first step after a (re)start).
    z: Vec<f64>,
    a: Vec<f64>,
    /// The length of the last step, and `a` as the current attempt uses it:
    /// a approximates z at t + (alpha_m - alpha_f) h, a shift that scales
    /// with the step, so a step of another length takes z + (a - z) h /
    /// last_h (exact for a linear z; without it a change of step length
    /// costs the method its second order for a step).
    last_h: f64,
    a_step: Vec<f64>,
    /// Whether `a_step` holds the attempt's a (a step of another length
    /// than the last); otherwise `a` itself serves, uncopied.
    a_scaled: bool,
    started: bool,
    dense: Hermite,
    stats: AlphaStats,
    work: Vec<f64>,
    /// Buffers a step reuses instead of allocating (the model's size
    /// each): see [`Buffers`].
    buffers: Buffers,
}

/// The vectors of one step, kept between steps: a step at N = 1 000
/// would otherwise allocate (and the allocator zero) a dozen vectors of
/// 1 000-2 000 values.
#[derive(Default)]
struct Buffers {
    /// 1 / (atol + rtol |x0|) per state.
    inverse_weight: Vec<f64>,
    /// The right-hand side at the iterate.
    f: Vec<f64>,
    /// The Newton correction on the rates.
    delta: Vec<f64>,
    /// The error estimate's predictor.
    predicted: Vec<f64>,
    /// Storage for the next step's z and x (recycled from the dense
    /// output's old ones).
    z: Vec<f64>,
    x: Vec<f64>,
}

impl GeneralizedAlpha {
    /// The method with parameters `p`, fixed steps `h`, or steps chosen by
    /// the local error estimate against the run's tolerances when `h` is
    /// `None`.
    pub(super) fn new(
        run: &Run,
        opts: &Options,
        p: AlphaParameters,
        h: Option<f64>,
    ) -> Result<GeneralizedAlpha, Diagnostic> {
        let c = run.c;
        if let Some(k) = c.contacts.first() {
            return Err(Diagnostic::error(DiagnosticKind::Unsupported,
                k.span,
                "this model has unilateral contacts, which the generalized-alpha and Newmark integrators cannot handle",
            )
            .with_label("a set-valued contact")
            .with_hint("write the contact as a penalty force, or simulate it with `--solver moreau`")
            .with_note(STOPPED));
        }
        let n = c.states.len();
        let kinds = kinds(c);
        let rates: Vec<usize> = (0..n).filter(|&i| kinds[i] == Kind::Rate).collect();
        let mut rate_index = vec![usize::MAX; n];
        for (k, &i) in rates.iter().enumerate() {
            rate_index[i] = k;
        }
        let (rate_runs, position_runs) = runs(&kinds, &rate_index);
        let pattern = Arc::new(JacobianPattern::of_model(c));
        let sparse = opts.linear_solver.sparse_for(Some(&pattern));
        let matrix_pattern =
            sparse.then(|| Arc::new(matrix_pattern(&pattern, &kinds, &rates, &rate_index)));
        let sparse = matrix_pattern
            .as_ref()
            .is_some_and(|m| opts.linear_solver.sparse_for(Some(m)));
        let atol = super::integrator::absolute_tolerances(run, opts);
        let stats = AlphaStats {
            positions: kinds
                .iter()
                .filter(|k| matches!(k, Kind::Position(_)))
                .count() as u64,
            ..Default::default()
        };
        let span = (opts.stop - opts.start).abs().max(f64::MIN_POSITIVE);
        let control = match h {
            Some(h) => Control::Fixed(h),
            // A small first step; the error estimate grows it.
            None => Control::Adaptive { next: 1e-4 * span },
        };
        let relations = (run.p.relations.iter().enumerate())
            .filter(|(_, r)| r.crossing)
            .map(|(k, _)| k)
            .collect();
        Ok(GeneralizedAlpha {
            p,
            control,
            start: opts.start,
            j: 1,
            regrowth: f64::INFINITY,
            history: false,
            rtol: opts.tolerance,
            atol,
            slots: StateSlots::of(c, run.l()),
            jac: Jacobian::new(n, Some(pattern.clone()), sparse),
            matrix_pattern: if sparse { matrix_pattern } else { None },
            pattern,
            relations,
            step_active: Vec::new(),
            jac_active: Vec::new(),
            min_step: 1e-12 * span,
            kinds,
            rate_runs,
            position_runs,
            rates,
            rate: 1.0,
            jac_fresh: false,
            lu: None,
            stale_lu: None,
            lu_h: f64::NAN,
            z: Vec::new(),
            a: Vec::new(),
            last_h: f64::NAN,
            a_step: Vec::new(),
            a_scaled: false,
            started: false,
            dense: Hermite::default(),
            stats,
            work: Vec::new(),
            buffers: Buffers::default(),
        })
    }

    /// How far a change of the rates' unknowns moves the states: a rate
    /// by h gamma c per unit, a position by h^2 beta c (c = (1 - alpha_f) /
    /// (1 - alpha_m)).
    fn coefficients(&self, h: f64) -> (f64, f64) {
        let p = &self.p;
        let c = (1.0 - p.alpha_f) / (1.0 - p.alpha_m);
        (h * p.gamma * c, h * h * p.beta * c)
    }

    /// The states at the end of a step of length `h` whose derivative
    /// unknowns are `z1` (the recurrences of the module's documentation),
    /// with `a_step` set for the step, into `out`; and the inverse weights
    /// 1 / (atol + rtol |x0|) of the step's norms (as CVODE's ewt) into
    /// `inverse_weight`.
    fn states_at(
        &self,
        x0: &[f64],
        z1: &[f64],
        h: f64,
        out: &mut [f64],
        inverse_weight: &mut [f64],
    ) {
        let p = &self.p;
        let c = (1.0 - p.alpha_f) / (1.0 - p.alpha_m);
        let (wf, wm) = (p.alpha_f / (1.0 - p.alpha_m), p.alpha_m / (1.0 - p.alpha_m));
        let (z, a) = (&self.z, self.a_step());
        let a1 = |z1: f64, z: f64, a: f64| c * z1 + wf * z - wm * a;
        for &RateRun { x, len, .. } in &self.rate_runs {
            let r = x..x + len;
            let values = (x0[r.clone()].iter())
                .zip(&z1[r.clone()])
                .zip(&z[r.clone()])
                .zip(&a[r.clone()]);
            for (o, (((x0, z1), z), a)) in out[r].iter_mut().zip(values) {
                *o = x0 + h * ((1.0 - p.gamma) * a + p.gamma * a1(*z1, *z, *a));
            }
        }
        for &PositionRun { q, v, len, .. } in &self.position_runs {
            let (rq, rv) = (q..q + len, v..v + len);
            let velocity = (x0[rv.clone()].iter())
                .zip(&z1[rv.clone()])
                .zip(&z[rv.clone()])
                .zip(&a[rv]);
            for ((o, x0), (((v0, z1), z), a)) in
                out[rq.clone()].iter_mut().zip(&x0[rq]).zip(velocity)
            {
                *o = x0 + h * v0 + h * h * ((0.5 - p.beta) * a + p.beta * a1(*z1, *z, *a));
            }
        }
        for ((w, atol), x) in inverse_weight.iter_mut().zip(&self.atol).zip(x0) {
            *w = 1.0 / (atol + self.rtol * x.abs());
        }
    }

    /// The positions' derivatives in `z1` (their velocities at the end
    /// `x1`), and the acceleration-like vector at the step's end into
    /// `self.a` (`self.z` still the step's start values).
    fn step_end(&mut self, z1: &mut [f64], x1: &[f64]) {
        for &PositionRun { q, v, len, .. } in &self.position_runs {
            z1[q..q + len].copy_from_slice(&x1[v..v + len]);
        }
        let p = &self.p;
        let (w1, wf, wm) = (
            (1.0 - p.alpha_f) / (1.0 - p.alpha_m),
            p.alpha_f / (1.0 - p.alpha_m),
            p.alpha_m / (1.0 - p.alpha_m),
        );
        let next = |z1: &f64, z: &f64, a: f64| w1 * z1 + wf * z - wm * a;
        if self.a_scaled {
            self.a.clear();
            (self.a).extend(
                (z1.iter().zip(&self.z).zip(&self.a_step)).map(|((z1, z), &a)| next(z1, z, a)),
            );
        } else {
            for ((a, z1), z) in self.a.iter_mut().zip(z1.iter()).zip(&self.z) {
                *a = next(z1, z, *a);
            }
        }
    }

    /// a as the current attempt uses it.
    fn a_step(&self) -> &[f64] {
        if self.a_scaled { &self.a_step } else { &self.a }
    }

    /// The weighted RMS of the local error estimate of a step (t, x) -> (t +
    /// h, x1): its difference from the extrapolated cubic of the last step
    /// (third order, so the difference is the method's error), or, right
    /// after a (re)start, from the first-order predictor x + h z.
    fn error_norm(&mut self, t: f64, x: &[f64], h: f64, x1: &[f64]) -> f64 {
        let n = x.len();
        let mut predicted = std::mem::take(&mut self.buffers.predicted);
        predicted.resize(n, 0.0);
        if self.history {
            self.dense.extrapolate(t + h, &mut predicted);
        } else {
            for i in 0..n {
                predicted[i] = x[i] + h * self.z[i];
            }
        }
        let sum: f64 = (0..n)
            .map(|i| {
                let w = self.atol[i] + self.rtol * x[i].abs().max(x1[i].abs());
                ((x1[i] - predicted[i]) / w).powi(2)
            })
            .sum();
        self.buffers.predicted = predicted;
        (sum / n.max(1) as f64).sqrt()
    }

    /// Puts the counters into the run's statistics.
    fn report(&self, run: &mut Run) {
        let s = &self.stats;
        run.stats.integrator = super::bdf::Stats {
            steps: s.steps,
            rejected: s.rejected,
            newton_iterations: s.newton_iterations,
            newton_failures: s.newton_failures,
            rhs_evaluations: s.rhs_evaluations,
            jacobians: s.jacobians,
            factorizations: s.factorizations,
        };
        run.stats.alpha = Some(*s);
    }

    /// Evaluates the Jacobian at (t, x) under the relations' live values
    /// there.
    fn refresh_jacobian(&mut self, run: &mut Run, t: f64, x: &[f64]) -> Result<(), Diagnostic> {
        let mut f = vec![0.0; x.len()];
        self.rhs(run, t, x, &mut f, true)?;
        self.jacobian(run, t, x)?;
        self.jac_fresh = true;
        Ok(())
    }

    /// Evaluates the Jacobian at (t, x) under the relations as the frame
    /// holds them.
    fn jacobian(&mut self, run: &mut Run, t: f64, x: &[f64]) -> Result<(), Diagnostic> {
        self.jac_active = self.active_set(run);
        let mut ode = ModelOde::new(run.backend, &mut run.frame, &self.slots, &self.pattern);
        let r = super::bdf::OdeProblem::jacobian(&mut ode, t, x, &mut self.jac);
        run.stats.model_evaluations += ode.evaluations;
        self.stats.jacobians += 1;
        if let Some(lu) = self.lu.take() {
            self.stale_lu = Some(lu);
        }
        r.map_err(|e| run.status_error(e.0, Entry::Tangent))
    }

    /// The truth values of the switching relations as the frame holds them.
    fn active_set(&self, run: &Run) -> Vec<bool> {
        self.relations
            .iter()
            .map(|&k| run.frame.relation(k))
            .collect()
    }

    /// Whether the frame's switching relations differ from `set`.
    fn active_set_differs(&self, run: &Run, set: &[bool]) -> bool {
        (self.relations.iter().zip(set)).any(|(&k, &on)| run.frame.relation(k) != on)
    }

    /// The jump a switch of the active set inside the step (t, x) -> (t +
    /// h, end) makes, after seed 000's eq. 24 (the force before and after
    /// the switch): the derivatives at the step's end under the step's
    /// starting active set against those under the end's, as the change
    /// gamma h |dz| it makes in the states over the step, in units of the
    /// tolerances (the largest over the states).
    fn discontinuity(
        &mut self,
        run: &mut Run,
        t1: f64,
        h: f64,
        end: &StepEnd,
    ) -> Result<f64, Diagnostic> {
        for (&k, &on) in self.relations.iter().zip(&self.step_active) {
            run.frame.set_relation(k, on);
        }
        let mut before = vec![0.0; end.x.len()];
        let r = self.rhs(run, t1, &end.x, &mut before, false);
        for (&k, &on) in self.relations.iter().zip(&end.active) {
            run.frame.set_relation(k, on);
        }
        r?;
        let jump = (0..end.x.len())
            .filter(|&i| self.kinds[i] == Kind::Rate)
            .map(|i| {
                let w = self.atol[i] + self.rtol * end.x[i].abs();
                self.p.gamma * h * (end.z[i] - before[i]).abs() / w
            })
            .fold(0.0, f64::max);
        // The frame back at the step's end with its live relations (the
        // hybrid loop's checks read it: `frame_at_last_iterate`).
        self.rhs(run, t1, &end.x, &mut before, true)?;
        Ok(jump)
    }

    /// Factors the Newton matrix for a step of length h: I - c J D on the
    /// rates. (A position's row of J is its velocity's unit row and its
    /// unknown is a dummy, so the full matrix is block triangular with an
    /// identity block for the positions: they drop out.)
    fn factor(&mut self, h: f64) -> bool {
        let p = self.p;
        let c = (1.0 - p.alpha_f) / (1.0 - p.alpha_m);
        let (dv, dq) = (c * h * p.gamma, c * h * h * p.beta);
        // A rate's column moves the rate by dv and its position (if any)
        // by dq.
        let mut position_of = vec![None; self.kinds.len()];
        for (q, k) in self.kinds.iter().enumerate() {
            if let Kind::Position(v) = *k {
                position_of[v] = Some(q);
            }
        }
        let entry = |i: usize, j: usize| -> f64 {
            let id = if i == j { 1.0 } else { 0.0 };
            let mut jd = dv * self.jac.get(i, j);
            if let Some(q) = position_of[j] {
                jd += dq * self.jac.get(i, q);
            }
            id - jd
        };
        let nr = self.rates.len();
        let m = match &self.matrix_pattern {
            Some(mp) => {
                let mut values = Vec::with_capacity(mp.nnz());
                for (jr, &j) in self.rates.iter().enumerate() {
                    for k in mp.column(jr) {
                        values.push(entry(self.rates[mp.row_idx[k]], j));
                    }
                }
                Jacobian::Sparse {
                    pattern: mp.clone(),
                    values,
                }
            }
            None => {
                let mut d = Jacobian::new(nr, None, false);
                for (jr, &j) in self.rates.iter().enumerate() {
                    for (ir, &i) in self.rates.iter().enumerate() {
                        let v = entry(i, j);
                        if v != 0.0 {
                            d.set(ir, jr, v);
                        }
                    }
                }
                d
            }
        };
        self.stats.factorizations += 1;
        let old = self.lu.take().or_else(|| self.stale_lu.take());
        self.lu = IterationMatrix::factor_jacobian(&m, old);
        self.lu_h = h;
        self.rate = 1.0;
        self.lu.is_some()
    }

    /// The right-hand side at (t, x) into `out`: with the relations
    /// evaluated there (and kept in the frame) when `live`, else with
    /// those the frame holds.
    fn rhs(
        &mut self,
        run: &mut Run,
        t: f64,
        x: &[f64],
        out: &mut [f64],
        live: bool,
    ) -> Result<(), Diagnostic> {
        let mut ode = ModelOde::new(run.backend, &mut run.frame, &self.slots, &self.pattern);
        ode.frame.set_event_mode(live);
        let r = super::bdf::OdeProblem::rhs(&mut ode, t, x, out);
        ode.frame.set_event_mode(false);
        run.stats.model_evaluations += ode.evaluations;
        self.stats.rhs_evaluations += 1;
        r.map_err(|e| run.status_error(e.0, Entry::Ode))
    }

    /// Newton's method for the step (t0, x0) -> t0 + h. Returns the
    /// derivative unknowns and the end states, or `None` if it did not
    /// converge.
    fn solve_step(
        &mut self,
        run: &mut Run,
        t0: f64,
        x0: &[f64],
        h: f64,
    ) -> Result<Option<StepEnd>, Diagnostic> {
        // Fixed steps differ in length by rounding: the matrix of a step
        // within 1e-8 of its length is kept. Adaptive steps keep it while
        // the length stays within 25% (as IDA keeps its Newton matrix);
        // Newton then converges a little slower, never to a wrong point.
        let keep = match self.control {
            Control::Fixed(_) => 1e-8,
            Control::Adaptive { .. } => 0.25,
        };
        if (self.lu.is_none() || (h / self.lu_h - 1.0).abs() > keep) && !self.factor(h) {
            return Ok(None);
        }
        // A matrix kept for another step length contracts the iteration by
        // about the relative difference of the lengths at best.
        self.rate = self.rate.max((h / self.lu_h - 1.0).abs());
        let t1 = t0 + h;
        let scale = if self.last_h.is_finite() {
            h / self.last_h
        } else {
            1.0
        };
        self.a_scaled = scale != 1.0;
        if self.a_scaled {
            self.a_step.clear();
            self.a_step
                .extend(self.z.iter().zip(&self.a).map(|(z, a)| z + (a - z) * scale));
        }
        let mut b = std::mem::take(&mut self.buffers);
        let result = self.newton(run, t1, x0, h, &mut b);
        self.buffers = b;
        result
    }

    /// The Newton iteration of [`Self::solve_step`] on the step's buffers.
    fn newton(
        &mut self,
        run: &mut Run,
        t1: f64,
        x0: &[f64],
        h: f64,
        b: &mut Buffers,
    ) -> Result<Option<StepEnd>, Diagnostic> {
        let n = x0.len();
        // Predictor: the derivatives stay as they were.
        let mut z1 = std::mem::take(&mut b.z);
        z1.clear();
        z1.extend_from_slice(&self.z);
        let mut x1 = std::mem::take(&mut b.x);
        x1.resize(n, 0.0);
        let inverse_weight = &mut b.inverse_weight;
        inverse_weight.resize(n, 0.0);
        self.states_at(x0, &z1, h, &mut x1, inverse_weight);
        let (rate_moves, position_moves) = self.coefficients(h);
        let f = &mut b.f;
        f.resize(n, 0.0);
        let delta = &mut b.delta;
        delta.resize(self.rates.len(), 0.0);
        // The last correction's size with the current matrix.
        let mut previous: Option<f64> = None;
        for m in 0..MAX_NEWTON {
            self.stats.newton_iterations += 1;
            if self.rhs(run, t1, &x1, f, true).is_err() {
                b.z = z1;
                b.x = x1;
                return Ok(None);
            }
            // Seed 000, 4.3: a relation that switched since the Jacobian
            // was evaluated changes the equations; the Jacobian is
            // evaluated again here, under the new active set.
            if self.active_set_differs(run, &self.jac_active) {
                self.stats.active_set_changes += 1;
                self.jacobian(run, t1, &x1)?;
                if !self.factor(h) {
                    return Ok(None);
                }
                previous = None;
            }
            for &RateRun { x, k, len } in &self.rate_runs {
                let r = x..x + len;
                for ((d, f), z1) in delta[k..k + len].iter_mut().zip(&f[r.clone()]).zip(&z1[r]) {
                    *d = f - z1;
                }
            }
            let Some(lu) = self.lu.as_mut() else {
                return Ok(None);
            };
            lu.solve(delta, &mut self.work);
            // The state change this correction makes, and its size.
            let mut sum = 0.0;
            for &RateRun { x, k, len } in &self.rate_runs {
                let r = x..x + len;
                let states = z1[r.clone()]
                    .iter_mut()
                    .zip(&mut x1[r.clone()])
                    .zip(&inverse_weight[r]);
                for (d, ((z1, x1), w)) in delta[k..k + len].iter().zip(states) {
                    *z1 += d;
                    let dx = rate_moves * d;
                    *x1 += dx;
                    sum += (dx * w).powi(2);
                }
            }
            for &PositionRun { q, k, len, .. } in &self.position_runs {
                let r = q..q + len;
                let states = x1[r.clone()].iter_mut().zip(&inverse_weight[r]);
                for (d, (x1, w)) in delta[k..k + len].iter().zip(states) {
                    let dx = position_moves * d;
                    *x1 += dx;
                    sum += (dx * w).powi(2);
                }
            }
            let norm = (sum / n.max(1) as f64).sqrt();
            // (A correction that is not finite makes the norm so.)
            if !norm.is_finite() {
                b.z = z1;
                b.x = x1;
                return Ok(None);
            }
            let mut slow = false;
            if let Some(previous) = previous {
                let r = norm / previous;
                self.rate = (0.3 * self.rate).max(r);
                let left = (MAX_NEWTON - m) as i32;
                slow = r >= 1.0 || r.powi(left) / (1.0 - r) * norm > NEWTON_TOL;
            }
            // Converged when the correction, scaled by the rate at which
            // the iteration contracts, is below the tolerance.
            if norm * self.rate.min(1.0) <= NEWTON_TOL {
                return Ok(Some(StepEnd {
                    z: z1,
                    x: x1,
                    active: self.active_set(run),
                }));
            }
            previous = Some(norm);
            if slow {
                // Too slow to converge in the iterations left: a matrix
                // factored for another step length (adaptive steps keep it
                // within 25%) is factored for this one and the iteration
                // goes on from here, as the BDF does; with the matrix of
                // this length the attempt fails (and the Jacobian is
                // refreshed).
                if self.lu_h == h || !self.factor(h) {
                    break;
                }
                previous = None;
            }
        }
        self.stats.newton_failures += 1;
        Ok(None)
    }
}

/// The pattern of the Newton matrix on the rates: a rate's column holds
/// its own column of J and that of its position, restricted to the rates'
/// rows.
fn matrix_pattern(
    j: &JacobianPattern,
    kinds: &[Kind],
    rates: &[usize],
    rate_index: &[usize],
) -> JacobianPattern {
    let mut position_of = vec![None; kinds.len()];
    for (q, k) in kinds.iter().enumerate() {
        if let Kind::Position(v) = *k {
            position_of[v] = Some(q);
        }
    }
    let cols = (rates.iter().enumerate())
        .map(|(cr, &c)| {
            let mut rows = vec![cr];
            let columns = std::iter::once(c).chain(position_of[c]);
            for col in columns {
                rows.extend(
                    j.column(col)
                        .map(|k| rate_index[j.row_idx[k]])
                        .filter(|&r| r != usize::MAX),
                );
            }
            rows.sort_unstable();
            rows.dedup();
            rows
        })
        .collect();
    JacobianPattern::from_columns(rates.len(), cols)
}

impl Integrator for GeneralizedAlpha {
    fn behaviour(&self) -> Behaviour {
        Behaviour {
            relations: Relations::Live,
            outputs: Outputs::Interpolated,
            chatter_events: 50,
            chatter_hint: super::integrator::CHATTER_HINT,
            // The last evaluation of an accepted step is its Newton
            // iteration's last (or the discontinuity measure's, at the
            // end itself).
            frame_at_last_iterate: true,
        }
    }

    fn step(
        &mut self,
        run: &mut Run,
        t: f64,
        x: &[f64],
        t_bound: f64,
    ) -> Result<StopReason, Diagnostic> {
        let n = x.len();
        if !self.started {
            // z = a = f(t, x) at a (re)start.
            let mut z = vec![0.0; n];
            self.rhs(run, t, x, &mut z, true)?;
            self.step_active = self.active_set(run);
            self.a = z.clone();
            self.z = z;
            self.last_h = f64::NAN;
            // (The frame holds the relations' live values at (t, x).)
            self.jacobian(run, t, x)?;
            self.jac_fresh = true;
            self.started = true;
        }
        let (mut h, grid_node) = match self.control {
            // Steps end on the grid start + j h (computed, not accumulated).
            Control::Fixed(h0) => {
                let node = self.start + self.j as f64 * h0;
                (node - t, Some(node))
            }
            Control::Adaptive { next } => (next, None),
        };
        // The bound ends a step that would reach it (within a millionth).
        let snap = 1e-6 * h;
        if t + h >= t_bound - snap {
            h = t_bound - t;
        }
        let minimum = match self.control {
            Control::Fixed(_) => MIN_FRACTION * h,
            Control::Adaptive { .. } => self.min_step,
        };
        // After steps cut by halvings, fixed steps grow back by doubling
        // instead of aiming at the grid node at once (each failed attempt
        // costs a Jacobian and a factorization).
        if h > self.regrowth {
            h = self.regrowth;
        }
        let planned = h;
        let StepEnd {
            z: z1,
            x: x1,
            active,
        } = loop {
            let Some(done) = self.solve_step(run, t, x, h)? else {
                if !self.jac_fresh {
                    self.refresh_jacobian(run, t, x)?;
                    continue;
                }
                if h <= minimum {
                    run.frame.set_time(t);
                    return Err(Diagnostic::error_nospan(DiagnosticKind::Solver, format!(
                        "Newton's method fails at t = {t} even with the step cut to {h:e}"
                    ))
                    .with_hint("the model may be singular here, or its forces jump; try a smaller --step, or --solver bdf")
                    .with_note(STOPPED));
                }
                h *= 0.5;
                self.stats.halvings += 1;
                continue;
            };
            // Seed 000, 4.3: a step across a switch of the relations whose
            // jump is above the tolerances is halved, down to the smallest
            // step, until it ends short of the switch or the jump is
            // negligible; the steps that follow close in on the switch.
            if !self.relations.is_empty()
                && done.active != self.step_active
                && h > minimum
                && self.discontinuity(run, t + h, h, &done)? > 1.0
            {
                h *= 0.5;
                self.stats.discontinuity_halvings += 1;
                continue;
            }
            if let Control::Adaptive { .. } = self.control {
                let err = self.error_norm(t, x, h, &done.x);
                // A second-order method: the local error grows as h^3.
                let factor = 0.8 * err.max(1e-10).powf(-1.0 / 3.0);
                if err > 1.0 {
                    self.stats.rejected += 1;
                    if h <= minimum {
                        run.frame.set_time(t);
                        return Err(Diagnostic::error_nospan(DiagnosticKind::Solver, format!(
                            "the step size fell to {h:e} at t = {t}: the local error stays above the tolerance"
                        ))
                        .with_hint("the solution may jump here; try a looser --tolerance, or --solver bdf")
                        .with_note(STOPPED));
                    }
                    h *= factor.clamp(0.1, 0.9);
                    continue;
                }
                // Growth below 1.2 keeps the step (and its Newton matrix).
                let grow = factor.clamp(0.2, 1.5);
                let next = if (1.0..1.2).contains(&grow) {
                    h
                } else {
                    h * grow
                };
                self.control = Control::Adaptive { next };
            }
            break done;
        };
        let t1 = t + h;
        let reached = t1 >= t_bound - snap;
        let t1 = match grid_node {
            Some(node) if (t1 - node).abs() <= snap => node,
            _ if reached => t_bound,
            _ => t1,
        };
        if let Control::Fixed(h0) = self.control {
            while self.start + self.j as f64 * h0 <= t1 + 1e-6 * h0 {
                self.j += 1;
            }
            let on_node = grid_node.is_some_and(|node| t1 == node);
            self.regrowth = if h < planned || (self.regrowth.is_finite() && !on_node) {
                2.0 * h
            } else {
                f64::INFINITY
            };
        }
        let (mut z1, x1) = (z1, x1);
        self.step_end(&mut z1, &x1);
        // The dense output reuses its buffers: d0 takes the old z, and the
        // vectors it lets go hold the next step's z and x.
        let dense = &mut self.dense;
        (dense.t0, dense.t1) = (t, t1);
        dense.x0.clear();
        dense.x0.extend_from_slice(x);
        dense.d1.clear();
        dense.d1.extend_from_slice(&z1);
        self.buffers.x = std::mem::replace(&mut dense.x1, x1);
        self.buffers.z = std::mem::replace(&mut dense.d0, std::mem::replace(&mut self.z, z1));
        self.history = true;
        self.step_active = active;
        self.last_h = h;
        self.jac_fresh = false;
        self.stats.steps += 1;
        self.report(run);
        Ok(if reached {
            StopReason::BoundReached
        } else {
            StopReason::InternalStep
        })
    }

    fn dense(&self) -> &dyn DenseOutput {
        &self.dense
    }

    /// Relations are live: the model is evaluated in event mode, which the
    /// frame keeps, so that the hybrid loop's when-conditions are evaluated
    /// live at the same point.
    fn evaluate(&self, run: &mut Run, t: f64, x: &[f64]) -> Result<(), Diagnostic> {
        run.set_states(t, x);
        run.frame.set_event_mode(true);
        run.call(Entry::Ode)
    }

    fn restart(&mut self, run: &mut Run, _t: f64, _x: &mut Vec<f64>) -> Result<(), Diagnostic> {
        self.started = false;
        self.history = false;
        self.report(run);
        Ok(())
    }
}

/// The cubic Hermite interpolant of a step from its end values and
/// derivatives.
#[derive(Default)]
struct Hermite {
    t0: f64,
    t1: f64,
    x0: Vec<f64>,
    x1: Vec<f64>,
    d0: Vec<f64>,
    d1: Vec<f64>,
}

impl Hermite {
    /// The cubic at any t (beyond the step too).
    fn extrapolate(&self, t: f64, out: &mut [f64]) {
        let h = self.t1 - self.t0;
        if h <= 0.0 {
            out.copy_from_slice(&self.x1);
            return;
        }
        let s = (t - self.t0) / h;
        let (s2, s3) = (s * s, s * s * s);
        let h00 = 2.0 * s3 - 3.0 * s2 + 1.0;
        let h10 = s3 - 2.0 * s2 + s;
        let h01 = -2.0 * s3 + 3.0 * s2;
        let h11 = s3 - s2;
        for (i, o) in out.iter_mut().enumerate() {
            *o = h00 * self.x0[i] + h10 * h * self.d0[i] + h01 * self.x1[i] + h11 * h * self.d1[i];
        }
    }
}

impl DenseOutput for Hermite {
    fn span(&self) -> (f64, f64) {
        (self.t0, self.t1)
    }

    fn eval(&self, t: f64, out: &mut [f64]) {
        if t >= self.t1 {
            out.copy_from_slice(&self.x1);
        } else {
            self.extrapolate(t, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs cover every rate and position once, with the unknowns and
    /// velocities they stand for, whatever the order of the states.
    #[test]
    fn runs_cover_the_states_in_any_order() {
        use Kind::*;
        // Positions 0-2 with velocities 3-5 (one run each), then a first
        // order state, a position whose velocity comes before it, and two
        // positions whose velocities are not consecutive.
        let kinds = [
            Position(3),
            Position(4),
            Position(5),
            Rate,
            Rate,
            Rate,
            Rate,
            Rate,
            Position(7),
            Position(11),
            Position(10),
            Rate,
            Rate,
        ];
        let mut rate_index = vec![usize::MAX; kinds.len()];
        let rates: Vec<usize> = (0..kinds.len()).filter(|&i| kinds[i] == Rate).collect();
        for (k, &i) in rates.iter().enumerate() {
            rate_index[i] = k;
        }
        let (rate_runs, position_runs) = runs(&kinds, &rate_index);
        assert_eq!(rate_runs.len(), 2);
        assert_eq!(position_runs.len(), 4);
        let mut seen = vec![0; kinds.len()];
        for r in &rate_runs {
            for d in 0..r.len {
                seen[r.x + d] += 1;
                assert_eq!(rate_index[r.x + d], r.k + d);
            }
        }
        for r in &position_runs {
            for d in 0..r.len {
                seen[r.q + d] += 1;
                assert_eq!(kinds[r.q + d], Position(r.v + d));
                assert_eq!(rate_index[r.v + d], r.k + d);
            }
        }
        assert!(seen.iter().all(|&s| s == 1), "{seen:?}");
    }
}
