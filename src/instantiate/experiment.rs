//! The run settings a model carries: its `experiment` annotation (or the
//! first base class's), read into a [`flat::Experiment`], with a located
//! error for a setting rmoc reads whose value it cannot use.

use super::library::{ClassId, Library};
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::flat;
use crate::syntax::ast::{self, ClassBody, Element};

/// The `experiment` annotation of a model, or of the first base class that has
/// one (a model that only extends a tested model keeps its run settings).
pub(super) fn inherited_experiment(
    lib: &mut Library,
    class: ClassId,
    depth: usize,
    errors: &mut Vec<Diagnostic>,
) -> flat::Experiment {
    let Ok(Some(def)) = lib.def(class) else {
        return flat::Experiment::default();
    };
    let own = experiment_of(&def, errors);
    if own.stop_time.is_some()
        || own.start_time.is_some()
        || own.tolerance.is_some()
        || own.interval.is_some()
        || own.step.is_some()
        || own.solver.is_some()
        || depth > 16
    {
        return own;
    }
    if let ClassBody::Long(comp) = &def.body {
        let parent = lib.entry(class).parent;
        for e in &comp.elements {
            if let Element::Extends(ext) = e
                && let Ok(base) = lib.lookup(parent, &ext.base)
            {
                let inherited = inherited_experiment(lib, base, depth + 1, errors);
                if inherited.stop_time.is_some() {
                    return inherited;
                }
            }
        }
    }
    own
}

/// The run settings of `def`'s `experiment` annotation. A setting rmoc
/// reads whose value is not what it needs (a number, positive for the
/// tolerance, the interval and the step; a string for the solver; a stop
/// time not before the start) is an error at the value.
fn experiment_of(def: &ast::ClassDef, errors: &mut Vec<Diagnostic>) -> flat::Experiment {
    let mut e = flat::Experiment::default();
    let ClassBody::Long(comp) = &def.body else {
        return e;
    };
    let mut stop_span = None;
    for ann in &comp.annotations {
        for arg in &ann.args {
            let ast::ModArg::Modify {
                path, modification, ..
            } = arg
            else {
                continue;
            };
            if path.dotted() != "experiment" {
                continue;
            }
            let Some(cm) = modification.as_ref().and_then(|m| m.class_mod.as_ref()) else {
                continue;
            };
            for a in &cm.args {
                let ast::ModArg::Modify {
                    path, modification, ..
                } = a
                else {
                    continue;
                };
                let Some(binding) = modification.as_ref().and_then(|m| m.binding.as_ref()) else {
                    continue;
                };
                let key = path.dotted();
                let positive = matches!(key.as_str(), "Tolerance" | "Interval" | "__rmoc_step");
                let slot = match key.as_str() {
                    "StartTime" => &mut e.start_time,
                    "StopTime" => {
                        stop_span = Some(binding.span);
                        &mut e.stop_time
                    }
                    "Tolerance" => &mut e.tolerance,
                    "Interval" => &mut e.interval,
                    "__rmoc_step" => &mut e.step,
                    "__rmoc_rho_inf" => &mut e.rho_inf,
                    "__rmoc_solver" => {
                        match &binding.kind {
                            ast::ExprKind::String(s) => e.solver = Some(s.clone()),
                            _ => errors.push(
                                Diagnostic::error(DiagnosticKind::Setting,
                                    binding.span,
                                    "`__rmoc_solver` in the experiment annotation must be a string",
                                )
                                .with_hint("write `__rmoc_solver = \"moreau\"` (or \"event-driven\", \"bdf\", \"newmark\", \"generalized-alpha\")"),
                            ),
                        }
                        continue;
                    }
                    _ => continue,
                };
                match literal_number(binding) {
                    Some(v) if v.is_finite() && (!positive || v > 0.0) => *slot = Some(v),
                    value => {
                        let what = if positive {
                            "a positive number"
                        } else {
                            "a number"
                        };
                        let got =
                            value.map_or("not a number literal".to_string(), |v| format!("{v}"));
                        errors.push(
                            Diagnostic::error(
                                DiagnosticKind::Setting,
                                binding.span,
                                format!("`{key}` in the experiment annotation must be {what}"),
                            )
                            .with_label(got),
                        );
                    }
                }
            }
        }
    }
    if let (start, Some(stop), Some(span)) = (e.start_time.unwrap_or(0.0), e.stop_time, stop_span)
        && stop < start
    {
        errors.push(
            Diagnostic::error(
                DiagnosticKind::Setting,
                span,
                format!("the experiment's stop time {stop} precedes its start time {start}"),
            )
            .with_label("before StartTime"),
        );
    }
    e
}

/// A number literal, possibly negated (annotation values).
fn literal_number(e: &ast::Expr) -> Option<f64> {
    match &e.kind {
        ast::ExprKind::Real(v) => Some(*v),
        ast::ExprKind::Integer(v) => Some(*v as f64),
        ast::ExprKind::Unary {
            op: ast::UnOp::Neg,
            operand,
        } => literal_number(operand).map(|v| -v),
        _ => None,
    }
}
