"""``cntk.layers``' recurrent layers on Stadyn's (``stadyn.layers``: ``Recurrence``,
``RecurrenceFrom``, ``Fold``, ``LSTM``, ``GRU``, ``RNNStep``).

A step may be a CNTK layer or any Python function over CNTK Functions
(``Recurrence(lambda h, x: C.tanh(h + x))``): the function is called on Functions wrapping the
step's placeholders.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import numpy as np

from ... import layers as _L
from ...graph import Variable, kept_with
from . import _graph as G
from ._adapt import batched as is_batched, sample_shape, unwrap, wrap
from ._function import combine_outputs
from ._function_step import FunctionStep, step_arity
from ._init_arguments import check_init_arguments
from ._layer_signatures import bound, cntk_signature
from ._layers import LayerFunction, _native
from ._layers_function import refuse_typed_steps
from ._layers_identity import FULL_STATES
from ._mixins import GraphObject
from ._recurrent_views import (SLICE_SHOWN, VIEWED, VIEWED_STEPS, FoldSlice, FunctionStepView,
                               StepView)
from ._run_checks import InvalidAtRunError, at_first_run, refuse_when_run
from ._shown_constants import (float64_scalars, scalar_constant, show_constants,
                               show_slice_scalars, shown_constants)
from ._step_checks import check_step_function
from ._step_refusals import check_data_types, refuse_unread_states
from ._step_views import mark_step_inside
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

    # (CNTK 2.7's Recurrence, RecurrenceFrom and Fold are composites named by alias, which
    # takes name=None as no name: no block's as_block)
    _named_by_alias = True

    def __call__(self, *args):
        if self.kind == "RecurrenceFrom":       # (its initial states: CNTK 2.7's TypeError)
            refuse_values(args[:-1], _STATE_NAMES)
        step = getattr(self.layer, "step", None)
        if isinstance(step, FunctionStep) and args:     # (CNTK 2.7's refusals: _step_refusals)
            init = list(args[:-1]) if self.kind == "RecurrenceFrom" else \
                list(self.layer.initial_state) if isinstance(self.layer.initial_state, tuple) \
                else [self.layer.initial_state]
            check_data_types(step.fn, step.n_states, init, args[-1])
        out = super().__call__(*args)
        if self.kind == "RecurrenceFrom":
            _refuse_per_sample_scalars(args[:-1], out)
        if isinstance(step, FunctionStep) and not self.layer.return_full_state:
            refuse_unread_states(step.fn, step.n_states, out, self.kind,
                                 lambda: step.state_shapes_for(sample_shape(args[-1]), init),
                                 step.refusal_memo)
        v = getattr(out, "variable", None)
        kind = getattr(getattr(self.layer, "step", None), "kind", None)
        if kind == "lstm" and isinstance(v, Variable) and not self.own_name and \
                self.kind in ("Recurrence", "RecurrenceFrom") and \
                not self.layer.return_full_state:
            layer = copy.copy(self.layer)       # (not this layer: its caches hold v, and
            layer.return_full_state = True      # FULL_STATES' value must not keep its key)
            FULL_STATES[v] = functools.partial(_full_state, layer, self.kind, self.own_name,
                                               args)
        if isinstance(v, Variable) and v in G.BLOCKS and kind in G.STEP_BLOCKS:
            G.note_step_op(v, G.STEP_BLOCKS[kind])      # (its root's input: the step's block)
            if v.parent is not None and v.parent.spec.name in VIEWED + ("cntk_lstm_sequence",) \
                    and kind in VIEWED_STEPS and (kind == "lstm" or not self.layer.step.op_by_op):
                G.note_step_view(v, self._step_view(kind))
        elif isinstance(v, Variable) and v in G.BLOCKS and v.parent is not None and \
                v.parent.spec.name == "recurrence" and \
                isinstance(getattr(self.layer, "step", None), FunctionStep):
            G.note_step_view(v, FunctionStepView())
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

    def _step_view(self, kind: str) -> "StepView":
        """How the walks see this layer's step, a viewed cell of ``kind`` (``lstm``, ``gru``,
        ``rnnstep``): its block, named as the step Function it was made with (``with_step``)."""
        step = self.__dict__.get("_cntk_step")
        return StepView(self.layer.step, kind, getattr(step, "name", "") or "")

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

    def _known_parameters(self) -> "tuple | None":
        """Before its first application, a recurrence of a Python step's parameters as CNTK
        2.7 lists them then: those of the step's Function over placeholders
        (:meth:`FunctionStep.declared_parameters`); once applied, or of another step, a
        layer's (``LayerFunction._known_parameters``)."""
        step = getattr(self.layer, "step", None)
        if isinstance(step, FunctionStep) and not self._ever_applied():
            return tuple(step.declared_parameters())
        return super()._known_parameters()

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
            out = step(*[placeholder() for _ in range(max(step_arity(step, required=True), 1))])
            return out.outputs[0]
        except Exception:       # (one Stadyn cannot defer: the layer's own output)
            return self.output


def _step(step_function: Any, kind: str = "Recurrence"):
    """A step as the native layers call it (on Variables).  A layer whose outputs are not one
    fewer than its arguments (``Dense(3)``, a ``Sequential`` of one argument: no state) is
    refused with CNTK 2.7's TypeError, raised as the ``kind`` (``Recurrence``, also for a
    ``Fold``; ``RecurrenceFrom``) is made (cntk/layers/sequence.py:265-267, 445-446)."""
    if isinstance(step_function, LayerFunction):
        if len(step_function.outputs) != len(step_function.arguments) - 1:
            raise TypeError(f"{kind}: number of state variables inconsistent between "
                            "create_placeholder() and recurrent block")
    refuse_typed_steps([step_function])     # (called on placeholders as it is made)
    if isinstance(step_function, LayerFunction):
        return step_function.layer
    check_step_function(step_function, kind)    # (CNTK 2.7's checks of a Python step)
    return FunctionStep(step_function)


# the names of the states of CNTK 2.7's RecurrenceFrom Function (recurrence_from_1/2/3,
# cntk/layers/sequence.py:268-273), which its TypeErrors name
_STATE_NAMES = ("h", "c", "a")


def refuse_values(values: "list | tuple", names: "tuple | list") -> None:
    """CNTK 2.7's TypeError for a value given a Function's argument (``names``, in order) that
    is no Variable or Function (a NumPy array, a list): ``RecurrenceFrom(step)(np.ones(3),
    x)``, ``Recurrence(step, initial_state=np.ones(3))`` (whose Function calls its
    RecurrenceFrom on it as it is made), ``UnfoldFrom(g)(np.ones(3), x)``
    (``Function._replace_args_type_check``, cntk/ops/functions.py:303).

    Example:
        >>> import numpy as np
        >>> try:
        ...     refuse_values([np.ones(3)], ("h",))
        ... except TypeError as e:
        ...     print(e)
        argument h was passed an object that is not a Variable or Function
    """
    for k, v in enumerate(values):
        if v is None or isinstance(v, (GraphObject, Variable)) or \
                getattr(type(v), "_cntk_function", False):
            continue
        what = f"argument {names[k]}" if k < len(names) else f"positional argument {k}"
        raise TypeError(f"{what} was passed an object that is not a Variable or Function")


def _refuse_per_sample_scalars(states: tuple, out: Any) -> None:
    """A RecurrenceFrom's initial state of one scalar per sample (``reduce_sum`` of an input)
    for a state with axes: CNTK 2.7 builds it, of the state's shape, and refuses it as it first
    runs (RuntimeError ``VerifySize: expected matrix size 1 x 1, but it is 3 x 1``), where
    a scalar Constant is broadcast."""
    v = unwrap(out)
    if not isinstance(v, Variable) or not sample_shape(out):
        return
    for state in states:
        if is_batched(state) and not sample_shape(state):
            refuse_when_run(v, f"RecurrenceFrom: the initial state {state!r} is one scalar per "
                            f"sample, for a state of shape {tuple(sample_shape(out))} (CNTK "
                            "2.7: VerifySize: expected matrix size 1 x 1)", InvalidAtRunError)
            return


def _initial(initial_state: Any, layer: str) -> Any:
    """The initial state(s) as the layer ``layer`` is made with them: a number becomes a
    Constant of shape ``(1,)`` (None a scalar 0), made once for every application and state,
    as CNTK 2.7 makes it (listed among the model's ``constants``), of ``default_options``'
    type where the layer is made (float32 unless ``dtype=np.float64``), whatever the input's.
    CNTK 2.7's refusals as the layer is made: a NumPy scalar (``np.float32(0.5)``; a Python
    number or ``np.float64`` is made a Constant) is its NotImplementedError, a value that is
    no number, Variable or Function (a NumPy array, a list) its TypeError
    (:func:`refuse_values`)."""
    initial_state = _L.resolve(layer, "initial_state", initial_state)
    made = _initial_state(initial_state, layer)
    given = initial_state if isinstance(initial_state, tuple) else (initial_state,)
    refuse_values([None if np.isscalar(s) else s for s in given], _STATE_NAMES)
    return made


def _initial_state(initial_state: Any, layer: str) -> Any:
    """:func:`_initial` of the value(s) ``initial_state`` (numbers made Constants)."""
    if np.isscalar(initial_state) and not isinstance(initial_state, (float, int)):
        # (CNTK 2.7's Constant(value, shape=(1)) of a NumPy scalar or a string: SWIG's
        # overloads take Python numbers only, cntk/layers/blocks.py:63-64)
        raise NotImplementedError(
            f"{layer}: initial_state={initial_state!r} ({type(initial_state).__name__}) "
            "is no Python number: Wrong number or type of arguments for overloaded function "
            "'new_Constant' (give float(value) or a Constant)")
    if isinstance(initial_state, tuple):
        return tuple(_initial_state(s, layer) for s in initial_state)
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
    return StatesLayer(_L.RecurrenceFrom(_step(step_function, "RecurrenceFrom"), go_backwards,
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
    ``Sequence::Slice`` its walks show too, where made: ``FoldSlice``)."""
    float64_scalars(v)
    sliced = kept_with(v, SLICE_SHOWN)
    if sliced is not None:
        show_constants(sliced, shown_constants(v))


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
        see as the cell's block over a ``PastValue`` of its output (``StepView``); the
        recurrence itself still one fused op.  A Python step's Fold (one state) likewise, its
        step the step's graph replayed (``FunctionStepView``), so its parameters are listed
        in the order of CNTK 2.7's walk (``Sequential([Dense(2), Dense(5)])``'s last first)."""
        states = last.parent.inputs[0]
        kind = getattr(getattr(self.layer, "step", None), "kind", None)
        if isinstance(getattr(self.layer, "step", None), FunctionStep) and out in G.BLOCKS \
                and len(self.outputs) == 1 and states.parent is not None and \
                states.parent.spec.name == "recurrence" and states not in G.BLOCKS:
            G.BLOCKS[states] = G.Block("Recurrence", "", (states.parent.inputs[0],))
            G.note_step_view(states, FunctionStepView())
            G.note_step_view(out, FoldSlice())
            return
        if out not in G.BLOCKS or len(self.outputs) != 1 or states.parent is None or \
                states.parent.spec.name not in VIEWED or kind not in VIEWED_STEPS or \
                (kind != "lstm" and self.layer.step.op_by_op) or states in G.BLOCKS:
            return
        G.BLOCKS[states] = G.Block("Recurrence", "", (states.parent.inputs[0],))
        G.note_step_op(states, G.STEP_BLOCKS[kind])
        G.note_step_view(states, self._step_view(kind))
        G.note_step_view(out, FoldSlice())


def _full_state(layer: Any, kind: str, own_name: Any, args: tuple) -> Any:
    """``layer`` (a copy of a ``StatesLayer``'s, with ``return_full_state``) applied to ``args``
    again (the same step, so the same parameters): the Function of both an LSTM's states, which
    CNTK 2.7's ``identity`` of its output gives (``_layers_identity.FULL_STATES``)."""
    return StatesLayer(layer, kind, own_name)(*args)
