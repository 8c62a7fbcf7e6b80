#!/usr/bin/env python3
"""Reference rebound of penalty_ball.rmo, pinned in tests/structural.rs.

usage: python3 penalty_ball.py     (needs numpy and scipy; 1.17 was used)

Free fall to the floor is exact (y = 1 - g t^2/2). The contact phase is
integrated by SciPy's Radau at rtol 1e-10 (atol 1e-14) up to the event
gap = 0 with gap' > 0, and cross-checked with DOP853 at rtol 1e-13.
"""
import math

from scipy.integrate import solve_ivp

M, K, D, G = 1.0, 1e8, 1e3, 9.81


def rhs(_t, s):
    gap, v = s
    f = K * max(0.0, -gap) ** (10.0 / 9.0) + D * max(0.0, -v) if gap < 0 else 0.0
    return [v, f / M - G]


def leaves(_t, s):
    return s[0]


leaves.terminal = True
leaves.direction = 1


def rebound(method, rtol, atol):
    t0 = math.sqrt(2.0 / G)
    # Start just inside the floor so that the event is the separation.
    eps = 1e-12
    v0 = -G * t0
    sol = solve_ivp(rhs, (t0 + eps, t0 + 0.01), [v0 * eps, v0 - G * eps], method=method,
                    rtol=rtol, atol=atol, events=leaves, dense_output=True)
    te = sol.t_events[0][0]
    ve = sol.y_events[0][0][1]
    return te, ve, sol.nfev


if __name__ == "__main__":
    ref = rebound("Radau", 1e-10, 1e-14)
    check = rebound("DOP853", 1e-13, 1e-16)
    print(f"contact at t = {math.sqrt(2.0 / G)!r}, v = {-math.sqrt(2.0 * G)!r}")
    print(f"Radau  rtol 1e-10: tRebound = {ref[0]!r}, vRebound = {ref[1]!r} ({ref[2]} evaluations)")
    print(f"DOP853 rtol 1e-13: tRebound = {check[0]!r}, vRebound = {check[1]!r}")
    print(f"relative differences: {abs(ref[0] / check[0] - 1):.1e}, {abs(ref[1] / check[1] - 1):.1e}")
