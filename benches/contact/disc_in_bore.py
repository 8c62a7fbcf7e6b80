#!/usr/bin/env python3
"""An independent check of Contact.CircleCircle (issue 18, acceptance 6).

A disc (mass m, inertia J, radius r0) in a fixed bore (radius |r1|),
pressed against it by a force that ramps up to F0 over `ramp` seconds in
the direction `angle`, starting with a sideways speed and a spin. The
contact, written here from the paper (Miao et al. 2026, seed 000):

- gap inside a bore (eq. 30): g = |r1| - (d + r0), d the distance of the
  centres; the normal on the disc (eq. 31) points from its centre to the
  bore's; the contact point is the middle of the overlap;
- normal force (eq. 11): k (-g)^(10/9) + dc max(0, -dg/dt) while g < 0;
- friction (eq. 12): -mu fn vt / sqrt(vt^2 + vreg^2), vt the sliding speed
  of the contact points including the disc's spin (eqs. 32-33).

Integrated with SciPy's DOP853 at rtol 1e-12, restarted where the gap
crosses zero (the damping term jumps there) and at the end of the ramp.

    disc_in_bore.py RESULT.csv [--check TOL]

RESULT.csv is `rmoc simulate benches/contact/disc_in_bore.rmo -o
RESULT.csv`. Prints, for x, y, phi and w, the largest difference over the
result's rows relative to the largest magnitude of that variable; with
--check, exits 1 if one exceeds TOL.
"""

import argparse
import csv
import math
import sys

import numpy as np
from scipy.integrate import solve_ivp

# The model's data (disc_in_bore.rmo).
M, J = 0.2, 1e-5
R0, R1 = 0.01, -0.0102
K, DC, MU, VREG = 2e9, 2000.0, 0.1, 1e-3
F0, RAMP, ANGLE = 200.0, 0.05, 0.3
STOP = 0.1
Y0 = [0.0, 0.0, 0.0, 0.0, 0.05, 30.0]  # x, y, phi, vx, vy, w


def gap(y):
    d = math.sqrt(max(y[0] ** 2 + y[1] ** 2, 1e-300))
    return -R1 - (d + R0)


def rhs(t, y):
    x, yy, _, vx, vy, w = y
    d = math.sqrt(max(x * x + yy * yy, 1e-300))
    g = -R1 - (d + R0)
    # Normal on the disc: towards the bore's centre (the origin).
    nx, ny = -x / d, -yy / d
    tx, ty = -ny, nx
    px, py = x - (R0 + g / 2) * nx, yy - (R0 + g / 2) * ny
    # Velocity of the disc's material point at the contact point; the
    # bore does not move.
    vax, vay = vx - w * (py - yy), vy + w * (px - x)
    rx, ry = -vax, -vay  # bore's point relative to the disc's
    dg = -(rx * nx + ry * ny)
    vt = rx * tx + ry * ty
    fn = K * (-g) ** (10 / 9) + DC * max(0.0, -dg) if g < 0 else 0.0
    ft = -MU * fn * vt / math.sqrt(vt * vt + VREG * VREG)
    fx, fy = fn * nx - ft * tx, fn * ny - ft * ty
    tau = (px - x) * fy - (py - yy) * fx
    s = F0 * min(t / RAMP, 1.0)
    return [vx, vy, w, (fx + s * math.cos(ANGLE)) / M, (fy + s * math.sin(ANGLE)) / M, tau / J]


def contact_event(t, y):
    return gap(y)


contact_event.terminal = True


def solve(times):
    """The solution at `times` (sorted), restarting at each zero of the gap."""
    out = np.empty((len(times), 6))
    t, y = 0.0, np.array(Y0, dtype=float)
    k = 0
    for end in (RAMP, STOP):
        while t < end:
            sel = [s for s in times[k:] if t <= s <= end]
            sol = solve_ivp(rhs, (t, end), y, method="DOP853", rtol=1e-12, atol=1e-15,
                            events=contact_event, dense_output=True)
            t1 = sol.t[-1]
            for s in sel:
                if s <= t1:
                    out[k] = sol.sol(s)
                    k += 1
            t, y = t1, sol.y[:, -1].copy()
            if sol.status == 1:
                # Step past the crossing so the event does not fire again at once.
                nudge = min(1e-12, end - t)
                sol2 = solve_ivp(rhs, (t, t + nudge), y, method="DOP853", rtol=1e-12, atol=1e-15)
                t, y = sol2.t[-1], sol2.y[:, -1].copy()
    while k < len(times):
        out[k] = y
        k += 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result")
    ap.add_argument("--check", type=float)
    a = ap.parse_args()
    with open(a.result) as f:
        rows = list(csv.reader(f))
    names = rows[0]
    data = np.array(rows[1:], dtype=float)
    col = {n: i for i, n in enumerate(names)}
    times = data[:, col["time"]]
    # At an event rmoc writes two rows at the same time; keep the last.
    keep = np.append(times[1:] != times[:-1], True)
    data, times = data[keep], times[keep]
    ref = solve(list(times))
    worst = 0.0
    for i, name in enumerate(["disc.x", "disc.y", "disc.phi", "disc.vx", "disc.vy", "disc.w"]):
        got = data[:, col[name]]
        scale = np.max(np.abs(ref[:, i]))
        diff = np.max(np.abs(got - ref[:, i])) / scale
        worst = max(worst, diff)
        print(f"{name:8s} largest difference {diff:.2e} of max |value| {scale:.4e}")
    print(f"worst {worst:.2e}")
    if a.check is not None and not worst <= a.check:
        print(f"exceeds {a.check:g}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
