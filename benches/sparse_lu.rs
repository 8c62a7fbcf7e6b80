//! The sparse LU of the Newton matrices: `cargo bench --bench sparse_lu`.
//!
//! On the Newton matrix I - c J of the nonlinear heat-conduction grid of
//! `benches/grid` (n x n cells, each joined to its four neighbours, the
//! values unequal across a link as a temperature-dependent conductance
//! makes them), rmoc's `PivotedLu` (AMD order of A + Aᵀ, pivots kept,
//! refactorization on them) against the baseline measured in the same run:
//! faer's sparse LU in COLAMD order, supernodal as rmoc chose it before
//! (flop ratio 0.5). Medians of a factorization (a refactorization for
//! `PivotedLu`) and of a solve; both solutions are checked against the
//! matrix before the times are printed. Output is markdown for
//! `docs/benchmarks.md`.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod common;

use common::median;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::sparse::linalg::SupernodalThreshold;
use faer::sparse::linalg::lu::{LuRef, LuSymbolicParams, NumericLu, factorize_symbolic_lu};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMatRef};
use faer::{Conj, Par};
use rmoc::solve::sparse_lu::{ColumnOrder, Csc, PivotedLu};

struct Matrix {
    n: usize,
    col_ptr: Vec<usize>,
    row_idx: Vec<usize>,
    values: Vec<f64>,
}

/// I - c J of an n x n grid (see the module's text).
fn grid(n: usize, c: f64) -> Matrix {
    let nn = n * n;
    let mut cols: Vec<Vec<(usize, f64)>> = vec![Vec::new(); nn];
    let mut diagonal = vec![1.0; nn];
    for i in 0..n {
        for j in 0..n {
            let a = i * n + j;
            let right = (j + 1 < n).then_some(a + 1);
            let down = (i + 1 < n).then_some(a + n);
            for b in [right, down].into_iter().flatten() {
                let g = 1000.0 * (1.5 + 0.5 * ((a * 7 + b) as f64).sin());
                let dg = 150.0 * ((a + 3 * b) as f64).cos();
                diagonal[a] += c * (g + dg);
                diagonal[b] += c * (g - dg);
                cols[b].push((a, -c * (g - dg)));
                cols[a].push((b, -c * (g + dg)));
            }
        }
    }
    let mut m = Matrix {
        n: nn,
        col_ptr: vec![0],
        row_idx: Vec::new(),
        values: Vec::new(),
    };
    for (k, col) in cols.iter_mut().enumerate() {
        col.push((k, diagonal[k]));
        col.sort_by_key(|e| e.0);
        for &(i, v) in col.iter() {
            m.row_idx.push(i);
            m.values.push(v);
        }
        m.col_ptr.push(m.row_idx.len());
    }
    m
}

impl Matrix {
    fn residual(&self, x: &[f64], b: &[f64]) -> f64 {
        let mut r = b.to_vec();
        for (j, xj) in x.iter().enumerate() {
            for k in self.col_ptr[j]..self.col_ptr[j + 1] {
                r[self.row_idx[k]] -= self.values[k] * xj;
            }
        }
        r.iter().fold(0.0f64, |m, v| m.max(v.abs()))
    }
}

fn main() {
    println!("| grid | unknowns | LU | factors' entries | factorization (µs) | solve (µs) |");
    println!("|---|---|---|---|---|---|");
    for n in [20usize, 50, 100] {
        let m = grid(n, 1e-3);
        let nn = m.n;
        let b: Vec<f64> = (0..nn).map(|i| (i as f64 * 0.37).sin()).collect();
        let sym = SymbolicSparseColMatRef::new_checked(nn, nn, &m.col_ptr, None, &m.row_idx);
        let a = SparseColMatRef::new(sym, &m.values);

        // The baseline: faer, COLAMD, supernodal at flop ratio 0.5.
        let params = LuSymbolicParams {
            supernodal_flop_ratio_threshold: SupernodalThreshold(0.5),
            ..Default::default()
        };
        let symbolic = factorize_symbolic_lu(sym, params).expect("symbolic LU");
        let mut factor_work = MemBuffer::new(
            symbolic.factorize_numeric_lu_scratch::<f64>(Par::Seq, Default::default()),
        );
        let mut solve_work = MemBuffer::new(symbolic.solve_in_place_scratch::<f64>(1, Par::Seq));
        let mut numeric = NumericLu::new();
        let mut factor = || {
            symbolic
                .factorize_numeric_lu(
                    &mut numeric,
                    a,
                    Par::Seq,
                    MemStack::new(&mut factor_work),
                    Default::default(),
                )
                .expect("regular");
        };
        let faer_factor = median(&mut factor);
        factor();
        let mut x = b.clone();
        let mut solve = |x: &mut Vec<f64>| {
            x.copy_from_slice(&b);
            let rhs = faer::MatMut::from_column_major_slice_mut(x, nn, 1);
            LuRef::new_unchecked(&symbolic, &numeric).solve_in_place_with_conj(
                Conj::No,
                rhs,
                Par::Seq,
                MemStack::new(&mut solve_work),
            );
        };
        let faer_solve = median(|| solve(&mut x));
        solve(&mut x);
        let r = m.residual(&x, &b);
        assert!(r < 1e-9, "faer: residual {r:e}");

        // rmoc's PivotedLu: the first factorization chooses the pivots.
        let order = ColumnOrder::of_pattern(nn, &m.col_ptr, &m.row_idx).expect("order");
        let csc = Csc {
            n: nn,
            col_ptr: &m.col_ptr,
            row_idx: &m.row_idx,
            values: &m.values,
        };
        let mut lu = PivotedLu::default();
        assert!(lu.factor(&order, &csc));
        let refactor = median(|| assert!(lu.factor(&order, &csc)));
        assert_eq!(lu.pivotings, 1, "refactored on the first pivots");
        let mut y = b.clone();
        let ours_solve = median(|| {
            y.copy_from_slice(&b);
            lu.solve(&order, &mut y);
        });
        let r = m.residual(&y, &b);
        assert!(r < 1e-9, "PivotedLu: residual {r:e}");

        let us = |d: std::time::Duration| d.as_secs_f64() * 1e6;
        println!(
            "| {n} x {n} | {nn} | faer supernodal, COLAMD (before) | (dense blocks) | {:.0} | {:.1} |",
            us(faer_factor),
            us(faer_solve)
        );
        println!(
            "| {n} x {n} | {nn} | PivotedLu, AMD(A + Aᵀ), refactorization | {} | {:.0} | {:.1} |",
            lu.entries(),
            us(refactor),
            us(ours_solve)
        );
    }
}
