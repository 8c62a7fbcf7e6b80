#!/usr/bin/python3
"""Compares rmoc's and Siconos' CSVs of the three contact problems with each
other and with the closed forms, and prints markdown tables.

    /usr/bin/python3 compare.py DIR

DIR holds {ball,walls,block}.{rmoc,siconos}.csv and times.txt, whose lines
are "problem tool wall_seconds integration_ms steps" (one per timed run);
run.sh writes them.
"""
import math
import statistics
import sys
from collections import defaultdict

import numpy as np

d = sys.argv[1]


def load(name):
    """Columns of a CSV with a header row (quoted or not) as a dict."""
    with open(name) as f:
        names = [s.strip().strip('"') for s in f.readline().split(",")]
    a = np.loadtxt(name, delimiter=",", skiprows=1, ndmin=2)
    return {n: a[:, i] for i, n in enumerate(names)}


def both(problem):
    return load(f"{d}/{problem}.rmoc.csv"), load(f"{d}/{problem}.siconos.csv")


def g(x):
    return f"{x:.3g}"


# --- times --------------------------------------------------------------
runs = defaultdict(list)
for line in open(f"{d}/times.txt"):
    p, tool, wall, integ, steps = line.split()
    runs[p, tool].append((float(wall), float(integ), int(steps)))


def med(p, tool, i):
    return statistics.median(r[i] for r in runs[p, tool])


agree = {}  # problem -> summary of the agreement
details = []  # rows of the detail table
TOOLS = ("rmoc", "siconos")

# --- ball: impact times ----------------------------------------------------
G, E, NI = 9.81, 0.8, 6
t_cf = [math.sqrt(2.0 / G)]
v1 = G * t_cf[0]
for k in range(1, 60):
    t_cf.append(t_cf[-1] + 2.0 * E**k * v1 / G)
n_cf = sum(1 for t in t_cf if t <= 4.0)
ball = dict(zip(TOOLS, both("ball")))
imp = {}
nimp = {}
for tool, c in ball.items():
    v, t = c["v"], c["time"]
    up = np.nonzero((v[:-1] < 0) & (v[1:] >= 0))[0] + 1  # the step's end
    imp[tool] = t[up]
    nimp[tool] = len(up)
cf = np.array(t_cf[:NI])
er = np.abs(imp["rmoc"][:NI] - cf)
es = np.abs(imp["siconos"][:NI] - cf)
ers = np.abs(imp["rmoc"][:NI] - imp["siconos"][:NI])
for k in range(NI):
    details.append(
        ("ball", f"impact {k + 1} time (s)", f"{cf[k]:.6f}", f"{imp['rmoc'][k]:.5f}",
         f"{imp['siconos'][k]:.5f}", g(er[k]), g(es[k]), g(ers[k]))
    )
details.append(("ball", "impacts in [0, 4] s", str(n_cf), str(nimp["rmoc"]),
                str(nimp["siconos"]), "", "", ""))
ymin = {tool: c["y"].min() for tool, c in ball.items()}
details.append(("ball", "lowest y (m)", "0", g(ymin["rmoc"]), g(ymin["siconos"]), "", "", ""))
agree["ball"] = (f"first {NI} impact times: tools differ by <= {g(ers.max())} s; "
                 f"vs closed form rmoc {g(er.max())} s, Siconos {g(es.max())} s")

# --- walls: energy and impacts ------------------------------------------------
walls = dict(zip(TOOLS, both("walls")))
drift, count, xend = {}, {}, {}
for tool, c in walls.items():
    v = c["v"]
    drift[tool] = np.abs(0.5 * v * v - 0.5).max()
    count[tool] = int(np.count_nonzero(np.sign(v[1:]) != np.sign(v[:-1])))
    xend[tool] = c["x"][-1]
nr = min(len(walls["rmoc"]["x"]), len(walls["siconos"]["x"]))
dx = np.abs(walls["rmoc"]["x"][:nr] - walls["siconos"]["x"][:nr]).max()
# exact: impacts at t = 0.005 + 0.01 j, j = 0..999; x(10) = 0.005 moving right
details += [
    ("walls", "impacts in [0, 10] s", "1000", str(count["rmoc"]), str(count["siconos"]),
     str(count["rmoc"] - 1000), str(count["siconos"] - 1000), str(count["rmoc"] - count["siconos"])),
    ("walls", "max abs kinetic energy drift (J)", "0", g(drift["rmoc"]), g(drift["siconos"]), "", "", ""),
    ("walls", "x at t = 10 (m)", "0.005", f"{xend['rmoc']:.9f}", f"{xend['siconos']:.9f}",
     g(xend["rmoc"] - 0.005), g(xend["siconos"] - 0.005), g(xend["rmoc"] - xend["siconos"])),
    ("walls", "max abs x difference over the run (m)", "", "", "", "", "", g(dx)),
]
agree["walls"] = (f"impacts rmoc {count['rmoc']}, Siconos {count['siconos']} (closed form 1000); "
                  f"energy drift rmoc {g(drift['rmoc'])}, Siconos {g(drift['siconos'])}; "
                  f"x differs by <= {g(dx)} m")

# --- block: stopping time and distance ------------------------------------------
M, MU, V0 = 2.0, 0.3, 2.0
t_stop_cf = V0 / (MU * G)
x_stop_cf = V0**2 / (2 * MU * G)
block = dict(zip(TOOLS, both("block")))
ts, xs = {}, {}
for tool, c in block.items():
    stopped = np.nonzero(np.abs(c["vx"]) <= 1e-9 * V0)[0]
    ts[tool] = c["time"][stopped[0]] if len(stopped) else float("nan")
    xs[tool] = c["x"][-1]
nb = min(len(block["rmoc"]["x"]), len(block["siconos"]["x"]))
dvx = np.abs(block["rmoc"]["vx"][:nb] - block["siconos"]["vx"][:nb]).max()
details += [
    ("block", "stopping time (s)", f"{t_stop_cf:.7f}", f"{ts['rmoc']:.5f}", f"{ts['siconos']:.5f}",
     g(ts["rmoc"] - t_stop_cf), g(ts["siconos"] - t_stop_cf), g(ts["rmoc"] - ts["siconos"])),
    ("block", "distance (m)", f"{x_stop_cf:.10f}", f"{xs['rmoc']:.10f}", f"{xs['siconos']:.10f}",
     g(xs["rmoc"] - x_stop_cf), g(xs["siconos"] - x_stop_cf), g(xs["rmoc"] - xs["siconos"])),
    ("block", "max abs vx difference over the run (m/s)", "", "", "", "", "", g(dvx)),
]
agree["block"] = (f"stop time: tools differ by {g(abs(ts['rmoc'] - ts['siconos']))} s, "
                  f"vs closed form rmoc {g(abs(ts['rmoc'] - t_stop_cf))}, Siconos {g(abs(ts['siconos'] - t_stop_cf))} s; "
                  f"distance: tools differ by {g(abs(xs['rmoc'] - xs['siconos']))} m, "
                  f"vs closed form rmoc {g(abs(xs['rmoc'] - x_stop_cf))}, Siconos {g(abs(xs['siconos'] - x_stop_cf))} m")

# --- tables ---------------------------------------------------------------------
n_runs = min(len(v) for v in runs.values())
print(f"### Summary (whole processes, median of {n_runs} interleaved runs, each writing a CSV row per step)")
print()
print("| problem | steps | rmoc (s) | Siconos (s) | rmoc / Siconos | agreement |")
print("|---|---|---|---|---|---|")
for p in ("ball", "walls", "block"):
    r, s = med(p, "rmoc", 0), med(p, "siconos", 0)
    print(f"| {p} | {int(med(p, 'rmoc', 2))} | {r:.2f} | {s:.2f} | {r / s:.2f} | {agree[p]} |")
print()
print("### Without per-step output (median; rmoc `--interval STOP` writes one row, the Siconos "
      "script with `--every 0` runs `TimeStepping.run()` in C++ and writes nothing)")
print()
print("| problem | rmoc process (s) | Siconos process (s) | rmoc / Siconos | rmoc integration (ms) "
      "| Siconos integration (ms) | rmoc / Siconos | rmoc µs/step | Siconos µs/step |")
print("|---|---|---|---|---|---|---|---|---|")
for p in ("ball", "walls", "block"):
    rw, sw = med(p, "rmoc0", 0), med(p, "siconos0", 0)
    r, s, n = med(p, "rmoc0", 1), med(p, "siconos0", 1), med(p, "rmoc0", 2)
    print(f"| {p} | {rw:.2f} | {sw:.2f} | {rw / sw:.2f} | {r:.0f} | {s:.0f} | {r / s:.3f} "
          f"| {1e3 * r / n:.2f} | {1e3 * s / n:.2f} |")
print()
print("Integration: rmoc's `--stats` \"simulate\" time (no start-up, compile or CSV writing); the "
      "Siconos script's time loop (no import or set-up).")
print()
print("### Agreement")
print()
print("| problem | quantity | closed form | rmoc | Siconos | rmoc - closed | Siconos - closed | rmoc - Siconos |")
print("|---|---|---|---|---|---|---|---|")
for row in details:
    print("| " + " | ".join(row) + " |")
