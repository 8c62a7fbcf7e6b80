//! The Jacobian of the state derivatives, df/dx: its structural pattern,
//! taken from the causal model, a column colouring that computes it with
//! few directional derivatives, and its storage (dense or sparse).
//!
//! Pattern: a state derivative depends on a state when the state reaches it
//! through the BLT blocks. The dependency sets are propagated once, block by
//! block in evaluation order; a torn block's variables all depend on
//! everything its equations read. Relations and `pre` are frozen between
//! events, so a superset is found, never a subset (a missing entry would
//! make a wrong Jacobian; an extra one costs only a zero). The diagonal is
//! always in the pattern: it is the pattern of the Newton matrix I - c J.
//!
//! Colouring: columns that share no row are one colour, so one run of the
//! tangent code with all their seeds set gives each of them (Curtis, Powell
//! & Reid, "On the estimation of sparse Jacobian matrices", J. Inst. Maths
//! Applics 13, 1974). The greedy colouring in natural order needs a few
//! colours for banded patterns whatever their size, so a Jacobian of the
//! N-inertia chain costs five tangent runs instead of 2N.

use super::dense_rows::DenseRowSplit;
use super::sparse_lu::ColumnOrder;
use crate::structure::{Block, Causal};
use faer::Mat;
use std::sync::{Arc, OnceLock};

/// A dependency set with more states than this is taken as "all states":
/// such rows are dense, and their sets would cost memory quadratic in the
/// model's size.
const MAX_TRACKED: usize = 256;

/// The structural pattern of df/dx (n x n, compressed sparse columns, rows
/// sorted, diagonal included) and its column colouring.
#[derive(Debug)]
pub struct JacobianPattern {
    pub n: usize,
    pub col_ptr: Vec<usize>,
    pub row_idx: Vec<usize>,
    /// Columns of one colour share no row.
    pub colours: Vec<Vec<u32>>,
    /// The dense rows computed by the chain rule, with a colouring of
    /// their own (see [`super::dense_rows`]), where that pays.
    pub split: Option<DenseRowSplit>,
    /// The fill-reducing order of the sparse LU of I - c J, found once for
    /// the pattern (`None` inside if that failed: the dense path is used).
    column_order: OnceLock<Option<ColumnOrder>>,
    /// The pattern as a tridiagonal matrix, if it is one in some order
    /// (found on first use).
    tridiagonal: OnceLock<Option<TridiagonalOrder>>,
}

/// An order of the states in which a pattern is tridiagonal: its graph
/// (an edge where entry (i, j) or (j, i) is present) is a union of paths,
/// laid end to end. A chain of bodies joined by forces has such a Newton
/// matrix; [`super::linalg`] factors it by the Thomas algorithm instead of
/// a general sparse LU.
#[derive(Debug)]
pub struct TridiagonalOrder {
    /// The state at each position (`None`: the natural order).
    pub order: Option<Vec<usize>>,
    /// The entries of position k in the pattern's values: its diagonal,
    /// the one left of it (row k, column k - 1) and the one right of it
    /// (row k, column k + 1); `usize::MAX` where there is none.
    pub diagonal: Vec<usize>,
    pub left: Vec<usize>,
    pub right: Vec<usize>,
}

/// The states a variable depends on.
#[derive(Clone, Debug)]
enum StatesOf {
    Some(Vec<u32>),
    All,
}

impl StatesOf {
    fn union(sets: &[&StatesOf]) -> StatesOf {
        let mut out: Vec<u32> = Vec::new();
        for s in sets {
            match s {
                StatesOf::All => return StatesOf::All,
                StatesOf::Some(v) => out.extend_from_slice(v),
            }
        }
        out.sort_unstable();
        out.dedup();
        if out.len() > MAX_TRACKED {
            StatesOf::All
        } else {
            StatesOf::Some(out)
        }
    }
}

/// Which states each variable of the causal model depends on, propagated
/// once through the BLT blocks in evaluation order.
pub(super) struct StateDeps {
    deps: Vec<StatesOf>,
    /// Each alias's source and sign (-1 if negated).
    alias_of: rustc_hash::FxHashMap<u32, (u32, f64)>,
}

impl StateDeps {
    pub(super) fn of_model(c: &Causal) -> StateDeps {
        StateDeps::with_sources(c, &[])
    }

    /// As [`StateDeps::of_model`], with the variables `sources` (ones no
    /// block computes, such as the contact forces an integrator writes)
    /// counted as further states: source k has index `states.len() + k`.
    pub(super) fn with_sources(c: &Causal, sources: &[u32]) -> StateDeps {
        let nv = c.vars.len();
        // Variables no block computes (parameters, discrete ones) depend on
        // no state.
        let mut sd = StateDeps {
            deps: vec![StatesOf::Some(Vec::new()); nv],
            alias_of: c
                .aliases
                .iter()
                .map(|a| (a.var, (a.of, if a.negated { -1.0 } else { 1.0 })))
                .collect(),
        };
        for (k, &s) in c.states.iter().chain(sources).enumerate() {
            sd.deps[s as usize] = StatesOf::Some(vec![k as u32]);
        }
        for b in &c.blocks {
            let set = match b {
                Block::Explicit { value, .. } => sd.read(c, &[*value]),
                Block::Implicit { residual, .. } => sd.read(c, &[*residual]),
                Block::Torn {
                    inner, residuals, ..
                } => {
                    let roots: Vec<_> = inner
                        .iter()
                        .map(|x| x.1)
                        .chain(residuals.iter().map(|x| x.0))
                        .collect();
                    sd.read(c, &roots)
                }
            };
            for v in b.vars() {
                sd.deps[v as usize] = set.clone();
            }
        }
        sd
    }

    /// The variable whose value a reference to `v` reads.
    fn target(&self, v: u32) -> u32 {
        self.reference(v).0
    }

    /// The variable a reference to `v` reads, and the reference's sign
    /// (-1 through a negated alias).
    pub(super) fn reference(&self, v: u32) -> (u32, f64) {
        self.alias_of.get(&v).copied().unwrap_or((v, 1.0))
    }

    /// The states (indices into `Causal::states`) that `exprs` read, `None`
    /// for "all of them". (The causal model's expressions hold no `der`
    /// nodes: structure replaced them by the derivative variables.)
    fn read(&self, c: &Causal, exprs: &[crate::flat::ExprId]) -> StatesOf {
        let sets: Vec<&StatesOf> = exprs
            .iter()
            .flat_map(|&e| c.arena.vars_of(e))
            .map(|v| &self.deps[self.target(v) as usize])
            .collect();
        StatesOf::union(&sets)
    }

    /// The states that `exprs` read; `None` for all of them.
    pub(super) fn of_exprs(&self, c: &Causal, exprs: &[crate::flat::ExprId]) -> Option<Vec<u32>> {
        match self.read(c, exprs) {
            StatesOf::All => None,
            StatesOf::Some(v) => Some(v),
        }
    }

    /// The states variable `v` depends on; `None` for all of them.
    pub(super) fn of_var(&self, v: u32) -> Option<&[u32]> {
        match &self.deps[self.target(v) as usize] {
            StatesOf::All => None,
            StatesOf::Some(s) => Some(s),
        }
    }
}

impl JacobianPattern {
    /// The pattern of the model's state derivatives over its states.
    pub fn of_model(c: &Causal) -> JacobianPattern {
        let n = c.states.len();
        let deps = StateDeps::of_model(c);
        // Columns: for each state j the rows i whose derivative reads it.
        let mut cols: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, &d) in c.state_ders.iter().enumerate() {
            match deps.of_var(d) {
                None => cols.iter_mut().for_each(|c| c.push(i)),
                Some(v) => v.iter().for_each(|&j| cols[j as usize].push(i)),
            }
        }
        for (j, col) in cols.iter_mut().enumerate() {
            col.push(j);
            col.sort_unstable();
            col.dedup();
        }
        let mut pattern = JacobianPattern::from_columns(n, cols);
        pattern.split = DenseRowSplit::of_model(c, &deps, &pattern);
        pattern
    }

    /// A pattern from its columns' row lists (each sorted, without repeats).
    pub fn from_columns(n: usize, cols: Vec<Vec<usize>>) -> JacobianPattern {
        let mut col_ptr = Vec::with_capacity(n + 1);
        col_ptr.push(0);
        let mut row_idx = Vec::new();
        for col in &cols {
            row_idx.extend_from_slice(col);
            col_ptr.push(row_idx.len());
        }
        let colours = colour_columns(n, n, &col_ptr, &row_idx);
        JacobianPattern {
            n,
            col_ptr,
            row_idx,
            colours,
            split: None,
            column_order: OnceLock::new(),
            tridiagonal: OnceLock::new(),
        }
    }

    /// The order in which the pattern is tridiagonal, if there is one.
    pub fn tridiagonal(&self) -> Option<&TridiagonalOrder> {
        self.tridiagonal.get_or_init(|| self.path_order()).as_ref()
    }

    /// Walks the pattern's graph: every state has at most two neighbours
    /// and the graph has no cycle, or there is no tridiagonal order.
    fn path_order(&self) -> Option<TridiagonalOrder> {
        let n = self.n;
        const NONE: usize = usize::MAX;
        let mut neighbours = vec![[NONE; 2]; n];
        let mut add = |a: usize, b: usize| -> bool {
            let slots = &mut neighbours[a];
            if slots.contains(&b) {
                true
            } else if let Some(s) = slots.iter_mut().find(|s| **s == NONE) {
                *s = b;
                true
            } else {
                false
            }
        };
        for j in 0..n {
            for k in self.column(j) {
                let i = self.row_idx[k];
                if i != j && !(add(i, j) && add(j, i)) {
                    return None;
                }
            }
        }
        // Each path from one of its ends; what is left unvisited lies on
        // a cycle.
        let mut order = Vec::with_capacity(n);
        let mut visited = vec![false; n];
        for start in 0..n {
            if visited[start] || neighbours[start].iter().all(|&s| s != NONE) {
                continue;
            }
            let (mut prev, mut at) = (NONE, start);
            loop {
                visited[at] = true;
                order.push(at);
                match neighbours[at].iter().find(|&&s| s != NONE && s != prev) {
                    Some(&next) => (prev, at) = (at, next),
                    None => break,
                }
            }
        }
        if order.len() < n {
            return None;
        }
        let entry = |i: usize, j: usize| self.entry(i, j).unwrap_or(NONE);
        let at = |k: usize| order[k];
        let diagonal = (0..n).map(|k| entry(at(k), at(k))).collect();
        let left = (0..n)
            .map(|k| {
                if k == 0 {
                    NONE
                } else {
                    entry(at(k), at(k - 1))
                }
            })
            .collect();
        let right = (0..n)
            .map(|k| {
                if k + 1 == n {
                    NONE
                } else {
                    entry(at(k), at(k + 1))
                }
            })
            .collect();
        let natural = order.iter().enumerate().all(|(k, &i)| k == i);
        Some(TridiagonalOrder {
            order: (!natural).then_some(order),
            diagonal,
            left,
            right,
        })
    }

    pub fn nnz(&self) -> usize {
        self.row_idx.len()
    }

    /// The position of entry (i, j) in `row_idx` and the values, if the
    /// pattern has it.
    pub fn entry(&self, i: usize, j: usize) -> Option<usize> {
        let col = self.column(j);
        (self.row_idx[col.clone()].binary_search(&i).ok()).map(|pos| col.start + pos)
    }

    /// The positions `k` of column `j`'s entries in `row_idx` and values.
    pub fn column(&self, j: usize) -> std::ops::Range<usize> {
        self.col_ptr[j]..self.col_ptr[j + 1]
    }

    /// The column order of the pattern's sparse LU, found on first use.
    pub fn column_order(&self) -> Option<&ColumnOrder> {
        self.column_order
            .get_or_init(|| ColumnOrder::of_pattern(self.n, &self.col_ptr, &self.row_idx))
            .as_ref()
    }
}

/// Greedy colouring of the columns in natural order: each column takes the
/// smallest colour no column sharing a row with it has. A pattern too dense
/// for that to pay (its row-pair count beyond 1e8) gets one colour a column.
pub(super) fn colour_columns(
    n_rows: usize,
    n: usize,
    col_ptr: &[usize],
    row_idx: &[usize],
) -> Vec<Vec<u32>> {
    // Rows as lists of columns.
    let mut row_len = vec![0usize; n_rows];
    for &i in row_idx {
        row_len[i] += 1;
    }
    let pairs: usize = row_len.iter().map(|l| l * l).sum();
    if pairs > 100_000_000 {
        return (0..n as u32).map(|j| vec![j]).collect();
    }
    let mut row_ptr = vec![0usize; n_rows + 1];
    for i in 0..n_rows {
        row_ptr[i + 1] = row_ptr[i] + row_len[i];
    }
    let mut fill = row_ptr.clone();
    let mut row_cols = vec![0u32; row_idx.len()];
    for j in 0..n {
        for &i in &row_idx[col_ptr[j]..col_ptr[j + 1]] {
            row_cols[fill[i]] = j as u32;
            fill[i] += 1;
        }
    }
    let mut colour = vec![u32::MAX; n];
    // forbidden[c] == j: colour c is taken by a neighbour of column j.
    let mut forbidden: Vec<usize> = Vec::new();
    let mut colours: Vec<Vec<u32>> = Vec::new();
    for j in 0..n {
        for &i in &row_idx[col_ptr[j]..col_ptr[j + 1]] {
            for &other in &row_cols[row_ptr[i]..row_ptr[i + 1]] {
                let c = colour[other as usize];
                if c != u32::MAX {
                    forbidden[c as usize] = j;
                }
            }
        }
        let c = (0..colours.len())
            .find(|&c| forbidden[c] != j)
            .unwrap_or(colours.len());
        if c == colours.len() {
            colours.push(Vec::new());
            forbidden.push(usize::MAX);
        }
        colour[j] = c as u32;
        colours[c].push(j as u32);
    }
    colours
}

/// The Newton matrix's solver: dense LU, or sparse LU on the pattern.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum LinearSolver {
    /// Sparse above [`SPARSE_ABOVE`] states when the pattern is at most
    /// [`SPARSE_DENSITY`] full; dense otherwise.
    #[default]
    Auto,
    Dense,
    Sparse,
}

/// Systems of at most this many states are solved dense in `Auto`.
pub const SPARSE_ABOVE: usize = 48;
/// The largest fill (nonzeros over n^2) for which `Auto` takes sparse LU.
pub const SPARSE_DENSITY: f64 = 0.25;

impl LinearSolver {
    /// Whether to use sparse LU on a problem with this pattern.
    /// A pattern whose symbolic analysis failed is solved dense.
    pub fn sparse_for(self, pattern: Option<&JacobianPattern>) -> bool {
        let Some(p) = pattern else {
            return false;
        };
        let wanted = match self {
            LinearSolver::Dense => false,
            LinearSolver::Sparse => true,
            LinearSolver::Auto => {
                p.n > SPARSE_ABOVE && (p.nnz() as f64) <= SPARSE_DENSITY * (p.n * p.n) as f64
            }
        };
        wanted && p.column_order().is_some()
    }
}

/// Storage of df/dx.
pub enum Jacobian {
    Dense(Mat<f64>),
    /// Values in the order of the pattern's entries.
    Sparse {
        pattern: Arc<JacobianPattern>,
        values: Vec<f64>,
    },
}

impl Jacobian {
    /// Zero storage for an n-state problem: sparse on `pattern` if `sparse`.
    pub fn new(n: usize, pattern: Option<Arc<JacobianPattern>>, sparse: bool) -> Jacobian {
        match pattern {
            Some(p) if sparse => Jacobian::Sparse {
                values: vec![0.0; p.nnz()],
                pattern: p,
            },
            _ => Jacobian::Dense(Mat::zeros(n, n)),
        }
    }

    pub fn n(&self) -> usize {
        match self {
            Jacobian::Dense(m) => m.nrows(),
            Jacobian::Sparse { pattern, .. } => pattern.n,
        }
    }

    /// Sets every entry to zero.
    pub fn clear(&mut self) {
        match self {
            Jacobian::Dense(m) => m.fill(0.0),
            Jacobian::Sparse { values, .. } => values.fill(0.0),
        }
    }

    /// Entry (i, j), which is `k`-th in the pattern. Dense storage ignores
    /// `k`.
    #[inline]
    pub fn set_entry(&mut self, k: usize, i: usize, j: usize, v: f64) {
        match self {
            Jacobian::Dense(m) => m[(i, j)] = v,
            Jacobian::Sparse { values, .. } => values[k] = v,
        }
    }

    /// Entry (i, j) by position. On sparse storage an entry outside the
    /// pattern must be zero: it is checked in debug builds and dropped.
    pub fn set(&mut self, i: usize, j: usize, v: f64) {
        match self {
            Jacobian::Dense(m) => m[(i, j)] = v,
            Jacobian::Sparse { pattern, values } => match pattern.entry(i, j) {
                Some(k) => values[k] = v,
                None => debug_assert!(v == 0.0, "J[{i}, {j}] = {v} outside the pattern"),
            },
        }
    }

    /// out = J x.
    pub fn mul_vec(&self, x: &[f64], out: &mut [f64]) {
        out.fill(0.0);
        match self {
            Jacobian::Dense(m) => {
                for j in 0..m.ncols() {
                    for (i, o) in out.iter_mut().enumerate() {
                        *o += m[(i, j)] * x[j];
                    }
                }
            }
            Jacobian::Sparse { pattern, values } => {
                for (j, xj) in x.iter().enumerate() {
                    for k in pattern.column(j) {
                        out[pattern.row_idx[k]] += values[k] * xj;
                    }
                }
            }
        }
    }

    /// Entry (i, j) (zero outside a sparse pattern).
    pub fn get(&self, i: usize, j: usize) -> f64 {
        match self {
            Jacobian::Dense(m) => m[(i, j)],
            Jacobian::Sparse { pattern, values } => pattern.entry(i, j).map_or(0.0, |k| values[k]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tridiagonal pattern needs three colours whatever its size, and
    /// no two columns of one colour share a row.
    #[test]
    fn a_banded_pattern_takes_few_colours_that_share_no_row() {
        let n = 1000;
        let cols: Vec<Vec<usize>> = (0..n)
            .map(|j: usize| (j.saturating_sub(1)..(j + 2).min(n)).collect())
            .collect();
        let p = JacobianPattern::from_columns(n, cols);
        assert_eq!(p.colours.len(), 3);
        for colour in &p.colours {
            let mut seen = vec![false; n];
            for &j in colour {
                for k in p.column(j as usize) {
                    let i = p.row_idx[k];
                    assert!(!seen[i], "row {i} twice in one colour");
                    seen[i] = true;
                }
            }
        }
        assert_eq!(p.colours.iter().map(Vec::len).sum::<usize>(), n);
    }

    #[test]
    fn a_dense_pattern_takes_a_colour_per_column() {
        let n = 20;
        let p = JacobianPattern::from_columns(n, vec![(0..n).collect(); n]);
        assert_eq!(p.colours.len(), n);
        assert!(!LinearSolver::Auto.sparse_for(Some(&p)));
    }
}
