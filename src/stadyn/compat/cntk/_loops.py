"""Graph loops closed with ``replace_placeholders`` (and ``ForwardDeclaration.resolve_to``): a
placeholder replaced by a value computed from it through ``past_value`` / ``future_value``.

CNTK runs such a cycle as a recurrence.  So does this module: when the substitute of a
placeholder depends on a placeholder being replaced, the *loop body* (every op between the
placeholders and their substitutes) becomes the step of one ``recurrence`` op along the
sequence axis of the loop's other sequence inputs.  Each delay in the body (``past_value`` of
``a``: forwards; ``future_value``: backwards; one step) reads the previous step's ``a`` (its
initial state at the start); every other op of the body is replayed on one step, held as a
sequence of length 1 so that each op's attributes (axes counted with the sequence axis) stay
right; a whole-sequence recurrence in the body (a greedy decoder's own ``Recurrence``) adds
its states to the loop's and takes one step per step (``_nested.py``).  Then every Variable
of the body is rewired onto its sequence from the recurrence, so what the user holds (the
loop's output, an intermediate such as an LSTM's cell) computes from it, in both modes, and
the lengths made for each placeholder are computed as the loop's, so a value computed from the
body by a Function outside it (``other = a * 2`` of ``a`` in the body) runs over the loop's
steps too.
"""

from __future__ import annotations

from typing import Any

from ... import functions as F
from ... import sequence as S
from ..._errors import StadynError
from ...graph import (Variable, apply, name_scope, new_lengths, set_sequence_axis,
                      topological_nodes)
from ...ops import RECURRENCES
from . import _graph as G
from ._clone import rebuild
from ._nested import NestedRecurrence, as_step

__all__ = ["as_loop_sequence", "one_step", "split_loops", "close_loops", "clone_graph", "LoopError"]

_DELAYS = {"past_value": False, "future_value": True}      # op -> goes backwards


class LoopError(StadynError, ValueError):
    """A graph loop that cannot run as a recurrence (no delay on a path, delays of both
    directions or of more than one step, no sequence input to run along)."""


def as_loop_sequence(v: Variable) -> Variable:
    """A placeholder that a sequence op (``past_value``, ...) is applied to: given a sequence
    axis of its own until it is replaced (a placeholder without a shape takes a scalar step;
    the loop's value must then have that shape)."""
    if v in G.PLACEHOLDERS and v.sequence_lengths is None:
        sample = () if v in G.SHAPELESS else tuple(v.shape[1:] if G.BATCH(v) else v.shape)
        v.reset_shape((1, 1) + sample)
        G.SHAPELESS.discard(v)
        G.BATCH.add(v)
        set_sequence_axis(v, new_lengths())
        G.BATCH.forget()
    return v


def split_loops(substitutions: dict) -> tuple[dict, dict]:
    """``(plain, loops)``: the substitutions that close no loop, and those whose substitute
    depends on a placeholder being replaced."""
    targets = {id(ph) for ph in substitutions}
    plain, loops = {}, {}
    for ph, new in substitutions.items():
        deps = {id(i) for node in topological_nodes([new]) for i in node.inputs}
        (loops if targets & (deps | {id(new)}) else plain)[ph] = new
    return plain, loops


def _body(loops: dict) -> tuple[list, set]:
    """The nodes that depend on a placeholder of ``loops`` (in execution order) and the ids of
    the Variables they make."""
    news = list(loops.values())
    depends = {id(ph) for ph in loops}
    body = []
    for node in topological_nodes(news):
        if any(id(i) in depends for i in node.inputs):
            body.append(node)
            depends.update(id(o) for o in node.outputs if o is not None)
    return body, depends


def _check_delay(node) -> bool:
    """Whether the body node is a one-step delay (and its direction)."""
    backwards = _DELAYS[node.spec.name]
    step = node.args[3] if len(node.args) > 3 else node.kwargs.get("time_step", 1)
    if int(step) != 1:
        raise LoopError(f"a loop through {node.spec.name} with time_step={step}: only loops "
                        "through one-step delays run as recurrences here")
    return backwards


def close_loops(loops: dict, along: Variable | None = None) -> None:
    """Replace each placeholder of ``loops`` by its substitute, the cycles they close run as
    one recurrence (see the module's text) along the sequence axis of ``along`` (by default
    that of the sequences the loop reads)."""
    phs = list(loops)
    body, depends = _body(loops)
    delays = [n for n in body if n.spec.name in _DELAYS and id(n.inputs[0]) in depends]
    if not delays:
        raise LoopError("replace_placeholders: the substitute depends on the placeholder with no "
                        "past_value or future_value between them (an algebraic loop)")
    directions = {_check_delay(n) for n in delays}
    if len(directions) > 1:
        raise LoopError("a loop through both past_value and future_value cannot run as one "
                        "recurrence")
    go_backwards = directions.pop()
    delayed = {id(n.outputs[0]) for n in delays}
    ops = [n for n in body if n not in delays]
    nested = {id(n): NestedRecurrence(n) for n in ops if n.spec.name in RECURRENCES}
    for n in ops:
        if id(n) in nested:
            if nested[id(n)].layout.go_backwards != go_backwards:
                raise LoopError(f"a {n.spec.name} going {_way(not go_backwards)} inside a loop "
                                f"through {'future' if go_backwards else 'past'}_value (which "
                                f"goes {_way(go_backwards)}) cannot be stepped with it")
        elif n.spec.category == "sequence" or len(n.outputs) != 1:
            raise LoopError(f"{n.spec.name} inside a loop closed by replace_placeholders is not "
                            "supported (element-wise and per-step ops and recurrences are)")
    made = [o for n in ops for o in n.outputs if o is not None]
    alias = {id(ph): loops[ph] for ph in phs}
    order = _step_order(ops, alias, delayed)
    external = [along] if along is not None else _sequence_inputs(ops, depends, delayed, nested)
    if not external:
        raise LoopError("a loop closed by replace_placeholders needs a sequence input (besides "
                        "its placeholders) to run along")
    index = {id(v): k for k, v in enumerate(made)}
    for ph in phs:
        new = loops[ph]
        if id(new) not in index and id(new) not in delayed:    # a delay's output: CNTK 599A
            raise LoopError("replace_placeholders: a loop's substitute must be computed inside "
                            "the loop")
        if tuple(ph.shape[2:]) != tuple(new.shape[2:]):
            raise LoopError(f"replace_placeholders: the placeholder has step shape "
                            f"{tuple(ph.shape[2:])} and its substitute {tuple(new.shape[2:])}; "
                            "give the placeholder its shape (placeholder(shape=...): one "
                            "made without a shape takes a scalar step until its loop is "
                            "closed)")
    feeds = []          # delay -> the state it reads
    for n in delays:
        src = n.inputs[0]
        src = alias.get(id(src), src)
        feeds.append(index[id(src)])
    initial: list = [0.0] * len(made)
    for n, k in zip(delays, feeds):
        initial[k] = n.inputs[2]
    shapes = [tuple(v.shape[2:]) for v in made]
    slots = {}          # a nested recurrence -> the slots of the states it carries
    for key, nr in nested.items():
        slots[key] = list(range(len(initial), len(initial) + len(nr.layout.shapes)))
        initial += nr.layout.initial
        shapes += nr.layout.shapes

    def step(*values):
        states, xs = values[:len(shapes)], values[len(shapes):]
        env: dict[int, Variable] = {}
        carried = list(states[len(made):])
        for v, x in zip(external, xs):
            env[id(v)] = one_step(x)
        for n, k in zip(delays, feeds):
            env[id(n.outputs[0])] = one_step(states[k])

        def value(a):
            a = alias.get(id(a), a)
            return env.get(id(a), a)
        for n in order:
            if id(n) in nested:
                new = nested[id(n)].step([states[k] for k in slots[id(n)]], value)
                for o, y in zip(nested[id(n)].outputs, new):
                    if o is not None:
                        env[id(o)] = as_step(y)
                for k, y in zip(slots[id(n)], new):
                    carried[k - len(made)] = y
            else:
                env[id(n.outputs[0])] = _replay(n, env, alias)
        return tuple(F.reshape(env[id(v)], (-1,) + tuple(v.shape[2:])) for v in made) + \
            tuple(carried)

    ys = S.recurrence(step, external, initial, shapes, go_backwards=go_backwards)
    for v, y in zip(made, ys):
        _rewire(v, y)
    for n in delays:
        out, src = n.outputs[0], n.inputs[0]
        src = alias.get(id(src), src)
        fn = S.future_value if go_backwards else S.past_value
        _rewire(out, fn(src, n.inputs[2], 1))
    for ph in phs:
        del G.PLACEHOLDERS[ph]
        G.follow_sequence_axis(ph, loops[ph])
        _rewire(ph, loops[ph])
    G.BATCH.forget()


def clone_graph(roots: list, subs: dict, method: str) -> list:
    """``Function.clone``'s graph: ``roots`` rebuilt with ``subs`` (``{old: new}``), inputs
    cloned, parameters per ``method``, each random op with a stream of its own (CNTK 2.7's
    clone starts the copy's stream from where the original's stood at its last save), each
    user function made again by its ``clone(cloned_inputs)``.  A
    substitute computed from this graph is cloned with
    it (one set of cloned inputs, as CNTK's clone does); the variable it replaces reads it
    through a placeholder, replaced afterwards: a loop if the substitute depends on what it
    replaces (CNTK 599A's greedy decoder, ``{hook: hardmax(model)}``)."""
    inside = _reached(roots, {id(old) for old in subs})
    late_subs = {}
    subs = dict(subs)
    for old, new in list(subs.items()):
        # an input replaced by an expression of itself (``z(x / 255)`` for ``z`` over ``x``,
        # CNTK 103D) reads the input from outside, as CNTK's apply does: not a loop
        outside = {id(old)} if old.parent is None else set()
        if new.parent is not None and any(id(v) in inside and id(v) not in outside
                                           for n in topological_nodes([new])
                                           for v in n.inputs):
            ph = G.placeholder_like(old)
            late_subs[ph] = new
            subs[old] = ph
    made = rebuild(list(roots) + list(late_subs.values()), subs, method, clone_inputs=True,
                   own_streams=True, user_clones=True)
    if late_subs:
        plain, loops = split_loops(dict(zip(late_subs, made[len(roots):])))
        for ph, new in plain.items():
            G.replace_placeholder(ph, new)
        if loops:
            close_loops(loops)
    return made[:len(roots)]


def _reached(roots: list, stops: set) -> set:
    """The ids of the Variables the clone of ``roots`` walks: from the roots up, not past a
    substituted Variable (``stops``).  A substitute reading only what lies behind the Variable
    it replaces reads the original inputs (CNTK 2.7: ``z.clone(share, {d: dense(x)})`` of
    ``z = f(d(x))`` keeps ``x``); one reading what the clone walks is cloned with it."""
    seen, todo = set(), list(roots)
    while todo:
        v = todo.pop()
        if v is None or id(v) in seen:
            continue
        seen.add(id(v))
        if id(v) in stops or v.parent is None:
            continue
        todo.extend(v.parent.inputs)
        todo.extend(o for o in v.parent.outputs if o is not None)
    return seen


def _way(backwards: bool) -> str:
    return "backwards" if backwards else "forwards"


def _rewire(v: Variable, y: Variable) -> None:
    """``v`` computed as ``y`` from now on (a sequence with ``y``'s axis).  A block whose output
    ``v`` is is filed again: ``v`` is no longer computed from the block's arguments, so the
    block holds them itself (:class:`~._graph.Block`)."""
    block = G.BLOCKS.get(v)
    v.rewire_as(F.identity(y))
    if block is not None:
        G.BLOCKS[v] = block


def one_step(x: Variable) -> Variable:
    """One step ``(B, *s)`` as a sequence of length 1 ``(B, 1, *s)``."""
    v = F.reshape(x, (-1, 1) + tuple(x.shape[1:]))
    return set_sequence_axis(v, F.sequence_full_lengths(v))


def _step_order(ops: list, alias: dict, delayed: set) -> list:
    """The body's ops in an order where each comes after what it reads in the same step (a
    placeholder reads its substitute; a delay's output is the previous step's)."""
    producer = {id(o): n for n in ops for o in n.outputs if o is not None}
    done: set[int] = set()
    order, visiting = [], set()

    def visit(n):
        if id(n) in done:
            return
        if id(n) in visiting:
            raise LoopError("replace_placeholders: a loop without past_value or future_value "
                            "on it (an algebraic loop)")
        visiting.add(id(n))
        for i in n.inputs:
            src = alias.get(id(i), i)
            if id(src) in delayed:
                continue
            p = producer.get(id(src))
            if p is not None:
                visit(p)
        visiting.discard(id(n))
        done.add(id(n))
        order.append(n)

    for n in ops:
        visit(n)
    return order


def _sequence_inputs(ops: list, depends: set, delayed: set, nested: dict) -> list:
    """The sequences the body reads from outside the loop (each read one step at a time; a
    nested recurrence reads only its input sequences so)."""
    seen, out = set(), []
    for n in ops:
        reads = nested[id(n)].reads() if id(n) in nested else None
        for i in n.inputs:
            if reads is not None and id(i) not in reads:
                continue
            if id(i) in depends or id(i) in delayed or id(i) in seen:
                continue
            if i.sequence_lengths is not None:
                seen.add(id(i))
                out.append(i)
    return out


def _replay(node, env: dict, alias: dict) -> Variable:
    """``node``'s op called again on the step's values."""
    def value(a: Any) -> Any:
        if not isinstance(a, Variable):
            return a
        a = alias.get(id(a), a)
        return env.get(id(a), a)
    args = tuple(value(a) for a in node.args)
    kwargs = {k: value(a) for k, a in node.kwargs.items()}
    with name_scope(node.scope, absolute=True):
        out = apply(node.spec, args, kwargs)
    lengths = next((a.sequence_lengths for a in args if isinstance(a, Variable)
                    and a.sequence_lengths is not None), None)
    if lengths is not None and out.sequence_lengths is None and len(out.shape) >= 2:
        set_sequence_axis(out, lengths)
    return out
