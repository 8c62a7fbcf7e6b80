#!/usr/bin/env python3
"""rmoc against SciPy's BDF on the nonlinear heat-conduction grid of grid.py.

    python3 against_scipy.py N [N ...] [--reps 3] [--rmoc target/release/rmoc] [--form 2d|1d]
                             [--g0 1000] [--q0 N*N]

For each N: writes gridN.rmo (grid.py), times `rmoc simulate gridN.rmo -o out.csv`
as a whole process (time.perf_counter around subprocess.run), and times SciPy's
solve_ivp(method='BDF', rtol=1e-6, atol=1e-6) on the same ODE written with
NumPy, also as a whole process (this script started again in its --solve mode
with the same Python, so the NumPy/SciPy imports count), once with
jac_sparsity (finite differences on the grid's 5-point pattern) and once with
the analytic sparse Jacobian. Reports the best and the median of --reps runs,
the solve time alone (solve_ivp only), and the final values' differences:
rmoc vs SciPy, and each against a tight reference (SciPy Radau, rtol 1e-10,
atol 1e-12, analytic Jacobian).

Tolerances: rmoc uses rtol = Tolerance = 1e-6 and atol = Tolerance * nominal
= 1e-6 (no nominal given), so SciPy gets rtol = atol = 1e-6. Both integrate to
t = 1 and produce the 0.01 output grid (rmoc writes every variable to its CSV;
SciPy evaluates its dense output at the same 101 times and writes nothing).

Relative differences are taken over the cells whose reference value is at
least 1e-3 of the largest (far from the heated corner the temperature is
~1e-7, below the absolute tolerance); "max abs" is over all cells.

Needs numpy and scipy: python3 -m venv /tmp/venv && /tmp/venv/bin/pip install scipy,
then run this script with /tmp/venv/bin/python.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# --- the ODE in NumPy ---------------------------------------------------------
def make_problem(n, g0, q0, c=1.0):
    """f(t, y), the analytic sparse Jacobian jac(t, y) and the sparsity pattern.

    y[k] is T[i, j] with k = (i-1)*n + (j-1) (row-major, as T[i, j] in rmoc's CSV).
    """
    import numpy as np
    import scipy.sparse as sp

    idx = np.arange(n * n).reshape(n, n)
    # the edges a -> b: each row (a = (i, j), b = (i, j+1)), then each column
    a = np.concatenate((idx[:, :-1].ravel(), idx[:-1, :].ravel()))
    b = np.concatenate((idx[:, 1:].ravel(), idx[1:, :].ravel()))
    rows = np.concatenate((a, a, b, b))
    cols = np.concatenate((a, b, a, b))
    two_pi = 2.0 * np.pi

    def f(t, y):
        T = y.reshape(n, n)
        dT = np.zeros((n, n))
        # flows from (i, j) to (i, j+1) and from (i, j) to (i+1, j)
        m = 0.5 * (T[:, :-1] + T[:, 1:])
        Fx = g0 * (1.0 + 0.5 * m * m) * (T[:, :-1] - T[:, 1:])
        m = 0.5 * (T[:-1, :] + T[1:, :])
        Fy = g0 * (1.0 + 0.5 * m * m) * (T[:-1, :] - T[1:, :])
        dT[:, :-1] -= Fx
        dT[:, 1:] += Fx
        dT[:-1, :] -= Fy
        dT[1:, :] += Fy
        dT[0, 0] += q0 * (1.0 + np.sin(two_pi * t))
        return dT.ravel() / c

    def jac(t, y):
        ya, yb = y[a], y[b]
        m = 0.5 * (ya + yb)
        g = g0 * (1.0 + 0.5 * m * m)
        dg = 0.5 * g0 * m * (ya - yb)  # dG/dTa * (Ta - Tb) = dG/dTb * (Ta - Tb)
        fa = g + dg  # dF/dTa
        fb = -g + dg  # dF/dTb
        # dTa' = -F, dTb' = +F
        vals = np.concatenate((-fa, -fb, fa, fb)) / c
        return sp.csc_matrix((vals, (rows, cols)), shape=(n * n, n * n))

    sparsity = sp.csc_matrix((np.ones(rows.size), (rows, cols)), shape=(n * n, n * n))
    return f, jac, sparsity


def solve(n, g0, q0, method, rtol, atol, jac_mode):
    """solve_ivp on [0, 1], output grid 0.01; returns (final y, solve seconds, stats)."""
    import numpy as np
    from scipy.integrate import solve_ivp

    f, jac, sparsity = make_problem(n, g0, q0)
    kw = {"jac": jac} if jac_mode == "analytic" else {"jac_sparsity": sparsity}
    t_eval = np.linspace(0.0, 1.0, 101)
    t0 = time.perf_counter()
    sol = solve_ivp(f, (0.0, 1.0), np.zeros(n * n), method=method, rtol=rtol, atol=atol,
                    t_eval=t_eval, **kw)
    dt = time.perf_counter() - t0
    if not sol.success:
        raise RuntimeError(f"solve_ivp {method} failed: {sol.message}")
    stats = {"nfev": int(sol.nfev), "njev": int(sol.njev), "nlu": int(sol.nlu)}
    return sol.y[:, -1], dt, stats


# --- helpers ----------------------------------------------------------------------
def median(xs):
    return statistics.median(xs)


def read_rmoc_final(path, n, form):
    """The T values of the last row of rmoc's CSV, in row-major order."""
    with open(path, "rb") as fh:
        header = fh.readline().decode()
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        back = min(size, 1 << 20)
        while True:
            fh.seek(size - back)
            tail = fh.read().decode(errors="replace").rstrip("\n").split("\n")
            if len(tail) > 1 or back == size:
                break
            back = min(size, back * 2)
    names = next(csv.reader([header]))  # quoted: "T[1,2]" holds a comma
    last = tail[-1].split(",")
    if len(last) != len(names):
        raise RuntimeError(f"{path}: last row has {len(last)} fields, header {len(names)}")
    col = {name: k for k, name in enumerate(names)}
    if abs(float(last[col["time"]]) - 1.0) > 1e-12:
        raise RuntimeError(f"{path}: last row at t = {last[col['time']]}, not 1")
    if form == "2d":
        keys = [f"T[{i},{j}]" for i in range(1, n + 1) for j in range(1, n + 1)]
    else:
        keys = [f"T[{k}]" for k in range(1, n * n + 1)]
    missing = [k for k in keys if k not in col]
    if missing:
        raise RuntimeError(f"{path}: no column {missing[0]} (header starts {names[:4]})")
    return [float(last[col[k]]) for k in keys]


def diffs(x, ref):
    """(max relative difference over cells with |ref| >= 1e-3 max|ref|, max abs difference)."""
    import numpy as np

    x, ref = np.asarray(x), np.asarray(ref)
    big = np.abs(ref) >= 1e-3 * np.max(np.abs(ref))
    rel = np.max(np.abs(x[big] - ref[big]) / np.abs(ref[big]))
    return float(rel), float(np.max(np.abs(x - ref)))


def run_timed(cmd, env=None):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    return dt, p


# --- modes ------------------------------------------------------------------------
def child(args):
    """--solve N G0 Q0 METHOD RTOL ATOL JAC OUT.npy: one whole SciPy process."""
    import numpy as np

    n, g0, q0, method, rtol, atol, jac_mode, out = args
    y, dt, stats = solve(int(n), float(g0), float(q0), method, float(rtol), float(atol), jac_mode)
    np.save(out, y)
    stats["solve_s"] = dt
    print(json.dumps(stats))


def bench(n, a, tmp):
    import numpy as np

    sys.path.insert(0, HERE)
    import grid

    g0 = a.g0
    q0 = grid.default_q0(n) if a.q0 is None else a.q0
    model = os.path.join(tmp, f"grid{n}.rmo")
    with open(model, "w") as fh:
        fh.write(grid.model(n, a.form, g0, q0) + "\n")

    # rmoc, whole process
    out = os.path.join(tmp, f"grid{n}.csv")
    _, p = run_timed([a.rmoc, "simulate", model, "-o", out, "--stats"])
    rmoc_stats = " ".join(line.strip() for line in p.stderr.splitlines() if line.strip())
    rmoc_y = read_rmoc_final(out, n, a.form)
    rmoc_t = [run_timed([a.rmoc, "simulate", model, "-o", out])[0] for _ in range(a.reps)]

    # SciPy, whole process (imports included), both Jacobian variants
    sc = {}
    for jac_mode in ("sparsity", "analytic"):
        npy = os.path.join(tmp, f"scipy{n}_{jac_mode}.npy")
        cmd = [a.python, os.path.abspath(__file__), "--solve", str(n), repr(g0), repr(q0), "BDF", "1e-6", "1e-6", jac_mode, npy]
        runs = [run_timed(cmd) for _ in range(a.reps)]
        sc[jac_mode] = {
            "whole": [r[0] for r in runs],
            "stats": [json.loads(r[1].stdout) for r in runs],
            "y": np.load(npy),
        }

    # the tight reference, in this process
    print(f"N = {n}: reference (Radau, rtol 1e-10, atol 1e-12) ...", file=sys.stderr)
    ref_y, ref_dt, ref_stats = solve(n, g0, q0, "Radau", 1e-10, 1e-12, "analytic")

    return {
        "n": n,
        "rmoc_t": rmoc_t,
        "rmoc_stats": rmoc_stats,
        "rmoc_y": rmoc_y,
        "sc": sc,
        "ref_y": ref_y,
        "ref_dt": ref_dt,
        "ref_stats": ref_stats,
        "ref_max": float(np.max(np.abs(ref_y))),
    }


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--solve":
        child(sys.argv[2:])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int, nargs="+")
    ap.add_argument("--reps", type=int, default=3, help="timed runs of each command (default 3)")
    ap.add_argument("--rmoc", default=os.environ.get("RMOC", os.path.join(ROOT, "target/release/rmoc")))
    ap.add_argument("--python", default=sys.executable, help="the Python of the timed SciPy runs")
    ap.add_argument("--form", choices=["2d", "1d"], default="2d", help="grid.py's form of the model")
    ap.add_argument("--g0", type=float, default=1000.0, help="conductance at T = 0 (grid.py; default 1000)")
    ap.add_argument("--q0", type=float, default=None, help="mean heat input (grid.py; default N*N)")
    a = ap.parse_args()
    if not os.access(a.rmoc, os.X_OK):
        sys.exit(f"error: {a.rmoc} is not an executable (--rmoc or RMOC=...)")

    import scipy

    ver = subprocess.run([a.rmoc, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"{ver} ({a.rmoc}); SciPy {scipy.__version__}, Python {sys.version.split()[0]} ({a.python}); "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    print()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in a.n:
            results.append(bench(n, a, tmp))

    ms = lambda s: f"{1000 * s:.0f}"
    print(f"### Times (wall ms, best / median of {a.reps} whole-process runs)")
    print()
    print("| N | states | rmoc simulate | SciPy BDF, jac_sparsity: process | solve only | rmoc / SciPy |"
          " SciPy BDF, analytic jac: process | solve only | rmoc / SciPy |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        row = f"| {r['n']} | {r['n'] ** 2} | {ms(min(r['rmoc_t']))} / {ms(median(r['rmoc_t']))} |"
        for jm in ("sparsity", "analytic"):
            s = r["sc"][jm]
            solve_s = [st["solve_s"] for st in s["stats"]]
            row += (f" {ms(min(s['whole']))} / {ms(median(s['whole']))} | {ms(min(solve_s))} / {ms(median(solve_s))} |"
                    f" **{min(r['rmoc_t']) / min(s['whole']):.2f}** |")
        print(row)
    print()
    print("### Final values at t = 1 (T of every cell)")
    print()
    print("| N | max T | rmoc vs SciPy (sparsity): max rel / max abs | rmoc error: max rel / max abs |"
          " SciPy (sparsity) error | SciPy (analytic) error |")
    print("|---|---|---|---|---|---|")
    for r in results:
        fmt = lambda d: f"{d[0]:.2e} / {d[1]:.2e}"
        print(f"| {r['n']} | {r['ref_max']:.6g} | {fmt(diffs(r['rmoc_y'], r['sc']['sparsity']['y']))} |"
              f" {fmt(diffs(r['rmoc_y'], r['ref_y']))} | {fmt(diffs(r['sc']['sparsity']['y'], r['ref_y']))} |"
              f" {fmt(diffs(r['sc']['analytic']['y'], r['ref_y']))} |")
    print()
    print("(errors against SciPy Radau at rtol 1e-10, atol 1e-12 with the analytic Jacobian; relative"
          " differences over the cells with |T| >= 1e-3 max |T|)")
    print()
    for r in results:
        print(f"- N = {r['n']}: rmoc: {r['rmoc_stats']}")
        for jm in ("sparsity", "analytic"):
            st = r["sc"][jm]["stats"][0]
            print(f"- N = {r['n']}: SciPy BDF ({jm}): function evaluations {st['nfev']}, Jacobian evaluations"
                  f" {st['njev']}, LU decompositions {st['nlu']}")
        st = r["ref_stats"]
        print(f"- N = {r['n']}: reference Radau: {r['ref_dt']:.1f} s, function evaluations {st['nfev']},"
              f" Jacobian evaluations {st['njev']}, LU decompositions {st['nlu']}")


if __name__ == "__main__":
    main()
