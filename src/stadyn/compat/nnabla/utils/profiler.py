"""``nnabla.utils.profiler``: ``GraphProfiler`` times every function of a graph, forward and
backward, and the whole graph's forward, backward and training step; ``GraphProfilerCsvWriter``
writes the result in NNabla 1.39's CSV layout (CLIP's training script profiles its model so).

As NNabla's, each function is timed alone, on its inputs (those some function computes are
zeros, the others hold their values), ``n_run`` times after one warm-up run or until
``max_measure_execution_time`` seconds have passed; a row holds the function's name, the
parameter scope of its second input when that is a registered parameter (``conv1`` of
``conv1/conv/W``), its inputs' shapes and arguments, and the mean times as strings of 8
significant digits in ``time_scale`` (``'m'``, ``'u'``, ``'n'``: milli-, micro-,
nanoseconds).  The times are Stadyn's: a function runs as its op on PyTorch (forward under
``no_grad``; backward as autograd's backward of that op alone), and the whole graph as
``forward()``/``backward()`` run it.  ``sd.profile`` (docs/seeing-your-network.md) gives
PyTorch's per-kernel view of the same run.

Example:
    >>> import io, numpy as np
    >>> import stadyn.compat.nnabla as nn
    >>> import stadyn.compat.nnabla.functions as F
    >>> import stadyn.compat.nnabla.parametric_functions as PF
    >>> from stadyn.compat.nnabla.utils.profiler import GraphProfiler, GraphProfilerCsvWriter
    >>> import stadyn as sd
    >>> x = nn.Variable.from_numpy_array(np.ones((2, 3), np.float32))
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     with nn.parameter_scope("fc"):
    ...         y = F.mean(F.relu(PF.affine(x, 4)))
    ...     B = GraphProfiler(y, device_id=0, ext_name="cpu", n_run=2)
    >>> B.run()
    >>> [(s.function_name, s.parameter_scope) for s in B.result["forward"]]
    [('Affine', 'fc/affine'), ('ReLU', None), ('Mean', None)]
    >>> out = io.StringIO()
    >>> GraphProfilerCsvWriter(B, file=out).write()
    >>> out.getvalue().splitlines()[6]
    'parameter_scope,function_name,inputs_shape,args_info,forward,backward,forward_n_run,backward_n_run'
"""

from __future__ import annotations

import csv
import os
import sys
import time
from collections import namedtuple
from typing import Any, Callable

import torch

from ....graph import interpret, leaf_tensor
from ...._version import __version__ as _stadyn_version
from .._parameter import get_parameters
from ..ext_utils import import_extension_module

__all__ = ["ProfileStat", "convert_time_scale", "GraphProfiler", "GraphProfilerCsvWriter"]

ProfileStat = namedtuple("ProfileStat", ["parameter_scope", "inputs_shape", "args_info",
                                         "function_name", "mean_time", "n_run"])
ProfileStat.__doc__ = ("One function's timing: ``parameter_scope``, ``inputs_shape``, "
                       "``args_info``, ``function_name``, ``mean_time``, ``n_run``.")

_SCALES = {"m": 1e3, "u": 1e6, "n": 1e9}


def convert_time_scale(sec: float, format: str = "m") -> float:
    """``sec`` seconds in milli- (``'m'``), micro- (``'u'``) or nanoseconds (``'n'``).

    Example:
        >>> convert_time_scale(0.5, "u")
        500000.0
    """
    if format not in _SCALES:
        raise NotImplementedError("format must be {}".format(_SCALES.keys()))
    return sec * _SCALES[format]


def _input_tensor(v: Any) -> torch.Tensor:
    """What the function is timed on: a computed input as zeros (NNabla zeroes them), a leaf
    its value; a gradient asked for where the Variable needs one."""
    if v.parent is not None:
        t = torch.zeros(tuple(v.shape), dtype=v.torch_dtype)
    else:
        t = leaf_tensor(v).detach().clone()
    if v.need_grad and t.is_floating_point():
        t.requires_grad_(True)
    return t


class GraphProfiler:
    """``GraphProfiler(graph, device_id, ext_name, solver=None, n_run=100,
    max_measure_execution_time=1, time_scale='m', backward_accum=False)``: :meth:`run` fills
    ``result`` (``'forward'``, ``'backward'``: a :class:`ProfileStat` per function in graph
    order; ``'forward_all'``, ``'backward_all'``, ``'training'`` (with a ``solver``) and their
    ``'n_run_...'`` counts).  ``ext_name`` is ``'cpu'``, ``'cuda'`` or ``'cudnn'`` (CUDA is
    synchronised after each run); ``backward_accum`` is accepted (Stadyn's backward of a
    function alone always starts from fresh gradients)."""

    def __init__(self, graph: Any, device_id: Any, ext_name: str, solver: Any = None,
                 n_run: int = 100, max_measure_execution_time: float = 1,
                 time_scale: str = "m", backward_accum: bool = False):
        self.graph = graph
        self.solver = solver
        self.n_run = n_run
        self.device_id = str(device_id)
        self.ext_name = ext_name
        self.ext_module = import_extension_module(ext_name)
        self.max_measure_execution_time = max_measure_execution_time
        self.time_scale = time_scale
        self.result: dict = {}
        self.name2val = {id(v): k for k, v in get_parameters().items()}
        self.backward_accum = backward_accum
        if self.n_run < 1:
            raise AssertionError("n_run must be bigger than 1")

    def _measure_execution_time(self, execution: Callable, *execution_args: Any
                                ) -> tuple[str, int]:
        execution(*execution_args)                      # warm-up
        self.ext_module.synchronize(device_id=self.device_id)
        total, count = 0.0, 0
        first = time.perf_counter()
        for _ in range(self.n_run):
            start = time.perf_counter()
            execution(*execution_args)
            self.ext_module.synchronize(device_id=self.device_id)
            stop = time.perf_counter()
            total += stop - start
            count += 1
            if stop - first > self.max_measure_execution_time:
                break
        mean = convert_time_scale(total / count, format=self.time_scale)
        return "{:.8}".format(mean), count

    def _time_profiling(self, f: Any, target_process: str) -> None:
        inputs = list(f.inputs)
        outputs = [o for o in f.outputs if o is not None]
        tensors = [_input_tensor(v) for v in inputs]
        if target_process == "forward":
            def forward():
                with torch.no_grad():
                    interpret([f], inputs, tensors, outputs)
            mean_time, count = self._measure_execution_time(forward)
        elif target_process == "backward":
            wrt = [t for t in tensors if t.requires_grad]
            with torch.enable_grad():
                outs = [o for o in interpret([f], inputs, tensors, outputs)
                        if o.requires_grad]
            seeds = [torch.ones_like(o) for o in outs]

            def backward():
                if wrt and outs:
                    torch.autograd.grad(outs, wrt, seeds, retain_graph=True,
                                        allow_unused=True)
            mean_time, count = self._measure_execution_time(backward)
        else:
            raise NotImplementedError("target process must be [forward, backward]")
        scope = None
        if len(inputs) > 1 and id(inputs[1]) in self.name2val:
            scope = os.path.dirname(self.name2val[id(inputs[1])])
        self.result[target_process].append(ProfileStat(
            parameter_scope=scope, inputs_shape=[tuple(x.shape) for x in inputs],
            args_info=f.info.args.items(), function_name=f.name, mean_time=mean_time,
            n_run=count))

    def time_profiling_forward(self) -> None:
        """Time every function's forward (``result['forward']``)."""
        self.result["forward"] = []
        self.graph.visit(lambda f: self._time_profiling(f, "forward"))

    def time_profiling_backward(self) -> None:
        """Time every function's backward (``result['backward']``)."""
        self.result["backward"] = []
        self.graph.visit(lambda f: self._time_profiling(f, "backward"))

    def training_function(self) -> None:
        """One training step: forward, ``zero_grad``, backward, ``update``."""
        self.graph.forward(clear_no_need_grad=True)
        self.solver.zero_grad()
        self.graph.backward(clear_buffer=True)
        self.solver.update()

    def time_profiling_whole_graph(self) -> None:
        """Time the whole graph's forward and backward, and a training step with a solver."""
        r = self.result
        r["forward_all"], r["n_run_forward_all"] = self._measure_execution_time(
            self.graph.forward)
        r["backward_all"], r["n_run_backward_all"] = self._measure_execution_time(
            self.graph.backward)
        if self.solver is not None:
            r["training"], r["n_run_training"] = self._measure_execution_time(
                self.training_function)

    def run(self) -> None:
        """Every measurement: each function's forward and backward, the whole graph's, and a
        training step if there is a solver."""
        self.time_profiling_forward()
        self.time_profiling_backward()
        self.time_profiling_whole_graph()

    def get_result(self) -> dict:
        """``result``."""
        return self.result

    def print_result(self) -> None:
        """Print the per-function stats and the whole graph's times, as NNabla's does."""
        print("time scale: {}".format(self.time_scale))
        print("-----------------forward--------------------")
        for x in self.result["forward"]:
            print(x)
        print()
        print("-----------------backward--------------------")
        for x in self.result["backward"]:
            print(x)
        print()
        print("all forward: {}, all backward: {}".format(
            self.result["forward_all"], self.result["backward_all"]))


class GraphProfilerCsvWriter:
    """``GraphProfilerCsvWriter(gb, file=sys.stdout)``: writes NNabla's header rows (number
    of runs, device id, extension, time scale, version; the version is NNabla's 1.39 that
    Stadyn follows, with Stadyn's after it) and the column names when made; :meth:`write`
    writes one row per function, then the whole graph's times."""

    def __init__(self, gb: GraphProfiler, file: Any = sys.stdout):
        self.file = file
        self.gb = gb
        self.fields = ["parameter_scope", "function_name", "inputs_shape", "args_info",
                       "forward", "backward", "forward_n_run", "backward_n_run"]
        self.write_header()

    def write_header(self) -> None:
        """The header rows and the column names."""
        writer = csv.writer(self.file)
        writer.writerow(["num. of run", self.gb.n_run])
        writer.writerow(["device id", self.gb.device_id])
        writer.writerow(["ext name", self.gb.ext_name])
        writer.writerow(["time scale", self.gb.time_scale])
        writer.writerow(["nnabla version", f"1.39.0 (stadyn {_stadyn_version})"])
        writer.writerow([])
        writer.writerow(self.fields)

    def check_same(self, f: dict, b: dict) -> bool:
        """Whether a forward and a backward stat are of the same function."""
        return all(f[k] == b[k] for k in ("parameter_scope", "function_name", "inputs_shape"))

    def write(self) -> None:
        """One row per function, then ``forward all``, ``backward all`` (and ``training``)."""
        writer = csv.writer(self.file)
        r = self.gb.result
        for f, b in zip(r["forward"], r["backward"]):
            f, b = f._asdict(), b._asdict()
            if not self.check_same(f, b):
                raise AssertionError(f"forward and backward stats of different functions: "
                                     f"{f['function_name']}, {b['function_name']}")
            args_info = ", ".join("{}: {}".format(k, v) for k, v in f["args_info"])
            writer.writerow([f["parameter_scope"], f["function_name"], f["inputs_shape"],
                             args_info, f["mean_time"], b["mean_time"], f["n_run"], b["n_run"]])
        writer.writerow([])
        writer.writerow(["forward all", r["forward_all"]])
        writer.writerow(["forward_all_n_run", r["n_run_forward_all"]])
        writer.writerow([])
        writer.writerow(["backward all", r["backward_all"]])
        writer.writerow(["backward_all_n_run", r["n_run_backward_all"]])
        if {"training", "n_run_training"} <= set(r):
            writer.writerow([])
            writer.writerow(["training(forward + backward + update)", r["training"]])
            writer.writerow(["training_n_run", r["n_run_training"]])
