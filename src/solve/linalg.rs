//! LU factorizations for the integrators' Newton iterations: an inlined
//! partial-pivoting LU for the small systems of typical models (where a
//! general library's per-call overhead dominates), faer's dense LU for
//! larger dense ones, and faer's sparse LU for large sparse ones (the
//! symbolic analysis is done once per pattern and kept with it; only the
//! numeric factorization is repeated).

use super::jacobian::Jacobian;
use faer::Mat;
use faer::linalg::solvers::{PartialPivLu, Solve};
use faer::sparse::SparseColMatRef;
use faer::sparse::linalg::solvers::Lu as SparseLu;

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
    Sparse(SparseLu<usize, f64>),
}

impl IterationMatrix {
    /// Factors I - c J. `None` if the matrix is singular or not finite.
    pub fn factor(jac: &Jacobian, c: f64, values: &mut Vec<f64>) -> Option<IterationMatrix> {
        match jac {
            Jacobian::Dense(j) => {
                let n = j.nrows();
                let m = Mat::from_fn(n, n, |r, k| if r == k { 1.0 } else { 0.0 } - c * j[(r, k)]);
                Lu::factor(&m).map(IterationMatrix::Dense)
            }
            Jacobian::Sparse {
                pattern,
                values: jv,
            } => {
                let symbolic = pattern.symbolic_lu()?;
                values.clear();
                for col in 0..pattern.n {
                    for k in pattern.column(col) {
                        let diag = if pattern.row_idx[k] == col { 1.0 } else { 0.0 };
                        values.push(diag - c * jv[k]);
                    }
                }
                if values.iter().any(|v| !v.is_finite()) {
                    return None;
                }
                let sym = faer::sparse::SymbolicSparseColMatRef::new_checked(
                    pattern.n,
                    pattern.n,
                    &pattern.col_ptr,
                    None,
                    &pattern.row_idx,
                );
                let m = SparseColMatRef::new(sym, values);
                SparseLu::try_new_with_symbolic(symbolic.clone(), m)
                    .ok()
                    .map(IterationMatrix::Sparse)
            }
        }
    }

    /// Solves `M x = b` in place.
    pub fn solve(&self, b: &mut [f64], work: &mut Vec<f64>) {
        match self {
            IterationMatrix::Dense(lu) => lu.solve(b, work),
            IterationMatrix::Sparse(lu) => {
                let n = b.len();
                let rhs = faer::MatMut::from_column_major_slice_mut(b, n, 1);
                lu.solve_in_place(rhs);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
