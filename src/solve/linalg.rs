//! Dense LU factorization for the integrators' Newton iterations: an inlined
//! partial-pivoting LU for the small systems of typical models (where a
//! general library's per-call overhead dominates), faer's for larger ones.

use faer::Mat;
use faer::linalg::solvers::{PartialPivLu, Solve};

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
