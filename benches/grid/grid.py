#!/usr/bin/env python3
"""Writes a 2-D nonlinear heat-conduction (RC) grid of N x N cells as .rmo.

    python3 grid.py N [--g0 1000] [--q0 N*N] [--form 2d|1d] > gridN.rmo

Each cell (i, j) has a temperature T[i, j] (a state, capacity C = 1, start 0).
Neighbours in a row or a column are joined by the temperature-dependent
conductance

    G(Ta, Tb) = g0 * (1 + 0.5 * ((Ta + Tb) / 2)^2),   g0 = 1000,

so the heat flow from a to b is G(Ta, Tb) * (Ta - Tb). Cell (1, 1) is heated
by q(t) = q0 * (1 + sin(2 pi t)) with q0 = N^2 by default, so that the mean
temperature is 1 at t = 1 whatever N; every other boundary is insulated.
t in [0, 1], Tolerance 1e-6, output every 0.01.

Stiffness (N = 50): at t = 1 T runs from 0.8 (far corner) to 2.8 (heated
corner), so G varies by a factor of about 4 over the grid. The largest
eigenvalue of the Jacobian is about -8 g0 (1 + 0.5 T^2), some -1e4 to -4e4,
while the solution changes on a time scale of 0.1-1: SciPy's RK45 needs 7700
steps at rtol = atol = 1e-6, its BDF 160. (With g0 = 100, q0 = 100 the
problem is barely stiff: RK45 306 steps, BDF 90.)

Formulation: the flows into each cell from the left (Qx[i, j], from cell
(i, j-1)) and from above (Qy[i, j], from cell (i-1, j)) are variables with a
zero flow at the insulated boundary and q(t) entering cell (1, 1) from the
left, so that every cell has the same balance

    C der(T[i, j]) = Qx[i, j] - Qx[i, j+1] + Qy[i, j] - Qy[i+1, j].

--form 2d (the default) uses 2-D arrays and nested for-equations; --form 1d
writes the same model with 1-D arrays and index arithmetic (k = (i-1)*n + j),
as a fallback for a compiler without 2-D arrays. against_scipy.py reads
T[i,j] (2d) or T[k] (1d) from the result.
"""
import argparse


C = 1.0
G0 = 1000.0


def default_q0(n):
    return float(n * n)


def num(x):
    """x as a Modelica real literal (repr round-trips)."""
    return repr(float(x))


def model_2d(n, g0, q0):
    return f"""model Grid "nonlinear heat-conduction grid of {n} x {n} cells (benches/grid/grid.py)"
  parameter Integer n = {n};
  parameter Real C = {num(C)} "heat capacity of a cell";
  parameter Real g0 = {num(g0)} "conductance at T = 0";
  parameter Real q0 = {num(q0)} "mean heat input at cell [1, 1]";
  constant Real pi = 3.141592653589793;
  Real T[n, n](each start = 0, each fixed = true);
  Real Qx[n, n + 1] "Qx[i, j]: heat flow into cell [i, j] from cell [i, j-1]";
  Real Qy[n + 1, n] "Qy[i, j]: heat flow into cell [i, j] from cell [i-1, j]";
equation
  Qx[1, 1] = q0*(1 + sin(2*pi*time));
  for i in 2:n loop
    Qx[i, 1] = 0;
  end for;
  for i in 1:n loop
    Qx[i, n + 1] = 0;
    for j in 2:n loop
      Qx[i, j] = g0*(1 + 0.5*((T[i, j - 1] + T[i, j])/2)^2)*(T[i, j - 1] - T[i, j]);
    end for;
  end for;
  for j in 1:n loop
    Qy[1, j] = 0;
    Qy[n + 1, j] = 0;
  end for;
  for i in 2:n loop
    for j in 1:n loop
      Qy[i, j] = g0*(1 + 0.5*((T[i - 1, j] + T[i, j])/2)^2)*(T[i - 1, j] - T[i, j]);
    end for;
  end for;
  for i in 1:n loop
    for j in 1:n loop
      C*der(T[i, j]) = Qx[i, j] - Qx[i, j + 1] + Qy[i, j] - Qy[i + 1, j];
    end for;
  end for;
  annotation(experiment(StopTime = 1, Tolerance = 1e-6, Interval = 0.01));
end Grid;"""


def model_1d(n, g0, q0):
    # cell (i, j) is T[(i-1)*n + j]; Qx[(i-1)*(n+1) + j] is the flow into cell
    # (i, j) from the left (j = 1..n+1); Qy[(i-1)*n + j] the flow into cell
    # (i, j) from above (i = 1..n+1)
    return f"""model Grid "nonlinear heat-conduction grid of {n} x {n} cells, 1-D arrays (benches/grid/grid.py)"
  parameter Integer n = {n};
  parameter Real C = {num(C)} "heat capacity of a cell";
  parameter Real g0 = {num(g0)} "conductance at T = 0";
  parameter Real q0 = {num(q0)} "mean heat input at cell 1";
  constant Real pi = 3.141592653589793;
  Real T[n*n](each start = 0, each fixed = true) "T[(i-1)*n + j]: cell (i, j)";
  Real Qx[n*(n + 1)] "Qx[(i-1)*(n+1) + j]: heat flow into cell (i, j) from (i, j-1)";
  Real Qy[(n + 1)*n] "Qy[(i-1)*n + j]: heat flow into cell (i, j) from (i-1, j)";
equation
  Qx[1] = q0*(1 + sin(2*pi*time));
  for i in 2:n loop
    Qx[(i - 1)*(n + 1) + 1] = 0;
  end for;
  for i in 1:n loop
    Qx[(i - 1)*(n + 1) + n + 1] = 0;
    for j in 2:n loop
      Qx[(i - 1)*(n + 1) + j] = g0*(1 + 0.5*((T[(i - 1)*n + j - 1] + T[(i - 1)*n + j])/2)^2)*(T[(i - 1)*n + j - 1] - T[(i - 1)*n + j]);
    end for;
  end for;
  for j in 1:n loop
    Qy[j] = 0;
    Qy[n*n + j] = 0;
  end for;
  for i in 2:n loop
    for j in 1:n loop
      Qy[(i - 1)*n + j] = g0*(1 + 0.5*((T[(i - 2)*n + j] + T[(i - 1)*n + j])/2)^2)*(T[(i - 2)*n + j] - T[(i - 1)*n + j]);
    end for;
  end for;
  for i in 1:n loop
    for j in 1:n loop
      C*der(T[(i - 1)*n + j]) = Qx[(i - 1)*(n + 1) + j] - Qx[(i - 1)*(n + 1) + j + 1] + Qy[(i - 1)*n + j] - Qy[i*n + j];
    end for;
  end for;
  annotation(experiment(StopTime = 1, Tolerance = 1e-6, Interval = 0.01));
end Grid;"""


def model(n, form="2d", g0=G0, q0=None):
    if n < 2:
        raise ValueError("N must be at least 2")
    if q0 is None:
        q0 = default_q0(n)
    return model_2d(n, g0, q0) if form == "2d" else model_1d(n, g0, q0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int)
    ap.add_argument("--form", choices=["2d", "1d"], default="2d")
    ap.add_argument("--g0", type=float, default=G0, help="conductance at T = 0 (default 1000)")
    ap.add_argument("--q0", type=float, default=None, help="mean heat input (default N*N)")
    a = ap.parse_args()
    print(model(a.n, a.form, a.g0, a.q0))


if __name__ == "__main__":
    main()
