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
import numpy as np
import siconos.kernel as sk

from csvout import parse_args, run_and_write

args = parse_args()
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

q = mass.q()
v = mass.velocity()
run_and_write("walls", sim, args, (t0, T), ["time", "x", "v", "fl", "fr"], (t0, q[0], v[0], 0.0, 0.0),
              lambda t: (t, q[0], v[0], left.lambda_(1)[0] / h, right.lambda_(1)[0] / h),
              q, v, t_start, t_import)
