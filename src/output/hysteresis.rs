//! `rmoc hysteresis`: the torque-angle loop of a reducer driven through a
//! loading sequence, and its indicators: torsional stiffness, lost motion
//! and backlash (Miao et al. 2026, seed 000, section 5.2 and Table 8,
//! restated here).
//!
//! The input is two columns of a result, the output torque T and the output
//! angle; the angle is converted to arc minutes. The loop is read as:
//!
//! - **Branches.** Consecutive rows whose torque rises form an ascending
//!   run, rows whose torque falls a descending one (rows of equal torque
//!   continue the run they are in). The loading branch is the ascending run
//!   that spans the widest torque range (in the five-stage sequence of eq.
//!   25: stages 4 and 5, from -Tr to +Tr), the unloading branch the widest
//!   descending run (stages 2 and 3, from +Tr to -Tr). Stage 1, the first
//!   loading from rest, is left out: it starts from wherever the play put
//!   the shaft.
//! - **Zero crossings.** The angle at which each branch reaches zero torque
//!   from the side it comes from: the unloading branch from T > 0, the
//!   loading branch from T < 0, each extrapolated linearly from the branch's
//!   last two rows on that side (in a run through the play the angle jumps
//!   at T = 0: an interpolation across the jump would land in the middle of
//!   it).
//! - **Offset correction.** The mean of the two zero-torque angles is
//!   subtracted from every angle, centring the loop.
//! - **Torsional stiffness** (N m/arcmin): the least-squares slope dT/dtheta
//!   over the loading branch's rows with 0.66 Tr <= T <= Tr (K+) and over
//!   the unloading branch's rows with -Tr <= T <= -0.66 Tr (K-); their mean
//!   is reported too (Table 10's K_avg).
//! - **Lost motion** (arcmin): |theta_mid(+0.03 Tr) - theta_mid(-0.03 Tr)|,
//!   where theta_mid(T) is the mean of the two branches' angles at torque T
//!   (each interpolated linearly along its branch).
//! - **Backlash** (arcmin): the loop's width at zero torque, the unloading
//!   branch's zero-torque angle less the loading branch's.
//!
//! For a shaft with free play b and linear stiffness k beyond it, driven
//! quasi-statically, these give K+ = K- = k, backlash b and lost motion
//! b + 0.06 Tr/k.

/// The unit of the angle column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AngleUnit {
    Radian,
    Degree,
    Arcmin,
}

impl AngleUnit {
    /// Arc minutes per unit.
    pub fn to_arcmin(self) -> f64 {
        match self {
            AngleUnit::Radian => 180.0 * 60.0 / std::f64::consts::PI,
            AngleUnit::Degree => 60.0,
            AngleUnit::Arcmin => 1.0,
        }
    }
}

/// The loop's indicators, angles in arc minutes, stiffness in N m/arcmin
/// (torque units per arc minute).
#[derive(Clone, Debug, PartialEq)]
pub struct Indicators {
    pub rated_torque: f64,
    /// Slope over the loading branch between 66% and 100% of rated torque.
    pub stiffness_positive: f64,
    /// Slope over the unloading branch between -100% and -66%.
    pub stiffness_negative: f64,
    pub stiffness_mean: f64,
    pub lost_motion: f64,
    pub backlash: f64,
    /// The angle subtracted to centre the loop.
    pub offset: f64,
    /// Rows in each stiffness fit.
    pub fit_rows: (usize, usize),
}

/// A branch of the loop: rows `start..=end` of the series, the torque
/// moving one way.
#[derive(Clone, Copy, Debug)]
struct Branch {
    start: usize,
    end: usize,
}

/// The loop's indicators from the torque and the angle (arc minutes) row
/// by row. Errors are messages for the user: a loop that is not there.
pub fn indicators(torque: &[f64], angle: &[f64], rated: f64) -> Result<Indicators, String> {
    if !(rated.is_finite() && rated > 0.0) {
        return Err(format!("the rated torque must be positive, not {rated}"));
    }
    if torque.len() != angle.len() {
        return Err("the torque and angle columns differ in length".into());
    }
    if let Some(i) = (0..torque.len()).find(|&i| !(torque[i].is_finite() && angle[i].is_finite())) {
        return Err(format!("row {} holds a value that is not finite", i + 1));
    }
    let loading =
        widest_run(torque, 1.0).ok_or("the torque never rises: there is no loading branch")?;
    let unloading =
        widest_run(torque, -1.0).ok_or("the torque never falls: there is no unloading branch")?;
    let (lo_l, hi_l) = span(torque, loading);
    let (lo_u, hi_u) = span(torque, unloading);
    let reach = 0.999 * rated;
    if !(lo_l <= -reach && hi_l >= reach && lo_u <= -reach && hi_u >= reach) {
        return Err(format!(
            "the loop does not reach the rated torque {rated} both ways: the loading branch spans \
             [{lo_l:.6e}, {hi_l:.6e}], the unloading branch [{lo_u:.6e}, {hi_u:.6e}]"
        ));
    }
    // The zero-torque angles: the unloading branch coming from T > 0, the
    // loading branch coming from T < 0.
    let zero_unloading = zero_from_side(torque, angle, unloading, 1.0)?;
    let zero_loading = zero_from_side(torque, angle, loading, -1.0)?;
    let offset = 0.5 * (zero_unloading + zero_loading);
    let backlash = zero_unloading - zero_loading;
    // The slopes and the lost motion (a difference of angles) do not
    // depend on the offset: they are read from the angles as given.
    let (k_pos, n_pos) = slope(torque, angle, loading, 0.66 * rated, rated)?;
    let (k_neg, n_neg) = slope(torque, angle, unloading, -rated, -0.66 * rated)?;
    let mid = |t: f64| -> Result<f64, String> {
        Ok(0.5 * (angle_at(torque, angle, loading, t)? + angle_at(torque, angle, unloading, t)?))
    };
    let lost_motion = (mid(0.03 * rated)? - mid(-0.03 * rated)?).abs();
    Ok(Indicators {
        rated_torque: rated,
        stiffness_positive: k_pos,
        stiffness_negative: k_neg,
        stiffness_mean: 0.5 * (k_pos + k_neg),
        lost_motion,
        backlash,
        offset,
        fit_rows: (n_pos, n_neg),
    })
}

/// The run of rows along which the torque moves in `direction` (+1 rising,
/// -1 falling) that spans the widest torque range.
fn widest_run(torque: &[f64], direction: f64) -> Option<Branch> {
    let mut best: Option<(f64, Branch)> = None;
    let mut start: Option<usize> = None;
    let close = |start: usize, end: usize, best: &mut Option<(f64, Branch)>| {
        let width = (torque[end] - torque[start]).abs();
        if end > start && best.is_none_or(|(w, _)| width > w) {
            *best = Some((width, Branch { start, end }));
        }
    };
    for i in 1..torque.len() {
        let step = (torque[i] - torque[i - 1]) * direction;
        if step > 0.0 {
            start.get_or_insert(i - 1);
        } else if step < 0.0
            && let Some(s) = start.take()
        {
            close(s, i - 1, &mut best);
        }
    }
    if let Some(s) = start {
        close(s, torque.len() - 1, &mut best);
    }
    best.map(|(_, b)| b)
}

fn span(torque: &[f64], b: Branch) -> (f64, f64) {
    torque[b.start..=b.end]
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &t| {
            (lo.min(t), hi.max(t))
        })
}

/// The angle at which branch `b` reaches zero torque from the side of
/// `sign` (+1: from T > 0), extrapolated from its last two rows there
/// whose torques differ.
fn zero_from_side(torque: &[f64], angle: &[f64], b: Branch, sign: f64) -> Result<f64, String> {
    let rows: Vec<usize> = (b.start..=b.end)
        .filter(|&i| torque[i] * sign > 0.0)
        .collect();
    // Along the branch the side's rows come first (the unloading branch
    // falls from T > 0, the loading branch rises from T < 0): the last two
    // of them are the nearest to the crossing.
    let side = if sign > 0.0 { "positive" } else { "negative" };
    let &last = rows
        .last()
        .ok_or_else(|| format!("a branch of the loop has no row at {side} torque"))?;
    // The exact zero, if the next row lands on it.
    if last < b.end && torque[last + 1] == 0.0 {
        return Ok(angle[last + 1]);
    }
    let prev = rows
        .iter()
        .rev()
        .skip(1)
        .copied()
        .find(|&i| torque[i] != torque[last])
        .ok_or_else(|| format!("a branch of the loop has a single row at {side} torque"))?;
    let w = (0.0 - torque[last]) / (torque[prev] - torque[last]);
    Ok(angle[last] + w * (angle[prev] - angle[last]))
}

/// Least-squares slope dT/dtheta over the rows of `b` with lo <= T <= hi.
fn slope(
    torque: &[f64],
    angle: &[f64],
    b: Branch,
    lo: f64,
    hi: f64,
) -> Result<(f64, usize), String> {
    let rows: Vec<usize> = (b.start..=b.end)
        .filter(|&i| torque[i] >= lo && torque[i] <= hi)
        .collect();
    if rows.len() < 2 {
        return Err(format!(
            "fewer than two rows with torque in [{lo:.6e}, {hi:.6e}]: write the result more densely (--interval)"
        ));
    }
    let n = rows.len() as f64;
    let mx = rows.iter().map(|&i| angle[i]).sum::<f64>() / n;
    let my = rows.iter().map(|&i| torque[i]).sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for &i in &rows {
        let dx = angle[i] - mx;
        sxy += dx * (torque[i] - my);
        sxx += dx * dx;
    }
    if sxx == 0.0 {
        return Err(format!(
            "the angle does not move while the torque goes from {lo:.6e} to {hi:.6e}"
        ));
    }
    Ok((sxy / sxx, rows.len()))
}

/// The angle of branch `b` at torque `t`, interpolated between the rows
/// that bracket it (the branch's torque is monotone).
fn angle_at(torque: &[f64], angle: &[f64], b: Branch, t: f64) -> Result<f64, String> {
    for i in b.start..b.end {
        let (a, c) = (torque[i], torque[i + 1]);
        if (a <= t && t <= c) || (c <= t && t <= a) {
            if a == c {
                return Ok(angle[i]);
            }
            let w = (t - a) / (c - a);
            return Ok(angle[i] + w * (angle[i + 1] - angle[i]));
        }
    }
    Err(format!("a branch of the loop does not pass torque {t:.6e}"))
}

/// The indicators as the command prints them.
pub fn report(ind: &Indicators, torque: &str, angle: &str) -> String {
    format!(
        "hysteresis of `{angle}` against `{torque}`, rated torque {tr}\n\
         torsional stiffness  K+ {kp:.6e}  K- {kn:.6e}  mean {km:.6e}  (torque per arcmin; fits over {np} and {nn} rows, 66-100% of rated)\n\
         lost motion          {lm:.6e} arcmin  (median curve at +-3% of rated)\n\
         backlash             {bl:.6e} arcmin  (width of the loop at zero torque)\n\
         offset               {off:.6e} arcmin  (subtracted: the mean of the zero-torque angles)\n",
        tr = ind.rated_torque,
        kp = ind.stiffness_positive,
        kn = ind.stiffness_negative,
        km = ind.stiffness_mean,
        np = ind.fit_rows.0,
        nn = ind.fit_rows.1,
        lm = ind.lost_motion,
        bl = ind.backlash,
        off = ind.offset,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Eq. 25's five stages, rated torque tr, each stage `n` rows.
    fn sequence(tr: f64, n: usize) -> Vec<f64> {
        let mut t = Vec::new();
        for stage in 0..5 {
            for i in 0..n {
                let s = i as f64 / n as f64;
                t.push(match stage {
                    0 => tr * s,
                    1 => tr * (1.0 - s),
                    2 => -tr * s,
                    3 => -tr * (1.0 - s),
                    _ => tr * s,
                });
            }
        }
        t.push(tr);
        t
    }

    #[test]
    fn runs_are_found_by_direction_and_width() {
        let t = sequence(10.0, 4);
        // Stages 2-3 fall from row 4 (+10) to row 12 (-10); stages 4-5
        // rise from row 12 to the end.
        let down = widest_run(&t, -1.0).expect("falls");
        assert_eq!((down.start, down.end), (4, 12));
        let up = widest_run(&t, 1.0).expect("rises");
        assert_eq!((up.start, up.end), (12, 20));
    }

    #[test]
    fn a_loop_that_does_not_reach_the_rated_torque_is_refused() {
        let t = sequence(10.0, 20);
        let a = t.clone();
        let e = indicators(&t, &a, 20.0).expect_err("short loop");
        assert!(e.contains("does not reach the rated torque"), "{e}");
        let e = indicators(&[0.0, 1.0, 2.0], &[0.0, 1.0, 2.0], 1.0).expect_err("no unloading");
        assert!(e.contains("never falls"), "{e}");
    }
}
