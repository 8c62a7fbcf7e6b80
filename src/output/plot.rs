//! `rmoc plot`: line plots of a result file's columns, against time or
//! against another column (a phase portrait), drawn as SVG or PNG with
//! plotters (the PNG's text in DejaVu Sans, carried in the binary:
//! `assets/fonts`).
//!
//! The input is a result as `rmoc simulate` writes it, CSV or MAT
//! ([`super::read`]); MAT files give the axes their units. Points that
//! fall on the same spot of the plot as the previous kept one are dropped,
//! so a run recorded at every step (10^5-10^6 rows) still gives a file of a
//! few hundred kilobytes that looks the same. Like result files, the plot is
//! written to a temporary name and renamed on success.

use crate::solve::columns::glob;
use plotters::prelude::*;
use std::path::Path;

/// What to draw.
pub struct PlotRequest<'a> {
    /// Column patterns to draw ([`crate::solve::columns::glob`]), each a series.
    pub ys: &'a [String],
    /// The abscissa: a column name, or time when `None`.
    pub x: Option<&'a str>,
    /// Only rows with time in [from, to].
    pub from: Option<f64>,
    pub to: Option<f64>,
    pub title: Option<&'a str>,
    /// One panel per column, stacked, each with its own vertical axis.
    pub panels: bool,
}

/// Drawing resolution used to drop points that would coincide.
const CELLS: f64 = 4000.0;
const SIZE: (u32, u32) = (900, 640);
/// Panels one plot may stack (240 pixels each).
const MAX_PANELS: usize = 32;

/// Whether `out` names a file `plot` can write (SVG or PNG).
pub fn writable_format(out: &Path) -> bool {
    has_extension(out, "svg") || has_extension(out, "png")
}

fn has_extension(out: &Path, ext: &str) -> bool {
    out.extension().is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

/// Text is laid out (and in PNG drawn) with a font registered once per
/// process.
fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let font: &'static [u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
        // The font is carried in the binary and parses: a failure here is
        // a broken build, and drawing then fails with plotters' font error.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, font);
    });
}

/// A result to draw from, and how the legend names its curves when there
/// are several results (`--also`).
pub struct PlotSource<'a> {
    pub label: String,
    pub table: &'a super::ResultTable,
}

/// One curve: column `y` against column `x` of source `source`.
#[derive(Clone, Copy)]
struct Series {
    source: usize,
    x: usize,
    y: usize,
}

/// Draws the request from the `sources` (the first is the main result;
/// the patterns are looked up in each) into `out`, SVG or PNG by its
/// extension. Errors are messages for the user (a missing column, an
/// empty time window, an unwritable file).
pub fn plot(sources: &[PlotSource], req: &PlotRequest, out: &Path) -> Result<(), String> {
    let several = sources.len() > 1;
    let of = |k: usize| {
        if several {
            format!(" of `{}`", sources[k].label)
        } else {
            " of the result".to_string()
        }
    };
    let mut kept_rows: Vec<Vec<&Vec<f64>>> = Vec::new();
    let mut series: Vec<Series> = Vec::new();
    for (si, src) in sources.iter().enumerate() {
        let names = &src.table.names;
        let column = |name: &str| -> Result<usize, String> {
            names.iter().position(|n| n == name).ok_or_else(|| {
                format!(
                    "the result{} has no column `{name}`",
                    if several {
                        format!(" `{}`", src.label)
                    } else {
                        String::new()
                    }
                )
            })
        };
        let time = column("time")?;
        let x = match req.x {
            Some(x) => column(x)?,
            None => time,
        };
        for pattern in req.ys {
            let matched: Vec<usize> = (0..names.len())
                .filter(|&k| k != time && glob(pattern, &names[k]))
                .collect();
            if matched.is_empty() {
                return Err(format!("no column{} matches `{pattern}`", of(si)));
            }
            for y in matched {
                if !series.iter().any(|s| s.source == si && s.y == y) {
                    series.push(Series { source: si, x, y });
                }
            }
        }
        let kept: Vec<&Vec<f64>> = src
            .table
            .rows
            .iter()
            .filter(|r| {
                let t = r[time];
                req.from.is_none_or(|a| t >= a) && req.to.is_none_or(|b| t <= b)
            })
            .collect();
        if kept.is_empty() {
            return Err(format!("no rows{} lie in the time window", of(si)));
        }
        kept_rows.push(kept);
    }
    // The axis range of `what` over the finite values; none finite, or a
    // span beyond the largest float (the axis could not be divided), is
    // the user's to hear about.
    let range = |vals: &mut dyn Iterator<Item = f64>, what: &str| -> Result<(f64, f64), String> {
        let (lo, hi) = vals
            .filter(|v| v.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            });
        if !lo.is_finite() {
            return Err(format!("{what} has no finite value in the time window"));
        }
        let pad = if hi > lo {
            0.03 * (hi - lo)
        } else {
            0.5 * lo.abs().max(1e-12)
        };
        let (a, b) = (lo - pad, hi + pad);
        if !(b - a).is_finite() {
            return Err(format!(
                "{what} spans {lo:e} to {hi:e}, beyond the range of a plot axis"
            ));
        }
        Ok((a, b))
    };
    let name = |s: &Series, k: usize| &sources[s.source].table.names[k];
    let x_name = format!("column `{}`", name(&series[0], series[0].x));
    let (x_lo, x_hi) = range(
        &mut series
            .iter()
            .flat_map(|s| kept_rows[s.source].iter().map(move |r| r[s.x])),
        &x_name,
    )?;
    // One panel for all curves, or one per column name (a column of every
    // source in one panel).
    let mut groups: Vec<Vec<Series>> = Vec::new();
    for s in &series {
        let panel = if req.panels {
            groups
                .iter_mut()
                .find(|g| name(&g[0], g[0].y) == name(s, s.y))
        } else {
            groups.first_mut()
        };
        match panel {
            Some(g) => g.push(*s),
            None => groups.push(vec![*s]),
        }
    }
    let mut panels = Vec::with_capacity(groups.len());
    for ys in groups {
        let y_names = ys
            .iter()
            .map(|s| format!("`{}`", name(s, s.y)))
            .collect::<Vec<_>>()
            .join(", ");
        let yr = range(
            &mut ys
                .iter()
                .flat_map(|s| kept_rows[s.source].iter().map(move |r| r[s.y])),
            &format!("the plotted column(s) {y_names}"),
        )?;
        panels.push(Panel { series: ys, yr });
    }
    if panels.len() > MAX_PANELS {
        return Err(format!(
            "{} panels, one per column, are more than {MAX_PANELS}: choose fewer columns, or leave out --panels",
            panels.len()
        ));
    }
    let size = (SIZE.0, SIZE.1.max(240 * panels.len() as u32));
    let png = has_extension(out, "png");
    // Both backends lay out text with the font's metrics.
    register_font();
    super::replace_file(out, |tmp| {
        let lines = Lines {
            sources,
            rows: &kept_rows,
            panels: &panels,
            xr: (x_lo, x_hi),
            title: req.title,
        };
        if png {
            // Drawn into memory and encoded here: the bitmap backend picks
            // the format by the file's extension, and the temporary file's
            // is not `.png`.
            let mut pixels = vec![0u8; (size.0 * size.1 * 3) as usize];
            let root = BitMapBackend::with_buffer(&mut pixels, size).into_drawing_area();
            draw(root, &lines).and_then(|()| {
                image::save_buffer_with_format(
                    tmp,
                    &pixels,
                    size.0,
                    size.1,
                    image::ColorType::Rgb8,
                    image::ImageFormat::Png,
                )
                .map_err(|e| e.to_string())
            })
        } else {
            let root = SVGBackend::new(tmp, size).into_drawing_area();
            draw(root, &lines)
        }
        .map_err(std::io::Error::other)
    })
    .map_err(|e| format!("cannot write `{}`: {e}", out.display()))
}

/// The series of column `y` against column `x`, without points that fall
/// in the same drawing cell as the last kept one and without non-finite
/// values.
fn thinned(
    rows: &[&Vec<f64>],
    x: usize,
    y: usize,
    xr: (f64, f64),
    yr: (f64, f64),
) -> Vec<(f64, f64)> {
    let cell = |v: f64, r: (f64, f64)| ((v - r.0) / (r.1 - r.0) * CELLS).round() as i64;
    let mut out: Vec<(f64, f64)> = Vec::new();
    let mut last: Option<(i64, i64)> = None;
    for (i, r) in rows.iter().enumerate() {
        let (a, b) = (r[x], r[y]);
        if !(a.is_finite() && b.is_finite()) {
            continue;
        }
        let c = (cell(a, xr), cell(b, yr));
        // The last row is always kept so that the curve ends where it does.
        if last != Some(c) || i + 1 == rows.len() {
            out.push((a, b));
            last = Some(c);
        }
    }
    out
}

/// One panel: the curves drawn in it and its vertical range.
struct Panel {
    series: Vec<Series>,
    yr: (f64, f64),
}

/// What `draw` draws: each panel's curves over the rows of their sources
/// in the time window, in the horizontal range `xr`.
struct Lines<'a> {
    sources: &'a [PlotSource<'a>],
    rows: &'a [Vec<&'a Vec<f64>>],
    panels: &'a [Panel],
    xr: (f64, f64),
    title: Option<&'a str>,
}

impl Lines<'_> {
    fn unit(&self, source: usize, k: usize) -> Option<&str> {
        self.sources[source]
            .table
            .units
            .get(k)
            .and_then(|u| u.as_deref())
            .filter(|u| !u.is_empty())
    }

    /// `name [unit]`, or the name where the result has no unit.
    fn label(&self, source: usize, k: usize) -> String {
        let name = &self.sources[source].table.names[k];
        match self.unit(source, k) {
            Some(u) => format!("{name} [{u}]"),
            None => name.clone(),
        }
    }

    /// A curve's legend entry: its label, and its source's with several.
    fn legend(&self, s: &Series) -> String {
        let label = self.label(s.source, s.y);
        if self.sources.len() > 1 {
            format!("{label} ({})", self.sources[s.source].label)
        } else {
            label
        }
    }

    /// A panel's vertical axis: its one column's label (one name, from
    /// any number of sources), or the unit its columns share.
    fn axis_label(&self, series: &[Series]) -> String {
        let first = &series[0];
        let name = |s: &Series| &self.sources[s.source].table.names[s.y];
        if series.iter().all(|s| name(s) == name(first)) {
            return self.label(first.source, first.y);
        }
        match self.unit(first.source, first.y) {
            Some(u) if series.iter().all(|s| self.unit(s.source, s.y) == Some(u)) => {
                format!("[{u}]")
            }
            _ => String::new(),
        }
    }
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    l: &Lines,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let area = match l.title {
        Some(t) => root.titled(t, ("sans-serif", 22)).map_err(|e| err(&e))?,
        None => root.clone(),
    };
    let areas = area.split_evenly((l.panels.len(), 1));
    let mut color_index = 0;
    for (panel, area) in l.panels.iter().zip(areas) {
        let (xr, yr) = (l.xr, panel.yr);
        let first = panel.series[0];
        let mut chart = ChartBuilder::on(&area)
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(80)
            .build_cartesian_2d(xr.0..xr.1, yr.0..yr.1)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc(l.label(first.source, first.x))
            .y_desc(l.axis_label(&panel.series))
            .x_label_formatter(&|v| tick_label(snap(*v, xr), xr))
            .y_label_formatter(&|v| tick_label(snap(*v, yr), yr))
            .draw()
            .map_err(|e| err(&e))?;
        let legend = panel.series.len() > 1;
        for s in &panel.series {
            let color = Palette99::pick(color_index).to_rgba();
            color_index += 1;
            let points = thinned(&l.rows[s.source], s.x, s.y, xr, yr);
            let drawn = chart
                .draw_series(LineSeries::new(points, color))
                .map_err(|e| err(&e))?;
            if legend {
                drawn
                    .label(l.legend(s))
                    .legend(move |(a, b)| PathElement::new(vec![(a, b), (a + 20, b)], color));
            }
        }
        if legend {
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(|e| err(&e))?;
        }
    }
    root.present().map_err(|e| err(&e))
}

/// A tick at rounding distance from zero (-2.2e-16 on an axis spanning
/// 1) is zero.
fn snap(v: f64, range: (f64, f64)) -> f64 {
    if v.abs() <= 1e-9 * (range.1 - range.0).abs() {
        0.0
    } else {
        v
    }
}

/// A tick label with as many decimals as the ticks' spacing (about a tenth
/// of the axis) needs, so neighbouring ticks never read the same
/// (0.00125 stays 0.00125; ticks near 1.00002 keep their last digits).
fn tick_label(v: f64, range: (f64, f64)) -> String {
    let span = (range.1 - range.0).abs();
    let size = range.0.abs().max(range.1.abs());
    if span > 0.0 && (1e-3..1e4).contains(&size) && span >= 1e-9 * size {
        let decimals = (-(span / 10.0).log10()).ceil().max(0.0) as usize + 1;
        let s = format!("{v:.decimals$}");
        let s = if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.')
        } else {
            &s
        };
        return if s == "-0" { "0".into() } else { s.to_string() };
    }
    short(v)
}

/// Tick labels: plain for ordinary magnitudes, scientific otherwise.
fn short(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 || (1e-3..1e4).contains(&a) {
        let s = format!("{v:.4}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    } else {
        let s = format!("{v:.3e}");
        let (mantissa, exponent) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        format!("{mantissa}e{exponent}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coinciding_points_are_dropped_but_the_ends_kept() {
        let rows: Vec<Vec<f64>> = (0..=10_000).map(|i| vec![i as f64 * 1e-4, 0.0]).collect();
        let refs: Vec<&Vec<f64>> = rows.iter().collect();
        // A flat line over 10 001 rows: one point per drawing cell (4 001
        // of them), plus the last row, which shares the last cell.
        let pts = thinned(&refs, 0, 1, (0.0, 1.0), (-1.0, 1.0));
        assert_eq!(pts.len(), 4002);
        assert_eq!(pts.first(), Some(&(0.0, 0.0)));
        assert_eq!(pts.last(), Some(&(1.0, 0.0)));
    }

    #[test]
    fn ticks_at_rounding_distance_from_zero_are_zero() {
        assert_eq!(snap(-2.22e-16, (-1.0, 0.6)), 0.0);
        assert_eq!(snap(1e-4, (-1e-3, 1e-3)), 1e-4);
    }

    #[test]
    fn tick_labels_keep_the_digits_their_spacing_needs() {
        assert_eq!(tick_label(0.00125, (0.0, 0.003)), "0.00125");
        assert_eq!(tick_label(1.000012, (1.00001, 1.00003)), "1.000012");
        assert_eq!(tick_label(0.5, (0.0, 1.0)), "0.5");
        assert_eq!(tick_label(-0.0, (-1.0, 1.0)), "0");
        assert_eq!(tick_label(2000.0, (0.0, 5000.0)), "2000");
        assert_eq!(tick_label(-5e-4, (-1.5e-3, 1.5e-3)), "-0.0005");
        assert_eq!(tick_label(2.5e-5, (0.0, 1e-4)), "2.5e-5");
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(short(0.25), "0.25");
        assert_eq!(short(0.0), "0");
        assert_eq!(short(1.5e-5), "1.5e-5");
        assert_eq!(short(-5e-4), "-5e-4");
        assert_eq!(short(3.0000000000000003e-4), "3e-4");
        assert_eq!(short(-2000.0), "-2000");
    }
}
