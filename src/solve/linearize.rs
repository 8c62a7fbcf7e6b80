//! Linearization about an operating point, and the modes of the result.
//!
//! About the point (x0, u0) a run reached, the model is
//!
//! ```text
//! d(dx)/dt = A dx + B du,    dy = C dx + D du
//! ```
//!
//! with x the states the structural analysis chose, u the top-level
//! `input`s and y the top-level `output`s. Each column of [A; C] is one
//! run of the compiled tangent code (the directional derivative of every
//! computed variable) with state j's tangent seeded, and each column of
//! [B; D] one run with input k's seeded: exact derivatives of the
//! compiled equations, no finite differences.
//!
//! Modes: the eigenvalues of A (faer's real Schur-based eigensolver), each
//! as a natural frequency |lambda| / 2 pi and a damping ratio
//! -Re(lambda) / |lambda| (1 for a decaying real eigenvalue, -1 for a
//! growing one), with its eigenvector over the state names.

use super::model::Backend;
use crate::diag::{Diagnostic, DiagnosticKind};
use crate::flat::{Causality, VarId};
use crate::jit::frame::{Entry, Frame, status};
use crate::structure::{Causal, Role};

/// A, B, C, D (row-major) with the names of their rows and columns and the
/// operating point.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Linearization {
    pub time: f64,
    pub states: Vec<String>,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    /// n x n, n x m, p x n, p x m.
    pub a: Vec<Vec<f64>>,
    pub b: Vec<Vec<f64>>,
    pub c: Vec<Vec<f64>>,
    pub d: Vec<Vec<f64>>,
    /// The operating point: states, inputs, outputs.
    pub x0: Vec<f64>,
    pub u0: Vec<f64>,
    pub y0: Vec<f64>,
}

/// One eigenvalue of A and its eigenvector.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Mode {
    pub re: f64,
    pub im: f64,
    /// |lambda| / 2 pi.
    pub natural_hz: f64,
    /// -Re(lambda) / |lambda|.
    pub damping: f64,
    /// The eigenvector, (re, im) per state, scaled so that its largest
    /// component is 1.
    pub shape: Vec<(f64, f64)>,
}

/// Where a variable's value and tangent are read: itself, or the variable
/// it is an alias of (negated or not); `None` for a parameter or constant.
pub fn source(c: &Causal, v: VarId) -> Option<(VarId, f64)> {
    match c.roles[v as usize] {
        Role::Alias => c
            .aliases
            .iter()
            .find(|a| a.var == v)
            .map(|a| (a.of, if a.negated { -1.0 } else { 1.0 })),
        Role::Parameter | Role::Constant => None,
        _ => Some((v, 1.0)),
    }
}

/// The top-level inputs (parameters of the run) and outputs of `c`.
pub fn inputs_and_outputs(c: &Causal) -> (Vec<VarId>, Vec<VarId>) {
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for (v, var) in c.vars.iter().enumerate() {
        if c.is_top_level_input(v as VarId) {
            inputs.push(v as VarId);
        } else if var.causality == Causality::Output
            && crate::structure::top_level(&var.name)
            && !var.name.contains('$')
        {
            outputs.push(v as VarId);
        }
    }
    (inputs, outputs)
}

/// The linearization at the point `frame` holds (a run's last, with
/// `Options::keep_frame`).
pub fn linearize(
    c: &Causal,
    backend: &dyn Backend,
    frame: &Frame,
) -> Result<Linearization, Diagnostic> {
    let mut frame = frame.clone();
    frame.set_event_mode(false);
    let failed =
        |what: &str, code: i32| {
            Diagnostic::error_nospan(DiagnosticKind::Solver, format!(
            "the model could not be evaluated at the operating point ({what}, status {code})"
        ))
        .with_hint("linearize at another time (--at), or after initialization (the default)")
        };
    let code = backend.run(Entry::Ode, frame.values());
    if code != status::OK {
        return Err(failed("its equations", code));
    }
    let (inputs, outputs) = inputs_and_outputs(c);
    let n = c.states.len();
    // Where the rows' values live, looked up once for every column.
    let der_sources: Vec<Option<(VarId, f64)>> =
        c.state_ders.iter().map(|&d| source(c, d)).collect();
    let output_sources: Vec<Option<(VarId, f64)>> = outputs.iter().map(|&y| source(c, y)).collect();
    let tangent = |f: &Frame, s: &Option<(VarId, f64)>| match s {
        Some((s, sign)) => sign * f.tangent(*s),
        None => 0.0,
    };
    // Column j of [A; C] (or [B; D]) for the seed `seed`.
    let mut column = |seed: VarId| -> Result<(Vec<f64>, Vec<f64>), Diagnostic> {
        frame.clear_tangents();
        frame.set_tangent(seed, 1.0);
        let code = backend.run(Entry::Tangent, frame.values());
        if code != status::OK {
            return Err(failed("its derivatives", code));
        }
        let ders = der_sources.iter().map(|s| tangent(&frame, s)).collect();
        let outs = output_sources.iter().map(|s| tangent(&frame, s)).collect();
        frame.set_tangent(seed, 0.0);
        Ok((ders, outs))
    };
    let mut a = vec![vec![0.0; n]; n];
    let mut cm = vec![vec![0.0; n]; outputs.len()];
    for (j, &s) in c.states.iter().enumerate() {
        let (ders, outs) = column(s)?;
        for i in 0..n {
            a[i][j] = ders[i];
        }
        for (i, y) in outs.into_iter().enumerate() {
            cm[i][j] = y;
        }
    }
    let mut b = vec![vec![0.0; inputs.len()]; n];
    let mut d = vec![vec![0.0; inputs.len()]; outputs.len()];
    for (k, &u) in inputs.iter().enumerate() {
        let (ders, outs) = column(u)?;
        for i in 0..n {
            b[i][k] = ders[i];
        }
        for (i, y) in outs.into_iter().enumerate() {
            d[i][k] = y;
        }
    }
    frame.clear_tangents();
    let names = |vs: &[VarId]| {
        vs.iter()
            .map(|&v| c.vars[v as usize].name.clone())
            .collect()
    };
    Ok(Linearization {
        time: frame.time(),
        states: names(&c.states),
        inputs: names(&inputs),
        outputs: names(&outputs),
        x0: c.states.iter().map(|&v| frame.var(v)).collect(),
        u0: inputs.iter().map(|&v| frame.var(v)).collect(),
        y0: outputs
            .iter()
            .zip(&output_sources)
            .map(|(&v, s)| match s {
                Some((s, sign)) => sign * frame.var(*s),
                None => frame.var(v),
            })
            .collect(),
        a,
        b,
        c: cm,
        d,
    })
}

/// The eigenvalues of A with their eigenvectors, by natural frequency,
/// then by the sign of the imaginary part (a pair's positive one first).
pub fn modes(a: &[Vec<f64>]) -> Result<Vec<Mode>, Diagnostic> {
    let n = a.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    if a.iter().flatten().any(|x| !x.is_finite()) {
        return Err(Diagnostic::error_nospan(
            DiagnosticKind::Solver,
            "the state matrix A holds values that are not finite",
        ));
    }
    let m = faer::Mat::<f64>::from_fn(n, n, |i, j| a[i][j]);
    let eigen = m.eigen().map_err(|e| {
        Diagnostic::error_nospan(
            DiagnosticKind::Solver,
            format!("the eigenvalues of A did not converge: {e:?}"),
        )
    })?;
    let (values, vectors) = (eigen.S(), eigen.U());
    let mut out: Vec<Mode> = (0..n)
        .map(|k| {
            let lambda = values.column_vector()[k];
            let (re, im) = (lambda.re, lambda.im);
            let size = re.hypot(im);
            let column: Vec<(f64, f64)> = (0..n)
                .map(|i| {
                    let z = vectors[(i, k)];
                    (z.re, z.im)
                })
                .collect();
            // Scaled by the largest component, which becomes 1 (phase 0).
            let big = column
                .iter()
                .copied()
                .max_by(|p, q| p.0.hypot(p.1).total_cmp(&q.0.hypot(q.1)))
                .unwrap_or((1.0, 0.0));
            let den = big.0 * big.0 + big.1 * big.1;
            let shape = column
                .iter()
                .map(|&(x, y)| {
                    if den > 0.0 {
                        ((x * big.0 + y * big.1) / den, (y * big.0 - x * big.1) / den)
                    } else {
                        (x, y)
                    }
                })
                .collect();
            Mode {
                re,
                im,
                natural_hz: size / (2.0 * std::f64::consts::PI),
                damping: if size > 0.0 { -re / size } else { 0.0 },
                shape,
            }
        })
        .collect();
    out.sort_by(|p, q| {
        p.natural_hz
            .total_cmp(&q.natural_hz)
            .then(q.im.total_cmp(&p.im))
    });
    Ok(out)
}

/// The modes as a table: one line per real eigenvalue or complex pair
/// (its positive-frequency member), with `--modes` the shapes below.
pub fn report(l: &Linearization, modes: &[Mode], shapes: bool) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "linearized at t = {}: {} states, {} inputs, {} outputs",
        l.time,
        l.states.len(),
        l.inputs.len(),
        l.outputs.len()
    );
    let _ = writeln!(
        out,
        "{:>4}  {:>26}  {:>14}  {:>10}",
        "mode", "eigenvalue [1/s]", "frequency [Hz]", "damping"
    );
    let mut k = 0;
    for m in modes {
        if m.im < 0.0 {
            continue;
        }
        k += 1;
        let eigenvalue = if m.im > 0.0 {
            format!("{:.6e} ± {:.6e}i", m.re, m.im)
        } else {
            format!("{:.6e}", m.re)
        };
        let _ = writeln!(
            out,
            "{k:>4}  {eigenvalue:>26}  {:>14.6}  {:>10.6}",
            m.natural_hz, m.damping
        );
        if shapes {
            let width = l.states.iter().map(|s| s.len()).max().unwrap_or(5);
            for (name, (x, y)) in l.states.iter().zip(&m.shape) {
                let _ = writeln!(
                    out,
                    "        {name:<width$}  {:>10.6}  {:>9.3} deg",
                    x.hypot(*y),
                    y.atan2(*x).to_degrees()
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_oscillator_has_its_frequency_and_damping() {
        // x'' + 2 zeta w x' + w^2 x = 0 with w = 2 pi 10, zeta = 0.05.
        let w = 2.0 * std::f64::consts::PI * 10.0;
        let zeta = 0.05;
        let a = vec![vec![0.0, 1.0], vec![-w * w, -2.0 * zeta * w]];
        let m = modes(&a).expect("modes");
        assert_eq!(m.len(), 2);
        assert!(m[0].im > 0.0 && m[1].im < 0.0);
        for mode in &m {
            assert!((mode.natural_hz - 10.0).abs() < 1e-9, "{}", mode.natural_hz);
            assert!((mode.damping - zeta).abs() < 1e-12, "{}", mode.damping);
        }
        // The shape: velocity = lambda x, the larger component 1.
        let (x, v) = (m[0].shape[0], m[0].shape[1]);
        assert_eq!(v, (1.0, 0.0));
        let ratio = x.0.hypot(x.1);
        assert!((ratio - 1.0 / w).abs() < 1e-12);
    }
}
