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
import numpy as np
import siconos.kernel as sk

from csvout import parse_args, run_and_write

args = parse_args()
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

q = ball.q()  # numpy views of Siconos' vectors
v = ball.velocity()
p = ball.p(1)
run_and_write("ball", sim, args, (t0, T), ["time", "y", "v", "N"], (t0, q[0], v[0], 0.0),
              lambda t: (t, q[0], v[0], p[0] / h), q, v, t_start, t_import)
