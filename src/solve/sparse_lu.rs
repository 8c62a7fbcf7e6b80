//! Sparse LU of a Newton matrix that keeps its pivots between
//! factorizations.
//!
//! An implicit integrator factors matrices of one pattern again and again
//! (a I + b J, with new values of J and of the coefficients), and their
//! good pivots rarely change. The first factorization is faer's
//! partial-pivoting simplicial LU (Gilbert & Peierls) in a fill-reducing
//! column order, approximate minimum degree on the pattern of A + Aᵀ; it
//! fixes the row pivots and, with them, the patterns of L and U. Every
//! later factorization recomputes only the values on those patterns, left
//! looking, column by column: the refactorization of KLU (Davis &
//! Palamadai Natarajan, "Algorithm 907: KLU", ACM TOMS 37, 2010), without
//! a depth-first search per column. Columns of L that form a supernode
//! (rows k + 1..e of a dense triangle, then rows shared by all of them)
//! are applied as a block where U's column reaches a run of them: the
//! triangle's updates are contiguous, and the shared rows are summed in a
//! dense accumulator and subtracted once (the forward substitution does
//! the same). A kept pivot that has become small
//! against its column (below [`PIVOT_THRESHOLD`] of the largest candidate
//! under it) sends the matrix back to the pivoting factorization.
//!
//! Against faer's supernodal LU in COLAMD order (what the sparse path used
//! before), on the Newton matrix of a 50 x 50 heat-conduction grid
//! (`cargo bench --bench sparse_lu`): a refactorization takes 0.58 ms
//! instead of 1.5 ms and a solve 47 µs instead of 114 µs (the minimum
//! degree order of A + Aᵀ suits the symmetric patterns that networks of
//! components have; a pivoting LU must plan for the fill of AᵀA); at
//! 100 x 100, 4.5 ms against 9.1 ms and 0.25 against 0.54 ms. The block
//! updates of supernodes took the refactorization from 0.70 to 0.58 ms
//! at 50 x 50 and from 7.2 to 4.5 ms at 100 x 100.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::perm::PermRef;
use faer::sparse::SparseColMatRef;
use faer::sparse::SymbolicSparseColMatRef;
use faer::sparse::linalg::amd;
use faer::sparse::linalg::lu::simplicial::{
    SimplicialLu, factorize_simplicial_numeric_lu, factorize_simplicial_numeric_lu_scratch,
};

/// A kept pivot is used while it is at least this fraction of the largest
/// entry below it in its column (threshold partial pivoting, as UMFPACK's
/// default); growth of the factors stays bounded by 1 / threshold a step.
const PIVOT_THRESHOLD: f64 = 0.1;

/// The fewest columns of a supernode applied as a block (fewer cost more
/// as a block than one by one: the P2 chain's pairs took 10% longer).
const MIN_BLOCK: usize = 4;

/// A fill-reducing order of a pattern's columns (and, with diagonal
/// pivots, of its rows): approximate minimum degree on A + Aᵀ.
#[derive(Debug)]
pub struct ColumnOrder {
    perm: Vec<usize>,
    perm_inv: Vec<usize>,
}

impl ColumnOrder {
    /// The order of an n x n pattern in compressed sparse columns; `None`
    /// if faer's ordering fails (too large a pattern for its indices).
    pub fn of_pattern(n: usize, col_ptr: &[usize], row_idx: &[usize]) -> Option<ColumnOrder> {
        let sym = SymbolicSparseColMatRef::new_checked(n, n, col_ptr, None, row_idx);
        let mut perm = vec![0usize; n];
        let mut perm_inv = vec![0usize; n];
        let mut work = MemBuffer::try_new(amd::order_scratch::<usize>(n, row_idx.len())).ok()?;
        amd::order(
            &mut perm,
            &mut perm_inv,
            sym,
            amd::Control::default(),
            MemStack::new(&mut work),
        )
        .ok()?;
        Some(ColumnOrder { perm, perm_inv })
    }
}

/// The factors P A Q = L U: L unit lower triangular and U upper, both by
/// columns in the factors' own numbering (column j of the factors is
/// column `order.perm[j]` of A; row k is row `pivot_row[k]` of A).
#[derive(Default)]
pub struct PivotedLu {
    /// The order and number of entries of the matrix the patterns below
    /// were planned for, if they hold a factorization to refactor (a
    /// caller keeps one `PivotedLu` per pattern; this guards against
    /// another).
    planned: Option<(usize, usize)>,
    /// `pivot_row[k]`: the row of A that is row k of the factors.
    pivot_row: Vec<usize>,
    /// Strictly lower part of L (the unit diagonal is implied), rows
    /// increasing within a column.
    l_ptr: Vec<usize>,
    l_idx: Vec<u32>,
    l_val: Vec<f64>,
    /// U with each column's diagonal entry last, rows increasing.
    u_ptr: Vec<usize>,
    u_idx: Vec<u32>,
    u_val: Vec<f64>,
    /// `scatter[k]`: the factors' row of entry k of A (in A's storage
    /// order): the inverse of `pivot_row` at `a.row_idx[k]`.
    scatter: Vec<u32>,
    /// A dense column, zero between uses. Every index in `l_idx`, `u_idx`
    /// and `scatter` is below its length (checked by `plan`): the kernels
    /// below index it unchecked.
    x: Vec<f64>,
    /// `sn_end[k]`: the end (exclusive) of column k's supernode, the
    /// columns k..e of L whose patterns are those of a dense lower
    /// triangle over rows k..e above a common set of rows below e: column
    /// k holds rows k + 1..e first, contiguous, then the common rows.
    sn_end: Vec<u32>,
    /// A dense accumulator as long as the longest common row set.
    t: Vec<f64>,
    /// faer's pivoting factorization and its workspace.
    pivoting: Option<Box<Pivoting>>,
    /// Pivoting factorizations so far (the first one included).
    pub pivotings: usize,
}

struct Pivoting {
    /// The order its workspace is sized for.
    n: usize,
    lu: SimplicialLu<usize, f64>,
    row_perm: Vec<usize>,
    row_perm_inv: Vec<usize>,
    work: MemBuffer,
}

/// A square matrix in compressed sparse columns.
pub struct Csc<'a> {
    pub n: usize,
    pub col_ptr: &'a [usize],
    pub row_idx: &'a [usize],
    pub values: &'a [f64],
}

impl PivotedLu {
    /// Factors `a` in `order`: on the kept pivots where they hold, else
    /// with new ones. False if `a` is singular or not finite.
    pub fn factor(&mut self, order: &ColumnOrder, a: &Csc) -> bool {
        if a.values.iter().any(|v| !v.is_finite()) {
            return false;
        }
        if self.planned == Some((a.n, a.row_idx.len())) && self.refactor(order, a) {
            return true;
        }
        self.pivotings += 1;
        self.plan(order, a) && self.refactor(order, a)
    }

    /// faer's partial-pivoting factorization of `a`, kept for its pivots
    /// and the patterns of L and U they give.
    fn plan(&mut self, order: &ColumnOrder, a: &Csc) -> bool {
        self.planned = None;
        let n = a.n;
        if self.pivoting.as_ref().is_some_and(|p| p.n != n) {
            self.pivoting = None;
        }
        let p = self.pivoting.get_or_insert_with(|| {
            Box::new(Pivoting {
                n,
                lu: SimplicialLu::new(),
                row_perm: Vec::new(),
                row_perm_inv: Vec::new(),
                work: MemBuffer::new(factorize_simplicial_numeric_lu_scratch::<usize, f64>(n, n)),
            })
        });
        p.row_perm.resize(n, 0);
        p.row_perm_inv.resize(n, 0);
        let sym = SymbolicSparseColMatRef::new_checked(n, n, a.col_ptr, None, a.row_idx);
        let m = SparseColMatRef::new(sym, a.values);
        let q = PermRef::new_checked(&order.perm, &order.perm_inv, n);
        if factorize_simplicial_numeric_lu(
            &mut p.row_perm,
            &mut p.row_perm_inv,
            &mut p.lu,
            m,
            q,
            MemStack::new(&mut p.work),
        )
        .is_err()
        {
            return false;
        }
        // faer numbers the factors' rows by pivot position.
        let (l, u) = (p.lu.l_factor_unsorted(), p.lu.u_factor_unsorted());
        let Ok(n32) = u32::try_from(n) else {
            return false;
        };
        self.l_ptr.clear();
        self.l_idx.clear();
        self.u_ptr.clear();
        self.u_idx.clear();
        self.l_ptr.push(0);
        self.u_ptr.push(0);
        for j in 0..n {
            let start = self.l_idx.len();
            // (Rows below n: they fit in u32.)
            self.l_idx.extend(
                l.row_idx_of_col_raw(j)
                    .iter()
                    .filter(|&&r| r > j)
                    .map(|&r| u32::try_from(r).unwrap_or(u32::MAX)),
            );
            self.l_idx[start..].sort_unstable();
            self.l_ptr.push(self.l_idx.len());
            let start = self.u_idx.len();
            self.u_idx.extend(
                u.row_idx_of_col_raw(j)
                    .iter()
                    .filter(|&&r| r < j)
                    .map(|&r| u32::try_from(r).unwrap_or(u32::MAX)),
            );
            self.u_idx[start..].sort_unstable();
            self.u_idx.push(j as u32);
            self.u_ptr.push(self.u_idx.len());
        }
        self.scatter.clear();
        self.scatter.extend(a.row_idx.iter().map(|&r| {
            p.row_perm_inv
                .get(r)
                .and_then(|&k| u32::try_from(k).ok())
                .unwrap_or(u32::MAX)
        }));
        // The invariant the kernels rely on (see `x`); patterns that break
        // it are dropped, so that `solve` finds no factors at all.
        let fits = |i: &[u32]| i.iter().all(|&r| r < n32);
        if !(fits(&self.l_idx) && fits(&self.u_idx) && fits(&self.scatter)) {
            self.clear();
            return false;
        }
        self.l_val.resize(self.l_idx.len(), 0.0);
        self.u_val.resize(self.u_idx.len(), 0.0);
        self.pivot_row.clone_from(&p.row_perm);
        self.x.clear();
        self.x.resize(n, 0.0);
        self.find_supernodes();
        self.planned = Some((n, a.row_idx.len()));
        true
    }

    /// Groups the columns of L into supernodes (`sn_end`): column k - 1
    /// joins column k's when its rows are k and then column k's rows.
    fn find_supernodes(&mut self) {
        let n = self.l_ptr.len() - 1;
        self.sn_end.clear();
        self.sn_end.resize(n, 0);
        let mut longest = 0;
        let mut end = n;
        for k in (0..n).rev() {
            let joins = k + 1 < n && {
                let (a, b) = (
                    &self.l_idx[self.l_ptr[k]..self.l_ptr[k + 1]],
                    &self.l_idx[self.l_ptr[k + 1]..self.l_ptr[k + 2]],
                );
                a.first() == Some(&((k + 1) as u32)) && &a[1..] == b
            };
            if !joins {
                end = k + 1;
                longest = longest.max(self.l_ptr[k + 1] - self.l_ptr[k]);
            }
            self.sn_end[k] = end as u32;
        }
        self.t.clear();
        self.t.resize(longest, 0.0);
    }

    /// Columns k..m of the supernode of L that ends at e (`sn_end`)
    /// applied to the dense column `x`: for each column c in turn, `x[c]`
    /// is taken out (passed to `take`) and `x` less `L(:, c) x[c]`: below
    /// the diagonal inside the supernode a contiguous update, below it the
    /// common rows summed in `t` and subtracted once. Shared by the
    /// refactorization (U's entries) and the forward substitution.
    #[allow(clippy::too_many_arguments)]
    fn supernode_update(
        l_ptr: &[usize],
        l_idx: &[u32],
        l_val: &[f64],
        t: &mut [f64],
        x: &mut [f64],
        (k, m, e): (usize, usize, usize),
        mut take: impl FnMut(usize, f64),
    ) {
        let (rs, re) = (l_ptr[e - 1], l_ptr[e]);
        let rows = &l_idx[rs..re];
        let t = &mut t[..rows.len()];
        t.iter_mut().for_each(|v| *v = 0.0);
        for c in k..m {
            let xc = x[c];
            take(c, xc);
            if xc == 0.0 {
                continue;
            }
            let ls = l_ptr[c];
            let inside = e - 1 - c;
            let (tri, below) = l_val[ls..ls + inside + rows.len()].split_at(inside);
            for (xi, &l) in x[c + 1..e].iter_mut().zip(tri) {
                *xi -= l * xc;
            }
            for (ti, &l) in t.iter_mut().zip(below) {
                *ti += l * xc;
            }
        }
        for (&r, &ti) in rows.iter().zip(t.iter()) {
            // SAFETY: `l_idx` is below `x.len()` (`plan`).
            unsafe { *x.get_unchecked_mut(r as usize) -= ti };
        }
    }

    /// The values of L and U on the kept pivots and patterns, left
    /// looking: column j of the factors is column j of P A Q less the
    /// columns of L that U's column j reaches. False (the factors then
    /// unusable) when a pivot falls below the threshold.
    fn refactor(&mut self, order: &ColumnOrder, a: &Csc) -> bool {
        let PivotedLu {
            l_ptr,
            l_idx,
            l_val,
            u_ptr,
            u_idx,
            u_val,
            scatter,
            x,
            sn_end,
            t,
            ..
        } = self;
        let x = &mut x[..a.n];
        for j in 0..a.n {
            let col = order.perm[j];
            let (s, e) = (a.col_ptr[col], a.col_ptr[col + 1]);
            for (&r, &v) in scatter[s..e].iter().zip(&a.values[s..e]) {
                // SAFETY: `scatter` is below `x.len()` (`plan`).
                unsafe { *x.get_unchecked_mut(r as usize) = v };
            }
            let (us, ue) = (u_ptr[j], u_ptr[j + 1]);
            let mut p = us;
            while p < ue - 1 {
                let k = u_idx[p] as usize;
                // U's column reaches columns k..m of k's supernode (rows
                // k..m in a row): one block update.
                let e = sn_end[k] as usize;
                let mut m = k + 1;
                while e - k >= MIN_BLOCK
                    && m < e
                    && p + (m - k) < ue - 1
                    && u_idx[p + (m - k)] as usize == m
                {
                    m += 1;
                }
                if m - k >= MIN_BLOCK {
                    let u = &mut u_val[p..p + (m - k)];
                    Self::supernode_update(l_ptr, l_idx, l_val, t, x, (k, m, e), |c, v| {
                        u[c - k] = v;
                    });
                    x[k..m].iter_mut().for_each(|v| *v = 0.0);
                    p += m - k;
                    continue;
                }
                let xk = x[k];
                u_val[p] = xk;
                x[k] = 0.0;
                if xk != 0.0 {
                    let (ls, le) = (l_ptr[k], l_ptr[k + 1]);
                    for (&r, &l) in l_idx[ls..le].iter().zip(&l_val[ls..le]) {
                        // SAFETY: `l_idx` is below `x.len()` (`plan`).
                        unsafe { *x.get_unchecked_mut(r as usize) -= l * xk };
                    }
                }
                p += 1;
            }
            let pivot = x[j];
            x[j] = 0.0;
            u_val[ue - 1] = pivot;
            let (ls, le) = (l_ptr[j], l_ptr[j + 1]);
            let below = &l_idx[ls..le];
            // (`f64::max` would skip a NaN: the sum carries it instead.)
            let largest = below
                .iter()
                .fold(0.0f64, |m, &r| m.max(x[r as usize].abs()));
            let finite = below
                .iter()
                .map(|&r| x[r as usize])
                .sum::<f64>()
                .is_finite();
            let acceptable = finite
                && pivot.is_finite()
                && pivot != 0.0
                && pivot.abs() >= PIVOT_THRESHOLD * largest;
            let inverse = 1.0 / pivot;
            for (&r, l) in below.iter().zip(&mut l_val[ls..le]) {
                let r = r as usize;
                *l = x[r] * inverse;
                x[r] = 0.0;
            }
            if !acceptable {
                // Clear what later columns would have scattered, so that
                // `x` is zero for the next use.
                x.iter_mut().for_each(|v| *v = 0.0);
                return false;
            }
        }
        true
    }

    /// No factors: `solve` then does nothing.
    fn clear(&mut self) {
        self.planned = None;
        for v in [&mut self.l_ptr, &mut self.u_ptr, &mut self.pivot_row] {
            v.clear();
        }
        for v in [&mut self.l_idx, &mut self.u_idx, &mut self.scatter] {
            v.clear();
        }
        self.l_val.clear();
        self.u_val.clear();
        self.sn_end.clear();
    }

    /// Entries of L and U (L's unit diagonal not counted).
    pub fn entries(&self) -> usize {
        self.l_idx.len() + self.u_idx.len()
    }

    /// Solves A x = b in place.
    pub fn solve(&mut self, order: &ColumnOrder, b: &mut [f64]) {
        let n = self.pivot_row.len();
        let y = &mut self.x[..n];
        for (yk, &r) in y.iter_mut().zip(&self.pivot_row) {
            *yk = b[r];
        }
        let (l_ptr, l_idx, l_val) = (&self.l_ptr, &self.l_idx, &self.l_val);
        let mut j = 0;
        while j < n {
            let e = self.sn_end[j] as usize;
            if e - j >= MIN_BLOCK {
                Self::supernode_update(l_ptr, l_idx, l_val, &mut self.t, y, (j, e, e), |_, _| {});
                j = e;
                continue;
            }
            let yj = y[j];
            if yj != 0.0 {
                let (ls, le) = (l_ptr[j], l_ptr[j + 1]);
                for (&r, &l) in l_idx[ls..le].iter().zip(&l_val[ls..le]) {
                    // SAFETY: `l_idx` is below `x.len()` (`plan`).
                    unsafe { *y.get_unchecked_mut(r as usize) -= l * yj };
                }
            }
            j += 1;
        }
        let (u_ptr, u_idx, u_val) = (&self.u_ptr, &self.u_idx, &self.u_val);
        for j in (0..n).rev() {
            let (us, ue) = (u_ptr[j], u_ptr[j + 1]);
            let yj = y[j] / u_val[ue - 1];
            if yj != 0.0 {
                for (&r, &u) in u_idx[us..ue - 1].iter().zip(&u_val[us..ue - 1]) {
                    // SAFETY: `u_idx` is below `x.len()` (`plan`).
                    unsafe { *y.get_unchecked_mut(r as usize) -= u * yj };
                }
            }
            b[order.perm[j]] = yj;
            y[j] = 0.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A matrix given by its columns' (row, value) lists, as CSC arrays.
    struct CscMatrix {
        n: usize,
        col_ptr: Vec<usize>,
        row_idx: Vec<usize>,
        values: Vec<f64>,
    }

    impl CscMatrix {
        fn new(n: usize, entries: &[(usize, usize, f64)]) -> CscMatrix {
            let mut cols: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
            for &(i, j, v) in entries {
                cols[j].push((i, v));
            }
            let mut m = CscMatrix {
                n,
                col_ptr: vec![0],
                row_idx: Vec::new(),
                values: Vec::new(),
            };
            for c in &mut cols {
                c.sort_by_key(|e| e.0);
                for &(i, v) in c.iter() {
                    m.row_idx.push(i);
                    m.values.push(v);
                }
                m.col_ptr.push(m.row_idx.len());
            }
            m
        }

        fn csc(&self) -> Csc<'_> {
            Csc {
                n: self.n,
                col_ptr: &self.col_ptr,
                row_idx: &self.row_idx,
                values: &self.values,
            }
        }

        fn order(&self) -> ColumnOrder {
            ColumnOrder::of_pattern(self.n, &self.col_ptr, &self.row_idx).expect("an order")
        }

        /// The largest |A x - b| after solving A x = b with `lu`.
        fn residual(&self, lu: &mut PivotedLu, order: &ColumnOrder) -> f64 {
            let b: Vec<f64> = (0..self.n).map(|i| (i as f64 * 0.7).cos()).collect();
            let mut x = b.clone();
            lu.solve(order, &mut x);
            let mut r = b;
            for (j, xj) in x.iter().enumerate() {
                for k in self.col_ptr[j]..self.col_ptr[j + 1] {
                    r[self.row_idx[k]] -= self.values[k] * xj;
                }
            }
            r.iter().fold(0.0f64, |m, v| m.max(v.abs()))
        }
    }

    /// The Newton matrix of an n x n grid of cells joined to their four
    /// neighbours, with unequal values across each link (a nonlinear
    /// conductance's Jacobian), scaled by `c`.
    fn grid(n: usize, c: f64) -> CscMatrix {
        let mut entries = Vec::new();
        let mut diagonal = vec![1.0; n * n];
        for i in 0..n {
            for j in 0..n {
                let a = i * n + j;
                let right = (j + 1 < n).then_some(a + 1);
                let down = (i + 1 < n).then_some(a + n);
                for b in [right, down].into_iter().flatten() {
                    let g = 1.0 + ((a * 7 + b) % 5) as f64 * 0.2;
                    let dg = 0.3 * ((a + b) as f64).sin();
                    diagonal[a] += c * (g + dg);
                    diagonal[b] += c * (g - dg);
                    entries.push((a, b, -c * (g - dg)));
                    entries.push((b, a, -c * (g + dg)));
                }
            }
        }
        entries.extend(diagonal.iter().enumerate().map(|(k, &d)| (k, k, d)));
        CscMatrix::new(n * n, &entries)
    }

    /// The grid's Newton matrix is factored once with pivoting and then
    /// refactored on the kept pivots for other step sizes, each solve
    /// exact to rounding; some of its columns start blocks of a supernode
    /// (the block updates of the refactorization and of the solve are
    /// used).
    #[test]
    fn a_grid_is_refactored_on_its_first_pivots() {
        for side in [12, 30] {
            let mut lu = PivotedLu::default();
            let first = grid(side, 0.5);
            let order = first.order();
            assert!(lu.factor(&order, &first.csc()));
            assert!(first.residual(&mut lu, &order) < 1e-12);
            for c in [0.1, 2.0, 30.0] {
                let m = grid(side, c);
                assert!(lu.factor(&order, &m.csc()));
                let r = m.residual(&mut lu, &order);
                assert!(r < 1e-11, "{side} x {side}, c = {c}: residual {r:e}");
            }
            assert_eq!(lu.pivotings, 1);
            // Columns with at least MIN_BLOCK - 1 more of their supernode
            // after them: where a block update can start.
            let n = side * side;
            let starts = (0..n)
                .filter(|&k| lu.sn_end[k] as usize - k >= MIN_BLOCK)
                .count();
            assert!(
                starts > n / 20,
                "{side} x {side}: {starts} of {n} columns can start a block"
            );
        }
    }

    /// A zero diagonal needs off-diagonal pivots; when the values change
    /// so that a kept pivot becomes small against its column, the matrix
    /// is factored again with new pivots, and solved exactly either way.
    #[test]
    fn a_pivot_that_becomes_small_is_chosen_again() {
        // Rows 0 and 1 swapped against a diagonal matrix, plus a coupling.
        let swapped = |d: f64| {
            CscMatrix::new(
                4,
                &[
                    (1, 0, 2.0),
                    (0, 0, d),
                    (0, 1, 3.0),
                    (1, 1, d),
                    (2, 2, 1.0),
                    (3, 2, 0.5),
                    (2, 3, 0.25),
                    (3, 3, 4.0),
                ],
            )
        };
        let mut lu = PivotedLu::default();
        let zero = swapped(0.0);
        let order = zero.order();
        assert!(lu.factor(&order, &zero.csc()));
        assert!(zero.residual(&mut lu, &order) < 1e-14);
        assert_eq!(lu.pivotings, 1);
        // A small diagonal keeps the pivots; a large one takes them.
        let small = swapped(1e-3);
        assert!(lu.factor(&order, &small.csc()));
        assert!(small.residual(&mut lu, &order) < 1e-14);
        assert_eq!(lu.pivotings, 1);
        let large = swapped(100.0);
        assert!(lu.factor(&order, &large.csc()));
        assert!(large.residual(&mut lu, &order) < 1e-12);
        assert_eq!(lu.pivotings, 2);
    }

    /// One `PivotedLu` given matrices of another pattern or size plans
    /// again instead of refactoring on patterns that do not fit.
    #[test]
    fn another_pattern_is_planned_afresh() {
        let mut lu = PivotedLu::default();
        for m in [grid(4, 1.0), grid(5, 1.0), grid(4, 1.0)] {
            let order = m.order();
            assert!(lu.factor(&order, &m.csc()));
            assert!(m.residual(&mut lu, &order) < 1e-13);
        }
        assert_eq!(lu.pivotings, 3);
        // Same size, another pattern: a tridiagonal matrix of 16.
        let entries: Vec<_> = (0..16)
            .flat_map(|i| {
                let mut e = vec![(i, i, 4.0)];
                if i > 0 {
                    e.push((i, i - 1, -1.0));
                }
                if i + 1 < 16 {
                    e.push((i, i + 1, -1.5));
                }
                e
            })
            .collect();
        let m = CscMatrix::new(16, &entries);
        let order = m.order();
        assert!(lu.factor(&order, &m.csc()));
        assert!(m.residual(&mut lu, &order) < 1e-13);
        assert_eq!(lu.pivotings, 4);
    }

    #[test]
    fn a_singular_or_non_finite_matrix_is_refused() {
        let order = grid(3, 1.0).order();
        let mut lu = PivotedLu::default();
        let mut m = grid(3, 1.0);
        m.values.iter_mut().for_each(|v| *v = 0.0);
        assert!(!lu.factor(&order, &m.csc()));
        m = grid(3, 1.0);
        m.values[4] = f64::NAN;
        assert!(!lu.factor(&order, &m.csc()));
        // and a regular one afterwards still factors
        let m = grid(3, 1.0);
        assert!(lu.factor(&order, &m.csc()));
        assert!(m.residual(&mut lu, &order) < 1e-13);
    }
}
