"""The part of the importer of legacy model files (:mod:`._legacy_import`) that builds a CNTK
network with sequences or loops flat (:mod:`._legacy_loops`): blocks expanded, each graph loop
one recurrence, and what the file says of the values the loops give out (the function or block
computing each, with the inputs CNTK shows for it), so that ``cntk.load_model`` shows the
file's graph as CNTK 2.7 does.  A mixin of the importer's builder (its ``value``, ``call``,
``record``, ``env``, ...).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Mapping

from .. import functions as F
from .. import sequence as S
from ..graph import Variable
from ._cntk_format import cntk_output_name
from ._legacy_ir import LegacyFunction, LegacyNetwork, LegacyOrigin
from ._legacy_loops import FlatNetwork, build_loop
from ._network import Network

__all__ = ["FlatBuilding"]


class FlatBuilding:
    """The importer's building of flat CNTK networks (mixed into its builder)."""

    env: dict
    origin_of: dict
    loop_values: set
    batched: set
    origins: list
    reduced: list
    registry: Any
    model: Any
    table: dict

    def build_flat(self, network: LegacyNetwork, inputs: Mapping[str, str],
                   outputs: Mapping[str, str], info: dict[str, Any]) -> Network:
        """A CNTK network with sequences or loops (:mod:`._legacy_loops`): blocks expanded,
        each graph loop one recurrence; a sequence output's padded steps are 0."""
        units = {t for t in self.table if t.startswith("Sequence::")}
        flat = FlatNetwork(network, units, self.fail)
        for name in flat.alias:         # what the file records of a value under another name
            if name in self.variables:
                self.variables.setdefault(flat.resolve(name), self.variables[name])
        wanted = [flat.resolve(n) for n in outputs.values()]
        comps = flat.components(wanted)
        needed = [f for comp in comps for f in comp]
        self.check_supported(network, needed)
        known = set(self.variables) | set(self.model.parameters)
        for key, name in list(inputs.items()) + list(outputs.items()):
            if flat.resolve(name) not in known and flat.resolve(name) not in flat.producer:
                raise self.fail(f"network {network.name!r} has no variable {name!r}")
        ins = OrderedDict((key, self.value(flat.resolve(name), network))
                          for key, name in inputs.items())
        for comp in comps:
            if not flat.is_loop(comp):
                fn = comp[0]
                read = [self.value(n, network) for n in fn.inputs]
                # (a block read as one function: its inputs as the file lists them, the leaves
                # among them too -- Sequence::Slice's constants)
                given = {outer: p for p, outer in (fn.meta.get("arguments") or {}).items()}
                shown = [self.value(n, network) if n in self.model.parameters else
                         read[fn.inputs.index(given[n])]
                         for n in fn.attrs.get("file_inputs", ())
                         if n in self.model.parameters or given.get(n) in fn.inputs]
                self.call(fn, read, shown)
                continue
            inside = {o for f in comp for o in f.outputs}
            members = {id(f) for f in comp}
            outside = {n for f in needed if id(f) not in members for n in f.inputs
                       if n in inside}
            build_loop(self, comp, network, outside | (inside & set(wanted)))
            self.record_loop_values(comp, flat, network)
        self.record_blocks(flat, network)
        outs: "OrderedDict[str, Variable]" = OrderedDict()
        unpadded = {}
        for (key, name), resolved in zip(outputs.items(), wanted):
            var = self.value(resolved, network)
            if var.sequence_lengths is not None:        # CNTK's padding: zeros
                unpadded[key] = var
                # F.where keeps the sequence axis (its lengths too) by its declaration, so a
                # model file saved from the network has sequence outputs as well
                zeros, mask = S.unpack(var)
                padded = F.where(mask, var, zeros)
                if id(var) in self.origin_of:
                    self.record(padded, self.origin_of[id(var)])
                self.batched.add(id(padded))
                var = padded
            outs[key] = var
        self.batched_outputs = [k for k, v in outs.items() if id(v) in self.batched]
        built = Network(ins, outs, self.registry, source=self.model.path, info=info)
        built.origins = self.origins
        built.reduced = self.reduced
        built.unpadded = unpadded
        return built

    def record_loop_values(self, comp: list[LegacyFunction], flat: FlatNetwork,
                           network: LegacyNetwork) -> None:
        """The values of the loop ``comp`` read outside it (outputs of its recurrence): the
        outputs of the loop's functions that compute them (``Block731_Output_0``), so that
        they are nodes of the graph CNTK shows, not helpers walked through."""
        for fn in comp:
            if fn.type in ("PastValue", "FutureValue"):
                continue
            for k, name in enumerate(fn.outputs):
                var = self.env.get(name)
                if var is None or id(var) in self.origin_of:
                    continue
                if fn.type == "ReconcileDynamicAxis" and fn.inputs and \
                        self.env.get(flat.resolve(fn.inputs[0])) is var:
                    continue        # (UnfoldFrom's: the value it passes on is its operand's)
                uid, shown = self.split_name(fn.name, fn.meta.get("name") or "")
                self.record(var, LegacyOrigin(
                    "function", uid, cntk_output_name(fn.type, shown, k), fn.type, k,
                    operands=tuple(self.loop_inputs(flat, fn, var, network)),
                    attributes=fn.file_attributes()))
                self.loop_values.add(id(var))

    def loop_inputs(self, flat: FlatNetwork, fn: LegacyFunction, own: Variable,
                    network: LegacyNetwork) -> list[Variable]:
        """The inputs CNTK shows for the function or block ``fn`` run inside a loop (an
        LSTM's block, a ``Tanh``), in the file's order, as values built outside the loop: its
        parameters and the values it reads from outside as they are; a value of the loop (the
        delayed state ``PastValue666_Output_0``, a ``Plus`` inside the loop) by what that reads
        from outside the loop (the delay's initial state, ...), each once; the values of
        ``own``'s recurrence (the loop's outputs) not."""
        shown: list[Variable] = []
        seen: set[str] = set()
        todo = [flat.resolve(n) for n in reversed(fn.inputs)]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            var = self.env.get(name)
            if var is None and name not in flat.producer:
                var = self.value(name, network)         # a leaf
            if var is not None:
                if var.parent is None or var.parent is not own.parent:
                    if all(var is not v for v in shown):
                        shown.append(var)
                continue
            todo += reversed(flat.functions[flat.producer[name]].inputs)
        return shown

    def record_blocks(self, flat: FlatNetwork, network: LegacyNetwork) -> None:
        """The blocks (CNTK's layers) of a flat network whose outputs are built outside loops
        and are a function's own output (the layers' inner blocks first); a block run inside a
        loop whose output the loop gives out (``Recurrence(LSTM(n))``'s LSTM) shows as applied
        to the values of :meth:`loop_inputs`."""
        for fn in flat.blocks:
            arguments = [self.env.get(flat.resolve(outer))
                         for _, outer in shown_argument_order(fn)]
            if any(a is None for a in arguments):
                out = self.env.get(flat.resolve(fn.outputs[0])) if fn.outputs else None
                if out is None or id(out) not in self.loop_values:
                    continue
                arguments = self.loop_inputs(flat, fn, out, network)
            uid, shown = self.split_name(fn.name, fn.meta.get("name") or "")
            for k, outer in enumerate(fn.outputs):
                var = self.env.get(flat.resolve(outer))
                origin = self.origin_of.get(id(var)) if var is not None else None
                if origin is None or any(a is var for a in arguments):
                    continue
                if origin.kind == "block" and id(var) not in self.loop_values:
                    # a block whose output is an inner block's (LocalResponseNormalization's
                    # ElementDivide): an identity of its own, what the network gives out, as
                    # the importer's block() makes one (the values built from it read the
                    # inner block's)
                    var = self.own(var, set())
                    self.env[flat.resolve(outer)] = var
                elif origin.kind != "function":
                    continue
                self.record(var, LegacyOrigin(
                    "block", uid, shown, fn.type, k, tuple(arguments),
                    attributes=tuple(sorted((fn.attrs or {}).items()))))


# CNTK holds these ops' two operands the other way round from Python's (``gather(reference,
# indices)`` is stored ``Gather(indices, reference)``)
_PYTHON_SWAPPED = frozenset({"Times", "TransposeTimes", "Gather"})


def cntk_leaf_order(functions, starts, python_order: bool = True) -> list[str]:
    """The leaves ``functions`` (a CNTK file's graph) read -- the names no function of them
    makes -- in the order CNTK 2.7 meets them when it lists a Function's arguments: depth
    first from ``starts`` (functions' names, or names of what they make), each function's
    operands in Python's order (those of a ``Times``, ``TransposeTimes`` and ``Gather`` are
    stored the other way round), a function walked once, a leaf listed where first met.
    ``python_order`` False: each function's operands as stored, the order of CNTK's
    ``parameters`` and ``constants`` (``Parameters()`` filters ``Inputs(false)``:
    CNTKLibrary.h:3367, 3612-3616), which meets ``times(x, W)``'s ``W`` before ``x``.

    Example:
        >>> from stadyn.serialize import LegacyFunction, cntk_leaf_order
        >>> fs = [LegacyFunction("t", "Times", ("W", "x"), ("t0",)),
        ...       LegacyFunction("p", "Plus", ("t0", "b"), ("y",))]
        >>> cntk_leaf_order(fs, ["p"]), cntk_leaf_order(fs, ["p"], python_order=False)
        (['x', 'W', 'b'], ['W', 'x', 'b'])
    """
    made_by = {o: f for f in functions for o in f.outputs}
    by_name = {f.name: f for f in functions}
    met: list[str] = []
    listed: set[str] = set()
    walked: set[str] = set()
    todo = list(reversed(starts))
    while todo:
        name = todo.pop()
        f = by_name.get(name) or made_by.get(name)
        if f is None:
            if name not in listed:
                listed.add(name)
                met.append(name)
            continue
        if f.name in walked:
            continue
        walked.add(f.name)
        operands = list(f.inputs)
        if python_order and f.type in _PYTHON_SWAPPED and len(operands) == 2:
            operands.reverse()
        todo.extend(reversed(operands))     # (the first operand walked first)
    return met


def shown_block_order(op_name: str, items: tuple) -> tuple:
    """``items`` (a block's arguments, or its ``(placeholder, argument)`` pairs) between the
    order of its argument map and the order its inputs show, both ways: CNTK 2.7 shows a
    block whose op name is ``GatherOp`` (``gather``'s along an axis, stored ``(indices,
    reference)``, or any block so named) with its first two inputs swapped -- by the name,
    not the map, which ``block_arguments_mapping`` gives in its own order
    (tests/fixtures/cntk_files_17: a user's ``as_block(p1 - p2, ..., "GatherOp")`` shows
    ``(b, a)``, its mapping ``(a, b)``).

    Example:
        >>> from stadyn.serialize import shown_block_order
        >>> shown_block_order("GatherOp", ("i", "table")), shown_block_order("Dense", (1, 2))
        (('table', 'i'), (1, 2))
    """
    if op_name == "GatherOp" and len(items) == 2:
        return tuple(reversed(items))
    return tuple(items)


def shown_argument_order(fn: LegacyFunction) -> list[tuple[str, str]]:
    """A CNTK block's ``(placeholder, outer variable)`` pairs in the order CNTK 2.7 shows the
    block's inputs once loaded: the order of the block's stored argument map (what CNTK 2.7
    rebuilds the block from: ``binary_cross_entropy(o, t)`` keeps ``(o, t)``), but for a
    block of op name ``GatherOp`` (``gather``'s, whose file stores ``(indices, reference)``,
    or a user's so named), whose two inputs CNTK 2.7 shows swapped, ``(reference, indices)``
    (its ``block_arguments_mapping`` keeps the stored order: the compat swaps them back).

        >>> from stadyn.serialize import LegacyFunction
        >>> f = LegacyFunction("b", "GatherOp", ("i", "x"), ("out",),
        ...                    meta={"arguments": {"p1": "i", "p2": "x"}})
        >>> shown_argument_order(f)
        [('p2', 'x'), ('p1', 'i')]
    """
    arguments = list((fn.meta.get("arguments") or {}).items())
    return list(shown_block_order(fn.type, tuple(arguments)))
