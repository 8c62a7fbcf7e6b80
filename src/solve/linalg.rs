//! LU factorizations for the integrators' Newton iterations: an inlined
//! partial-pivoting LU for the small systems of typical models (where a
//! general library's per-call overhead dominates), faer's dense LU for
//! larger dense ones, and faer's sparse LU for large sparse ones (the
//! symbolic analysis is done once per pattern and kept with it; only the
//! numeric factorization is repeated).

use super::jacobian::{Jacobian, JacobianPattern};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::solvers::{PartialPivLu, Solve};
use faer::sparse::linalg::lu::{LuRef, NumericLu, SymbolicLu};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMatRef};
use faer::{Mat, Par};
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
}

/// faer's sparse LU of I - c J on the Jacobian's pattern, with the
/// workspaces kept between factorizations and solves (the per-call
/// allocations of faer's convenience API were a tenth of a large model's
/// run).
#[derive(Default)]
pub struct SparseFactors {
    symbolic: Option<Arc<SymbolicLu<usize>>>,
    numeric: Option<NumericLu<usize, f64>>,
    values: Vec<f64>,
    factor_work: Option<MemBuffer>,
    solve_work: Option<MemBuffer>,
}

impl SparseFactors {
    /// Factors a I + b J into `self` (J's values `jv` on `pattern`, which
    /// holds the diagonal); false if the matrix is singular or not finite.
    fn factor(&mut self, pattern: &JacobianPattern, jv: &[f64], a: f64, b: f64) -> bool {
        let Some(symbolic) = pattern.symbolic_lu() else {
            return false;
        };
        if !self
            .symbolic
            .as_ref()
            .is_some_and(|s| Arc::ptr_eq(s, symbolic))
        {
            let par = Par::Seq;
            self.factor_work = Some(MemBuffer::new(
                symbolic.factorize_numeric_lu_scratch::<f64>(par, Default::default()),
            ));
            self.solve_work = Some(MemBuffer::new(
                symbolic.solve_in_place_scratch::<f64>(1, par),
            ));
            self.symbolic = Some(symbolic.clone());
        }
        self.values.clear();
        for col in 0..pattern.n {
            for k in pattern.column(col) {
                let diag = if pattern.row_idx[k] == col { a } else { 0.0 };
                self.values.push(diag + b * jv[k]);
            }
        }
        if self.values.iter().any(|v| !v.is_finite()) {
            return false;
        }
        let sym = SymbolicSparseColMatRef::new_checked(
            pattern.n,
            pattern.n,
            &pattern.col_ptr,
            None,
            &pattern.row_idx,
        );
        let m = SparseColMatRef::new(sym, &self.values);
        let numeric = self.numeric.get_or_insert_with(NumericLu::new);
        let Some(work) = self.factor_work.as_mut() else {
            return false;
        };
        symbolic
            .factorize_numeric_lu(
                numeric,
                m,
                Par::Seq,
                MemStack::new(work),
                Default::default(),
            )
            .is_ok()
    }

    fn solve(&mut self, b: &mut [f64]) {
        let (Some(symbolic), Some(numeric), Some(work)) =
            (&self.symbolic, &self.numeric, self.solve_work.as_mut())
        else {
            return;
        };
        let n = b.len();
        let rhs = faer::MatMut::from_column_major_slice_mut(b, n, 1);
        LuRef::new_unchecked(symbolic, numeric).solve_in_place_with_conj(
            faer::Conj::No,
            rhs,
            Par::Seq,
            MemStack::new(work),
        );
    }
}

impl IterationMatrix {
    /// Factors I - c J, reusing `old`'s storage where it has some. `None`
    /// if the matrix is singular or not finite.
    pub fn factor(jac: &Jacobian, c: f64, old: Option<IterationMatrix>) -> Option<IterationMatrix> {
        Self::factor_combination(jac, 1.0, -c, old)
    }

    /// Factors the Jacobian itself (the Newton matrix of a nonlinear
    /// system such as the initial one).
    pub fn factor_jacobian(jac: &Jacobian) -> Option<IterationMatrix> {
        Self::factor_combination(jac, 0.0, 1.0, None)
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
