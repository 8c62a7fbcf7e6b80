"""What the Siconos benchmark scripts share: their command line, the
stepping loop that records every N-th step, CSV writing and the timing
line that run.sh and compare.py read."""

import argparse
import time

import numpy as np


def parse_args():
    """`SCRIPT OUT.csv [--every N] [--h H]` (--every 0: no output rows)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--h", type=float, default=1e-5)
    return ap.parse_args()


def write_csv(path, names, rows):
    """Writes `rows` (a 2-D numpy array) with a header of `names`, each
    number in Python's shortest round-trip form (as rmoc writes them)."""
    with open(path, "w") as f:
        f.write(",".join(names) + "\n")
        fmt = ",".join(["%r"] * len(names)) + "\n"
        f.writelines(fmt % tuple(r) for r in rows.tolist())


def run_and_write(name, sim, args, span, names, first_row, row, q, v, t_start, t_import):
    """Steps `sim` over `span` = (t0, T), recording `row(t)` every
    `args.every` steps (`first_row` at t0), writes the CSV and prints the
    timing line. With --every 0 the time loop runs in C++
    (TimeStepping::run) and nothing is written."""
    t0, T = span
    n = int(round((T - t0) / args.h))
    every = args.every
    out = np.zeros((n // every + 2 if every else 1, len(names)))
    out[0] = first_row
    k, r = 0, 1
    t_setup = time.perf_counter()
    if every:
        while sim.hasNextEvent():
            sim.computeOneStep()
            k += 1
            if k % every == 0:
                out[r] = row(sim.nextTime())
                r += 1
            sim.nextStep()
    else:
        # no output: the whole time loop in C++ (TimeStepping::run)
        sim.run()
        k = n
        print(f"final state at t = {T}: q = {list(q)}, v = {list(v)}")
    t_end = time.perf_counter()
    if every:
        write_csv(args.out, names, out[:r])
    t_write = time.perf_counter()
    print(f"siconos {name}: {k} Moreau-Jean steps; wall: import {1e3*(t_import-t_start):.0f} ms, "
          f"setup {1e3*(t_setup-t_import):.1f} ms, integration {1e3*(t_end-t_setup):.0f} ms, "
          f"CSV {1e3*(t_write-t_end):.0f} ms ({r if every else 0} rows), total {t_write-t_start:.3f} s")
