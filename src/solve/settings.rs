//! Run settings: what the user asks (the command line, or a caller of the
//! library) resolved against the model's `experiment` annotation into the
//! [`Options`] of one run, with every value checked where it is given.
//!
//! Order: the request's value, else the annotation's (`StartTime`,
//! `StopTime`, `Tolerance`, `Interval`, `__rmoc_solver`, `__rmoc_step`,
//! `__rmoc_rho_inf`), else the default (0, 1, 1e-6, 500 intervals; the BDF,
//! or Moreau-Jean with (stop - start) / 10 000 for a model with unilateral
//! contacts; newmark and generalized-alpha choose their steps by a local
//! error estimate unless given one; rho_inf 0.8; Newmark's beta 1/4 and
//! gamma 1/2).

use super::jacobian::LinearSolver;
use super::{Options, Solver};
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::structure::Causal;

/// Moreau-Jean steps a run may take: a few hours even for a tiny model.
pub const MAX_MOREAU_STEPS: f64 = 1e10;

/// The integrators `--solver` (and the experiment's `__rmoc_solver`) name.
pub const SOLVERS: [&str; 5] = [
    "bdf",
    "moreau",
    "event-driven",
    "newmark",
    "generalized-alpha",
];

/// The solvers that take a fixed step (`--step`).
const FIXED_STEP: [&str; 3] = ["moreau", "newmark", "generalized-alpha"];

/// What a user asks of a run; `None` takes the model's annotation or the
/// default.
#[derive(Clone, Debug, Default)]
pub struct RunRequest {
    pub start_time: Option<f64>,
    pub stop_time: Option<f64>,
    /// Relative tolerance.
    pub tolerance: Option<f64>,
    /// Absolute tolerance of every state (default: tolerance x nominal).
    pub atol: Option<f64>,
    pub interval: Option<f64>,
    /// Parameter values as `NAME=VALUE`.
    pub params: Vec<String>,
    /// One of [`SOLVERS`].
    pub solver: Option<String>,
    /// The fixed step of `moreau`, `newmark` and `generalized-alpha`.
    pub step: Option<f64>,
    /// Generalized-alpha's spectral radius at infinity, in [0, 1].
    pub rho_inf: Option<f64>,
    /// Newmark's beta and gamma.
    pub newmark_beta: Option<f64>,
    pub newmark_gamma: Option<f64>,
    pub linear_solver: LinearSolver,
    /// The result columns to keep, by pattern (`--outputs`; empty: all).
    pub outputs: Vec<String>,
}

impl RunRequest {
    /// The checks that need no model (made before compiling it).
    pub fn check(&self) -> Result<(), Diagnostic> {
        if let Some(s) = self.solver.as_deref()
            && !SOLVERS.contains(&s)
        {
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::Setting,
                format!("unknown solver `{s}`"),
            )
            .with_hint(format!("the available solvers are: {}", SOLVERS.join(", "))));
        }
        if self.step.is_some()
            && self
                .solver
                .as_deref()
                .is_some_and(|s| !FIXED_STEP.contains(&s))
        {
            return Err(Diagnostic::error_nospan(DiagnosticKind::Setting,
                "`--step` sets the step of a fixed-step solver (moreau, newmark, generalized-alpha)",
            )
            .with_hint("use `--solver moreau --step H` (or newmark, generalized-alpha), or leave `--step` out"));
        }
        if let Some(r) = self.rho_inf
            && !(0.0..=1.0).contains(&r)
        {
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::Setting,
                format!("invalid run settings: `--rho-inf` must be in [0, 1], not {r}"),
            ));
        }
        // (Whether the run's solver takes `--rho-inf`, `--beta` and
        // `--gamma` is checked in `resolve`: the model's experiment
        // annotation may name it.)
        if self.solver.is_some() {
            self.check_method_options(self.solver.as_deref())?;
        }
        let newmark = self.newmark_beta.is_some() || self.newmark_gamma.is_some();
        let (beta, gamma) = (
            self.newmark_beta.unwrap_or(0.25),
            self.newmark_gamma.unwrap_or(0.5),
        );
        // Unconditional stability of Newmark's method on linear problems:
        // gamma >= 1/2 and beta >= gamma / 2.
        if newmark && !(gamma >= 0.5 && beta >= 0.5 * gamma && beta <= 1.0 && gamma <= 1.0) {
            return Err(Diagnostic::error_nospan(DiagnosticKind::Setting, format!(
                "invalid run settings: Newmark's beta {beta} and gamma {gamma} are not unconditionally stable"
            ))
            .with_hint("use gamma >= 1/2 and beta >= gamma/2 (the default: beta 1/4, gamma 1/2)"));
        }
        if let Some(h) = self.step
            && !(h.is_finite() && h > 0.0)
        {
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::Setting,
                format!("invalid run settings: the step must be positive, not {h}"),
            ));
        }
        if let Some(a) = self.atol
            && !(a.is_finite() && a > 0.0)
        {
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::Setting,
                format!("invalid run settings: the absolute tolerance must be positive, not {a}"),
            ));
        }
        Ok(())
    }

    /// `--rho-inf` belongs to generalized-alpha, `--beta` and `--gamma` to
    /// Newmark: `solver` is the run's (the command line's, else the
    /// experiment annotation's).
    fn check_method_options(&self, solver: Option<&str>) -> Result<(), Diagnostic> {
        let uses = |s: Option<&str>| match s {
            Some(s) => format!(", and this run uses `{s}`"),
            None => String::new(),
        };
        if self.rho_inf.is_some() && solver != Some("generalized-alpha") {
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::Setting,
                format!(
                    "`--rho-inf` sets the generalized-alpha method's dissipation{}",
                    uses(solver)
                ),
            )
            .with_hint("add `--solver generalized-alpha`"));
        }
        let newmark = self.newmark_beta.is_some() || self.newmark_gamma.is_some();
        if newmark && solver != Some("newmark") {
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::Setting,
                format!(
                    "`--beta` and `--gamma` set Newmark's parameters{}",
                    uses(solver)
                ),
            )
            .with_hint("add `--solver newmark`"));
        }
        Ok(())
    }

    /// The options of a run of `c`.
    pub fn resolve(&self, c: &Causal) -> Result<Options, Diagnostic> {
        self.check()?;
        let e = &c.experiment;
        let start = self.start_time.or(e.start_time).unwrap_or(0.0);
        let stop = self.stop_time.or(e.stop_time).unwrap_or(1.0);
        let tolerance = self.tolerance.or(e.tolerance).unwrap_or(1e-6);
        let interval = self
            .interval
            .or(e.interval)
            .unwrap_or((stop - start) / 500.0);
        let finite = [start, stop, tolerance, interval]
            .iter()
            .all(|x| x.is_finite());
        let valid = finite && stop >= start && tolerance > 0.0 && (interval > 0.0 || stop == start);
        if !valid {
            return Err(Diagnostic::error_nospan(DiagnosticKind::Setting, format!(
                "invalid run settings: start {start}, stop {stop}, tolerance {tolerance}, interval {interval}"
            ))
            .with_hint("the stop time must not precede the start time; tolerance and output interval must be positive"));
        }
        // A run that could not end in any reasonable time, or whose result
        // would not fit on a disk, is refused before it starts.
        let rows = (stop - start) / interval;
        let max_rows = crate::solve::MAX_OUTPUT_ROWS as f64;
        if rows > max_rows {
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::Setting,
                format!(
                    "invalid run settings: an output interval of {interval:e} s gives {rows:.3e} \
                 rows over [{start}, {stop}], more than {max_rows:e}"
                ),
            )
            .with_hint("use a larger `--interval` (or the experiment's `Interval`)"));
        }
        let mut overrides = Vec::new();
        for p in &self.params {
            let Some((name, raw)) = p.split_once('=') else {
                return Err(Diagnostic::error_nospan(
                    DiagnosticKind::Setting,
                    format!("`-p {p}`: expected NAME=VALUE"),
                ));
            };
            let v = settable_parameter(c, name.trim(), p)?;
            overrides.push((v, parameter_value(c, v, raw.trim(), p)?));
        }
        // The command line's solver, else the model's (`__rmoc_solver`); a
        // model with unilateral contacts runs on the Moreau time-stepper
        // unless another is asked for (the BDF then says why it cannot).
        let chosen = self.solver.as_deref().or(e.solver.as_deref());
        if self.step.is_some() && chosen.is_some_and(|s| !FIXED_STEP.contains(&s)) {
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::Setting,
                format!(
                    "`--step` sets the step of a fixed-step solver, and this run uses `{}`",
                    chosen.unwrap_or_default()
                ),
            )
            .with_hint(
                "add `--solver moreau` (or newmark, generalized-alpha), or leave `--step` out",
            ));
        }
        let given_step = self.step.or(e.step.filter(|h| h.is_finite() && *h > 0.0));
        let fixed_step = given_step.unwrap_or((stop - start) / 10_000.0);
        let solver = match chosen {
            Some("moreau") => None,
            Some("event-driven") => Some(Solver::EventDriven),
            Some("bdf") => Some(Solver::Bdf),
            Some("newmark") => Some(Solver::GeneralizedAlpha {
                step: given_step,
                parameters: super::generalized_alpha::AlphaParameters::newmark(
                    self.newmark_beta.unwrap_or(0.25),
                    self.newmark_gamma.unwrap_or(0.5),
                ),
            }),
            Some("generalized-alpha") => {
                let rho = self.rho_inf.or(e.rho_inf).unwrap_or(0.8);
                if !(0.0..=1.0).contains(&rho) {
                    return Err(Diagnostic::error_nospan(DiagnosticKind::Setting, format!(
                        "`__rmoc_rho_inf` in the experiment annotation must be in [0, 1], not {rho}"
                    )));
                }
                Some(Solver::GeneralizedAlpha {
                    step: given_step,
                    parameters: super::generalized_alpha::AlphaParameters::chung_hulbert(rho),
                })
            }
            Some(other) => {
                return Err(Diagnostic::error_nospan(DiagnosticKind::Setting, format!(
                    "unknown solver `{other}` in the experiment annotation"
                ))
                .with_hint(format!("`__rmoc_solver` is one of: {}", SOLVERS.join(", "))));
            }
            None if c.contacts.is_empty() => {
                if self.step.is_some() {
                    return Err(Diagnostic::error_nospan(DiagnosticKind::Setting,
                        "`--step` sets the Moreau time-stepper's step, and this model (it has no \
                         contacts) runs on the BDF, which chooses its own steps",
                    )
                    .with_hint("add `--solver moreau` for fixed steps, or leave `--step` out"));
                }
                Some(Solver::Bdf)
            }
            None => None,
        }
        .unwrap_or(Solver::Moreau { step: fixed_step });
        // (After the annotation's solver is known to exist.)
        self.check_method_options(chosen)?;
        let fixed = match solver {
            Solver::Moreau { step } => Some(step),
            Solver::GeneralizedAlpha { step, .. } => step,
            _ => None,
        };
        if let Some(step) = fixed
            && (stop - start) / step > MAX_MOREAU_STEPS
        {
            let what = match solver {
                Solver::Moreau { .. } => "Moreau-Jean steps",
                _ => "steps",
            };
            return Err(Diagnostic::error_nospan(
                DiagnosticKind::Setting,
                format!(
                    "invalid run settings: a step of {step:e} s needs {:.3e} {what} \
                 over [{start}, {stop}], more than {MAX_MOREAU_STEPS:e}",
                    (stop - start) / step
                ),
            )
            .with_hint("use a larger `--step` (or the experiment's `__rmoc_step`)"));
        }
        Ok(Options {
            start,
            stop,
            tolerance,
            atol: self.atol,
            interval,
            overrides,
            max_events: 1_000_000,
            solver,
            linear_solver: self.linear_solver,
            monitor: None,
            rows: None,
            keep_frame: false,
            outputs: self.outputs.clone(),
        })
    }
}

/// The variable a run may set by name (`-p NAME=...`, a sweep's column):
/// a parameter that is neither structural nor a contact's force. `spec` is
/// what the user wrote, for the messages.
pub fn settable_parameter(c: &Causal, name: &str, spec: &str) -> Result<u32, Diagnostic> {
    let Some(v) = c.vars.iter().position(|v| v.name == name) else {
        let parameters = c.vars.iter().filter(|v| v.is_parameter());
        let d = Diagnostic::error_nospan(
            DiagnosticKind::Setting,
            format!("`-p {spec}`: the model has no parameter `{name}`"),
        );
        return Err(
            match crate::diag::closest(name, parameters.map(|v| v.name.as_str())) {
                Some(near) => d.with_hint(format!("did you mean `{near}`?")),
                None => d.with_hint("`rmoc flatten FILE` lists the model's parameters"),
            },
        );
    };
    let var = &c.vars[v];
    if !var.is_parameter() {
        return Err(Diagnostic::error(
            DiagnosticKind::Setting,
            var.span,
            format!("`{name}` is not a parameter and cannot be set with -p"),
        )
        .with_hint(
            "only parameters can be changed between runs; use a start value or a modifier",
        ));
    }
    if var.structural {
        return Err(Diagnostic::error(DiagnosticKind::Setting, var.span, format!("`{name}` is a structural parameter (it sets an array size, a range or a branch) and cannot be changed with -p")).with_hint("change its value in the model (a modifier) instead"));
    }
    let contact_force = c.contacts.iter().any(|k| k.force as usize == v)
        || c.frictions.iter().any(|f| f.force as usize == v);
    if contact_force {
        return Err(Diagnostic::error(
            DiagnosticKind::Setting,
            var.span,
            format!("`{name}` is the force of a contact and cannot be set with -p"),
        )
        .with_hint("the contact solver computes it at every step"));
    }
    Ok(v as u32)
}

/// The value `raw` given to parameter `v`: a number (`true` or `false` for
/// a Boolean) that fits the parameter's type.
pub fn parameter_value(c: &Causal, v: u32, raw: &str, spec: &str) -> Result<f64, Diagnostic> {
    let var = &c.vars[v as usize];
    use crate::flat::ScalarType;
    let is_boolean = var.ty == ScalarType::Boolean;
    let value = match raw {
        "true" if is_boolean => 1.0,
        "false" if is_boolean => 0.0,
        _ => raw.parse::<f64>().map_err(|_| {
            Diagnostic::error_nospan(
                DiagnosticKind::Setting,
                format!(
                    "`-p {spec}`: `{raw}` is not a number{}",
                    if is_boolean { ", true or false" } else { "" }
                ),
            )
        })?,
    };
    check_parameter_value(c, v, value, raw, spec)?;
    Ok(value)
}

/// Whether `value` fits parameter `v`'s type: finite, whole for an
/// Integer, 0 or 1 for a Boolean.
pub fn check_parameter_value(
    c: &Causal,
    v: u32,
    value: f64,
    raw: &str,
    spec: &str,
) -> Result<(), Diagnostic> {
    use crate::flat::ScalarType;
    let var = &c.vars[v as usize];
    let (fits, what) = match var.ty {
        ScalarType::Real => (value.is_finite(), "a finite number"),
        ScalarType::Integer => (
            value.is_finite() && value.fract() == 0.0 && value.abs() < 2f64.powi(53),
            "a whole number below 2^53",
        ),
        ScalarType::Boolean => (value == 0.0 || value == 1.0, "true or false (1 or 0)"),
    };
    if fits {
        Ok(())
    } else {
        Err(Diagnostic::error(
            DiagnosticKind::Setting,
            var.span,
            format!("`-p {spec}`: `{}` takes {what}, not {raw}", var.name),
        ))
    }
}
