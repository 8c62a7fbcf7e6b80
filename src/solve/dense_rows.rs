//! Dense rows of the Jacobian by the chain rule.
//!
//! A body that many contacts load (a carrier holding dozens of needles, a
//! disc against forty pins, a ring gear meshing with every planet) has an
//! acceleration that reads every state those contacts read: its row of
//! df/dx is dense, and a column colouring (Curtis, Powell & Reid) then
//! needs a colour per column, a run of the tangent code per state. Such a
//! row is a sum of a few terms each: the contact forces, each of which
//! reads a few states. So the row is split through them (as Coleman &
//! Verma's partitions split a Jacobian into a part with few dense rows and
//! the rest, "The efficient computation of sparse Jacobian matrices using
//! automatic differentiation", SIAM J. Sci. Comput. 19, 1998):
//!
//! - backwards from the dense row's derivative, each variable that reads
//!   many states and is computed by an explicit assignment is *expanded*:
//!   its partial derivatives in the variables its assignment reads are
//!   formed symbolically; a variable that reads few states is a *leaf*;
//! - the columns are coloured so that no two columns of a colour share a
//!   sparse row or a leaf, so one tangent run per colour gives each leaf's
//!   derivatives in each of its states, exactly (the tangent code stores
//!   every variable's tangent);
//! - the dense row is the leaves' derivatives weighted by the row's
//!   sensitivities to the leaves, found by one backward sweep over the
//!   expanded variables with their partials evaluated at the point.
//!
//! A dense row that passes through anything else (an implicit equation,
//! an algebraic loop) leaves the model on the plain colouring.

use super::jacobian::{JacobianPattern, StateDeps, colour_columns};
use crate::flat::{ExprArena, ExprId, Function, Node, VarId};
use crate::structure::{Block, Causal};
use crate::symbolic::{self, eval::LeafValues};
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// A derivative that reads more states than this is a dense row.
const DENSE_ROW: usize = 48;
/// A variable that reads at most this many states is a leaf.
const LEAF: usize = 24;
/// The expansion gives up beyond this many variables.
const MAX_NODES: usize = 100_000;

/// How the dense rows of a model's Jacobian are computed.
#[derive(Debug)]
pub struct DenseRowSplit {
    /// Columns of one colour share no sparse row and no leaf.
    pub colours: Vec<Vec<u32>>,
    /// `dense[i]`: whether row i is computed by the chain rule.
    pub dense: Vec<bool>,
    /// The dense rows, the node of each one's derivative, and the sign
    /// of the derivative's reference to it (-1 through a negated alias).
    pub rows: Vec<(usize, usize, f64)>,
    /// Expanded variables and leaves, each after every node it reads.
    pub nodes: Vec<SplitNode>,
    /// The leaves' derivatives that each colour's run gives: (entry in
    /// the leaves' flattened state lists, variable whose tangent it is).
    pub colour_leaves: Vec<Vec<(usize, VarId)>>,
    /// Entries of the leaves' state lists in all.
    pub leaf_entries: usize,
    /// The partial derivatives, in their own arena with the functions
    /// (and derivative functions) they call.
    pub partials: Vec<ExprId>,
    /// The aliases (var, of, sign) the partials read: the frame holds
    /// only their sources.
    pub aliases: Vec<(VarId, VarId, f64)>,
    arena: ExprArena,
    functions: Vec<Function>,
    /// Set when a partial could not be evaluated: the plain colouring is
    /// used from then on, rather than paying for both at every Jacobian.
    disabled: AtomicBool,
}

/// A variable the split reads.
#[derive(Debug)]
pub enum SplitNode {
    /// Computed from others: (node read, index into `partials`, sign of
    /// the reference: -1 through a negated alias).
    Expanded(Vec<(usize, usize, f64)>),
    /// Variable `var`, read from the tangent runs: its states, whose
    /// derivatives are entries `first..first + states.len()` of the
    /// leaves' lists.
    Leaf {
        var: VarId,
        states: Vec<u32>,
        first: usize,
    },
    /// State k itself.
    State(u32),
}

impl DenseRowSplit {
    /// The split of `c`'s Jacobian (with the plain `pattern`), if it has
    /// dense rows, they all expand, and the colouring it allows takes
    /// under half the pattern's colours.
    pub(super) fn of_model(
        c: &Causal,
        deps: &StateDeps,
        pattern: &JacobianPattern,
    ) -> Option<DenseRowSplit> {
        let n = c.states.len();
        let is_dense = |v: VarId| deps.of_var(v).is_none_or(|s| s.len() > DENSE_ROW);
        let dense: Vec<bool> = c.state_ders.iter().map(|&d| is_dense(d)).collect();
        if !dense.contains(&true) {
            return None;
        }
        let mut b = Builder {
            c,
            deps,
            block_of: FxHashMap::default(),
            state_of: c
                .states
                .iter()
                .enumerate()
                .map(|(k, &s)| (s, k as u32))
                .collect(),
            node_of: FxHashMap::default(),
            nodes: Vec::new(),
            partials: Vec::new(),
            leaf_entries: 0,
        };
        for (k, block) in c.blocks.iter().enumerate() {
            if let Block::Explicit { var, .. } = block {
                b.block_of.insert(*var, k);
            }
        }
        let mut rows = Vec::new();
        for (i, &d) in c.state_ders.iter().enumerate() {
            if dense[i] {
                let (node, sign) = b.node(d)?;
                rows.push((i, node?, sign));
            }
        }
        // The conflict rows: the pattern's sparse rows, then the leaves.
        let mut cols: Vec<Vec<usize>> = (0..n)
            .map(|j| {
                pattern
                    .column(j)
                    .map(|k| pattern.row_idx[k])
                    .filter(|&i| !dense[i])
                    .collect()
            })
            .collect();
        let mut n_rows = n;
        for node in &b.nodes {
            if let SplitNode::Leaf { states, .. } = node {
                states.iter().for_each(|&j| cols[j as usize].push(n_rows));
                n_rows += 1;
            }
        }
        let mut col_ptr = vec![0];
        let mut row_idx = Vec::new();
        for col in &cols {
            row_idx.extend_from_slice(col);
            col_ptr.push(row_idx.len());
        }
        let colours = colour_columns(n_rows, n, &col_ptr, &row_idx);
        if 2 * colours.len() >= pattern.colours.len() {
            return None;
        }
        let mut colour_of = vec![0usize; n];
        for (k, colour) in colours.iter().enumerate() {
            colour.iter().for_each(|&j| colour_of[j as usize] = k);
        }
        let mut colour_leaves = vec![Vec::new(); colours.len()];
        for node in &b.nodes {
            if let SplitNode::Leaf { var, states, first } = node {
                for (p, &j) in states.iter().enumerate() {
                    colour_leaves[colour_of[j as usize]].push((first + p, *var));
                }
            }
        }
        // Only now, the split being worth it: the partials, in a copy of
        // the arena (forming them adds nodes and derivative functions).
        let mut arena = c.arena.clone();
        let mut functions = c.functions.clone();
        let mut partials = Vec::with_capacity(b.partials.len());
        for &(value, u) in &b.partials {
            partials.push(symbolic::partial(&mut arena, value, u, &mut functions).ok()?);
        }
        // The aliases the partials read (alias elimination substitutes
        // most): the frame holds only their sources.
        let read: rustc_hash::FxHashSet<VarId> =
            partials.iter().flat_map(|&p| arena.vars_of(p)).collect();
        let aliases = c
            .aliases
            .iter()
            .filter(|a| read.contains(&a.var))
            .map(|a| (a.var, a.of, if a.negated { -1.0 } else { 1.0 }))
            .collect();
        Some(DenseRowSplit {
            colours,
            dense,
            rows,
            colour_leaves,
            leaf_entries: b.leaf_entries,
            partials,
            aliases,
            nodes: b.nodes,
            arena,
            functions: functions.functions,
            disabled: AtomicBool::new(false),
        })
    }

    /// The partial derivatives at the point whose variables (by id) are
    /// `values`, with `pre` their left limits, at time `time`; false if
    /// one cannot be evaluated (and from then on: the split is disabled).
    pub fn eval_partials(
        &self,
        values: &[f64],
        pre: &[f64],
        time: f64,
        out: &mut Vec<f64>,
    ) -> bool {
        if self.disabled.load(Ordering::Relaxed) {
            return false;
        }
        let env = LeafValues {
            values,
            pre: Some(pre),
            time,
            functions: &self.functions,
            initial: false,
            calls: None,
        };
        out.clear();
        for &e in &self.partials {
            match symbolic::eval::eval(&self.arena, e, &env) {
                Ok(v) if v.is_finite() => out.push(v),
                _ => {
                    self.disabled.store(true, Ordering::Relaxed);
                    return false;
                }
            }
        }
        true
    }

    /// Adds dense row `row`'s entries into `acc` (indexed by state), from
    /// the partials' values `pv` and the leaves' derivatives `leaf`;
    /// `adjoint` is scratch of the nodes' length, zero on entry and exit.
    pub fn row(&self, row: usize, pv: &[f64], leaf: &[f64], adjoint: &mut [f64], acc: &mut [f64]) {
        let (_, top, sign) = self.rows[row];
        adjoint[top] = sign;
        for v in (0..=top).rev() {
            let a = adjoint[v];
            if a == 0.0 {
                continue;
            }
            adjoint[v] = 0.0;
            match &self.nodes[v] {
                SplitNode::Expanded(reads) => {
                    for &(r, p, sign) in reads {
                        adjoint[r] += a * sign * pv[p];
                    }
                }
                SplitNode::Leaf { states, first, .. } => {
                    for (p, &j) in states.iter().enumerate() {
                        acc[j as usize] += a * leaf[first + p];
                    }
                }
                SplitNode::State(k) => acc[*k as usize] += a,
            }
        }
    }
}

struct Builder<'a> {
    c: &'a Causal,
    deps: &'a StateDeps,
    block_of: FxHashMap<VarId, usize>,
    state_of: FxHashMap<VarId, u32>,
    /// Node of each variable met (`None`: it reads no state).
    node_of: FxHashMap<VarId, Option<usize>>,
    nodes: Vec<SplitNode>,
    /// The partials to form, by their index in the expanded nodes' edges:
    /// (expression, variable as it references it).
    partials: Vec<(ExprId, VarId)>,
    leaf_entries: usize,
}

impl Builder<'_> {
    /// The node of variable `v` (after its alias), made with the nodes it
    /// reads first, and the sign of the reference; `Some((None, _))` if it
    /// reads no state, `None` if it cannot be split. Iterative, so deep
    /// chains of assignments do not recurse.
    fn node(&mut self, v: VarId) -> Option<(Option<usize>, f64)> {
        let (top, sign) = self.deps.reference(v);
        // A stack of variables whose reads are being made.
        let mut stack = vec![top];
        while let Some(&v) = stack.last() {
            if self.node_of.contains_key(&v) {
                stack.pop();
                continue;
            }
            if self.nodes.len() > MAX_NODES {
                return None;
            }
            if let Some(&k) = self.state_of.get(&v) {
                self.node_of.insert(v, Some(self.nodes.len()));
                self.nodes.push(SplitNode::State(k));
                stack.pop();
                continue;
            }
            match self.deps.of_var(v) {
                Some([]) => {
                    self.node_of.insert(v, None);
                    stack.pop();
                    continue;
                }
                Some(s) if s.len() <= LEAF => {
                    let states = s.to_vec();
                    let first = self.leaf_entries;
                    self.leaf_entries += states.len();
                    self.node_of.insert(v, Some(self.nodes.len()));
                    self.nodes.push(SplitNode::Leaf {
                        var: v,
                        states,
                        first,
                    });
                    stack.pop();
                    continue;
                }
                _ => {}
            }
            let &block = self.block_of.get(&v)?;
            let Block::Explicit { value, .. } = self.c.blocks[block] else {
                return None;
            };
            // The compiled code reads an event relation's stored value
            // between events; the partials, evaluated symbolically, would
            // read it live and could take the other branch.
            if self
                .c
                .arena
                .any_node(value, |n| matches!(n, Node::Rel { event: true, .. }))
            {
                return None;
            }
            let reads = self.c.arena.vars_of(value);
            let pending: Vec<VarId> = reads
                .iter()
                .map(|&u| self.deps.reference(u).0)
                .filter(|u| !self.node_of.contains_key(u))
                .collect();
            if !pending.is_empty() {
                stack.extend(pending);
                continue;
            }
            // Every read has its node: the edges, their partials to form.
            let mut edges = Vec::new();
            for &u in &reads {
                let (t, s) = self.deps.reference(u);
                if let Some(node) = self.node_of[&t] {
                    edges.push((node, self.partials.len(), s));
                    self.partials.push((value, u));
                }
            }
            self.node_of.insert(v, Some(self.nodes.len()));
            self.nodes.push(SplitNode::Expanded(edges));
            stack.pop();
        }
        Some((self.node_of[&top], sign))
    }
}
