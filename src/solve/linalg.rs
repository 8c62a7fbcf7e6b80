//! LU factorizations for the integrators' Newton iterations: an inlined
//! partial-pivoting LU for the small systems of typical models (where a
//! general library's per-call overhead dominates), faer's dense LU for
//! larger dense ones, and for large sparse ones a sparse LU that keeps its
//! pivots and the patterns of its factors between factorizations
//! ([`super::sparse_lu`]), except for a tridiagonal one (a
//! chain of bodies), which the Thomas algorithm factors and solves with its
//! recurrences carried in registers: a general sparse triangular solve
//! waits on memory between rows, and took twice as long on the chain.

use super::jacobian::{Jacobian, JacobianPattern, TridiagonalOrder};
use super::sparse_lu::{Csc, PivotedLu};
use faer::Mat;
use faer::linalg::solvers::{PartialPivLu, Solve};
use std::sync::Arc;

/// Below this size the hand-written LU is used.
const SMALL: usize = 48;

pub enum Lu {
    Small {
        n: usize,
        lu: Vec<f64>,
        piv: Vec<usize>,
    },
    Large(PartialPivLu<f64>),
}

impl Lu {
    /// Factors `m` (n x n). `None` if a pivot vanishes or is not finite.
    pub fn factor(m: &Mat<f64>) -> Option<Lu> {
        let n = m.nrows();
        if n > SMALL {
            return Some(Lu::Large(m.partial_piv_lu()));
        }
        let mut lu = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                lu[i * n + j] = m[(i, j)];
            }
        }
        let mut piv: Vec<usize> = (0..n).collect();
        for k in 0..n {
            let mut p = k;
            let mut best = lu[k * n + k].abs();
            for i in k + 1..n {
                let v = lu[i * n + k].abs();
                if v > best {
                    best = v;
                    p = i;
                }
            }
            if best == 0.0 || !best.is_finite() {
                return None;
            }
            if p != k {
                for j in 0..n {
                    lu.swap(k * n + j, p * n + j);
                }
                piv.swap(k, p);
            }
            let d = lu[k * n + k];
            for i in k + 1..n {
                let f = lu[i * n + k] / d;
                lu[i * n + k] = f;
                if f != 0.0 {
                    for j in k + 1..n {
                        lu[i * n + j] -= f * lu[k * n + j];
                    }
                }
            }
        }
        Some(Lu::Small { n, lu, piv })
    }

    /// Solves `A x = b` in place.
    pub fn solve(&self, b: &mut [f64], work: &mut Vec<f64>) {
        match self {
            Lu::Small { n, lu, piv } => {
                let n = *n;
                work.clear();
                work.extend(piv.iter().map(|&p| b[p]));
                for i in 0..n {
                    let mut s = work[i];
                    for j in 0..i {
                        s -= lu[i * n + j] * work[j];
                    }
                    work[i] = s;
                }
                for i in (0..n).rev() {
                    let mut s = work[i];
                    for j in i + 1..n {
                        s -= lu[i * n + j] * work[j];
                    }
                    work[i] = s / lu[i * n + i];
                }
                b.copy_from_slice(work);
            }
            Lu::Large(lu) => {
                let n = b.len();
                let rhs = faer::MatMut::from_column_major_slice_mut(b, n, 1);
                lu.solve_in_place(rhs);
            }
        }
    }
}

/// The factors of the Newton matrix I - c J of an implicit step.
pub enum IterationMatrix {
    Dense(Lu),
    Sparse(Box<SparseFactors>),
    Tridiagonal(Box<TridiagonalFactors>),
}

/// Without pivoting the Thomas algorithm is stable while the multipliers
/// stay small (diagonally dominant matrices such as I - c J of a chain have
/// them below 1); a larger one sends the matrix to the pivoting sparse LU.
const MAX_MULTIPLIER: f64 = 10.0;

/// The LU factors of a tridiagonal matrix (in its pattern's
/// [`TridiagonalOrder`]) without pivoting: unit lower with the multipliers
/// `lower`, upper with the reciprocal pivots `inverse_pivot` and the
/// matrix's own superdiagonal `upper`.
#[derive(Default)]
pub struct TridiagonalFactors {
    order: Option<Vec<usize>>,
    lower: Vec<f64>,
    inverse_pivot: Vec<f64>,
    upper: Vec<f64>,
    work: Vec<f64>,
}

impl TridiagonalFactors {
    /// Factors a I + b J (J's values `jv`) in the order `t`; false if a
    /// pivot vanishes, is not finite, or a multiplier grows too large.
    fn factor(&mut self, t: &TridiagonalOrder, jv: &[f64], a: f64, b: f64) -> bool {
        let n = t.diagonal.len();
        let value = |k: usize| if k == usize::MAX { 0.0 } else { b * jv[k] };
        self.order.clone_from(&t.order);
        self.lower.clear();
        self.inverse_pivot.clear();
        self.upper.clear();
        let mut previous_inverse = 0.0;
        for k in 0..n {
            let multiplier = value(t.left[k]) * previous_inverse;
            let above = if k == 0 { 0.0 } else { self.upper[k - 1] };
            let pivot = a + value(t.diagonal[k]) - multiplier * above;
            if pivot == 0.0 || !pivot.is_finite() || multiplier.abs() > MAX_MULTIPLIER {
                return false;
            }
            previous_inverse = 1.0 / pivot;
            self.lower.push(multiplier);
            self.inverse_pivot.push(previous_inverse);
            self.upper.push(value(t.right[k]));
        }
        true
    }

    fn solve(&mut self, b: &mut [f64]) {
        match &self.order {
            None => self.substitute(b),
            Some(order) => {
                let mut work = std::mem::take(&mut self.work);
                work.clear();
                work.extend(order.iter().map(|&i| b[i]));
                self.substitute(&mut work);
                for (&i, &v) in order.iter().zip(&work) {
                    b[i] = v;
                }
                self.work = work;
            }
        }
    }

    /// Forward and back substitution in the factors' order, each row's
    /// value carried to the next in a register.
    fn substitute(&self, x: &mut [f64]) {
        let mut carried = 0.0;
        for (xi, l) in x.iter_mut().zip(&self.lower) {
            carried = *xi - l * carried;
            *xi = carried;
        }
        carried = 0.0;
        let rows = x.iter_mut().zip(&self.upper).zip(&self.inverse_pivot);
        for ((xi, u), inv) in rows.rev() {
            carried = (*xi - u * carried) * inv;
            *xi = carried;
        }
    }
}

/// The sparse LU of a I + b J on the Jacobian's pattern
/// ([`super::sparse_lu`]: pivots kept between factorizations), with the
/// matrix's values kept between factorizations.
#[derive(Default)]
pub struct SparseFactors {
    lu: PivotedLu,
    values: Vec<f64>,
    pattern: Option<Arc<JacobianPattern>>,
}

impl SparseFactors {
    /// Factors a I + b J into `self` (J's values `jv` on `pattern`, which
    /// holds the diagonal); false if the matrix is singular or not finite.
    fn factor(&mut self, pattern: &Arc<JacobianPattern>, jv: &[f64], a: f64, b: f64) -> bool {
        let Some(order) = pattern.column_order() else {
            return false;
        };
        if !self
            .pattern
            .as_ref()
            .is_some_and(|p| Arc::ptr_eq(p, pattern))
        {
            self.lu = PivotedLu::default();
            self.pattern = Some(pattern.clone());
        }
        self.values.clear();
        for col in 0..pattern.n {
            for k in pattern.column(col) {
                let diag = if pattern.row_idx[k] == col { a } else { 0.0 };
                self.values.push(diag + b * jv[k]);
            }
        }
        let m = Csc {
            n: pattern.n,
            col_ptr: &pattern.col_ptr,
            row_idx: &pattern.row_idx,
            values: &self.values,
        };
        self.lu.factor(order, &m)
    }

    fn solve(&mut self, b: &mut [f64]) {
        if let Some(order) = self.pattern.as_ref().and_then(|p| p.column_order()) {
            self.lu.solve(order, b);
        }
    }
}

impl IterationMatrix {
    /// Factors I - c J, reusing `old`'s storage where it has some. `None`
    /// if the matrix is singular or not finite.
    pub fn factor(jac: &Jacobian, c: f64, old: Option<IterationMatrix>) -> Option<IterationMatrix> {
        Self::factor_combination(jac, 1.0, -c, old)
    }

    /// Factors the Jacobian itself (the Newton matrix of a nonlinear
    /// system such as the initial one), reusing `old`'s storage where it
    /// has some.
    pub fn factor_jacobian(
        jac: &Jacobian,
        old: Option<IterationMatrix>,
    ) -> Option<IterationMatrix> {
        Self::factor_combination(jac, 0.0, 1.0, old)
    }

    /// Factors a I + b J.
    fn factor_combination(
        jac: &Jacobian,
        a: f64,
        b: f64,
        old: Option<IterationMatrix>,
    ) -> Option<IterationMatrix> {
        match jac {
            Jacobian::Dense(j) => {
                let n = j.nrows();
                let m = Mat::from_fn(n, n, |r, k| if r == k { a } else { 0.0 } + b * j[(r, k)]);
                Lu::factor(&m).map(IterationMatrix::Dense)
            }
            Jacobian::Sparse { pattern, values } => {
                let mut old = old;
                if let Some(t) = pattern.tridiagonal() {
                    let mut f = match old.take() {
                        Some(IterationMatrix::Tridiagonal(f)) => f,
                        other => {
                            old = other;
                            Box::default()
                        }
                    };
                    if f.factor(t, values, a, b) {
                        return Some(IterationMatrix::Tridiagonal(f));
                    }
                    // A large multiplier: the pivoting sparse LU (whose
                    // storage a former fallback left in `old`).
                }
                let mut f = match old {
                    Some(IterationMatrix::Sparse(f)) => f,
                    _ => Box::default(),
                };
                f.factor(pattern, values, a, b)
                    .then_some(IterationMatrix::Sparse(f))
            }
        }
    }

    /// Solves `M x = b` in place.
    pub fn solve(&mut self, b: &mut [f64], work: &mut Vec<f64>) {
        match self {
            IterationMatrix::Dense(lu) => lu.solve(b, work),
            IterationMatrix::Sparse(f) => f.solve(b),
            IterationMatrix::Tridiagonal(f) => f.solve(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// a I + b J on `pattern` as a dense matrix.
    fn dense(p: &JacobianPattern, jv: &[f64], a: f64, b: f64) -> Mat<f64> {
        let mut m = Mat::from_fn(p.n, p.n, |i, j| if i == j { a } else { 0.0 });
        for j in 0..p.n {
            for k in p.column(j) {
                m[(p.row_idx[k], j)] += b * jv[k];
            }
        }
        m
    }

    /// Solves with the factors of a I + b J and checks the residual.
    fn check_solve(p: &Arc<JacobianPattern>, jv: &[f64], a: f64, b: f64) -> IterationMatrix {
        let jac = Jacobian::Sparse {
            pattern: p.clone(),
            values: jv.to_vec(),
        };
        let mut lu = IterationMatrix::factor_combination(&jac, a, b, None).expect("regular");
        let m = dense(p, jv, a, b);
        let rhs: Vec<f64> = (0..p.n).map(|i| (i as f64 * 0.7).cos()).collect();
        let mut x = rhs.clone();
        lu.solve(&mut x, &mut Vec::new());
        for i in 0..p.n {
            let r: f64 = (0..p.n).map(|j| m[(i, j)] * x[j]).sum();
            assert!(
                (r - rhs[i]).abs() < 1e-12,
                "row {i}: {r} against {}",
                rhs[i]
            );
        }
        lu
    }

    /// Two chains in a scrambled order and a lone state: the pattern is
    /// tridiagonal in the order of its paths, and the Thomas algorithm
    /// solves it; a matrix that would need pivoting goes to the sparse LU
    /// and is solved as well.
    #[test]
    fn a_chain_in_any_order_is_solved_by_the_thomas_algorithm() {
        // Chains 4-0-5-2 and 1-6, and 3 alone.
        let edges = [(4, 0), (0, 5), (5, 2), (1, 6)];
        let n = 7;
        let mut cols: Vec<Vec<usize>> = (0..n).map(|j| vec![j]).collect();
        for &(i, j) in &edges {
            cols[i].push(j);
            cols[j].push(i);
        }
        cols.iter_mut().for_each(|c| c.sort_unstable());
        let p = Arc::new(JacobianPattern::from_columns(n, cols));
        let t = p.tridiagonal().expect("paths");
        let order = t.order.as_ref().expect("not the natural order");
        let position = |s: usize| order.iter().position(|&o| o == s).expect("every state");
        for &(i, j) in &edges {
            assert_eq!(position(i).abs_diff(position(j)), 1, "{i} and {j} adjacent");
        }
        let jv: Vec<f64> = (0..p.nnz()).map(|k| 1.0 + (k as f64).sin()).collect();
        let lu = check_solve(&p, &jv, 10.0, -0.5);
        assert!(matches!(lu, IterationMatrix::Tridiagonal(_)));
        // A zero diagonal with the unit off-diagonal entries: the first
        // multiplier is unbounded, and the pivoting LU takes over.
        let jv: Vec<f64> = (0..p.nnz())
            .map(|k| if k % 3 == 1 { 1.0 } else { 2.0 })
            .collect();
        let lu = check_solve(&p, &jv, -2.0, 1.0);
        assert!(matches!(lu, IterationMatrix::Sparse(_)));
    }

    #[test]
    fn a_ring_or_a_branch_has_no_tridiagonal_order() {
        let ring = (0..5)
            .map(|j: usize| {
                let mut c = vec![(j + 4) % 5, j, (j + 1) % 5];
                c.sort_unstable();
                c
            })
            .collect();
        assert!(
            JacobianPattern::from_columns(5, ring)
                .tridiagonal()
                .is_none()
        );
        let star = vec![vec![0, 1, 2, 3], vec![0, 1], vec![0, 2], vec![0, 3]];
        assert!(
            JacobianPattern::from_columns(4, star)
                .tridiagonal()
                .is_none()
        );
        let natural = (0..4)
            .map(|j: usize| (j.saturating_sub(1)..(j + 2).min(4)).collect())
            .collect();
        let t = JacobianPattern::from_columns(4, natural);
        assert!(t.tridiagonal().is_some_and(|t| t.order.is_none()));
    }

    #[test]
    fn small_and_large_factorizations_solve_the_same_system() {
        for n in [3usize, 60] {
            let m = Mat::from_fn(n, n, |i, j| {
                if i == j {
                    4.0 + i as f64
                } else {
                    1.0 / (1.0 + i as f64 + 2.0 * j as f64)
                }
            });
            let x: Vec<f64> = (0..n).map(|i| (i as f64).sin()).collect();
            let mut b: Vec<f64> = (0..n)
                .map(|i| (0..n).map(|j| m[(i, j)] * x[j]).sum())
                .collect();
            let lu = Lu::factor(&m).expect("regular");
            let mut work = Vec::new();
            lu.solve(&mut b, &mut work);
            for i in 0..n {
                assert!(
                    (b[i] - x[i]).abs() < 1e-12,
                    "n={n} i={i}: {} vs {}",
                    b[i],
                    x[i]
                );
            }
        }
    }
}
