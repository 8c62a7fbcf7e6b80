"""The eigenvalues `rmoc linearize` gives for the 4-inertia chain
(tests/models/linearize/chain4.rmo) against NumPy's on the hand-assembled
mass, damping and stiffness matrices (issue 22, acceptance 2).

    rmoc linearize tests/models/linearize/chain4.rmo -o lin.json
    python benches/linearize/chain_numpy.py lin.json [--check 1e-9]

The model: inertias J, spring-dampers (c, d) from the housing to the first
inertia and between neighbours. M = diag(J); K and C tridiagonal; the state
matrix [[0, I], [-M^-1 K, -M^-1 C]]. Prints the largest relative distance
between the two sets of eigenvalues (matched by sorting) and exits 1 above
--check.
"""

import argparse
import json
import sys

import numpy as np

J = np.array([0.02, 0.05, 0.03, 0.08])
c = np.array([4000.0, 2500.0, 3000.0, 1500.0])
d = np.array([0.8, 0.3, 0.5, 0.2])


def assembled(coeff):
    """The tridiagonal matrix of springs (or dampers) coeff: element k joins
    inertia k-1 (the housing for k = 0) and inertia k."""
    n = len(coeff)
    m = np.zeros((n, n))
    for k in range(n):
        m[k, k] += coeff[k]
        if k > 0:
            m[k - 1, k - 1] += coeff[k]
            m[k - 1, k] -= coeff[k]
            m[k, k - 1] -= coeff[k]
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lin")
    ap.add_argument("--check", type=float)
    args = ap.parse_args()
    with open(args.lin) as f:
        modes = json.load(f)["modes"]
    got = np.array([complex(m["re"], m["im"]) for m in modes])
    n = len(J)
    Minv = np.diag(1.0 / J)
    A = np.block([[np.zeros((n, n)), np.eye(n)], [-Minv @ assembled(c), -Minv @ assembled(d)]])
    want = np.linalg.eigvals(A)
    key = lambda z: (round(z.imag, 6), z.real)
    got, want = sorted(got, key=key), sorted(want, key=key)
    worst = max(abs(g - w) / abs(w) for g, w in zip(got, want))
    for w in want:
        if w.imag > 0:
            print(f"  {abs(w) / (2 * np.pi):10.4f} Hz, damping {-w.real / abs(w):.6f}")
    print(f"chain eigenvalues: largest relative difference from NumPy {worst:.2e}")
    if args.check is not None and not worst <= args.check:
        print(f"above the limit {args.check:g}")
        sys.exit(1)


if __name__ == "__main__":
    main()
