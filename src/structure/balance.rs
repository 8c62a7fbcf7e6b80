//! The balance check: equations against unknowns, with named culprits.
//!
//! Before index reduction a variable and its derivative count as one unknown
//! (an index-3 pendulum is balanced). A system whose counts agree but which
//! has no perfect matching is structurally singular; the Dulmage-Mendelsohn
//! decomposition then names the over-determined equations and the
//! under-determined variables.

use super::matching::{self, Incidence};
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::flat::{FlatModel, Node, VarId};
use rustc_hash::FxHashMap as HashMap;

/// The unknowns of the continuous system: variables that are neither
/// parameters nor assigned in when-clauses.
pub fn unknowns(flat: &FlatModel) -> Vec<VarId> {
    let assigned = flat.when_assigned();
    (0..flat.vars.len() as VarId)
        .filter(|v| {
            let var = &flat.vars[*v as usize];
            !var.is_parameter() && assigned.binary_search(v).is_err()
        })
        .collect()
}

/// Unknowns mentioned by each equation (a variable and its derivative alike).
fn incidence(flat: &FlatModel, cols: &HashMap<VarId, usize>) -> Incidence {
    let rows = flat
        .equations
        .iter()
        .map(|e| {
            let mut r: Vec<usize> = flat
                .exprs
                .reachable(&[e.lhs, e.rhs])
                .into_iter()
                .filter_map(|id| match flat.exprs.node(id) {
                    Node::Var(v) | Node::Der(v) => cols.get(&v).copied(),
                    _ => None,
                })
                .collect();
            r.sort_unstable();
            r.dedup();
            r
        })
        .collect();
    Incidence {
        rows,
        ncols: cols.len(),
    }
}

fn names(flat: &FlatModel, vs: &[VarId]) -> String {
    crate::diag::short_list(
        vs.iter()
            .map(|&v| format!("`{}`", flat.vars[v as usize].name)),
    )
}

/// Checks that the model has as many equations as unknowns and that they can
/// be matched one to one.
pub fn check(flat: &FlatModel) -> Vec<Diagnostic> {
    let unknowns = unknowns(flat);
    let cols: HashMap<VarId, usize> = unknowns.iter().enumerate().map(|(i, &v)| (v, i)).collect();
    let inc = incidence(flat, &cols);
    let neq = flat.equations.len();
    let nunk = unknowns.len();
    // An equation without any unknown cannot determine anything.
    for (e, row) in inc.rows.iter().enumerate() {
        if row.is_empty() {
            let eq = &flat.equations[e];
            let mut mentioned = flat.exprs.vars_of(eq.lhs);
            mentioned.extend(flat.exprs.vars_of(eq.rhs));
            mentioned.sort_unstable();
            mentioned.dedup();
            let known: Vec<String> = mentioned
                .into_iter()
                .map(|v| {
                    let var = &flat.vars[v as usize];
                    let what = if var.is_parameter() {
                        "a parameter"
                    } else {
                        "assigned in a when-clause"
                    };
                    format!("`{}` is {what}", var.name)
                })
                .collect();
            let mut d = Diagnostic::error(
                DiagnosticKind::Balance,
                eq.span,
                "this equation contains no unknown of the model",
            )
            .with_label("nothing to solve for here");
            if !known.is_empty() {
                d = d.with_note(known.join("; "));
            }
            return vec![d.with_hint("a parameter gets its value in its declaration or a modifier (`parameter Real k = 2;`); use assert(...) to check a relation between parameters")];
        }
    }
    let m = matching::maximum_matching(&inc);
    if neq == nunk && m.size() == nunk {
        return Vec::new();
    }
    // A component with connectors is balanced when the counts agree; it is
    // structurally complete only once connected.
    if neq == nunk && !flat.top_connectors.is_empty() {
        return Vec::new();
    }
    let dm = matching::dulmage_mendelsohn(&inc, &m);
    let mentioned: Vec<bool> = {
        let mut seen = vec![false; nunk];
        for r in &inc.rows {
            for &c in r {
                seen[c] = true;
            }
        }
        seen
    };
    let unmentioned: Vec<VarId> = (0..nunk)
        .filter(|&c| !mentioned[c])
        .map(|c| unknowns[c])
        .collect();
    let under: Vec<VarId> = dm.under_cols.iter().map(|&c| unknowns[c]).collect();
    let over_eqs: Vec<usize> = dm.over_rows.clone();
    let mut diags = Vec::new();
    let eq_s = |n: usize| if n == 1 { "equation" } else { "equations" };
    let unk_s = |n: usize| if n == 1 { "unknown" } else { "unknowns" };
    // Variables that appear differentiated are determined by integration;
    // the missing equation is more likely for one that does not.
    let differentiated: Vec<VarId> = flat
        .exprs
        .reachable(
            &flat
                .equations
                .iter()
                .flat_map(|e| [e.lhs, e.rhs])
                .collect::<Vec<_>>(),
        )
        .into_iter()
        .filter_map(|id| match flat.exprs.node(id) {
            Node::Der(v) => Some(v),
            _ => None,
        })
        .collect();
    let under_algebraic: Vec<VarId> = under
        .iter()
        .copied()
        .filter(|v| !differentiated.contains(v))
        .collect();
    let under = if under_algebraic.is_empty() {
        under
    } else {
        under_algebraic
    };
    if neq < nunk {
        let culprits = if unmentioned.is_empty() {
            &under
        } else {
            &unmentioned
        };
        let first = culprits.first().copied().unwrap_or(unknowns[0]);
        let verb = if unmentioned.is_empty() {
            "is not determined by any equation"
        } else {
            "appears in no equation"
        };
        let mut d = Diagnostic::error(
            DiagnosticKind::Balance,
            flat.vars[first as usize].span,
            format!(
                "the model is under-determined: {neq} {} for {nunk} {}; no equation determines {}",
                eq_s(neq),
                unk_s(nunk),
                names(flat, culprits)
            ),
        )
        .with_label(format!("`{}` {verb}", flat.vars[first as usize].name))
        .with_hint("add an equation for each listed variable, or make it a parameter with a value");
        for &v in culprits.iter().skip(1).take(4) {
            d = d.with_secondary(
                flat.vars[v as usize].span,
                format!("`{}` declared here", flat.vars[v as usize].name),
            );
        }
        diags.push(d);
    } else if neq > nunk {
        let first = over_eqs.first().copied().unwrap_or(0);
        let mut d = Diagnostic::error(
            DiagnosticKind::Balance,
            flat.equations[first].span,
            format!(
                "the model is over-determined: {neq} {} for {nunk} {}",
                eq_s(neq),
                unk_s(nunk)
            ),
        )
        .with_label("one of the equations that over-determine the system");
        for &e in over_eqs.iter().skip(1).take(4) {
            d = d.with_secondary(flat.equations[e].span, "over-determining");
        }
        let over_vars: Vec<VarId> = dm.over_cols.iter().map(|&c| unknowns[c]).collect();
        if !over_vars.is_empty() {
            d = d.with_note(format!(
                "these equations only determine {}",
                names(flat, &over_vars)
            ));
        }
        diags.push(d.with_hint("remove the redundant equation, or declare the missing unknown"));
    } else {
        let first = over_eqs.first().copied().unwrap_or(0);
        let over_vars: Vec<VarId> = dm.over_cols.iter().map(|&c| unknowns[c]).collect();
        let mut d = Diagnostic::error(DiagnosticKind::Singular,
            flat.equations[first].span,
            format!(
                "the model is structurally singular: {} {} for {} but no equation is left to determine {}",
                over_eqs.len(),
                eq_s(over_eqs.len()),
                names(flat, &over_vars),
                names(flat, &under)
            ),
        )
        .with_label(format!("over-determined: this {} only {}", "equation", names(flat, &over_vars)));
        for &e in over_eqs.iter().skip(1).take(4) {
            d = d.with_secondary(flat.equations[e].span, "also determines the same variables");
        }
        for &v in under.iter().take(4) {
            d = d.with_secondary(
                flat.vars[v as usize].span,
                format!("`{}` is under-determined", flat.vars[v as usize].name),
            );
        }
        diags.push(d.with_hint(
            "the counts agree, but some equations are redundant while some unknowns have none",
        ));
    }
    diags
}
