"""A Python function (or ``@C.Function``) as a recurrence's step (:class:`FunctionStep`), and how
the shapes of its states are found as CNTK 2.7 finds them: from the recurrent cell it applies
(in its closure or globals, or at the calls it makes on placeholders), else through the loop
(``_step_state_shapes``, ``_dry_layers``).

Example:
    >>> import stadyn.compat.cntk as C
    >>> FunctionStep(lambda h, x: C.tanh(h + x)).n_states
    1
"""

from __future__ import annotations

import dis
import inspect
from typing import Any

from ..._random import auto_seeds_kept
from ...graph import Variable
from . import _graph as G
from ._adapt import unwrap, wrap
from ._dry_layers import dry_fixed_point, dry_layers
from ._step_delays import delayed_sequences, given, step_delays
from ._step_state_shapes import _where, fixed_point_shapes, trial
from ._step_values import note_step_blocks

__all__ = ["FunctionStep", "step_arity"]


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
        # its states: the arguments without a default but the last (CNTK 2.7 makes a Function
        # of the required ones: C.plus's name='' is none; a cell bound by a default,
        # lambda h, c, x, cell=cell: ..., is the step's own)
        self.n_states = max(step_arity(fn, required=True) - 1, 1)
        self.state_shapes = _inner_state_shapes(fn, self.n_states)
        if self.state_shapes is None:
            self.state_shapes = _probed_state_shapes(fn, self.n_states, self.n_states + 1)
        # the step called on placeholders (its states of unknown shapes), where no cell gives
        # them: the same trial state_shapes_for replays over candidate shapes
        self._tried = None
        if self.state_shapes is None and self.n_states > 1:
            self._tried = trial(fn, self.n_states, layers=True)
            if self._tried is None:
                # (no cell found, and the step is no function of its states alone either)
                raise _states_not_found(fn, self.n_states)
        # the states' shapes found over input steps of each shape (state_shapes_for): the
        # search applies the step (a layer it applies: twice, dry) each time otherwise
        self._found: dict = {}
        # what _step_refusals finds of the step once (the states its output leaves unread)
        self.refusal_memo: dict = {}
        # the parameters its recordings read (the layers it applies, the values it reads), in
        # CNTK 2.7's order of a walk of its result: the recurrence's, once applied
        self.parameters: list = []

    def state_shapes_for(self, step_shape: tuple, initial: Any = None) -> Any:
        """The states' shapes over input steps of ``step_shape`` where the step applies no
        recurrent cell: inferred as CNTK 2.7 infers them (``step(h, c, x) = tanh(h + x), c +
        h * 0.5``: both the input step's; :func:`._step_state_shapes.fixed_point_shapes`);
        None for one state none is found for (a state shaped like an input step).  Several
        states none are found for: a ValueError naming the step.  One state of a step that
        applies a layer (``lambda h, x: d(splice(h, x))``): the shape it maps to itself with
        the layer applied dry (:func:`._dry_layers.dry_fixed_point`), the layer built once.
        ``initial``: the initial states (one for all), whose shapes CNTK's loop broadcasts
        each state with (default: ``(1,)``, ``initial_state=0``'s Constant)."""
        if self.state_shapes is not None:
            return self.state_shapes
        inits = _initial_shapes(initial, self.n_states)
        key = (tuple(int(d) for d in step_shape), inits)
        if key not in self._found:      # (found once per input step shape: the same step)
            self._found[key] = self._search(step_shape, inits)
        shapes = self._found[key]
        if shapes is None and self.n_states > 1:
            raise _states_not_found(self.fn, self.n_states, step_shape)
        return None if shapes is None else [tuple(s) for s in shapes]

    def _search(self, step_shape: tuple, inits: Any) -> Any:
        """:meth:`state_shapes_for`'s search over input steps of ``step_shape`` (initial
        states of the shapes ``inits``)."""
        shapes = fixed_point_shapes(self.fn, step_shape, self.n_states, self._tried, inits,
                                    dry=dry_layers)     # (a layer it applies: applied dry)
        if shapes is None and self.n_states == 1:   # (a step refusing the passes' shapes:
            shapes = dry_fixed_point(self.fn, step_shape)   # d(splice(reshape(h, (6,)), x)))
        return shapes

    def sequence_inputs(self, x: Any) -> list:
        """The sequences the recurrence gives the step as more inputs besides ``x``: the
        delays of its input it applies, computed over ``x`` (``_step_delays``)."""
        if "_delays" not in self.__dict__:
            self._delays = step_delays(self.fn, self.n_states, _where(self.fn))
        x_placeholder, delays = self._delays
        return delayed_sequences(x_placeholder, delays, x) if delays else []

    def __call__(self, *variables):
        for v in variables:         # one step of each state and input, batch axis first
            G.BATCH.add(v)
            G.STEP_VALUES.add(v)
        arity = self.n_states + 1   # (past those: a step of each delay, sequence_inputs)
        with given(list(variables[arity:])):
            out = self.fn(*[wrap(v) for v in variables[:arity]])
        outputs = getattr(out, "outputs", None)
        if not isinstance(out, (tuple, list)) and outputs is not None and len(outputs) > 1:
            out = tuple(outputs)
        out = tuple(unwrap(o) for o in out) if isinstance(out, (tuple, list)) else unwrap(out)
        outs = out if isinstance(out, tuple) else (out,)
        note_step_blocks(variables, outs)
        self._note_parameters(outs)
        return out

    def _note_parameters(self, outs: tuple) -> None:
        """Keep the parameters the recorded step ``outs`` reads among :attr:`parameters`."""
        known = {id(p) for p in self.parameters}
        roots = [o for o in outs if isinstance(o, Variable)]
        for v in G.walk_leaves(roots) if roots else ():
            if G.kind_of(v) == "parameter" and id(v) not in known:
                known.add(id(v))
                self.parameters.append(v)

    def declared_parameters(self) -> list:
        """The parameters CNTK 2.7's recurrence of this step lists before it is applied: those
        of the step's Function over placeholders (the layers it applies, ``-1`` in the shapes
        their input decides: ``d(splice(h, x))`` with ``d = Dense(3)``, ``W`` of ``(-1,
        3)``; the parameters it reads), in the order of its walk; none where the step cannot
        be called so.

        Example:
            >>> import stadyn.compat.cntk as C
            >>> d = C.layers.Dense(3)
            >>> step = FunctionStep(lambda h, x: d(C.splice(h, x)))
            >>> [(p.name, p.shape) for p in step.declared_parameters()]
            [('W', (-1, 3)), ('b', (3,))]
        """
        from ._variables import placeholder
        fn = getattr(self.fn, "_fn", self.fn)
        try:
            with auto_seeds_kept():     # (a layer the step makes takes no seed here)
                out = fn(*[placeholder(name=f"state{k}")
                           for k in range(step_arity(fn, required=True))])
        except Exception:       # (a step Stadyn cannot call so: none known)
            return []
        found: list = []
        for item in out if isinstance(out, (tuple, list)) else (out,):
            for p in getattr(item, "parameters", None) or ():
                if all(unwrap(p) is not unwrap(q) for q in found):
                    found.append(p)
        return found


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


def _initial_shapes(initial: Any, n_states: int) -> Any:
    """The sample shapes of a recurrence's initial states ``initial`` (a list, one for all
    states or one each; None: ``initial_state=0``'s Constant, ``(1,)``), None for one whose
    shape is not known, as a tuple of ``n_states``."""
    from ._adapt import sample_shape
    if initial is None:
        return ((1,),) * n_states
    initial = list(initial)
    if len(initial) == 1:
        initial = initial * n_states
    shapes = []
    for v in initial:
        try:
            shape = tuple(int(d) for d in sample_shape(v))
        except (TypeError, ValueError):     # (a value of no shape yet)
            shape = None
        shapes.append(None if shape is None or any(d < 0 for d in shape) else shape)
    return tuple(shapes)


def step_arity(fn: Any, required: bool = False) -> int:
    """How many arguments a step function takes (``required``: without a default).

    Example:
        >>> step_arity(lambda h, x, name="": h), step_arity(lambda h, x, name="": h, True)
        (3, 2)
    """
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
