"""``cntk.layers``' recurrent layers on Stadyn's (``stadyn.layers``: ``Recurrence``,
``RecurrenceFrom``, ``Fold``, ``LSTM``, ``GRU``, ``RNNStep``).

A step may be a CNTK layer or any Python function over CNTK Functions
(``Recurrence(lambda h, x: C.tanh(h + x))``): the function is called on Functions wrapping the
step's placeholders.
"""

from __future__ import annotations

import dis
import inspect
from typing import Any

import numpy as np

from ... import functions as F
from ... import layers as _L
from ...graph import Variable, auto_forward, keep_with, kept_with, shown_only
from ...ops import recurrence_states
from ..._random import auto_seeds_kept
from . import _graph as G
from ._adapt import unwrap, wrap
from ._clone import rebuild
from ._function import combine_outputs
from ._init_arguments import check_init_arguments
from ._layers import LayerFunction, _native
from ._run_checks import at_first_run
from ._shown_constants import (float64_scalars, scalar_constant, show_constants,
                               show_slice_scalars, shown_constants)
from ._layer_signatures import bound, cntk_signature
from ._step_values import note_step_blocks
from ._dry_layers import dry_fixed_point
from ._step_checks import refuse_parameters_made
from ._step_state_shapes import fixed_point_shapes, trial
from ._step_views import made_between, mark_step_inside
from ._variables import Constant, placeholder
from .sequence import last as _sequence_last

__all__ = ["Recurrence", "RecurrenceFrom", "Fold", "LSTM", "GRU", "RNNStep", "StatesLayer",
           "FunctionStep", "StepFunction"]



def _step_factory(cls):
    """A CNTK step factory (``LSTM``, ``GRU``, ``RNNStep``): Stadyn's step (which owns its
    stabilisers and projection) as a CNTK layer."""
    signature = cntk_signature(cls.__name__, cls)

    def make(*args, **kwargs):
        kwargs = bound(cls.__name__, signature, args, kwargs)
        check_init_arguments(cls.__name__, kwargs, ("init", "init_bias"), None)
        name = kwargs.pop("name", "")
        layer = cls(**{k: _native(v) for k, v in kwargs.items()})
        return StepFunction(layer, cls.__name__, name)
    make.__name__ = make.__qualname__ = cls.__name__
    make.__doc__ = cls.__doc__
    make.__signature__ = signature
    return make


class StepFunction(LayerFunction):
    """A recurrent step (``LSTM``, ``GRU``, ``RNNStep``) as a CNTK layer: applied to values,
    the ops of its block are marked to show as CNTK 2.7's (``_step_views``).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> z = C.layers.GRU(2)(C.input_variable(2), C.input_variable(3))
        >>> z.root_function.op_name, z.root_function.block_root.op_name
        ('GRU', 'Plus')
    """

    def __call__(self, *args):
        out = super().__call__(*args)
        outputs = [getattr(o, "variable", None) for o in getattr(out, "outputs", ())]
        if outputs and all(isinstance(o, Variable) for o in outputs):
            mark_step_inside(self.kind, self.layer, outputs,
                             [getattr(a, "variable", a) for a in args])
        return out


LSTM = _step_factory(_L.LSTM)
GRU = _step_factory(_L.GRU)
RNNStep = _step_factory(_L.RNNStep)


class StatesLayer(LayerFunction):
    """A layer whose Stadyn layer returns several values (a recurrence's states with
    ``return_full_state``): as in CNTK, one Function with an output each.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x = C.sequence.input_variable(2)
        >>> h_c = C.layers.Recurrence(C.layers.LSTM(3), return_full_state=True)(x)
        >>> [o.shape for o in h_c.outputs]
        [(3,), (3,)]
    """

    def __call__(self, *args):
        out = super().__call__(*args)
        v = getattr(out, "variable", None)
        kind = getattr(getattr(self.layer, "step", None), "kind", None)
        if isinstance(v, Variable) and v in G.BLOCKS and kind in G.STEP_BLOCKS:
            G.note_step_op(v, G.STEP_BLOCKS[kind])      # (its root's input: the step's block)
            if v.parent is not None and v.parent.spec.name in _VIEWED + ("cntk_lstm_sequence",) \
                    and kind in _VIEWED_STEPS and (kind == "lstm" or not self.layer.step.op_by_op):
                G.note_step_view(v, self._step_view(kind))
        elif isinstance(v, Variable) and v in G.BLOCKS and v.parent is not None and \
                v.parent.spec.name == "recurrence" and \
                isinstance(getattr(self.layer, "step", None), FunctionStep):
            G.note_step_view(v, _FunctionStepView())
        states = out if isinstance(out, tuple) else getattr(out, "outputs", None) or ()
        if len(states) > 1 and kind in G.STEP_BLOCKS:
            for o in states:    # (return_full_state: each state an output of the step's block,
                o = unwrap(o)   # CNTK 2.7's LSTM of two outputs, for the writers; a Fold's
                if isinstance(o, Variable) and o.parent is not None and \
                        o.parent.spec.name == "sequence_last":      # last step of each)
                    o = o.parent.inputs[0]
                if isinstance(o, Variable) and o.parent is not None and \
                        o.parent.spec.name == "recurrence":
                    G.note_step_op(o, G.STEP_BLOCKS[kind])
        return combine_outputs(list(out)) if isinstance(out, tuple) else out

    def _step_view(self, kind: str) -> "_StepView":
        """How the walks see this layer's step, a viewed cell of ``kind`` (``lstm``, ``gru``,
        ``rnnstep``): its block, named as the step Function it was made with (``with_step``)."""
        step = self.__dict__.get("_cntk_step")
        return _StepView(self.layer.step, kind, getattr(step, "name", "") or "")

    def _inputs_around_argument(self, call: Any) -> "tuple[list, list]":
        """What CNTK 2.7's Function of this layer applied to a placeholder without a shape
        (the waiting ``call``) lists among its ``inputs`` before and after the placeholder:
        a Recurrence's step's parameters and constants, then its initial state's Constant; a
        Fold's the same after the ``Sequence::Slice``'s two scalars (0 and 1) of the state it
        returns, and those of every other state (``return_full_state``) after the
        placeholder.  The scalars are made once for the call, as CNTK makes them at it."""
        if self.kind not in ("Recurrence", "Fold"):
            return list(self.parameters), []
        step = self.__dict__.get("_cntk_step")
        before = [i for i in step.inputs if not i.is_placeholder] \
            if isinstance(step, LayerFunction) else []
        init = self.layer.initial_state
        for state in init if isinstance(init, tuple) else (init,):
            if isinstance(state, Variable) and all(unwrap(b) is not state for b in before):
                before.append(wrap(state))
        if self.kind != "Fold":
            return before, []
        slices = call.__dict__.get("_fold_slices")
        if slices is None:
            count = getattr(self.layer.step, "n_states", 1) if \
                self.layer.return_full_state else 1
            slices = call.__dict__["_fold_slices"] = [
                [wrap(scalar_constant(k, np.float32)) for k in (0.0, 1.0)]
                for _ in range(count)]
        return slices[0] + before, [c for pair in slices[1:] for c in pair]

    def with_step(self, step_function: Any) -> "StatesLayer":
        """Keep the step the user gave (a layer, an op, a Python function), for what the
        root shows before the layer is applied (:meth:`_shown_step_output`)."""
        self.__dict__["_cntk_step"] = step_function
        return self

    def _shown_step_output(self):
        """The output CNTK 2.7 shows as the one input of the recurrence's root (its
        ``Combine``; ``NoOp`` when named) before the layer is applied to values with a shape:
        the step's output, of unknown shape, owned by the step's op (a ``GRU`` block,
        ``Plus``; a ``Fold``'s ``Sequence::Slice``); the same one each time.  (Applied, it is
        ``_graph_views.shown_step_output``.)"""
        made = self.__dict__.get("_step_output")
        if made is None:
            made = self.__dict__["_step_output"] = self._step_output()
        return made

    def _step_output(self):
        step = self.__dict__.get("_cntk_step")
        if self.kind == "Fold":
            return _sequence_last(placeholder()).output
        if isinstance(step, LayerFunction):
            return step.outputs[0]
        try:        # (a Python function of the states and the input, on placeholders)
            out = step(*[placeholder() for _ in range(max(_arity(step, required=True), 1))])
            return out.outputs[0]
        except Exception:       # (one Stadyn cannot defer: the layer's own output)
            return self.output



# the recurrences (fused or of a step graph) whose step the walks show as CNTK 2.7's graph
# holds it: of a step of one state, without stabilisers or projection
_VIEWED = ("cntk_gru_sequence", "cntk_rnn_sequence", "recurrence")
_VIEWED_STEPS = ("gru", "rnnstep", "lstm")


class _StepView:
    """What builds the graph CNTK 2.7 holds for the step of a recurrence Stadyn runs as one
    op (a fused kernel, or its step graph: ``_graph_views.note_step_view``): the step's block
    (``GRU``, ``RNNStep``) over a ``PastValue`` of its own output (``FutureValue``
    backwards) and the sequence, its ops Stadyn's written out as the step computes one
    position, none of them run.  It holds the step layer (for its parameters), not the
    graph's values."""

    def __init__(self, step, kind: str, name: str):
        self.step, self.kind, self.name = step, kind, name

    def __call__(self, out: Variable) -> Variable:
        node = out.parent
        states = recurrence_states(node)
        x = node.inputs[states.sequences[0]]
        op = "FutureValue" if states.go_backwards else "PastValue"
        pasts = [G.past_value_view(out, op, k, shape) for k, shape in enumerate(states.shapes)]
        with auto_forward(False):       # (nodes to show, never values to compute)
            made = self.step.apply(*pasts, x)
        inner = list(made) if isinstance(made, tuple) else [made]
        for v in made_between(inner, {id(p) for p in pasts} | {id(x)}):
            shown_only(v.parent)
        kind = G.STEP_BLOCKS[self.kind]
        if len(inner) > 1:              # (an LSTM's h and c: one block of two outputs)
            with auto_forward(False):
                outputs = list(G.block_of_outputs(tuple(inner), kind, self.name,
                                                  (*pasts, x)))
            for v in outputs:
                shown_only(v.parent)
            for v in made_between(outputs, {id(p) for p in pasts} | {id(x)}):
                G.mark_view(v)      # (its values are the loop's: not given out by name)
        else:
            outputs = inner
            G.BLOCKS[made] = G.Block(kind, self.name, (*pasts, x))
        mark_step_inside(kind, self.step, inner, [*pasts, x])
        for past, output in zip(pasts, outputs):
            G.read_by_past_value(past, output)
        return outputs[0]


class _FoldSlice:
    """What builds the input a Fold's root shows (``_graph_views.note_step_view``): the
    ``Sequence::Slice`` block taking the recurrence's last (first) step, with its two scalar
    constants, a node over the recurrence that no run computes.  It holds nothing of the
    graph: the recurrence is the input of the Fold's ``sequence_last``."""

    def __call__(self, out: Variable) -> Variable:
        last = out
        while last.parent is not None and last.parent.spec.name == "identity":
            last = last.parent.inputs[0]
        states, lengths = last.parent.inputs[:2]
        take = F.sequence_last if last.parent.spec.name == "sequence_last" else \
            F.sequence_first
        with auto_forward(False):       # (a node to show, never a value to compute)
            sliced = take(states, lengths)
        shown_only(sliced.parent)
        if G.BATCH(last):
            G.BATCH.add(sliced)
        G.mark_block(sliced, "Sequence::Slice", "", [states], "GatherPacked")
        show_constants(sliced, shown_constants(last))
        keep_with(last, _SLICE_SHOWN, sliced)       # (its scalars follow last's: float64)
        return sliced


class _FunctionStepView:
    """What builds the graph CNTK 2.7 holds for the step of a recurrence of a Python function
    (``_graph_views.note_step_view``): the step's graph replayed (``_clone.rebuild``, its
    parameters shared, its blocks carried) on a ``PastValue`` (``FutureValue`` backwards) of
    each state and the sequences, none of it run.  Where the step's graph meets its
    arguments in another order than the function takes them (``tanh(times(x, W) + h)``
    meets ``x`` first), CNTK 2.7's ``@Function`` passes them through a ``Tuple`` block of an
    output each (``force_order_args``), which the view shows.  It holds nothing of the
    graph: the step is read from the recurrence's op."""

    def __call__(self, out: Variable) -> "Variable | None":
        node = out.parent
        states = recurrence_states(node)
        step = node.kwargs["step"]
        op = "FutureValue" if states.go_backwards else "PastValue"
        pasts = [G.past_value_view(out, op, k, shape) for k, shape in enumerate(states.shapes)]
        sequences = [node.inputs[k] for k in states.sequences]
        arguments = pasts + sequences
        own = list(step.states) + list(step.inputs)
        # (values hoisted out of the step, a stabiliser's softplus(alpha): the view reads
        # what the loop is fed for them, as CNTK's step reads the outside graph)
        fed = list(node.inputs[len(node.inputs) - len(step.captured):]) if step.captured else []
        try:
            with auto_forward(False):       # (nodes to show, never values to compute)
                if _met_out_of_order(step.outputs, own):
                    arguments = list(G.block_of_outputs(tuple(arguments), "Tuple", "",
                                                        tuple(arguments)))
                made = rebuild(list(step.outputs), dict(zip(own + step.captured, arguments + fed)))
        except Exception:       # (a step whose ops take no whole sequence: no view, the
            return None         # recurrence shown as one node, as before)
        for v in made_between(made, {id(a) for a in pasts + sequences + fed}):
            shown_only(v.parent)
            G.mark_view(v)
        for past, output in zip(pasts, made):
            G.read_by_past_value(past, output)
        return made[0]


def _met_out_of_order(outputs: list, arguments: list) -> bool:
    """Whether a walk of ``outputs`` meets ``arguments`` (a step's states, then its
    sequences) in another order than theirs."""
    wanted = {id(a) for a in arguments}
    met = [v for v in G.walk_operands(list(outputs), list(arguments)) if id(v) in wanted]
    return [id(v) for v in met] != [id(a) for a in arguments]


def _step(step_function: Any):
    """A step as the native layers call it (on Variables)."""
    if isinstance(step_function, LayerFunction):
        return step_function.layer
    refuse_parameters_made(step_function)   # (CNTK 2.7's check of a Python step)
    return FunctionStep(step_function)


class FunctionStep:
    """A Python function (or ``@C.Function``) as a recurrence's step: called on Functions
    wrapping one step of each state and input (batch axis first), it returns the new state or
    a tuple (or multi-output Function) of states.

    Its states are its arguments but the last.  Their shapes are those of the recurrent layer
    the function applies (``LSTM``, ``GRU``, ... held in its closure, as CNTK's tutorials write
    ``lambda dh, dc, x: lstm(dh, dc, splice(x, attention(dh)))``), else (one state) the shape
    the step maps to itself once the input's is known, as CNTK 2.7 infers it: the input
    step's, else a vector as long as an axis of a parameter the step reads.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> lstm = C.layers.LSTM(4)
        >>> step = FunctionStep(lambda dh, dc, x: lstm(dh, dc, x * 2.0))
        >>> step.state_shapes
        [(4,), (4,)]
    """

    def __init__(self, fn: Any):
        self.fn = fn
        arity = _arity(fn)
        # its states: the arguments without a default but the last (CNTK 2.7 makes a Function
        # of the required ones: C.plus's name='' is none)
        self.n_states = max(_arity(fn, required=True) - 1, 1)
        self.state_shapes = _inner_state_shapes(fn, self.n_states)
        if self.state_shapes is None:
            self.state_shapes = _probed_state_shapes(fn, self.n_states, arity)
        # the step called on placeholders (its states of unknown shapes), where no cell gives
        # them: the same trial state_shapes_for replays over candidate shapes
        self._tried = None
        if self.state_shapes is None and self.n_states > 1:
            self._tried = trial(fn, self.n_states)
            if self._tried is None:
                # (no cell found, and the step is no function of its states alone either)
                raise _states_not_found(fn, self.n_states)
        self.parameters: list = []

    def state_shapes_for(self, step_shape: tuple) -> Any:
        """The states' shapes over input steps of ``step_shape`` where the step applies no
        recurrent cell: inferred as CNTK 2.7 infers them (``step(h, c, x) = tanh(h + x), c +
        h * 0.5``: both the input step's; :func:`._step_state_shapes.fixed_point_shapes`);
        None for one state none is found for (a state shaped like an input step).  Several
        states none are found for: a ValueError naming the step.  One state of a step that
        applies a layer (``lambda h, x: d(splice(h, x))``): the shape it maps to itself with
        the layer applied dry (:func:`._dry_layers.dry_fixed_point`), the layer built once."""
        if self.state_shapes is not None:
            return self.state_shapes
        shapes = fixed_point_shapes(self.fn, step_shape, self.n_states, self._tried)
        if shapes is None and self.n_states == 1:   # (a step applying a layer: Dense(3)'s
            shapes = dry_fixed_point(self.fn, step_shape)   # state, (3,), as CNTK 2.7's)
        if shapes is None and self.n_states > 1:
            raise _states_not_found(self.fn, self.n_states, step_shape)
        return shapes

    def __call__(self, *variables):
        for v in variables:         # one step of each state and input, batch axis first
            G.BATCH.add(v)
            G.STEP_VALUES.add(v)
        out = self.fn(*[wrap(v) for v in variables])
        outputs = getattr(out, "outputs", None)
        if not isinstance(out, (tuple, list)) and outputs is not None and len(outputs) > 1:
            out = tuple(outputs)
        out = tuple(unwrap(o) for o in out) if isinstance(out, (tuple, list)) else unwrap(out)
        note_step_blocks(variables, out if isinstance(out, tuple) else (out,))
        return out


def _states_not_found(fn: Any, n_states: int, step_shape: tuple | None = None) -> ValueError:
    """The error for a step of ``n_states`` states whose shapes are not found: from a
    recurrent cell it applies, nor (given the input steps' ``step_shape``) as shapes it maps to
    themselves."""
    fixed = "" if step_shape is None else (", or else from the shapes the step maps to "
                                           f"themselves over input steps of {tuple(step_shape)}")
    return ValueError(
        f"the recurrence step {_where(fn)} takes {n_states} states, whose shapes Stadyn takes "
        f"from the recurrent cell (LSTM, GRU, RNNStep) the step applies{fixed}, and it found "
        "none (or cells of different state shapes: it looks in the step's closure and module "
        "globals, in lists and dicts of them by a constant subscript, and at the calls the "
        "step makes on placeholders); bind the cell to a name the step reads: "
        "cell = self.cell; lambda h, c, x: cell(h, c, x)")


def _arity(fn: Any, required: bool = False) -> int:
    """How many arguments a step function takes (``required``: without a default)."""
    arguments = getattr(fn, "arguments", None)
    if arguments is not None:
        return len(arguments)
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    return len([p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                and not (required and p.default is not p.empty)])


def _inner_state_shapes(fn: Any, n_states: int) -> Any:
    """The state shapes of the recurrent layers of ``n_states`` states ``fn`` refers to: by a
    name of its closure or a global name, else as a constant item of a list, tuple or dict
    so named (``recs[0](h, c, x)``), else as any item of one; None unless those found all
    have the same shapes."""
    fn = getattr(fn, "_fn", fn)
    code = getattr(fn, "__code__", None)
    named = dict(zip(getattr(code, "co_freevars", ()),
                     [c.cell_contents if _has_contents(c) else None
                      for c in (getattr(fn, "__closure__", None) or ())]))
    if code is not None:
        named.update({n: getattr(fn, "__globals__", {}).get(n) for n in code.co_names})
    values = list(named.values())
    held = [item for value in values if isinstance(value, (list, tuple, dict))
            for item in (value.values() if isinstance(value, dict) else value)]
    found: list = []
    for candidates in (values, _subscripted(code, named), held):
        for item in candidates:
            shapes = getattr(getattr(item, "layer", None), "state_shapes", None)
            if shapes is not None and len(shapes) == n_states and \
                    all(item is not f for f in found):
                found.append(item)
        if found:
            break
    shapes = {tuple(tuple(s) for s in f.layer.state_shapes) for f in found}
    return list(shapes.pop()) if len(shapes) == 1 else None


def _probed_state_shapes(fn: Any, n_states: int, arity: int) -> Any:
    """The state shapes of the recurrent cell ``fn`` applies, found by calling it on
    placeholders without a shape (a cell reached by an attribute, ``self.cell``, or a computed
    index, ``cells[k]``): each call it makes waits as a :class:`Deferred`, which names its
    layer, as CNTK infers the states' shapes from the cell its step applies.  None unless the
    cells of ``n_states`` states it applies have one shape."""
    from ._deferred_reads import parts_of
    from ._variables import placeholder
    fn = getattr(fn, "_fn", fn)
    try:
        with auto_seeds_kept():     # a layer the step makes takes its seeds when built
            out = fn(*[placeholder(name=f"state{k}") for k in range(arity)])
    except Exception:       # a step the probe cannot run: its shapes stay unknown
        return None
    shapes = set()
    for part in parts_of(out):
        cell = getattr(getattr(part._fn, "layer", None), "state_shapes", None)
        if cell is not None and len(cell) == n_states:
            shapes.add(tuple(tuple(s) for s in cell))
    return list(shapes.pop()) if len(shapes) == 1 else None


def _where(fn: Any) -> str:
    """``'step' (model.py:12)``: a step function's name and where it is defined."""
    fn = getattr(fn, "_fn", fn)
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))
    return f"{name!r}" + (f" ({code.co_filename}:{code.co_firstlineno})" if code else "")


def _subscripted(code: Any, named: dict) -> list:
    """The items ``code`` takes by a constant subscript (``recs[0]``, ``cells["gru"]``) from
    the lists, tuples and dicts in ``named``."""
    if code is None:
        return []
    items = []
    ins = list(dis.get_instructions(code))
    for load, key, sub in zip(ins, ins[1:], ins[2:]):
        if load.opname in ("LOAD_DEREF", "LOAD_GLOBAL", "LOAD_NAME") and \
                key.opname == "LOAD_CONST" and sub.opname == "BINARY_SUBSCR" and \
                isinstance(named.get(load.argval), (list, tuple, dict)):
            try:
                items.append(named[load.argval][key.argval])
            except (KeyError, IndexError, TypeError):
                pass
    return items


def _has_contents(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _initial(initial_state: Any, layer: str) -> Any:
    """The initial state(s) as the layer ``layer`` is made with them: a number becomes a
    Constant of shape ``(1,)`` (None a scalar 0), made once for every application and state,
    as CNTK 2.7 makes it (listed among the model's ``constants``), of ``default_options``'
    type where the layer is made (float32 unless ``dtype=np.float64``), whatever the input's."""
    initial_state = _L.resolve(layer, "initial_state", initial_state)
    if isinstance(initial_state, tuple):
        return tuple(_initial(s, layer) for s in initial_state)
    if initial_state is None:
        return unwrap(Constant(0.0))
    if np.isscalar(initial_state) and not isinstance(initial_state, (str, bytes)):
        return unwrap(Constant(np.asarray(initial_state).item(), shape=(1,)))
    if isinstance(initial_state, Variable) or isinstance(unwrap(initial_state), Variable):
        needs = [initial_state] if getattr(initial_state, "is_input", False) else \
            list(getattr(initial_state, "arguments", None) or ())   # (CNTK 2.7 refuses one
        if needs:       # reaching inputs as the layer is made: functions.py:253)
            raise TypeError(f"CNTK Function 'recurrence' has {len(needs)} missing arguments ("
                            f"{', '.join(a.name for a in needs)}), which is currently not "
                            f"supported ({layer}: use RecurrenceFrom for such a state)")
        return unwrap(initial_state)    # (a Function computing it: its value, as CNTK 2.7's
    return unwrap(_native(initial_state))   # delay reads it, not a layer option's callable)


def Recurrence(step_function, go_backwards=_L.default_override_or(False),
               initial_state=_L.default_override_or(0), return_full_state: bool = False,
               name: str = "") -> LayerFunction:
    """``cntk.layers.Recurrence``: ``step_function`` (``(state..., x) -> state``) along the
    sequence axis.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x = C.sequence.input_variable(2)
        >>> h = C.layers.Recurrence(C.layers.LSTM(3))(x)
        >>> [a.shape for a in h.eval({x: [np.ones((2, 2), np.float32)]})]
        [(2, 3)]
    """
    return StatesLayer(_L.Recurrence(_step(step_function), go_backwards,
                                       _initial(initial_state, "Recurrence"), return_full_state,
                                       name), "Recurrence", name).with_step(step_function)


def RecurrenceFrom(step_function, go_backwards=_L.default_override_or(False),
                   return_full_state: bool = False, name: str = "") -> LayerFunction:
    """``cntk.layers.RecurrenceFrom``: called as ``(initial states..., x)``.  Example:
    ``C.layers.RecurrenceFrom(C.layers.GRU(4))(h0, x)``."""
    return StatesLayer(_L.RecurrenceFrom(_step(step_function), go_backwards,
                                           return_full_state, name), "RecurrenceFrom",
                       name).with_step(step_function)


def Fold(folder_function, go_backwards=_L.default_override_or(False),
         initial_state=_L.default_override_or(0), return_full_state: bool = False,
         name: str = "") -> LayerFunction:
    """``cntk.layers.Fold``: the final state of a recurrence.  Example:
    ``C.layers.Fold(C.layers.GRU(4))(x)``."""
    return _FoldLayer(_L.Fold(_step(folder_function), go_backwards,
                                _initial(initial_state, "Fold"), return_full_state, name),
                      "Fold", name).with_step(folder_function)


def _float64_scalars(v) -> None:
    """A float64 Fold's scalars as CNTK 2.7's first run clones them: float64 (those of the
    ``Sequence::Slice`` its walks show too, where made: ``_FoldSlice``)."""
    float64_scalars(v)
    sliced = kept_with(v, _SLICE_SHOWN)
    if sliced is not None:
        show_constants(sliced, shown_constants(v))


_SLICE_SHOWN = "compat.cntk: the Sequence::Slice a Fold's walks show over its recurrence"


class _FoldLayer(StatesLayer):
    """A Fold: CNTK 2.7 takes each state's last (first) step by a ``Sequence::Slice``, whose
    two scalar constants (0 and 1, float32) its graph lists; Stadyn's op needs none, so the
    walks are shown them."""

    def __call__(self, *args):
        out = super().__call__(*args)
        for o in getattr(out, "outputs", None) or ():
            v = unwrap(o)
            if not isinstance(v, Variable):     # (a call that waits for its operand's
                continue                        # shape: shown once built, by this call)
            while v.parent is not None and v.parent.spec.name == "identity":
                v = v.parent.inputs[0]
            if v.parent is not None and v.parent.spec.name in ("sequence_last",
                                                               "sequence_first"):
                show_slice_scalars(v)
                if np.dtype(v.dtype) == np.float64:     # float64 once CNTK clones them
                    at_first_run(v, _float64_scalars)
                self._view_steps(unwrap(o), v)
        return out

    def _view_steps(self, out: Variable, last: Variable) -> None:
        """Show the Fold ``out`` as CNTK 2.7's graph holds it where its step is a viewed cell
        (``GRU``, ``RNNStep``, ``LSTM``; one state): its root's input the ``Sequence::Slice``
        block ``last`` (Stadyn's ``sequence_last``), over the recurrence, whose step the walks
        see as the cell's block over a ``PastValue`` of its output (``_StepView``); the
        recurrence itself still one fused op."""
        states = last.parent.inputs[0]
        kind = getattr(getattr(self.layer, "step", None), "kind", None)
        if out not in G.BLOCKS or len(self.outputs) != 1 or states.parent is None or \
                states.parent.spec.name not in _VIEWED or kind not in _VIEWED_STEPS or \
                (kind != "lstm" and self.layer.step.op_by_op) or states in G.BLOCKS:
            return
        G.BLOCKS[states] = G.Block("Recurrence", "", (states.parent.inputs[0],))
        G.note_step_op(states, G.STEP_BLOCKS[kind])
        G.note_step_view(states, self._step_view(kind))
        G.note_step_view(out, _FoldSlice())
