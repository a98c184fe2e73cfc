"""``nnabla.utils.inspection``'s function-hook tools: ``NanInfTracer``, ``TimeProfiler`` and
``CpuTimerCallback``.

They are callbacks for ``forward(function_pre_hook=..., function_post_hook=...)`` and
``backward(...)`` (a static graph then runs op by op: ``stadyn.graph._function_hooks``), used
as in NNabla 1.39:

* ``NanInfTracer(trace_nan=True, trace_inf=True, need_details=True)``: its
  ``forward_post_hook`` counts the NaNs / infs of every function's outputs, its
  ``backward_post_hook`` those of every function's inputs' gradients (on the device, no wait);
  ``check()`` (or leaving ``with tracer.trace():``) prints the functions in the order they ran,
  the first bad one marked, and raises ``ValueError`` naming it (its type, shapes and arguments
  with ``need_details``; Stadyn adds its scope and the line that created it).  Its ``post_hook``
  raises ``NotImplementedError`` and ``pre_hook`` is None, as in NNabla.
* ``TimeProfiler(ext_name, device_id)``: ``with tp.scope("forward"):`` labels the hooks' timings;
  ``tp.pre_hook`` / ``tp.post_hook`` time each function, ``calc_elapsed_time(names)`` records
  one iteration, ``tp()`` prints the averages without the first iteration (``### scope ###``,
  ``Function: time [ms]``), ``average()``, ``get_all_results()`` and ``to_csv(out_dir)`` give
  them (``profile_summary.csv``, ``profile_detail.csv``).  Wall-clock times, the device waited
  for at each function's end (NNabla uses CUDA events on a GPU).  ``sd.profile`` gives Stadyn's
  own per-op and per-scope times without running the graph op by op
  (docs/seeing-your-network.md).

Example:
    >>> import numpy as np
    >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
    >>> x = nn.Variable.from_numpy_array(np.array([1.0, 0.0]), need_grad=True)
    >>> y = F.sum(F.log(x))
    >>> nit = NanInfTracer()
    >>> try:  # doctest: +NORMALIZE_WHITESPACE
    ...     with nit.trace():
    ...         y.forward(function_post_hook=nit.forward_post_hook)
    ... except ValueError as e:
    ...     message = str(e)
    Error during forward propagation
        Log <-- ERROR
    >>> message.split(" (rank")[0]
    "The 0th output of the function 'Log'"
"""

from __future__ import annotations

import contextlib
import csv
import os
import time
from collections import OrderedDict
from typing import Any

import numpy as np
import torch

from ....graph import data_of, grad_of
from ..ext_utils import import_extension_module

__all__ = ["FunctionHookCallbackBase", "NanInfTracer", "TimeProfiler", "CpuTimerCallback"]


class FunctionHookCallbackBase:
    """The base of NNabla's function-hook helpers: ``pre_hook`` and ``post_hook``, callbacks
    for ``forward(function_pre_hook=..., function_post_hook=...)``, which a subclass gives.

    Example:
        >>> class Count(FunctionHookCallbackBase):
        ...     n = 0
        ...     @property
        ...     def pre_hook(self):
        ...         def hook(f):
        ...             self.n += 1
        ...         return hook
        >>> Count().pre_hook is not None
        True
    """

    @property
    def pre_hook(self) -> Any:
        raise NotImplementedError()

    @property
    def post_hook(self) -> Any:
        raise NotImplementedError()


# NNabla's layout of the details, trailing spaces included
_DETAILS = ("\n        Function details: \n            function type: {}\n"
            "            shapes of inputs: {} \n            shapes of outputs: {}\n"
            "            function args: {}\n        ")


def _order(n: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(n, f"{n}th")


def _counts(tensors, what) -> list:
    """One 0-d count per tensor (on its device): of its NaNs or infs (None: no array)."""
    test = torch.isnan if what == "nan" else torch.isinf
    return [None if t is None or not t.is_floating_point() else test(t.detach()).sum()
            for t in tensors]


class NanInfTracer(FunctionHookCallbackBase):
    """Hooks that find the first function whose outputs (forward) or inputs' gradients
    (backward) hold a NaN or an inf (see the module docstring).

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> x = nn.Variable.from_numpy_array(np.array([1.0, 4.0]), need_grad=True)
        >>> y = F.sum(F.pow_scalar(x, 0.5))
        >>> nit = NanInfTracer()
        >>> with nit.trace():
        ...     y.forward(function_post_hook=nit.forward_post_hook)
        ...     y.backward(function_post_hook=nit.backward_post_hook)
        >>> [f.name for f in nit.key_to_stat_bwd]
        ['Sum', 'PowScalar']
    """

    def __init__(self, trace_nan: bool = True, trace_inf: bool = True,
                 need_details: bool = True):
        self.trace_nan, self.trace_inf = trace_nan, trace_inf
        self.need_details = need_details
        self.key_to_stat_fwd: OrderedDict = OrderedDict()
        self.key_to_stat_bwd: OrderedDict = OrderedDict()

    def _stat(self, f, table: OrderedDict) -> dict:
        stat = table.get(f)
        if stat is None:
            stat = table[f] = {"name": f.name, "function_type": None, "function_args": None,
                               "input_shapes": None, "output_shapes": None}
            if self.need_details:
                stat.update({"function_type": f.info.type_name,
                             "function_args": str(f.info.args),
                             "input_shapes": [str(v.shape) for v in f.inputs],
                             "output_shapes": [str(v.shape) for v in f.outputs]})
        return stat

    def _callback(self, table: OrderedDict, tensors_of):
        if not (self.trace_nan or self.trace_inf):
            return None

        def callback(f):
            tensors = tensors_of(f)
            self._stat(f, table).update({
                "nan": _counts(tensors, "nan") if self.trace_nan else [],
                "inf": _counts(tensors, "inf") if self.trace_inf else [],
                "rank": f.rank})
        return callback

    @property
    def pre_hook(self) -> None:
        """None: the tracer checks after each function only."""
        return None

    @property
    def post_hook(self) -> Any:
        raise NotImplementedError("NanInfTracer has no member named post_hook. Please use "
                                  "forward_post_hook and backward_post_hook for forward and "
                                  "backward respectively instead.")

    @property
    def forward_post_hook(self) -> Any:
        """The callback for ``forward(function_post_hook=...)``: counts each function's
        outputs' NaNs and infs (None when neither is traced)."""
        return self._callback(self.key_to_stat_fwd,
                              lambda f: [data_of(v) for v in f.outputs])

    @property
    def backward_post_hook(self) -> Any:
        """The callback for ``backward(function_post_hook=...)``: counts the NaNs and infs of
        each function's inputs' gradients (None when neither is traced)."""
        return self._callback(self.key_to_stat_bwd,
                              lambda f: [grad_of(v) for v in f.inputs])

    @contextlib.contextmanager
    def trace(self):
        """A block that calls :meth:`check` when it ends (not when it raises)."""
        yield self
        self.check()

    def _check(self, table: OrderedDict, phase: str) -> None:
        history = []
        for f, stat in table.items():
            history.append(f)
            index = None
            for kind in ("nan", "inf"):
                if index is None and getattr(self, "trace_" + kind):
                    index = next((i for i, c in enumerate(stat[kind])
                                  if c is not None and int(c) > 0), None)
            if index is None:
                continue
            lines = [f"Error during {phase} propagation"]
            lines += [f"\t{g}" for g in history[:-1]] + [f"\t{f} <-- ERROR"]
            print("\n".join(lines))
            where = f" in scope '{f.scope}'" if getattr(f, "scope", "") else ""
            if getattr(f, "where", None):
                where += f", created at {f.where}"
            msg = (f"The {_order(index)} output of the function '{stat['name']}' (rank: "
                   f"{stat['rank']}){where} has nan or inf as its values.")
            if self.need_details:
                msg += _DETAILS.format(stat["function_type"], stat["input_shapes"],
                                       stat["output_shapes"], stat["function_args"])
            raise ValueError(msg)

    def check(self) -> None:
        """Raise ``ValueError`` naming the first function (forward, then backward) whose
        traced outputs or gradients held a NaN or an inf."""
        self._check(self.key_to_stat_fwd, "forward")
        self._check(self.key_to_stat_bwd, "backward")


class CpuTimerCallback(FunctionHookCallbackBase):
    """Wall-clock time per function key (NNabla's ``CpuTimerCallback``): ``pre_hook`` /
    ``post_hook`` stamp it (the device waited for first), ``calc_elapsed_time()`` records one
    measure per key, ``average(start_index)`` gives ``{key: {"time": ms, "num", "scale"}}``.

    Example:
        >>> t = CpuTimerCallback("cpu", "0")
        >>> t.pre_hook("step"); t.post_hook("step"); t.calc_elapsed_time()
        >>> t.average()["step"]["num"], t.average()["step"]["scale"]
        (1, 'ms')
    """

    def __init__(self, ext_name: str, device_id: Any):
        self.results: OrderedDict = OrderedDict()
        self.device_id = str(device_id)
        self.ext_module = import_extension_module(ext_name)
        self.key_to_times: OrderedDict = OrderedDict()

    @property
    def pre_hook(self) -> Any:
        def callback(key):
            self.key_to_times.setdefault(key, [0.0, 0.0])[0] = self.timer()
        return callback

    @property
    def post_hook(self) -> Any:
        def callback(key):
            if key not in self.key_to_times:
                raise ValueError(f"post_hook({key!r}) without a pre_hook for it")
            self.ext_module.synchronize(device_id=self.device_id)
            self.key_to_times[key][1] = self.timer()
        return callback

    @staticmethod
    def timer() -> float:
        return time.time()

    def calc_elapsed_time(self) -> None:
        for key, (start, end) in self.key_to_times.items():
            self.results.setdefault(key, []).append(end - start)

    def average(self, start_index: int = 0) -> dict:
        return {key: {"time": float(np.mean(times[start_index:])) * 1e3 if
                      times[start_index:] else float("nan"),
                      "num": len(times) - start_index, "scale": "ms"}
                for key, times in self.results.items()}


class TimeProfiler(FunctionHookCallbackBase):
    """Per-function and per-scope times of forward and backward runs (see the module
    docstring).

    Example:
        >>> import numpy as np
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> x = nn.Variable.from_numpy_array(np.ones((2, 3)))
        >>> y = F.sum(F.tanh(x))
        >>> tp = TimeProfiler("cpu", "0")
        >>> for _ in range(2):
        ...     with tp.scope("forward"):
        ...         y.forward(function_pre_hook=tp.pre_hook, function_post_hook=tp.post_hook)
        ...     tp.calc_elapsed_time(["forward", "summary"])
        >>> [str(f) for f in tp.average()["forward"]], tp.average(1)["summary"]["forward"]["num"]
        (['Tanh', 'Sum'], 1)
    """

    def __init__(self, ext_name: str, device_id: Any):
        if ext_name not in ("cpu", "cuda", "cudnn"):
            raise NotImplementedError(
                f"Profiler for the extension '{ext_name}' is not implemented.")
        self.profiler = CpuTimerCallback
        self.ext_name, self.device_id = ext_name, device_id
        self._scope_name = ""
        self.profilers: dict = {}
        self.create_new_profiler("summary")

    def create_new_profiler(self, scope_name: str) -> None:
        self.profilers[scope_name] = self.profiler(self.ext_name, self.device_id)

    @contextlib.contextmanager
    def scope(self, scope_name: str):
        """Label the hooks' timings inside the block ``scope_name``; the block's own time goes
        to the ``"summary"`` scope."""
        previous = self._scope_name
        try:
            if scope_name not in self.profilers:
                self.create_new_profiler(scope_name)
            self.call_pre_hook("summary", scope_name)
            self._scope_name = scope_name
            yield self
        finally:
            self._scope_name = previous
            self.call_post_hook("summary", scope_name)

    def _profiler(self) -> CpuTimerCallback:
        profiler = self.profilers.get(self._scope_name)
        if profiler is None:
            raise KeyError(f"TimeProfiler: pre_hook/post_hook are read inside "
                           f"'with tp.scope(name):' only (no scope {self._scope_name!r})")
        return profiler

    @property
    def pre_hook(self) -> Any:
        """The callback for ``function_pre_hook``, timing into the current scope."""
        return self._profiler().pre_hook

    @property
    def post_hook(self) -> Any:
        """The callback for ``function_post_hook``, timing into the current scope."""
        return self._profiler().post_hook

    def call_pre_hook(self, scope_name: str, key: Any) -> None:
        if scope_name not in self.profilers:
            self.create_new_profiler(scope_name)
        self.profilers[scope_name].pre_hook(key)

    def call_post_hook(self, scope_name: str, key: Any) -> None:
        if scope_name not in self.profilers:
            raise ValueError(f"profiler instance for '{scope_name}' scope is not found. ")
        self.profilers[scope_name].post_hook(key)

    def calc_elapsed_time(self, names: Any = None) -> None:
        """Record this iteration's times of the scopes ``names`` (a name, a list; all: None)."""
        if isinstance(names, str):
            names = [names]
        for name in (self.profilers if names is None else names):
            self.profilers[name].calc_elapsed_time()

    def average(self, start_index: int = 0) -> dict:
        return {name: p.average(start_index) for name, p in self.profilers.items()}

    def get_all_results(self) -> dict:
        return {name: p.results for name, p in self.profilers.items() if p.results}

    def to_csv(self, out_dir: str = "./", ignore_init: bool = True) -> None:
        """Write ``profile_summary.csv`` (scope, time, scale, num) and ``profile_detail.csv``
        (one row per function, its times per scope) under ``out_dir``."""
        os.makedirs(out_dir, exist_ok=True)
        averages = self.average(start_index=1 if ignore_init else 0)
        with open(os.path.join(out_dir, "profile_summary.csv"), "w", newline="") as f:
            writer = csv.DictWriter(f, ["scope", "time", "scale", "num"])
            writer.writeheader()
            writer.writerows(dict(r, scope=s) for s, r in averages["summary"].items())
        rows: dict = {}          # a function's unique name -> its columns
        unique: dict = {}        # id(key) -> (unique name, key)
        counts: dict = {}
        for scope, results in averages.items():
            if scope == "summary":
                continue
            for key, result in results.items():
                if id(key) not in unique:
                    n = counts.get(str(key), 0)
                    counts[str(key)] = n + 1
                    unique[id(key)] = (f"{key}_{n}", key)
                    rows[unique[id(key)][0]] = {}
                rows[unique[id(key)][0]].update({f"{k}_{scope}": v for k, v in result.items()})
        header = sorted({k for r in rows.values() for k in r})
        originals = {name: key for name, key in unique.values()}
        with open(os.path.join(out_dir, "profile_detail.csv"), "w", newline="") as f:
            writer = csv.DictWriter(f, ["scope", "original_key"] + header)
            writer.writeheader()
            writer.writerows(dict(r, scope=name, original_key=originals[name])
                             for name, r in rows.items())

    def __call__(self, *args, **kwargs) -> None:
        """Print each scope's averages, leaving out the first iteration."""
        for name, results in self.average(start_index=1).items():
            if not results:
                continue
            print(f"### {name} ###")
            for key, result in results.items():
                print(f"{key}: {result['time']} [{result['scale']}]")
            print()
