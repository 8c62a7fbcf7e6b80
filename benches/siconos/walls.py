#!/usr/bin/python3
"""A point mass between two walls (tests/models/contacts/walls.rmo) in Siconos.

Unit mass between the walls x = 0 and x = L = 0.01, start x = 0.005,
v = 1 m/s, no gravity, perfectly elastic impacts (e = 1), 10 s (1000
impacts), fixed step h = 1e-5. Two interactions, each a LagrangianLinearTIR
(gap x, and gap L - x) with a NewtonImpactNSL; MoreauJeanOSI(theta = 0.5);
one LCP per step (Lemke), as in Siconos' BouncingBallTS.py example.

    /usr/bin/python3 walls.py OUT.csv [--every N] [--h H]

Writes time,x,v,fl,fr every N-th step (fl, fr = impulses / h); --every 0
writes no CSV and runs the time loop in C++ (TimeStepping.run()) instead of
stepping from Python. Prints the wall times of import, integration and
writing.
"""
import time

t_start = time.perf_counter()
import argparse

import numpy as np
import siconos.kernel as sk

from csvout import write_csv

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--every", type=int, default=1)
ap.add_argument("--h", type=float, default=1e-5)
args = ap.parse_args()
t_import = time.perf_counter()

t0, T, h = 0.0, 10.0, args.h
L, e, theta = 0.01, 1.0, 0.5

mass = sk.LagrangianLinearTIDS([0.005], [1.0], np.array([[1.0]]))
# gap of the left wall: x; of the right wall: L - x
left = sk.Interaction(sk.NewtonImpactNSL(e), sk.LagrangianLinearTIR(np.array([[1.0]])))
right = sk.Interaction(
    sk.NewtonImpactNSL(e), sk.LagrangianLinearTIR(np.array([[-1.0]]), np.array([L]))
)

nsds = sk.NonSmoothDynamicalSystem(t0, T)
nsds.insertDynamicalSystem(mass)
nsds.link(left, mass)
nsds.link(right, mass)

osi = sk.MoreauJeanOSI(theta)
sim = sk.TimeStepping(nsds, sk.TimeDiscretisation(t0, h), osi, sk.LCP())

n = int(round((T - t0) / h))
every = args.every
out = np.zeros((n // every + 2 if every else 1, 5))
q = mass.q()
v = mass.velocity()
out[0] = (t0, q[0], v[0], 0.0, 0.0)
k, r = 0, 1
t_setup = time.perf_counter()
if every:
    while sim.hasNextEvent():
        sim.computeOneStep()
        k += 1
        if k % every == 0:
            out[r] = (sim.nextTime(), q[0], v[0], left.lambda_(1)[0] / h, right.lambda_(1)[0] / h)
            r += 1
        sim.nextStep()
else:
    # no output: the whole time loop in C++ (TimeStepping::run)
    sim.run()
    k = n
    print(f"final state at t = {T}: q = {list(q)}, v = {list(v)}")
t_end = time.perf_counter()
if every:
    write_csv(args.out, ["time", "x", "v", "fl", "fr"], out[:r])
t_write = time.perf_counter()
print(f"siconos walls: {k} Moreau-Jean steps; wall: import {1e3*(t_import-t_start):.0f} ms, "
      f"setup {1e3*(t_setup-t_import):.1f} ms, integration {1e3*(t_end-t_setup):.0f} ms, "
      f"CSV {1e3*(t_write-t_end):.0f} ms ({r if every else 0} rows), total {t_write-t_start:.3f} s")
