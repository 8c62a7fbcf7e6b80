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
import numpy as np
import siconos.kernel as sk
import siconos.numerics as sn

from csvout import parse_args, run_and_write

args = parse_args()
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

q = block.q()
v = block.velocity()


def row(t):
    lam = inter.lambda_(1)
    return (t, q[0], v[0], q[1], v[1], lam[0] / h, lam[1] / h)


run_and_write("block", sim, args, (t0, T), ["time", "x", "vx", "y", "vy", "N", "T"],
              (t0, q[0], v[0], q[1], v[1], 0.0, 0.0), row, q, v, t_start, t_import)
