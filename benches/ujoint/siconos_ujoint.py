#!/usr/bin/python3
"""The U-joint with clearance (examples/ujoint_clearance.rmo, seed 004) in
Siconos, as an independent check of the regimes rmoc finds.

The same equations of motion as the example, written for Siconos'
LagrangianDS  M(q) q'' + F_gyr(q, v) + F_int(t, q, v) = F_ext(t) + p  with
q = (phi1, phi1c):

    M      = diag(J1, Jc(phi1c)),
    Jc     = J2x sin(phi2)^2 + J2z cos(phi2)^2 + J2y nu^2 + J3 eta^2,
    F_gyr  = (0, Jc'(phi1c) w1c^2 / 2),
    F_int  = (0, Ks phi4 eta + Cs eta^2 w1c),
    F_ext  = (T0 sin(Omega t), 0),

with phi4, phi2, eta and nu of phi1c as in the seed's (1)-(2). The mass,
forces and their Jacobians are Python overrides of the C++ virtual methods
(SWIG directors); Jc' and the Jacobians are central differences.

Each wall is one Interaction with a LagrangianLinearTIR: gaps
C - L (phi1 - phi1c) and C + L (phi1 - phi1c). With --mu 0 they use
Newton's impact law (NewtonImpactNSL, an LCP solved by Lemke, as the seed);
with friction the local frame adds the tangential slip nu R1 w1, with nu
frozen at its value for phi1c = 0 (it changes by 1e-6 relative over the
orbit, |phi1c| < 2e-3), and the 2-D frictional contact problem is solved by
nonsmooth Gauss-Seidel. Siconos' Moreau-Jean applies no tangential
restitution, so compare with rmoc at eT = 0.

    /usr/bin/python3 siconos_ujoint.py OUT.csv [--C 50e-6] [--mu 0.8]
        [--eN 0.45] [--stop 4] [--h 1e-5] [--from 0] [--w1 0]

Writes time,phi1,w1,phi1c,w1c,NL,NR (N = the step's impulse / h) every step
from --from on, and prints the number of impacts: steps in which a wall's
impulse turns positive after a step without one.
"""
import argparse
import math
import time

import numpy as np
import siconos.kernel as sk
import siconos.numerics as sn

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--C", type=float, default=50e-6)
ap.add_argument("--mu", type=float, default=0.8)
ap.add_argument("--eN", type=float, default=0.45)
ap.add_argument("--stop", type=float, default=4.0)
ap.add_argument("--h", type=float, default=1e-5)
ap.add_argument("--from", dest="start", type=float, default=0.0)
ap.add_argument("--w1", type=float, default=0.0, help="initial input shaft speed")
a = ap.parse_args()

# Table 1 of the seed
J1, J2x, J2y, J2z, J3 = 0.014, 0.00111, 0.00202, 0.00111, 0.012
Ks, Cs, R1, L = 1000.0, 5.0, 0.02, 0.04
beta, Omega, T0 = math.radians(5.0), 100.0, 1.0
sb, cb = math.sin(beta), math.cos(beta)


def kinematics(p):
    """phi4, eta = dphi4/dphi1c, nu = dphi2/dphi1c and Jc at phi1c = p."""
    den = 1.0 - sb * sb * math.cos(p) ** 2
    eta = cb / den
    nu = -sb * cb * math.cos(p) / den
    phi4 = math.atan2(math.sin(p), cb * math.cos(p))
    phi2 = -math.atan(sb / cb * math.sin(p))
    jc = J2x * math.sin(phi2) ** 2 + J2z * math.cos(phi2) ** 2 + J2y * nu * nu + J3 * eta * eta
    return phi4, eta, nu, jc


def djc(p, d=1e-6):
    return (kinematics(p + d)[3] - kinematics(p - d)[3]) / (2 * d)


def f_int(p, w):
    phi4, eta, _, _ = kinematics(p)
    return Ks * phi4 * eta + Cs * eta * eta * w


def f_gyr(p, w):
    return 0.5 * djc(p) * w * w


class Shafts(sk.LagrangianDS):
    """The two shafts; every override writes into Siconos' own buffers."""

    def computeMass(self, q=None):
        p = (self.q() if q is None else q)[1]
        self.mass()[1, 1] = kinematics(p)[3]

    def computeFExt(self, t, fext=None):
        self.fExt()[0] = T0 * math.sin(Omega * t)

    def _qv(self, q, v):
        return (self.q() if q is None else q), (self.velocity() if v is None else v)

    def computeFInt(self, t, q=None, v=None):
        q, v = self._qv(q, v)
        self.fInt()[1] = f_int(q[1], v[1])

    def computeFGyr(self, q=None, v=None):
        q, v = self._qv(q, v)
        self.fGyr()[1] = f_gyr(q[1], v[1])

    def computeJacobianFIntq(self, t, q=None, v=None, d=1e-7):
        q, v = self._qv(q, v)
        self.jacobianFIntq()[1, 1] = (f_int(q[1] + d, v[1]) - f_int(q[1] - d, v[1])) / (2 * d)

    def computeJacobianFIntqDot(self, t, q=None, v=None):
        q, _ = self._qv(q, v)
        self.jacobianFIntqDot()[1, 1] = Cs * kinematics(q[1])[1] ** 2

    def computeJacobianFGyrq(self, q=None, v=None, d=1e-6):
        q, v = self._qv(q, v)
        self.jacobianFGyrq()[1, 1] = (f_gyr(q[1] + d, v[1]) - f_gyr(q[1] - d, v[1])) / (2 * d)

    def computeJacobianFGyrqDot(self, q=None, v=None):
        q, v = self._qv(q, v)
        self.jacobianFGyrqDot()[1, 1] = djc(q[1]) * v[1]


t_start = time.perf_counter()
mass = np.diag([J1, kinematics(0.0)[3]])
ds = Shafts([0.0, 0.0], [a.w1, 0.0], mass)
# Allocate the buffers the overrides fill (the pointers are placeholders).
ds.setFExtPtr([0.0, 0.0])
ds.setFIntPtr([0.0, 0.0])
ds.setFGyrPtr([0.0, 0.0])
for setter in (ds.setJacobianFIntqPtr, ds.setJacobianFIntqDotPtr, ds.setJacobianFGyrqPtr,
               ds.setJacobianFGyrqDotPtr):
    setter(np.zeros((2, 2)))
# A state-dependent mass: naming a plugin is how Siconos marks the mass as
# not constant. The function named (any exported C symbol of a library the
# -dev package installs) is never called: computeMass is overridden.
ds.setComputeMassFunction("libsiconos_numerics.so", "lcp_lexicolemke")

nu0 = kinematics(0.0)[2]
walls = []
for sign in (-1.0, 1.0):  # left wall: C - L Delta; right wall: C + L Delta
    if a.mu > 0:
        H = np.array([[sign * L, -sign * L], [nu0 * R1, 0.0]])
        rel = sk.LagrangianLinearTIR(H, np.array([a.C, 0.0]))
        law = sk.NewtonImpactFrictionNSL(a.eN, 0.0, a.mu, 2)
    else:
        rel = sk.LagrangianLinearTIR(np.array([[sign * L, -sign * L]]), np.array([a.C]))
        law = sk.NewtonImpactNSL(a.eN)
    walls.append(sk.Interaction(law, rel))

nsds = sk.NonSmoothDynamicalSystem(0.0, a.stop)
nsds.insertDynamicalSystem(ds)
for w in walls:
    nsds.link(w, ds)
osi = sk.MoreauJeanOSI(0.5)
if a.mu > 0:
    osnspb = sk.FrictionContact(2, sn.SICONOS_FRICTION_2D_NSGS)
    osnspb.numericsSolverOptions().iparam[sn.SICONOS_IPARAM_MAX_ITER] = 1000
    osnspb.numericsSolverOptions().dparam[sn.SICONOS_DPARAM_TOL] = 1e-12
else:
    osnspb = sk.LCP()
sim = sk.TimeStepping(nsds, sk.TimeDiscretisation(0.0, a.h), osi, osnspb)
sim.setNewtonTolerance(1e-12)
sim.setNewtonMaxIteration(50)

q, v = ds.q(), ds.velocity()
rows = []
impacts = 0
closed = [False, False]
k = 0
while sim.hasNextEvent():
    sim.computeOneStep()
    k += 1
    t = sim.nextTime()
    imp = [float(w.lambda_(1)[0]) for w in walls]
    for i in range(2):
        now = imp[i] > 0.0
        if now and not closed[i]:
            impacts += 1
        closed[i] = now
    if t >= a.start - 0.5 * a.h:
        rows.append((t, q[0], v[0], q[1], v[1], imp[0] / a.h, imp[1] / a.h))
    sim.nextStep()
t_end = time.perf_counter()

with open(a.out, "w") as f:
    f.write("time,phi1,w1,phi1c,w1c,NL,NR\n")
    f.writelines("%r,%r,%r,%r,%r,%r,%r\n" % r for r in rows)
print(f"siconos ujoint C = {a.C!r}: {k} Moreau-Jean steps, impacts {impacts}, "
      f"integration {1e3 * (t_end - t_start):.0f} ms")
