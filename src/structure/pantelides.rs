//! Index reduction by Pantelides' algorithm and state selection by dummy
//! derivatives.
//!
//! Pantelides (1988), "The consistent initialization of differential-algebraic
//! systems": each equation is matched to a highest-derivative unknown by an
//! augmenting path; when none exists, the equations and variables visited by
//! the failed search form a structurally singular subset, and every one of
//! those equations is differentiated, every visited variable gets its
//! derivative, and the search repeats one level higher.
//!
//! Mattsson & Söderlind (1993), "Index reduction in differential-algebraic
//! equations using dummy derivatives": for the differentiated equations,
//! level by level from the highest, choose as many highest-derivative
//! variables as there are equations such that their Jacobian block is
//! nonsingular; those derivatives become algebraic "dummy derivatives". The
//! choice honours `stateSelect` (never < avoid < default < prefer < always),
//! then `fixed = true` start values (the user's initial states), and is made
//! nonsingular at the start values.

use super::Analysis;
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::flat::{ExprArena, ExprId, Node, StateSelect, VarId};
use crate::symbolic::{self, DiffRules};
use rustc_hash::FxHashMap as HashMap;

pub struct Pantelides<'b> {
    s: &'b mut Analysis,
    /// `assign[v]`: the equation matched to highest-derivative unknown `v`.
    assign: Vec<Option<usize>>,
    /// `derived[e]`: the equation that is the time derivative of `e`.
    derived: Vec<Option<usize>>,
    incidence: Vec<Vec<VarId>>,
}

/// Time differentiation of an equation of the model.
struct TimeRules<'a> {
    der: &'a mut dyn FnMut(VarId) -> Option<VarId>,
    functions: &'a mut crate::symbolic::fndiff::Derivatives,
}

impl DiffRules for TimeRules<'_> {
    fn leaf(&mut self, arena: &mut ExprArena, node: Node) -> Result<Option<ExprId>, String> {
        Ok(match node {
            Node::Time => Some(arena.one()),
            Node::Var(v) => (self.der)(v).map(|d| arena.var(d)),
            _ => None,
        })
    }
    fn derivatives(&mut self) -> &mut crate::symbolic::fndiff::Derivatives {
        self.functions
    }
}

impl<'b> Pantelides<'b> {
    pub fn new(s: &'b mut Analysis) -> Pantelides<'b> {
        let incidence = (0..s.equations.len()).map(|e| s.eq_vars(e)).collect();
        let n = s.vars.len();
        let m = s.equations.len();
        Pantelides {
            s,
            assign: vec![None; n],
            derived: vec![None; m],
            incidence,
        }
    }

    /// Highest-derivative unknowns only take part in the matching.
    fn eligible(&self, v: VarId) -> bool {
        self.s.unknown[v as usize] && self.s.der[v as usize].is_none()
    }

    /// Augmenting path from equation `start`; on failure, the equations and
    /// variables it visited.
    fn augment(&mut self, start: usize) -> Result<(), (Vec<usize>, Vec<VarId>)> {
        let mut colored_eqs = vec![start];
        let mut colored_vars: Vec<VarId> = Vec::new();
        let mut seen_var: HashMap<VarId, ()> = HashMap::default();
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        let mut via: Vec<VarId> = Vec::new();
        while let Some(&(e, pos)) = stack.last() {
            // A free eligible variable ends the path.
            let free = self.incidence[e].iter().copied().find(|&v| {
                self.eligible(v) && self.assign_of(v).is_none() && !seen_var.contains_key(&v)
            });
            if let Some(v) = free {
                let top = stack.len() - 1;
                self.set_assign(v, stack[top].0);
                for k in 0..top {
                    self.set_assign(via[k], stack[k].0);
                }
                return Ok(());
            }
            let mut advanced = false;
            let mut p = pos;
            while p < self.incidence[e].len() {
                let v = self.incidence[e][p];
                p += 1;
                if !self.eligible(v) || seen_var.contains_key(&v) {
                    continue;
                }
                seen_var.insert(v, ());
                colored_vars.push(v);
                if let Some(next) = self.assign_of(v) {
                    colored_eqs.push(next);
                    stack.last_mut().expect("non-empty").1 = p;
                    via.push(v);
                    stack.push((next, 0));
                    advanced = true;
                    break;
                }
            }
            if !advanced {
                stack.pop();
                via.pop();
            }
        }
        colored_eqs.sort_unstable();
        colored_eqs.dedup();
        Err((colored_eqs, colored_vars))
    }

    fn assign_of(&self, v: VarId) -> Option<usize> {
        self.assign.get(v as usize).copied().flatten()
    }

    fn set_assign(&mut self, v: VarId, e: usize) {
        if self.assign.len() <= v as usize {
            self.assign.resize(v as usize + 1, None);
        }
        self.assign[v as usize] = Some(e);
    }

    /// Differentiates equation `e`, returning the new equation's index.
    /// Derivative variables are created only for the variables whose
    /// derivatives survive in the result (not, say, for one that appears only
    /// inside a relation, whose derivative is zero).
    fn differentiate(&mut self, e: usize) -> Result<usize, Diagnostic> {
        if let Some(d) = self.derived[e] {
            return Ok(d);
        }
        const PLACEHOLDER: VarId = u32::MAX / 2;
        let eq = self.s.equations[e].clone();
        let residual = eq.residual(&mut self.s.arena);
        // Borrowed field by field (not cloned): this runs once per
        // differentiated equation, and a copy of the variable tables each
        // time made index reduction quadratic in the model size.
        let unknown = &self.s.unknown;
        let existing = &self.s.der;
        let mut fresh: Vec<VarId> = Vec::new();
        let result = {
            let mut der = |v: VarId| -> Option<VarId> {
                if !unknown.get(v as usize).copied().unwrap_or(false) {
                    return None;
                }
                if let Some(d) = existing.get(v as usize).copied().flatten() {
                    return Some(d);
                }
                let k = match fresh.iter().position(|&x| x == v) {
                    Some(k) => k,
                    None => {
                        fresh.push(v);
                        fresh.len() - 1
                    }
                };
                Some(PLACEHOLDER + k as VarId)
            };
            let mut rules = TimeRules {
                der: &mut der,
                functions: &mut self.s.functions,
            };
            let mut memo = HashMap::default();
            symbolic::differentiate(&mut self.s.arena, residual, &mut rules, &mut memo)
        };
        let d = result.map_err(|msg| {
            Diagnostic::error(
                DiagnosticKind::Singular,
                eq.span,
                format!(
                    "index reduction needs the derivative of this equation, which failed: {msg}"
                ),
            )
        })?;
        let used: Vec<VarId> = self
            .s
            .arena
            .vars_of(d)
            .into_iter()
            .filter(|&x| x >= PLACEHOLDER)
            .collect();
        let d = if used.is_empty() {
            d
        } else {
            let map: HashMap<VarId, VarId> = used
                .iter()
                .map(|&p| (p, self.s.der_var(fresh[(p - PLACEHOLDER) as usize])))
                .collect();
            let mut memo = crate::flat::RewriteMemo::default();
            self.s.arena.rewrite(d, &mut memo, &mut |a, n| match n {
                Node::Var(x) => map.get(&x).map(|&y| a.var(y)),
                _ => None,
            })
        };
        let zero = self.s.arena.zero();
        let idx = self.s.equations.len();
        self.s.equations.push(super::ReducedEquation {
            lhs: d,
            rhs: zero,
            span: eq.span,
            scope: eq.scope.clone(),
            diff_of: Some(e),
        });
        self.derived.push(None);
        self.derived[e] = Some(idx);
        self.incidence.push(self.s.eq_vars(idx));
        if self.assign.len() < self.s.vars.len() {
            self.assign.resize(self.s.vars.len(), None);
        }
        Ok(idx)
    }

    /// Pantelides' algorithm over all equations.
    pub fn run(&mut self) -> Result<(), Diagnostic> {
        self.assign.resize(self.s.vars.len(), None);
        let original = self.s.equations.len();
        let limit = 4 * original + 16;
        let mut differentiations = 0usize;
        for k in 0..original {
            let mut i = k;
            loop {
                match self.augment(i) {
                    Ok(()) => break,
                    Err((eqs, vars)) => {
                        if eqs
                            .iter()
                            .all(|&e| self.incidence[e].iter().all(|&v| !self.eligible(v)))
                            && vars.is_empty()
                        {
                            // An equation with no unknown at all can never be matched:
                            // a relation between parameters, or a structural error.
                            let has_unknown = !self.incidence[i].is_empty();
                            if !has_unknown {
                                let eq = &self.s.equations[i];
                                return Err(Diagnostic::error(DiagnosticKind::Balance, eq.span, "this equation does not involve any unknown of the model")
                                    .with_hint("an equation between parameters and constants only is not allowed; use assert(...) to check parameters"));
                            }
                        }
                        differentiations += eqs.len();
                        if differentiations > limit * 4 {
                            let eq = &self.s.equations[k];
                            return Err(Diagnostic::error(DiagnosticKind::Singular, eq.span, "index reduction does not terminate: the system is structurally singular")
                                .with_hint("some equations constrain only variables that other equations already determine"));
                        }
                        for &v in &vars {
                            self.s.der_var(v);
                        }
                        let mut new_of = HashMap::default();
                        for &e in &eqs {
                            let d = self.differentiate(e)?;
                            new_of.insert(e, d);
                        }
                        for &v in &vars {
                            if let (Some(e), Some(dv)) = (self.assign_of(v), self.s.der[v as usize])
                                && let Some(&de) = new_of.get(&e)
                            {
                                self.set_assign(dv, de);
                            }
                        }
                        i = new_of[&i];
                    }
                }
            }
        }
        let mut max_order = 0;
        for e in 0..self.s.equations.len() {
            let mut order = 0;
            let mut x = e;
            while let Some(p) = self.s.equations[x].diff_of {
                order += 1;
                x = p;
            }
            max_order = max_order.max(order);
        }
        self.s.summary.differentiated = self.s.equations.len() - original;
        let has_algebraic = (0..self.s.vars.len())
            .any(|v| self.s.unknown[v] && self.s.der[v].is_none() && self.s.integral[v].is_none());
        self.s.summary.index = if max_order > 0 {
            max_order + 1
        } else if has_algebraic {
            1
        } else {
            0
        };
        Ok(())
    }

    /// Preference of variable `w` to stay a state (higher: more). A
    /// derivative variable `der(x)` made by the analysis has no attributes of
    /// its own; it stands for `x`'s motion and takes `x`'s preference.
    fn state_preference(&self, w: VarId) -> u32 {
        let own = |v: &crate::flat::Variable| {
            let base = match v.state_select {
                StateSelect::Never => 0,
                StateSelect::Avoid => 2,
                StateSelect::Default => 4,
                StateSelect::Prefer => 8,
                StateSelect::Always => 10,
            };
            base + u32::from(v.fixed == Some(true))
        };
        // Twice the own preference; an inherited one counts a notch lower, so
        // that a user's variable wins a tie with a made-up `der(x)`.
        let mut best = 2 * own(&self.s.vars[w as usize]);
        let mut x = w;
        while let Some(i) = self.s.integral[x as usize] {
            best = best.max(2 * own(&self.s.vars[i as usize]) - 1);
            x = i;
        }
        best
    }

    /// Mattsson-Söderlind selection of dummy derivatives.
    pub fn select_dummy_derivatives(&mut self) -> Result<Vec<VarId>, Diagnostic> {
        let n_eq = self.s.equations.len();
        let order = |e: usize| {
            let mut k = 0;
            let mut x = e;
            while let Some(p) = self.s.equations[x].diff_of {
                k += 1;
                x = p;
            }
            k
        };
        // Level 1: the highest derivatives of the differentiated equations.
        let mut rows: Vec<usize> = (0..n_eq)
            .filter(|&e| self.derived[e].is_none() && order(e) >= 1)
            .collect();
        let mut candidates: Vec<VarId> = {
            let mut c: Vec<VarId> = rows
                .iter()
                .flat_map(|&e| self.incidence[e].iter().copied())
                .filter(|&v| {
                    self.s.der[v as usize].is_none() && self.s.integral[v as usize].is_some()
                })
                .collect();
            c.sort_unstable();
            c.dedup();
            c
        };
        // The start point decides between structurally equal choices; a
        // model whose equations were not differentiated (index 1) has none
        // to make and does not evaluate it (a walk over every equation).
        let start = if rows.is_empty() {
            Vec::new()
        } else {
            self.s.start().to_vec()
        };
        let mut dummies = Vec::new();
        let debug = std::env::var_os("RMOC_DEBUG_STATES").is_some();
        while !rows.is_empty() {
            let chosen = self.choose_columns(&rows, &candidates, &start)?;
            if debug {
                let names = |vs: &[VarId]| {
                    vs.iter()
                        .map(|&v| {
                            format!(
                                "{}({})",
                                self.s.vars[v as usize].name,
                                self.state_preference(self.s.integral[v as usize].unwrap_or(v))
                            )
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                eprintln!(
                    "dummy derivatives: {} rows; candidates [{}]; chosen [{}]",
                    rows.len(),
                    names(&candidates),
                    names(&chosen)
                );
            }
            dummies.extend(chosen.iter().copied());
            // Next level: the equations one derivative lower that are themselves
            // derivatives, and the variables one derivative lower.
            rows = rows
                .iter()
                .filter_map(|&e| self.s.equations[e].diff_of)
                .filter(|&e| self.s.equations[e].diff_of.is_some())
                .collect();
            rows.sort_unstable();
            rows.dedup();
            candidates = chosen
                .iter()
                .filter_map(|&c| self.s.integral[c as usize])
                .filter(|&w| self.s.integral[w as usize].is_some())
                .collect();
        }
        for &d in &dummies {
            if let Some(w) = self.s.integral[d as usize]
                && self.s.vars[w as usize].state_select == StateSelect::Always
            {
                let name = self.s.vars[w as usize].name.clone();
                return Err(Diagnostic::error(DiagnosticKind::Singular,
                    self.s.vars[w as usize].span,
                    format!("`{name}` has stateSelect = always but the constraints make it a dummy state"),
                )
                .with_hint("lower its stateSelect, or raise the preference of the other variables in the same constraint"));
            }
        }
        Ok(dummies)
    }

    /// Picks `rows.len()` columns among `candidates` with a nonsingular
    /// Jacobian block, least preferred states first.
    ///
    /// The choice is the greedy basis of the columns in preference order
    /// (Mattsson and Söderlind 1993 choose any nonsingular block; taking the
    /// least preferred columns as dummies leaves the preferred ones as states).
    /// It is found structurally first, by growing a matching one column at a
    /// time (the greedy basis of the transversal matroid), which is near linear
    /// on the sparse constraints of component models. If that block is
    /// numerically nonsingular at the start point (each diagonal block of its
    /// BLT form checked by LU), it is also the numeric greedy basis: a column
    /// the structural greedy rejects is numerically dependent as well. Only
    /// when the start point makes the block singular (a velocity that starts
    /// at zero, say) does the dense numeric greedy below run.
    fn choose_columns(
        &mut self,
        rows: &[usize],
        candidates: &[VarId],
        start: &[f64],
    ) -> Result<Vec<VarId>, Diagnostic> {
        let mut order: Vec<VarId> = candidates.to_vec();
        order.sort_by_key(|&c| {
            let w = self.s.integral[c as usize].unwrap_or(c);
            (self.state_preference(w), c)
        });
        let residuals: Vec<ExprId> = rows
            .iter()
            .map(|&e| {
                let eq = self.s.equations[e].clone();
                eq.residual(&mut self.s.arena)
            })
            .collect();
        if let Some(chosen) = self.structural_choice(rows, &order, &residuals, start)? {
            return Ok(chosen);
        }
        self.dense_choice(rows, &order, &residuals, start)
    }

    /// d(residual of row k)/d(column c) at the start point.
    fn jacobian_entry(
        &mut self,
        row: usize,
        residual: ExprId,
        c: VarId,
        start: &[f64],
    ) -> Result<f64, Diagnostic> {
        let d = symbolic::partial(&mut self.s.arena, residual, c, &mut self.s.functions).map_err(
            |m| {
                Diagnostic::error(
                    DiagnosticKind::Singular,
                    self.s.equations[row].span,
                    format!("cannot differentiate this equation: {m}"),
                )
            },
        )?;
        let env = symbolic::eval::LeafValues {
            values: start,
            pre: None,
            time: self.s.experiment.start_time.unwrap_or(0.0),
            functions: &self.s.functions.functions,
            initial: true,
            calls: None,
        };
        Ok(symbolic::eval::eval(&self.s.arena, d, &env).unwrap_or(0.0))
    }

    /// The structural greedy choice, if it is numerically nonsingular at the
    /// start point; `None` sends the caller to the dense numeric greedy.
    fn structural_choice(
        &mut self,
        rows: &[usize],
        order: &[VarId],
        residuals: &[ExprId],
        start: &[f64],
    ) -> Result<Option<Vec<VarId>>, Diagnostic> {
        let need = rows.len();
        let rank: HashMap<VarId, usize> = order.iter().enumerate().map(|(j, &c)| (c, j)).collect();
        // The transposed incidence: for each candidate column, its rows.
        let mut rows_of_col = vec![Vec::new(); order.len()];
        for (k, &e) in rows.iter().enumerate() {
            for v in &self.incidence[e] {
                if let Some(&j) = rank.get(v) {
                    rows_of_col[j].push(k);
                }
            }
        }
        let transposed = super::matching::Incidence {
            rows: rows_of_col,
            ncols: need,
        };
        let mut row_of_col: Vec<Option<usize>> = vec![None; order.len()];
        let mut col_of_row: Vec<Option<usize>> = vec![None; need];
        let mut visited = vec![usize::MAX; need];
        let mut chosen = Vec::new();
        for j in 0..order.len() {
            if chosen.len() == need {
                break;
            }
            // Augmenting from column j keeps every column matched so far matched.
            if super::matching::augment(
                &transposed,
                j,
                j,
                &mut row_of_col,
                &mut col_of_row,
                &mut visited,
            ) {
                chosen.push(j);
            }
        }
        if chosen.len() < need {
            return Ok(None);
        }
        // BLT form of the chosen block: row k depends on row k' when row k
        // mentions the column matched to row k'.
        let mut graph = petgraph::graph::DiGraph::<usize, ()>::with_capacity(need, need);
        let nodes: Vec<_> = (0..need).map(|k| graph.add_node(k)).collect();
        for &j in &chosen {
            let Some(owner) = row_of_col[j] else { continue };
            for &k in &transposed.rows[j] {
                if k != owner {
                    graph.add_edge(nodes[k], nodes[owner], ());
                }
            }
        }
        for scc in petgraph::algo::tarjan_scc(&graph) {
            let block_rows: Vec<usize> = scc.iter().map(|&n| graph[n]).collect();
            let block_cols: Vec<usize> = block_rows.iter().filter_map(|&k| col_of_row[k]).collect();
            let m = block_rows.len();
            let mut a = vec![0.0; m * m];
            for (r, &k) in block_rows.iter().enumerate() {
                for (c, &j) in block_cols.iter().enumerate() {
                    if transposed.rows[j].contains(&k) {
                        a[r * m + c] =
                            self.jacobian_entry(rows[k], residuals[k], order[j], start)?;
                    }
                }
            }
            if !nonsingular(&mut a, m) {
                return Ok(None);
            }
        }
        Ok(Some(chosen.iter().map(|&j| order[j]).collect()))
    }

    /// The greedy numeric choice on dense Jacobian columns (modified
    /// Gram-Schmidt), completed structurally where the start point is singular.
    fn dense_choice(
        &mut self,
        rows: &[usize],
        order: &[VarId],
        residuals: &[ExprId],
        start: &[f64],
    ) -> Result<Vec<VarId>, Diagnostic> {
        let mut columns: Vec<(VarId, Vec<f64>, Vec<bool>)> = Vec::new();
        for &c in order {
            let mut col = Vec::with_capacity(rows.len());
            let mut structural = Vec::with_capacity(rows.len());
            for (k, &r) in residuals.iter().enumerate() {
                let present = self.incidence[rows[k]].contains(&c);
                structural.push(present);
                col.push(if present {
                    self.jacobian_entry(rows[k], r, c, start)?
                } else {
                    0.0
                });
            }
            columns.push((c, col, structural));
        }
        let need = rows.len();
        if std::env::var_os("RMOC_DEBUG_STATES").is_some() {
            for (k, &r) in rows.iter().enumerate() {
                let eq = &self.s.equations[r];
                let names = |v: VarId| self.s.vars[v as usize].name.clone();
                eprintln!(
                    "  row {k}: {} = {}",
                    self.s.arena.display(eq.lhs, &names),
                    self.s.arena.display(eq.rhs, &names)
                );
            }
            for (c, col, _) in &columns {
                eprintln!(
                    "  col {}: {:?}",
                    self.s.vars[*c as usize].name,
                    col.iter()
                        .enumerate()
                        .filter(|(_, x)| **x != 0.0)
                        .collect::<Vec<_>>()
                );
            }
        }
        // Greedy numeric rank by modified Gram-Schmidt.
        let mut basis: Vec<Vec<f64>> = Vec::new();
        let mut chosen = Vec::new();
        let mut used = vec![false; columns.len()];
        for (i, (c, col, _)) in columns.iter().enumerate() {
            if chosen.len() == need {
                break;
            }
            let norm0 = col.iter().map(|x| x * x).sum::<f64>().sqrt();
            if norm0.is_nan() || norm0 <= 0.0 {
                continue;
            }
            let mut r = col.clone();
            for b in &basis {
                let dot: f64 = r.iter().zip(b).map(|(x, y)| x * y).sum();
                for (x, y) in r.iter_mut().zip(b) {
                    *x -= dot * y;
                }
            }
            let norm = r.iter().map(|x| x * x).sum::<f64>().sqrt();
            if norm > 1e-9 * norm0 {
                for x in r.iter_mut() {
                    *x /= norm;
                }
                basis.push(r);
                chosen.push(*c);
                used[i] = true;
            }
        }
        // Structural completion where the start point is numerically singular
        // (a velocity that starts at zero, say).
        if chosen.len() < need {
            for (i, (c, _, _)) in columns.iter().enumerate() {
                if chosen.len() == need {
                    break;
                }
                if used[i] {
                    continue;
                }
                let mut trial = chosen.clone();
                trial.push(*c);
                if structural_rank(&columns, &trial, need) == trial.len() {
                    chosen.push(*c);
                    used[i] = true;
                }
            }
        }
        if chosen.len() < need {
            let eq = &self.s.equations[rows[0]];
            return Err(Diagnostic::error(DiagnosticKind::Singular,
                eq.span,
                "no static choice of states exists for this constraint (dynamic state selection would be needed)",
            )
            .with_hint("set stateSelect = StateSelect.prefer on the variables you want as states, or reformulate the constraint"));
        }
        Ok(chosen)
    }
}

/// Whether the dense `m` x `m` matrix `a` (row-major) is numerically
/// nonsingular: LU with partial pivoting, every pivot above 1e-9 of the
/// largest entry. `a` is overwritten.
fn nonsingular(a: &mut [f64], m: usize) -> bool {
    let scale = a.iter().fold(0.0f64, |s, x| s.max(x.abs()));
    if !scale.is_finite() || scale == 0.0 {
        return false;
    }
    for p in 0..m {
        let (best, size) = (p..m)
            .map(|r| (r, a[r * m + p].abs()))
            .fold((p, -1.0), |b, x| if x.1 > b.1 { x } else { b });
        if size.is_nan() || size <= 1e-9 * scale {
            return false;
        }
        if best != p {
            for c in 0..m {
                a.swap(best * m + c, p * m + c);
            }
        }
        for r in p + 1..m {
            let f = a[r * m + p] / a[p * m + p];
            if f != 0.0 {
                for c in p..m {
                    a[r * m + c] -= f * a[p * m + c];
                }
            }
        }
    }
    true
}

fn structural_rank(
    columns: &[(VarId, Vec<f64>, Vec<bool>)],
    chosen: &[VarId],
    nrows: usize,
) -> usize {
    let rows: Vec<Vec<usize>> = (0..nrows)
        .map(|r| {
            chosen
                .iter()
                .enumerate()
                .filter(|(_, c)| columns.iter().any(|(x, _, s)| x == *c && s[r]))
                .map(|(k, _)| k)
                .collect()
        })
        .collect();
    let inc = super::matching::Incidence {
        rows,
        ncols: chosen.len(),
    };
    super::matching::maximum_matching(&inc).size()
}

/// Values of every variable at the start: parameters from their bindings,
/// others from `start` (0 when none).
pub fn start_point(s: &Analysis) -> Vec<f64> {
    let n = s.vars.len();
    let mut values = vec![0.0; n];
    let mut done = vec![false; n];
    // One memo for every evaluation of the model's arena here.
    let calls = symbolic::eval::CallMemo::default();
    let mut vars = crate::flat::VarsMemo::default();
    fn value_of(
        s: &Analysis,
        v: usize,
        values: &mut Vec<f64>,
        done: &mut Vec<bool>,
        (calls, vars): (&symbolic::eval::CallMemo, &mut crate::flat::VarsMemo),
        depth: usize,
    ) -> f64 {
        if done[v] || depth > 200 {
            return values[v];
        }
        done[v] = true;
        let var = &s.vars[v];
        let e = if var.is_parameter() {
            var.binding.or(var.start)
        } else {
            var.start
        };
        // An element of an array bound to a call (`profile[i, j] =
        // cycloidProfile(...)`, thousands of elements with one call site):
        // once the site has been called here, the others are the call's
        // other outputs, without walking its arguments again. (Every call
        // here came after the variables of its arguments, which keep their
        // values.)
        if let Some(e) = e
            && let Node::Call { call, output } = s.arena.node(e)
            && let Some(x) = calls.last_output(call, output as usize)
        {
            values[v] = x;
            return x;
        }
        if let Some(e) = e {
            for &dep in s.arena.vars_of_memo(e, vars).iter() {
                value_of(s, dep as usize, values, done, (calls, vars), depth + 1);
            }
            let env = symbolic::eval::LeafValues {
                values,
                pre: None,
                time: 0.0,
                functions: &s.functions.functions,
                initial: true,
                calls: Some(calls),
            };
            values[v] = symbolic::eval::eval(&s.arena, e, &env).unwrap_or(0.0);
        }
        values[v]
    }
    for v in 0..n {
        value_of(s, v, &mut values, &mut done, (&calls, &mut vars), 0);
    }
    // Variables without a start value take the value their defining equation
    // gives (`ex = cos(phi)*e[1]` is 1, not 0, at the start): a few sweeps of
    // the equations written `v = expr`.
    let free: Vec<bool> = (0..n)
        .map(|v| s.vars[v].start.is_none() && !s.vars[v].is_parameter())
        .collect();
    for _ in 0..8 {
        let mut changed = false;
        for eq in &s.equations {
            let (target, expr) = match (s.arena.node(eq.lhs), s.arena.node(eq.rhs)) {
                (Node::Var(v), _) if free[v as usize] => (v, eq.rhs),
                (_, Node::Var(v)) if free[v as usize] => (v, eq.lhs),
                _ => continue,
            };
            let env = symbolic::eval::LeafValues {
                values: &values,
                pre: None,
                time: 0.0,
                functions: &s.functions.functions,
                initial: true,
                calls: Some(&calls),
            };
            if let Ok(x) = symbolic::eval::eval(&s.arena, expr, &env)
                && x.is_finite()
                && x != values[target as usize]
            {
                values[target as usize] = x;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    values
}
