#!/usr/bin/env python3
"""Post-processing of examples/gear_whine.rmo's results (seed 003's figures).

  whine.py sweep UP DOWN [--out PREFIX]
      The RMS of the oscillating DTE against the mesh frequency for an up and
      a down sweep in one plot (PREFIX.png and PREFIX.svg; the paper's Figs.
      8-9), and the features of the curves as JSON on standard output: the
      primary peak (the run-up's largest response over 2000-3410 Hz, where a
      softening resonance jumps onto its upper branch), the down sweep's
      largest response (where it leaves that branch), the band below the
      primary peak where the sweeps differ by 2x or more (coexisting
      solutions), the second and third peaks. The RMS is taken
      per window of `--cycles` mesh cycles of the `dte` column when the
      result has it densely (rows at least 8 per mesh cycle), else the
      model's own running RMS `dteRms`.
  whine.py steady RESULT [--out PREFIX] [--from T]
      A steady segment (rows from T on): the DTE and the force of each tooth
      pair over time, and the DTE's spectrum (Hann window) against multiples
      of the mesh frequency (the paper's Figs. 10-13), and the fraction of
      each mesh cycle with every pair unloaded, as JSON.
  whine.py troughs RESULT [--bin HZ] [--teeth Z]
      The two troughs of the mesh force in each mesh cycle (issue 17,
      acceptance 3: at fn/2 the paper's upper branch loses contact twice a
      cycle), from a densely written result with `time`, `fm`, `phiNominal`
      and `pair.Fmesh` (`--model BranchRun ... --outputs pair.Fmesh fm
      phiNominal --interval 5e-6`): per bin of --bin Hz of the mesh
      frequency, the share of each cycle with the mesh unloaded, the
      deepest trough, the second (the least force at least a quarter of a
      cycle from the deepest) and the number of separate unloaded intervals
      a cycle, as JSON lines.

Results are rmoc's CSV or MAT files. Needs NumPy and matplotlib (SciPy for
MAT files).
"""

import argparse
import csv
import json
import math
import sys

import numpy as np


def load(path):
    """Columns of an rmoc result as a dict of arrays."""
    if path.endswith(".mat"):
        import scipy.io

        m = scipy.io.loadmat(path, chars_as_strings=False)
        # The binTrans layout: `name` holds the names' characters column by
        # column; data_1 (parameters) and data_2 (trajectories) hold one
        # variable per row; dataInfo's rows 0-1 are the matrix (1 or 2) and
        # the signed row.
        names = ["".join(c).rstrip("\x00 ") for c in np.asarray(m["name"]).T]
        info = np.asarray(m["dataInfo"])
        d1, d2 = np.asarray(m["data_1"]), np.asarray(m["data_2"])
        times = d2.shape[1]
        out = {}
        for k, name in enumerate(names):
            which, col = int(info[0, k]), int(info[1, k])
            if which == 1:
                out[name] = np.full(times, np.sign(col) * d1[abs(col) - 1, 0])
            else:
                out[name] = np.sign(col) * d2[abs(col) - 1, :]
        return out
    with open(path) as f:
        rows = list(csv.reader(f))
    head, data = rows[0], np.array(rows[1:], dtype=float)
    return {name: data[:, k] for k, name in enumerate(head)}


def windowed_rms(t, x, fm, cycles):
    """RMS of x minus its mean per window of `cycles` mesh cycles, at each
    window's mean mesh frequency."""
    phase = np.concatenate([[0], np.cumsum(0.5 * (fm[1:] + fm[:-1]) * np.diff(t))])
    k = np.floor(phase / cycles).astype(int)
    f_out, rms = [], []
    for w in range(k[0], k[-1]):
        m = k == w
        if m.sum() < 8:
            continue
        seg = x[m]
        f_out.append(fm[m].mean())
        rms.append(math.sqrt(np.mean((seg - seg.mean()) ** 2)))
    return np.array(f_out), np.array(rms)


def rms_curve(r, cycles):
    t, fm = r["time"], r["fm"]
    dt = np.median(np.diff(t))
    if dt > 0 and dt * fm.max() <= 1 / 8:
        return windowed_rms(t, r["dte"], fm, cycles)
    # The model's running RMS, after its window has filled (five time
    # constants of `window`).
    settled = t >= t[0] + 5 * float(r.get("window", np.array([0.01]))[0])
    fm, rms = fm[settled], r["dteRms"][settled]
    order = np.argsort(fm)
    return fm[order], rms[order]


def on_grid(f, y, grid):
    order = np.argsort(f)
    return np.interp(grid, f[order], y[order])


def features(fu, ru, fd, rd):
    grid = np.arange(max(fu.min(), fd.min()), min(fu.max(), fd.max()), 1.0)
    up, down = on_grid(fu, ru, grid), on_grid(fd, rd, grid)
    both = np.maximum(up, down)

    def peak(lo, hi, curve=both):
        m = (grid >= lo) & (grid <= hi)
        if not m.any():
            return None, None  # a shortened sweep that does not reach it
        i = np.argmax(curve[m])
        return float(grid[m][i]), float(curve[m][i])

    if len(grid) == 0:
        sys.exit("whine.py: the two sweeps share no mesh frequencies")
    # The primary resonance is where the run-up meets it: with a softening
    # jump the run-up's largest response is at its jump onto the upper
    # branch, which then stretches below it (the down sweep follows it to
    # its own jump, where the down sweep's largest response is: reported
    # apart). The larger of the two curves would put the "peak" at the foot
    # of a softening upper branch, below the band of coexistence.
    primary = peak(2000, 3410, up)
    down_primary = peak(2000, 3410, down)
    # The band just below the primary peak where the down sweep is 2x the up.
    ratio = down / np.maximum(up, 1e-30)
    band = []
    if primary[0] is not None:
        i = int(np.searchsorted(grid, primary[0]))
        # Walk down from the peak to the first point of the 2x region, then to its end.
        while i > 0 and ratio[i] < 2 and grid[i] > primary[0] - 200:
            i -= 1
        top = i
        while i > 0 and ratio[i] >= 2:
            i -= 1
        if ratio[top] >= 2:
            band = [float(grid[i + 1]), float(grid[top])]
    worst = int(np.argmax(ratio))
    second, third = peak(1100, 1600), peak(750, 1050)
    return {
        "largest_ratio_down_up": float(ratio[worst]),
        "largest_ratio_at_hz": float(grid[worst]),
        "primary_peak_hz": primary[0],
        "primary_peak_rms_m": primary[1],
        "down_sweep_peak_hz": down_primary[0],
        "down_sweep_peak_rms_m": down_primary[1],
        "coexistence_band_hz": band,
        "coexistence_width_hz": (band[1] - band[0]) if band else 0.0,
        "second_peak_hz": second[0],
        "second_peak_rms_m": second[1],
        "third_peak_hz": third[0],
        "third_peak_rms_m": third[1],
    }


def sweep(args):
    up, down = load(args.up), load(args.down)
    fu, ru = rms_curve(up, args.cycles)
    fd, rd = rms_curve(down, args.cycles)
    result = features(fu, ru, fd, rd)
    json.dump(result, sys.stdout, indent=1)
    print()
    if args.out:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8, 4.5))
        ax.plot(fu, ru * 1e6, lw=0.8, label="run-up")
        ax.plot(fd, rd * 1e6, lw=0.8, label="run-down")
        ax.set_xlabel("mesh frequency (Hz)")
        ax.set_ylabel("RMS of the oscillating DTE (µm)")
        ax.set_title("DTE over the speed sweeps (cf. Vecchiato et al. 2024, Fig. 8)")
        ax.legend()
        ax.grid(alpha=0.3)
        fig.tight_layout()
        for ext in ("png", "svg"):
            fig.savefig(f"{args.out}.{ext}", dpi=150)


def unloaded_fraction(t, forces, fm):
    """Per mesh cycle, the fraction of its time with every pair unloaded,
    and the number of separate unloaded intervals."""
    period = 1 / fm
    loaded = np.any(forces > 0, axis=0)
    k = np.floor((t - t[0]) / period).astype(int)
    fractions, intervals = [], []
    for c in range(k[0], k[-1]):
        m = k == c
        if m.sum() < 8:
            continue
        off = ~loaded[m]
        fractions.append(off.mean())
        # Count the starts of unloaded runs, cyclically.
        starts = np.sum(off & ~np.roll(off, 1))
        intervals.append(int(starts))
    return fractions, intervals


def output_rows(t, columns):
    """The rows of the output grid: an event writes two rows at one time
    (before and after it), between the grid's rows; both are dropped, so
    that what remains is sampled uniformly in time."""
    if len(t) < 2:
        sys.exit("whine.py: fewer than two rows to analyse (check --from)")
    if np.any(np.diff(t) < 0):
        sys.exit("whine.py: the result's times go back; not an rmoc result?")
    same = np.diff(t) == 0
    event = np.append(same, False) | np.append(False, same)
    t = t[~event]
    if len(t) < 2:
        sys.exit("whine.py: fewer than two rows besides events to analyse")
    return t, [c[~event] for c in columns]


def steady(args):
    r = load(args.result)
    m = r["time"] >= args.start
    fm = float(np.median(r["fm"][m]))
    names = [k for k in sorted(r) if k.startswith("toothForce[")]
    # An event (a reconnection) writes two rows at one time: the analysis
    # takes the output grid's rows alone, so that the spectrum's
    # frequencies and the unloaded fractions are per time, not per row (the
    # extra rows had shifted the spectrum by their share).
    t, columns = output_rows(r["time"][m], [r["dte"][m]] + [r[k][m] for k in names])
    dte, forces = columns[0], np.array(columns[1:])
    fractions, intervals = unloaded_fraction(t, forces, fm)
    x = dte - dte.mean()
    w = np.hanning(len(x))
    spectrum = np.abs(np.fft.rfft(x * w)) * 2 / w.sum()
    freq = np.fft.rfftfreq(len(x), np.median(np.diff(t)))
    harmonics = {}
    for h in (0.5, 1, 2, 3, 4):
        i = int(np.argmin(abs(freq - h * fm)))
        harmonics[str(h)] = float(spectrum[max(i - 2, 0) : i + 3].max())
    result = {
        "mesh_frequency_hz": fm,
        "dte_rms_m": float(math.sqrt(np.mean(x**2))),
        "unloaded_fraction_mean": float(np.mean(fractions)) if fractions else 0.0,
        "unloaded_fraction_min": float(np.min(fractions)) if fractions else 0.0,
        "unloaded_fraction_max": float(np.max(fractions)) if fractions else 0.0,
        "unloaded_intervals_per_cycle": sorted(set(intervals)),
        "harmonic_amplitudes_m": harmonics,
    }
    json.dump(result, sys.stdout, indent=1)
    print()
    if args.out:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (a1, a2, a3) = plt.subplots(3, 1, figsize=(8, 9))
        a1.plot((t - t[0]) * 1e3, dte * 1e6, lw=0.8)
        a1.set_xlabel("time (ms)")
        a1.set_ylabel("DTE (µm)")
        a1.set_title(f"steady run at f_m = {fm:.0f} Hz (cf. Figs. 10-13)")
        for k, f in enumerate(forces):
            a2.plot((t - t[0]) * 1e3, f, lw=0.8, label=f"tooth pair {k + 1}")
        a2.set_xlabel("time (ms)")
        a2.set_ylabel("tooth force (N)")
        a2.legend()
        a3.plot(freq / fm, spectrum * 1e6, lw=0.8)
        a3.set_xlim(0, 5)
        a3.set_xlabel("frequency / mesh frequency")
        a3.set_ylabel("DTE amplitude (µm)")
        for a in (a1, a2, a3):
            a.grid(alpha=0.3)
        fig.tight_layout()
        for ext in ("png", "svg"):
            fig.savefig(f"{args.out}.{ext}", dpi=150)


def troughs(args):
    r = load(args.result)
    t, fm, force = r["time"], r["fm"], r["pair.Fmesh"]
    cycle = np.floor(r["phiNominal"] * args.teeth / (2 * math.pi)).astype(int)
    bins = {}
    # Whole cycles only: the first and the last are cut.
    for c in np.unique(cycle)[1:-1]:
        m = cycle == c
        f = force[m]
        n = len(f)
        if n < 16:
            continue
        off = f <= 0
        # Starts of unloaded runs, cyclically.
        starts = np.flatnonzero(off & ~np.roll(off, 1))
        intervals = len(starts)
        # The deepest trough: the longest unloaded run, else the least
        # force; the second, the least force a quarter of a cycle or more
        # from it.
        first, length = int(np.argmin(f)), 1
        for s0 in starts:
            run = int(np.argmin(np.roll(off, -s0))) if not off.all() else n
            if run > length:
                first, length = int(s0), run
        u = (np.arange(n) - first) % n
        apart = np.where(u < length, 0, np.minimum(u - (length - 1), n - u)) / n
        key = round(float(fm[m].mean()) / args.bin) * args.bin
        bins.setdefault(key, []).append((off.mean(), f[first], f[apart >= 0.25].min(), intervals))
    for key in sorted(bins):
        a = np.array(bins[key])
        print(json.dumps({
            "fm_hz": key,
            "cycles": len(a),
            "unloaded_share": round(float(a[:, 0].mean()), 4),
            "deepest_n": round(float(a[:, 1].mean()), 1),
            "second_trough_n": round(float(a[:, 2].mean()), 1),
            "second_trough_min_n": round(float(a[:, 2].min()), 1),
            "intervals_per_cycle": round(float(a[:, 3].mean()), 2),
        }))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    s = sub.add_parser("sweep")
    s.add_argument("up")
    s.add_argument("down")
    s.add_argument("--out")
    s.add_argument("--cycles", type=float, default=20)
    s.set_defaults(run=sweep)
    d = sub.add_parser("steady")
    d.add_argument("result")
    d.add_argument("--out")
    d.add_argument("--from", dest="start", type=float, default=0.0)
    d.set_defaults(run=steady)
    tr = sub.add_parser("troughs")
    tr.add_argument("result")
    tr.add_argument("--bin", type=float, default=10.0)
    tr.add_argument("--teeth", type=int, default=50)
    tr.set_defaults(run=troughs)
    args = p.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
