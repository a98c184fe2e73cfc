"""Saving CNTK Functions (``Function.save``): a CNTK v2 model file where every op has a CNTK
form, else a Stadyn model file of the layout :mod:`._model_file` describes, or ONNX; and what the
CNTK writers are told of the graph (:func:`cntk_writer_names`)."""

from __future__ import annotations

import os
import warnings
from collections import OrderedDict

from ...graph import Variable, free_dimensions, replayed_from, replayed_with, topological_nodes
from . import _graph as G
from ._cntk_attributes import CNTK_ATTRIBUTES, CNTK_ROOT_ATTRIBUTES
from ._clone import rebuild
from ._graph_views import walk_between
from ._model_file import (_ARG, _AXIS, _COMBINE, _FREE, _NODE, _OUT, _SEVERAL, _SPARSE,
                          _UNBATCHED, _UNTYPED, ModelFormat)
from ._seq_axes import free_steps
from ._shown_constants import shown_constants

__all__ = ["save_roots", "cntk_writer_names", "saved_graph"]


def _kept_op_name(node) -> bool:
    """Whether the op of ``node`` (a walk's ``("op", v)``) has a CNTK op name that its Stadyn
    op's name does not spell (``x * 2.0``: CNTK's ``ElementTimes``, Stadyn's ``mul``), which the
    file must then record, named or not."""
    kind, v = node
    if kind != "op" or not G.made_by_cntk_op(v):
        return False
    return G.primitive_op_name(v) != G.spelled_op_name(v)


def _named_nodes(roots) -> list:
    """The named functions, the blocks and the ops whose CNTK op name the file must keep
    (:func:`_kept_op_name`) of the graph behind ``roots``, each once."""
    found, seen = [], set()
    for root in roots:
        for kind, v in G.search(G.classify(root),
                                lambda n: n[0] == "block" or (n[0] != "leaf" and G.node_name(n))
                                or _kept_op_name(n), -1):
            key = (kind, id(v))
            if key not in seen:
                seen.add(key)
                found.append((kind, v))
    return found


def _unused(name: str, taken) -> str:
    """``name``, or ``name#2``, ``name#3``, ... if ``taken`` holds it."""
    k, out = 1, name
    while out in taken:
        k += 1
        out = f"{name}#{k}"
    return out


def saved_graph(roots: list) -> list:
    """``roots``, or a copy of their graph without what the sequence-begin flags spliced in
    (no part of the graph CNTK saves; the copy reads the same inputs and parameters)."""
    if any(G.seen_through(i) is not i for node in topological_nodes(roots)
           for i in node.inputs):
        return rebuild(roots, {}, "share")
    return roots


def save_roots(roots: list, arguments: list, filename, format, combine=None,
               untyped: bool = False, stand_ins: bool = False) -> None:
    """Save the graph of the Stadyn Variables ``roots`` with its CNTK ``arguments`` (their
    names become the file's input names) and every named function inside; ``combine``: the
    Combine function whose outputs the roots are, if they are a ``combine``'s; ``untyped``:
    the arguments stand for those of a Function not given types (an untyped ``@C.Function``,
    the graph built for the operands it was applied to), which a CNTK v2 file holds as
    placeholders of unknown shape, as CNTK 2.7 writes them; ``stand_ins``: those arguments'
    graph was built on stand-ins (sequences of one value: a Function never applied), which
    only a CNTK v2 file forgets -- where none can be written the save is refused (ValueError)
    rather than fall back to a file of the stand-ins' shapes."""
    from ... import serialize
    roots = saved_graph(roots)
    path = os.fspath(filename)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    # unnamed inputs and the outputs also get a model file's own names (x or x0, x1...; y or
    # y0, y1...), so that sd.load(path) runs the file as any other
    inputs = OrderedDict()
    unnamed = sum(1 for a in arguments if not a.name)
    for k, a in enumerate(arguments):
        name = a.name or ("x" if unnamed == 1 else f"x{k}")
        inputs[name if name not in inputs else f"{name}#{len(inputs)}"] = a.variable
    if format == ModelFormat.ONNX and stand_ins:
        raise ValueError(f"{path}: the Function's arguments have no types, and an ONNX file "
                         "needs their shapes (CNTK 2.7 crashes saving it); apply it to "
                         "Functions or Variables first, or save it as ModelFormat.CNTKv2")
    if format == ModelFormat.ONNX:
        serialize.export_onnx(path, [r for r in roots], inputs)
        return
    if _saved_as_cntk_v2(path, roots, inputs, [a.name for a in arguments], combine, untyped,
                         stand_ins):
        return
    outputs = OrderedDict()
    for k, root in enumerate(roots):
        # (an input may be named y itself: a file's inputs and outputs need distinct names)
        outputs[_unused("y" if len(roots) == 1 else f"y{k}", inputs)] = root
    for k, root in enumerate(roots):
        outputs[f"{_OUT}{k}:{G.name_of(root)}"] = root
    if combine is not None:         # (the loaded model's root is a Combine function again)
        outputs[f"{_COMBINE}{combine.name}"] = roots[0]
    for k, (kind, v) in enumerate(_named_nodes(roots)):
        op_name = G.op_name_of(v) if kind == "block" else G.primitive_op_name(v)
        # (op names such as Sequence::Gather hold colons: written as %3A)
        op_name = (op_name or "").replace("%", "%25").replace(":", "%3A")
        outputs[f"{_NODE}{k}:{kind}:{op_name}:{G.node_name((kind, v))}"] = v
        if kind == "block":
            for j, a in enumerate(G.BLOCKS[v].arguments):
                outputs[f"{_ARG}{k}:{j}"] = a
    # the functions of several outputs (top_k's values and indices): each output, so that the
    # loaded graph shows one function for them
    several = [G.outputs_of(v) for kind, v in G.search(
        [G.classify(r) for r in roots], lambda n: n[0] == "op", -1)]
    for k, outs in enumerate(o for o in several if len(o) > 1):
        for j, v in enumerate(outs):
            outputs[f"{_SEVERAL}{k}:{j}:{G.primitive_op_name(v)}"] = v
    # inputs and outputs on a named sequence axis (declared, or made by where, to_sequence)
    for k, v in [(str(k), v) for k, v in enumerate(inputs.values())] + \
            [(f"y{k}", v) for k, v in enumerate(roots)]:
        axis = G.SEQUENCE_AXES.get(v.sequence_lengths) if v.sequence_lengths is not None \
            else None
        if axis is not None:
            outputs[f"{_AXIS}{k}:{int(axis.is_ordered)}:{axis.name}"] = v
    if untyped:         # (loaded, a value put in their place is checked against its type)
        for k, v in enumerate(inputs.values()):
            outputs[f"{_UNTYPED}{k}"] = v
    for k, v in enumerate(inputs.values()):
        if v.parent is None and not G.BATCH(v):     # (made with dynamic_axes=[]: none)
            outputs[f"{_UNBATCHED}{k}"] = v
    for k, v in enumerate(inputs.values()):
        if v in G.SPARSE:           # (loaded sparse, as CNTK 2.7's files keep is_sparse)
            outputs[f"{_SPARSE}{k}"] = v
    for k, v in enumerate(roots):
        if v in G.SPARSE_OUTPUTS:   # (eye_like's sparse_output: CNTK's OutputSparse, kept)
            outputs[f"{_SPARSE}y{k}"] = v
    # the inputs' free dimensions (CNTK's FreeDimension: loaded free again), and the outputs'
    # (a crop to a free referent's size: free by how it is made)
    for k, v in [(f"x{k}", v) for k, v in enumerate(inputs.values())] + \
            [(f"y{k}", v) for k, v in enumerate(roots)]:
        axes = free_dimensions(v) if v.parent is None else free_steps(v)
        if axes:
            outputs[f"{_FREE}{k}:{','.join(map(str, sorted(axes)))}"] = v
    serialize.save(path, outputs, inputs)


def _saved_as_cntk_v2(path: str, roots: list, inputs: "OrderedDict", names: list,
                      combine, untyped: bool, stand_ins: bool = False) -> bool:
    """Write a CNTK v2 model file (what CNTK 2.7 reads) if every op of the graph has a CNTK
    form; else warn, naming the op, and return False (the caller writes Stadyn's format) --
    or, for a graph built on stand-ins (``stand_ins``: :func:`save_roots`), refuse."""
    from ...serialize import CntkWriteUnsupported, save_cntk_v2
    try:
        save_cntk_v2(path, roots, inputs, **cntk_writer_names(roots, names, combine, untyped))
        return True
    except CntkWriteUnsupported as exc:
        if stand_ins:
            # (a Stadyn file would hold the graph of the stand-ins' shapes, (1,), and compute
            # wrong shapes for any other; CNTK 2.7's file applies to any)
            raise ValueError(f"{path}: the Function's arguments have no types, and its graph "
                             f"cannot be written as a CNTK v2 file of arguments of unknown "
                             f"shape ({exc}); apply it to Functions or Variables first (their "
                             f"types are saved)") from None
        warnings.warn(f"{path}: written as a Stadyn model file, which CNTK 2.7 cannot read "
                      f"({exc}); Stadyn's load_model reads it, ModelFormat.ONNX writes ONNX",
                      UserWarning, stacklevel=4)
        return False


def cntk_writer_names(roots: list, names: list, combine, untyped: bool = False) -> dict:
    """What the CNTK writers (:func:`stadyn.serialize.save_cntk_v2`, and the v1 writer) are
    told of the graph behind ``roots``: its names, layers, CNTK ops, leaf order and inputs'
    axes (``names``: the inputs' names)."""
    return dict(input_names=names, name_of=lambda v: G.node_name(G.classify(v)),
                leaf_name_of=G.name_of,
                combine_name=combine.name if combine is not None else None,
                block_of=_block_of, cntk_op_of=_cntk_op_of, step_op_of=G.step_op_of,
                leaf_order=_file_leaves(roots), sequence_axis_of=_sequence_axis_name,
                batched_input=G.BATCH, sparse_input=G.SPARSE.__contains__,
                untyped_inputs=untyped, loaded_attributes_of=_loaded_attributes,
                # (a composite renamed, z.name = ...: CNTK 2.7's file names the model so)
                composite_name=G.COMPOSITE_NAMES.get(roots[0])
                if len(roots) == 1 and combine is None else None)


def _loaded_attributes(v) -> "tuple | None":
    """``(op, attributes)`` of the function a loaded CNTK file (v2, or cntk.exe's v1 as CNTK
    2.7 converts it) computed ``v`` with, which the writer writes again as CNTK 2.7 does."""
    shown = (CNTK_ROOT_ATTRIBUTES if v in G.BLOCKS else CNTK_ATTRIBUTES).get(v)
    return None if shown is None else (G.primitive_op_name(v), dict(shown))


def _file_leaves(roots: list) -> list:
    """The leaves of the graph in the order CNTK's walk meets them, but the constants shown
    for a block the writer's rule writes (``sequence.first``'s and ``last``'s two scalars,
    ``classification_error``'s 1: ``_shown_constants``), with constants of its own."""
    hidden = {id(c) for node in topological_nodes(roots) if _rule_block(node.outputs[0])
              for c in shown_constants(node.outputs[0])}
    return [v for v in G.walk_leaves(roots) if id(v) not in hidden]


def _sliced(v) -> bool:
    """Whether ``v`` is the output of ``sequence.first`` or ``last``, shown as a
    ``Sequence::Slice`` block (a ``Fold``'s slice is a view of its own, whose scalars the
    file holds where the walk meets them)."""
    block = G.BLOCKS.get(v)
    return block is not None and block.op_name == "Sequence::Slice" and \
        v.parent is not None and v.parent.spec.name in ("sequence_first", "sequence_last")


def _rule_block(v) -> bool:
    """Whether the constants shown for ``v``'s op are inside a block the writer's rule writes
    with constants of its own (``sequence.first``'s Slice, ``classification_error``'s 1)."""
    from ...serialize import CNTK_ONE_OP_BLOCKS
    if v is None:
        return False
    block = G.BLOCKS.get(v)
    return _sliced(v) or (block is not None and block.op_name in CNTK_ONE_OP_BLOCKS)


def _sequence_axis_name(v) -> "str | None":
    """The name of an input's named sequence axis (None: the default one), for the CNTK v2
    writer, which writes it as CNTK 2.7 does (``''`` too: a loaded cntk.exe file's input)."""
    axis = G.SEQUENCE_AXES.get(v.sequence_lengths)
    return None if axis is None else axis.name


_NORMS = ("ReduceL1", "ReduceL2", "ReduceSumSquare")


def _cntk_op_of(v) -> "tuple | None":
    """The CNTK op this layer shows as making ``v`` and the inputs it shows (what
    ``root_function.op_name`` and ``.inputs`` give), for the CNTK v2 writer: a block CNTK 2.7
    builds for one op (gather's ``GatherOp``, ``sequence.is_first``'s ``Sequence::IsFirst``,
    ``reduce_sum``'s ``ReduceElements``: ``serialize.CNTK_ONE_OP_BLOCKS``) by
    its kind, else the op that made ``v``; a loaded file's block the writer writes from its
    attributes (``serialize.CNTK_ATTRIBUTE_BLOCKS``: ``LocalResponseNormalization``) by its
    kind, over its arguments, with those attributes."""
    from ...serialize import CNTK_ATTRIBUTE_BLOCKS, CNTK_ATTRIBUTE_OPS, CNTK_ONE_OP_BLOCKS
    block = G.BLOCKS.get(v)
    if block is not None and block.op_name in CNTK_ATTRIBUTE_BLOCKS and block.attributes:
        # (a loaded file's block the writer writes from its attributes, over its arguments)
        return (block.op_name, list(block.arguments), dict(block.attributes))
    if block is not None and block.op_name in _NORMS and block.attributes and \
            len(block.arguments) == 1 and isinstance(block.arguments[0], Variable):
        # (a loaded file's norm reads what it was applied to: its inside holds the file's
        # blocks, ReduceL2's ReduceSumSquare, which the shown inputs do not see through; its
        # output is that of the block inside it where that is the root, ReduceL1's and
        # ReduceSumSquare's ReduceElements, no op CNTK named)
        return (block.op_name, list(block.arguments))
    if block is not None and block.op_name == "Softplus" and len(block.arguments) == 1 and \
            isinstance(block.arguments[0], Variable):
        # (a loaded file's Softplus block, C.softplus's (a Stabilizer's): its LogPlus(x, 0) is
        # computed by log_add_exp's ops, whose shown inputs are not the file's; the rule of
        # cntk:Softplus writes the block over its argument, with its own 0)
        return ("Softplus", list(block.arguments))
    if v in G.INNER_OPS and v.parent.spec.name == "log":
        # (a log among the helper ops of a CNTK op: a loaded file's ReduceElements LogSum,
        # whose import rule computes log(sum(exp(x - max)))+max, written as CNTK's own Log;
        # binary_cross_entropy's logs are CNTK Log ops of their own now and do not come here)
        return ("Log", list(v.parent.inputs))
    if not G.made_by_cntk_op(v):
        return None
    if block is None and G.primitive_op_name(v) in CNTK_ATTRIBUTE_OPS and \
            CNTK_ATTRIBUTES.get(v) is not None:
        # (an op the writer writes from the attributes CNTK shows: random_sample_inclusion_
        # frequency's, CNTK's numSamples, allowDuplicates and rngSeed)
        return (G.primitive_op_name(v), G.shown_inputs(v), dict(CNTK_ATTRIBUTES[v]))
    if block is not None and block.op_name in CNTK_ONE_OP_BLOCKS:
        # (the rule writes the block with its own constants: classification_error's 1)
        hidden = {id(c) for c in shown_constants(v)}
        shown = [i for i in G.shown_inputs(v) if id(i) not in hidden]
        arguments = [a for a in block.arguments if id(a) not in hidden]
        if len(shown) < len(arguments) and all(isinstance(a, Variable) for a in arguments):
            # (a loaded file's block, squared_error's SquaredError: its root op reads what
            # the file's body computed from the arguments, which the block is applied to)
            shown = arguments
        return (block.op_name, shown)
    if block is not None and any(i in G.INNER_OPS for i in v.parent.inputs):
        # (a block whose root op is computed from Stadyn ops shown as part of it: binary_
        # cross_entropy's Negate of the sum of its logs; its body is written as those ops,
        # the root reading what its own op reads, not the block's arguments)
        return (G.primitive_op_name(v), list(v.parent.inputs))
    if _sliced(v):
        # (the two scalars sequence.first's and last's Sequence::Slice shows are inside
        # CNTK's block, which the writer's rule writes itself: _shown_constants)
        hidden = {id(c) for c in shown_constants(v)}
        return (G.primitive_op_name(v), [i for i in G.shown_inputs(v) if id(i) not in hidden])
    return (G.primitive_op_name(v), G.shown_inputs(v))


def _block_of(v) -> "tuple | None":
    block = G.BLOCKS.get(v)
    origin = replayed_from(v) if block is None else None
    outputs = G.outputs_of(v)
    if origin is not None:
        # (a cell a user's step applies, the step replayed without what it computes from no
        # state -- a self-stabilized cell's softplus of alpha: the block recorded on the value
        # replayed; a cell of several outputs, a self-stabilized LSTM's h and c, with each
        # output as the same replay made it, as CNTK 2.7 writes its LSTM block in the loop)
        block = G.BLOCKS.get(origin)
        outputs = [replayed_with(v, o) for o in G.outputs_of(origin)]
        if any(o is None for o in outputs) or (
                len(outputs) > 1 and G.combined_inside(origin) is None):
            return None             # (an output the step never reads: written op by op)
    if block is None:
        return None
    arguments = block.arguments if origin is None else _replayed_arguments(v, block.arguments)
    options = block.options
    if not options and block.op_name == "Dense":
        options = _loaded_dense_options(v, block)
    if len(outputs) > 1 and (origin is not None or G.combined_inside(v) is not None):
        # (a block of several outputs, each an identity of what its inside's Combine reads)
        return (block.op_name, block.name, arguments, options, outputs)
    return (block.op_name, block.name, arguments, options)


def _replayed_arguments(v: Variable, arguments) -> list:
    """A replayed cell's recorded ``arguments``, each as the replayed step computes it (an
    argument the step computed, ``cell(h * 2, x)``'s ``h * 2``, replayed too; the step's own
    placeholders are kept as they are)."""
    replayed = {id(replayed_from(o)): o for node in topological_nodes([v])
                for o in node.outputs if o is not None and replayed_from(o) is not None}
    return [replayed.get(id(a), a) for a in arguments]


def _loaded_dense_options(v: Variable, block) -> dict:
    """A loaded file's Dense: the ``inferInputRankToMap`` of the ``Times`` inside it, as the
    file gives it (CNTK 2.7 writes it again as it read it)."""
    for u in walk_between([v], {id(a) for a in block.arguments}):
        rank = CNTK_ATTRIBUTES.get(u, {}).get("inferInputRankToMap")
        if rank is not None and G.primitive_op_name(u) == "Times":
            return {"inferInputRankToMap": int(rank)}
    return {}
