#!/usr/bin/python3
"""A block stopped by Coulomb friction (tests/models/contacts/block.rmo) in Siconos.

A block of mass m = 2 on the plane y = 0 under g = 9.81, thrown along it at
v0 = 2 m/s, Coulomb friction mu = 0.3, no restitution; it stops at
t = v0 / (mu g) after v0^2 / (2 mu g). 1 s, fixed step h = 1e-5.

A LagrangianLinearTIDS of dimension 2 (q = (x, y), M = m I, weight
(0, -m g)), one Interaction whose LagrangianLinearTIR gives the local
velocities (normal vy, tangential vx) with a NewtonImpactFrictionNSL
(en = 0, et = 0, mu, size 2), MoreauJeanOSI(theta = 0.5) and a 2-D
FrictionContact problem (nonsmooth Gauss-Seidel, tolerance 1e-12).

    /usr/bin/python3 block.py OUT.csv [--every N] [--h H]

Writes time,x,vx,y,vy,N,T every N-th step (N, T = impulses / h); --every 0
writes no CSV and runs the time loop in C++ (TimeStepping.run()) instead of
stepping from Python. Prints the wall times of import, integration and
writing.
"""
import time

t_start = time.perf_counter()
import argparse

import numpy as np
import siconos.kernel as sk
import siconos.numerics as sn

from csvout import write_csv

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--every", type=int, default=1)
ap.add_argument("--h", type=float, default=1e-5)
args = ap.parse_args()
t_import = time.perf_counter()

t0, T, h = 0.0, 1.0, args.h
m, g, mu, v0, theta = 2.0, 9.81, 0.3, 2.0, 0.5

block = sk.LagrangianLinearTIDS([0.0, 0.0], [v0, 0.0], m * np.eye(2))
block.setFExtPtr([0.0, -m * g])
# local frame: normal gap y first, tangential coordinate x second
H = np.array([[0.0, 1.0], [1.0, 0.0]])
inter = sk.Interaction(sk.NewtonImpactFrictionNSL(0.0, 0.0, mu, 2), sk.LagrangianLinearTIR(H))

nsds = sk.NonSmoothDynamicalSystem(t0, T)
nsds.insertDynamicalSystem(block)
nsds.link(inter, block)

osi = sk.MoreauJeanOSI(theta)
fc = sk.FrictionContact(2, sn.SICONOS_FRICTION_2D_NSGS)
fc.numericsSolverOptions().iparam[sn.SICONOS_IPARAM_MAX_ITER] = 1000
fc.numericsSolverOptions().dparam[sn.SICONOS_DPARAM_TOL] = 1e-12
sim = sk.TimeStepping(nsds, sk.TimeDiscretisation(t0, h), osi, fc)

n = int(round((T - t0) / h))
every = args.every
out = np.zeros((n // every + 2 if every else 1, 7))
q = block.q()
v = block.velocity()
lam = inter.lambda_(1)
out[0] = (t0, q[0], v[0], q[1], v[1], 0.0, 0.0)
k, r = 0, 1
t_setup = time.perf_counter()
if every:
    while sim.hasNextEvent():
        sim.computeOneStep()
        k += 1
        if k % every == 0:
            lam = inter.lambda_(1)
            out[r] = (sim.nextTime(), q[0], v[0], q[1], v[1], lam[0] / h, lam[1] / h)
            r += 1
        sim.nextStep()
else:
    # no output: the whole time loop in C++ (TimeStepping::run)
    sim.run()
    k = n
    print(f"final state at t = {T}: q = {list(q)}, v = {list(v)}")
t_end = time.perf_counter()
if every:
    write_csv(args.out, ["time", "x", "vx", "y", "vy", "N", "T"], out[:r])
t_write = time.perf_counter()
print(f"siconos block: {k} Moreau-Jean steps; wall: import {1e3*(t_import-t_start):.0f} ms, "
      f"setup {1e3*(t_setup-t_import):.1f} ms, integration {1e3*(t_end-t_setup):.0f} ms, "
      f"CSV {1e3*(t_write-t_end):.0f} ms ({r if every else 0} rows), total {t_write-t_start:.3f} s")
