"""What an rmoc FMU costs a host (docs/benchmarks.md, FMU section).

    python benches/fmu/timing.py --rmoc target/release/rmoc

For the pendulum and the gearbox: the export (`rmoc fmu`), and one run in
FMPy (co-simulation and model exchange, FMI 2.0: unzip, load, instantiate
= compile the carried model, simulate, free) against the whole `rmoc
simulate` process on the same output grid; best of --reps.
"""

import argparse
import os
import subprocess
import tempfile
import time

from fmpy import extract, read_model_description, simulate_fmu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def best(f, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rmoc", default=os.path.join(ROOT, "target/release/rmoc"))
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    print("| model | export | FMU size | rmoc simulate | FMPy CS (extracted) | FMPy ME (extracted) | FMPy CS from the .fmu |")
    print("|---|---|---|---|---|---|---|")
    for label, model, stop, interval, outs in [
        ("pendulum", "tests/models/pendulum.rmo", 5.0, 0.01, ["x", "y"]),
        ("gearbox", "examples/gearbox.rmo", 5.0, 0.01, ["pinion.w", "gear.w"]),
    ]:
        path = os.path.join(ROOT, model)
        fmu = os.path.join(tmp, label + ".fmu")
        export = best(lambda: subprocess.run([a.rmoc, "fmu", path, "-q", "-o", fmu], check=True), a.reps)
        size = os.path.getsize(fmu) / 1e6
        csv = os.path.join(tmp, label + ".csv")
        sim = best(lambda: subprocess.run([a.rmoc, "simulate", path, "-q", "--stop-time", str(stop),
                                           "--interval", str(interval), "-o", csv], check=True), a.reps)
        md = read_model_description(fmu)
        unzipped = extract(fmu)
        run = lambda kind, where: simulate_fmu(where, fmi_type=kind, stop_time=stop, output_interval=interval,
                                               output=outs, model_description=md)
        cs = best(lambda: run("CoSimulation", unzipped), a.reps)
        me = best(lambda: run("ModelExchange", unzipped), a.reps)
        cs_zip = best(lambda: run("CoSimulation", fmu), a.reps)
        print("| %s | %.2f s | %.1f MB | %.0f ms | %.0f ms | %.0f ms | %.0f ms |"
              % (label, export, size, sim * 1e3, cs * 1e3, me * 1e3, cs_zip * 1e3))


if __name__ == "__main__":
    main()
