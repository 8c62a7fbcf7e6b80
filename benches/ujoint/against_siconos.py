#!/usr/bin/python3
"""The regimes of the U-joint with clearance in rmoc and in Siconos, side by
side: is what rmoc finds at each clearance (examples/ujoint_clearance.rmo)
a property of the equations of motion, or of rmoc's time-stepper?

For each clearance C and friction coefficient mu, both tools run the model
to 4 s at h = 1e-5 s from rest, and a second time with the input shaft
started at 1e-9 rad/s. From a CSV row per step, the same code measures:
impacts per forcing period over [2, 4] s (steps in which a wall's force
turns positive after a step without one), the Poincare section at the
forcing period over [2, 4] s (the period it repeats with, to 1e-3 A, and
its spread over the orbit amplitude A in phi1c), and the largest distance
over [3, 4] s between the sections of the two runs.

Siconos applies no tangential restitution, so rmoc runs with eT = 0 here;
siconos_ujoint.py says how the model is written for Siconos.

    /usr/bin/python3 benches/ujoint/against_siconos.py [--rmoc target/release/rmoc]

Not part of CI: about 15 minutes on the 2-core machine (Siconos steps from
Python, about 70 s per 4 s run). Prints a Markdown table.
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from regimes import MODEL, OMEGA, PERIOD, period_of, read  # noqa: E402

CASES = [(10e-6, 0.0), (50e-6, 0.0), (600e-6, 0.0), (10e-6, 0.8), (50e-6, 0.8), (600e-6, 0.8)]
STOP = 4.0


def run_rmoc(rmoc, c, mu, w1, out):
    subprocess.run([rmoc, "simulate", MODEL, "-p", f"C={c!r}", "-p", f"mu={mu!r}", "-p", "eT=0",
                    "-p", f"w1_start={w1!r}", "--stop-time", str(STOP), "--interval", "1e-5",
                    "-o", out], check=True, capture_output=True)
    return read(out)


def run_siconos(c, mu, w1, out):
    subprocess.run([sys.executable, os.path.join(HERE, "siconos_ujoint.py"), out, "--C", repr(c),
                    "--mu", repr(mu), "--stop", str(STOP), "--w1", repr(w1), "--from", "1.9"],
                   check=True, capture_output=True)
    return read(out)


def at(cols, name, t):
    """Linear interpolation between the step ends around t."""
    times = cols["time"]
    lo, hi = 0, len(times) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if times[mid] <= t:
            lo = mid
        else:
            hi = mid
    s = (t - times[lo]) / (times[hi] - times[lo])
    return (1 - s) * cols[name][lo] + s * cols[name][hi]


def section(cols, start, stop):
    k = math.ceil(start / PERIOD)
    points = []
    while k * PERIOD <= stop:
        t = k * PERIOD
        points.append((at(cols, "phi1c", t), at(cols, "w1c", t) / OMEGA))
        k += 1
    return points


def impacts(cols, start):
    count = 0
    for wall in ("NL", "NR"):
        before = False
        for t, n in zip(cols["time"], cols[wall]):
            now = n > 0.0
            if now and not before and t > start:
                count += 1
            before = now
    return count


def measure(base, pert):
    amp = max(abs(p) for t, p in zip(base["time"], base["phi1c"]) if t >= 2.0)
    points = section(base, 2.0, STOP)
    mean = tuple(sum(p[i] for p in points) / len(points) for i in range(2))
    spread = max(math.dist(p, mean) for p in points) / amp
    apart = max(math.dist(p, q) for p, q in zip(section(base, 3.0, STOP), section(pert, 3.0, STOP))) / amp
    period = period_of(points, amp)
    per_period = impacts(base, 2.0) / ((STOP - 2.0) / PERIOD)
    return amp, per_period, f"period-{period}" if period else "irregular", spread, apart


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rmoc", default="target/release/rmoc")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    print("| C (um) | mu | tool | A (mrad) | impacts per period | Poincare section | spread / A "
          "| perturbation at t = 3-4 s / A |")
    print("|---|---|---|---|---|---|---|---|")
    for c, mu in CASES:
        for tool in ("rmoc", "Siconos"):
            runs = []
            for w1 in (0.0, 1e-9):
                out = os.path.join(tmp, f"{tool}.{w1!r}.csv")
                runs.append(run_rmoc(a.rmoc, c, mu, w1, out) if tool == "rmoc" else run_siconos(c, mu, w1, out))
            amp, per, kind, spread, apart = measure(*runs)
            print(f"| {c * 1e6:g} | {mu:g} | {tool} | {amp * 1e3:.4f} | {per:.1f} | {kind} | {spread:.1e} "
                  f"| {apart:.1e} |", flush=True)


if __name__ == "__main__":
    main()
