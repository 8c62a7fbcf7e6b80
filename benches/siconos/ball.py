#!/usr/bin/python3
"""Bouncing ball (tests/models/contacts/ball.rmo) in Siconos, Moreau-Jean.

A unit mass dropped from y = 1 m onto the plane y = 0 under g = 9.81,
Newton impact law with restitution e = 0.8, 4 s, fixed step h = 1e-5.
Follows Siconos' BouncingBallTS.py example (LagrangianLinearTIDS +
LagrangianLinearTIR + NewtonImpactNSL, MoreauJeanOSI(theta = 0.5), LCP
solved by Lemke), with a one-dimensional ball (no rotation).

    /usr/bin/python3 ball.py OUT.csv [--every N] [--h H]

Writes time,y,v,N every N-th step (N = the step's contact impulse / h, the
step's mean force, as rmoc writes it). --every 0 writes no CSV and runs
the time loop in C++ (TimeStepping.run()) instead of stepping from Python.
Prints the wall times of import, integration and writing.
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

t0, T, h = 0.0, 4.0, args.h
g, m, e, theta = 9.81, 1.0, 0.8, 0.5

ball = sk.LagrangianLinearTIDS([1.0], [0.0], np.array([[m]]))
ball.setFExtPtr([-m * g])
# gap y = q
inter = sk.Interaction(sk.NewtonImpactNSL(e), sk.LagrangianLinearTIR(np.array([[1.0]])))

nsds = sk.NonSmoothDynamicalSystem(t0, T)
nsds.insertDynamicalSystem(ball)
nsds.link(inter, ball)

osi = sk.MoreauJeanOSI(theta)
sim = sk.TimeStepping(nsds, sk.TimeDiscretisation(t0, h), osi, sk.LCP())

n = int(round((T - t0) / h))
every = args.every
out = np.zeros((n // every + 2 if every else 1, 4))
q = ball.q()  # numpy views of Siconos' vectors
v = ball.velocity()
p = ball.p(1)
out[0] = (t0, q[0], v[0], 0.0)
k, r = 0, 1
t_setup = time.perf_counter()
if every:
    while sim.hasNextEvent():
        sim.computeOneStep()
        k += 1
        if k % every == 0:
            out[r] = (sim.nextTime(), q[0], v[0], p[0] / h)
            r += 1
        sim.nextStep()
else:
    # no output: the whole time loop in C++ (TimeStepping::run)
    sim.run()
    k = n
    print(f"final state at t = {T}: q = {list(q)}, v = {list(v)}")
t_end = time.perf_counter()
if every:
    write_csv(args.out, ["time", "y", "v", "N"], out[:r])
t_write = time.perf_counter()
print(f"siconos ball: {k} Moreau-Jean steps; wall: import {1e3*(t_import-t_start):.0f} ms, "
      f"setup {1e3*(t_setup-t_import):.1f} ms, integration {1e3*(t_end-t_setup):.0f} ms, "
      f"CSV {1e3*(t_write-t_end):.0f} ms ({r if every else 0} rows), total {t_write-t_start:.3f} s")
