#!/usr/bin/env python3
"""An independent check of examples/gear_whine.rmo (issue 17, acceptance 4).

The lumped gear-whine equations integrated here by a short NumPy Newmark loop
written from the paper's equations (Vecchiato et al. 2024, seed 003): two
rigid gear bodies, the mesh along the line of action as tooth-pair springs
whose stiffness is read from the TVMS table (eqs. 6-7) and whose flanks
are apart by the separation table (relief, early contact), Rayleigh damping
(stiffness- and mass-proportional, eq. 14), compression only; the DTE
r_b (phi_p - phi_g) (eq. 3);
Newmark's average acceleration (eqs. 11-18, alpha = 1/4, delta = 1/2) at a
fixed step, each step's implicit equations solved by Newton's method to
round-off. The mesh turns at a constant mesh frequency.

  newmark.py RESULT.csv [--fm 1700] [--stop 0.05]

RESULT.csv is `rmoc simulate examples/gear_whine.rmo --model SteadyRun -p
fmSteady=FM -o RESULT.csv`; the script integrates the same 0.05 s and
prints the largest difference in DTE relative to the largest |DTE|.
"""

import argparse
import csv
import math
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, "..", "..", "examples", "gear_whine", "tvms.csv")
GAPS = os.path.join(HERE, "..", "..", "examples", "gear_whine", "gap.csv")

# The example's data (examples/gear_whine.rmo's header).
ZP = 50
RB = 3e-3 * ZP / 2 * math.cos(math.radians(20))
J = 0.0125
T = 150.0
K_LOAD = 3.3e8
# Rayleigh damping, 8% at 2650 Hz, all of it on the tooth pairs'
# stiffness (none on the bodies' inertia).
OMEGA = 2 * math.pi * 2650
MU = 2 * 0.08 / OMEGA
ETA = 0.0
H = 5e-6


def load(path):
    rows = [
        [float(x) for x in line.split(",")]
        for line in open(path)
        if line.strip() and not line.startswith("#")
    ]
    return np.array(rows)


_A = load(TABLE)
S, L_GRID, K = _A[1:, 0], _A[0, 1:], _A[1:, 1:]  # roll positions, torques, stiffness
_G = load(GAPS)
GAP_S, GAP = _G[:, 0], _G[:, 1]  # roll positions, unloaded separation of a pair


def separation(s):
    """Unloaded separation of a pair's flanks (relief, and beyond the path
    of contact the tip corner's approach), linear between the points."""
    return float(np.interp(s, GAP_S, GAP))


def pair_stiffness(s, load):
    """Bilinear in (s, torque), the torque held at the grid's ends; zero
    for a roll position outside the table (the pair is out of mesh)."""
    if s < S[0] or s > S[-1]:
        return 0.0
    load = min(max(load, L_GRID[0]), L_GRID[-1])
    i = min(np.searchsorted(S, s, side="right") - 1, len(S) - 2)
    j = min(np.searchsorted(L_GRID, load, side="right") - 1, len(L_GRID) - 2)
    u = (s - S[i]) / (S[i + 1] - S[i])
    v = (load - L_GRID[j]) / (L_GRID[j + 1] - L_GRID[j])
    return (
        (1 - u) * (1 - v) * K[i, j]
        + u * (1 - v) * K[i + 1, j]
        + (1 - u) * v * K[i, j + 1]
        + u * v * K[i + 1, j + 1]
    )


def accelerations(t, q, w, fm):
    """The equations of motion: angular accelerations of pinion and gear."""
    cycles = 2 * math.pi * fm / ZP * t * ZP / (2 * math.pi)
    z = cycles - math.floor(cycles)
    dte = RB * (q[0] - q[1])
    closing = RB * (w[0] - w[1])
    load = RB * K_LOAD * max(dte, 0.0)
    force = 0.0
    # Three pairs: the one entering early (roll position z - 1), the one
    # entering on the path (z) and the one leaving (z + 1).
    for pair in (-1, 0, 1):
        s = z + pair
        k = pair_stiffness(s, load)
        compression = dte - separation(s)
        if compression > 0:
            force += max(0.0, k * (compression + MU * closing))
    return np.array([(T - RB * force) / J - ETA * w[0], (-T + RB * force) / J - ETA * w[1]])


def newmark(fm, stop):
    q = np.array([T / (RB * K_LOAD) / (2 * RB), -T / (RB * K_LOAD) / (2 * RB)])
    w = np.zeros(2)
    a = accelerations(0.0, q, w, fm)
    times, dtes = [0.0], [RB * (q[0] - q[1])]
    steps = int(round(stop / H))
    for n in range(1, steps + 1):
        t = n * H
        a1 = a.copy()

        def residual(a1):
            q1 = q + H * w + H * H * (0.25 * a + 0.25 * a1)
            w1 = w + H * (0.5 * a + 0.5 * a1)
            return a1 - accelerations(t, q1, w1, fm)

        for _ in range(50):
            r = residual(a1)
            jac = np.empty((2, 2))
            for c in range(2):
                d = np.zeros(2)
                d[c] = 1e-6 * max(1.0, abs(a1[c]))
                jac[:, c] = (residual(a1 + d) - r) / d[c]
            step = np.linalg.solve(jac, -r)
            a1 = a1 + step
            if np.all(np.abs(step) <= 1e-13 * np.maximum(1.0, np.abs(a1))):
                break
        q = q + H * w + H * H * (0.25 * a + 0.25 * a1)
        w = w + H * (0.5 * a + 0.5 * a1)
        a = a1
        times.append(t)
        dtes.append(RB * (q[0] - q[1]))
    return np.array(times), np.array(dtes)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("result")
    p.add_argument("--fm", type=float, default=1700.0)
    p.add_argument("--stop", type=float, default=0.05)
    p.add_argument("--check", type=float, help="exit 1 unless the difference is below this")
    args = p.parse_args()
    t, dte = newmark(args.fm, args.stop)
    with open(args.result) as f:
        rows = list(csv.DictReader(f))
    tr = np.array([float(r["time"]) for r in rows])
    dr = np.array([float(r["dte"]) for r in rows])
    mine = np.interp(tr, t, dte)
    worst = np.max(np.abs(mine - dr)) / np.max(np.abs(dte))
    print(f"steps {len(t) - 1}, rows compared {len(tr)}, largest DTE difference / largest |DTE| = {worst:.3e}")
    if args.check is not None and not worst <= args.check:
        raise SystemExit(f"the DTE differs by {worst:.3e}, above {args.check:.1e}")


if __name__ == "__main__":
    main()
