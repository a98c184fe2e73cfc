"""Recurrence loops of a BrainScript network: ``h = f(x, PastValue(0, h))`` as one recurrence.

CNTK's BrainScript lets a value refer to itself through a delay.  The evaluator passes such a
delay a :class:`~._library.ForwardRef` (its input is still being defined); :class:`Loops`
answers with a *state placeholder*: a Variable of one step's shape, batch axis first and no
sequence axis.  Everything computed from a placeholder belongs to its loop and is one step of
it; a sequence value from outside that meets a loop value is replaced by a *step input* (one
step of that sequence).  When every delay input of a loop is known, the loop's step graph
(placeholders and step inputs to the delays' inputs) becomes one
:class:`~stadyn.ops.StepFunction`, run by the ``recurrence`` op along the sequence axis: the
same op ``sd.sequence.recurrence`` records, so both graph modes run it.  A node made inside
the loop and used outside it stands for its whole sequence (:meth:`Loops.resolve`).

A delay of ``k`` steps is a chain of ``k`` states.  ``FutureValue`` loops run backwards.

Example:
    >>> import numpy as np, stadyn as sd
    >>> from stadyn.brainscript import StadynLibrary, build_network
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     net = build_network('''{ x = Input{1}
    ...         s = x + PastValue(1, s, defaultHiddenActivation = 0) }''', StadynLibrary())
    >>> x, s = net.nodes["x"], net.nodes["s"]
    >>> x.d = [np.array([[1.0], [2.0], [3.0]]), np.array([[4.0]])]
    >>> s.forward()
    >>> [v.ravel().tolist() for v in sd.sequence.unpack_value(s)]
    [[1.0, 3.0, 6.0], [4.0]]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .. import sequence as S
from .._errors import ConfigError
from ..graph import Variable, auto_forward
from ..ops import StepFunction
from ._library import ForwardRef, without_unit_axes

__all__ = ["Loops", "PendingState", "PendingMap", "InitialOfShape"]


@dataclass(eq=False)
class _State:
    placeholder: Variable
    initial: Any
    where: str                     # "file:line" of the delay, for messages
    next_value: Variable | None = None
    ref: ForwardRef | None = None  # the delay input still to come (None: known at once)


@dataclass(eq=False)
class _Loop:
    backwards: bool
    where: str
    states: list[_State] = field(default_factory=list)
    step_inputs: dict[int, tuple[Variable, Variable]] = field(default_factory=dict)  # seq -> X
    merged_into: _Loop | None = None
    outputs: dict[int, tuple[Variable, Variable]] = field(default_factory=dict)      # step -> seq
    closed: bool = False

    def root(self) -> _Loop:
        loop = self
        while loop.merged_into is not None:
            loop = loop.merged_into
        return loop


class PendingState:
    """A delay inside a loop whose dimensions are not known yet (``PastValue (0, h)``): the
    first ``Times`` or element-wise operation it meets gives them (:meth:`Loops.materialize`)."""

    def __init__(self, loop: _Loop, ref: ForwardRef, initial: Any, time_step: int, where: str):
        self.loop, self.ref, self.initial, self.time_step, self.where = \
            loop, ref, initial, time_step, where
        self.variable: Variable | None = None

    def __repr__(self) -> str:
        return f"PastValue/FutureValue at {self.where} (dimensions inferred later)"


class PendingMap(PendingState):
    """``fn`` of a pending delay, made when the delay's dimensions become known.

    An element-wise operation of a pending delay and a partner of one element per step (CNTK's
    stabiliser ``beta .* PastValue (0, h)``, ``beta`` a ``[1]`` parameter) broadcasts: its
    result has the delay's dimensions, which the next operation gives (a ``Times``: its
    input dimensions).  Where a node is needed first, the partner's dimensions are taken
    (``fallback``; None for a number: the dimensions stay unknown).
    """

    def __init__(self, inner: PendingState, fn: Callable[[Variable], Any],
                 fallback: tuple[int, ...] | None):
        super().__init__(inner.loop, inner.ref, inner.initial, inner.time_step, inner.where)
        self.inner, self.fn, self.fallback = inner, fn, fallback


class InitialOfShape:
    """A delay's initial state that is made once the delay's per-step shape is known: in a
    loop, a parameter of inferred dimensions (``(0)``: CNTK.core.bs's
    ``BS.RNNs.PreviousHCWithTrainedInitialState {}``) takes the dimensions of the state it
    starts, as cntk.exe infers them when it validates the loop."""

    def __init__(self, make: Callable[[tuple[int, ...]], Any]):
        self.make = make
        self.value: Any = None

    def of(self, shape: tuple[int, ...]) -> Any:
        """The initial state for a step of ``shape`` (made at the first call)."""
        if self.value is None:
            self.value = self.make(tuple(shape))
        return self.value


def _where(ref_or_loc: Any) -> str:
    loc = getattr(ref_or_loc, "loc", ref_or_loc)
    if loc is None:
        return "<unknown>"
    return f"{loc.path or '<string>'}:{loc.line}"


class Loops:
    """The recurrence loops of one network build (see the module docstring).

    ``mark_batched(v)`` is called for every Variable this class makes (placeholders, step
    inputs), so the library treats their first axis as the batch axis.
    """

    def __init__(self, mark_batched: Callable[[Variable], None]) -> None:
        self._mark = mark_batched
        self._owner: dict[int, tuple[Variable, _Loop | None]] = {}   # id -> (node, loop)
        self._pending: dict[int, tuple[ForwardRef, PendingState]] = {}
        # the PendingMaps given their node, in that order (a checkpoint forgets those after it)
        self._made_maps: list[PendingMap] = []

    def checkpoint(self) -> Callable[[], None]:
        """A function that puts the loops back as they are now (the nodes' owners, the delays
        still waiting for their input, each loop's states, step inputs and outputs, whether it
        is merged or closed): the evaluator forgets a delay's input tried early this way, loops
        closed meanwhile included, and the :class:`PendingMap` nodes made meanwhile (made
        again when next needed, of the states as they are then)."""
        owner, pending = dict(self._owner), dict(self._pending)
        maps_made = len(self._made_maps)
        loops = {id(lp): lp for _, lp in owner.values() if lp is not None}
        loops.update((id(p.loop), p.loop) for _, p in pending.values())
        while True:                       # (and the loops they were merged into)
            more = {id(lp.merged_into): lp.merged_into for lp in loops.values()
                    if lp.merged_into is not None and id(lp.merged_into) not in loops}
            if not more:
                break
            loops.update(more)
        kept = [(lp, list(lp.states), dict(lp.step_inputs), lp.merged_into, dict(lp.outputs),
                 lp.closed) for lp in loops.values()]
        states = [(st, st.next_value, st.ref) for lp in loops.values() for st in lp.states]
        made = [(p, p.variable) for _, p in pending.values()]

        def restore() -> None:
            self._owner.clear()
            self._owner.update(owner)
            self._pending.clear()
            self._pending.update(pending)
            for lp, lp_states, inputs, merged, outputs, closed in kept:
                lp.states, lp.step_inputs, lp.merged_into, lp.outputs, lp.closed = \
                    lp_states, inputs, merged, outputs, closed
            for st, next_value, ref in states:
                st.next_value, st.ref = next_value, ref
            for p, variable in made:
                p.variable = variable
            for m in self._made_maps[maps_made:]:
                m.variable = None
            del self._made_maps[maps_made:]
        return restore

    # ---- which loop a node belongs to ------------------------------------------------------
    def loop_of(self, v: Any) -> _Loop | None:
        """The loop ``v`` was computed in (its root after merges), or ``None``."""
        if not isinstance(v, Variable):
            return None
        stack, found = [v], None
        while stack:
            node = stack[-1]
            entry = self._owner.get(id(node))
            if entry is not None and entry[0] is node:
                stack.pop()
                continue
            parent = node.parent
            todo = [] if parent is None else [i for i in parent.inputs
                                              if not (id(i) in self._owner
                                                      and self._owner[id(i)][0] is i)]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            loops = []
            if parent is not None:
                for i in parent.inputs:
                    loop = self._owner[id(i)][1]
                    if loop is not None:
                        loops.append(loop.root())
            owner = self._merge(loops) if loops else None
            self._owner[id(node)] = (node, owner)
        entry = self._owner[id(v)]
        found = entry[1]
        return None if found is None else found.root()

    def _merge(self, loops: list[_Loop]) -> _Loop:
        first = loops[0].root()
        for other in loops[1:]:
            other = other.root()
            if other is first:
                continue
            if other.closed or first.closed:
                raise ConfigError("a value mixes steps of a loop that is already closed "
                                  f"(at {other.where}) with one being defined")
            if other.backwards != first.backwards:
                raise ConfigError("one loop mixes PastValue ("
                                  f"{'' if first.backwards else first.where}"
                                  f"{other.where if first.backwards else ''}) and FutureValue; "
                                  "a loop runs in one direction")
            first.states += other.states
            first.step_inputs.update(other.step_inputs)
            other.merged_into = first
        return first

    def _own(self, v: Variable, loop: _Loop | None) -> Variable:
        self._owner[id(v)] = (v, loop)
        self._mark(v)
        return v

    # ---- delays --------------------------------------------------------------------------
    def delay(self, x: Any, shape: tuple[int, ...] | None, initial: Any, time_step: int,
              backwards: bool, where: str) -> Variable:
        """``PastValue``/``FutureValue`` of ``x``: a ForwardRef (a new loop, or the loop the
        ref's definition is in), a node of an open loop (more states of it), or a sequence."""
        if isinstance(x, ForwardRef):
            loop = _Loop(backwards, where)
            pending = PendingState(loop, x, initial, time_step, where)
            self._pending[id(x)] = (x, pending)
            if shape is None:
                return pending
            return self.materialize(pending, shape)
        loop = self.loop_of(x)
        if loop is not None:
            if loop.backwards != backwards:
                raise ConfigError("one loop mixes PastValue and FutureValue; a loop runs in one "
                                  "direction")
            states = self._chain(loop, tuple(x.shape[1:]), initial, time_step, where)
            states[0].next_value = x
            return states[-1].placeholder
        x = self.resolve(x)
        if getattr(x, "sequence_lengths", None) is None:
            raise ConfigError("needs a sequence (a value computed from a sequence Input), got a "
                              f"value of shape {getattr(x, 'shape', x)}")
        fn = S.future_value if backwards else S.past_value
        return fn(x, initial, time_step)

    def materialize(self, pending: PendingState, shape: tuple[int, ...]) -> Variable:
        """The state placeholder of ``pending``, now of per-step shape ``shape`` (of a
        :class:`PendingMap`: its function of that placeholder)."""
        if isinstance(pending, PendingMap):
            if pending.variable is None:
                pending.variable = pending.fn(self.materialize(pending.inner, shape))
                self._made_maps.append(pending)
            return pending.variable
        if pending.variable is None:
            states = self._chain(pending.loop.root(), tuple(shape), pending.initial,
                                 pending.time_step, pending.where)
            states[0].ref = pending.ref
            pending.variable = states[-1].placeholder
        return pending.variable

    def settle(self, v: Any) -> Any:
        """A :class:`PendingMap` made with its fallback dimensions where a node is needed now;
        anything else as it is."""
        if isinstance(v, PendingMap) and (v.variable is not None or v.fallback is not None):
            return self.materialize(v, v.fallback)
        return v

    def step_shape(self, v: Variable, batched: bool) -> tuple[int, ...]:
        """The shape of one step of ``v`` (a sequence, a loop value, a batch or a tensor)."""
        if getattr(v, "sequence_lengths", None) is not None:
            return tuple(v.shape[2:])
        return tuple(v.shape[1:]) if batched else tuple(v.shape)

    def _chain(self, loop: _Loop, shape: tuple[int, ...], initial: Any, k: int,
               where: str) -> list[_State]:
        if k < 1:
            raise ConfigError(f"timeStep must be at least 1, got {k}")
        if isinstance(initial, InitialOfShape):
            initial = initial.of(shape)
        states = []
        for _ in range(k):
            with auto_forward(False):
                p = Variable((1,) + tuple(shape))
            states.append(_State(self._own(p, loop), initial, where))
        for earlier, later in zip(states, states[1:]):
            later.next_value = earlier.placeholder
        loop.states += states
        return states

    def define(self, ref: ForwardRef, value: Any) -> None:
        """The value of a delay input passed as ``ref``; closes its loop when nothing of the
        loop is pending any more."""
        _, pending = self._pending.pop(id(ref))
        value = self.settle(value)
        if pending.variable is None:
            raise ConfigError(f"the dimensions of the delay at {pending.where} cannot be "
                              "inferred; give them as its first argument (PastValue (dims, x))")
        state = next(s for s in pending.loop.root().states if s.ref is ref)
        if not isinstance(value, Variable):
            raise ConfigError(f"the value a delay reads must be a node, got {value!r}")
        loop = state_loop = self.loop_of(state.placeholder)
        value_loop = self.loop_of(value)
        if value_loop is not None and value_loop is not state_loop:
            loop = self._merge([state_loop, value_loop])
        state.next_value = value
        state.ref = None
        if not any(s.ref is not None for s in loop.root().states):
            self._close(loop.root())

    # ---- arguments of library calls ------------------------------------------------------
    def prepare(self, values: list[Any]) -> None:
        """Map the arguments of one library call in place: nodes of closed loops to their
        sequences; where a node of an open loop is among them, sequences from outside to
        step inputs of that loop.  The items of an array argument (a tuple: ``Splice ((fwd.h :
        bwd.h))``) count as arguments too."""
        spots = [(k, j) for k, v in enumerate(values) if type(v) is tuple
                 for j in range(len(v))]
        if spots:
            flat = [values[k][j] for k, j in spots] + \
                [v for v in values if type(v) is not tuple]
            self.prepare(flat)
            arrays = {k: list(values[k]) for k, _ in spots}
            for (k, j), v in zip(spots, flat):
                arrays[k][j] = v
            rest = iter(flat[len(spots):])
            for k, v in enumerate(values):
                values[k] = tuple(arrays[k]) if k in arrays else next(rest)
            return
        loops = []
        for k, v in enumerate(values):
            values[k] = v = _made(v)
            if isinstance(v, Variable):
                loop = self.loop_of(v)
                if loop is not None and loop.closed:
                    values[k] = self.resolve(v)
                elif loop is not None:
                    loops.append(loop)
        if not loops:
            return
        loop = self._merge(loops)
        for k, v in enumerate(values):
            if isinstance(v, Variable) and self.loop_of(v) is None and \
                    getattr(v, "sequence_lengths", None) is not None:
                values[k] = self._step_input(loop, v)

    def _step_input(self, loop: _Loop, seq: Variable) -> Variable:
        entry = loop.step_inputs.get(id(seq))
        if entry is not None and entry[0] is seq:
            return entry[1]
        with auto_forward(False):
            x = Variable((1,) + tuple(seq.shape[2:]), dtype=seq.dtype)
        self._own(x, loop)
        loop.step_inputs[id(seq)] = (seq, x)
        return x

    # ---- closing ---------------------------------------------------------------------------
    def _close(self, loop: _Loop, extra: tuple[Variable, ...] = ()) -> None:
        if not loop.step_inputs:
            raise ConfigError(f"the loop through the delay at {loop.where} reads no sequence "
                              "(a recurrence runs along the sequence of an Input)")
        states = [s.placeholder for s in loop.states]
        nexts = []
        extras = [e for e in extra]
        for s in loop.states:
            nxt = s.next_value
            want = tuple(s.placeholder.shape[1:])
            if tuple(nxt.shape[1:]) != want and self.loop_of(nxt) is loop:
                if without_unit_axes(nxt.shape[1:]) != without_unit_axes(want):
                    raise ConfigError(f"the delay at {s.where} has dimensions "
                                      f"{tuple(reversed(want))} but the value it delays has "
                                      f"{tuple(reversed(nxt.shape[1:]))} (column-major)")
                # [n x 1] delayed as [n] (its dimensions were fixed before the value was
                # known): cntk.exe's delay takes its input's [n x 1], whose element-wise uses
                # broadcast to the same values; the loop carries the value as [n], the value
                # itself stays a loop output
                extras.append(nxt)
                nxt = S.reshape_samples(nxt, 1, want)
            nexts.append(nxt)
        with auto_forward(False):
            dummies = [Variable((1,) + tuple(e.shape[1:])) for e in extras]
        seqs = [seq for seq, _ in loop.step_inputs.values()]
        xs = [x for _, x in loop.step_inputs.values()]
        program = StepFunction(states + dummies, xs, nexts + extras)
        initials = [s.initial for s in loop.states] + [0.0] * len(extras)
        ys = S.run_step_function(program, seqs, initials, go_backwards=loop.backwards)
        for node, y in zip(nexts + extras, ys):
            if id(node) not in loop.outputs:
                loop.outputs[id(node)] = (node, y)
        for s, nxt in zip(loop.states, nexts):   # a placeholder: its state one step late
            if id(s.placeholder) not in loop.outputs:
                loop.outputs[id(s.placeholder)] = (s.placeholder, None)
        loop.closed = True

    def resolve_all(self, values: list[Any]) -> list[Any]:
        """:meth:`resolve` for many values; the loop values among them that no recurrence
        computes yet are computed by one more recurrence per loop."""
        values = [_made(v) for v in values]
        wanted: dict[int, tuple[_Loop, list[Variable]]] = {}
        for v in values:
            loop = self.loop_of(v)
            if loop is None or not loop.closed:
                continue
            entry = loop.outputs.get(id(v))
            known = entry is not None and entry[0] is v and entry[1] is not None
            if known or any(s.placeholder is v for s in loop.states) or \
                    any(x is v for _, x in loop.step_inputs.values()):
                continue
            group = wanted.setdefault(id(loop), (loop, []))[1]
            if all(u is not v for u in group):
                group.append(v)
        for loop, extra in wanted.values():
            loop.closed = False
            self._close(loop, tuple(extra))
        return [self.resolve(v) for v in values]

    def resolve(self, v: Any) -> Any:
        """A node of a closed loop as its whole sequence; anything else as it is."""
        v = _made(v)
        if not isinstance(v, Variable):
            return v
        loop = self.loop_of(v)
        if loop is None:
            return v
        if not loop.closed:
            raise ConfigError("a value of a loop is used before the loop is complete")
        entry = loop.outputs.get(id(v))
        if entry is not None and entry[0] is v and entry[1] is not None:
            return entry[1]
        state = next((s for s in loop.states if s.placeholder is v), None)
        if state is not None:                    # the delay itself: the delayed sequence
            fn = S.future_value if loop.backwards else S.past_value
            y = fn(self.resolve(state.next_value), state.initial, 1)
        elif any(x is v for _, x in loop.step_inputs.values()):
            y = next(seq for seq, x in loop.step_inputs.values() if x is v)
        else:                                    # a value inside the loop: run it as well
            loop.closed = False
            self._close(loop, (v,))
            return loop.outputs[id(v)][1]
        loop.outputs[id(v)] = (v, y)
        return y


def _made(v: Any) -> Any:
    """The node a :class:`PendingMap` has made by now; anything else as it is."""
    return v.variable if isinstance(v, PendingMap) and v.variable is not None else v

