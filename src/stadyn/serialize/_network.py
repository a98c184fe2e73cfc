"""``Network``: a runnable static graph with named inputs and outputs, as :func:`stadyn.load` and
:func:`stadyn.import_onnx` give it back, and :class:`ModelInfo`, its summary."""

from __future__ import annotations

import os
import tempfile
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np
import torch

from .._errors import StadynError
from ..graph import Variable, data_of, forward_all, topological_nodes
from ..graph import training as phase
from ..parametric import ParameterRegistry, parameter_registry

__all__ = ["Network", "ModelInfo"]


@dataclass
class ModelInfo:
    """What ``stadyn info`` prints: inputs and outputs (name -> (shape, dtype)), op counts by
    type, and the number of parameters (elements) and parameter tensors.  Shapes may hold the
    string ``'batch'`` for a dynamic axis."""

    kind: str
    inputs: "OrderedDict[str, tuple[tuple, str]]"
    outputs: "OrderedDict[str, tuple[tuple, str]]"
    op_counts: Counter = field(default_factory=Counter)
    n_parameters: int = 0
    n_parameter_tensors: int = 0
    details: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        def shape(s):
            return "(" + ", ".join(str(d) for d in s) + ("," if len(s) == 1 else "") + ")"
        lines = [self.kind]
        for key, value in self.details.items():
            lines.append(f"  {key}: {value}")
        lines.append("inputs:")
        lines += [f"  {n}: {shape(s)} {d}" for n, (s, d) in self.inputs.items()]
        lines.append("outputs:")
        lines += [f"  {n}: {shape(s)} {d}" for n, (s, d) in self.outputs.items()]
        lines.append(f"ops ({sum(self.op_counts.values())}):")
        lines += [f"  {n}: {c}" for n, c in sorted(self.op_counts.items(),
                                                   key=lambda kv: (-kv[1], kv[0]))]
        lines.append(f"parameters: {self.n_parameters:,} in {self.n_parameter_tensors} tensors")
        return "\n".join(lines)


def _dtype_name(v: Variable) -> str:
    return str(np.dtype(v.dtype)) if isinstance(v.dtype, np.dtype) else str(v.dtype)


class Network:
    """A static graph rebuilt from a file: named ``inputs`` and ``outputs`` (ordered dicts of
    Variables) over parameters held in ``registry``.

    Calling it runs a forward pass in the inference phase (batch normalisation on running
    statistics, dropout off) and returns the outputs as NumPy arrays; the Variables themselves
    are an ordinary static graph, so the network can also be trained further (``get_parameters``
    for a solver, ``outputs[...]`` for a loss).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable((2, 3))
        >>> net = sd.Network({"x": x}, {"y": F.relu(x)}, sd.ParameterRegistry())
        >>> net(x=np.array([[1, -1, 2], [-3, 4, 0]]))["y"]
        array([[1., 0., 2.],
               [0., 4., 0.]], dtype=float32)
    """

    def __init__(self, inputs: Mapping[str, Variable], outputs: Mapping[str, Variable],
                 registry: ParameterRegistry | None = None, *, source: str = "",
                 solver_state: bytes | None = None, info: dict[str, Any] | None = None,
                 tags: Mapping[str, list[str]] | None = None):
        self.inputs: OrderedDict[str, Variable] = OrderedDict(inputs)
        self.outputs: OrderedDict[str, Variable] = OrderedDict(outputs)
        self.registry = registry if registry is not None else ParameterRegistry()
        self.source = source
        self.solver_state = solver_state
        self._info = dict(info or {})
        #: the tags saved with the inputs and outputs (``save(..., tags=)``): name -> its tags
        #: (``criterion``, ``evaluation``, ``output``, ...); empty when the file gives none
        self.tags: dict[str, list[str]] = {k: list(v) for k, v in (tags or {}).items()}
        #: for a network built from an NNabla or CNTK file: ``(Variable, LegacyOrigin)`` for
        #: every input, parameter, constant, function output and block output the file names
        #: (what CNTK's ``find_by_name`` finds); empty otherwise
        self.origins: list = []
        #: for a network built from a CNTK file: output name -> that sequence output as the
        #: file computes it, before the steps past each sequence's end are set to 0 (what
        #: ``cntk.load_model`` shows: the padding is no function of the file)
        self.unpadded: dict = {}
        #: for a network built from a CNTK file: ``(Variable, error class, message)`` of each
        #: function CNTK 2.7 loads but refuses when the graph runs (a weighted ``Logistic``
        #: of weights it cannot read); the Variable stands in for its output, and whoever
        #: runs the graph raises the error
        self.refused_at_run: list = []
        #: for a network built from a CNTK file: the outputs of functions that reduce the
        #: dynamic axes of what they read (a v1 criterion, a reduction over all axes): one
        #: value with no dynamic axes, as CNTK shows them
        self.reduced: list = []

    # -- parameters -----------------------------------------------------------------------------
    @property
    def parameters(self) -> "OrderedDict[str, Variable]":
        """Every parameter of the network by name (running statistics included)."""
        return OrderedDict(self.registry.items())

    def get_parameters(self, grad_only: bool = True) -> "OrderedDict[str, Variable]":
        """The parameters a solver should update (``grad_only``: those with ``need_grad``)."""
        return OrderedDict((k, v) for k, v in self.registry.items()
                           if v.need_grad or not grad_only)

    def load_solver_states(self, solver) -> None:
        """Restore the solver state saved with the model (``sd.save(..., solver=...)``) into
        ``solver``, whose parameters must be set first (``solver.set_parameters(
        net.get_parameters())``)."""
        if self.solver_state is None:
            raise StadynError(f"{self.source or 'this network'}: no solver state was saved")
        fd, tmp = tempfile.mkstemp(suffix=".safetensors")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(self.solver_state)
            solver.load_states(tmp, name=f"{self.source or 'the model file'}: "
                                         "solver.safetensors")
        finally:
            os.unlink(tmp)

    # -- running --------------------------------------------------------------------------------
    def __call__(self, **arrays: Any) -> "OrderedDict[str, np.ndarray]":
        """``run(arrays)``: in the inference phase, every output the given inputs (arrays by
        name) determine."""
        return self.run(arrays)

    def inputs_needed(self, outputs: Iterable[str] | None = None) -> list[str]:
        """The names of the inputs the named outputs (default: all) depend on, in input order.

        Example:
            >>> import stadyn as sd, stadyn.functions as F
            >>> x, t = sd.Variable((2, 3)), sd.Variable((2, 1), dtype="int64")
            >>> y = F.relu(x)
            >>> net = sd.Network({"x": x, "t": t}, {"y": y, "loss": F.softmax_cross_entropy(y, t)})
            >>> net.inputs_needed(["y"]), net.inputs_needed()
            (['x'], ['x', 't'])
        """
        names = list(self.outputs) if outputs is None else list(outputs)
        roots = [self.outputs[n] for n in names]
        used = {id(v) for n in topological_nodes(roots) for v in n.inputs}
        used |= {id(v) for v in roots}
        return [n for n, v in self.inputs.items() if id(v) in used]

    def run(self, arrays: Mapping[str, Any], training: bool = False,
            outputs: str | Iterable[str] | None = None) -> "OrderedDict[str, np.ndarray]":
        """Run a forward pass on ``arrays`` (arrays by input name) and return the outputs.

        ``outputs`` names the outputs to compute; by default every output whose inputs are all
        given (a model's predictions need no labels: ``net(features=x)``).  ``training`` runs in
        the training phase (batch statistics, dropout on) with autograd enabled.  Inputs keep
        their dtype (arrays are converted to it); an array whose batch size differs from the one
        the graph was built with is accepted for graphs whose ops do not fix it.  A sequence
        input takes a list of sequences of different lengths (an array: sequences of its
        second axis's length).
        """
        where = self.source or "network"
        unknown = [n for n in arrays if n not in self.inputs]
        if unknown:
            raise StadynError(f"{where}: inputs are {list(self.inputs)}; unknown {unknown}")
        if outputs is None:
            names = [n for n in self.outputs if set(self.inputs_needed([n])) <= set(arrays)]
            if not names:
                missing = [n for n in self.inputs if n not in arrays]
                raise StadynError(f"{where}: inputs are {list(self.inputs)}; missing {missing}: "
                                  "no output can be computed without them")
        else:
            names = [outputs] if isinstance(outputs, str) else list(outputs)
            bad = [n for n in names if n not in self.outputs]
            if bad:
                raise StadynError(f"{where}: no output(s) {bad}; the outputs are "
                                  f"{list(self.outputs)}")
            missing = [n for n in self.inputs_needed(names) if n not in arrays]
            if missing:
                raise StadynError(f"{where}: the outputs {names} need the input(s) {missing}")
        for name, value in arrays.items():
            var = self.inputs[name]
            if var.sequence_lengths is not None:   # a list of sequences (an array: full ones)
                var.d = list(value)
                continue
            arr = np.asarray(value)
            if tuple(arr.shape) == var.shape:
                var.d = arr
            else:
                var.data = torch.as_tensor(np.array(arr, order="C")).to(
                    device=data_of(var).device, dtype=var.torch_dtype)
        roots = [self.outputs[n] for n in names]
        with parameter_registry(self.registry), phase(training), \
                torch.set_grad_enabled(training):
            forward_all(roots, clear_buffer=not training)
        return OrderedDict((n, np.array(self.outputs[n].d, copy=True)) for n in names)

    # -- description ----------------------------------------------------------------------------
    def info(self) -> ModelInfo:
        """Inputs, outputs, op counts and parameter count (see :class:`ModelInfo`)."""
        counts = Counter(n.spec.name for n in topological_nodes(list(self.outputs.values())))
        params = list(self.registry.items())
        return ModelInfo(
            kind=self._info.get("kind", "Stadyn network"),
            inputs=OrderedDict((n, (v.shape, _dtype_name(v))) for n, v in self.inputs.items()),
            outputs=OrderedDict((n, (v.shape, _dtype_name(v))) for n, v in self.outputs.items()),
            op_counts=counts, n_parameters=sum(v.size for _, v in params),
            n_parameter_tensors=len(params),
            details={k: v for k, v in self._info.items() if k != "kind"})

    def __repr__(self) -> str:
        return (f"<Network {self.source or ''} inputs={list(self.inputs)} "
                f"outputs={list(self.outputs)} parameters={len(self.registry)}>")
