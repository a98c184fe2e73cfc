"""Stadyn's BrainScript library: CNTK's core-library names mapped onto Stadyn's layers and ops.

:class:`StadynLibrary` is the engine side of the evaluator's :class:`~._library.Library`
protocol.  Layer constructors (``DenseLayer``, ``ConvolutionalLayer``, ...) return Stadyn layer
objects (:mod:`stadyn.layers`), so a BrainScript network and the same network written in Python
create the same parameters (shapes, initial values; BrainScript names them after their nodes,
as cntk.exe: :meth:`StadynLibrary.name_parameters`) and the same ops.  Node functions
(``Input``, ``Times``, ``CrossEntropyWithSoftmax``, ...) return :class:`~stadyn.graph.Variable`
nodes.  Every function keeps the parameter names, order and defaults of CNTK's ``CNTK.core.bs``
(see ``tests/fixtures/brainscript/library_facts.md``), so the evaluator reports a call CNTK
would reject with its location.

Shapes are CNTK's, column-major (``32:32:3`` is W:H:C); Stadyn's per-sample shapes are the same
dimensions reversed (:func:`~._library.cntk_shape`): an ``Input{32:32:3}`` is a Variable of shape
``(1, 3, 32, 32)`` whose batch axis the trainer resizes to each minibatch.

Example:
    >>> import stadyn as sd
    >>> from stadyn.brainscript import build_network
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     net = build_network('''{ x = Input{4:3} ; h = DenseLayer{8, activation = ReLU}(x)
    ...                          z = LinearLayer{2}(h) ; outputNodes = (z) }''', StadynLibrary())
    ...     net.nodes["x"].shape, net.output_nodes[0].shape, sorted(sd.get_parameters())
    ((1, 3, 4), (1, 2), ['h.arrayOfFunctions[0].W', 'h.arrayOfFunctions[0].b', 'z.W', 'z.b'])
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .. import cntk_semantics as cntk
from .. import functions as F
from .. import sequence as S
from .._errors import ConfigError, ShapeError
from ..graph import Variable, topological_nodes
from ..inspect import trace
from ..ops import CNTKStream
from ._computation_node import ComputationNodeFunctions
from ._classifier_library import ClassifierFunctions
from ._core_nodes_library import CoreNodeFunctions
from ._criterion_library import CriterionFunctions
from ._elementwise_library import ElementwiseFunctions
from ._minibatch_library import MinibatchFunctions
from ._layer_library import LayerFunctions, _positive_ints, cntk_initializer
from ._library import Library, cntk_shape
from ._loops import PendingState
from ._network_library import NetworkFunctions
from ._node_names import NodeNames
from ._parameter_library import ParameterFunctions, PendingParameter
from ._norm_library import NormFunctions
from ._precompute_library import PreComputeFunctions
from ._reduce_library import ReduceFunctions
from ._rnnstack_library import RNNStackFunctions
from ._sequence_library import SequenceFunctions
from ._pooling_library import PoolingFunctions
from ._tensor_library import TensorFunctions
from ._value_functions import ValueFunctions

__all__ = ["StadynLibrary", "cntk_initializer"]

# CNTK.core.bs's names of the positional parameters where Stadyn's Python functions name them
# otherwise (an argument's expression path, hence a parameter's node name, adds them)
_CORE_PARAMETER_NAMES = {
    "LogSoftmax": ("z",), "Negate": ("input",), "NewReshape": ("input", "dims"),
    "Reciprocal": ("z",), "Reshape": ("input", "numRows"), "Softmax": ("z",),
    "Splice": ("_",), "Sqrt": ("z",), "Tanh": ("z",), "Trace": ("node",),
}

# names older CNTK.core.bs files defined that CNTK 2.7's does not: what they became
_RENAMED = {
    "DeconvLayer": "CNTK 2.7's CNTK.core.bs calls it ConvolutionTransposeLayer (renamed before "
                   "CNTK 2.0, 615bdaf86; 'autoPadding' is now 'pad')",
}

# the older tag names cntk.exe still maps (ComputationNetwork::ConstructFromRoots)
_LEGACY_TAGS = {"criteria": "criterion", "eval": "evaluation"}

# CNTK's node tags that put a node into one of the network's special lists.
_TAGS = ("feature", "label", "criterion", "evaluation", "output")


class StadynLibrary(ParameterFunctions, ComputationNodeFunctions, PreComputeFunctions,
                    SequenceFunctions,
                    ReduceFunctions, TensorFunctions, PoolingFunctions,
                    ClassifierFunctions, CriterionFunctions, ElementwiseFunctions,
                    MinibatchFunctions, CoreNodeFunctions,
                    NetworkFunctions, LayerFunctions, NormFunctions, RNNStackFunctions,
                    ValueFunctions, NodeNames, Library):
    """CNTK's BrainScript core library on Stadyn's layers and ops.

    ``dropout_rate`` is the rate ``Dropout`` nodes are built with (the SGD block's
    ``dropoutRate`` of the first epoch); :meth:`set_dropout_rate` changes it later for every
    ``Dropout`` node built by this library, as CNTK's trainer does at the start of each epoch.
    ``sequence_inputs`` names the Inputs the data feeds sequences of several steps (the reader's
    streams, :func:`~._readers.sequence_streams`): where the network declares no
    ``DynamicAxis`` and one is given, every Input is a sequence whatever functions the network
    uses, as every Input of cntk.exe (on one layout, :attr:`default_axis_inputs`):

    >>> import stadyn as sd
    >>> from stadyn.brainscript import build_network
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     net = build_network("{ x = Input{2} ; y = x + 1 }",
    ...                         StadynLibrary(sequence_inputs={"x"}))
    >>> net.nodes["x"].shape, net.nodes["x"].sequence_lengths is not None
    ((1, 1, 2), True)

    After a network is built, the library knows its ``inputs`` (the ``Input`` nodes, in order),
    each node's CNTK operation (:meth:`operation_of`) and the nodes given a ``tag``
    (:attr:`tagged`).
    """

    def __init__(self, dropout_rate: float = 0.0, sequences: bool | None = None,
                 sequence_inputs: Iterable[str] = ()) -> None:
        self.dropout_rate = float(dropout_rate)
        self.inputs: list[Variable] = []
        self.tagged: dict[str, list[Variable]] = {t: [] for t in _TAGS}
        self._dropout_nodes: list[Any] = []
        self._operations: dict[int, tuple[Variable, str]] = {}
        self._batched = cntk.BatchAxes()
        self._constants: dict[int, tuple[Variable, float]] = {}
        # the parameters trained at a learningRateMultiplier other than 1, by id
        self.learning_rate_multipliers: dict[int, tuple[Variable, float]] = {}
        # the parameters Parameter/ParameterTensor made, by name_parameters's placeholder
        # name, with the expression path each was made at
        self._unnamed_parameters: list[tuple[Variable, str, str]] = []
        # the inferred-shape parameters given their shape, in that order (checkpoint)
        self._shaped_pending: list[Any] = []
        functions: dict[str, Callable[..., Any]] = {
            # inputs and parameters
            "Input": self.Input, "Parameter": self.Parameter,
            "ParameterTensor": self.ParameterTensor, "Constant": self.Constant,
            # nodes
            "Times": self.Times, "Plus": self.Plus, "Minus": self.Minus,
            "ElementTimes": self.ElementTimes, "Negate": self.Negate,
            "Reciprocal": self.Reciprocal, "Pass": self.Pass,
            "Trace": self.Trace,
            "ReLU": self.ReLU, "Sigmoid": self.Sigmoid, "Tanh": self.Tanh,
            "Softmax": self.Softmax, "LogSoftmax": self.LogSoftmax, "Exp": self.Exp,
            "Log": self.Log, "Abs": self.Abs, "Sqrt": self.Sqrt, "Dropout": self.Dropout,
            "CrossEntropyWithSoftmax": self.CrossEntropyWithSoftmax,
            "ClassificationError": self.ClassificationError,
            "ErrorPrediction": self.ClassificationError,
        }
        functions.update(self._init_layers())
        functions.update(self._init_sequences(sequences, sequence_inputs))
        functions.update(self._init_reductions())
        functions.update(self._init_tensors())
        functions.update(self._init_poolings())
        functions.update(self._init_criteria())
        functions.update(self._init_elementwise())
        functions.update(self._init_minibatch())
        functions.update(self._init_core_nodes())
        self._init_node_names()
        functions.update(self._init_values())
        functions.update(self._init_networks())
        functions.update(self._init_norms())
        functions.update(self._init_rnnstacks())
        super().__init__(functions)

    # ---- bookkeeping ---------------------------------------------------------------------
    def checkpoint(self) -> Callable[[], None]:
        """A function that forgets the parameters made after this call
        (:meth:`ParameterFunctions.checkpoint`) and puts the recurrence loops back as they
        are now, loops closed since included (:meth:`Loops.checkpoint`).

        Example:
            >>> import stadyn as sd
            >>> lib = StadynLibrary()
            >>> with sd.parameter_registry(sd.ParameterRegistry()):
            ...     forget = lib.checkpoint()
            ...     _ = lib.Parameter(2, 3)
            ...     forget()
            ...     len(sd.get_parameters())
            0
        """
        forget_parameters = ParameterFunctions.checkpoint(self)
        restore_loops = self._loops.checkpoint()

        def forget() -> None:
            restore_loops()
            forget_parameters()
        return forget

    def parameter_names(self, fn: Any) -> Any:
        core = _CORE_PARAMETER_NAMES.get(getattr(fn, "__name__", ""))
        if core is not None and getattr(fn, "__self__", None) is self:
            return core
        return super().parameter_names(fn)

    def renamed(self, name: str) -> str | None:
        return _RENAMED.get(name)

    def is_node(self, value: Any) -> bool:
        return isinstance(value, (Variable, PendingParameter, PendingState))

    def type_name(self, value: Any) -> str:
        if isinstance(value, Variable):
            return f"node of shape {value.shape}"
        return super().type_name(value)

    def _node(self, v: Variable, operation: str, tag: str = "") -> Variable:
        self._operations[id(v)] = (v, operation)
        self._keep_per_sample_sum(v, operation)
        tag = _LEGACY_TAGS.get(tag, tag)
        if tag:
            if tag not in self.tagged:
                raise ConfigError(f"unknown tag '{tag}' (use {', '.join(_TAGS)})")
            self.tagged[tag].append(v)
        return v

    def _initializer(self, init: str, scale: float) -> Any:
        return cntk_initializer(init, scale)

    def shows_perplexity(self, node: Any) -> bool:
        """Whether CNTK's evaluation lines give ``node``'s perplexity (``exp`` of its average):
        the cross-entropy criteria (``SimpleEvaluator.h``)."""
        return self.operation_of(node) in ("CrossEntropyWithSoftmax",
                                           "ClassBasedCrossEntropyWithSoftmax")

    def operation_of(self, node: Any) -> str | None:
        """The CNTK operation that made ``node`` (``CrossEntropyWithSoftmax``, ...), if known."""
        entry = self._operations.get(id(node))
        return entry[1] if entry is not None and entry[0] is node else None

    def has_batch_axis(self, v: Variable) -> bool:
        """Whether ``v`` depends on an ``Input`` (its first axis is then the batch axis)."""
        return self._batched(v)

    def _value(self, v: Any, what: str) -> Variable:
        v = self._loops.settle(v)
        if isinstance(v, PendingParameter):
            raise ConfigError(f"{what}: the parameter's inferred dimension is not known yet "
                              "(use it in a Times first, or give its input dimension)")
        if isinstance(v, PendingState):
            raise ConfigError(f"{what}: the dimensions of the delay at {v.where} are not known "
                              "yet (give them as its first argument: PastValue (dims, x))")
        if not isinstance(v, Variable):
            raise ConfigError(f"{what} needs a node, got {type(v).__name__} {v!r}")
        return self._criterion_operand(v, what)

    def _scalar(self, v: Any) -> float | None:
        """A Python number, or the value of a one-element ``Constant``."""
        if isinstance(v, numbers.Real) and not isinstance(v, bool):
            return float(v)
        entry = self._constants.get(id(v))
        if entry is not None and entry[0] is v:
            return entry[1]
        return None

    # ---- operator hooks ------------------------------------------------------------------
    # The evaluator locates a StadynError raised by a hook at the operator (a ConfigError it
    # passes on as it is), so the hooks raise their complaints as ShapeErrors.
    def times(self, a: Any, b: Any) -> Variable:
        return _hook(self.Times, a, b)

    def element_times(self, a: Any, b: Any) -> Variable:
        return _hook(self.ElementTimes, a, b)

    def reciprocal(self, x: Any) -> Variable:
        return _hook(self.Reciprocal, x)

    def plus(self, a: Any, b: Any) -> Variable:
        return _hook(self.Plus, a, b)

    def minus(self, a: Any, b: Any) -> Variable:
        return _hook(self.Minus, a, b)

    def negate(self, x: Any) -> Variable:
        return _hook(self.Negate, x)

    # ---- dropout rate --------------------------------------------------------------------
    def set_dropout_rate(self, rate: float) -> int:
        """Give every ``Dropout`` node built so far the rate ``rate``; returns how many there are.

        The rate is an attribute of each dropout op, so cached static plans are invalidated.
        """
        rate = float(rate)
        if not 0.0 <= rate < 1.0:
            raise ConfigError(f"dropoutRate must lie in [0, 1), got {rate}")
        self.dropout_rate = rate
        for node in self._dropout_nodes:
            if node.attrs["p"] != rate:
                node.set_attribute("p", rate)
        return len(self._dropout_nodes)

    def seed_random_nodes(self, root: Variable, base: int) -> int:
        """Seed the ``Dropout`` nodes ``root`` is computed from as cntk.exe seeds its random
        nodes at the start of each epoch (``ComputationNetwork::SetIRngUserSeed``, called by
        SGD.cpp with ``base = worker x maxEpochs + epoch``): in the order it evaluates them
        (children first, inputs in order), node ``i`` of ``n`` gets seed ``base x n + i`` and
        offset 0; returns ``n``.

        Example:
            >>> import stadyn as sd
            >>> from stadyn.brainscript import build_network
            >>> lib = StadynLibrary(0.5)
            >>> with sd.parameter_registry(sd.ParameterRegistry()):
            ...     net = build_network("{ x = Input {3} ; d1 = Dropout (x) ; "
            ...                         "y = Dropout (d1) + d1 }", lib)
            >>> lib.seed_random_nodes(net.nodes["y"], 2)     # epoch 3: seeds 4 and 5
            2
            >>> [int(n.attrs["seed"]) for n in lib._dropout_nodes]
            [4, 5]
        """
        mine = {id(n) for n in self._dropout_nodes}
        nodes = [n for n in topological_nodes([root]) if id(n) in mine]
        for i, node in enumerate(nodes):
            old = node.attrs["seed"]
            node.set_attribute("seed", CNTKStream((int(base) * len(nodes) + i) % 2 ** 64,
                                                  time_major=old.time_major))
        return len(nodes)

    # ---- inputs (parameters and constants: ._parameter_library) ----------------------------
    def Input(self, dims, dynamicAxis="", sparse=False, tag="feature"):
        """A graph input of per-sample shape ``dims`` (column-major), with a batch axis of 1 that
        the trainer resizes to each minibatch."""
        return self._new_input(dims, dynamicAxis, tag)

    def _new_input(self, dims, dynamic_axis, tag, image=False):
        shape = cntk_shape(_positive_ints(dims, "Input: dims"))
        v = self._make_input(shape, dynamic_axis, image)
        self.inputs.append(v)
        self._batched.add(v)
        return self._node(v, "InputValue", tag or "")

    # ---- nodes ---------------------------------------------------------------------------
    def Times(self, x, y, outputRank=1, inferInputRankToMap=-1, tag=""):
        """Matrix product: ``Times(W, x)`` with ``W`` ``[out x in]`` and ``x`` ``[in x *]``
        gives ``[out x *]`` (in Stadyn: ``x (N, in) @ W (in, out)``)."""
        rank = int(outputRank)
        if isinstance(y, PendingState) and isinstance(x, Variable):
            in_rank = x.ndim - rank
            y = self._loops.materialize(y, tuple(x.shape[:in_rank]))
        if isinstance(x, PendingParameter):
            x = x.materialize(self._value(y, "Times"), rank)
        a, b = self._value(x, "Times"), self._value(y, "Times")
        if self.has_batch_axis(a):
            if not self.has_batch_axis(b):     # the data on the left: h * matrix
                return self._node(self._times_data_left(a, b, rank), "Times", tag)
            raise ConfigError("Times: one operand must be data and the other a parameter "
                              "(Times(W, x), W * x)")
        if not 1 <= rank < a.ndim + (0 if a.ndim > 1 else 1):
            raise ConfigError(f"Times: outputRank {rank} does not fit a left operand of shape "
                              f"{tuple(reversed(a.shape))} (column-major)")
        try:
            y = cntk.times(b, a, rank if a.ndim > 1 else 0, self.has_batch_axis(b))
        except ShapeError as err:
            raise ConfigError(f"Times: {str(err).partition(': ')[2]}") from None
        return self._node(y, "Times", tag)

    def Plus(self, _, y, tag=""):
        """Element-wise sum (with broadcasting); a per-sample criterion plus one number for
        the minibatch is the criterion's sum plus the number (``_minibatch_library.py``)."""
        a, b = self._minibatch_total(*self._number_nodes((_, y)))
        return self._note_per_sample_sum(self._node(self._binary(a, b, "Plus"), "Plus", tag),
                                         a, b)

    def Minus(self, _, y, tag=""):
        """Element-wise difference (with broadcasting); as ``Plus`` for a per-sample
        criterion and one number for the minibatch."""
        a, b = self._minibatch_total(*self._number_nodes((_, y)))
        return self._note_per_sample_sum(self._node(self._binary(a, b, "Minus"), "Minus", tag),
                                         a, b)

    def ElementTimes(self, _, y, tag=""):
        """Element-wise product (with broadcasting); a number or a 1-element ``Constant`` scales;
        a per-sample criterion times per-sample data is the criterion's sum times the data
        (``_minibatch_library.py``)."""
        a, b = self._minibatch_factors(*self._number_nodes((_, y)))
        v = self._node(self._binary(a, b, "ElementTimes"), "ElementTimes", tag)
        if self._scalar(a) is not None or self._scalar(b) is not None:
            self._note_per_sample_sum(v, a, b)      # a criterion scaled is one still
        return v

    def _binary(self, a: Any, b: Any, op: str) -> Variable:
        deferred = self._deferred(a, b, lambda x, y: self._binary(x, y, op))
        if deferred is not None:      # a pending delay times a scalar: its dimensions later
            return deferred
        if isinstance(a, PendingState) or isinstance(b, PendingState):
            a, b = self._sized_delays([a, b], ((0, 1), (1, 0)))
        a, b = self._inferred_from_partner(a, b), self._inferred_from_partner(b, a)
        sa, sb = self._scalar(a), self._scalar(b)
        if sa is None and sb is None:
            a, b = self._aligned(self._value(a, op), self._value(b, op))
        if op == "ElementTimes":
            if sa is not None and sb is None:
                return self._scaled(self._value(b, op), a, sa)
            if sb is not None and sa is None:
                return self._scaled(self._value(a, op), b, sb)
            return F.mul2(self._value(a, op), self._value(b, op))
        if op == "Plus":
            if sa is not None and isinstance(a, numbers.Real):
                return F.add_scalar(self._value(b, op), sa)
            if sb is not None and isinstance(b, numbers.Real):
                return F.add_scalar(self._value(a, op), sb)
            return F.add2(self._value(a, op), self._value(b, op))
        if sb is not None and isinstance(b, numbers.Real):
            return F.add_scalar(self._value(a, op), -sb)
        if sa is not None and isinstance(a, numbers.Real):
            return F.r_sub_scalar(self._value(b, op), sa)
        return F.sub2(self._value(a, op), self._value(b, op))

    def _scaled(self, x: Variable, factor: Any, value: float) -> Variable:
        """``x`` times a number: a ``[1]`` constant node (``x * 2``, ``x / 4``: cntk.exe's
        ``ElementTimes`` of the constant) is read by the product, so a model file holds it as
        cntk.exe's does; a Python number (or a value without axes) scales."""
        if isinstance(factor, Variable) and x.ndim >= 1:
            return F.mul2(x, factor)
        return F.mul_scalar(x, value)

    def _inferred_from_partner(self, p: Any, partner: Any) -> Any:
        """``p`` made where it is a parameter of inferred dimensions (0) and ``partner`` of an
        element-wise operation a node: the dimensions come from the partner's, matched from
        CNTK's first dimension on (cntk.exe's ValidateInferBinaryInputDims; CNTK.core.bs's
        ``ConstantFromString``); anything else as it is."""
        if not isinstance(p, PendingParameter) or not isinstance(partner, Variable):
            return p
        return p.infer_like(tuple(partner.shape[self._lead(partner):]))

    def Negate(self, _, tag=""):
        return self._node(F.mul_scalar(self._value(_, "Negate"), -1.0), "Negate", tag)

    def Reciprocal(self, _, tag=""):
        """``1 / _`` element-wise, 0 where ``_`` is 0, as cntk.exe's ``opReciprocal``
        (``a == 0 ? 0 : 1 / a``, Source/Math/TensorOps.h:277; its gradient ``g * -out^2`` is 0
        there, :325); a number is a ``Constant`` (CNTK.core.bs:674's ``_AsNodes (z)``), and
        the reciprocal of a one-element constant scales as one (``ElementDivide (x, 4)``)."""
        (x,) = self._number_nodes((_,))
        y = self._node(cntk.divide(None, self._value(x, "Reciprocal")), "Reciprocal", tag)
        value = self._scalar(x)
        if value is not None:
            self._constants[id(y)] = (y, float(np.float32(1) / np.float32(value))
                                      if value else 0.0)
        return y

    def Pass(self, _, tag=""):
        return self._node(F.identity(self._value(_, "Pass")), "Pass", tag)

    def Trace(self, _, say="", logFrequency=100, logFirst=10, logGradientToo=False,
              onlyUpToRow=100000000, onlyUpToT=100000000, format=(), tag=""):
        """The node unchanged, with :func:`stadyn.trace`'s probe on it: a line of statistics
        (not CNTK's value dump: ``onlyUpToRow``, ``onlyUpToT`` and ``format`` are accepted and
        not used) on the first ``logFirst`` minibatches and every ``logFrequency``-th, its
        gradient too with ``logGradientToo``; labelled ``say`` or the config's line."""
        return self._node(trace(self._value(_, "Trace"), every=int(logFrequency),
                                say=str(say) or None, first=int(logFirst),
                                gradient=bool(logGradientToo)), "Trace", tag)

    def ReLU(self, _, tag=""):
        return self._node(F.relu(self._value(_, "ReLU"), rule="cntk"), "RectifiedLinear", tag)

    def Sigmoid(self, _, tag=""):
        return self._node(F.sigmoid(self._value(_, "Sigmoid")), "Sigmoid", tag)

    def Tanh(self, _, tag=""):
        return self._node(F.tanh(self._value(_, "Tanh")), "Tanh", tag)

    def Exp(self, _, tag=""):
        return self._node(F.exp(self._value(_, "Exp")), "Exp", tag)

    def Log(self, _, tag=""):
        return self._node(F.log(self._value(_, "Log")), "Log", tag)

    def Abs(self, _, tag=""):
        return self._node(F.abs(self._value(_, "Abs"), rule="cntk"), "Abs", tag)

    def Sqrt(self, _, tag=""):
        return self._node(F.sqrt(self._value(_, "Sqrt"), rule="cntk"), "Sqrt", tag)

    def Softmax(self, _, axis=0, tag=""):
        """Softmax over all elements of each sample (CNTK's column), or along CNTK axis
        ``axis`` (1-based, column-major) only: CNTK.core.bs's ``exp (z - ReduceLogSum (z,
        axis))``."""
        x = self._value(_, "Softmax")
        if isinstance(axis, numbers.Integral) and not isinstance(axis, bool) and axis == 0:
            return self._node(self._over_sample(F.softmax, x), "Softmax", tag)
        (along,) = self._sample_axes(x, axis, "Softmax")
        return self._node(F.softmax(x, along), "Softmax", tag)

    def LogSoftmax(self, _, tag=""):
        return self._node(self._over_sample(F.log_softmax, self._value(_, "LogSoftmax")),
                          "LogSoftmax", tag)

    def _aligned(self, a: Variable, b: Variable) -> tuple[Variable, Variable]:
        """Two operands of an element-wise op lined up as CNTK lines them up: a batched operand
        of fewer sample axes than the other gets 1s for the ones it lacks, after its batch (and
        step) axes -- CNTK broadcasts ``[n]`` against ``[n x 1]`` or a parameter ``[n x m]``
        (a dimension one lacks is 1), which NumPy's alignment from the right would pair with
        the batch axis instead; and a non-sequence against a sequence is the same at every
        step (a step axis of 1), where the right-alignment would pair the batch axis with the
        steps.  (Against a parameter whose extra axes are all 1 and no more than the batch axes,
        ``[n]`` + ``[n x 1]``, the right-alignment gives the same values, and the sum stays
        ``[n]`` a sample where cntk.exe's is ``[n x 1]``: docs/brainscript.md,
        SimpleNetworkBuilder.)"""
        la, lb = self._lead(a), self._lead(b)
        if la and lb and la != lb:
            if la < lb:
                a, la = S.reshape_samples(a, la, (1,) * (lb - la) + tuple(a.shape[la:])), lb
            else:
                b, lb = S.reshape_samples(b, lb, (1,) * (la - lb) + tuple(b.shape[lb:])), la
        ra, rb = a.ndim - la, b.ndim - lb
        if la and ra < rb and (lb or _not_units(b.shape[:rb - ra]) or b.ndim > a.ndim):
            a = S.reshape_samples(a, la, (1,) * (rb - ra) + tuple(a.shape[la:]))
        elif lb and rb < ra and (la or _not_units(a.shape[:ra - rb]) or a.ndim > b.ndim):
            b = S.reshape_samples(b, lb, (1,) * (ra - rb) + tuple(b.shape[lb:]))
        return a, b

    def _over_sample(self, fn, x: Variable) -> Variable:
        return cntk.over_sample(fn, x, self.has_batch_axis(x))

    def Dropout(self, _, tag=""):
        """Dropout with the SGD block's ``dropoutRate`` while training; the identity otherwise.
        Its masks are cntk.exe's: ``DropoutNode`` draws them from CNTK's CPU engine
        (``SetUniformRandomMask``: a value is dropped where Boost's uniform float of
        ``mt19937_64`` is ``<= rate``), seeded at each epoch's start
        (:meth:`seed_random_nodes`)."""
        x = self._value(_, "Dropout")
        y = F.dropout(x, p=self.dropout_rate, seed=CNTKStream(0).for_operand(x),
                      train_only=True)
        self._dropout_nodes.append(y.parent)
        return self._node(y, "Dropout", tag)


def _not_units(dims: tuple[int, ...]) -> bool:
    return any(d != 1 for d in dims)


def _hook(fn: Callable[..., Variable], *args: Any) -> Variable:
    try:
        return fn(*args)
    except ConfigError as err:
        if err.line is not None:
            raise
        raise ShapeError(err.reason) from None
