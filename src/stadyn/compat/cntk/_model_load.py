"""Loading CNTK Functions (``load_model``, ``Function.load``, ``restore``): a Stadyn model file
(the layout :mod:`._model_file` describes), a CNTK v2 or v1 model file or ONNX, with what CNTK
programs look up after loading restored -- names, uids, blocks, inputs' kinds and axes -- and
the untyped arguments of a CNTK v2 file typed where the Function is applied."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections import OrderedDict

import numpy as np

from ...graph import Variable, mark_free_dimensions, topological_nodes
from . import _graph as G
from ._axis import Axis
from ._run_checks import check_each_run, refuse_when_run
from ._cntk_attributes import CNTK_ATTRIBUTES, CNTK_ROOT_ATTRIBUTES, file_attribute
from ._model_file import (_ARG, _AXIS, _COMBINE, _FREE, _NODE, _OUT, _SEVERAL, _SPARSE,
                          _UNBATCHED, _UNTYPED, ModelFormat)
from ._seq_axes import free_steps, mark_free_axes
from ._shown_constants import show_constants, show_topn_constant

__all__ = ["load_roots", "STADYN_FILE", "restore_values", "untyped_arguments",
           "untyped_shown_op", "model_path", "untyped_placeholder_order"]

#: what :func:`untyped_arguments` gives for a file its first bytes tell is Stadyn's own
STADYN_FILE = "a Stadyn model file"
# (a loaded random op shows Stadyn's attributes: its seed and offset are the draws' state)
_RANDOM_OPS = ("RandomDistribution", "RandomSample", "Dropout")


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
    return _untyped_names(legacy), legacy


def _untyped_names(legacy, python_order: bool = True) -> list[str]:
    """The names of the untyped arguments of the CNTK v2 file ``legacy`` (decoded), in the
    order CNTK 2.7's walk meets them: each function's operands in Python's order, or
    (``python_order`` False) as stored."""
    from ... import serialize
    main = legacy.networks["main"]
    untyped = {uid: v.meta.get("name") or uid for uid, v in main.variables.items()
               if _untyped(v)}
    seen: list[str] = []
    for uid in serialize.cntk_leaf_order(main.functions, _walk_starts(legacy), python_order):
        if uid in untyped and untyped[uid] not in seen:
            seen.append(untyped[uid])
    return seen


def untyped_placeholder_order(legacy) -> list[str]:
    """The names of the untyped arguments of the CNTK v2 file ``legacy`` (decoded, one of
    :func:`untyped_arguments`) in the order CNTK 2.7's loaded Function lists them among its
    ``placeholders``: each function's operands as stored (``gather(table, indices)``, stored
    ``Gather(indices, table)``: ``[indices, table]``; its ``arguments`` ``[table,
    indices]``)."""
    return _untyped_names(legacy, python_order=False)


def _walk_starts(legacy) -> list:
    """Where CNTK 2.7 starts its walk of a CNTK v2 file's graph: the file's root function (its
    outputs' functions when it names none)."""
    main = legacy.networks["main"]
    owner = {o: f for f in main.functions for o in f.outputs}
    root = legacy.extras.get("root")
    return [f.name for f in main.functions if f.name == root] or \
        [owner[o].name for o in main.outputs if o in owner]


def file_leaf_order(legacy, python_order: bool = True) -> list[str]:
    """The leaves of a CNTK v2 file's graph (``legacy``: the file decoded) in the order CNTK
    2.7's loaded Function meets them (``serialize.cntk_leaf_order``): walked from its root
    function, a root ``Combine`` by its operands (its outputs are its operands' names, which
    it does not make); ``python_order`` False: each function's operands as stored, the order
    of its ``parameters``."""
    from ... import serialize
    main = legacy.networks["main"]
    root = legacy.extras.get("root")
    combine = next((f for f in main.functions if f.name == root and f.type == "Combine"),
                   None)
    if combine is None:
        return serialize.cntk_leaf_order(main.functions, _walk_starts(legacy), python_order)
    return serialize.cntk_leaf_order([f for f in main.functions if f is not combine],
                                     list(combine.inputs), python_order)


def untyped_file_parameters(legacy, registry) -> list:
    """The parameters of a CNTK v2 file of untyped arguments (``legacy``, decoded by
    :func:`untyped_arguments`), in the order CNTK 2.7's loaded Function lists them before it
    is applied (``untyped.model``: ``[Parameter773 (3, 2), Parameter774 (2,)]``), made with
    the file's values and uids and put in ``registry`` under their uids, where each
    application's :func:`load_roots` takes them from."""
    made: dict = {}
    for uid in file_leaf_order(legacy, python_order=False):
        p = legacy.parameters.get(uid)
        if p is None or p.kind != "parameter" or uid in made:
            continue
        var = registry.get(uid)
        if var is None:
            var = Variable.from_numpy_array(p.value, need_grad=True)
            G.set_uid(var, uid)
            G.LEAF_NAMES[var] = p.name
            registry.set(uid, var)
        made[uid] = var
    return list(made.values())


def _record_parameter_order(legacy, roots: list) -> None:
    """Record, for a loaded CNTK v2 file's ``roots``, its parameters in the order CNTK 2.7's
    loaded Function lists them: its walk of the file's graph, each function's operands as
    stored, a block's as CNTK 2.7 rebuilds them from its composite (``serialize.read_cntk``)
    (``cntk_user_two_stab.model``: ``[b, W, H, alpha, H1, W, H, alpha, b]``, the GRU block's
    ``H1`` before the RNNStep block it reads; a walk of Stadyn's graph of the file, its loop's
    step with what the step computes from no state hoisted out of it, lists the hoisted
    ``alpha`` or ``H1`` elsewhere).  Nothing is recorded where the two walks do not find the
    same parameters, each once."""
    kinds = {uid: p.kind for uid, p in legacy.parameters.items()}
    uids = [u for u in file_leaf_order(legacy, python_order=False) if kinds.get(u) == "parameter"]
    mine = {G.uid_of(v): v for v in G.walk_leaves(roots, stored=True)
            if G.kind_of(v) == "parameter"}
    if sorted(uids) == sorted(mine):        # (each parameter found once, by its file's uid)
        G.record_parameter_order([mine[u] for u in uids],
                                 [v for node in topological_nodes(roots) for v in node.outputs
                                  if v is not None])


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


def _refused_if(when, error: type, reason: str):
    """A check of each run raising ``error`` with ``reason`` where ``when()`` is true."""
    def check() -> None:
        if when():
            raise error(reason)
    return check


def load_roots(model, format, types: "dict | None" = None, legacy=None,
               registry=None) -> "tuple[list, str | None, str | None]":
    """The outputs (Stadyn Variables) of the graph saved in ``model`` (a file name, or the
    file's bytes), with CNTK's names, blocks and inputs restored; the name of the Combine
    function they are the outputs of (None if they are not a combine's: a model of one output,
    or of one function's outputs); and that Combine's uid where the file (CNTK's) gives it.
    ``types``: for a file of untyped arguments (:func:`untyped_arguments`), the Variables
    whose types each (by name) is given, as the Function is applied to them.  ``legacy``: the
    file as :func:`untyped_arguments` decoded it, where it was (and no ``types`` change it), or
    :data:`STADYN_FILE` where it told the file is Stadyn's.  ``registry``: a CNTK file's
    parameters and constants are taken from it where an earlier load of the file put them
    (keeping their values), and put there else: each application of a loaded Function of
    untyped arguments reads the same parameters, as in CNTK 2.7."""
    from ... import serialize
    if isinstance(model, (bytes, bytearray)):
        with model_path(model) as path:
            return load_roots(path, format, types, registry=registry)
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
        # (a function CNTK 2.7 loads but refuses when run: a stand-in refused at every run,
        # its copies in a clone or an application too (_clone.rebuild); a file of untyped
        # arguments given types too: CNTK 2.7 refuses it at eval, not update_signature)
        if legacy.format.startswith("cntk"):
            kept = [(v, np.array(v.d)) for _, v in registry.items()] if registry else []
            network = serialize.load_cntk(legacy, defer_refusals=True, registry=registry)
            for var, value in kept:         # (the build sets them to the file's values)
                var.d = value
        else:
            network = serialize.load(path)
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
    # a v1 file's criteria, a v2 file's primitive ones (top_n's ClassificationError) and its
    # reductions over all axes: one number with no dynamic axes, as CNTK 2.7 shows them
    # (PrimitiveFunction.cpp:108-122: SquaredError, CrossEntropyWithSoftmax,
    # ClassificationError, Logistic, SumAll, ReduceElements over all axes ... have none)
    for var in network.reduced:
        G.BATCH.unmark(var)
    _restore_origins(network.origins)
    for value, error, reason, *when in getattr(network, "refused_at_run", ()):
        if when:        # (refused by the runs whose data it tells: a v1 Logistic's)
            check_each_run(value, _refused_if(when[0], error, reason))
        else:
            refuse_when_run(value, reason, error)   # (CNTK loads it; a run raises)
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
                if op_name == "ClassificationError":    # (top N's constant N, shown last)
                    show_topn_constant(var)
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
        elif key.startswith(_SPARSE):       # (an input's is_sparse; a root's sparse_output)
            (G.SPARSE_OUTPUTS if key.startswith(f"{_SPARSE}y") else G.SPARSE).add(var)
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
    if root is not None and legacy.format == "cntk-v2":
        _record_parameter_order(legacy, roots)
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
        if origin.sequence_axis is not None and var.sequence_lengths is not None:
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
            elif origin.op_name == "CosDistanceWithNegativeSamples" and origin.operands:
                # (its shift and count, Constants its rule reads as numbers: shown after
                # its operands, as CNTK 2.7 lists them, and among the constants)
                show_constants(var, tuple(o for o in origin.operands[2:] if o.parent is None),
                               last=True)
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


def restore_values(mine: list, theirs: list, shown: str, loaded: str) -> None:
    """CNTK 2.7's ``Function.restore``: the constants and parameters among a Function's
    inputs (``mine``, in CNTK's order) take the values of those of the Function loaded from
    the file (``theirs``), pair by pair, constants too (``Function::RestoreFromCheckpoint``,
    Function.cpp:1040-1052); a pair of another kind, shape or type is CNTK's ValueError, the
    two Functions not being equivalent (``Internal::AreEquivalent``, Common.cpp:213; names
    ``shown`` and ``loaded`` in the error).  All are checked before any is written."""
    def leaves(inputs):
        return [v for v in inputs if v.is_parameter or v.is_constant]
    mine, theirs = leaves(mine), leaves(theirs)
    if len(mine) != len(theirs) or any(
            a.is_parameter != b.is_parameter or tuple(a.shape) != tuple(b.shape) or
            np.dtype(a.dtype) != np.dtype(b.dtype) for a, b in zip(mine, theirs)):
        pairs = "; ".join(f"{a!r} and {b!r}" for a, b in zip(mine, theirs) if
                          a.is_parameter != b.is_parameter or tuple(a.shape) != tuple(b.shape)
                          or np.dtype(a.dtype) != np.dtype(b.dtype)) or \
            f"{len(mine)} constants and parameters and {len(theirs)}"
        raise ValueError(f"Function '{shown}' being restored is not equivalent (isomorphic) to "
                         f"the Function '{loaded}' loaded from checkpoint ({pairs})")
    values = [b.variable.d.copy() for b in theirs]
    for a, value in zip(mine, values):
        a.variable.d = value
