#!/usr/bin/env python3
"""The time-varying mesh stiffness (TVMS) map of examples/gear_whine.rmo.

Writes `tvms.csv` and `gap.csv` beside this script. `tvms.csv`: the
stiffness of one tooth pair of the
example's 50/50-tooth spur pair, in N/m, over its roll position s (in mesh
cycles, that is base pitches, from the pair's start of contact to the end of
its contact at the contact ratio) and the mesh torque T (N m), in the layout
of rmoc's `Tables.CombiTable2Ds` (s in column 1 from row 2, T in row 1 from
column 2).

Method: the series model of Miao et al. 2026 (seed 000, section 2.2, eqs.
4-8), restated here for an involute spur tooth of each gear:
  1/k_pair = sum over both teeth of (1/k_bend + 1/k_shear + 1/k_found)
             + 1/k_Hertz,
- bending and shear of the tooth as a Timoshenko cantilever of varying
  section from the root circle to the contact point (eqs. 5-6), with the
  force's component across the tooth centreline;
- the fillet foundation by Ishikawa's formula (eq. 7);
- Hertzian line contact of the two involutes (eq. 8), whose compliance
  falls with the load (logarithmically): this is what makes the map depend
  on the torque.
A pair in double contact shares the force with its neighbour (at s + 1 or
s - 1) so that both deflect alike; the share is iterated because the
Hertzian compliance depends on it.

`gap.csv`: the unloaded separation of a pair's flanks over its roll
position, zero on the theoretical path of contact and growing outside it,
where a deflected mesh meets the next pair early (or lets the last go
late): the tip corner against the mating flank, whose separation grows
with the square of the distance beyond the path's end over twice the
relative radius of curvature of the involutes there (a parabolic
approximation). With it the contact ratio grows with the load in the
dynamic model, as the paper's map does (its Fig. 5). Both tables span the
roll positions -EXTRA to 1.75 + EXTRA; beyond the theoretical path the
stiffness is that at the path's end.

Gear data (the paper's Table 2 is not in its text; these are chosen to meet
what the text gives: a unity-ratio pair of 50-tooth steel spur gears, a
theoretical contact ratio of 1.75):
  module 3 mm, pressure angle 20 deg, 50 teeth each, face width 20 mm,
  addendum coefficient chosen for a contact ratio of 1.75 (0.993), root
  circle at 1.25 modules below the pitch circle, E = 206 GPa, nu = 0.3.

Usage: python3 examples/gear_whine/tvms.py  (NumPy only).
"""

import math
import os

import numpy as np

Z = 50
MODULE = 3e-3
ALPHA0 = math.radians(20.0)
FACE = 0.020
E = 206e9
NU = 0.3
G = E / (2 * (1 + NU))
E_STAR = E / (2 * (1 - NU**2))  # composite modulus of two steel bodies
CONTACT_RATIO = 1.75
TORQUES = [10, 25, 50, 100, 150, 200, 300, 400, 500]
POSITIONS = 71  # roll positions over the contact ratio
EXTRA = 0.25  # roll positions tabulated beyond each end of the path
RELIEF = 2e-6  # long linear tip relief, m (the example's choice)

R = MODULE * Z / 2
RB = R * math.cos(ALPHA0)
RF = R - 1.25 * MODULE
PB = math.pi * MODULE * math.cos(ALPHA0)  # base pitch
T1T2 = 2 * R * math.sin(ALPHA0)  # length of the line of action between the base circles


def inv(a):
    return math.tan(a) - a


def contact_ratio(ha):
    ra = R + ha * MODULE
    return (2 * math.sqrt(ra**2 - RB**2) - T1T2) / PB


def addendum_for(eps):
    lo, hi = 0.5, 1.5
    for _ in range(100):
        mid = (lo + hi) / 2
        if contact_ratio(mid) < eps:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


HA = addendum_for(CONTACT_RATIO)
RA = R + HA * MODULE
# Along the line of action from the pinion's tangency point: the start of
# contact (the gear's tip circle) and the path's length.
START = T1T2 - math.sqrt(RA**2 - RB**2)


def half_angle(rho):
    """Half the tooth's angular thickness at radius rho (>= RB); below the
    base circle the flank is taken radial (the base circle's value)."""
    a = math.acos(min(1.0, RB / max(rho, RB)))
    return math.pi / (2 * Z) + inv(ALPHA0) - inv(a)


def tooth_compliance(rc):
    """Bending, shear and foundation compliance (m/N) of one tooth loaded
    along the line of action at radius rc (eqs. 5-7)."""
    psi_c = half_angle(rc)
    alpha_c = math.acos(RB / rc)
    beta = alpha_c - psi_c  # load angle: force against the centreline's normal
    x_root = RF * math.cos(half_angle(RF))
    length = rc * math.cos(psi_c) - x_root
    rho = np.linspace(RF, rc, 400)
    psi = np.array([half_angle(r) for r in rho])
    x = rho * np.cos(psi) - x_root
    y = rho * np.sin(psi)  # half thickness
    area = 2 * y * FACE
    inertia = (2 * y) ** 3 * FACE / 12
    cb = math.cos(beta) ** 2
    bend = np.trapezoid((length - x) ** 2 * cb / (E * inertia), x)
    shear = np.trapezoid(1.2 * cb / (G * area), x)
    hf = 2 * y[0]
    found = cb / (FACE * E) * (
        5.306 * (length / hf) ** 2
        + 2 * (1 - NU) * length / hf
        + 1.534 * (1 + 0.4167 * math.tan(beta) ** 2 / (1 + NU))
    )
    return bend + shear + found


def hertz_approach(force, u):
    """Approach (m) of the two involutes at distance u from the pinion's
    tangency point under force (N) (eq. 8)."""
    rho1, rho2 = u, T1T2 - u
    rho_eq = rho1 * rho2 / (rho1 + rho2)
    p = force / FACE
    b = math.sqrt(4 * p * rho_eq / (math.pi * E_STAR))
    return 2 * p / (math.pi * E_STAR) * (math.log(2 * rho_eq / b) + 0.407)


def structural(s):
    """Both teeth's structural compliance at roll position s (base pitches
    from the start of contact)."""
    u = START + s * PB
    rp = math.sqrt(RB**2 + u**2)
    rg = math.sqrt(RB**2 + (T1T2 - u) ** 2)
    return tooth_compliance(rp) + tooth_compliance(rg), u


def pair_stiffness(s, torque):
    """Stiffness (N/m) of the pair at roll position s at mesh torque
    torque, sharing the force with the pair one pitch away if it is in
    contact."""
    force = torque / RB
    c0, u0 = structural(s)
    partner = s + 1 if s + 1 <= CONTACT_RATIO else (s - 1 if s - 1 >= 0 else None)
    if partner is None:
        return force / (force * c0 + hertz_approach(force, u0))
    c1, u1 = structural(partner)
    share = c1 / (c0 + c1)
    for _ in range(50):
        f0, f1 = share * force, (1 - share) * force
        d0 = f0 * c0 + hertz_approach(f0, u0)
        d1 = f1 * c1 + hertz_approach(f1, u1)
        # Equal deflections: move the share toward the stiffer pair.
        k0, k1 = f0 / d0, f1 / d1
        new = k0 / (k0 + k1)
        if abs(new - share) < 1e-12:
            break
        share = new
    f0 = share * force
    return f0 / (f0 * c0 + hertz_approach(f0, u0))


def relief(s, amount):
    """Long linear tip relief of both gears: `amount` at each end of the
    path of contact, falling to zero at the single-contact zone."""
    single = CONTACT_RATIO - 1
    if s < single:
        return amount * (single - s) / single
    if s > 1:
        return amount * (s - 1) / single
    return 0.0


def gap(s, amount):
    """Unloaded separation (m) of a pair at roll position s: the relief on
    the path, and beyond its ends the relief plus the parabola."""
    if 0 <= s <= CONTACT_RATIO:
        return relief(s, amount)
    u = START if s < 0 else START + CONTACT_RATIO * PB
    rho = u * (T1T2 - u) / T1T2  # relative radius of curvature at the end
    beyond = (-s if s < 0 else s - CONTACT_RATIO) * PB
    return relief(min(max(s, 0.0), CONTACT_RATIO), amount) + beyond**2 / (2 * rho)


def main():
    import argparse

    p = argparse.ArgumentParser()
    p.add_argument("--relief", type=float, default=RELIEF, help="tip relief, m")
    p.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = p.parse_args()
    step = CONTACT_RATIO / (POSITIONS - 1)
    extra = int(round(EXTRA / step))
    positions = np.arange(-extra, POSITIONS + extra) * step
    here = args.out
    out = os.path.join(here, "tvms.csv")
    with open(out, "w") as f:
        f.write("# Stiffness of one tooth pair (N/m) of the 50/50-tooth spur pair of\n")
        f.write("# examples/gear_whine.rmo, written by tvms.py (seed 000 eqs. 4-8).\n")
        f.write(f"# addendum coefficient {HA:.6f}, contact ratio {contact_ratio(HA):.6f}\n")
        f.write("# row 1: mesh torque (N m); column 1: roll position (mesh cycles)\n")
        f.write(",".join(["0"] + [str(t) for t in TORQUES]) + "\n")
        for s in positions:
            on_path = min(max(s, 0.0), CONTACT_RATIO)
            row = [pair_stiffness(on_path, t) for t in TORQUES]
            f.write(",".join([f"{s:.6f}"] + [f"{k:.6e}" for k in row]) + "\n")
    with open(os.path.join(here, "gap.csv"), "w") as f:
        f.write("# Unloaded separation (m) of a tooth pair's flanks over its roll position\n")
        f.write("# (mesh cycles), written by tvms.py: zero on the path of contact.\n")
        for s in positions:
            f.write(f"{s:.6f},{gap(s, args.relief):.6e}\n")
    # A summary: the mesh stiffness (sum over the pairs in contact) at 150 N m.
    mesh = []
    for z in np.linspace(0, 1, 41)[:-1]:
        k = pair_stiffness(z, 150)
        if z + 1 <= CONTACT_RATIO:
            k += pair_stiffness(z + 1, 150)
        mesh.append(k)
    print(f"wrote {out}: addendum coefficient {HA:.4f}, contact ratio {contact_ratio(HA):.4f}")
    print(f"mesh stiffness at 150 N m: mean {np.mean(mesh):.4e}, min {min(mesh):.4e}, max {max(mesh):.4e} N/m")


if __name__ == "__main__":
    main()
