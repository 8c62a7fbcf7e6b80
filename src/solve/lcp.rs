//! Linear complementarity problems: find `z >= 0` with `w = M z + q >= 0`
//! and `z . w = 0`.
//!
//! Contact impulses of set-valued (unilateral, frictional) contacts solve
//! such a problem at every step of a Moreau-Jean time-stepping scheme
//! (Acary & Brogliato, *Numerical Methods for Nonsmooth Dynamical Systems*,
//! 2008, ch. 10 and 12): `M` is the Delassus matrix `W^T M^-1 W` of the
//! contact Jacobians, `q` the free (impulse-less) contact velocities.
//!
//! [`lemke`] is Lemke's complementary pivoting algorithm (Lemke 1965; Cottle,
//! Pang & Stone, *The Linear Complementarity Problem*, 1992, section 4.4)
//! with covering vector `d = 1` and the lexicographic minimum-ratio rule,
//! which keeps degenerate problems (several contacts closing at once, a zero
//! right-hand side) from cycling. It solves every problem with a P-matrix or
//! a positive semi-definite `M` that has a solution, and otherwise ends on a
//! secondary ray. [`projected_gauss_seidel`] is the fallback for the cases
//! where pivoting fails: an iterative method for symmetric `M` with a
//! positive diagonal that returns the best iterate and its residual.

/// Why a problem was not solved.
#[derive(Clone, Debug, PartialEq)]
pub enum LcpError {
    /// Lemke's algorithm ended on a secondary ray: the problem may have no
    /// solution (or `M` is outside the classes Lemke is guaranteed on).
    Ray { pivots: usize },
    /// The pivot limit was reached (a sign of numerical trouble).
    PivotLimit { pivots: usize },
    /// Projected Gauss-Seidel stopped at its iteration limit with this
    /// complementarity residual.
    NotConverged { residual: f64, iterations: usize },
}

impl std::fmt::Display for LcpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LcpError::Ray { pivots } => write!(
                f,
                "Lemke's algorithm ended on a secondary ray after {pivots} pivots (the contact problem may have no solution)"
            ),
            LcpError::PivotLimit { pivots } => {
                write!(f, "Lemke's algorithm stopped after {pivots} pivots")
            }
            LcpError::NotConverged {
                residual,
                iterations,
            } => write!(
                f,
                "projected Gauss-Seidel did not converge in {iterations} iterations (residual {residual:.3e})"
            ),
        }
    }
}

/// A solution and how it was found.
#[derive(Clone, Debug, PartialEq)]
pub struct LcpSolution {
    pub z: Vec<f64>,
    pub w: Vec<f64>,
    /// Pivots of Lemke's algorithm (0 when `q >= 0`).
    pub pivots: usize,
}

/// Relative size below which a tableau entry counts as zero.
const PIVOT_TOL: f64 = 1e-12;

/// Solves the LCP `(M, q)` by Lemke's algorithm. `m` is row-major `n x n`.
pub fn lemke(m: &[f64], q: &[f64]) -> Result<LcpSolution, LcpError> {
    let n = q.len();
    assert_eq!(m.len(), n * n, "M must be n x n");
    if q.iter().all(|&x| x >= 0.0) {
        return Ok(LcpSolution {
            z: vec![0.0; n],
            w: q.to_vec(),
            pivots: 0,
        });
    }
    // Tableau of  w - M z - d z0 = q  with columns w_0..w_{n-1},
    // z_0..z_{n-1}, z0 and the right-hand side; basic variables start as w.
    let cols = 2 * n + 2;
    let (z0, rhs) = (2 * n, 2 * n + 1);
    let mut t = vec![0.0; n * cols];
    for i in 0..n {
        t[i * cols + i] = 1.0;
        for j in 0..n {
            t[i * cols + n + j] = -m[i * n + j];
        }
        t[i * cols + z0] = -1.0;
        t[i * cols + rhs] = q[i];
    }
    let scale = m.iter().chain(q).fold(1.0f64, |a, x| a.max(x.abs()));
    let tol = PIVOT_TOL * scale;
    let mut basis: Vec<usize> = (0..n).collect();
    // z0 enters; the row with the most negative q leaves (ties broken
    // lexicographically like every later ratio test).
    let first = (0..n)
        .min_by(|&a, &b| {
            q[a].partial_cmp(&q[b])
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.cmp(&b))
        })
        .unwrap_or(0);
    pivot(&mut t, cols, n, first, z0);
    let mut leaving = basis[first];
    basis[first] = z0;
    let limit = 50 * (n + 1) * (n + 1);
    let mut pivots = 1;
    loop {
        // The complement of the variable that just left enters.
        let entering = if leaving < n {
            leaving + n
        } else {
            leaving - n
        };
        let rows: Vec<usize> = (0..n).filter(|&i| t[i * cols + entering] > tol).collect();
        if rows.is_empty() {
            return Err(LcpError::Ray { pivots });
        }
        // z0 leaves as soon as it can: that ends the algorithm.
        let row = match rows
            .iter()
            .copied()
            .find(|&i| basis[i] == z0 && is_min_ratio(&t, cols, &rows, i, entering, rhs))
        {
            Some(r) => r,
            None => lexicographic_min_ratio(&t, cols, n, &rows, entering, rhs),
        };
        pivot(&mut t, cols, n, row, entering);
        leaving = basis[row];
        basis[row] = entering;
        pivots += 1;
        if leaving == z0 {
            break;
        }
        if pivots >= limit {
            return Err(LcpError::PivotLimit { pivots });
        }
    }
    let mut z = vec![0.0; n];
    for (i, &b) in basis.iter().enumerate() {
        if (n..2 * n).contains(&b) {
            z[b - n] = t[i * cols + rhs].max(0.0);
        }
    }
    let w = residual_w(m, q, &z);
    Ok(LcpSolution { z, w, pivots })
}

/// `w = M z + q`.
fn residual_w(m: &[f64], q: &[f64], z: &[f64]) -> Vec<f64> {
    let n = q.len();
    (0..n)
        .map(|i| q[i] + (0..n).map(|j| m[i * n + j] * z[j]).sum::<f64>())
        .collect()
}

/// Gauss-Jordan pivot on `(row, col)` of the tableau.
fn pivot(t: &mut [f64], cols: usize, n: usize, row: usize, col: usize) {
    let p = t[row * cols + col];
    for j in 0..cols {
        t[row * cols + j] /= p;
    }
    for i in 0..n {
        if i == row {
            continue;
        }
        let f = t[i * cols + col];
        if f != 0.0 {
            for j in 0..cols {
                t[i * cols + j] -= f * t[row * cols + j];
            }
        }
    }
}

/// Whether row `i` attains the plain minimum ratio among `rows`.
fn is_min_ratio(t: &[f64], cols: usize, rows: &[usize], i: usize, col: usize, rhs: usize) -> bool {
    let ratio = |r: usize| t[r * cols + rhs] / t[r * cols + col];
    let best = rows.iter().map(|&r| ratio(r)).fold(f64::INFINITY, f64::min);
    ratio(i) <= best + 1e-12 * best.abs().max(1.0)
}

/// The row of the lexicographic minimum of `(rhs, B^-1 row) / pivot entry`;
/// `B^-1` is held in the tableau's first `n` columns (where the identity
/// started). Lexicographic ordering makes the choice unique, so the
/// algorithm cannot cycle on degenerate problems.
fn lexicographic_min_ratio(
    t: &[f64],
    cols: usize,
    n: usize,
    rows: &[usize],
    col: usize,
    rhs: usize,
) -> usize {
    let key = |r: usize, k: usize| {
        let v = if k == 0 {
            t[r * cols + rhs]
        } else {
            t[r * cols + k - 1]
        };
        v / t[r * cols + col]
    };
    let mut best = rows[0];
    for &r in &rows[1..] {
        for k in 0..=n {
            let (a, b) = (key(r, k), key(best, k));
            let eps = 1e-12 * a.abs().max(b.abs()).max(1e-300);
            if a < b - eps {
                best = r;
                break;
            }
            if a > b + eps {
                break;
            }
        }
    }
    best
}

/// Projected Gauss-Seidel with over-relaxation `omega` (1 is plain PGS):
/// for symmetric `M` with a positive diagonal. Stops when the
/// complementarity residual `|min(z, w)|_inf` falls below `tol` (relative
/// to `|q|_inf`).
pub fn projected_gauss_seidel(
    m: &[f64],
    q: &[f64],
    omega: f64,
    tol: f64,
    max_iterations: usize,
) -> Result<LcpSolution, LcpError> {
    let n = q.len();
    let mut z = vec![0.0; n];
    let scale = q.iter().fold(1e-300f64, |a, x| a.max(x.abs()));
    let mut residual = f64::INFINITY;
    for it in 0..max_iterations {
        for i in 0..n {
            let d = m[i * n + i];
            if d <= 0.0 {
                continue;
            }
            let r = q[i] + (0..n).map(|j| m[i * n + j] * z[j]).sum::<f64>();
            z[i] = (z[i] - omega * r / d).max(0.0);
        }
        let w = residual_w(m, q, &z);
        residual = z
            .iter()
            .zip(&w)
            .map(|(a, b)| a.min(*b).abs())
            .fold(0.0, f64::max)
            / scale;
        if residual <= tol {
            return Ok(LcpSolution {
                z,
                w,
                pivots: it + 1,
            });
        }
    }
    Err(LcpError::NotConverged {
        residual,
        iterations: max_iterations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every complementary basis tried in turn: the independent reference
    /// for small problems (a P-matrix has exactly one solution).
    fn enumerate(m: &[f64], q: &[f64]) -> Option<Vec<f64>> {
        let n = q.len();
        for mask in 0..(1u32 << n) {
            let set: Vec<usize> = (0..n).filter(|&i| mask >> i & 1 == 1).collect();
            // Solve M[set, set] z_set = -q[set].
            let k = set.len();
            let mut a = vec![0.0; k * k];
            let mut b = vec![0.0; k];
            for (r, &i) in set.iter().enumerate() {
                for (c, &j) in set.iter().enumerate() {
                    a[r * k + c] = m[i * n + j];
                }
                b[r] = -q[i];
            }
            let Some(zs) = gauss(&mut a, &mut b, k) else {
                continue;
            };
            let mut z = vec![0.0; n];
            for (r, &i) in set.iter().enumerate() {
                z[i] = zs[r];
            }
            let w = residual_w(m, q, &z);
            if z.iter().all(|&x| x >= -1e-9) && w.iter().all(|&x| x >= -1e-9) {
                return Some(z);
            }
        }
        None
    }

    fn gauss(a: &mut [f64], b: &mut [f64], k: usize) -> Option<Vec<f64>> {
        for c in 0..k {
            let p = (c..k).max_by(|&x, &y| a[x * k + c].abs().total_cmp(&a[y * k + c].abs()))?;
            if a[p * k + c].abs() < 1e-12 {
                return None;
            }
            for j in 0..k {
                a.swap(c * k + j, p * k + j);
            }
            b.swap(c, p);
            for r in 0..k {
                if r != c {
                    let f = a[r * k + c] / a[c * k + c];
                    for j in 0..k {
                        a[r * k + j] -= f * a[c * k + j];
                    }
                    b[r] -= f * b[c];
                }
            }
        }
        Some((0..k).map(|i| b[i] / a[i * k + i]).collect())
    }

    fn assert_complementary(s: &LcpSolution, tol: f64) {
        for (z, w) in s.z.iter().zip(&s.w) {
            assert!(*z >= 0.0 && *w >= -tol, "z {z}, w {w}");
            assert!(
                (z * w).abs() <= tol * (1.0 + z.abs() + w.abs()),
                "z {z} w {w}"
            );
        }
    }

    #[test]
    fn nonnegative_q_needs_no_impulse() {
        let s = lemke(&[2.0, 1.0, 1.0, 2.0], &[1.0, 0.0]).expect("solved");
        assert_eq!(s.z, vec![0.0, 0.0]);
        assert_eq!(s.pivots, 0);
    }

    #[test]
    fn two_contacts_closing_together_share_the_impulse() {
        // A rod falling flat on two supports: Delassus matrix of two points
        // at the ends of a uniform rod (m = 1, length 2, J = 1/3):
        // W^T M^-1 W = [[1 + 3, 1 - 3], [1 - 3, 1 + 3]]; equal approach
        // speeds -1 give equal impulses 1/2 (symmetric, no rotation).
        let m = [4.0, -2.0, -2.0, 4.0];
        let s = lemke(&m, &[-1.0, -1.0]).expect("solved");
        assert!(
            (s.z[0] - 0.5).abs() < 1e-12 && (s.z[1] - 0.5).abs() < 1e-12,
            "{:?}",
            s.z
        );
        assert_complementary(&s, 1e-12);
    }

    #[test]
    fn a_problem_without_solution_ends_on_a_ray() {
        // w = -z - 1 cannot be nonnegative.
        assert!(matches!(lemke(&[-1.0], &[-1.0]), Err(LcpError::Ray { .. })));
    }

    #[test]
    fn degenerate_right_hand_sides_do_not_cycle() {
        // Several zero and equal entries of q at once.
        let m = [
            2.0, 1.0, 0.0, 0.0, 1.0, 2.0, 1.0, 0.0, 0.0, 1.0, 2.0, 1.0, 0.0, 0.0, 1.0, 2.0,
        ];
        let s = lemke(&m, &[-1.0, 0.0, -1.0, 0.0]).expect("solved");
        assert_complementary(&s, 1e-12);
        let e = enumerate(&m, &[-1.0, 0.0, -1.0, 0.0]).expect("reference");
        for (a, b) in s.z.iter().zip(&e) {
            assert!((a - b).abs() < 1e-10, "{:?} vs {e:?}", s.z);
        }
    }

    #[test]
    fn gauss_seidel_agrees_with_lemke_on_a_delassus_matrix() {
        let m = [4.0, -2.0, 0.5, -2.0, 4.0, -1.0, 0.5, -1.0, 3.0];
        let q = [-1.0, 0.3, -2.0];
        let a = lemke(&m, &q).expect("lemke");
        let b = projected_gauss_seidel(&m, &q, 1.0, 1e-13, 10_000).expect("pgs");
        for (x, y) in a.z.iter().zip(&b.z) {
            assert!((x - y).abs() < 1e-10, "{:?} vs {:?}", a.z, b.z);
        }
    }

    proptest! {
        /// Symmetric positive definite M (as every Delassus matrix of
        /// independent contacts is): Lemke finds the unique solution, the
        /// one enumeration of all complementary bases finds.
        #[test]
        fn lemke_solves_positive_definite_problems(
            n in 1usize..6,
            entries in proptest::collection::vec(-1.0f64..1.0, 36),
            qs in proptest::collection::vec(-2.0f64..2.0, 6),
        ) {
            // M = A A^T + 0.1 I.
            let a: Vec<f64> = entries[..n * n].to_vec();
            let mut m = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..n {
                    m[i * n + j] = (0..n).map(|k| a[i * n + k] * a[j * n + k]).sum::<f64>()
                        + if i == j { 0.1 } else { 0.0 };
                }
            }
            let q = &qs[..n];
            let s = lemke(&m, q).expect("P-matrix problems are solvable");
            assert_complementary(&s, 1e-9);
            let e = enumerate(&m, q).expect("reference");
            for (x, y) in s.z.iter().zip(&e) {
                prop_assert!((x - y).abs() < 1e-8, "{:?} vs {:?}", s.z, e);
            }
        }
    }
}
