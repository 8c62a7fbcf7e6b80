"""rmoc's FMUs in FMPy (issue 22, acceptance 1).

For the pendulum, the gearbox, the bouncing ball (events) and a chain with
a top-level input driven by FMPy, in FMI 2.0 and 3.0: `rmoc fmu` writes the
FMU, FMPy validates its description, runs it as co-simulation and as model
exchange (FMPy's own CVode then integrates), and the trajectories are
compared with `rmoc simulate` of the same model on the same output grid.
A parameter set through FMPy must change the run as `-p` does, and a
state's start value set through FMPy as the same start in the model. With
MODELICAPATH set, the MSL's Rotational.Examples.First too, its FMU run
without MODELICAPATH (the FMU carries the library files it read).

    python tests/fmu/fmpy_check.py --rmoc target/release/rmoc --out target/fmu

Exit status 1 when a check fails; each check prints one line.
"""

import argparse
import csv
import os
import subprocess
import sys

import numpy as np
from fmpy import simulate_fmu
from fmpy.validation import validate_fmu

HERE = os.path.dirname(os.path.abspath(__file__))
# rmoc itself runs with this process's environment as it started.
RMOC_ENV = dict(os.environ)
ROOT = os.path.dirname(os.path.dirname(HERE))


def read_csv(path, names):
    """The columns `names` (and time) of an rmoc CSV result."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    data = np.array([[float(x) for x in r] for r in rows[1:]])
    cols = {h: data[:, k] for k, h in enumerate(header)}
    return cols["time"], {n: cols[n] for n in names}


def rmoc(args, exe):
    out = subprocess.run([exe] + args, capture_output=True, text=True, env=RMOC_ENV)
    if out.returncode != 0:
        raise RuntimeError("rmoc %s failed:\n%s" % (" ".join(args), out.stderr))
    return out


def difference(t_ref, ref, t, values):
    """Largest difference of `values` (at times `t`) from the reference,
    relative to the reference's largest magnitude. At the time of an event
    (two reference rows) the two sides may differ in which limit they
    show: those times are left out."""
    events = t_ref[1:][np.diff(t_ref) == 0]
    keep = np.array([not np.any(np.abs(events - x) <= 1e-12 * max(1.0, abs(x))) for x in t])
    distinct = np.concatenate([np.diff(t_ref) > 0, [True]])
    r = np.interp(t[keep], t_ref[distinct], ref[distinct])
    scale = max(np.max(np.abs(ref)), 1e-300)
    return np.max(np.abs(values[keep] - r)) / scale


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rmoc", default=os.path.join(ROOT, "target/release/rmoc"))
    ap.add_argument("--out", default=os.path.join(ROOT, "target/fmu"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)

    # A chain whose torque is the same step as the input FMPy drives,
    # written as a model: the reference of the input case.
    chain = os.path.join(ROOT, "tests/models/linearize/chain4.rmo")
    with open(chain) as f:
        text = f.read()
    step_chain = os.path.join(a.out, "chain4_step.rmo")
    with open(step_chain, "w") as f:
        f.write(text.replace('input Real tau "torque on the last inertia, N m";',
                             "Real tau = if time < 0.5 then 2 else -1;"))
    # The ball dropped from 2 m: a state's start value set through FMPy.
    ball = os.path.join(ROOT, "tests/models/ball.rmo")
    with open(ball) as f:
        text = f.read()
    high_ball = os.path.join(a.out, "ball_from_2m.rmo")
    with open(high_ball, "w") as f:
        f.write(text.replace("Real h(start = 1,", "Real h(start = 2,"))
    step_input = np.array([(0.0, 2.0), (0.5, 2.0), (0.5, -1.0), (1.0, -1.0)],
                          dtype=[("time", np.float64), ("tau", np.float64)])

    # (name, model file, --model, variables, stop, interval, tolerance,
    #  FMPy start values, -p of the reference, FMPy input, reference file,
    #  allowed relative difference)
    cases = [
        ("pendulum", "tests/models/pendulum.rmo", None, ["x", "y", "F"], 5.0, 0.01, 1e-8,
         {}, [], None, None, 1e-6),
        ("pendulum g=3.71", "tests/models/pendulum.rmo", None, ["x", "y"], 5.0, 0.01, 1e-8,
         {"g": 3.71}, ["-p", "g=3.71"], None, None, 1e-6),
        ("gearbox", "examples/gearbox.rmo", None, ["pinion.w", "gear.phi", "gear.w"], 5.0, 0.01, 1e-8,
         {}, [], None, None, 1e-5),
        ("bouncing ball", "tests/models/ball.rmo", None, ["h", "v"], 3.0, 0.01, 1e-10,
         {}, [], None, None, 1e-6),
        ("ball from h=2", "tests/models/ball.rmo", None, ["h", "v"], 3.0, 0.01, 1e-10,
         {"h": 2.0}, [], None, high_ball, 1e-6),
        ("chain driven by an input", "tests/models/linearize/chain4.rmo", None, ["w4", "i1.phi"], 1.0, 0.005, 1e-10,
         {}, [], step_input, step_chain, 1e-6),
    ]
    # A model of the Modelica Standard Library, unchanged: its FMU carries
    # the MSL files it read, and runs without MODELICAPATH (removed from
    # this process before any FMU is instantiated).
    msl = os.environ.pop("MODELICAPATH", None)
    if msl:
        first = os.path.join(msl.split(os.pathsep)[0], "Modelica/Mechanics/Rotational/Examples/First.mo")
        cases.append(("MSL First", first, None, ["inertia2.phi", "inertia3.w"], 1.0, 0.001, 1e-10,
                      {}, [], None, None, 1e-6))
    else:
        print("MODELICAPATH not set: the MSL case skipped")
    failures = 0
    for (label, model, name, names, stop, interval, tol, starts, params, inp, ref_file, allowed) in cases:
        ref_csv = os.path.join(a.out, label.replace(" ", "_").replace("=", "_") + ".csv")
        ref_model = ref_file or os.path.join(ROOT, model)
        model_path = os.path.join(ROOT, model)
        model_args = ["--model", name] if name else []
        rmoc(["simulate", ref_model, *model_args, "--stop-time", str(stop), "--interval", str(interval),
              "--tolerance", str(tol), *params, "-q", "-o", ref_csv], a.rmoc)
        t_ref, ref = read_csv(ref_csv, names)
        for version in ["2", "3"]:
            fmu = os.path.join(a.out, "%s_fmi%s.fmu" % (os.path.basename(model)[:-4], version))
            rmoc(["fmu", model_path, *model_args, "--fmi", version, "-q", "-o", fmu], a.rmoc)
            problems = validate_fmu(fmu)
            if problems:
                failures += 1
                print("FAIL %s FMI %s: the description does not validate: %s" % (label, version, problems))
                continue
            for kind in ["CoSimulation", "ModelExchange"]:
                try:
                    r = simulate_fmu(fmu, fmi_type=kind, stop_time=stop, output_interval=interval,
                                     relative_tolerance=tol, output=names, start_values=starts,
                                     input=inp, record_events=False)
                except Exception as e:
                    failures += 1
                    print("FAIL %s FMI %s %s: %s" % (label, version, kind, e))
                    continue
                worst = max(difference(t_ref, ref[n], r["time"], r[n]) for n in names)
                ok = worst <= allowed and abs(r["time"][-1] - stop) < 1e-9
                failures += not ok
                print("%s %s, FMI %s, %s: largest difference from rmoc simulate %.2e (allowed %.0e)"
                      % ("ok  " if ok else "FAIL", label, version, kind, worst, allowed))
            # (An FMU is about 20 MB.)
            os.remove(fmu)
    # The parameter changed the run: the pendulum with g = 3.71 is not the
    # default one.
    t1, y1 = read_csv(os.path.join(a.out, "pendulum.csv"), ["y"])
    t2, y2 = read_csv(os.path.join(a.out, "pendulum_g_3.71.csv"), ["y"])
    moved = np.max(np.abs(y1["y"] - y2["y"]))
    ok = moved > 0.1
    failures += not ok
    print("%s g = 3.71 through FMPy moves y by up to %.3f from the default run" % ("ok  " if ok else "FAIL", moved))
    if failures:
        print("%d FMU checks failed" % failures)
        sys.exit(1)
    print("all FMU checks passed")


if __name__ == "__main__":
    main()
