"""The Python package against the command line, pickling, sweeps and Dask.

Run from the repository: ``pytest python/tests`` with the package installed
(``pip install ./python``) and the CLI built (``cargo build --release``;
``RMOC_CLI`` names another binary).
"""

import csv
import multiprocessing
import os
import pickle
import subprocess
from pathlib import Path

import numpy as np
import pytest

import rmoc

ROOT = Path(__file__).resolve().parents[2]
CLI = os.environ.get("RMOC_CLI", str(ROOT / "target" / "release" / "rmoc"))
GEARBOX = ROOT / "examples" / "gearbox.rmo"
PENDULUM = ROOT / "tests" / "models" / "pendulum.rmo"

OSCILLATOR = (ROOT / "tests" / "models" / "oscillator.rmo").read_text()


def cli(*args):
    return subprocess.run([CLI, *map(str, args)], capture_output=True, text=True)


def cli_result(tmp_path, model_file, *args):
    """The CLI's CSV result: header and rows as text."""
    out = tmp_path / "cli.csv"
    done = cli("simulate", model_file, "-o", out, "-q", *args)
    assert done.returncode == 0, done.stderr
    with open(out) as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


@pytest.fixture
def oscillator(tmp_path):
    path = tmp_path / "oscillator.rmo"
    path.write_text(OSCILLATOR)
    return path


def assert_equal_to_cli(result, header, rows):
    assert ["time", *result.names] == header
    got = np.column_stack([result.time, result.values])
    want = np.array([[float(x) for x in r] for r in rows])
    assert got.shape == want.shape
    # Bit for bit: the same code ran, and the CSV's numbers read back exactly.
    np.testing.assert_array_equal(got, want)


def test_the_gearbox_equals_the_command_line(tmp_path):
    header, rows = cli_result(tmp_path, GEARBOX, "--model", "Gearbox", "--stop-time", "1")
    m = rmoc.compile(GEARBOX, model="Gearbox")
    assert_equal_to_cli(m.simulate(stop_time=1), header, rows)


def test_the_pendulum_equals_the_command_line_with_a_parameter(tmp_path):
    header, rows = cli_result(tmp_path, PENDULUM, "-p", "L=1.25", "--tolerance", "1e-7")
    m = rmoc.compile(PENDULUM)
    r = m.simulate(parameters={"L": 1.25}, tolerance=1e-7)
    assert_equal_to_cli(r, header, rows)
    assert r.parameters["L"] == 1.25
    assert r.parameters["m"] == 1.0


def test_a_result_is_numpy_arrays_and_a_dataframe(oscillator):
    m = rmoc.compile(oscillator)
    assert m.name == "Oscillator"
    assert m.parameters == {"m": 1.0, "k": 4.0, "d": 0.4, "x0": 1.0, "n": 2, "forced": False}
    assert type(m.parameters["n"]) is int and type(m.parameters["forced"]) is bool
    assert m.variables == ["x", "v", "der(x)", "der(v)"]
    r = m.simulate(outputs=["x"], parameters={"d": 0.0, "forced": True})
    assert r.names == ["x"]
    assert isinstance(r.time, np.ndarray) and r["x"].shape == r.time.shape
    # Undamped, forced by n = 2: x = 1/2 + (1/2) cos(2 t).
    np.testing.assert_allclose(r["x"], 0.5 + 0.5 * np.cos(2 * r.time), atol=1e-4)
    assert r.stats["integrator"]["steps"] > 0
    pd = pytest.importorskip("pandas")
    frame = r.to_pandas()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["time", "x"]
    with pytest.raises(KeyError):
        r["nothing"]
    with pytest.raises(ValueError, match="matches no result column"):
        m.simulate(outputs=["y*"])
    with pytest.raises(TypeError, match="unknown run setting"):
        m.simulate(tolerence=1e-3)


def test_a_bad_model_raises_with_file_and_line(tmp_path):
    bad = tmp_path / "bad.rmo"
    bad.write_text("model Bad\n  Real x;\nequation\n  der(x) = -y;\nend Bad;\n")
    with pytest.raises(rmoc.CompileError) as caught:
        rmoc.compile(bad)
    e = caught.value
    assert isinstance(e, rmoc.Error)
    assert (e.file, e.line, e.column) == (str(bad), 4, 13)
    assert e.kind == "unresolved-name"
    assert "`y`" in e.message
    # The same text as the command line prints.
    done = cli("simulate", bad, "-o", tmp_path / "never.csv")
    assert done.returncode == 1
    assert str(e) == done.stderr.strip()
    assert not (tmp_path / "never.csv").exists()

    syntax = tmp_path / "syntax.rmo"
    syntax.write_text("model S\n  Real x\nequation\n  der(x) = 1;\nend S;\n")
    with pytest.raises(rmoc.CompileError) as caught:
        rmoc.compile(syntax)
    assert caught.value.file == str(syntax) and caught.value.line in (2, 3)

    with pytest.raises(rmoc.CompileError, match="cannot read"):
        rmoc.compile(tmp_path / "missing.rmo")


def test_compile_reads_the_files_a_model_uses_anew(tmp_path):
    (tmp_path / "Gain.rmo").write_text("model Gain\n  parameter Real k = 1;\n  Real y = k;\nend Gain;\n")
    top = tmp_path / "Top.rmo"
    top.write_text("model Top\n  Gain g;\nend Top;\n")
    first = rmoc.compile(top)
    assert first.simulate(outputs=["g.y"])["g.y"][-1] == 1.0
    (tmp_path / "Gain.rmo").write_text("model Gain\n  parameter Real k = 5;\n  Real y = k;\nend Gain;\n")
    second = rmoc.compile(top)
    assert second.simulate(outputs=["g.y"])["g.y"][-1] == 5.0


def test_a_failed_run_raises_a_simulation_error(oscillator):
    m = rmoc.compile(oscillator)
    with pytest.raises(rmoc.SimulationError) as caught:
        m.simulate(parameters={"k": -1})
    assert "k must be positive" in str(caught.value)
    assert caught.value.line == 11
    with pytest.raises(rmoc.SimulationError, match="takes a whole number"):
        m.simulate(parameters={"n": 1.5})
    with pytest.raises(rmoc.SimulationError, match="did you mean `k`"):
        m.simulate(parameters={"kk": 1})
    # The model is still good for the next call.
    assert m.simulate().time[-1] == 2.0


def _final_x_in_child(model):
    """Runs in a spawned process: the model arrives pickled."""
    return float(model.simulate(parameters={"k": 9.0}, outputs=["x"])["x"][-1])


def test_a_compiled_model_pickles_to_a_subprocess(oscillator):
    m = rmoc.compile(oscillator)
    here = float(m.simulate(parameters={"k": 9.0}, outputs=["x"])["x"][-1])
    # Spawned, not forked: the child has nothing of this process.
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        there = pool.apply(_final_x_in_child, (m,))
    assert there == here
    # Unpickled again in this process: the cached model.
    assert pickle.loads(pickle.dumps(m)) is m


def test_sweeps_take_points_in_three_forms_and_report_failures(oscillator):
    pd = pytest.importorskip("pandas")
    m = rmoc.compile(oscillator)
    as_dict = rmoc.sweep(m, {"k": [1.0, -1.0, 3.0], "n": 3}, outputs=["x"], summary=["final", "max"])
    as_list = m.sweep([{"k": 1.0, "n": 3}, {"k": -1.0, "n": 3}, {"k": 3.0, "n": 3}], outputs=["x"], summary=("final", "max"))
    as_frame = rmoc.sweep(m, pd.DataFrame({"k": [1.0, -1.0, 3.0], "n": [3, 3, 3]}), outputs=["x"], summary="final,max".split(","), jobs=1)
    pd.testing.assert_frame_equal(as_dict, as_list)
    pd.testing.assert_frame_equal(as_dict, as_frame)
    assert list(as_dict.columns) == ["point", "k", "n", "status", "x", "max(x)", "message"]
    assert list(as_dict["status"]) == ["ok", "failed", "ok"]
    assert "k must be positive" in as_dict["message"][1]
    assert "error[assertion]" in as_dict["message"][1]
    assert np.isnan(as_dict["x"][1])
    assert as_dict["n"].dtype == np.int64
    # Each point equals its own run.
    for k, row in as_dict.iterrows():
        if row["status"] == "ok":
            r = m.simulate(parameters={"k": row["k"], "n": 3}, outputs=["x"])
            assert row["x"] == r["x"][-1]
            assert row["max(x)"] == r["x"].max()
    with pytest.raises(rmoc.SimulationError, match="no parameter `kk`"):
        rmoc.sweep(m, {"kk": [1, 2]})


def test_a_sweep_on_a_dask_local_cluster_equals_the_in_process_one(oscillator):
    pytest.importorskip("pandas")
    distributed = pytest.importorskip("distributed")
    m = rmoc.compile(oscillator)
    points = {"k": list(np.linspace(0.5, 10, 20)), "d": list(np.linspace(0, 1, 20))}
    here = rmoc.sweep(m, points, summary=["final", "rms"])
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        there = rmoc.sweep(m, points, client=client, summary=["final", "rms"])
        # The workers are other processes.
        pids = set(client.run(os.getpid).values())
    assert os.getpid() not in pids and len(pids) == 2
    import pandas as pd

    pd.testing.assert_frame_equal(here, there)
    assert len(there) == 20 and (there["status"] == "ok").all()


def test_a_deep_model_runs_and_is_freed_on_a_small_thread(tmp_path):
    # A parameter that is a sum of 20 001 terms: the compiled code's
    # expression tree is that deep. Compiling, running and freeing it from a
    # thread with a 256 KiB stack must not overflow it (each happens on
    # rmoc's own large stack).
    import threading

    expr = " + ".join(["a"] * 20001)
    path = tmp_path / "deep.rmo"
    path.write_text(
        "model Deep\n  parameter Real a = 1e-3;\n  parameter Real p = %s;\n"
        "  Real x(start = 0, fixed = true);\nequation\n  der(x) = p;\nend Deep;\n" % expr
    )
    out = {}

    def work():
        model = rmoc.compile(str(path))
        out["x"] = model.simulate(1.0)["x"][-1]
        del model

    previous = threading.stack_size(256 * 1024)
    try:
        t = threading.Thread(target=work)
        t.start()
        t.join()
    finally:
        threading.stack_size(previous)
    assert abs(out["x"] - 20.001) < 1e-9
