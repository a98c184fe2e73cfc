"""``cntk.layers``' sequence layers built on the recurrence and the sequence ops: ``Delay``,
``PastValueWindow``, ``UnfoldFrom`` (greedy decoding) and ``RNNUnit`` (the deprecated name of
``RNNStep``), with CNTK 2.7's semantics.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x = C.sequence.input_variable(1)
    >>> y = C.layers.Delay(2, initial_state=-1)(x)
    >>> [a.ravel().tolist() for a in y.eval({x: [np.arange(4, dtype=np.float32)[:, None]]})]
    [[-1.0, -1.0, 0.0, 1.0]]
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from ... import functions as F
from ... import sequence as S
from ..._errors import ShapeError, StadynError
from ...graph import Variable, auto_forward
from ...layers import default_override_or, glorot_uniform, resolve
from . import _graph as G
from ._graph_views import note_unfold
from . import sequence as seq
from ._adapt import unwrap, wrap
from ._deferred import Deferred
from ._late import late
from ._layers import LayerFunction
from ._layers_function import refuse_typed_steps
from ._mixins import GraphObject
from ._ops_math import alias
from ._loops import as_loop_sequence, close_loops
from ._recurrent import RNNStep as _RNNUnit
from ._recurrent import StatesLayer, refuse_values
from ._variables import Variable as _Variable
from ._variables import constant, placeholder

__all__ = ["Delay", "PastValueWindow", "UnfoldFrom", "RNNUnit", "ForwardDeclaration"]


def RNNUnit(shape, cell_shape=None, activation=default_override_or(None),
            init=default_override_or(glorot_uniform()), init_bias=default_override_or(0.0),
            enable_self_stabilization=default_override_or(False), name: str = ""):
    """The deprecated name of ``RNNStep`` (CNTK warns so too; the default activation is
    sigmoid).  Example: ``C.layers.Recurrence(C.layers.RNNUnit(4))``."""
    warnings.warn("This name will be removed in future versions. Please use RNNStep(...) "
                  "instead, which is identical except for its name", DeprecationWarning,
                  stacklevel=2)
    return _RNNUnit(shape, cell_shape, activation, init, init_bias, enable_self_stabilization,
                    name=name)


class _Delay:
    """``x`` delayed ``T`` steps (see :func:`Delay`)."""

    parameters: list = []

    def __init__(self, T: int, initial_state: Any):
        self.T, self.initial_state = int(T), initial_state

    def __call__(self, x):
        if isinstance(self.initial_state, (int, float)) and \
                not isinstance(self.initial_state, bool):
            # a Constant of shape (1,), one for every application (CNTK makes it with the layer)
            self.initial_state = constant(self.initial_state, shape=(1,), dtype=x.dtype)
        return unwrap(seq.delay(wrap(x), self.initial_state, self.T))


def Delay(T: int = 1, initial_state=default_override_or(0), name: str = "") -> LayerFunction:
    """``sequence.delay`` as a layer: each step ``T`` steps back (forward for a negative
    ``T``), ``initial_state`` where there is none.  Example above."""
    return LayerFunction(_Delay(T, resolve("Delay", "initial_state", initial_state)), "Delay",
                         name)


class _Window:
    """The last ``window_size`` steps of a sequence as a static axis, and their validity."""

    parameters: list = []

    def __init__(self, window_size: int, axis: int, go_backwards: bool):
        self.window_size, self.axis, self.go_backwards = int(window_size), axis, go_backwards

    def _nth(self, x, offset: int):
        end = seq.first if self.go_backwards else seq.last
        return end(seq.delay(x, None, -offset if self.go_backwards else offset))

    def _splice(self, items):
        from .ops import reshape, splice
        rank = len(items[0].shape)
        axis = int(self.axis)
        if axis < 0 and -axis > rank:           # a new axis: each item gets leading 1s
            items = [reshape(v, (1,) * (-axis - rank) + tuple(v.shape)) for v in items]
        return splice(*items, axis=axis)

    def __call__(self, x):
        x = wrap(x)
        ones = seq.broadcast_as(_ones_per_sequence(x), x)
        values = self._splice([self._nth(x, t) for t in range(self.window_size)])
        valid = self._splice([self._nth(ones, t) for t in range(self.window_size)])
        return unwrap(values), unwrap(valid)


def _ones_per_sequence(x, k: float = 1.0):
    """``k`` per sequence of ``x`` (CNTK's ``broadcast_as(k, x)`` before broadcasting)."""
    first = unwrap(seq.first(x))
    if len(first.shape) > 1:
        first = F.sum(first, axis=list(range(1, len(first.shape))))
    return wrap(F.add_scalar(F.mul_scalar(first, 0.0), float(k)))


def PastValueWindow(window_size: int, axis, go_backwards=default_override_or(False),
                    name: str = "") -> LayerFunction:
    """The last ``window_size`` steps of each sequence spliced along ``axis`` (step ``t`` back
    at index ``t``, 0 past the start) and a validity mask ``(window_size, 1)``: returns
    ``(value, valid)`` as one Function with two outputs.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.sequence.input_variable(2)
        >>> y = C.layers.PastValueWindow(4, axis=-2)(x)
        >>> r = y.eval({x: [np.arange(6, dtype=np.float32).reshape(3, 2)]})
        >>> value, valid = [r[o] for o in y.outputs]
        >>> value.tolist(), valid.ravel().tolist()
        ([[[4.0, 5.0], [2.0, 3.0], [0.0, 1.0], [0.0, 0.0]]], [1.0, 1.0, 1.0, 0.0])
    """
    window = _Window(window_size, axis, resolve("PastValueWindow", "go_backwards",
                                                go_backwards))
    return StatesLayer(window, "PastValueWindow", name)


class _Unfold:
    """Greedy decoding (see :func:`UnfoldFrom`)."""

    def __init__(self, generator, until_predicate, length_increase):
        self.generator, self.until = generator, until_predicate
        self.length_increase = length_increase

    @property
    def parameters(self) -> list:
        return [unwrap(p) for p in getattr(self.generator, "parameters", []) or []]

    def _generate(self, state) -> list:
        """The generator's ``[output, new state]`` (the output is the state when it gives one
        value)."""
        out = self.generator(wrap(state))
        if not isinstance(out, (tuple, list)):
            outputs = getattr(out, "outputs", None)
            out = tuple(outputs) if outputs is not None and len(outputs) > 1 else (out,)
        if len(out) not in (1, 2):
            raise StadynError(f"UnfoldFrom: the generator returns {len(out)} values; it returns "
                              "the output, or (output, new state)")
        return [unwrap(o) for o in out]

    def __call__(self, initial_state, like):
        axis = like
        k = self.length_increase
        if k != 1:
            factors = seq.broadcast_as(_ones_per_sequence(wrap(like), k), wrap(like))
            axis = S.where(unwrap(factors), max_repeat=math.ceil(k))
        step_shape = tuple(initial_state.shape[1:] if G.BATCH(initial_state)
                           else initial_state.shape)   # a constant: one step's value
        refused = None
        with auto_forward(False):        # the output's shape (the step records it again)
            try:
                probe = self._generate(Variable((1,) + step_shape))
            except ShapeError as exc:
                # it holds recurrences (CNTK 204's decoder), or a loaded model whose history
                # is a sequence input (Sequence2Sequence.py's decoding of its saved model)
                refused = None if "no sequence axis" in str(exc) else exc
                probe = None
        if probe is None:
            try:
                out = self._loop(initial_state, step_shape, axis)
            except ShapeError:
                if refused is not None:     # one step of the history is what it refused
                    raise refused from None
                raise
        elif len(probe) == 1:
            shapes = [tuple(o.shape[1:]) for o in probe]
            (out,) = S.recurrence(lambda s, u: self._generate(s)[0], [axis], [initial_state],
                                  shapes)
            if k == 1 and self.until is None:
                note_unfold(out)            # (written as CNTK 2.7 builds it)
        else:
            shapes = [tuple(o.shape[1:]) for o in probe]
            out, _ = S.recurrence(lambda o, s, u: tuple(self._generate(s)), [axis],
                                  [0.0, initial_state], shapes)
        if self.until is None:
            return out
        stop = unwrap(self.until(wrap(out)))
        before = S.past_value(stop, 0.0)          # stopped at an earlier step
        (valid,) = S.recurrence(lambda h, u: (1.0 - u) * h, [before], [1.0],
                                [tuple(before.shape[2:])])
        valid.name = "valid_frames"                # CNTK 2.7's names (cntk/layers/sequence.py)
        kept = S.gather(out, valid)
        G.mark_block(kept, "Sequence::Gather", "valid_output", [out, valid], "GatherPacked")
        return kept


    def _loop(self, initial_state, step_shape, axis):
        """CNTK's own construction, for a generator that runs recurrences on the history:
        ``new_state := generator(past_value(new_state, initial_state))`` closed as a loop
        along ``axis``, which steps those recurrences with it (``_loops``, ``_nested``).  A
        generator that gives the state another shape (Sequence2Sequence.py's decoder: ``(1, 1,
        69)`` for a history of ``(69,)``) is built again on a state of that shape, as CNTK's
        loop takes the shape its body gives it."""
        tried = [step_shape]
        while True:
            state = Variable((1,) + step_shape)
            G.PLACEHOLDERS[state] = ""
            G.BATCH.add(state)
            as_loop_sequence(state)
            try:
                out = self._generate(S.past_value(state, initial_state))
            except ShapeError:
                # a loaded model built for the state's settled shape (Sequence2Sequence.py
                # saves its decoder after decoding: a history of (1, 1, 69)) refuses the
                # initial value's: tried again with a leading axis of 1 more (twice at most;
                # the loop's shapes still have to settle)
                G.PLACEHOLDERS.pop(state, None)
                if len(tried) > 2:
                    raise
                step_shape = (1,) + step_shape
                tried.append(step_shape)
                continue
            found = tuple(out[-1].shape[2:])
            if found == step_shape or found in tried or len(tried) > 3:
                break
            G.PLACEHOLDERS.pop(state, None)      # built again on the shape it gives
            step_shape = found
            tried.append(found)
        close_loops({state: out[-1]}, along=axis)
        return out[0]


def UnfoldFrom(generator_function, until_predicate=None, length_increase=1,
               name: str = "") -> LayerFunction:
    """``UnfoldFrom(generator)(initial_state, dynamic_axis_like)``: the sequence
    ``out_t = generator(state_{t-1})`` from ``state_{-1} = initial_state`` (a generator giving
    ``(output, new state)`` carries its own state), as long as ``dynamic_axis_like`` times
    ``length_increase``; with ``until_predicate``, each sequence ends at the first step whose
    predicate is 1.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> h0, like = C.input_variable(1), C.sequence.input_variable(1)
        >>> y = C.layers.UnfoldFrom(lambda h: h * 2.0)(h0, like)
        >>> y.eval({h0: np.ones((1, 1), np.float32),
        ...         like: [np.zeros((3, 1), np.float32)]})[0].ravel().tolist()
        [2.0, 4.0, 8.0]
    """
    if not callable(generator_function):
        raise TypeError("UnfoldFrom: the generator must be a function or a layer")
    refuse_typed_steps([generator_function])    # (called on placeholders as it is made)
    layer = _UnfoldLayer(_Unfold(generator_function, until_predicate, length_increase), "")
    layer.unfold_name = name
    return layer


class _UnfoldLayer(LayerFunction):
    """``UnfoldFrom``'s layer, also called with CNTK's keywords (``initial_state``,
    ``dynamic_axes_like``).  No block: CNTK 2.7's ``UnfoldFrom`` is a Python function whose
    graph ends in ``combine([output], name='unfold_output')`` (``cntk/layers/sequence.py``),
    a name given an alias of that (its ``_inject_name``)."""

    unfold_name = ""

    def __call__(self, *args, initial_state=None, dynamic_axes_like=None):
        given = list(args)
        if initial_state is not None:
            given.insert(0, initial_state)
        if dynamic_axes_like is not None:
            given.append(dynamic_axes_like)
        refuse_values(given, ("initial_state", "dynamic_axes_like"))    # (CNTK's TypeError)
        out = super().__call__(*given)
        if not isinstance(out, GraphObject) or out.variable.parent is None:
            return out                      # (waiting for a placeholder's shape)
        if self.layer.until is None:        # (with until_predicate: its gather is the root)
            out = late("combine_outputs")([out], name="unfold_output")
        return alias(out, name=self.unfold_name) if self.unfold_name else out


class _ForwardDeclared(_Variable):
    """A placeholder with ``resolve_to`` (see :func:`ForwardDeclaration`)."""

    __slots__ = ()

    def resolve_to(self, var) -> None:
        """Close the loop: this placeholder is ``var`` from now on (``var`` may be computed
        from it through ``past_value`` / ``future_value``: the loop runs as a recurrence)."""
        from ._function import Function
        if isinstance(var, Deferred):       # built on this placeholder's shape, inferred
            var.replace_placeholders({self: var})
        else:
            Function(unwrap(var)).replace_placeholders({self: var})


def ForwardDeclaration(name: str = "forward_declaration"):
    """A placeholder for a value defined later from itself: use it (through ``past_value``
    or ``future_value``), then ``resolve_to(value)`` closes the loop, which runs as a
    recurrence along the sequence axis of the loop's inputs.  As a ``placeholder()`` without
    a shape, it takes the shape its loop gives it (ops on it wait until it is known).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.sequence.input_variable(2)
        >>> ones = C.sequence.broadcast_as(1.0, x)
        >>> count = C.layers.ForwardDeclaration()
        >>> out = C.sequence.past_value(count, initial_state=0) + ones
        >>> count.resolve_to(out)
        >>> C.sequence.last(out).eval({x: [np.zeros((3, 2), np.float32),
        ...                                np.zeros((1, 2), np.float32)]}).tolist()
        [3.0, 1.0]
    """
    declared = placeholder(name=name)
    declared.__class__ = _ForwardDeclared
    return declared
