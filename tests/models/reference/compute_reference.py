#!/usr/bin/env python3
"""Computes the reference values of expected.json for the models in this folder.

usage: python3 compute_reference.py [--write]

Needs numpy, scipy (1.17 was used) and mpmath, e.g.
  python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install scipy numpy mpmath
Takes about three minutes on one core. Prints every cross-check; with --write it
also (re)writes expected.json beside this script.

Three kinds of numbers come out:
  * the reference values: SciPy's Radau at rtol 1e-12 with tiny per-component
    atol, integrated segment by segment so that every checked time is a step
    end point (not a dense-output value); closed forms where they exist;
  * cross-checks: a second SciPy method (BDF and/or LSODA, and Radau at
    rtol 1e-13), and the published values (Hairer & Wanner; Mazzia &
    Magherini's Test Set for IVP Solvers);
  * a "proxy" run that estimates what rmoc can meet: SciPy's BDF with
    kappa = 0 (plain BDF, the method of rmoc's src/solve/bdf.rs, which follows
    the same Shampine & Reichelt scheme), at the model's experiment Tolerance,
    with atol = Tolerance*nominal as rmoc sets it, sampled on rmoc's output
    grid. Every test tolerance below is at least 10x the proxy's error.
"""
import json
import math
import os
import sys

import mpmath
import numpy as np
import scipy
from scipy.integrate import solve_ivp
from scipy.integrate._ivp.bdf import BDF, MAX_ORDER

HERE = os.path.dirname(os.path.abspath(__file__))


class BDF0(BDF):
    """SciPy's BDF (an NDF) with kappa = 0: the plain BDF of rmoc."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.alpha = self.gamma.copy()
        self.error_const = 1 / np.arange(1, MAX_ORDER + 2)


def chain(f, jac, y0, times, method, rtol, atol, events=None):
    """Integrates from 0 through each of `times`, restarting at each, so every
    requested value is a step end point. Returns {t: y}, event times, nfev."""
    y, t, out, nfev = np.array(y0, float), 0.0, {}, 0
    evs = [[] for _ in (events or [])]
    for T in times:
        s = solve_ivp(f, (t, T), y, method=method, rtol=rtol, atol=atol, jac=jac, events=events)
        if not s.success:
            raise RuntimeError(f"{method} failed on [{t}, {T}]: {s.message}")
        for k in range(len(evs)):
            evs[k] += [te for te in s.t_events[k] if not evs[k] or te > evs[k][-1] + 1e-9]
        y, t = s.y[:, -1], T
        out[T] = y.copy()
        nfev += s.nfev
    return out, evs, nfev


def proxy(f, jac, y0, stop, tol, nominal, interval=None):
    """rmoc stand-in: plain BDF, rtol = tol, atol = tol*nominal, output grid as
    rmoc's (500 intervals or the experiment Interval)."""
    n = int(round(stop / interval)) if interval else 500
    grid = np.array([stop * k / n for k in range(n + 1)])
    atol = [tol * v for v in nominal]
    s = solve_ivp(f, (0, stop), y0, method=BDF0, rtol=tol, atol=atol, jac=jac, max_step=stop, t_eval=grid)
    assert s.success, s.message
    return s


def rel(a, b):
    return np.abs(np.asarray(a) / np.asarray(b) - 1)


def line(name, v):
    print(f"  {name:<34s}" + " ".join(f"{x: .16e}" for x in np.atleast_1d(v)))


REPORT = {}
CASES = []


def check(var, at, value, proxy_err, rtol=None, atol=None):
    tol = (atol or 0.0) + (rtol or 0.0) * abs(value)
    margin = tol / abs(proxy_err) if proxy_err else math.inf
    flag = "" if margin >= 10 else "   <-- margin below 10"
    print(f"  check {var}({at:g}) = {value:.16e}  tol {tol:.1e}  proxy err {abs(proxy_err):.1e}  margin {margin:.0f}{flag}")
    c = {"var": var, "at": float(at), "value": float(value)}
    if rtol is not None:
        c["rtol"] = rtol
    if atol is not None:
        c["atol"] = atol
    c["proxy_err"] = float(f"{abs(proxy_err):.2g}")
    return c


def invariant(expr, atol, proxy_worst):
    margin = atol / proxy_worst if proxy_worst else math.inf
    flag = "" if margin >= 10 else "   <-- margin below 10"
    print(f"  invariant |{expr}| <= {atol:.0e}  proxy worst {proxy_worst:.1e}  margin {margin:.0f}{flag}")
    return {"invariant": expr, "atol": atol, "proxy_err": float(f"{proxy_worst:.2g}")}


# ---------------------------------------------------------------------------
# a. Robertson
# ---------------------------------------------------------------------------
def rob_f(t, y):
    y1, y2, y3 = y
    return [-0.04 * y1 + 1e4 * y2 * y3, 0.04 * y1 - 1e4 * y2 * y3 - 3e7 * y2 * y2, 3e7 * y2 * y2]


def rob_j(t, y):
    y1, y2, y3 = y
    return [[-0.04, 1e4 * y3, 1e4 * y2], [0.04, -1e4 * y3 - 6e7 * y2, -1e4 * y2], [0, 6e7 * y2, 0]]


def robertson():
    print("== Robertson")
    T = [40.0, 4e10, 1e11]
    tiny = [1e-20, 1e-24, 1e-20]
    radau, _, n1 = chain(rob_f, rob_j, [1, 0, 0], T, "Radau", 1e-12, tiny)
    bdf, _, n2 = chain(rob_f, rob_j, [1, 0, 0], T, "BDF", 1e-12, tiny)
    # LSODA stops with repeated convergence failures past t ~ 2e9 at these
    # tolerances, so it checks t = 40 only.
    lsoda, _, _ = chain(rob_f, rob_j, [1, 0, 0], [40.0], "LSODA", 1e-12, [1e-16, 1e-22, 1e-16])
    hw40 = [0.7158270687, 9.185534764e-6, 0.2841637457]  # Hairer & Wanner, 10 digits
    mazzia = [0.2083340149701255e-7, 0.8333360770334713e-13, 0.9999999791665050]  # Test Set, t = 1e11
    for t in T:
        line(f"Radau t={t:g}", radau[t])
        line(f"BDF   t={t:g}", bdf[t])
        print(f"    Radau vs BDF max rel diff {rel(bdf[t], radau[t]).max():.1e};  |sum - 1| = {abs(radau[t].sum() - 1):.1e}")
    line("LSODA t=40", lsoda[40.0])
    print(f"    Radau vs LSODA at 40 max rel diff {rel(lsoda[40.0], radau[40.0]).max():.1e}")
    print(f"    Radau vs Hairer-Wanner at 40 (10 digits) max rel diff {rel(radau[40.0], hw40).max():.1e}")
    print(f"    Radau vs Test Set at 1e11 max rel diff {rel(radau[1e11], mazzia).max():.1e}")
    # the peak of y2, quoted in robertson.rmo
    s = solve_ivp(rob_f, (0, 1), [1, 0, 0], method="Radau", rtol=1e-10, atol=tiny, jac=rob_j, dense_output=True)
    tt = np.geomspace(1e-6, 1, 20001)
    y2 = s.sol(tt)[1]
    print(f"    y2 peaks at {y2.max():.3e} near t = {tt[y2.argmax()]:.2e}")
    REPORT["robertson"] = dict(radau=radau, bdf=bdf)

    nominal = [1, 1e-10, 1]
    entries = []
    for stop, run in ((40.0, {"stop_time": 40.0}), (4e10, None)):
        p = proxy(rob_f, rob_j, [1, 0, 0], stop, 1e-8, nominal)
        err = p.y[:, -1] - radau[stop]
        print(f"  proxy (plain BDF, Tolerance 1e-8, nominal {nominal}) to {stop:g}: {p.nfev} f-evals, rel err",
              " ".join(f"{x:.1e}" for x in rel(p.y[:, -1], radau[stop])))
        if stop == 40.0:
            checks = [check(f"y{i + 1}", stop, radau[stop][i], err[i], rtol=1e-6) for i in range(3)]
        else:
            checks = [check("y1", stop, radau[stop][0], err[0], rtol=1e-3),
                      check("y2", stop, radau[stop][1], err[1], rtol=1e-3),
                      check("y3", stop, radau[stop][2], err[2], atol=1e-10)]
        checks.append(invariant("y1 + y2 + y3 - 1", 1e-10, np.abs(p.y.sum(0) - 1).max()))
        checks.append(invariant("min(y2, 0)", 1e-15, abs(min(p.y[1].min(), 0.0))))
        e = {"file": "robertson.rmo", "model": "Robertson"}
        if run:
            e["run"] = run
        e["checks"] = checks
        e["source"] = ("SciPy %s solve_ivp Radau, rtol 1e-12, atol (1e-20, 1e-24, 1e-20), restarted at t = 40; "
                       "SciPy BDF at the same tolerances agrees to %.1e relative (t = 40: %.1e), LSODA at t = 40 "
                       "to %.1e. At t = 40 it matches Hairer & Wanner's 10-digit values (0.7158270687, "
                       "9.185534764e-6, 0.2841637457) to %.1e; the same run continued to t = 1e11 matches the Test "
                       "Set for IVP Solvers reference (2.083340149701255e-8, 8.333360770334713e-14, "
                       "0.9999999791665050) to %.1e relative."
                       % (scipy.__version__, max(rel(bdf[t], radau[t]).max() for t in T[:2]),
                          rel(bdf[40.0], radau[40.0]).max(), rel(lsoda[40.0], radau[40.0]).max(),
                          rel(radau[40.0], hw40).max(), rel(radau[1e11], mazzia).max()))
        entries.append(e)
    entries[0]["note"] = ("Run with --stop-time 40 (the model's StopTime is 4e10, whose output grid does not "
                          "hold t = 40). rtol 1e-6: the plain-BDF proxy at Tolerance 1e-8 is within 2.3e-8.")
    entries[1]["note"] = ("At t = 4e10 y2 = 2.1e-13 is slaved to y1 (y2 ~ 0.04*y1/1e4), so both carry the same "
                          "relative error; the proxy's is 1e-5 with y2(nominal = 1e-10). rtol 1e-3 leaves 100x. "
                          "With y2(nominal = 1e-5) the proxy's y1 and y2 are 11 % off here.")
    CASES.extend(entries)


# ---------------------------------------------------------------------------
# b. Van der Pol, mu = 1000 (and the scaled form)
# ---------------------------------------------------------------------------
MU = 1000.0


def vdp_f(t, y):
    return [y[1], MU * (1 - y[0] ** 2) * y[1] - y[0]]


def vdp_j(t, y):
    return [[0, 1], [-2 * MU * y[0] * y[1] - 1, MU * (1 - y[0] ** 2)]]


def ev_down(t, y):
    return y[0]


ev_down.direction = -1


def ev_up(t, y):
    return y[0]


ev_up.direction = 1


def ev_max(t, y):
    return y[1]


ev_max.direction = -1


def grid_crossings(t, x):
    """Downward zero crossings of x, by linear interpolation between rows."""
    i = np.where((x[:-1] > 0) & (x[1:] <= 0))[0]
    return t[i] + (t[i + 1] - t[i]) * x[i] / (x[i] - x[i + 1])


def vanderpol():
    print("== Van der Pol, mu = 1000")
    T = [2000.0, 3000.0, 5000.0]
    evs_list = [ev_down, ev_up, ev_max]
    r12, e12, n = chain(vdp_f, vdp_j, [2, 0], T, "Radau", 1e-12, [1e-14, 1e-14], evs_list)
    r13, e13, _ = chain(vdp_f, vdp_j, [2, 0], T, "Radau", 1e-13, [1e-15, 1e-15], evs_list)
    ls, els, _ = chain(vdp_f, vdp_j, [2, 0], T, "LSODA", 1e-12, [1e-14, 1e-14], evs_list)
    mazzia = [0.1706167732170469e1, -0.8928097010248125e-3]  # Test Set VDPOLM, t = 2000
    for t in T[:2]:
        line(f"Radau 1e-12 t={t:g}", r12[t])
        line(f"Radau 1e-13 t={t:g}", r13[t])
        line(f"LSODA 1e-12 t={t:g}", ls[t])
    print(f"    Radau 1e-12 vs Test Set (VDPOLM) at 2000: abs diff {np.abs(r12[2000.0] - mazzia)}")
    down, up, mx = e12
    mx = [t for t in mx if t > 1.0]  # t = 0 is itself a maximum
    print("    downward zero crossings of y1:", [f"{t:.10f}" for t in down])
    print("    upward zero crossings of y1:  ", [f"{t:.10f}" for t in up])
    print("    local maxima of y1 (t > 0):   ", [f"{t:.10f}" for t in mx])
    periods = list(np.diff(down)) + list(np.diff(up)) + list(np.diff(mx))
    P = float(np.diff(down)[0])
    P13 = float(np.diff(e13[0])[0])
    Pls = float(np.diff(els[0])[0])
    print(f"    period: {P:.10f} (all successive differences within {np.ptp(periods):.1e}); "
          f"Radau 1e-13 {P13:.10f}; LSODA {Pls:.10f}")
    alpha = 2.338107410459767  # first zero of Ai(-x)
    asym = MU * (3 - 2 * math.log(2)) + 3 * alpha * MU ** (-1 / 3) - 2 / 3 * math.log(MU) / MU
    print(f"    Dorodnitsyn asymptotic period to O(ln(mu)/mu): {asym:.6f}; difference {P - asym:.1e} (the O(1/mu) term)")
    ymax = solve_ivp(vdp_f, (mx[0] - 1, mx[0]), chain(vdp_f, vdp_j, [2, 0], [mx[0] - 1], "Radau", 1e-12, [1e-14, 1e-14])[0][mx[0] - 1],
                     method="Radau", rtol=1e-12, atol=1e-14, jac=vdp_j).y[0, -1]
    print(f"    y1 at its first maximum after t = 0: {ymax:.12f}")
    REPORT["vdp"] = dict(r12=r12, down=down, up=up, mx=mx, P=P)

    p = proxy(vdp_f, vdp_j, [2, 0], 3000.0, 1e-8, [1, 1], interval=0.1)
    i2000 = int(np.argmin(np.abs(p.t - 2000.0)))
    assert p.t[i2000] == 2000.0
    gc = grid_crossings(p.t, p.y[0])
    gm = grid_crossings(p.t, p.y[1])
    gm = gm[gm > 1.0]
    print(f"  proxy (plain BDF, Tolerance 1e-8, Interval 0.1): {p.nfev} f-evals; crossings from the grid "
          f"{gc}, maxima {gm}")
    checks = [check("y1", 2000.0, r12[2000.0][0], p.y[0, i2000] - r12[2000.0][0], atol=1e-4),
              check("y2", 2000.0, r12[2000.0][1], p.y[1, i2000] - r12[2000.0][1], atol=1e-7),
              check("y1", 3000.0, r12[3000.0][0], p.y[0, -1] - r12[3000.0][0], atol=1e-4),
              check("y2", 3000.0, r12[3000.0][1], p.y[1, -1] - r12[3000.0][1], atol=1e-7)]
    perr = (gc[1] - gc[0]) - P
    cerr = np.abs(gc[:2] - down[:2]).max()
    merr = abs(gm[0] - mx[0])
    print(f"  period from grid crossings: err {perr:.1e}; crossing times err {cerr:.1e}; first max err {merr:.1e}")
    CASES.append({
        "file": "vanderpol.rmo", "model": "VanDerPol", "checks": checks,
        "period": {"value": P, "atol": 0.1, "proxy_err": float(f"{abs(perr):.2g}"),
                   "how": "difference between the first two downward zero crossings of y1 (t = 807.08 and "
                          "2421.49), each found by linear interpolation between output rows at Interval 0.1. "
                          "The jumps through zero take milliseconds, so interpolation between rows 0.1 apart "
                          "can be off by up to ~0.07 at each crossing: atol 0.1 is the grid's resolution. A "
                          "crossing located on the integrator's dense output would allow atol 0.01 (the proxy's "
                          "dense-output period is 2.2e-3 off)."},
        "zero_crossings_down": [float(t) for t in down[:2]],
        "zero_crossings_up": [float(up[0])],
        "first_maximum": {"value": float(mx[0]), "y1": float(ymax), "atol": 0.1,
                          "how": "first t > 0 at which y1 has a local maximum (y2 crosses 0 downward at the end "
                                 "of the upward jump), y1 = %.6f there. It comes %.3f s before one period: the "
                                 "start (2, 0) lies that far past the cycle's maximum on the slow branch. From the "
                                 "output rows (Interval 0.1) the proxy finds it %.0e off." % (ymax, P - mx[0], merr)},
        "crossing_atol": 0.1,
        "source": ("SciPy %s solve_ivp Radau, rtol 1e-12, atol 1e-14, restarted at t = 2000 and 3000, zero "
                   "crossings by its event location. Radau at rtol 1e-13 agrees to %.1e (values) and %.1e "
                   "(period); LSODA at rtol 1e-12 to %.1e. At t = 2000 the Test Set for IVP Solvers (problem "
                   "VDPOLM) gives y1 = 1.706167732170469, y2 = -8.928097010248125e-4: difference %.1e and %.1e. "
                   "The period matches Dorodnitsyn's asymptotic formula mu*(3 - 2 ln 2) + 3*2.3381*mu^(-1/3) "
                   "- (2/3) ln(mu)/mu = %.4f up to its O(1/mu) term (%.1e)."
                   % (scipy.__version__, max(rel(r13[t], r12[t]).max() for t in T[:2]), abs(P13 - P),
                      max(rel(ls[t], r12[t]).max() for t in T[:2]),
                      abs(r12[2000.0][0] - mazzia[0]), abs(r12[2000.0][1] - mazzia[1]), asym, P - asym)),
        "note": ("The Interval 0.1 of the model puts t = 2000 on the output grid. atol 1e-4 on y1 and 1e-7 on y2: "
                 "the proxy is within 4.5e-6 and 9e-9. On the slow branches y1' ~ 1e-3, so the values test the "
                 "phase to ~0.1 s."),
    })


def vdp_scaled():
    print("== Van der Pol, Hairer-Wanner scaled form, eps = 1e-6")
    eps = 1.0 / MU ** 2

    def f(t, y):
        return [y[1], ((1 - y[0] ** 2) * y[1] - y[0]) / eps]

    def j(t, y):
        return [[0, 1], [(-2 * y[0] * y[1] - 1) / eps, (1 - y[0] ** 2) / eps]]

    r, _, _ = chain(f, j, [2, 0], [2.0], "Radau", 1e-12, [1e-14, 1e-12])
    r13, _, _ = chain(f, j, [2, 0], [2.0], "Radau", 1e-13, [1e-15, 1e-13])
    mazzia = [0.1706167732170483e1, -0.8928097010247975e0]  # Test Set VDPOL, t = 2
    line("Radau 1e-12 t=2", r[2.0])
    line("Radau 1e-13 t=2", r13[2.0])
    classic = REPORT["vdp"]["r12"][2000.0] * [1, MU]
    line("classic at 2000, y2 scaled by mu", classic)
    print(f"    vs Test Set (VDPOL) abs diff {np.abs(r[2.0] - mazzia)}; vs classic form {np.abs(r[2.0] - classic)}")
    # the equation as the brief wrote it (eps = 1/mu): a different oscillator
    def f1(t, y):
        return [y[1], MU * ((1 - y[0] ** 2) * y[1] - y[0])]
    s = solve_ivp(f1, (0, 10), [2, 0], method="Radau", rtol=1e-10, atol=1e-12, events=[ev_down])
    print(f"    (eps = 1/mu instead: period {np.diff(s.t_events[0]).mean():.4f})")
    p = proxy(f, j, [2, 0], 2.0, 1e-8, [1, 1])
    err = p.y[:, -1] - r[2.0]
    print(f"  proxy (plain BDF, Tolerance 1e-8): {p.nfev} f-evals")
    checks = [check("y1", 2.0, r[2.0][0], err[0], atol=1e-5),
              check("y2", 2.0, r[2.0][1], err[1], atol=1e-5)]
    CASES.append({
        "file": "vanderpol_scaled.rmo", "model": "VanDerPolScaled", "checks": checks,
        "source": ("SciPy %s solve_ivp Radau, rtol 1e-12, atol (1e-14, 1e-12); Radau at rtol 1e-13 agrees to "
                   "%.1e. The Test Set for IVP Solvers (problem VDPOL) gives y1 = 1.706167732170483, y2 = "
                   "-0.8928097010247975: difference %.1e and %.1e. Equals VanDerPol at t = 2000 with y2 "
                   "multiplied by mu (difference %.1e)."
                   % (scipy.__version__, rel(r13[2.0], r[2.0]).max(), abs(r[2.0][0] - mazzia[0]),
                      abs(r[2.0][1] - mazzia[1]), np.abs(r[2.0] - classic).max())),
        "note": "atol 1e-5: the proxy at Tolerance 1e-8 is within 2e-7 (y1) and 2e-7 (y2).",
    })


# ---------------------------------------------------------------------------
# c. HIRES
# ---------------------------------------------------------------------------
def hires_f(t, y):
    y1, y2, y3, y4, y5, y6, y7, y8 = y
    r = 280 * y6 * y8
    return [-1.71 * y1 + 0.43 * y2 + 8.32 * y3 + 0.0007, 1.71 * y1 - 8.75 * y2,
            -10.03 * y3 + 0.43 * y4 + 0.035 * y5, 8.32 * y2 + 1.71 * y3 - 1.12 * y4,
            -1.745 * y5 + 0.43 * y6 + 0.43 * y7, -r + 0.69 * y4 + 1.71 * y5 - 0.43 * y6 + 0.69 * y7,
            r - 1.81 * y7, -r + 1.81 * y7]


def hires_j(t, y):
    J = np.zeros((8, 8))
    y6, y8 = y[5], y[7]
    J[0, :3] = [-1.71, 0.43, 8.32]
    J[1, :2] = [1.71, -8.75]
    J[2, 2:5] = [-10.03, 0.43, 0.035]
    J[3, 1:4] = [8.32, 1.71, -1.12]
    J[4, 4:7] = [-1.745, 0.43, 0.43]
    J[5, 3:8] = [0.69, 1.71, -0.43 - 280 * y8, 0.69, -280 * y6]
    J[6, 5:8] = [280 * y8, -1.81, 280 * y6]
    J[7, 5:8] = [-280 * y8, 1.81, -280 * y6]
    return J


def hires():
    print("== HIRES")
    T = 321.8122
    y0 = [1, 0, 0, 0, 0, 0, 0, 0.0057]
    mazzia = np.array([0.7371312573325668e-3, 0.1442485726316185e-3, 0.5888729740967575e-4,
                       0.1175651343283149e-2, 0.2386356198831331e-2, 0.6238968252742796e-2,
                       0.2849998395185769e-2, 0.2850001604814231e-2])
    res = {}
    for m, rtol, atol in (("Radau", 1e-12, 1e-18), ("BDF", 1e-12, 1e-18), ("LSODA", 1e-12, 1e-18)):
        res[m] = chain(hires_f, hires_j, y0, [T], m, rtol, atol)[0][T]
        line(f"{m} 1e-12", res[m])
        print(f"    max rel diff vs Test Set {rel(res[m], mazzia).max():.1e}")
    ref = res["Radau"]
    p = proxy(hires_f, hires_j, y0, T, 1e-8, [1e-3] * 8)
    err = p.y[:, -1] - ref
    print(f"  proxy (plain BDF, Tolerance 1e-8, nominal 1e-3): {p.nfev} f-evals")
    checks = [check(f"y{i + 1}", T, ref[i], err[i], rtol=1e-5) for i in range(8)]
    CASES.append({
        "file": "hires.rmo", "model": "Hires", "checks": checks,
        "source": ("SciPy %s solve_ivp Radau, rtol 1e-12, atol 1e-18. Agrees with the Test Set for IVP Solvers "
                   "reference (RADAU5 with 1e-19 unit roundoff, 16 digits) to %.1e relative; SciPy BDF and "
                   "LSODA at rtol 1e-12 agree to %.1e."
                   % (scipy.__version__, rel(ref, mazzia).max(),
                      max(rel(res["BDF"], ref).max(), rel(res["LSODA"], ref).max()))),
        "published": [float(v) for v in mazzia],
        "note": "rtol 1e-5: the proxy at Tolerance 1e-8 with nominal 1e-3 is within 5e-7 relative.",
    })


# ---------------------------------------------------------------------------
# d. Harmonic oscillator
# ---------------------------------------------------------------------------
def oscillator():
    print("== Harmonic oscillator")
    w = 2 * 3.141592653589793
    # exact for the double w: x = cos(100 w), v = -w sin(100 w)
    mpmath.mp.dps = 40
    wm = mpmath.mpf(w)
    x100m = mpmath.cos(100 * wm)
    x100 = float(x100m)
    v100 = float(-wm * mpmath.sin(100 * wm))
    print(f"  closed form with the double w: x(100) = {x100!r}, v(100) = {v100!r}")

    def f(t, y):
        return [y[1], -w * w * y[0]]

    def j(t, y):
        return [[0, 1], [-w * w, 0]]

    p = proxy(f, j, [1, 0], 100.0, 1e-8, [1, 1])
    energy = np.abs(p.y[0] ** 2 + (p.y[1] / w) ** 2 - 1).max()
    phase = np.abs(p.y[0] - np.cos(w * p.t)).max()
    print(f"  proxy (plain BDF, Tolerance 1e-8): {p.nfev} f-evals")
    checks = [check("x", 100.0, 1.0, p.y[0, -1] - x100, atol=1e-3),
              check("v", 100.0, 0.0, p.y[1, -1] - v100, atol=2e-3),
              invariant("x**2 + (v/6.283185307179586)**2 - 1", 2e-3, energy),
              invariant("x - math.cos(6.283185307179586*time)", 1e-3, phase)]
    CASES.append({
        "file": "harmonic_oscillator.rmo", "model": "HarmonicOscillator", "checks": checks,
        "source": ("Closed form x = cos(w t), v = -w sin(w t). With w the double 2*3.141592653589793 "
                   "(2*pi - 2.4e-16), x(100) = 1 - %.0e and v(100) = %.1e, i.e. 1 and 0." % (1 - x100m, v100)),
        "note": ("BDF is dissipative: after 100 periods the proxy at Tolerance 1e-8 has lost 1.1e-4 of the "
                 "energy and is 5.3e-5 off in x, 4e-5 in v. The invariants are checked on every output row."),
    })


# ---------------------------------------------------------------------------
# e. Bouncing ball
# ---------------------------------------------------------------------------
def ball():
    print("== Bouncing ball")
    mpmath.mp.dps = 40
    e, g, h0 = mpmath.mpf("0.8"), mpmath.mpf("9.81"), mpmath.mpf(1)
    t1 = mpmath.sqrt(2 * h0 / g)
    v1 = g * t1  # impact speed
    times = [t1 * (1 + 2 * e * (1 - e ** (n - 1)) / (1 - e)) for n in range(1, 13)]
    for n, t in enumerate(times[:10], 1):
        print(f"  impact {n:2d}: t = {mpmath.nstr(t, 17)}")
    print(f"  impacts 11, 12 at {mpmath.nstr(times[10], 8)}, {mpmath.nstr(times[11], 8)}; "
          f"Zeno time 9*t1 = {mpmath.nstr(t1 * (1 + e) / (1 - e), 8)}")
    stop = mpmath.mpf("3.6")
    assert times[9] < stop < times[10]
    u10 = e ** 10 * v1
    dt = stop - times[9]
    h_end = u10 * dt - g / 2 * dt ** 2
    v_end = u10 - g * dt
    print(f"  at t = 3.6: h = {mpmath.nstr(h_end, 17)}, v = {mpmath.nstr(v_end, 17)}, 10 impacts")

    # proxy: plain BDF between impacts, impact located on the dense output
    gf = 9.81

    def f(t, y):
        return [y[1], -gf]

    def j(t, y):
        return [[0, 1], [0, 0]]

    def hit(t, y):
        return y[0]

    hit.terminal, hit.direction = True, -1
    t, y, found, hmin = 0.0, [1.0, 0.0], [], 0.0
    while t < 3.6:
        s = solve_ivp(f, (t, 3.6), y, method=BDF0, rtol=1e-8, atol=1e-8, jac=j, max_step=3.6, events=[hit])
        if s.status == 1:
            te, ye = s.t_events[0][0], s.y_events[0][0]
            found.append(te)
            t, y = te, [ye[0], -0.8 * ye[1]]
            hmin = min(hmin, ye[0])
        else:
            t, y = 3.6, s.y[:, -1]
    terr = max(abs(a - float(b)) for a, b in zip(found, times))
    print(f"  proxy (plain BDF, Tolerance 1e-8): {len(found)} impacts, worst impact time err {terr:.1e}")
    checks = [{"var": "bounces", "at": 3.6, "value": 10, "atol": 0},
              check("h", 3.6, float(h_end), y[0] - float(h_end), atol=1e-5),
              check("v", 3.6, float(v_end), y[1] - float(v_end), atol=2e-5),
              invariant("min(h, 0)", 1e-6, abs(hmin))]
    CASES.append({
        "file": "bouncing_ball.rmo", "model": "BouncingBall", "checks": checks,
        "impact_times": [float(mpmath.nstr(t, 17)) for t in times[:10]],
        "impact_times_17_digits": [mpmath.nstr(t, 17) for t in times[:10]],
        "impact_atol": 1e-6, "impact_proxy_err": float(f"{terr:.2g}"),
        "source": ("Closed form (mpmath, 40 digits): t1 = sqrt(2 h0/g); the rebound speed after impact k is "
                   "e^k*sqrt(2 g h0), the flight after it lasts 2 e^k t1, so t_n = t1 (1 + 2 e (1 - e^(n-1))/"
                   "(1 - e)); after the 10th impact h = u (t - t10) - g/2 (t - t10)^2, v = u - g (t - t10), "
                   "u = e^10 sqrt(2 g h0)."),
        "note": ("The impact times are where bounces steps up in the result (rmoc writes a row just before and "
                 "one just after each event). atol 1e-6 on them, 1e-5 on h and 2e-5 on v (an impact found "
                 "dt late leaves v off by g*dt): free fall is a quadratic, "
                 "so a BDF of order 2 or more is exact between impacts and the errors come from the restarts at "
                 "order 1 and from locating the crossing; the proxy's worst is given."),
    })


def main():
    print(f"numpy {np.__version__}, scipy {scipy.__version__}, mpmath {mpmath.__version__}")
    robertson()
    vanderpol()
    vdp_scaled()
    hires()
    oscillator()
    ball()
    if "--write" in sys.argv:
        path = os.path.join(HERE, "expected.json")
        with open(path, "w") as fh:
            json.dump(CASES, fh, indent=1)
            fh.write("\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
