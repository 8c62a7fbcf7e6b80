#!/usr/bin/env python3
"""The regimes of the U-joint with clearance (examples/ujoint_clearance.rmo,
seed 004) as the clearance C grows: impacts per forcing period at steady
state, the Poincare section at the forcing period (its spread, and the
period it repeats with), and the growth of a 1e-9 rad/s perturbation of the
initial input speed. Prints a Markdown table; with --figures DIR also draws
the seed's Figures 6 and 7 (phase portraits) for C = 0, 0.05, 10, 50 um,
and for the irregular motion at 600 um, with `rmoc plot`.

Usage: python3 benches/ujoint/regimes.py [--rmoc target/release/rmoc]
           [--figures DIR] [-p NAME=VALUE ...] [--clearances C1,C2,...]
-p changes a parameter of the example in every run (the sections follow
Omega if it is changed); --clearances replaces the list of C (in m).
Plain Python (no numpy): it reads rmoc's CSV results itself.
"""

import argparse
import bisect
import csv
import math
import os
import re
import subprocess
import tempfile

MODEL = "examples/ujoint_clearance.rmo"
OMEGA = 100.0
PERIOD = 2 * math.pi / OMEGA
CLEARANCES = [0, 0.05e-6, 10e-6, 50e-6, 100e-6, 200e-6, 400e-6, 600e-6, 1e-3]


PARAMETERS = []  # -p NAME=VALUE pairs given on the command line


def simulate(rmoc, c, stop, out, extra=()):
    args = [rmoc, "simulate", MODEL, "-p", f"C={c!r}", "--stop-time", str(stop),
            "--stats", "-o", out, *PARAMETERS, *extra]
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    impacts = re.search(r"impacts (\d+)", done.stderr)
    return int(impacts.group(1)) if impacts else 0


def read(path):
    with open(path, newline="") as f:
        rows = csv.reader(f)
        names = next(rows)
        cols = {n: [] for n in names}
        for row in rows:
            for n, v in zip(names, row):
                cols[n].append(float(v))
    return cols


def at(cols, name, rate, t):
    """Cubic Hermite interpolation of column `name` with derivative column
    `rate` (linear interpolation would be off by (Omega dt)^2/8 = 1e-5)."""
    times = cols["time"]
    i = min(max(bisect.bisect_left(times, t), 1), len(times) - 1)
    t0, t1 = times[i - 1], times[i]
    h = t1 - t0
    s = (t - t0) / h
    y0, y1 = cols[name][i - 1], cols[name][i]
    d0, d1 = cols[rate][i - 1] * h, cols[rate][i] * h
    return ((2 * s**3 - 3 * s**2 + 1) * y0 + (s**3 - 2 * s**2 + s) * d0
            + (-2 * s**3 + 3 * s**2) * y1 + (s**3 - s**2) * d1)


def section(cols, start, stop):
    k = math.ceil(start / PERIOD)
    points = []
    while k * PERIOD <= stop:
        t = k * PERIOD
        points.append((at(cols, "phi1c", "w1c", t), at(cols, "w1c", "der(w1c)", t) / OMEGA))
        k += 1
    return points


def amplitude(cols, start):
    return max(abs(p) for t, p in zip(cols["time"], cols["phi1c"]) if t >= start)


def period_of(points, amp, limit=8):
    """The smallest p with point k + p = point k (to 1e-3 A: stick-slip
    transitions are quantized to the step, which scatters the points of a
    periodic orbit by about 3e-5 A) over the last half."""
    half = points[len(points) // 2:]
    for p in range(1, limit + 1):
        if all(math.dist(half[i], half[i + p]) < 1e-3 * amp for i in range(len(half) - p)):
            return p
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rmoc", default="target/release/rmoc")
    ap.add_argument("--figures")
    ap.add_argument("-p", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--clearances")
    a = ap.parse_args()
    global OMEGA, PERIOD, CLEARANCES
    for p in a.p:
        PARAMETERS.extend(["-p", p])
        name, _, value = p.partition("=")
        if name.strip() == "Omega":
            OMEGA = float(value)
            PERIOD = 2 * math.pi / OMEGA
    if a.clearances:
        CLEARANCES = [float(c) for c in a.clearances.split(",")]
    tmp = tempfile.mkdtemp()
    print("| C (um) | impacts per period | Poincare section | spread / A | perturbation at t = 3-4 s / A |")
    print("|---|---|---|---|---|")
    for c in CLEARANCES:
        base, pert = os.path.join(tmp, "a.csv"), os.path.join(tmp, "b.csv")
        early = simulate(a.rmoc, c, 2, os.path.join(tmp, "e.csv"), ["--interval", "1e-2"])
        late = simulate(a.rmoc, c, 4, base, ["--interval", "1e-4"])
        simulate(a.rmoc, c, 4, pert, ["--interval", "1e-4", "-p", "w1_start=1e-9"])
        ca, cb = read(base), read(pert)
        amp = amplitude(ca, 2.0)
        points = section(ca, 2.0, 4.0)
        mean = (sum(p[0] for p in points) / len(points), sum(p[1] for p in points) / len(points))
        spread = max(math.dist(p, mean) for p in points) / amp
        apart = max(math.dist(p, q) for p, q in zip(section(ca, 3.0, 4.0), section(cb, 3.0, 4.0))) / amp
        p = period_of(points, amp)
        kind = f"period-{p}" if p else "irregular"
        per_period = (late - early) / (2.0 / PERIOD)
        print(f"| {c * 1e6:g} | {per_period:.1f} | {kind} | {spread:.1e} | {apart:.1e} |")
    if a.figures:
        os.makedirs(a.figures, exist_ok=True)
        # One forcing period of the seed's four clearances; ten of the
        # irregular motion at 600 um.
        for c, periods in [(0, 1), (0.05e-6, 1), (10e-6, 1), (50e-6, 1), (600e-6, 10)]:
            out = os.path.join(tmp, "f.csv")
            simulate(a.rmoc, c, 2, out, ["--interval", "1e-5"])
            tag = f"{c * 1e6:g}um"
            for fig, y, x in [("fig6", "w1c", "phi1c"), ("fig7", "dDelta", "Delta")]:
                subprocess.run([a.rmoc, "plot", out, y, "--x", x, "--from", str(2 - periods * PERIOD),
                                "--title", f"C = {c * 1e6:g} um: ({x}, {y})",
                                "-o", os.path.join(a.figures, f"{fig}_{tag}.svg")], check=True)


if __name__ == "__main__":
    main()
