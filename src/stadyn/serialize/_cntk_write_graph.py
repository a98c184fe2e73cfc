"""The graph side of the CNTK v2 model-file writer (:mod:`._cntk_write`): the order the
nodes are written in, the CNTK ops the caller shows as one op (written as one),
the shapes CNTK gives leaves Stadyn reshapes in the graph, and the layers (CNTK blocks) with
the nodes inside each."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .._errors import StadynError
from ..cntk_semantics import window_edges
from ..graph import Variable

__all__ = ["walk", "key", "fold_shapes", "fused_crop", "front_zeros", "find_blocks", "Block",
           "CntkWriteUnsupported"]


class CntkWriteUnsupported(StadynError, ValueError):
    """The graph holds something a CNTK v2 model file cannot (yet) be written with: ``op`` is
    the catalog op (or what else) that has no CNTK form here."""

    def __init__(self, op: str, why: str):
        super().__init__(f"no CNTK v2 form for {op}: {why}")
        self.op = op


class _CntkOp:
    """A CNTK op the caller shows as one op (``floor``, ``hardmax``, ``less`` of
    ``stadyn.compat.cntk``, which Stadyn computes with one or several catalog ops), standing
    for the node that makes its output: the writer writes the CNTK op over the inputs the
    caller shows, not the catalog ops inside."""

    class _Spec:
        def __init__(self, name: str):
            self.name = name

        def split_arguments(self, args, kwargs):
            return list(args), dict(kwargs)

    def __init__(self, op_name: str, out: Variable, inputs: Sequence[Variable],
                 attributes: "dict | None" = None):
        self.spec = self._Spec("cntk:" + op_name)
        self.raw = out.parent
        self.inputs = list(inputs)
        self.outputs = [out]
        # (the CNTK attributes the caller gives, a loaded block's: the rule's attributes)
        self.args, self.kwargs = tuple(inputs), dict(attributes or {})


def key(node) -> int:
    return id(node.raw) if isinstance(node, _CntkOp) else id(node)


def walk(outputs: Sequence[Variable], cntk_op_of, written: "set[str] | frozenset" = frozenset()
         ) -> list:
    """The nodes computing ``outputs``, each after those it reads.  ``cntk_op_of(v)`` is the
    CNTK op the caller shows as making ``v`` -- ``(op name, the inputs it shows)`` -- or None;
    where ``"cntk:" + op name`` is in ``written`` (the writer has a rule for it), ``v`` is one
    node of that op over those inputs, whatever catalog ops compute it (the caller's marks
    are the one source of truth); else the catalog op that made ``v`` is the node."""
    def node_of(v: Variable):
        found = cntk_op_of(v) if cntk_op_of is not None else None
        if found is not None and "cntk:" + found[0] in written:
            return _CntkOp(found[0], v, found[1], found[2] if len(found) > 2 else None)
        return v.parent

    order, done, made = [], set(), {}
    stack = [(v, False) for v in reversed(list(outputs)) if v.parent is not None]
    while stack:
        v, expanded = stack.pop()
        if id(v) in done:
            continue
        node = made.get(id(v)) or node_of(v)
        made[id(v)] = node
        if expanded:
            done.add(id(v))
            order.append(node)
            continue
        stack.append((v, True))
        stack.extend((i, False) for i in reversed(node.inputs)
                     if i.parent is not None and id(i) not in done)
    # a node of several outputs is listed once (and refused later)
    seen, unique = set(), []
    for node in order:
        if key(node) not in seen:
            seen.add(key(node))
            unique.append(node)
    return unique


# the catalog's random draws of a value's shape (the writer's RandomDistribution)
_DRAWS = ("rand_like", "randn_like", "gumbel_like", "bernoulli_like")


def fold_shapes(w, nodes) -> set[int]:
    """CNTK's shapes for the leaves Stadyn reads reshaped: a weight (``Dense`` on an image:
    ``(channels, height, width, out)``) or convolution bias (``(out, 1, 1)``) Stadyn reshapes
    in the graph is read as it is (in ``w.folded``: the reshape's output -> the leaf; the
    reshapes are not written; likewise the constant op a random draw is "like"); a slice
    cropping a transposed convolution's output, or zeros padded in front of it, are written
    with it (``w.fused``: the last of them -> the deconvolution; :func:`fused_crop`).
    Returns the ids of the nodes left out."""
    readers: dict[int, int] = {}
    read_by: dict[int, object] = {}               # id(a value) -> (the last) node reading it
    for node in nodes:
        for i in node.inputs:
            readers[id(i)] = readers.get(id(i), 0) + 1
            read_by[id(i)] = node
    skipped = set()
    for node in nodes:
        name = node.spec.name
        if name == "convolution":
            _fold_auto_padding(w, node, readers, skipped)
        if name == "max_pooling":
            _fold_pooling_padding(w, node, readers, skipped)
        if name == "div2":
            _fold_mean_inside(w, node, readers, skipped)
        if name == "sequence_first" and node.inputs[0].parent is not None and \
                node.inputs[0].parent.spec.name == "sequence_slice" and \
                readers.get(id(node.inputs[0])) == 1:
            # the compat's sequence.slice(x, b, b + 1): the first step of the slice, CNTK's one
            # Sequence::Slice block of one step (the slice's rule writes it)
            inner = node.inputs[0].parent
            a = inner.spec.split_arguments(inner.args, inner.kwargs)[1]
            if int(a["end_index"]) - int(a["begin_index"]) == 1:
                w.fused[id(node)] = inner
                skipped.add(id(inner))
        if name == "top_k_data":
            _fold_top_k_moves(w, node, readers, read_by, skipped)
        made = fused_crop(node)
        if made is not None and all(readers.get(id(n.outputs[0])) == 1 for n in made):
            w.fused[id(node)] = made[0]           # (written with the deconvolution)
            w.crops[id(node.outputs[0])] = made[1:] + [node]     # (the crop's nodes, in order)
            skipped.update(id(n) for n in made)
        slots = (1,) if name == "affine" else (2,) if name in ("convolution", "deconvolution") \
            else ()
        for k in slots:
            if k >= len(node.inputs):
                continue
            v = node.inputs[k]
            if (v.parent is not None and v.parent.spec.name == "reshape" and
                    v.parent.inputs[0].parent is None and readers.get(id(v)) == 1):
                w.folded[id(v)] = v.parent.inputs[0]
                skipped.add(id(v.parent))
        if name in _DRAWS and node.inputs[0].parent is not None and \
                node.inputs[0].parent.spec.name == "constant" and \
                readers.get(id(node.inputs[0])) == 1:
            # a loaded cntk.random.normal(shape)'s draw "like" a constant op: read as a leaf of
            # its shape (the rule writes the shaped RandomDistribution, without it)
            made = node.inputs[0]
            w.folded[id(made)] = Variable.from_numpy_array(np.zeros(made.shape, made.dtype))
            skipped.add(id(made.parent))
        if name == "recurrence":
            for v in node.inputs:
                if v.parent is not None and v.parent.spec.name == "constant" and \
                        readers.get(id(v)) == 1:
                    # the compat's default initial state (0), a constant op: CNTK 2.7's delay
                    # reads a Constant of it (PastValue(Tanh12_Output_0, Constant5), 0 of ())
                    a = v.parent.spec.split_arguments(v.parent.args, v.parent.kwargs)[1]
                    w.folded[id(v)] = Variable.from_numpy_array(
                        np.full(tuple(a["shape"]), float(a["val"]), v.dtype))
                    skipped.add(id(v.parent))
    return skipped


def fused_crop(node) -> "list | None":
    """The deconvolution (first) and the nodes between it and ``node`` that ``node`` -- a
    ``slice`` cropping it, a zero ``pad`` in front of it or of such a crop (the compat's
    transposed convolution with CNTK's padding or output shape: a negative padding, positions
    CNTK's windows skip, as zeros) -- makes CNTK's output of, or None."""
    chain, cur = [], node
    if cur.spec.name == "pad":
        if front_zeros(cur) is None or cur.inputs[0].parent is None:
            return None
        cur = cur.inputs[0].parent
        if cur.spec.name == "deconvolution":
            return [cur]
        chain.append(cur)
    inner = cur.inputs[0].parent if cur.spec.name == "slice" else None
    if inner is None or inner.spec.name != "deconvolution":
        return None
    return [inner] + chain


def front_zeros(node) -> "tuple[int, ...] | None":
    """A zero ``pad``'s widths before each axis, where it pads nothing after any, else None."""
    a = node.spec.split_arguments(node.args, node.kwargs)[1]
    widths = tuple(int(v) for v in a["pad_width"])
    if a["mode"] != "constant" or a["constant_value"] != 0.0 or any(widths[1::2]):
        return None
    return widths[0::2]


def _fold_auto_padding(w, node, readers, skipped) -> None:
    """A convolution reading a zero ``pad`` of its spatial axes, ``(k - 1) // 2`` before and
    the rest after (what the compat adds for CNTK's ``pad=True`` with an even kernel): the
    convolution reads the unpadded input, with CNTK's automatic padding on those axes
    (``w.auto_padded``: id of the convolution's input -> the spatial axes padded)."""
    x, weight = node.inputs[0], node.inputs[1]
    padding = x.parent
    if padding is None or padding.spec.name != "pad" or readers.get(id(x)) != 1:
        return
    a = padding.spec.split_arguments(padding.args, padding.kwargs)[1]
    conv = node.spec.split_arguments(node.args, node.kwargs)[1]
    n = len(weight.shape) - 2
    widths = tuple(a["pad_width"])
    dilation = tuple(conv.get("dilation") or (1,) * n)
    if a["mode"] != "constant" or a["constant_value"] != 0.0 or len(widths) != 2 * n or \
            any(conv.get("pad") or ()) or conv["channel_last"]:
        return
    auto = []
    for k in range(n):
        low, high = widths[2 * k], widths[2 * k + 1]
        total = dilation[k] * (weight.shape[2 + k] - 1)
        if (low, high) == (total // 2, total - total // 2) and total > 0:
            auto.append(True)
        elif (low, high) == (0, 0):
            auto.append(False)
        else:
            return
    w.folded[id(x)] = padding.inputs[0]
    w.auto_padded[id(x)] = tuple(auto)
    skipped.add(id(padding))


def _swap(node, rank: int) -> "tuple[int, int] | None":
    """The two axes a ``transpose`` node swaps, all others in place, or None."""
    if node is None or node.spec.name != "transpose":
        return None
    axes = [int(a) for a in node.spec.split_arguments(node.args, node.kwargs)[1]["axes"]]
    moved = [k for k, a in enumerate(axes) if a != k]
    if len(axes) != rank or len(moved) != 2 or axes[moved[0]] != moved[1]:
        return None
    return moved[0], moved[1]


def _fold_top_k_moves(w, node, readers, read_by, skipped) -> None:
    """The compat's ``top_k`` along another axis than the last: the axis swapped with the last
    (a ``transpose``), ``top_k_data`` along the last, both outputs swapped back (the indices
    then cast to floats), each read once -- CNTK 2.7's ``TopK`` block of two outputs, which the
    ``top_k_data`` rule writes (``w.moved_top_k``: id of the node -> (the axis, the values'
    output as the caller shows it)); the transposes are not written (``w.folded``: each
    swapped value -> the value it swaps)."""
    x, (values, indices) = node.inputs[0], node.outputs[:2]
    rank = len(x.shape)
    around = [x.parent] + [read_by.get(id(o)) for o in (values, indices)]
    swaps = {_swap(n, rank) for n in around}
    if len(swaps) != 1 or None in swaps or max(next(iter(swaps))) != rank - 1 or \
            readers.get(id(x)) != 1 or readers.get(id(values)) != 1 or \
            readers.get(id(indices)) != 1:
        return
    w.folded[id(x)] = x.parent.inputs[0]
    skipped.add(id(x.parent))
    for n in around[1:]:
        w.folded[id(n.outputs[0])] = n.inputs[0]
        skipped.add(id(n))
    w.moved_top_k[id(node)] = (min(next(iter(swaps))), around[1].outputs[0])


def auto_padding_form(sizes, window, strides, widths, ceils=(False, True)
                      ) -> "tuple[bool, tuple[bool, ...]] | None":
    """``(ceil, auto)``: the ``ceilOutDim`` (one of ``ceils``) and per-axis automatic padding
    of CNTK's geometry (:func:`stadyn.cntk_semantics.window_edges`) whose windows reach
    ``widths`` (``(before, after)`` per axis, flattened) over an input of ``sizes``; of the
    forms that do, the one of fewest flags; None where none does, or where CNTK refuses the
    geometry (a window longer than the input: 'kernel dim <= input dim', which CNTK 2.7
    checks when it loads the file) -- the padding is then not folded.

    Example:
        >>> auto_padding_form((5, 5), (3, 3), (1, 1), (1, 1, 1, 1))
        (False, (True, True))
        >>> auto_padding_form((2, 5), (3, 3), (1, 1), (1, 1, 1, 1)) is None
        True
    """
    n = len(window)
    if any(int(k) > int(d) for k, d in zip(window, sizes)):
        return None
    forms = []                      # (how many flags it sets, ceil, auto): several may compute
    for ceil in ceils:              # the same windows; the one of fewest flags is written
        auto = [next((on for on in (False, True) if window_edges(
            sizes[k], window[k], strides[k], on, ceil=ceil, refuse=False) ==
            (widths[2 * k], widths[2 * k + 1])), None) for k in range(n)]
        if None not in auto:
            forms.append((int(ceil) + sum(auto), ceil, tuple(auto)))
    return min(forms)[1:] if forms else None


def _fold_pooling_padding(w, node, readers, skipped) -> None:
    """A max pooling reading a ``-inf`` ``pad`` of its window's axes that is CNTK's geometry
    (:func:`stadyn.cntk_semantics.window_edges`) for automatic padding on some axes, with or
    without ``ceilOutDim`` (what the compat pads for ``C.pooling(..., ceil_out_dim=True)`` and
    for an even window's ``pad=True``): the pooling reads the unpadded input, with CNTK's
    automatic padding on those axes (``w.auto_padded``) and ``ceilOutDim`` where it takes it
    (``w.ceil_pooled``)."""
    x = node.inputs[0]
    padding = x.parent
    if padding is None or padding.spec.name != "pad" or readers.get(id(x)) != 1:
        return
    a = padding.spec.split_arguments(padding.args, padding.kwargs)[1]
    pool = node.spec.split_arguments(node.args, node.kwargs)[1]
    window = tuple(int(k) for k in pool["kernel"])
    n = len(window)
    strides = tuple(pool.get("stride") or window)
    widths = tuple(int(v) for v in a["pad_width"])
    if a["mode"] != "constant" or a["constant_value"] != float("-inf") or \
            len(widths) != 2 * n or any(pool.get("pad") or ()) or pool["channel_last"] or \
            not pool["ignore_border"]:
        return
    form = auto_padding_form(padding.inputs[0].shape[-n:], window, strides, widths)
    if form is not None:
        ceil, auto = form
        w.folded[id(x)] = padding.inputs[0]
        w.auto_padded[id(x)] = auto
        if ceil:
            w.ceil_pooled.add(id(x))
        skipped.add(id(padding))


def _parent_named(v, name: str, readers):
    """The node ``name`` that made ``v``, where ``v`` is read once; else None."""
    node = v.parent
    return node if node is not None and node.spec.name == name and \
        readers.get(id(v)) == 1 else None


def _fold_mean_inside(w, node, readers, skipped) -> None:
    """The compat's average pooling of the values inside the input where its windows hang
    over it (``C.pooling(..., AVG_POOLING, ceil_out_dim=True)``, or automatic padding that is
    not symmetric): ``div2`` of the window sums of the zero-padded input by those of its
    zero-padded ``x ** 0`` (:func:`stadyn.cntk_semantics.pooling`).  Written as CNTK's one
    ``Pooling`` of the unpadded input (the sums' pooling in ``w.fused``) with the automatic
    padding and ``ceilOutDim`` that give those windows, and ``includePad`` false
    (``w.inside_means``)."""
    total = _parent_named(node.inputs[0], "average_pooling", readers)
    count = _parent_named(node.inputs[1], "average_pooling", readers)
    if total is None or count is None:
        return
    padded = _parent_named(total.inputs[0], "pad", readers)
    padded_ones = _parent_named(count.inputs[0], "pad", readers)
    kept = padded_ones and _parent_named(padded_ones.inputs[0], "stop_gradient", readers)
    ones = kept and _parent_named(kept.inputs[0], "pow_scalar", readers)
    if padded is None or ones is None or ones.inputs[0] is not padded.inputs[0]:
        return
    attrs = [n.spec.split_arguments(n.args, n.kwargs)[1]
             for n in (total, count, padded, padded_ones, ones)]
    pool, pads = attrs[0], attrs[2]
    if attrs[1] != pool or attrs[3] != pads or float(attrs[4]["val"]) != 0.0 or \
            pads["mode"] != "constant" or pads["constant_value"] != 0.0 or \
            any(pool.get("pad") or ()) or pool["channel_last"] or not pool["ignore_border"]:
        return
    window = tuple(int(k) for k in pool["kernel"])
    n = len(window)
    strides = tuple(pool.get("stride") or window)
    widths = tuple(int(v) for v in pads["pad_width"])
    if len(widths) != 2 * n:
        return
    form = auto_padding_form(padded.inputs[0].shape[-n:], window, strides, widths)
    if form is None:
        return
    ceil, auto = form
    x = padded.outputs[0]
    w.fused[id(node)] = total
    w.folded[id(x)] = padded.inputs[0]
    w.auto_padded[id(x)] = auto
    w.inside_means.add(id(x))
    if ceil:
        w.ceil_pooled.add(id(x))
    skipped.update(id(k) for k in (total, count, padded, padded_ones, kept, ones))


class Block:
    """A layer application to write as a CNTK block function: its output, kind, name,
    arguments and options, the nodes inside it and the block it sits in."""

    def __init__(self, out: Variable, op_name: str, name: str, arguments: Sequence[Variable],
                 options: "dict | None" = None, outputs: "Sequence[Variable] | None" = None):
        self.out, self.op_name, self.name = out, op_name, name
        # (what the caller says of the layer that its graph does not show: a Dense's
        # inferInputRankToMap)
        self.options = dict(options or {})
        # (a block of several outputs, ``as_block`` over a Combine: each output an identity of
        # the inner value CNTK's Combine inside the block reads)
        self.outputs = list(outputs) if outputs else [out]
        self.arguments = [a for a in arguments if isinstance(a, Variable)]
        self.argument_ids = {id(a) for a in self.arguments}
        self.inside: set[int] = set()             # ids of the FunctionNodes inside
        stack = [o.parent for o in self.outputs]
        while stack:
            node = stack.pop()
            if id(node) in self.inside:
                continue
            self.inside.add(id(node))
            stack.extend(i.parent for i in node.inputs
                         if i.parent is not None and id(i) not in self.argument_ids)
        self.placeholders: dict[int, str] = {}    # id(argument) -> its placeholder's uid
        self.leaves: list[str] = []               # the uids of the leaves read inside


def several_outputs(blocks: dict) -> "dict[int, Block]":
    """The blocks of several outputs by the id of each of their outputs."""
    return {id(o): b for b in blocks.values() if len(b.outputs) > 1 for o in b.outputs}


def write_block_of_outputs(w, block: Block, read, outer: "Block | None",
                           read_order: bool = False) -> list[str]:
    """Write ``block``, of several outputs, once the values inside it are: CNTK 2.7's block
    whose root is a ``Combine`` of the inner values (``read(value, scope, op)``: a value's
    uid), applied to its arguments read in ``outer``; returns its outputs' uids
    (``<block uid>_Output_<k>``); ``read_order``: the block's leaves listed in the order its
    body reads them (``Writer.read_order``), as CNTK 2.7 lists a cell's, a value computed
    outside the loop that the body reads (a self-stabilized LSTM's softplus of alpha) by the
    parameters and constants it is computed from, inside the block's composite as CNTK 2.7's
    ``Stabilizer`` block is."""
    inner = [read(o.parent.inputs[0], block, block.op_name) for o in block.outputs]
    root = w.function("Combine", inner) + "_Output_0"
    if read_order:
        block.leaves[:] = w.read_order(root, [u for u in block.leaves if "_Output_" not in u] + [
            u for u in w.constants_read(root) if u not in block.leaves])
    made = w.block(block, root, [read(a, outer, block.op_name) for a in block.arguments])
    made = made.rpartition("_Output_")[0]
    return [f"{made}_Output_{k}" for k in range(len(block.outputs))]


def held_output(node) -> "tuple[int, Variable]":
    """``(k, v)``: the first output of ``node`` something holds (a loaded LSTM recurrence read
    for its second output alone has let its first go), by which the writer names the op."""
    return next((k, o) for k, o in enumerate(node.outputs) if o is not None)


def find_blocks(nodes, block_of) -> "tuple[dict[int, Block], dict[int, Block | None]]":
    """The blocks of the graph by their output's id, and each node's innermost block."""
    blocks: dict[int, Block] = {}
    for node in nodes:
        out = held_output(node)[1]
        found = block_of(out) if block_of is not None else None
        if found is not None:
            blocks[id(out)] = Block(out, *found)
    scope: dict[int, Block | None] = {key(n): None for n in nodes}
    for b in sorted(blocks.values(), key=lambda b: -len(b.inside)):
        for k in b.inside:
            scope[k] = b
    return blocks, scope
