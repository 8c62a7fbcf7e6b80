//! What a sweep keeps of each run: statistics of chosen result columns,
//! gathered row by row as the run records them (nothing of the run is
//! held), so that a sweep of any length needs the memory of one point.

use crate::diag::{Diagnostic, DiagnosticKind};
use crate::solve::RowSink;

/// A statistic of one result column over a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Statistic {
    /// The value at the stop time (the last row).
    Final,
    Max,
    Min,
    /// The time average, (1/T) ∫ x dt by the trapezoidal rule over the
    /// output rows.
    Mean,
    /// The root mean square over time, sqrt((1/T) ∫ x² dt), by the
    /// trapezoidal rule over the output rows.
    Rms,
}

impl Statistic {
    pub const ALL: [Statistic; 5] = [
        Statistic::Final,
        Statistic::Max,
        Statistic::Min,
        Statistic::Mean,
        Statistic::Rms,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Statistic::Final => "final",
            Statistic::Max => "max",
            Statistic::Min => "min",
            Statistic::Mean => "mean",
            Statistic::Rms => "rms",
        }
    }

    /// `final,max,rms` (as `--summary` takes them).
    pub fn parse_list(text: &str) -> Result<Vec<Statistic>, Diagnostic> {
        let mut out = Vec::new();
        for word in text.split(',').map(str::trim) {
            let Some(s) = Statistic::ALL
                .iter()
                .find(|s| s.name().eq_ignore_ascii_case(word))
            else {
                let names: Vec<&str> = Statistic::ALL.iter().map(|s| s.name()).collect();
                return Err(Diagnostic::error_nospan(
                    DiagnosticKind::Setting,
                    format!("`--summary {text}`: `{word}` is not a statistic"),
                )
                .with_hint(format!("the statistics are: {}", names.join(", "))));
            };
            if !out.contains(s) {
                out.push(*s);
            }
        }
        Ok(out)
    }

    /// The table's column for statistic `self` of `name`: the final value
    /// under the variable's own name, the others as `max(name)`.
    pub fn column(self, name: &str) -> String {
        match self {
            Statistic::Final => name.to_string(),
            s => format!("{}({name})", s.name()),
        }
    }
}

/// The running statistics of one column.
#[derive(Clone, Copy, Debug)]
struct Running {
    max: f64,
    min: f64,
    /// ∫ x dt and ∫ x² dt so far.
    integral: f64,
    integral_squares: f64,
    last: f64,
}

/// A [`RowSink`] that keeps the statistics of `columns` (positions in the
/// run's result columns), and optionally forwards every row to a result
/// file.
pub struct SummarySink {
    columns: Vec<usize>,
    running: Vec<Running>,
    first_time: Option<f64>,
    last_time: f64,
    /// Where the rows also go (`--save-results`).
    pub forward: Option<crate::output::ResultStream>,
}

impl SummarySink {
    pub fn new(columns: Vec<usize>, forward: Option<crate::output::ResultStream>) -> SummarySink {
        SummarySink {
            running: Vec::with_capacity(columns.len()),
            columns,
            first_time: None,
            last_time: f64::NAN,
            forward,
        }
    }

    /// Takes one row into the statistics.
    pub fn take(&mut self, t: f64, values: &[f64]) {
        if self.first_time.is_none() {
            self.first_time = Some(t);
            self.running = self
                .columns
                .iter()
                .map(|&c| Running {
                    max: values[c],
                    min: values[c],
                    integral: 0.0,
                    integral_squares: 0.0,
                    last: values[c],
                })
                .collect();
            self.last_time = t;
            return;
        }
        let dt = t - self.last_time;
        for (r, &c) in self.running.iter_mut().zip(&self.columns) {
            let x = values[c];
            // NaN in a column makes its max and min NaN, not the other
            // values' extremes.
            r.max = if x > r.max || x.is_nan() { x } else { r.max };
            r.min = if x < r.min || x.is_nan() { x } else { r.min };
            r.integral += 0.5 * dt * (x + r.last);
            r.integral_squares += 0.5 * dt * (x * x + r.last * r.last);
            r.last = x;
        }
        self.last_time = t;
    }

    /// The statistics, column by column and in the order of `which` within
    /// each column; `None` before any row.
    pub fn values(&self, which: &[Statistic]) -> Option<Vec<f64>> {
        let first = self.first_time?;
        let span = self.last_time - first;
        let mut out = Vec::with_capacity(self.running.len() * which.len());
        for r in &self.running {
            for s in which {
                out.push(match s {
                    Statistic::Final => r.last,
                    Statistic::Max => r.max,
                    Statistic::Min => r.min,
                    // A run of no length: its one value.
                    Statistic::Mean if span > 0.0 => r.integral / span,
                    Statistic::Mean => r.last,
                    Statistic::Rms if span > 0.0 => (r.integral_squares / span).sqrt(),
                    Statistic::Rms => r.last.abs(),
                });
            }
        }
        Some(out)
    }
}

impl RowSink for SummarySink {
    fn begin(&mut self, names: &[String]) -> std::io::Result<()> {
        match &mut self.forward {
            Some(f) => f.begin(names),
            None => Ok(()),
        }
    }

    fn row(&mut self, t: f64, values: &[f64]) -> std::io::Result<()> {
        self.take(t, values);
        match &mut self.forward {
            Some(f) => f.row(t, values),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_of_a_sampled_sine_approach_the_closed_forms() {
        // x = 1 + sin(t) over [0, 2 pi]: mean 1, rms sqrt(1 + 1/2),
        // max 2, min 0.
        let mut s = SummarySink::new(vec![1], None);
        let n = 20_000;
        for k in 0..=n {
            let t = 2.0 * std::f64::consts::PI * k as f64 / n as f64;
            s.take(t, &[0.0, 1.0 + t.sin()]);
        }
        let v = s.values(&Statistic::ALL).expect("rows");
        assert!((v[0] - 1.0).abs() < 1e-12, "final {}", v[0]);
        assert!((v[1] - 2.0).abs() < 1e-6, "max {}", v[1]);
        assert!(v[2].abs() < 1e-6, "min {}", v[2]);
        assert!((v[3] - 1.0).abs() < 1e-8, "mean {}", v[3]);
        assert!((v[4] - 1.5f64.sqrt()).abs() < 1e-8, "rms {}", v[4]);
    }

    #[test]
    fn an_event_row_adds_no_time() {
        // Two rows at t = 1 (before and after an event): the step from 0
        // to 1 at the first value, then 1 to 2 at the second.
        let mut s = SummarySink::new(vec![0], None);
        s.take(0.0, &[0.0]);
        s.take(1.0, &[0.0]);
        s.take(1.0, &[2.0]);
        s.take(2.0, &[2.0]);
        let v = s.values(&[Statistic::Mean, Statistic::Rms]).expect("rows");
        assert_eq!(v, vec![1.0, 2.0f64.sqrt()]);
    }

    #[test]
    fn statistics_are_named_as_the_command_line_gives_them() {
        assert_eq!(
            Statistic::parse_list("final, MAX,rms,max").expect("parses"),
            vec![Statistic::Final, Statistic::Max, Statistic::Rms]
        );
        assert!(Statistic::parse_list("median").is_err());
        assert_eq!(Statistic::Rms.column("gear.w"), "rms(gear.w)");
        assert_eq!(Statistic::Final.column("gear.w"), "gear.w");
    }
}
