"""rmoc from Python: compile a model once, simulate it, sweep its parameters.

    import rmoc
    m = rmoc.compile("examples/gearbox.rmo", model="Gearbox")
    r = m.simulate(stop_time=5, parameters={"mesh.friction.mu": 0.1}, outputs=["Delta"])
    r.time, r["Delta"]            # NumPy arrays
    r.to_pandas()                 # a DataFrame (with pandas installed)

    table = rmoc.sweep(m, {"mesh.friction.mu": [0.0, 0.1, 0.2]}, outputs=["Delta"])
    table = rmoc.sweep(m, points, client=dask_client)   # on a Dask cluster

A compiled model is reusable across calls and threads (runs release the
GIL), and can be pickled: it travels as its source text and is compiled
again where it is unpickled (once per process; `rmoc.compile` always
compiles anew, since the files a model uses may have changed).

Errors are exceptions: ``rmoc.CompileError`` for a model that cannot be
read or compiled, ``rmoc.SimulationError`` for a run that fails, both
``rmoc.Error``: ``str(e)`` is the message as the command line shows it
(``file:line:col``, the source line, a hint), and ``e.file``, ``e.line``,
``e.column``, ``e.message``, ``e.hint`` are its parts; ``e.kind`` is the
sort of mistake, stable across rewordings of the message
(``"unresolved-name"``, ``"syntax"``, ``"solver"``, ... as the command line
prints it in ``error[kind]``).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading

import numpy as np

from . import _rmoc
from ._rmoc import CompileError, Error, SimulationError

__all__ = [
    "compile",
    "sweep",
    "Model",
    "Result",
    "Error",
    "CompileError",
    "SimulationError",
]
__version__ = _rmoc.__version__

#: The run settings every call takes (None: the model's experiment, or the default).
SETTINGS = (
    "start_time",
    "stop_time",
    "tolerance",
    "atol",
    "interval",
    "solver",
    "step",
    "rho_inf",
)


def compile(path, model=None):
    """Compiles ``model`` of the file ``path`` (default: the file's only
    model, or the one named as the file) into a :class:`Model`."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        err = CompileError(f"error[io]: cannot read `{path}`: {e.strerror or e}")
        err.file, err.line, err.column, err.kind = path, None, None, "io"
        err.message, err.hint = str(err), "check the file name and that it is readable"
        raise err from None
    # Always compiled anew: the model may use other files that changed.
    return _remember(path, text, model, Model(_rmoc.compile(path, text, model), path, text, model))


# Compiled models of this process by (path, text digest, model): unpickling
# the same model again (a Dask worker running many tasks) compiles it once.
_CACHE = {}
_CACHE_LOCK = threading.Lock()


def _key(path, text, model):
    return (path, hashlib.sha256(text.encode()).hexdigest(), model)


def _remember(path, text, model, m):
    with _CACHE_LOCK:
        if len(_CACHE) >= 64:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[_key(path, text, model)] = m
    return m


def _compiled(path, text, model):
    """A pickled model arriving: the one compiled from the same text in
    this process, else compiled now."""
    with _CACHE_LOCK:
        found = _CACHE.get(_key(path, text, model))
    if found is not None:
        return found
    return _remember(path, text, model, Model(_rmoc.compile(path, text, model), path, text, model))


def _settings(given):
    unknown = set(given) - set(SETTINGS)
    if unknown:
        raise TypeError(
            f"unknown run setting(s) {sorted(unknown)}; the settings are {list(SETTINGS)}"
        )
    return {k: given.get(k) for k in SETTINGS}


class Model:
    """A compiled model. Make one with :func:`compile`."""

    def __init__(self, native, path, text, model):
        self._native = native
        self._path = path
        self._text = text
        self._model = model
        self._types = {n: (t, s) for n, t, s in native.parameter_types()}

    @property
    def name(self):
        """The model's full name."""
        return self._native.name

    @property
    def variables(self):
        """The names of the result's columns (time aside)."""
        return list(self._native.variables)

    @property
    def parameters(self):
        """Each parameter's value at the start: a float, an int for an
        Integer, a bool for a Boolean."""
        return {n: self._typed(n, v) for n, v in self._native.parameter_values()}

    @property
    def settable_parameters(self):
        """The parameters a run or a sweep may set (not structural ones)."""
        return [n for n, (_, s) in self._types.items() if s]

    def _typed(self, name, value):
        kind = self._types.get(name, ("Real", True))[0]
        if kind == "Integer":
            return int(value)
        if kind == "Boolean":
            return bool(value)
        return value

    def simulate(self, stop_time=None, *, parameters=None, outputs=None, **settings):
        """One run. ``parameters``: {name: value}; ``outputs``: patterns of
        the columns to keep (``*`` and ``?`` match within one dotted
        component, ``**`` across them; default: all);
        ``settings``: start_time, tolerance, atol, interval, solver, step,
        rho_inf (default: the model's experiment annotation)."""
        settings["stop_time"] = stop_time
        raw = self._native.simulate(_settings(settings), parameters or {}, outputs)
        return Result(raw, self)

    def sweep(self, points, *, outputs=None, summary=("final",), jobs=None, client=None, **settings):
        """Runs every point; see :func:`sweep`."""
        return sweep(
            self, points, client=client, outputs=outputs, summary=summary, jobs=jobs, **settings
        )

    def __reduce__(self):
        # Shipped as its text; compiled again where it arrives.
        return (_compiled, (self._path, self._text, self._model))

    def __repr__(self):
        return f"<rmoc.Model {self.name} from {self._path!r}>"


class Result:
    """One run's rows: ``time`` and one column per name, as NumPy arrays."""

    def __init__(self, raw, model):
        self.time = raw["time"]
        self.names = list(raw["names"])
        self.values = raw["values"]
        self.units = dict(zip(self.names, raw["units"]))
        self.parameters = {n: model._typed(n, v) for n, v in raw["parameters"].items()}
        self.stats = json.loads(raw["stats"]) if raw["stats"] else {}
        self.warnings = list(raw["warnings"])
        self._index = {n: k for k, n in enumerate(self.names)}

    def __getitem__(self, name):
        if name == "time":
            return self.time
        try:
            return self.values[:, self._index[name]]
        except KeyError:
            raise KeyError(f"{name!r} is not a column of this result") from None

    def __contains__(self, name):
        return name == "time" or name in self._index

    def keys(self):
        return ["time", *self.names]

    def __len__(self):
        return len(self.time)

    def to_pandas(self):
        """The rows as a DataFrame: ``time``, then the columns."""
        import pandas as pd

        frame = pd.DataFrame(self.values, columns=self.names)
        frame.insert(0, "time", self.time)
        return frame

    def __repr__(self):
        return f"<rmoc.Result {len(self.time)} rows x {len(self.names)} columns>"


def _points(points):
    """(names, rows of floats) of a DataFrame, a dict of equal-length
    sequences (zipped), or a sequence of dicts with the same keys."""
    if hasattr(points, "columns") and hasattr(points, "itertuples"):
        names = [str(c) for c in points.columns]
        rows = [list(r) for r in points.itertuples(index=False, name=None)]
    elif isinstance(points, dict):
        names = [str(k) for k in points]
        columns = [list(v) if np.ndim(v) else [v] for v in points.values()]
        n = max((len(c) for c in columns), default=0)
        bad = [names[k] for k, c in enumerate(columns) if len(c) not in (1, n)]
        if bad:
            raise ValueError(
                f"the values of {bad} are not as many as the longest ({n}); "
                "a dict of lists goes point by point (give one value to hold it fixed)"
            )
        rows = [[c[0] if len(c) == 1 else c[k] for c in columns] for k in range(n)]
    else:
        points = list(points)
        if not points:
            return [], []
        names = [str(k) for k in points[0]]
        rows = []
        for k, p in enumerate(points):
            if sorted(map(str, p)) != sorted(names):
                raise ValueError(f"point {k} sets {sorted(p)}, the first sets {sorted(names)}")
            rows.append([p[n] for n in names])
    return names, [[_number(n, x) for n, x in zip(names, r)] for r in rows]


def _number(name, x):
    if isinstance(x, (bool, np.bool_)):
        return 1.0 if x else 0.0
    try:
        return float(x)
    except (TypeError, ValueError):
        raise ValueError(f"parameter `{name}`: {x!r} is not a number or a bool") from None


def _frame(table, offset=0):
    """A sweep table (the native dict) as a DataFrame, or a dict of columns
    without pandas: point, the parameters, status, the statistics, message."""
    columns = {"point": np.arange(offset, offset + len(table["status"]))}
    for k, (name, kind) in enumerate(zip(table["parameters"], table["types"])):
        values = table["points"][:, k]
        if kind == "Integer":
            values = values.astype(np.int64)
        elif kind == "Boolean":
            values = values != 0
        columns[name] = values
    columns["status"] = list(table["status"])
    for k, name in enumerate(table["columns"]):
        columns[name] = table["values"][:, k]
    columns["message"] = list(table["message"])
    try:
        import pandas as pd
    except ImportError:
        return columns
    return pd.DataFrame(columns)


def _sweep_chunk(model, names, rows, settings, outputs, summary, jobs, offset):
    """One Dask task: a part of the points, run in the worker's process."""
    table = model._native.sweep(names, rows, settings, outputs, summary, jobs)
    return _frame(table, offset)


def sweep(model, points, client=None, *, outputs=None, summary=("final",), jobs=None, chunks=None, **settings):
    """Runs ``model`` at every point and returns one row per point.

    ``points``: a DataFrame (one column per parameter), a dict of
    equal-length lists (taken point by point; a single value holds at every
    point) or a list of dicts. ``outputs``: patterns of the columns to
    summarize (default: all); ``summary``: statistics of each, from
    final, max, min, mean, rms (time averages by the trapezoidal rule).
    ``settings``: as :meth:`Model.simulate`.

    Without ``client`` the points run in this process on ``jobs`` threads
    (default: one per core). With a ``dask.distributed.Client`` (a
    LocalCluster, or dask_jobqueue's SLURMCluster / PBSCluster) they run
    on its workers in ``chunks`` parts (default: four per worker thread),
    each on one thread unless ``jobs`` says otherwise; the model travels as
    its text and is compiled once per worker process.

    The table (a pandas DataFrame; a dict of columns without pandas) has
    the columns point, the parameters, status (ok, failed), the statistics
    (a column's final value under its own name, the others as ``max(x)``)
    and message (a failed point's diagnostic). A failed point does not stop
    the others.
    """
    names, rows = _points(points)
    settings = _settings(settings)
    outputs = list(outputs) if outputs else None
    summary = [summary] if isinstance(summary, str) else list(summary)
    if client is None:
        return _frame(model._native.sweep(names, rows, settings, outputs, summary, jobs))
    if chunks is None:
        threads = sum(client.nthreads().values()) or 1
        chunks = 4 * threads
    chunks = max(1, min(int(chunks), len(rows) or 1))
    size = -(-len(rows) // chunks) if rows else 1
    futures = []
    for start in range(0, max(len(rows), 1), size):
        part = rows[start : start + size]
        futures.append(
            client.submit(
                _sweep_chunk,
                model,
                names,
                part,
                settings,
                outputs,
                summary,
                jobs or 1,
                start,
                pure=False,
            )
        )
    parts = client.gather(futures)
    try:
        import pandas as pd
    except ImportError:
        merged = {}
        for p in parts:
            for k, v in p.items():
                merged.setdefault(k, []).extend(list(v))
        return merged
    return pd.concat(parts, ignore_index=True)
