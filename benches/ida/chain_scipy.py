#!/usr/bin/env python3
"""An independent reference for the chain benchmark (chain.c, p2_chain.py): SciPy.

    python3 chain_scipy.py N [--method DOP853|Radau|BDF|LSODA] [--rtol 1e-12] [--atol 1e-14]

Integrates the same ODE as chain.c on [0, 1] with scipy.integrate.solve_ivp
and prints the final phi[1..N] and w[1..N] at t = 1 with 17 significant digits,
in the "name value" format of chain.c (compare with `chain.sh --reference N`).

    phi_i' = w_i
    J w_1' = 10 sin(2 pi 5 t) - T_1,   J w_i' = T_{i-1} - T_i  (i = 2..N)
    T_i = c (phi_i - phi_{i+1}) + d (w_i - w_{i+1}),  T_N = c phi_N + d w_N

with J = 0.01, c = 1e4, d = 1, everything at rest at t = 0. The default method
is DOP853, an explicit Runge-Kutta method, which shares nothing with IDA's BDF;
the implicit methods get the analytic (sparse, linear) Jacobian.
Needs numpy and scipy (e.g. python3 -m venv /tmp/venv && /tmp/venv/bin/pip install scipy).
"""
import argparse
import math
import sys

import numpy as np
import scipy
import scipy.sparse as sp
from scipy.integrate import solve_ivp

J, C, D = 0.01, 1.0e4, 1.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int)
    ap.add_argument("--method", default="DOP853", choices=["DOP853", "RK45", "Radau", "BDF", "LSODA"])
    ap.add_argument("--rtol", type=float, default=1e-12)
    ap.add_argument("--atol", type=float, default=1e-14)
    a = ap.parse_args()
    n = a.n
    if n < 1:
        sys.exit("N must be positive")

    # y = (phi_1..phi_N, w_1..w_N)
    def f(t, y):
        phi, w = y[:n], y[n:]
        T = np.empty(n)
        T[:-1] = C * (phi[:-1] - phi[1:]) + D * (w[:-1] - w[1:])
        T[-1] = C * phi[-1] + D * w[-1]
        left = np.empty(n)
        left[0] = 10.0 * math.sin(2.0 * math.pi * 5.0 * t)
        left[1:] = T[:-1]
        return np.concatenate((w, (left - T) / J))

    # the Jacobian is constant: d(w')/d(phi, w) is the stiffness / damping matrix
    # of a chain fixed to the ground at its end, over J
    k = np.full(n, 2.0)
    k[0] = 1.0
    lap = sp.diags([-np.ones(n - 1), k, -np.ones(n - 1)], [-1, 0, 1], format="csr")
    jac = sp.bmat([[None, sp.identity(n)], [-(C / J) * lap, -(D / J) * lap]], format="csc")

    kw = {}
    if a.method in ("Radau", "BDF", "LSODA"):
        kw["jac"] = jac.toarray() if a.method == "LSODA" else jac
    sol = solve_ivp(f, (0.0, 1.0), np.zeros(2 * n), method=a.method, rtol=a.rtol, atol=a.atol, **kw)
    if not sol.success:
        sys.exit(f"solve_ivp failed: {sol.message}")
    y = sol.y[:, -1]
    print(f"name     value at t = {sol.t[-1]:.17g}")
    for i in range(n):
        print(f"phi[{i + 1}] {y[i]:.17g}")
    for i in range(n):
        print(f"w[{i + 1}] {y[n + i]:.17g}")
    print(f"SciPy {scipy.__version__} solve_ivp {a.method} (rtol {a.rtol:g}, atol {a.atol:g}): "
          f"function evaluations {sol.nfev}, Jacobian evaluations {sol.njev}, LU decompositions {sol.nlu}")


if __name__ == "__main__":
    main()
