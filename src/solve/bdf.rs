//! Variable-order (1-5), variable-step BDF for stiff ODEs `x' = f(t, x)`.
//!
//! The method is the quasi-constant step size BDF in backward-difference form
//! of Shampine & Reichelt, "The MATLAB ODE Suite" (SIAM J. Sci. Comput. 18,
//! 1997), section 2, as also used by SciPy's `BDF`: the history is a table of
//! modified divided differences `D`, a step size change rescales it (the
//! matrices R and U of the paper), the corrector is a simplified Newton
//! iteration with the Jacobian and its LU factors reused across steps while
//! the iteration converges (rates monitored as in Hairer & Wanner, Solving
//! ODEs II, IV.8; on the sparse path the rate is carried over from the
//! previous iterations as in CVODE, so that a step can stop after one
//! correction: [`CARRIED_RATE_TOL`]), and order and step are chosen from
//! the error estimates of the neighbouring orders after order+1 steps of
//! equal size. Dense output is the interpolating polynomial in the same
//! table.
//!
//! Reuse: the Jacobian is evaluated at the start and again only when Newton
//! fails with an older one. A step size that would grow by less than
//! [`STEP_HYSTERESIS`] is kept (as CVODE keeps steps, Hindmarsh et al.,
//! "SUNDIALS", ACM TOMS 31, 2005), so the Newton matrix I - c J
//! (c = h / alpha_k) keeps its factors over long stretches. A sparse one is
//! also kept while c stays within [`REFACTOR_RATIO`] of the c it was
//! factored with, as IDA does, its corrections scaled by 2 / (1 + c /
//! c_old) as IDA scales them; when the iteration then converges slowly
//! (the rate test fails), it is refactored at once and the iteration goes
//! on from its last iterate. A Newton failure with a matrix of another c
//! refactors it first, then re-evaluates the Jacobian, then shrinks the
//! step. The Jacobian is dense or sparse ([`super::jacobian`]), and so are
//! its factors ([`super::linalg::IterationMatrix`]).

// The difference table and the small matrices R and U are indexed as in the
// paper's formulas; iterator chains would hide them.
#![allow(clippy::needless_range_loop)]

use super::jacobian::{Jacobian, JacobianPattern, LinearSolver};
use super::linalg::IterationMatrix;
use std::sync::Arc;

pub const MAX_ORDER: usize = 5;
const NEWTON_MAXITER: usize = 4;
const MIN_FACTOR: f64 = 0.2;
const MAX_FACTOR: f64 = 10.0;
/// A sparse Newton matrix is refactored when c has changed by more than
/// this fraction since it was factored (IDA: 25%). A dense one is
/// refactored at every change of c: on the small models that take the
/// dense path, reuse raised the Newton iterations by 12-30% (the gearbox,
/// the harmonic oscillator: tests/solver_stats.rs), more than the
/// factorizations it saved were worth.
pub const REFACTOR_RATIO: f64 = 0.25;
/// A step size that could grow by less than this factor is kept, with its
/// order and its Newton matrix (CVODE keeps steps below 1.5; 1.2 keeps the
/// step counts of the reference problems within a few percent).
pub const STEP_HYSTERESIS: f64 = 1.2;
/// On the sparse path the Newton iteration stops, as CVODE's does, when the
/// correction times the convergence rate carried over from the previous
/// iterations (reset to 1 at each factorization) is below this fraction of
/// the error test's unit, divided by the order's error constant. A
/// correction is a sparse triangular solve there, costly against a step;
/// SciPy's test (a rate measured in the same solve) needs two iterations
/// at least. The fraction is CVODE's 0.1 tightened until the 50 x 50 grid
/// took about the steps of SciPy's test (162): 0.1 gives 278, 0.01 175,
/// 0.003 165 (the N = 1 000 chain: 1 878, 1 880 and 2 063, against 1 957).
pub const CARRIED_RATE_TOL: f64 = 0.003;

/// Error control and step limits of one integration.
#[derive(Clone, Debug)]
pub struct Settings {
    pub rtol: f64,
    /// Absolute tolerance per component.
    pub atol: Vec<f64>,
    pub max_step: f64,
    /// The first step; chosen from the problem's scales (Hairer, Norsett &
    /// Wanner I, II.4) when `None`.
    pub first_step: Option<f64>,
    /// Dense or sparse LU for the Newton matrix.
    pub linear_solver: LinearSolver,
    /// Start an autonomous problem (f independent of t, probed at the
    /// start) at order 2 from the Taylor polynomial of its solution.
    pub taylor_start: bool,
}

/// Why a right-hand side evaluation failed: the status code of the model code.
#[derive(Clone, Copy, Debug)]
pub struct EvalFail(pub i32);

pub trait OdeProblem {
    fn n(&self) -> usize;
    fn rhs(&mut self, t: f64, x: &[f64], dx: &mut [f64]) -> Result<(), EvalFail>;
    /// The structural pattern of df/dx, where the problem knows it; the
    /// Jacobian is dense otherwise.
    fn pattern(&self) -> Option<Arc<JacobianPattern>> {
        None
    }
    /// The Jacobian df/dx at (t, x), into `jac` (n x n; sparse storage only
    /// on the problem's own pattern). Entries not set must be zero.
    fn jacobian(&mut self, t: f64, x: &[f64], jac: &mut Jacobian) -> Result<(), EvalFail>;
}

/// Integrator statistics, as `--stats` reports them.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Stats {
    pub steps: u64,
    pub rejected: u64,
    pub newton_iterations: u64,
    pub newton_failures: u64,
    pub rhs_evaluations: u64,
    pub jacobians: u64,
    pub factorizations: u64,
}

impl Stats {
    pub fn add(&mut self, o: &Stats) {
        self.steps += o.steps;
        self.rejected += o.rejected;
        self.newton_iterations += o.newton_iterations;
        self.newton_failures += o.newton_failures;
        self.rhs_evaluations += o.rhs_evaluations;
        self.jacobians += o.jacobians;
        self.factorizations += o.factorizations;
    }
}

#[derive(Debug)]
pub enum StepError {
    /// The step size fell below the smallest representable increment.
    TooSmallStep {
        t: f64,
        h: f64,
        last_failure: Option<EvalFail>,
    },
}

/// The interpolating polynomial of the last step.
#[derive(Clone, Debug)]
pub struct Dense {
    pub t_old: f64,
    pub t: f64,
    h: f64,
    order: usize,
    d: Vec<Vec<f64>>,
}

impl Dense {
    /// A constant "trajectory" over (t_old, t]: for models without states.
    pub fn constant(t_old: f64, t: f64, y: Vec<f64>) -> Dense {
        Dense {
            t_old,
            t,
            h: (t - t_old).max(f64::MIN_POSITIVE),
            order: 0,
            d: vec![y],
        }
    }

    pub fn eval(&self, t: f64, out: &mut [f64]) {
        interpolate(self.t, self.h, &self.d[..=self.order], t, out);
    }
}

/// The interpolating polynomial of a difference table `d` (orders 0 to
/// `d.len() - 1`, step `h`, last point `t_end`) at `t`, into `out`.
fn interpolate(t_end: f64, h: f64, d: &[Vec<f64>], t: f64, out: &mut [f64]) {
    out.copy_from_slice(&d[0]);
    if t == t_end {
        // Every term below is a multiple of (t - t_end): the last point
        // itself (where the hybrid loop reads each step's end, twice).
        // The same value but for the sign of a zero, and for a higher
        // difference that is not finite, which an accepted step's table
        // holds only after an overflow near f64::MAX (the sum gave NaN).
        return;
    }
    let mut p = 1.0;
    for (j, dj) in d[1..].iter().enumerate() {
        let shift = t_end - h * j as f64;
        let denom = h * (j + 1) as f64;
        p *= (t - shift) / denom;
        for (o, dj) in out.iter_mut().zip(dj) {
            *o += dj * p;
        }
    }
}

pub struct Bdf {
    n: usize,
    pub t: f64,
    pub y: Vec<f64>,
    t_old: f64,
    pub t_bound: f64,
    h_abs: f64,
    order: usize,
    d: Vec<Vec<f64>>,
    n_equal_steps: usize,
    jac: Jacobian,
    jac_current: bool,
    lu: Option<IterationMatrix>,
    /// The storage of factors made stale by a new Jacobian, for the next
    /// factorization to reuse (a sparse LU keeps its pivots in it).
    stale_lu: Option<IterationMatrix>,
    /// Scratch vectors of length n, reused by every step.
    work: Vec<f64>,
    rhs: Vec<f64>,
    f: Vec<f64>,
    y_predict: Vec<f64>,
    psi: Vec<f64>,
    scale: Vec<f64>,
    /// Vectors of length n from earlier steps (an iterate, a correction,
    /// the last step's solution), for the next Newton solve to fill
    /// instead of allocating two a step (on the 10 000-body chain, 160 kB
    /// each).
    spare: Vec<Vec<f64>>,
    lu_c: f64,
    rtol: f64,
    atol: Vec<f64>,
    pub max_step: f64,
    newton_tol: f64,
    /// The Newton test carries the convergence rate over ([`CARRIED_RATE_TOL`]).
    carry_rate: bool,
    /// The rate carried over, 1 after a factorization.
    carried_rate: f64,
    /// The order of the step whose corrector is being solved.
    solving_order: usize,
    gamma: [f64; MAX_ORDER + 1],
    alpha: [f64; MAX_ORDER + 1],
    error_const: [f64; MAX_ORDER + 2],
    pub stats: Stats,
    last_failure: Option<EvalFail>,
}

fn rms(v: impl Iterator<Item = f64>, n: usize) -> f64 {
    if n == 0 {
        return 0.0;
    }
    (v.map(|x| x * x).sum::<f64>() / n as f64).sqrt()
}

/// R(order, factor) of Shampine & Reichelt: rescales differences to a new step.
type Small = [[f64; MAX_ORDER + 1]; MAX_ORDER + 1];

fn compute_r(order: usize, factor: f64) -> Small {
    let n = order + 1;
    let mut m = [[0.0; MAX_ORDER + 1]; MAX_ORDER + 1];
    for j in 0..n {
        m[0][j] = 1.0;
    }
    for i in 1..n {
        for j in 1..n {
            m[i][j] = (i as f64 - 1.0 - factor * j as f64) / i as f64;
        }
    }
    // Cumulative product down the rows.
    for i in 1..n {
        for j in 0..n {
            m[i][j] *= m[i - 1][j];
        }
    }
    m
}

fn change_d(d: &mut [Vec<f64>], order: usize, factor: f64) {
    let r = compute_r(order, factor);
    let u = compute_r(order, 1.0);
    let n = order + 1;
    // RU = R * U; D[:n] = RU^T D[:n], column by column of D.
    let mut ru = [[0.0; MAX_ORDER + 1]; MAX_ORDER + 1];
    for i in 0..n {
        for j in 0..n {
            ru[i][j] = (0..n).map(|k| r[i][k] * u[k][j]).sum();
        }
    }
    let len = d[0].len();
    let mut old = [0.0; MAX_ORDER + 1];
    for x in 0..len {
        for (i, o) in old.iter_mut().enumerate().take(n) {
            *o = d[i][x];
        }
        for (j, row) in d.iter_mut().enumerate().take(n) {
            row[x] = (0..n).map(|i| ru[i][j] * old[i]).sum();
        }
    }
}

impl Bdf {
    /// Starts an integration at (t0, y0) toward `t_bound`; `atol` is per component.
    pub fn new(
        p: &mut dyn OdeProblem,
        t0: f64,
        y0: &[f64],
        t_bound: f64,
        settings: Settings,
    ) -> Result<Bdf, EvalFail> {
        let Settings {
            rtol,
            atol,
            max_step,
            first_step,
            linear_solver,
            taylor_start,
        } = settings;
        let n = y0.len();
        let mut stats = Stats::default();
        let mut f0 = vec![0.0; n];
        p.rhs(t0, y0, &mut f0)?;
        stats.rhs_evaluations += 1;
        let mut gamma = [0.0; MAX_ORDER + 1];
        for k in 1..=MAX_ORDER {
            gamma[k] = gamma[k - 1] + 1.0 / k as f64;
        }
        let alpha = gamma; // kappa = 0: BDF, not NDF
        let mut error_const = [0.0; MAX_ORDER + 2];
        for (k, e) in error_const.iter_mut().enumerate() {
            *e = 1.0 / (k + 1) as f64;
        }
        let h_abs = match first_step {
            Some(h) => h,
            None => {
                select_initial_step(p, t0, y0, t_bound, max_step, &f0, rtol, &atol, &mut stats)?
            }
        };
        // (Probed before the Jacobian: the problem's last evaluation stays
        // the one at (t0, y0).)
        let mut autonomous = false;
        if taylor_start && n > 0 {
            let dt = f64::EPSILON.sqrt() * t0.abs().max((t_bound - t0).abs()).max(1.0);
            let mut f1 = vec![0.0; n];
            autonomous = p.rhs(t0 + dt, y0, &mut f1).is_ok() && f1 == f0;
            stats.rhs_evaluations += 1;
        }
        let pattern = p.pattern();
        let sparse = linear_solver.sparse_for(pattern.as_deref());
        let mut jac = Jacobian::new(n, pattern, sparse);
        p.jacobian(t0, y0, &mut jac)?;
        stats.jacobians += 1;
        // Order 2 from the start for an autonomous problem (f does not
        // depend on t): the history behind t0 is the Taylor polynomial
        // y0 + s f0 + s^2/2 y0'' with y0'' = J f0, so a quadratic solution
        // (free fall between impacts) is exact from the first step, as after
        // every restart at an event. Backward differences at step h:
        // D1 = h f0 - h^2/2 y'', D2 = h^2 y''. A problem that depends on t
        // starts at order 1 (df/dt by a difference would need a time scale
        // the problem does not give).
        let mut d = vec![vec![0.0; n]; MAX_ORDER + 3];
        d[0].copy_from_slice(y0);
        let mut order = 1;
        let mut ydd = vec![0.0; n];
        if autonomous {
            jac.mul_vec(&f0, &mut ydd);
        }
        if autonomous && ydd.iter().all(|v| v.is_finite()) {
            for i in 0..n {
                d[1][i] = h_abs * f0[i] - 0.5 * h_abs * h_abs * ydd[i];
                d[2][i] = h_abs * h_abs * ydd[i];
            }
            order = 2;
        } else {
            for i in 0..n {
                d[1][i] = f0[i] * h_abs;
            }
        }
        let eps = f64::EPSILON;
        Ok(Bdf {
            n,
            t: t0,
            y: y0.to_vec(),
            t_old: t0,
            t_bound,
            h_abs,
            order,
            d,
            n_equal_steps: 0,
            jac,
            jac_current: true,
            lu: None,
            stale_lu: None,
            work: Vec::with_capacity(n),
            rhs: vec![0.0; n],
            f: vec![0.0; n],
            y_predict: vec![0.0; n],
            psi: vec![0.0; n],
            scale: vec![0.0; n],
            spare: Vec::new(),
            lu_c: 0.0,
            rtol,
            atol,
            max_step,
            newton_tol: (10.0 * eps / rtol).max(0.03f64.min(rtol.sqrt())),
            carry_rate: sparse,
            carried_rate: 1.0,
            solving_order: 1,
            gamma,
            alpha,
            error_const,
            stats,
            last_failure: None,
        })
    }

    pub fn order(&self) -> usize {
        self.order
    }

    pub fn step_size(&self) -> f64 {
        self.h_abs
    }

    /// The dense output of the last step, evaluated at `t` in (t_old, t]
    /// straight from the difference table (as [`Dense::eval`] on a copy
    /// of it, to the bit): valid after a step that succeeded, until the
    /// next one (a failed step leaves the table rescaled for a retry).
    pub fn dense_eval(&self, t: f64, out: &mut [f64]) {
        interpolate(self.t, self.h_abs, &self.d[..=self.order], t, out);
    }

    /// The span of the last step, (t_old, t).
    pub fn dense_span(&self) -> (f64, f64) {
        (self.t_old, self.t)
    }

    /// The dense output of the last step, into `out` (reusing its storage).
    pub fn dense_into(&self, out: &mut Dense) {
        out.t_old = self.t_old;
        out.t = self.t;
        out.h = self.h_abs;
        out.order = self.order;
        out.d.resize(self.order + 1, Vec::new());
        for (o, s) in out.d.iter_mut().zip(&self.d[..=self.order]) {
            o.clear();
            o.extend_from_slice(s);
        }
    }

    /// The dense output of the last step.
    pub fn dense(&self) -> Dense {
        Dense {
            t_old: self.t_old,
            t: self.t,
            h: self.h_abs,
            order: self.order,
            d: self.d[..=self.order].to_vec(),
        }
    }

    /// Whether the Newton matrix is solved sparse.
    pub fn is_sparse(&self) -> bool {
        matches!(self.jac, Jacobian::Sparse { .. })
    }

    fn factor(&mut self, c: f64) {
        let old = self.lu.take().or_else(|| self.stale_lu.take());
        self.lu = IterationMatrix::factor(&self.jac, c, old);
        self.lu_c = c;
        self.carried_rate = 1.0;
        self.stats.factorizations += 1;
    }

    /// SciPy's safety factor of a new step size, smaller after more Newton
    /// iterations. With the rate carried over a step often takes one
    /// iteration; its factor is that of two, the least SciPy's test takes
    /// (with one, steps grew until rejected).
    fn safety(&self, n_iter: usize) -> f64 {
        let n_iter = if self.carry_rate {
            n_iter.max(2)
        } else {
            n_iter
        };
        0.9 * (2 * NEWTON_MAXITER + 1) as f64 / (2 * NEWTON_MAXITER + n_iter) as f64
    }

    /// Whether the factored matrix is too far from I - c J to be used.
    fn must_refactor(&self, c: f64) -> bool {
        let ratio = if self.is_sparse() {
            REFACTOR_RATIO
        } else {
            0.0
        };
        self.lu.is_none() || (c / self.lu_c - 1.0).abs() > ratio
    }

    /// The Newton correction for the residual c f - psi - d, into `dy`, and
    /// its scaled norm; `None` if the matrix is missing or the correction is
    /// not finite.
    fn newton_correction(
        &mut self,
        c: f64,
        f: &[f64],
        psi: &[f64],
        d: &[f64],
        scale: &[f64],
        dy: &mut [f64],
    ) -> Option<f64> {
        for i in 0..self.n {
            dy[i] = c * f[i] - psi[i] - d[i];
        }
        self.lu.as_mut()?.solve(dy, &mut self.work);
        if self.lu_c != c {
            // Factored for another c (the sparse path's reuse): for a stiff
            // component (I - c J)^-1 is about c_old / c times the factored
            // (I - c_old J)^-1, for a slow one the same; the correction is
            // scaled by 2 / (1 + c / c_old), between the two. It is IDA's
            // 2 / (1 + cj / cj_old) (SUNDIALS IDA's mathematical
            // description, the Newton iteration), cj = 1 / c, carried to
            // this residual, which is IDA's times c. The P2 chain
            // N = 1 000: Newton iterations 2 812 -> 2 294, factorizations
            // 60 -> 42, steps 1 991 -> 1 919.
            let s = 2.0 / (1.0 + c / self.lu_c);
            dy.iter_mut().for_each(|x| *x *= s);
        }
        if dy.iter().any(|x| !x.is_finite()) {
            return None;
        }
        Some(rms(dy.iter().zip(scale).map(|(a, s)| a / s), self.n))
    }

    /// Simplified Newton iteration for the corrector; returns (converged,
    /// iterations, y, d).
    fn solve_system(
        &mut self,
        p: &mut dyn OdeProblem,
        t_new: f64,
        y_predict: &[f64],
        c: f64,
        psi: &[f64],
        scale: &[f64],
    ) -> (bool, usize, Vec<f64>, Vec<f64>) {
        let n = self.n;
        let mut y = self.spare.pop().unwrap_or_default();
        y.clear();
        y.extend_from_slice(y_predict);
        let mut d = self.spare.pop().unwrap_or_default();
        d.clear();
        d.resize(n, 0.0);
        let mut f = std::mem::take(&mut self.f);
        let mut dy = std::mem::take(&mut self.rhs);
        let mut dy_norm_old: Option<f64> = None;
        // With a matrix factored for another c the corrections are scaled
        // (`newton_correction`); the 25% limit and the refactor on a slow
        // rate keep them converging.
        let mut k = 0;
        let result = loop {
            if k >= NEWTON_MAXITER {
                break (false, k);
            }
            if let Err(e) = p.rhs(t_new, &y, &mut f) {
                self.last_failure = Some(e);
                self.stats.rhs_evaluations += 1;
                break (false, k + 1);
            }
            self.stats.rhs_evaluations += 1;
            self.stats.newton_iterations += 1;
            if f.iter().any(|x| !x.is_finite()) {
                break (false, k + 1);
            }
            let Some(mut dy_norm) = self.newton_correction(c, &f, psi, &d, scale, &mut dy) else {
                break (false, k + 1);
            };
            let mut rate = dy_norm_old.map(|o| dy_norm / o);
            if self.carry_rate {
                if let Some(r) = rate {
                    if r >= 2.0 {
                        break (false, k + 1);
                    }
                    self.carried_rate = (0.3 * self.carried_rate).max(r);
                }
                for i in 0..n {
                    y[i] += dy[i];
                    d[i] += dy[i];
                }
                let tol = CARRIED_RATE_TOL / self.error_const[self.solving_order];
                if dy_norm * self.carried_rate.min(1.0) <= tol {
                    break (true, k + 1);
                }
                if k + 1 >= NEWTON_MAXITER - 1 && self.lu_c != c {
                    // Slow with a matrix factored for another c: refactor
                    // and go on from this iterate.
                    self.factor(c);
                    dy_norm_old = None;
                    k = 0;
                    continue;
                }
                dy_norm_old = Some(dy_norm);
                k += 1;
                continue;
            }
            if let Some(r) = rate
                && (r >= 1.0
                    || r.powi((NEWTON_MAXITER - k) as i32) / (1.0 - r) * dy_norm > self.newton_tol)
            {
                if self.lu_c == c {
                    break (false, k + 1);
                }
                // Slow with a matrix factored for another c: refactor and
                // go on from this iterate with a fresh rate estimate.
                self.factor(c);
                match self.newton_correction(c, &f, psi, &d, scale, &mut dy) {
                    Some(norm) => dy_norm = norm,
                    None => break (false, k + 1),
                }
                rate = None;
                k = 0;
            }
            for i in 0..n {
                y[i] += dy[i];
                d[i] += dy[i];
            }
            if dy_norm == 0.0 || rate.is_some_and(|r| r / (1.0 - r) * dy_norm < self.newton_tol) {
                break (true, k + 1);
            }
            dy_norm_old = Some(dy_norm);
            k += 1;
        };
        self.f = f;
        self.rhs = dy;
        (result.0, result.1, y, d)
    }

    /// Takes one step toward `t_bound` (never past it).
    pub fn step(&mut self, p: &mut dyn OdeProblem) -> Result<(), StepError> {
        // A failed evaluation the previous steps recovered from is not the
        // cause of this step's failure.
        self.last_failure = None;
        let t = self.t;
        let n = self.n;
        let min_step = 10.0 * ((t.abs() * f64::EPSILON).max(f64::MIN_POSITIVE));
        let mut h_abs = self.h_abs;
        if h_abs > self.max_step {
            change_d(&mut self.d, self.order, self.max_step / h_abs);
            h_abs = self.max_step;
            self.n_equal_steps = 0;
        } else if h_abs < min_step {
            change_d(&mut self.d, self.order, min_step / h_abs);
            h_abs = min_step;
            self.n_equal_steps = 0;
        }
        let order = self.order;
        let mut jac_current = self.jac_current;
        let (t_new, y_new, d, n_iter, error_norm) = loop {
            if h_abs < min_step {
                return Err(StepError::TooSmallStep {
                    t,
                    h: h_abs,
                    last_failure: self.last_failure,
                });
            }
            let mut t_new = t + h_abs;
            if t_new > self.t_bound || (self.t_bound - t_new) < min_step {
                t_new = self.t_bound;
                change_d(&mut self.d, order, (t_new - t) / h_abs);
                self.n_equal_steps = 0;
            }
            let h = t_new - t;
            h_abs = h;
            let mut y_predict = std::mem::take(&mut self.y_predict);
            let mut scale = std::mem::take(&mut self.scale);
            let mut psi = std::mem::take(&mut self.psi);
            y_predict.iter_mut().for_each(|x| *x = 0.0);
            psi.iter_mut().for_each(|x| *x = 0.0);
            for row in &self.d[..=order] {
                for (yp, r) in y_predict.iter_mut().zip(row) {
                    *yp += r;
                }
            }
            for i in 0..n {
                scale[i] = self.atol[i] + self.rtol * y_predict[i].abs();
            }
            for k in 1..=order {
                let g = self.gamma[k];
                for (ps, r) in psi.iter_mut().zip(&self.d[k]) {
                    *ps += r * g;
                }
            }
            let alpha = self.alpha[order];
            for ps in psi.iter_mut() {
                *ps /= alpha;
            }
            let c = h / alpha;
            let mut result;
            loop {
                if self.must_refactor(c) {
                    self.factor(c);
                }
                self.solving_order = order;
                result = self.solve_system(p, t_new, &y_predict, c, &psi, &scale);

                if result.0 {
                    break;
                }
                self.stats.newton_failures += 1;
                if self.lu_c != c {
                    // An older matrix: refactor before anything else (its
                    // storage is reused).
                    self.factor(c);
                    self.spare.extend([result.2, result.3]);
                    continue;
                }
                if jac_current {
                    break;
                }
                // Refresh the Jacobian once before shrinking the step.
                match p.jacobian(t_new, &y_predict, &mut self.jac) {
                    Ok(()) => {}
                    Err(e) => {
                        self.last_failure = Some(e);
                        break;
                    }
                }
                self.stats.jacobians += 1;
                if let Some(lu) = self.lu.take() {
                    self.stale_lu = Some(lu);
                }
                jac_current = true;
                self.spare.extend([result.2, result.3]);
            }
            self.y_predict = y_predict;
            self.psi = psi;
            self.scale = scale;
            let (converged, n_iter, y_new, d) = result;
            if !converged {
                let factor = 0.5;
                h_abs *= factor;
                change_d(&mut self.d, order, factor);
                self.n_equal_steps = 0;
                self.stats.rejected += 1;
                self.spare.extend([y_new, d]);
                continue;
            }
            let safety = self.safety(n_iter);
            let ec = self.error_const[order];
            let error_norm = rms(
                (0..n).map(|i| ec * d[i] / (self.atol[i] + self.rtol * y_new[i].abs())),
                n,
            );
            if error_norm > 1.0 {
                let factor = MIN_FACTOR.max(safety * error_norm.powf(-1.0 / (order as f64 + 1.0)));
                h_abs *= factor;
                change_d(&mut self.d, order, factor);
                self.n_equal_steps = 0;
                self.stats.rejected += 1;
                self.spare.extend([y_new, d]);
                continue;
            }
            break (t_new, y_new, d, n_iter, error_norm);
        };
        self.stats.steps += 1;
        self.n_equal_steps += 1;
        self.t_old = t;
        self.t = t_new;
        let y_last = std::mem::replace(&mut self.y, y_new);
        self.spare.push(y_last);
        self.h_abs = h_abs;
        self.jac_current = false;
        // D^{j+1} y_n = D^j y_n - D^j y_{n-1}, with d = D^{k+1} y_n.
        {
            let (lo, hi) = self.d.split_at_mut(order + 2);
            for ((next, cur), new) in hi[0].iter_mut().zip(lo[order + 1].iter_mut()).zip(&d) {
                *next = new - *cur;
                *cur = *new;
            }
        }
        for k in (0..=order).rev() {
            let (lo, hi) = self.d.split_at_mut(k + 1);
            for (a, b) in lo[k].iter_mut().zip(&hi[0]) {
                *a += b;
            }
        }
        self.spare.push(d);
        if self.n_equal_steps < order + 1 {
            return Ok(());
        }
        let scale = |i: usize| self.atol[i] + self.rtol * self.y[i].abs();
        let error_m_norm = if order > 1 {
            let ec = self.error_const[order - 1];
            rms((0..n).map(|i| ec * self.d[order][i] / scale(i)), n)
        } else {
            f64::INFINITY
        };
        let error_p_norm = if order < MAX_ORDER {
            let ec = self.error_const[order + 1];
            rms((0..n).map(|i| ec * self.d[order + 2][i] / scale(i)), n)
        } else {
            f64::INFINITY
        };
        let norms = [error_m_norm, error_norm, error_p_norm];
        let factors: Vec<f64> = norms
            .iter()
            .enumerate()
            .map(|(k, &e)| {
                if e == 0.0 {
                    f64::INFINITY
                } else {
                    e.powf(-1.0 / (order + k) as f64)
                }
            })
            .collect();
        let (best, &fmax) = factors
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.partial_cmp(b.1).unwrap_or(std::cmp::Ordering::Equal))
            .expect("three factors");
        let new_order = (order as isize + best as isize - 1).clamp(1, MAX_ORDER as isize) as usize;
        let safety = self.safety(n_iter);
        let factor = MAX_FACTOR.min(safety * fmax);
        if (1.0..STEP_HYSTERESIS).contains(&factor) {
            // Not worth a new step size (and Newton matrix): keep both.
            return Ok(());
        }
        self.order = new_order;
        self.h_abs *= factor;
        change_d(&mut self.d, new_order, factor);
        self.n_equal_steps = 0;
        Ok(())
    }
}

#[allow(clippy::too_many_arguments)]
fn select_initial_step(
    p: &mut dyn OdeProblem,
    t0: f64,
    y0: &[f64],
    t_bound: f64,
    max_step: f64,
    f0: &[f64],
    rtol: f64,
    atol: &[f64],
    stats: &mut Stats,
) -> Result<f64, EvalFail> {
    let n = y0.len();
    let interval = (t_bound - t0).abs();
    if n == 0 || interval == 0.0 {
        return Ok(interval.max(1e-6));
    }
    let scale: Vec<f64> = (0..n).map(|i| atol[i] + y0[i].abs() * rtol).collect();
    let d0 = rms(y0.iter().zip(&scale).map(|(y, s)| y / s), n);
    let d1 = rms(f0.iter().zip(&scale).map(|(f, s)| f / s), n);
    let h0 = if d0 < 1e-5 || d1 < 1e-5 {
        1e-6
    } else {
        0.01 * d0 / d1
    };
    let h0 = h0.min(interval);
    let y1: Vec<f64> = (0..n).map(|i| y0[i] + h0 * f0[i]).collect();
    let mut f1 = vec![0.0; n];
    p.rhs(t0 + h0, &y1, &mut f1)?;
    stats.rhs_evaluations += 1;
    let d2 = rms((0..n).map(|i| (f1[i] - f0[i]) / scale[i]), n) / h0;
    let h1 = if d1 <= 1e-15 && d2 <= 1e-15 {
        (h0 * 1e-3).max(1e-6)
    } else {
        (0.01 / d1.max(d2)).powf(1.0 / 2.0)
    };
    Ok((100.0 * h0).min(h1).min(interval).min(max_step))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Robertson's chemical kinetics, the classic stiff test (Hairer & Wanner II, p. 144).
    struct Robertson;
    impl OdeProblem for Robertson {
        fn n(&self) -> usize {
            3
        }
        fn rhs(&mut self, _t: f64, y: &[f64], f: &mut [f64]) -> Result<(), EvalFail> {
            f[0] = -0.04 * y[0] + 1e4 * y[1] * y[2];
            f[1] = 0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] * y[1];
            f[2] = 3e7 * y[1] * y[1];
            Ok(())
        }
        fn jacobian(&mut self, _t: f64, y: &[f64], j: &mut Jacobian) -> Result<(), EvalFail> {
            j.set(0, 0, -0.04);
            j.set(0, 1, 1e4 * y[2]);
            j.set(0, 2, 1e4 * y[1]);
            j.set(1, 0, 0.04);
            j.set(1, 1, -1e4 * y[2] - 6e7 * y[1]);
            j.set(1, 2, -1e4 * y[1]);
            j.set(2, 0, 0.0);
            j.set(2, 1, 6e7 * y[1]);
            j.set(2, 2, 0.0);
            Ok(())
        }
    }

    #[test]
    fn robertson_at_t40_matches_the_reference() {
        // Reference at t = 40 (Hairer & Wanner test set): y1 = 0.7158270687193267,
        // y2 = 9.185534764557e-6, y3 = 0.2841637457452781.
        let mut p = Robertson;
        let atol = vec![1e-10, 1e-14, 1e-10];
        let settings = Settings {
            rtol: 1e-8,
            atol,
            max_step: f64::INFINITY,
            first_step: None,
            linear_solver: LinearSolver::Auto,
            taylor_start: true,
        };
        let mut b = Bdf::new(&mut p, 0.0, &[1.0, 0.0, 0.0], 40.0, settings).expect("start");
        while b.t < 40.0 {
            b.step(&mut p).expect("step");
        }
        let y = &b.y;
        assert!((y[0] - 0.7158270687193267).abs() < 1e-6, "{y:?}");
        assert!((y[1] - 9.185534764557e-6).abs() < 1e-10, "{y:?}");
        assert!((y[2] - 0.2841637457452781).abs() < 1e-6, "{y:?}");
    }

    /// y' = -y and y' = -40 y, exactly exp(-t) and exp(-40 t).
    struct Decay;
    impl OdeProblem for Decay {
        fn n(&self) -> usize {
            2
        }
        fn rhs(&mut self, _t: f64, y: &[f64], f: &mut [f64]) -> Result<(), EvalFail> {
            f[0] = -y[0];
            f[1] = -40.0 * y[1];
            Ok(())
        }
        fn jacobian(&mut self, _t: f64, _y: &[f64], j: &mut Jacobian) -> Result<(), EvalFail> {
            j.set(0, 0, -1.0);
            j.set(0, 1, 0.0);
            j.set(1, 0, 0.0);
            j.set(1, 1, -40.0);
            Ok(())
        }
    }

    /// The dense output read in place, through the `DenseOutput` the
    /// hybrid loop is given (after each step the table has been rescaled
    /// for the next step size and order): it spans the step, passes
    /// through both of its ends to rounding, and inside the step follows
    /// the exact solution to the tolerance's order.
    #[test]
    fn the_dense_output_in_place_interpolates_each_step() {
        use crate::solve::integrator::DenseOutput;
        let mut p = Decay;
        let settings = Settings {
            rtol: 1e-7,
            atol: vec![1e-10, 1e-10],
            max_step: f64::INFINITY,
            first_step: None,
            linear_solver: LinearSolver::Auto,
            taylor_start: true,
        };
        let mut b = Bdf::new(&mut p, 0.0, &[1.0, 1.0], 3.0, settings).expect("start");
        let mut here = [0.0; 2];
        let mut orders = std::collections::BTreeSet::new();
        let (mut t_last, mut y_last) = (b.t, b.y.clone());
        let close = |a: &[f64], b: &[f64]| {
            a.iter()
                .zip(b)
                .all(|(x, y)| (x - y).abs() <= 1e-12 * (1.0 + x.abs().max(y.abs())))
        };
        let mut worst = 0.0f64;
        while b.t < 3.0 {
            b.step(&mut p).expect("step");
            orders.insert(b.order());
            let view: &dyn DenseOutput = &b;
            let (t0, t1) = view.span();
            assert_eq!((t0, t1), (t_last, b.t));
            view.eval(t1, &mut here);
            assert!(
                close(&here, &b.y),
                "end of the step at {t1}: {here:?} {:?}",
                b.y
            );
            view.eval(t0, &mut here);
            assert!(
                close(&here, &y_last),
                "start of the step at {t0}: {here:?} {y_last:?}"
            );
            for s in [0.25, 0.5, 0.75] {
                let t = t0 + s * (t1 - t0);
                view.eval(t, &mut here);
                for (k, rate) in [1.0, 40.0].into_iter().enumerate() {
                    let exact = (-rate * t).exp();
                    worst = worst.max((here[k] - exact).abs() / (1e-7 * exact + 1e-10));
                }
            }
            (t_last, y_last) = (b.t, b.y.clone());
        }
        assert!(orders.len() >= 3, "orders used: {orders:?}");
        // In units of the tolerance (rtol |y| + atol): the global error.
        assert!(
            worst < 50.0,
            "dense output {worst} tolerances from the solution"
        );
    }
}
