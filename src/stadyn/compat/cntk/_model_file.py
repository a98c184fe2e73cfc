"""Saving and loading CNTK Functions as Stadyn model files, keeping what CNTK programs look up
after loading: the inputs' names, the outputs, and every named function inside (saved as extra
outputs of the file, ``node:<k>:<name>``, so ``find_by_name`` finds them in the loaded graph),
and the named sequence axes of the inputs and outputs (``axis:<k>:<ordered>:<name>``, the
input or output itself).
``ModelFormat.ONNX`` writes and reads ONNX instead.  ``ModelFormat.CNTKv2`` (the default) writes
a CNTK v2 model file (:func:`stadyn.serialize.save_cntk_v2`) when every op of the graph has a
CNTK form, and the Stadyn model file above, with one warning naming the op, when one has none."""

from __future__ import annotations

import contextlib
import enum
import os
import tempfile
import warnings
from collections import OrderedDict

import numpy as np

from ...graph import Variable, free_dimensions, mark_free_dimensions, topological_nodes
from . import _graph as G
from ._axis import Axis
from ._cntk_attributes import CNTK_ATTRIBUTES, CNTK_ROOT_ATTRIBUTES, file_attribute
from ._clone import rebuild
from ._seq_axes import free_steps, mark_free_axes
from ._shown_constants import show_constants

__all__ = ["ModelFormat", "save_roots", "cntk_writer_names", "saved_graph", "load_roots",
           "STADYN_FILE", "restore_parameters", "untyped_arguments", "untyped_shown_op",
           "model_path"]


class ModelFormat(enum.Enum):
    """The file format of ``Function.save``: CNTK's own (a CNTK v2 model file CNTK 2.7 reads,
    where every op has a CNTK form; else a Stadyn model file, with a warning) or ONNX."""

    CNTKv2 = 0
    ONNX = 1

_OUT, _NODE, _ARG, _AXIS, _SEVERAL, _COMBINE = ("output:", "node:", "arg:", "axis:", "outputs:",
                                               "combine:")
_UNTYPED = "untyped:"
#: what :func:`untyped_arguments` gives for a file its first bytes tell is Stadyn's own
STADYN_FILE = "a Stadyn model file"
_SPARSE = "sparse:"
_FREE = "free:"
_UNBATCHED = "unbatched:"


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
                block_of=_block_of, cntk_op_of=_cntk_op_of,
                leaf_order=list(G.walk_leaves(roots)), sequence_axis_of=_sequence_axis_name,
                batched_input=G.BATCH, sparse_input=G.SPARSE.__contains__,
                untyped_inputs=untyped,
                # (a composite renamed, z.name = ...: CNTK 2.7's file names the model so)
                composite_name=G.COMPOSITE_NAMES.get(roots[0])
                if len(roots) == 1 and combine is None else None)


def _sequence_axis_name(v) -> "str | None":
    """The name of an input's named sequence axis (None: the default one), for the CNTK v2
    writer, which writes only CNTK's default axis."""
    axis = G.SEQUENCE_AXES.get(v.sequence_lengths)
    return None if axis is None else axis.name


_NORMS = ("ReduceL1", "ReduceL2", "ReduceSumSquare")
# (a loaded random op shows Stadyn's attributes: its seed and offset are the draws' state)
_RANDOM_OPS = ("RandomDistribution", "RandomSample", "Dropout")


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
    if v in G.INNER_OPS and v.parent.spec.name == "log":
        # (a log inside a CNTK op, binary_cross_entropy's: CNTK 2.7 builds it of its own Log)
        return ("Log", list(v.parent.inputs))
    if not G.made_by_cntk_op(v):
        return None
    if block is None and G.primitive_op_name(v) in CNTK_ATTRIBUTE_OPS and \
            CNTK_ATTRIBUTES.get(v) is not None:
        # (an op the writer writes from the attributes CNTK shows: random_sample_inclusion_
        # frequency's, CNTK's numSamples, allowDuplicates and rngSeed)
        return (G.primitive_op_name(v), G.shown_inputs(v), dict(CNTK_ATTRIBUTES[v]))
    if block is not None and block.op_name in CNTK_ONE_OP_BLOCKS:
        return (block.op_name, G.shown_inputs(v))
    if block is not None and any(i in G.INNER_OPS for i in v.parent.inputs):
        # (a block whose root op is computed from Stadyn ops shown as part of it: binary_
        # cross_entropy's Negate of the sum of its logs; its body is written as those ops,
        # the root reading what its own op reads, not the block's arguments)
        return (G.primitive_op_name(v), list(v.parent.inputs))
    return (G.primitive_op_name(v), G.shown_inputs(v))


def _block_of(v) -> "tuple | None":
    block = G.BLOCKS.get(v)
    if block is None:
        return None
    options = block.options
    if not options and block.op_name == "Dense":
        options = _loaded_dense_options(v, block)
    return (block.op_name, block.name, block.arguments, options)


def _loaded_dense_options(v: Variable, block) -> dict:
    """A loaded file's Dense: the ``inferInputRankToMap`` of the ``Times`` inside it, as the
    file gives it (CNTK 2.7 writes it again as it read it)."""
    arguments = {id(a) for a in block.arguments}
    stack, seen = [v], set()
    while stack:
        u = stack.pop()
        if id(u) in seen or id(u) in arguments or u.parent is None:
            continue
        seen.add(id(u))
        rank = CNTK_ATTRIBUTES.get(u, {}).get("inferInputRankToMap")
        if rank is not None and G.primitive_op_name(u) == "Times":
            return {"inferInputRankToMap": int(rank)}
        stack.extend(u.parent.inputs)
    return {}


def untyped_arguments(path, format) -> "tuple[list[str], object]":
    """The names of the arguments of a CNTK v2 file that are placeholders of unknown shape (a
    Function saved before it was given types, an untyped ``@C.Function``), in the order CNTK
    2.7 lists them ([] for another file), and the file decoded (for :func:`load_roots`, which
    so reads its first bytes no more; :data:`STADYN_FILE` where they tell it is no model file
    of NNabla or CNTK; None where ``format`` is ONNX)."""
    from ... import serialize
    path = os.fspath(path)
    if format != ModelFormat.CNTKv2:
        return [], None
    # (the first bytes read once: a model file of NNabla or CNTK, and which; one told by its
    # suffix alone, missing, is read whole for the error)
    if serialize.legacy_model_head(path) is None:
        return [], STADYN_FILE
    legacy = serialize.read_legacy_model(path)
    main = legacy.networks.get("main")
    if legacy.format != "cntk-v2" or main is None:
        return [], legacy
    untyped = {uid: v.meta.get("name") or uid for uid, v in main.variables.items()
               if _untyped(v)}
    seen: list[str] = []
    for uid in serialize.cntk_leaf_order(main.functions, _walk_starts(legacy)):
        if uid in untyped and untyped[uid] not in seen:
            seen.append(untyped[uid])
    return seen, legacy


def _walk_starts(legacy) -> list:
    """Where CNTK 2.7 starts its walk of a CNTK v2 file's graph: the file's root function (its
    outputs' functions when it names none)."""
    main = legacy.networks["main"]
    owner = {o: f for f in main.functions for o in f.outputs}
    root = legacy.extras.get("root")
    return [f.name for f in main.functions if f.name == root] or \
        [owner[o].name for o in main.outputs if o in owner]


def untyped_shown_op(legacy) -> str:
    """The op name CNTK 2.7's ``str`` shows for the loaded model ``legacy`` (a CNTK v2 file of
    untyped arguments, :func:`untyped_arguments`): its root function's, where the root reads
    the model's leaves first, in the order the model lists them (``Gather(table: ...,
    indices: ...)``), else ``Composite``."""
    from ... import serialize
    main = legacy.networks["main"]
    root = [f for f in main.functions if f.name == legacy.extras.get("root")]
    if not root:
        return "Composite"
    leaves = serialize.cntk_leaf_order(main.functions, _walk_starts(legacy))
    # (alone, the root's operands are all leaves of the walk: listed in Python's order)
    operands = serialize.cntk_leaf_order(root, [root[0].name])
    same = all(a == b for a, b in zip(leaves, operands))
    return root[0].type if same else "Composite"


@contextlib.contextmanager
def model_path(model):
    """The name of a file holding ``model`` (a file name, or a model file's bytes, written to
    a temporary file while the context lasts)."""
    if not isinstance(model, (bytes, bytearray)):
        yield model
        return
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model")
        with open(path, "wb") as f:
            f.write(model)
        yield path


def _untyped(v) -> bool:
    """Whether a CNTK v2 file's variable is a placeholder not given a type."""
    return v.kind == "placeholder" and v.meta.get("dynamic_axes") == ["UnknownAxes"]


def _type_arguments(legacy, types: dict) -> None:
    """Make the untyped placeholders of ``legacy`` (a CNTK v2 file read) inputs of the types
    of the Variables ``types`` gives by name (an untyped Function applied)."""
    main = legacy.networks["main"]
    for uid, v in list(main.variables.items()):
        value = types.get(v.meta.get("name") or uid) if _untyped(v) else None
        if value is None:
            continue
        axes = [a.name for a in value.dynamic_axes]
        main.variables[uid] = type(v)(uid, "input", tuple(value.shape),
                                      np.dtype(value.dtype).name,
                                      {**v.meta, "dynamic_axes": axes, "is_sparse":
                                       bool(value.is_sparse), "ordered_axes":
                                       [a.name for a in value.dynamic_axes if a.is_ordered]})
        if uid not in main.inputs:
            main.inputs.append(uid)


def load_roots(model, format, types: "dict | None" = None,
               legacy=None) -> "tuple[list, str | None, str | None]":
    """The outputs (Stadyn Variables) of the graph saved in ``model`` (a file name, or the
    file's bytes), with CNTK's names, blocks and inputs restored; the name of the Combine
    function they are the outputs of (None if they are not a combine's: a model of one output,
    or of one function's outputs); and that Combine's uid where the file (CNTK's) gives it.
    ``types``: for a file of untyped arguments (:func:`untyped_arguments`), the Variables
    whose types each (by name) is given, as the Function is applied to them.  ``legacy``: the
    file as :func:`untyped_arguments` decoded it, where it was (and no ``types`` change it), or
    :data:`STADYN_FILE` where it told the file is Stadyn's."""
    from ... import serialize
    if isinstance(model, (bytes, bytearray)):
        with model_path(model) as path:
            return load_roots(path, format, types)
    path = os.fspath(model)
    root = None
    v1_uids: dict = {}
    if format == ModelFormat.ONNX:
        network = serialize.import_onnx(path)
    elif legacy is STADYN_FILE:         # (its first bytes read already)
        network = serialize.load_model_file(path)
    elif legacy is not None or serialize.is_legacy_model_file(path):
        if legacy is None:
            legacy = serialize.read_legacy_model(path)
        if types:
            _type_arguments(legacy, types)
        root = _root_function(legacy)
        if legacy.format == "cntk-v1":
            # CNTK 2.7 gives a v1 file's roots: its criteria (ce, errs) and outputs, by name,
            # as the outputs of a Combine (of one output too), the nodes numbered as it numbers
            # them
            net = legacy.networks["main"]
            net.outputs = serialize.cntk_v1_roots(net)

            def numbers(first: int) -> int:
                uids, combine = serialize.cntk_v1_uids(net, net.outputs, first)
                v1_uids.update(uids, **{"": f"Combine{combine}"})
                return combine + 2 - first          # its composite's number too
            G.take_uid_numbers(numbers)
        network = serialize.load_cntk(legacy) if legacy.format.startswith("cntk") else \
            serialize.load(path)
    else:
        network = serialize.load(path)
    unbatched, sparse = _file_input_kinds(legacy, network) if root is not None else \
        ({id(v) for k, v in network.outputs.items() if k.startswith(_UNBATCHED)}, ())
    for name, var in network.inputs.items():
        G.INPUTS[var] = name.partition("#")[0]
        if id(var) not in unbatched:        # (an input CNTK made with dynamic_axes=[]: none)
            G.BATCH.add(var)
        if id(var) in sparse:               # (one made with is_sparse=True stays sparse)
            G.SPARSE.add(var)
    _restore_origins(network.origins)
    if v1_uids:
        _number_v1_nodes(network.origins, v1_uids, list(network.outputs.values()))
    # a sequence output as the file computes it (the network's output sets the steps past
    # each sequence's end to 0: no function of the file, and the compat's eval gives each
    # sequence its own steps)
    outputs = OrderedDict((k, network.unpadded.get(k, v)) for k, v in network.outputs.items())
    if network.origins:
        _mark_inner(list(outputs.values()))
    roots, blocks, arguments, op_named, several = [], {}, {}, set(), {}
    free: dict = {}
    untyped: list = []
    # CNTK-written files: a Combine where the file's root function is one (of one output
    # too), named as it is; else the outputs of their function (a top_k's two)
    combine = None if root is None or root[0] != "Combine" else root[1]
    combine_uid = root[2] if combine is not None else None
    for key, var in outputs.items():
        if key.startswith(_OUT):
            var.name = key.split(":", 2)[2] or None
            roots.append(var)
        elif key.startswith(_NODE):
            _, k, kind, op_name, name = key.split(":", 4)
            op_name = op_name.replace("%3A", ":").replace("%25", "%")
            if kind == "block":
                blocks[int(k)] = (var, op_name, name)
            else:
                var.name = name
                op_named.add(id(var))
                if op_name:
                    G.set_op_name(var, op_name)
        elif key.startswith(_COMBINE):
            combine = key[len(_COMBINE):]
        elif key.startswith(_SEVERAL):
            _, k, j, op_name = key.split(":", 3)
            several.setdefault(int(k), []).append((int(j), var, op_name))
        elif key.startswith(_ARG):
            _, k, j = key.split(":")
            arguments.setdefault(int(k), []).append((int(j), var))
        elif key.startswith(_UNTYPED):
            G.UNTYPED_INPUTS.add(var)
            untyped.append(var)
        elif key.startswith(_SPARSE):
            G.SPARSE.add(var)
        elif key.startswith(_FREE):
            free[key.split(":")[1]] = (var, [int(a) for a in key.split(":")[2].split(",")])
        elif key.startswith(_AXIS) and var.sequence_lengths is not None:
            _, _, ordered, name = key.split(":", 3)
            G.SEQUENCE_AXES[var.sequence_lengths] = Axis(name, bool(int(ordered)))
    for k, (var, axes) in sorted(free.items()):     # (the inputs, x0..., first)
        if k.startswith("x") and var.parent is None:
            mark_free_dimensions(var, axes)
        elif k.startswith("y") and not free_steps(var):
            mark_free_axes(var, axes)
    for outs in several.values():
        outs.sort(key=lambda item: item[0])
        G.mark_outputs([v for _, v, _ in outs], outs[0][2])
    for k, (var, op_name, name) in blocks.items():
        args = tuple(a for _, a in sorted(arguments.get(k, []), key=lambda item: item[0]))
        G.BLOCKS[var] = G.Block(op_name, name, args)
    for var in roots:
        if var in G.BLOCKS and id(var) not in op_named:
            var.name = None     # a block's name is the block's, not that of the op inside it
    if not roots:                      # a file written by CNTK, or ONNX
        roots = list(outputs.values())
        if root is None:
            combine = "" if len(roots) > 1 or v1_uids else None
            combine_uid = v1_uids.get("")
    if root is not None and combine is None and len(roots) > 1 and \
            G.function_outputs(roots) is None and len({G.uid_of(v) for v in roots}) == 1:
        # (a CNTK file whose root is one function of several outputs, Recurrence(LSTM,
        # return_full_state=True)'s LSTM block: its outputs are that function's, in order)
        G.link_outputs(roots)
    composite = legacy.extras.get("name") if root is not None and combine is None else None
    if composite and len(roots) == 1 and composite != root[1]:
        G.COMPOSITE_NAMES[roots[0]] = composite     # (a renamed composite: its own name)
    if untyped:         # (an untyped @C.Function's arguments: in its signature's order)
        for var in roots:
            G.record_argument_order(var, untyped)
    G.BATCH.forget()
    return roots, combine, combine_uid


def passed_on_block(v: Variable) -> "Variable | None":
    """The output of the block inside a loaded file's block that only passes that output on
    (the reader gives the outer block an identity of its own: ReduceL1's and ReduceSumSquare's
    inner ``ReduceElements``, LocalResponseNormalization's ``ElementDivide``), which CNTK 2.7
    shows as the outer block's ``block_root``; None for another value."""
    node = v.parent
    if v not in G.BLOCKS or node is None or node.spec.name != "identity" or \
            G.made_by_cntk_op(v):
        return None
    inner = node.inputs[0]
    return inner if inner in G.BLOCKS else None


def _number_v1_nodes(origins: list, uids: dict, outputs: list) -> None:
    """A CNTK v1 file's nodes with the uids (``cntk_v1_uids``) and op names (a v1
    ``SquareError``: ``SquaredError``) CNTK 2.7's ``load_model`` gives them; a node CNTK 2
    wrote keeps the uid the file gives it.  The constants the reader adds (an old batch
    normalisation's ``<node>.run_sample_count``) are found by name.  A function's constant
    input its op reads as a number (a top-5 ``ClassificationError``'s 5) is shown after its
    other inputs, as CNTK 2.7 shows it."""
    from ... import serialize
    for var, origin in origins:
        uid = uids.get(origin.uid)
        if uid is not None:
            G.set_uid(var, uid)
        if origin.kind == "function":
            G.set_op_name(var, serialize.cntk_v1_op_name(origin.op_name))
            leaves = [o for o in origin.operands if o.parent is None]
            read = {id(i) for node in topological_nodes([var]) for i in node.inputs} \
                if leaves else set()      # (a walk of the node's graph only where it may tell)
            unread = tuple(o for o in leaves if id(o) not in read)
            if unread:
                show_constants(var, unread, last=True)
    recorded = {id(var) for var, _ in origins}
    for node in topological_nodes(outputs):
        for v in node.inputs:
            if v.parent is None and id(v) not in recorded and v.name in uids:
                G.set_uid(v, uids[v.name])


def _root_function(legacy) -> "tuple[str, str, str] | None":
    """``(op name, name, uid)`` of a CNTK 2 file's root function (``Combine``, ``TopK``, ...),
    or None for another file."""
    uid = legacy.extras.get("root") if legacy.format == "cntk-v2" else None
    for net in legacy.networks.values():
        for fn in net.functions:
            if uid is not None and fn.name == uid:
                return fn.type, fn.meta.get("name") or "", uid
    return None


def _mark_inner(roots: list) -> None:
    """The ops of a CNTK-written file's graph that none of its functions or blocks made (an
    import rule's helpers): :data:`G.INNER_OPS`, which the graph walks pass through."""
    seen, stack = set(), list(roots)
    while stack:
        v = stack.pop()
        if id(v) in seen or v.parent is None:
            continue
        seen.add(id(v))
        if not G.made_by_cntk_op(v) and v not in G.BLOCKS:
            G.INNER_OPS.add(v)
        stack.extend(v.parent.inputs)


def _file_input_kinds(legacy, network) -> "tuple[set, set]":
    """The ids of the inputs of ``network`` (read from the CNTK v2 file ``legacy``) that the
    file gives no dynamic axes (made with ``dynamic_axes=[]``), and of those it declares
    sparse (made with ``is_sparse=True``)."""
    unbatched: set = set()
    sparse: set = set()
    if legacy.format != "cntk-v2":
        return unbatched, sparse
    found = {}
    for net in legacy.networks.values():
        found.update(net.variables)
    for var, origin in network.origins:
        entry = found.get(origin.uid) if origin.kind == "input" else None
        if entry is None:
            continue
        if not entry.meta.get("dynamic_axes"):
            unbatched.add(id(var))
        if entry.meta.get("is_sparse"):
            sparse.add(id(var))
    return unbatched, sparse


def _restore_origins(origins: list) -> None:
    """What a CNTK-written file says of each node (``Network.origins``): inputs', parameters'
    and functions' names and uids, CNTK's op names and the blocks (layers), so that
    ``find_by_name``, ``uid`` and cloning from inner nodes see the file's graph; the outputs
    of a function of several (``TopK``) are one node of the walks."""
    several: dict = {}
    sliced: list = []
    shown: dict = {}                # id(var) -> (var, a CNTK file's attributes of its function)
    for var, origin in origins:
        if origin.kind in ("function", "block"):
            several.setdefault(origin.uid, {})[origin.output] = var
        if origin.kind == "block":
            G.set_root_uid(var, G.uid_of(var))      # the root op recorded before it
        G.set_uid(var, origin.uid)
        if origin.sequence_axis and var.sequence_lengths is not None:
            # an input's named axis, or the axis a function made (where, to_sequence)
            G.SEQUENCE_AXES[var.sequence_lengths] = Axis(origin.sequence_axis)
        if origin.kind == "input":
            G.INPUTS[var] = origin.name
        elif origin.kind in ("parameter", "constant"):
            G.LEAF_NAMES[var] = origin.name
        elif origin.kind == "function":
            var.name = origin.name or None
            G.set_op_name(var, origin.op_name)
            if origin.output:
                G.OUTPUT_INDEX[var] = origin.output     # uid <function uid>_Output_<k>
            if origin.operands:         # a function inside a loop: what it reads from outside
                G.show_operands_in_order(var, origin.operands)
            if origin.op_name == "Sequence::Slice":
                sliced.append((var, origin.operands))
            if origin.op_name not in _RANDOM_OPS and origin.attributes is not None:
                shown[id(var)] = (var, origin.attributes)
        elif origin.kind == "block":
            G.BLOCKS[var] = G.Block(origin.op_name, origin.name, origin.arguments,
                                    dict(origin.attributes or ()))
    # a CNTK v2 file's function shows the attributes the file gives it (CNTK's names and
    # values: EyeLikeOp's OutputSparse, Times' outputRank), a block's root op (ReduceL2's
    # Sqrt) as its block_root
    for var, attributes in shown.values():
        found = {k: file_attribute(v) for k, v in attributes}
        (CNTK_ROOT_ATTRIBUTES if var in G.BLOCKS else CNTK_ATTRIBUTES)[var] = found
    for outputs in several.values():
        if len(outputs) > 1 and sorted(outputs) == list(range(len(outputs))):
            G.link_outputs([outputs[k] for k in range(len(outputs))])
    for var, operands in sliced:
        # sequence.first / last: the block's scalars 0 and 1, which Stadyn's op does not read,
        # shown first among its inputs as CNTK 2.7 shows them (a Fold's, read in its loop,
        # show already)
        if var.parent is None or any(s.parent is None and s not in G.INPUTS
                                     for s in G.shown_inputs(var)):
            continue
        show_constants(var, tuple(o for o in operands if o.parent is None and o not in G.INPUTS))


def restore_parameters(mine: list, filename) -> None:
    """Set the CNTK Parameters ``mine`` to those saved in ``filename``, by name or in order."""
    from ... import serialize
    network = serialize.load(os.fspath(filename))
    saved = network.parameters
    if len(mine) != len(saved):
        raise ValueError(f"restore: the file holds {len(saved)} parameters, the Function "
                         f"{len(mine)}")
    by_name = all(p.variable.name in saved for p in mine)
    theirs = [saved[p.variable.name] for p in mine] if by_name else list(saved.values())
    for p, q in zip(mine, theirs):
        if tuple(p.variable.shape) != tuple(q.shape):
            raise ValueError(f"restore: parameter {p.name!r} has shape {p.variable.shape}, the "
                             f"file's {tuple(q.shape)}")
        p.variable.d = q.d
