"""CNTK 2 networks with sequences and graph loops, rebuilt as Stadyn sequence graphs.

CNTK saves a ``Recurrence`` (an LSTM, a GRU, a ``Fold``, a loop closed with
``replace_placeholders``) as a cycle in its graph: the step's ops read ``PastValue`` (or
``FutureValue``) nodes whose inputs are the step's own outputs.  The importer
(:mod:`._legacy_import`) hands such a network here:

1. :class:`FlatNetwork` expands the blocks (CNTK's layers) into one list of primitive
   functions, each block argument and output resolved to the value it stands for; a block
   whose type an import rule reads as one function (CNTK's ``Sequence::Slice`` for
   ``sequence.first``/``last``, ``Sequence::ReduceElements`` ...) stays one function;
2. :meth:`FlatNetwork.components` orders the functions the outputs need by their strongly
   connected components (Tarjan): a function outside every cycle is built as before, one
   rule call;
3. :func:`build_loop` makes each cycle one ``recurrence`` (forwards for ``PastValue``,
   backwards for ``FutureValue``): its delays' inputs are the states (a delay of ``k`` steps
   keeps ``k`` states, the older shifted along), the other functions are the step, built by
   their import rules on one step of each sequence the loop reads, and every value of the
   loop read outside it comes out as a sequence.

A cycle through no delay, through delays of both directions, or holding a sequence op is one
:class:`UnsupportedModelError` naming the file and the loop's functions.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Any, Callable

from .. import sequence as S
from .._errors import ModelFileError
from ..graph import Variable, auto_forward, hoist_invariants, keep_with, kept_with
from ..ops import StepFunction
from ._legacy_ir import LegacyFunction, LegacyNetwork

__all__ = ["DELAYS", "FlatNetwork", "build_loop", "needs_sequences", "is_unfold_loop"]

_UNFOLD_LOOP = "serialize: a loaded loop of UnfoldFrom's form"


def is_unfold_loop(v: Variable) -> bool:
    """Whether ``v`` is the output of a loaded loop of ``UnfoldFrom``'s form (its delay reads
    the new state through a ``ReconcileDynamicAxis`` onto the sequence, read outside the loop
    as the step's own value: CNTK 2.7's ``UnfoldFrom``), which the CNTK writers write again
    as CNTK 2.7 builds ``UnfoldFrom``.

    Example:
        >>> import stadyn as sd
        >>> is_unfold_loop(sd.Variable((1, 2)))
        False
    """
    return bool(kept_with(v, _UNFOLD_LOOP))

#: CNTK's delay functions -> whether a loop through them runs backwards.
DELAYS = {"PastValue": False, "FutureValue": True}

_MAX_LISTED = 6


def needs_sequences(network: LegacyNetwork, variables: dict) -> bool:
    """Whether a CNTK 2 network reads a sequence input or holds a delay (and so is built as a
    flat network with its loops as recurrences).

    Example:
        >>> from stadyn.serialize._legacy_ir import LegacyFunction, LegacyNetwork
        >>> net = LegacyNetwork("main", [LegacyFunction("d", "PastValue", ("h", "c"), ("y",))])
        >>> needs_sequences(net, {})
        True
    """
    if any(f.type in DELAYS for f in network.all_functions()):
        return True
    return any(v.kind == "input" and len(v.meta.get("dynamic_axes") or ()) > 1
               for v in variables.values())


def _listed(functions: list[LegacyFunction]) -> str:
    names = [f"{f.name!r} ({f.type})" for f in functions[:_MAX_LISTED]]
    more = len(functions) - _MAX_LISTED
    return ", ".join(names) + (f" and {more} more" if more > 0 else "")


def _is_combine(fn: LegacyFunction) -> bool:
    return fn.type == "Combine" and fn.body is None and len(fn.inputs) == len(fn.outputs)


class FlatNetwork:
    """The primitive functions of a CNTK network, blocks expanded (but those whose type is in
    ``units``), every input naming the value it reads.

    Example:
        >>> from stadyn.serialize._legacy_ir import LegacyFunction, LegacyNetwork
        >>> body = LegacyNetwork("b", [LegacyFunction("t", "Tanh", ("p",), ("t0",))])
        >>> block = LegacyFunction("blk", "Act", ("x",), ("y",), body=body,
        ...                        meta={"arguments": {"p": "x"}, "root": "t"})
        >>> flat = FlatNetwork(LegacyNetwork("main", [block]), set(), ValueError)
        >>> [(f.name, f.inputs) for f in flat.functions], flat.resolve("y")
        ([('t', ('x',))], 't0')
    """

    def __init__(self, network: LegacyNetwork, units: set[str],
                 fail: Callable[[str], Exception]):
        self.fail = fail
        self.alias: dict[str, str] = {}
        self.blocks: list[LegacyFunction] = []
        found: list[LegacyFunction] = []
        self._walk(network, units, found)
        self.functions = [dataclasses.replace(f, inputs=tuple(self.resolve(n) for n in f.inputs))
                          for f in found]
        self.producer: dict[str, int] = {}
        for k, f in enumerate(self.functions):
            for o in f.outputs:
                if o in self.producer:
                    raise fail(f"{o!r} is computed by two functions: "
                               f"{self.functions[self.producer[o]].name!r} and {f.name!r}")
                self.producer[o] = k

    def _walk(self, net: LegacyNetwork, units: set[str], found: list) -> None:
        for f in net.functions:
            arguments = f.meta.get("arguments") or {}
            if f.body is not None:
                for placeholder, outer in arguments.items():
                    self._alias(placeholder, outer)
                if f.type in units:       # one function: its data arguments in body order
                    read = [n for g in f.body.all_functions() for n in g.inputs if n in arguments]
                    # (the block's own inputs, its constants too, kept as "file_inputs": what
                    # CNTK shows, Sequence::Slice's scalars 0 and 1)
                    found.append(dataclasses.replace(
                        f, inputs=tuple(OrderedDict.fromkeys(read)), body=None,
                        attrs={**f.attrs, "body": list(f.body.all_functions()),
                               "file_inputs": tuple(f.inputs)}))
                    continue
                self._walk(f.body, units, found)
                root = [g for g in f.body.all_functions() if g.name == f.meta.get("root")]
                if not root or len(root[0].outputs) < len(f.outputs):
                    raise self.fail(f"block {f.name!r} ({f.type}): its root function "
                                    f"{f.meta.get('root')!r} is not in its body")
                for k, inner in enumerate(root[0].outputs):
                    # CNTK names a function's outputs <uid>_Output_<k>; a block's outputs past
                    # those the file lists (an LSTM's cell) are read under those names
                    outer = f.outputs[k] if k < len(f.outputs) else f"{f.name}_Output_{k}"
                    self._alias(outer, inner)
                self.blocks.append(f)
            elif _is_combine(f) or (f.type == "DynamicAxis" and not f.inputs):
                for o, i in zip(f.outputs, f.inputs):
                    self._alias(o, i)
            else:
                found.append(f)

    def _alias(self, name: str, target: str) -> None:
        if name != target:
            self.alias[name] = target

    def resolve(self, name: str) -> str:
        """The value ``name`` stands for (a block's argument or output followed through)."""
        seen = {name}
        while name in self.alias:
            name = self.alias[name]
            if name in seen:
                raise self.fail(f"the block arguments and outputs {sorted(seen)} name each other "
                                "in a circle")
            seen.add(name)
        return name

    def needed(self, outputs: list[str]) -> list[int]:
        """The functions ``outputs`` depend on (indices)."""
        wanted, todo = set(), [self.producer[o] for o in outputs if o in self.producer]
        while todo:
            k = todo.pop()
            if k not in wanted:
                wanted.add(k)
                todo += [self.producer[i] for i in self.functions[k].inputs
                         if i in self.producer]
        return sorted(wanted)

    def components(self, outputs: list[str]) -> list[list[LegacyFunction]]:
        """The strongly connected components of the functions ``outputs`` need, each after
        those it reads from (Tarjan's algorithm, without recursion)."""
        nodes = self.needed(outputs)
        deps = {k: sorted({self.producer[i] for i in self.functions[k].inputs
                           if i in self.producer}) for k in nodes}
        index: dict[int, int] = {}
        low: dict[int, int] = {}
        on_stack: set[int] = set()
        stack: list[int] = []
        out: list[list[LegacyFunction]] = []
        for start in nodes:
            if start in index:
                continue
            work = [(start, 0)]
            while work:
                v, i = work.pop()
                if i == 0:
                    index[v] = low[v] = len(index)
                    stack.append(v)
                    on_stack.add(v)
                if i < len(deps[v]):
                    work.append((v, i + 1))
                    w = deps[v][i]
                    if w not in index:
                        work.append((w, 0))
                    elif w in on_stack:
                        low[v] = min(low[v], index[w])
                    continue
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    out.append([self.functions[k] for k in sorted(comp)])
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[v])
        return out

    def is_loop(self, comp: list[LegacyFunction]) -> bool:
        """Whether a component is a cycle (more than one function, or one reading itself)."""
        return len(comp) > 1 or any(i in comp[0].outputs for i in comp[0].inputs)


def _step_order(functions: list[LegacyFunction], fail: Callable[[str], Exception]
                ) -> list[LegacyFunction]:
    """The loop's functions other than its delays, each after those it reads in the same
    step; a cycle left is an algebraic loop."""
    made = {o: f for f in functions for o in f.outputs}
    order, done, visiting = [], set(), set()
    for first in functions:
        work = [(first, 0)]
        while work:
            f, i = work.pop()
            if f.name in done:
                continue
            visiting.add(f.name)
            reads = [made[n] for n in f.inputs if n in made]
            if i < len(reads):
                work.append((f, i + 1))
                g = reads[i]
                if g.name in visiting:
                    raise fail(f"a loop through {_listed(functions)} has no PastValue or "
                               "FutureValue between "
                               f"{f.name!r} and {g.name!r} (an algebraic loop)")
                if g.name not in done:
                    work.append((g, 0))
                continue
            visiting.discard(f.name)
            done.add(f.name)
            order.append(f)
    return order


def _recorded_shape(b: Any, name: str) -> tuple[int, ...] | None:
    """The shape of one sample of ``name`` as the file records it (a leaf, or a placeholder
    CNTK saved in place of a loop's value), ``None`` where it records none."""
    lv = b.variables.get(name)
    if lv is None or lv.shape is None or any(s < 0 for s in lv.shape):
        return None
    return tuple(lv.shape)


def _infer_state_shapes(b: Any, delays: list[LegacyFunction], shapes: list, made: dict,
                        steps: list[tuple[str, Variable]], network: LegacyNetwork,
                        where: str) -> list[tuple[int, ...]]:
    """``shapes`` with each the file does not record (a delay reading a function's output,
    ``ReconcileDynamicAxis`` in ``UnfoldFrom``) inferred as CNTK 2.7 does at load: the
    functions between the values of known shape (the loop's recorded placeholders, the other
    delays, the sequences it reads) and the delay's input are built once on one step."""
    missing = [k for k, shape in enumerate(shapes) if shape is None]
    if not missing:
        return shapes
    shapes = list(shapes)
    with auto_forward(False), _one_step(b):
        known = [(n, _recorded_shape(b, n)) for n in made]
        known += [(d.outputs[0], shape) for d, shape in zip(delays, shapes) if shape is not None]
        for n, shape in known:
            if shape is not None:
                b.env[n] = Variable((1,) + shape)
                b.batched.add(id(b.env[n]))
        for n, value in steps:
            b.env[n] = Variable((1,) + tuple(value.shape[2:]), dtype=value.dtype)
            b.batched.add(id(b.env[n]))
        for k in missing:
            d = delays[k]
            try:
                shapes[k] = tuple(_trial(b, d.inputs[0], made, network).shape[1:])
            except (ModelFileError, _NoShape) as exc:
                raise b.fail(f"{where}: the file does not record the shape of "
                             f"{d.inputs[0]!r}, which {d.name!r} ({d.type}) delays, and it "
                             f"cannot be inferred ({exc})") from None
    return shapes


class _NoShape(Exception):
    """A value of the loop whose shape is neither recorded nor computable before the step."""


def _trial(b: Any, name: str, made: dict, network: LegacyNetwork) -> Variable:
    """``name`` built from the values in ``b.env`` (the functions of the loop ``made`` it
    needs, each once, without recursion)."""
    work, visiting = [(name, False)], set()
    while work:
        n, ready = work.pop()
        if n in b.env:
            continue
        f = made.get(n)
        if f is None:
            b.value(n, network)
        elif f.type in DELAYS:
            raise _NoShape(f"it reads {f.name!r} ({f.type}), whose shape is not known")
        elif ready:
            b.call(f, [b.env[i] for i in f.inputs])
        elif f.name in visiting:
            raise _NoShape(f"{f.name!r} ({f.type}) reads its own output")
        else:
            visiting.add(f.name)
            work += [(n, True)] + [(i, False) for i in f.inputs if i not in b.env]
    return b.env[name]


class _one_step:
    """The importer ``b`` building one step of a loop: its values and records are dropped
    afterwards (the step's Variables leave the importer's books; ids are reused)."""

    def __init__(self, b: Any):
        self.b = b

    def __enter__(self):
        b = self.b
        self.saved = (b.env, set(b.batched))
        b.env, b.recording = dict(b.env), False
        return self

    def __exit__(self, *exc):
        self.b.env, self.b.batched = self.saved
        self.b.recording = True
        return False


def build_loop(b: Any, comp: list[LegacyFunction], network: LegacyNetwork,
               read_outside: set[str]) -> None:
    """Build the loop ``comp`` as one recurrence with the importer ``b`` (its ``value``,
    ``call``, ``env``, ``batched``, ``variables``, ``fail``); put every value of the loop
    named in ``read_outside`` into ``b.env`` as a sequence."""
    made = {o: f for f in comp for o in f.outputs}
    where = f"network {network.name!r}: the loop through {_listed(comp)}"

    def unsupported(message: str) -> Exception:
        return b.fail(f"{where}: {message}", unsupported=True)

    delays = [f for f in comp if f.type in DELAYS and f.inputs and f.inputs[0] in made]
    if not delays:
        raise unsupported("no PastValue or FutureValue closes it (an algebraic loop)")
    if len({DELAYS[f.type] for f in delays}) > 1:
        raise unsupported(f"it runs through PastValue and FutureValue ({_listed(delays)}): "
                          "a recurrence runs in one direction")
    backwards = DELAYS[delays[0].type]
    offsets, shapes = [], []
    for d in delays:
        offset = d.attrs.get("offset", d.attrs.get("time_step", 1))     # (v1: time_step)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 1:
            raise b.fail(f"{where}: {d.name!r} ({d.type}) has the offset {offset!r}")
        if len(d.inputs) != 2 or d.inputs[1] in made:
            raise unsupported(f"{d.name!r} ({d.type}) takes its initial state from inside the "
                              "loop")
        offsets.append(offset)
        # (a v1 delay node records the shape it delays)
        recorded = d.attrs.get("shape")
        shapes.append(_recorded_shape(b, d.inputs[0]) or
                      (tuple(recorded) if isinstance(recorded, tuple) and recorded else None))
    others = [f for f in comp if f not in delays]
    inner = [f for f in others if f.type in DELAYS or str(f.type).startswith("Sequence::")]
    if inner:
        raise unsupported(f"{_listed(inner)} inside the loop: sequence operations cannot run "
                          "one step at a time")
    order = _step_order(others, unsupported)
    external = list(OrderedDict.fromkeys(n for f in others for n in f.inputs if n not in made))
    values = {n: b.value(n, network) for n in external}
    steps = [n for n in external if values[n].sequence_lengths is not None]
    if not steps:
        raise unsupported("it reads no sequence to run along")
    inits = [b.value(d.inputs[1], network) for d in delays]
    for d, init in zip(delays, inits):
        if init.sequence_lengths is not None:
            raise unsupported(f"{d.name!r} ({d.type}) has a sequence as its initial state")

    shapes = _infer_state_shapes(b, delays, shapes, made, [(n, values[n]) for n in steps],
                                 network, where)
    with auto_forward(False):
        registers = [[Variable((1,) + shape) for _ in range(k)]
                     for shape, k in zip(shapes, offsets)]
        xs = [Variable((1,) + tuple(values[n].shape[2:]), dtype=values[n].dtype)
              for n in steps]
        with _one_step(b):
            for n, x in zip(steps, xs):
                b.env[n] = x
            for d, register in zip(delays, registers):
                b.env[d.outputs[0]] = register[-1]      # the value ``offset`` steps away
            for v in [x for r in registers for x in r] + xs:
                b.batched.add(id(v))
            try:
                for f in order:
                    b.call(f, [b.value(n, network) for n in f.inputs])
            except ModelFileError as exc:
                raise type(exc)(f"{exc} (in one step of {where.split(': ', 1)[1]}, whose "
                                "delayed values have the shapes "
                                f"{', '.join(map(str, shapes))})") from None
            step = {n: b.env[n] for n in made if n in b.env}
        states: list[Variable] = []
        news: list[Variable] = []
        initial: list[Any] = []
        position: dict[str, int] = {}
        for d, register, init, shape in zip(delays, registers, inits, shapes):
            source = step[d.inputs[0]]
            if tuple(source.shape[1:]) != shape:
                raise b.fail(f"{where}: {d.inputs[0]!r} has the shape {tuple(source.shape[1:])} "
                             f"in a step, the file says {shape}")
            position.setdefault(d.inputs[0], len(states))
            states += register
            news += [source] + register[:-1]            # the register shifts by one step
            initial += [init] * len(register)
        exports = [n for n in made if n in read_outside and made[n] not in delays
                   and n not in position]
        unfolds: list[int] = []
        for n in exports:
            v = step[n]
            # (a value a delay reads in the step, under another name: UnfoldFrom's new state,
            # which the delay reads through ReconcileDynamicAxis -- that state's sequence)
            same = next((k for k, new in enumerate(news) if new is v), None)
            if same is not None:
                position[n] = same
                unfolds.append(same)
                continue
            position[n] = len(states)
            states.append(Variable(tuple(v.shape), dtype=v.dtype))
            news.append(v)
            initial.append(0.0)
        news, outside = hoist_invariants(news, states + xs)
        program = StepFunction(states, xs, news)
    ys = S.run_step_function(program, [values[n] for n in steps], initial, backwards, outside)
    for k in unfolds:
        keep_with(ys[k], _UNFOLD_LOOP, True)
    for n, k in position.items():
        b.env[n] = ys[k]
        b.batched.add(id(ys[k]))
    for d, init, k in zip(delays, inits, offsets):
        if d.outputs[0] in read_outside:
            fn = S.future_value if backwards else S.past_value
            b.env[d.outputs[0]] = fn(b.env[d.inputs[0]], init, k)
            b.batched.add(id(b.env[d.outputs[0]]))
