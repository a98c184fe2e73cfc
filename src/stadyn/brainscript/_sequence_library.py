"""The sequence part of Stadyn's BrainScript library: delays, recurrent layers, embeddings,
sequence inputs and the primitives behind ``BS.Loop``, ``BS.Sequences`` and ``BS.RNNs``.

:class:`SequenceFunctions` is mixed into :class:`~._stadyn_library.StadynLibrary`.  The
``BS.*`` namespaces themselves are BrainScript (``sequences.bs``, evaluated on first use);
the functions here are what they call.  Loops through ``PastValue``/``FutureValue`` are built
by :class:`~._loops.Loops`.

CNTK facts followed here (``CNTK.core.bs``): ``PastValue (dims, input, timeStep = 1,
initialState = None, defaultHiddenActivation = 0.1)`` -- the initial value is 0.1 unless
``initialState`` is given, so ``BS.Loop.Previous`` and ``RecurrentLSTMLayer`` start from
0.1; ``RecurrentLSTMLayer`` is CNTK's LSTM (gates stacked input, cell candidate, forget,
output; ``W`` ``(4 cellDim : Inferred)``, ``H`` ``(4 cellDim : outputDim)``, bias ``4 cellDim``).

Example:
    >>> import numpy as np, stadyn as sd
    >>> from stadyn.brainscript import StadynLibrary, build_network
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     net = build_network('''{ x = Input{1} ; y = PastValue (1, x, timeStep = 2)
    ...                            z = BS.Sequences.Last (x) }''', StadynLibrary())
    >>> x = net.nodes["x"]
    >>> x.d = [np.array([[1.0], [2.0], [3.0]])]
    >>> net.nodes["y"].forward(); net.nodes["z"].forward()
    >>> sd.sequence.unpack_value(net.nodes["y"])[0].ravel().tolist(), net.nodes["z"].d.tolist()
    ([0.10000000149011612, 0.10000000149011612, 1.0], [[3.0]])
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from importlib import resources
from typing import Any

from .. import functions as F
from .. import layers as L
from .. import sequence as S
from .._errors import ConfigError
from ..graph import Variable
from ..cntk_semantics import reshape_sample
from ._library import Composition, ForwardRef, cntk_shape
from ._loops import InitialOfShape, Loops, PendingMap, PendingState
from ._sequence_use import sequence_use

__all__ = ["SequenceFunctions", "NONE", "sequence_use"]

class _NoneValue:
    """CNTK's ``None`` (``BS.Constants.None``): "not given"."""

    def __repr__(self) -> str:
        return "None"


NONE = _NoneValue()


class _DynamicAxis:
    """A ``DynamicAxis{}``: Inputs given it are sequences."""

    def __repr__(self) -> str:
        return "DynamicAxis"


class SequenceFunctions:
    """The sequence functions of :class:`~._stadyn_library.StadynLibrary` (a mixin: it uses the
    library's ``_node``, ``_value``, ``_batched`` and ``inputs``)."""

    sequences: bool | None
    _declares_axis: bool

    def _init_sequences(self, sequences: bool | None,
                        sequence_inputs: Iterable[str] = ()) -> dict[str, Any]:
        self.sequences = sequences
        # the Inputs (by name, in lower case) the data feeds sequences of several steps
        self._fed_sequences = frozenset(str(n).lower() for n in sequence_inputs)
        self._declares_axis = False
        self._sequence_arguments: frozenset[str] = frozenset()
        # the Inputs on the default axis (its sequences; where the network declares an axis,
        # its Inputs of one value a sequence too): cntk.exe gives them one shared layout
        # (ComputationNetworkEvaluation.cpp:626-632), so their data must agree step for step
        self.default_axis_inputs: list[Variable] = []
        # of those, a loaded model's Inputs of one sample each, fed a step at a time
        # (:meth:`~._network_library.NetworkFunctions.fed_as_sequences`)
        self.framed_inputs: list[Variable] = []
        self._loops = Loops(self._batched.add)
        # the Where nodes made, by id: (the node, its condition)
        self._where_conditions: dict[int, tuple[Variable, Variable]] = {}
        return {
            "PastValue": self.PastValue, "FutureValue": self.FutureValue,
            "RecurrentLSTMLayer": self.RecurrentLSTMLayer,
            "RecurrentLSTMLayerStack": self.RecurrentLSTMLayerStack,
            "EmbeddingLayer": self.EmbeddingLayer, "RowStack": self.RowStack,
            "Splice": self.Splice, "DynamicAxis": self.DynamicAxis,
            "SparseInput": self.SparseInput,
            "_None": NONE, "_IsNone": _is_none,
            "_Unsupported": _unsupported, "_ZeroesLike": self._ZeroesLike,
            "_IsFirstN": self._IsFirstN, "_IsLastN": self._IsLastN,
            "_SequenceFirst": self._SequenceFirst, "_SequenceLast": self._SequenceLast,
            "Where": self.Where, "_SequenceGather": self._SequenceGather,
            "_SequenceScatter": self._SequenceScatter, "TimeReverse": self.TimeReverse,
            "_BroadcastSequenceAs": self._BroadcastSequenceAs,
            "ReconcileDynamicAxis": self.ReconcileDynamicAxis,
            "_StabilizeElements": self._StabilizeElements, "_KnownDims": self._KnownDims,
        }

    # ---- the evaluator's recurrence hooks -------------------------------------------------
    def delay_input(self, fn: Any) -> tuple[int, str] | None:
        if fn == self.PastValue or fn == self.FutureValue:
            return 1, "input"
        return None

    def define_forward(self, ref: ForwardRef, value: Any) -> None:
        self._loops.define(ref, value)

    def prepare_args(self, args: list[Any], kwargs: dict[str, Any]) -> None:
        self._loops.prepare(args)
        if kwargs:
            keys = list(kwargs)
            values = [kwargs[k] for k in keys]
            self._loops.prepare(values)
            kwargs.update(zip(keys, values))

    def resolve(self, value: Any) -> Any:
        return self._loops.resolve(value)

    def resolve_all(self, values: list[Any]) -> list[Any]:
        return self._loops.resolve_all(values)

    def script_prelude(self) -> str:
        return resources.files("stadyn.brainscript").joinpath("sequences.bs").read_text()

    def prepare(self, expr: Any) -> None:
        use = sequence_use(expr)
        if self.sequences is None:      # (a loaded model of sequences: _network_library.py)
            self.sequences = use.uses or self.loads_sequences(expr)
        self._declares_axis = use.declares_axis
        self._sequence_arguments = use.arguments

    def compose(self, f, g, nested=False):
        return Composition(f, g, self._loops.resolve, nested)

    # ---- inputs ----------------------------------------------------------------------------
    def _make_input(self, shape: tuple[int, ...], dynamic_axis: Any,
                    image: bool = False) -> Variable:
        # where the network declares an axis, an Input of the default one is a sequence when
        # the network passes it to a sequence function (G2P.cntk's labels: Slice (..., axis =
        # -1)) or its own stream delivers sequences of several steps, else one step per
        # sample (a sequence classifier's labels)
        # (an ImageInput holds one image a sample, unless given a DynamicAxis)
        # Where it declares none, every Input is one of sequences once the reader feeds any
        # stream sequences of several steps, whatever the network uses: cntk.exe's Inputs all
        # are, on one layout (_readers.py's sequence_streams), so a stream of one step a
        # sequence beside one of several is refused as cntk.exe refuses it (InputSource).
        # cntk.exe links every Input of no dynamicAxis to the network's layout, declared axis
        # or not (ComputationNetworkEvaluation.cpp:628-632), which the reader's is copied into
        # (ReaderShim.cpp:318-327): a default-axis Input fed several steps is a sequence there.
        name = self.path.rsplit(".", 1)[-1]
        fed = bool(self._fed_sequences) if not self._declares_axis else (
            not image and name.lower() in self._fed_sequences)
        sequence = fed or bool(self.sequences) and (
            isinstance(dynamic_axis, _DynamicAxis) or (not image and (
                not self._declares_axis or name in self._sequence_arguments)))
        v = S.input_variable(shape) if sequence else Variable((1,) + shape)
        # where the network declares an axis, an Input of the default one that is no sequence
        # here (one value a sequence: a sequence classifier's labels) is on the default layout
        # too in cntk.exe (ComputationNetworkEvaluation.cpp:632), so the reader refuses it
        # beside a default-axis Input fed several steps (ReaderShim.cpp:318-335)
        if not isinstance(dynamic_axis, _DynamicAxis) and (
                sequence or (self._declares_axis and not image)):
            self.default_axis_inputs.append(v)
        return v

    def DynamicAxis(self, tag=""):
        """A sequence axis: ``Input{dims, dynamicAxis = t}`` is a sequence on it."""
        return _DynamicAxis()

    def SparseInput(self, dims, dynamicAxis="", tag="feature"):
        """``Input{dims, sparse = true}``: the reader's one-hot vectors arrive dense."""
        return self.Input(dims, dynamicAxis=dynamicAxis, sparse=True, tag=tag)

    # ---- delays ------------------------------------------------------------------------------
    def PastValue(self, dims, input, timeStep=1, initialState=NONE,
                  defaultHiddenActivation=0.1, tag=""):
        """``input`` ``timeStep`` steps earlier; before the start ``initialState`` (a node) or
        ``defaultHiddenActivation`` (CNTK's default 0.1).  In a loop (``h = f(PastValue (0,
        h))``) one state of a recurrence."""
        return self._delay(dims, input, timeStep, initialState, defaultHiddenActivation, tag,
                           backwards=False)

    def FutureValue(self, dims, input, timeStep=1, initialState=NONE,
                    defaultHiddenActivation=0.1, tag=""):
        """``input`` ``timeStep`` steps later; past the end ``initialState`` or
        ``defaultHiddenActivation`` (0.1).  A loop through it runs backwards."""
        return self._delay(dims, input, timeStep, initialState, defaultHiddenActivation, tag,
                           backwards=True)

    def _delay(self, dims, x, time_step, initial_state, default, tag, backwards):
        name = "FutureValue" if backwards else "PastValue"
        if isinstance(time_step, bool) or not isinstance(time_step, int) or time_step < 1:
            raise ConfigError(f"{name}: timeStep must be a positive integer, got {time_step!r}")
        if initial_state is not NONE:
            # a parameter of inferred dimensions ((0), CNTK.core.bs's
            # PreviousHCWithTrainedInitialState): the input's, as cntk.exe infers them
            initial_state = self._inferred_from_partner(initial_state, x)
            if getattr(initial_state, "infer", None) is not None:
                # inside a loop the input is made later: the state's dimensions, once the
                # loop knows them, are the parameter's
                initial = InitialOfShape(self._initial_of_shape(initial_state, name))
            else:
                initial = self._value(initial_state, name)
        elif isinstance(default, numbers.Real) and not isinstance(default, bool):
            initial = float(default)
        else:
            raise ConfigError(f"{name}: defaultHiddenActivation must be a number, got "
                              f"{default!r}")
        shape = None
        if dims not in (0, (0,), ()):
            shape = cntk_shape(dims)
        # a delay made inside the library (BS.Loop.Previous) is placed at the user's call
        where = self.user_place(_here())
        if isinstance(x, PendingState):
            raise ConfigError(f"{name}: the dimensions of the delay at {x.where} are not known "
                              "yet; give them as its first argument")
        if isinstance(x, Variable) and self._is_per_sample_sum(x):
            # cntk.exe's criterion node is one [1] for the minibatch, with no MBLayout, and
            # DelayedValueNodeBase::Validate refuses an input with no dynamic axis
            node = self.path or name
            raise ConfigError(f"{node} {name} operation requires the main (first) input to "
                              f"have a dynamic axis: its input is a criterion node "
                              f"({self.operation_of(x)}), one number for the minibatch in "
                              "cntk.exe")
        return self._node(self._loops.delay(x, shape, initial, int(time_step), backwards, where),
                          name, tag)

    def _initial_of_shape(self, pending: Any, name: str) -> Any:
        """A function of a delay's per-step shape (Stadyn order) giving its initial state, the
        parameter ``pending`` of inferred dimensions made with them (matched from CNTK's first
        dimension on, as for an element-wise partner: ``PendingParameter.infer_like``)."""
        def make(step: tuple[int, ...]) -> Variable:
            return self._value(pending.infer_like(tuple(step)), name)
        return make

    def _sized_delays(self, values: list[Any], partners: Sequence[tuple[int, int]]) -> list[Any]:
        """The arguments ``values`` of one operation, each pending delay of a loop given the
        per-step shape of its partner (for each ``(i, j)`` of ``partners`` in turn, a delay
        ``values[i]`` takes that of ``values[j]``, a node), then prepared for the loop."""
        for i, j in partners:
            v, like = values[i], values[j]
            if isinstance(v, PendingState) and isinstance(like, Variable):
                values[i] = self._loops.materialize(
                    v, self._loops.step_shape(like, self.has_batch_axis(like)))
        self._loops.prepare(values)
        return values

    def _deferred(self, a: Any, b: Any, fn: Any) -> PendingMap | None:
        """``fn (a, b)`` made later (a :class:`~._loops.PendingMap`) where one of them is a
        delay whose dimensions are not known yet and the other has one element per step: the
        result has the delay's dimensions, which the next operation gives."""
        for pending, other in ((a, b), (b, a)):
            if not isinstance(pending, PendingState) or pending.variable is not None:
                continue
            if isinstance(other, numbers.Real) and not isinstance(other, bool):
                fallback = None
            elif isinstance(other, Variable) and not isinstance(other, PendingState):
                fallback = self._loops.step_shape(other, self.has_batch_axis(other))
                if math.prod(fallback) != 1:
                    return None
            else:
                return None
            def later(v: Variable, first: bool = pending is a) -> Any:
                args = [v, b] if first else [a, v]
                self._loops.prepare(args)      # a sequence from outside: one step of it
                return fn(*args)
            return PendingMap(pending, later, fallback)
        return None

    # ---- sequence functions -----------------------------------------------------------------
    def _seq(self, x: Any, what: str) -> Variable:
        v = self._value(x, what)
        if v.sequence_lengths is None:
            raise ConfigError(f"{what} needs a sequence (a value computed from a sequence "
                              f"Input), got a value of shape {v.shape}")
        return v

    def _ZeroesLike(self, x):
        v = self._seq(x, "ZeroesLike")
        while v.ndim > 3:
            v = F.sum(v, axis=v.ndim - 1)
        return F.mul_scalar(F.sum(v, axis=2, keepdims=True), 0.0)

    def _IsFirstN(self, N, x):
        return S.past_value(self._ZeroesLike(x), 1.0, int(N))

    def _IsLastN(self, N, x):
        return S.future_value(self._ZeroesLike(x), 1.0, int(N))

    def _SequenceFirst(self, x):
        return S.first(self._seq(x, "BS.Sequences.First"))

    def _SequenceLast(self, x):
        return S.last(self._seq(x, "BS.Sequences.Last"))

    def TimeReverse(self, vectorSequence, tag=""):
        """Refused, as cntk.exe refuses it: CNTK.core.bs still declares ``TimeReverse``, but
        CNTK deleted its node (commit abd520633: "StrideTimesNode, ParallelNode, LSTMNode,
        BatchModeNode, TimeReverseNode"), so ComputationNetworkBuilder.cpp's
        ``CreateStandardNode`` stops with "Attempted to instantiate undefined operation"."""
        raise ConfigError("TimeReverse: Attempted to instantiate undefined operation "
                          "TimeReverse (CNTK.core.bs declares it, but cntk.exe 2.7 has no "
                          "TimeReverse node)")

    def Where(self, cond, tag=""):
        """The positions (0, 1, ...) of the steps of ``cond`` that are nonzero, a new sequence
        (CNTK's ``WhereNode``: a count ``k`` repeats a position ``k`` times), one ``[1]``
        value a step as cntk.exe's (``TensorShape::Scalar`` outside the V2 library)."""
        c = self._seq(cond, "Where")
        out = self._node(reshape_sample(S.where(c), (1,), True, sequence=True), "Where", tag)
        self._where_conditions[id(out)] = (out, c)     # (PackedIndex reads it)
        return out

    def _SequenceGather(self, cond, x):
        return S.gather(self._seq(x, "BS.Sequences.Gather"), self._seq(cond, "BS.Sequences.Gather"))

    def _SequenceScatter(self, cond, y):
        values = self._value(y, "BS.Sequences.Scatter")
        if values.sequence_lengths is None and self.has_batch_axis(values):
            # one value per sequence (BS.Sequences.First, cntk.exe's sequence of one step):
            # that step, put where cond is first nonzero
            values = S.to_sequence(reshape_sample(values, (1,) + tuple(values.shape[1:]),
                                                  True))
        return S.scatter(self._seq(values, "BS.Sequences.Scatter"),
                         self._seq(cond, "BS.Sequences.Scatter"))

    def _BroadcastSequenceAs(self, type, data1):  # noqa: A002 - CNTK's name
        like = self._seq(type, "BS.Sequences.BroadcastSequenceAs")
        return S.broadcast_as(self._value(data1, "BS.Sequences.BroadcastSequenceAs"), like)

    def ReconcileDynamicAxis(self, dataInput, layoutInput, tag=""):
        """``dataInput`` on the dynamic axes of ``layoutInput``, as cntk.exe's
        ``ReconcileDynamicAxisNode`` (ReshapingNodes.h): where both are one value per sample,
        or both sequences (the same layout: cntk.exe checks it as it runs), the data as it is;
        one value per sequence (``BS.Sequences.Last (x)``) on a sequence: repeated over each
        step of its sequence (its ``broadcast_as`` case).  A sequence on a value per sample is
        refused, as cntk.exe refuses the incompatible layout.  Data with no batch axis (a
        parameter, a constant) is copied to every sample, every step of a sequence, of
        ``layoutInput`` (cntk.exe reads it with ``AllowBroadcast``; its gradient is the sum
        over them).  A ``layoutInput`` with no batch axis is refused, as cntk.exe's
        ``Validate`` refuses it.

        Example:
            >>> import numpy as np, stadyn as sd
            >>> from stadyn.brainscript import StadynLibrary, build_network
            >>> with sd.parameter_registry(sd.ParameterRegistry()):
            ...     net = build_network('''{ x = Input{2}
            ...         y = ReconcileDynamicAxis (BS.Sequences.Last (x), x) }''', StadynLibrary())
            >>> net.nodes["x"].d = [np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[5.0, 6.0]])]
            >>> net.nodes["y"].forward()
            >>> [v.tolist() for v in sd.sequence.unpack_value(net.nodes["y"])]
            [[[3.0, 4.0], [3.0, 4.0]], [[5.0, 6.0]]]
        """
        data = self._value(dataInput, "ReconcileDynamicAxis")
        layout = self._value(layoutInput, "ReconcileDynamicAxis")
        on_steps = data.sequence_lengths is not None
        if layout.sequence_lengths is None and not self.has_batch_axis(layout):
            raise ConfigError(f"{self.path or 'ReconcileDynamicAxis'} ReconcileDynamicAxis "
                              "operation requires that the second argument has a dynamic axis.")
        if not on_steps and not self.has_batch_axis(data):
            return self._node(self._copied_to_samples(data, layout), "ReconcileDynamicAxis",
                              tag)
        if on_steps == (layout.sequence_lengths is not None):
            return self._node(F.identity(data), "ReconcileDynamicAxis", tag)
        if on_steps:
            raise ConfigError("ReconcileDynamicAxis: the data is a sequence but the layout input "
                              "is one value per sample: their layouts are incompatible (cntk.exe "
                              "refuses them as it runs)")
        return self._node(S.broadcast_as(data, layout), "ReconcileDynamicAxis", tag)

    def _copied_to_samples(self, data: Variable, layout: Variable) -> Variable:
        """``data`` (no batch axis) at every sample of ``layout``, every step of a sequence."""
        sequence = layout.sequence_lengths is not None
        per = S.first(layout) if sequence else layout
        if per.ndim > 1:                  # one number per sample (0), then data added to it
            per = F.sum(per, axis=list(range(1, per.ndim)))
        zero = F.reshape(F.mul_scalar(per, 0.0), (-1,) + (1,) * data.ndim)
        copied = F.add2(zero, F.reshape(data, (1,) + tuple(data.shape)))
        return S.broadcast_as(copied, layout) if sequence else copied

    def _StabilizeElements(self, x, inputDim=0):
        """CNTK.core.bs's ``BS.Parameters.StabilizeElements``: ``x`` times
        ``log(1 + exp(4 a)) / 4`` with a new learned ``a`` (1 at the start), one scalar for
        ``inputDim = 1`` (``BS.Parameters.Stabilize``) or one per element of ``x``'s first
        (column-major) axis: :class:`stadyn.layers.Stabilizer`, the layers' stabiliser.

        Example:
            >>> import numpy as np, stadyn as sd
            >>> from stadyn.brainscript import StadynLibrary, build_network
            >>> with sd.parameter_registry(sd.ParameterRegistry()):
            ...     net = build_network('''{ x = Input{3}
            ...         y = BS.Parameters.StabilizeElements (x)
            ...         z = BS.Parameters.Stabilize (y) }''', StadynLibrary())
            ...     shapes = sorted(tuple(v.shape) for v in sd.get_parameters().values())
            >>> shapes
            [(), (3,)]
        """
        v = self._value(x, "BS.Parameters.StabilizeElements")
        dim = int(inputDim)
        if dim not in (0, 1, v.shape[-1]):
            raise ConfigError(f"BS.Parameters.StabilizeElements: inputDim = {dim}, but the "
                              f"input's first dimension is {v.shape[-1]}")
        layer = L.Stabilizer(enable_self_stabilization=True, per_element=dim != 1)
        # CNTK.core.bs: [ beta = fInv .* Log (One + Exp (f .* ParameterTensor (...))) ... ]
        self._named(layer, "", {"alpha": "beta.ElementTimesArgs[1]._.PlusArgs[1]._."
                                         "ElementTimesArgs[1]"})
        return layer(v)

    def _KnownDims(self, x, dims):
        """``x``, where a delay whose dimensions are not known yet (``PastValue (0, h)``) takes
        ``dims``: what a library function that knows them (``BS.RNNs.LSTMP``: the previous h
        has ``outputDim``) does before an op that cannot infer them (a stabiliser)."""
        if isinstance(x, PendingState):
            dims = dims if isinstance(dims, tuple) else (dims,)
            return self._loops.materialize(x, cntk_shape(tuple(int(d) for d in dims)))
        return x

    def RowStack(self, inputs, axis=1, tag=""):
        """The inputs joined along their first (column-major) axis: CNTK's ``RowStack``."""
        return self.Splice(inputs, axis=axis, tag=tag)

    def Splice(self, inputs, axis=1, tag=""):
        """The inputs joined along CNTK axis ``axis`` (1-based, column-major: for an image
        ``W:H:C``, ``axis = 3`` joins channels).  As in CNTK, an input of lower rank counts as
        having trailing dimensions of 1 (``Splice (Constant (1) : Constant (2), axis = 3)`` is
        ``1 x 1 x 2``); the other dimensions must agree."""
        items = inputs if isinstance(inputs, tuple) else (inputs,)
        values = [self._value(v, "Splice") for v in items]
        if isinstance(axis, bool) or not isinstance(axis, numbers.Integral) or axis < 1:
            raise ConfigError(f"axis must be an integer >= 1 (column-major), got {axis!r}")
        leads = [2 if v.sequence_lengths is not None else int(self.has_batch_axis(v))
                 for v in values]
        rank = max([int(axis)] + [v.ndim - lead for v, lead in zip(values, leads)])
        padded = []
        for v, lead in zip(values, leads):
            missing = rank - (v.ndim - lead)
            if missing:        # CNTK's trailing 1s are Stadyn's leading sample axes
                v = reshape_sample(v, (1,) * missing + v.shape[lead:], lead > 0,
                                   sequence=lead == 2)
            padded.append(v)
        if len(set(leads)) > 1:
            raise ConfigError("the inputs must all be per sample (or all constant)")
        joined = F.concatenate(*padded, axis=leads[0] + rank - int(axis))
        return self._node(joined, "RowStack" if axis == 1 else "Splice", tag)

    # ---- layers ------------------------------------------------------------------------------
    def EmbeddingLayer(self, outDim, init="glorotUniform", initValueScale=1, embeddingPath="",
                       transpose=False):
        """``E x`` with ``E`` ``(outDim : Inferred)``, for one-hot ``x`` (a
        :class:`stadyn.layers.Embedding`)."""
        if embeddingPath:
            raise ConfigError("EmbeddingLayer: embeddingPath is not supported yet")
        if transpose:
            raise ConfigError("EmbeddingLayer: transpose = true is not supported yet")
        initializer = self._seed_on_apply(self._initializer(init, initValueScale))
        return self._named(self._claims_on_apply(L.Embedding(int(outDim), init=initializer),
                                                 initializer))

    def RecurrentLSTMLayer(self, outputDim, cellShape=NONE, goBackwards=False,
                           usePeepholes=False, trainInitialState=False, init="glorotUniform",
                           initValueScale=1, enableSelfStabilization=False,
                           allowOptimizedEngine=False):
        """CNTK's LSTM over a sequence, from states of 0.1 (``BS.Loop.Previous``'s default):
        ``Recurrence(LSTM(outputDim))`` of :mod:`stadyn.layers`, which runs a plain LSTM as
        torch's fused kernel.  As CNTK.core.bs's ``LSTMBlock``: a ``cellShape`` other than
        ``outputDim`` projects the output to ``outputDim``; ``enableSelfStabilization`` puts a
        scalar stabiliser on the previous output, on the cell values in the peepholes and on the
        value projected (:class:`stadyn.layers.LSTM`).

        Example:
            >>> import stadyn as sd
            >>> from stadyn.brainscript import StadynLibrary, build_network
            >>> with sd.parameter_registry(sd.ParameterRegistry()):
            ...     net = build_network('''{ x = Input{3}
            ...         y = RecurrentLSTMLayer {2, cellShape = 5,
            ...                                 enableSelfStabilization = true} (x) }''',
            ...                         StadynLibrary())
            ...     shapes = sorted(tuple(v.shape) for v in sd.get_parameters().values())
            >>> shapes
            [(), (), (2, 20), (3, 20), (5, 2), (20,)]
        """
        if trainInitialState:
            raise ConfigError("RecurrentLSTMLayer: trainInitialState = true is not supported yet")
        cell = None if cellShape is NONE or int(cellShape) == int(outputDim) else int(cellShape)
        step = L.LSTM(int(outputDim), cell_shape=cell, use_peepholes=bool(usePeepholes),
                      init=self._initializer(init, initValueScale),
                      enable_self_stabilization=bool(enableSelfStabilization))
        return self._named(L.Recurrence(step, go_backwards=bool(goBackwards), initial_state=0.1),
                           "lstm", _LSTM_MEMBERS)

    def RecurrentLSTMLayerStack(self, layerDims, cellShapes=NONE, usePeepholes=False,
                                init="glorotUniform", initValueScale=1,
                                enableSelfStabilization=False, allowOptimizedEngine=False):
        """One :meth:`RecurrentLSTMLayer` per entry of ``layerDims``, applied in order."""
        dims = layerDims if isinstance(layerDims, tuple) else (layerDims,)
        cells = (NONE,) * len(dims) if cellShapes is NONE else tuple(cellShapes)
        path, layers = self.path, []
        for i, (d, c) in enumerate(zip(dims, cells)):
            # CNTK.core.bs: LayerStack {Length (layerDims), i => RecurrentLSTMLayer {...}}
            self.path = f"{path}.arrayOfFunctions[{i}]" if path else ""
            layers.append(self.RecurrentLSTMLayer(
                d, cellShape=c, usePeepholes=usePeepholes, init=init,
                initValueScale=initValueScale, enableSelfStabilization=enableSelfStabilization))
        self.path = path

        def stack(x):
            for layer in layers:
                x = layer(x)
            return x
        return stack


# CNTK.core.bs's BS.RNNs.LSTMBlock members (B, W, H, Ci, Cf, Co, Wmr; the stabilisers Sdh, Sdc,
# Sct, Sht are StabilizerLayer {}s, whose parameter is 'param') for stadyn.layers.LSTM's names
_LSTM_MEMBERS = {"b": "B", "P": "Wmr", "dh_stabilizer/alpha": "Sdh.param",
                 "dc_stabilizer/alpha": "Sdc.param", "c_stabilizer/alpha": "Sct.param",
                 "P_stabilizer/alpha": "Sht.param"}


def _is_none(x: Any) -> bool:
    """CNTK's ``IsNone``: ``None`` or the empty array it stands for."""
    return x is NONE or (isinstance(x, tuple) and not x)


def _unsupported(what: str) -> Any:
    raise ConfigError(f"{what} is not supported yet")


def _here() -> str:
    """``file:line`` of the BrainScript call being evaluated (the graph's source location)."""
    from ..graph import user_location
    loc = user_location()
    return "<unknown>" if loc is None else f"{loc[0]}:{loc[1]}"
