"""The writer of CNTK v2 model files' entries (:mod:`._cntk_write` drives it over the graph):
the leaves (inputs, parameters, constants, placeholders), the primitive functions with CNTK's
uids, the block functions (layers, the blocks CNTK 2.7 builds for one op, a recurrent step's
block) and the per-value axes (the batch axis, a sequence's).

Example:
    >>> w = Writer(set(), lambda v: "")
    >>> w.function("Plus", ["Input1", "Input2"])
    'Plus1'
"""

from __future__ import annotations

import itertools
from typing import Callable, Sequence

import numpy as np

from ..graph import FREE_DIMENSION, Variable, free_dimensions
from . import _cntk_write_proto as P
from ._cntk_format import OP_NAMES, read_order
from ._cntk_write_graph import Block, CntkWriteUnsupported
from ._cntk_write_loaded import LOADED_OPS, as_loaded

__all__ = ["Writer", "COMPOSITE_VERSION", "DEFAULT_SEQUENCE_AXIS", "BATCH_AXIS"]

# CNTK 2.7's PrimitiveOpType ids, by the op names the reader decodes them to
_OP = {name: k for k, name in OP_NAMES.items()}
_FUNCTION_VERSION, _VARIABLE_VERSION, COMPOSITE_VERSION = 24, 1, 3
_KIND = {"input": 0, "parameter": 2, "constant": 3}
#: CNTK's batch axis, as a file stores it
BATCH_AXIS = P.axis(P.STATIC_AXIS_DYNAMIC, "defaultBatchAxis", False)
DEFAULT_SEQUENCE_AXIS = "defaultDynamicAxis"
_SEQUENCE_AXIS = P.axis(P.STATIC_AXIS_DYNAMIC, DEFAULT_SEQUENCE_AXIS, True)
# (what CNTK 2.7 stores for the axes of a placeholder not yet bound: its UnknownAxes marker)
_UNKNOWN_AXES = P.axis(P.STATIC_AXIS_DYNAMIC - 2, "UnknownAxes", False)


# the ops that broadcast their operands as CNTK's element-wise ops do
_BROADCASTING = frozenset(("add2", "sub2", "mul2", "div2", "maximum2", "minimum2"))


class Writer:
    """The entries of one file being written (see the module's docstring)."""

    def __init__(self, batched: set[int], name_of: Callable[[Variable], str]):
        self.count = itertools.count(1)
        self.uids: dict[int, str] = {}            # id(Variable) -> its uid in the file
        self.batched = batched                    # ids of the Variables with the batch axis
        self.sequences: set[int] = set()          # ids of those with a sequence axis too
        self.name_of = name_of
        self.leaves: list[dict] = []
        self.functions: list[dict] = []
        self.sparse: set[int] = set()             # ids of the inputs declared sparse
        self.untyped: set[int] = set()            # ids of the inputs written as placeholders
        self.untyped_names: dict[int, str] = {}   # (and the names they are written with)
        self.folded: dict[int, Variable] = {}      # id(a leaf reshaped) -> the leaf
        self.auto_padded: dict[int, tuple] = {}   # id(a padded input) -> its axes padded
        self.ceil_pooled: set[int] = set()        # ids of pooled inputs with ceilOutDim
        self.inside_means: set[int] = set()       # ids of pooled inputs averaged inside only
        self.moved_top_k: dict[int, tuple] = {}   # id(top_k_data) -> (axis, shown values)
        self.fused: dict[int, object] = {}        # id(a node) -> the node written in its place
        self.crops: dict[int, list] = {}          # id(a fused crop's output) -> its nodes
        self.made_by: dict[int, tuple] = {}       # id(a value) -> (CNTK op, inputs) shown
        self.layer_name = ""                      # the name of the layer a rule's value makes
        self.layer: Block | None = None           # the layer a rule writes inside (None: none)
        self.step_kind = ""                       # the step block a recurrence's step's ops
        #                                           are written in ("LSTM", "RNNStep"; "": none)
        self.axis_names: dict[int, str] = {}      # id(a sequence a rule put on a new axis) ->
        #                                           the axis' name (Where's)
        self.readers: dict[int, list] = {}        # id(a value) -> the ops reading it
        self.roots: set[int] = set()              # ids of the values written as outputs
        self.shown_blocks: set[int] = set()       # ids of the values the caller shows a block
                                                  # making (CNTK's Python-built criteria)
        self.named_axis: Callable[[Variable], "str | None"] = lambda v: None   # the caller's
        #                                           name of a sequence's axis (None: default)
        self.output_counts: dict[str, int] = {}   # a recurrent block's uid -> its outputs
        self.step_blocks: dict[int, str] = {}     # id(a loaded recurrence) -> its step's block
        self.block_of: Callable[[Variable], "tuple | None"] = lambda v: None   # the layer
        #                                           (CNTK block) making a value, as the
        #                                           writer's caller marks it (a cell a step
        #                                           function applies)
        self.loaded: "tuple | None" = None        # (op, attributes) the file the value a
        #                                           rule writes was loaded from gave it
        self.output_uids: dict[str, list] = {}    # a rule's function uid -> the uids of the
        #                                           op's outputs, where not its own outputs'
        #                                           (a step function's states, by their ops)

    def whole(self, ends: Sequence[str]) -> "str | None":
        """The function whose outputs are ``ends``, all of them in order (it is then the
        file's root), or None (an LSTM block's h alone: its c too is an output)."""
        made = ends[0].rpartition("_Output_")[0]
        n = self.output_counts.get(made, len(ends))
        return made if list(ends) == [f"{made}_Output_{k}" for k in range(n)] else None

    def output_uid(self, made: str, k: int) -> str:
        """The uid of output ``k`` of the op a rule wrote as the function ``made``: its own
        ``<made>_Output_<k>``, or the one the rule gave (:attr:`output_uids`)."""
        given = self.output_uids.get(made)
        return given[k] if given is not None else f"{made}_Output_{k}"

    def note_readers(self, nodes, outputs) -> None:
        """Record which ops read each value of ``nodes`` and which values are ``outputs``."""
        for n in nodes:
            for i in n.inputs:
                if i is not None:
                    self.readers.setdefault(id(i), []).append(n.spec.name)
        self.roots = {id(v) for v in outputs}

    def aligned_for_broadcast(self, x, out, nb: int) -> bool:
        """Whether ``out`` is ``x`` (``nb`` batch axes first) with axes of 1 put before its
        sample axes, read only by ops that broadcast as CNTK's element-wise ops do (which
        align a shorter operand so themselves) and no output."""
        old, new = tuple(x.shape[nb:]), tuple(out.shape[nb:])
        return len(new) > len(old) and new[len(new) - len(old):] == old and \
            set(new[:len(new) - len(old)]) == {1} and id(out) not in self.roots and \
            set(self.readers.get(id(out), ())) <= _BROADCASTING

    @property
    def layer_kind(self) -> str:
        """The kind of the layer a rule writes inside (its CNTK op name), "" outside layers."""
        return self.layer.op_name if self.layer is not None else ""

    @property
    def in_layer(self) -> bool:
        """Whether a rule writes inside a layer."""
        return self.layer is not None

    @property
    def layer_options(self) -> dict:
        """What the caller says of the layer a rule writes inside (:class:`Block`'s options)."""
        return self.layer.options if self.layer is not None else {}

    # -- leaves ------------------------------------------------------------------------------
    def leaf(self, v: Variable, kind: str, name: str) -> str:
        if kind == "input" and id(v) in self.untyped:
            return self._untyped_argument(v, name)
        uid = f"{kind.capitalize()}{next(self.count)}"
        self.uids[id(v)] = uid
        free = free_dimensions(v)      # (CNTK's FreeDimension: each minibatch's length)
        shape = tuple(FREE_DIMENSION if k in free else d
                      for k, d in enumerate(v.shape))[self.lead(v):] \
            if kind == "input" else v.shape
        entry = {"version": P.size_t(_VARIABLE_VERSION), "uid": P.text(uid),
                 "type": P.text("Variable"), "kind": P.size_t(_KIND[kind]),
                 "name": P.text(name), "shape": P.shape(shape),
                 "data_type": P.size_t(_dtype_id(v)),
                 "is_sparse": P.boolean(kind == "input" and id(v) in self.sparse),
                 # (an input made with needs_gradient=True keeps it, as in CNTK 2.7's files)
                 "needs_gradient": P.boolean(kind == "parameter"
                                             or (kind == "input" and bool(v.need_grad))),
                 "dynamic_axis": P.vector(self.dynamic_axes(v) if kind == "input" else [])}
        if kind != "input":
            entry["value"] = P.array(np.asarray(v.d).reshape(shape))
        self.leaves.append(entry)
        return uid

    def _untyped_argument(self, v: Variable, name: str, keep_uid: bool = True) -> str:
        """An argument of a Function saved before it was given types (an untyped
        ``@C.Function``): as CNTK 2.7 writes one, a placeholder named after it, of an unknown
        shape, data type and dynamic axes, whatever operands the graph was built for."""
        uid = f"Placeholder{next(self.count)}"
        if keep_uid:
            self.uids[id(v)] = uid
            self.untyped_names[id(v)] = name
        self.leaves.append({"version": P.size_t(_VARIABLE_VERSION), "uid": P.text(uid),
                            "type": P.text("Variable"), "kind": P.size_t(4),
                            "name": P.text(name), "shape": P.shape((-2,)),
                            "data_type": P.size_t(0), "is_sparse": P.boolean(False),
                            "needs_gradient": P.boolean(False),
                            "dynamic_axis": P.vector([_UNKNOWN_AXES])})
        return uid

    def tuple_block(self, arguments: Sequence[Variable]) -> None:
        """The ``Tuple`` block CNTK 2.7's ``@C.Function`` puts its untyped ``arguments`` (the
        placeholders written for them, in the signature's order) through where its graph meets
        them in another order (``h(w, x) = times(x, w) + ...``): inside, a placeholder named
        after each and a ``Combine`` of them; its outputs, listed as placeholders named by
        their uids as CNTK 2.7 lists them, are what the graph reads from then on."""
        outer = [self.uids[id(v)] for v in arguments]
        inner = [self._untyped_argument(v, self.untyped_names.get(id(v), ""), keep_uid=False)
                 for v in arguments]
        combine = self.function("Combine", inner)
        uid = f"Block{next(self.count)}"
        for k, v in enumerate(arguments):
            self.leaves.append({"version": P.size_t(_VARIABLE_VERSION),
                                "uid": P.text(f"{uid}_Output_{k}"), "type": P.text("Variable"),
                                "kind": P.size_t(4), "name": P.text(""),
                                "shape": P.shape((-2,)), "data_type": P.size_t(0),
                                "is_sparse": P.boolean(False),
                                "needs_gradient": P.boolean(False),
                                "dynamic_axis": P.vector([_UNKNOWN_AXES])})
            self.uids[id(v)] = f"{uid}_Output_{k}"
        self._block_function("Tuple", "", [], inner, outer, combine + "_Output_0", uid=uid)

    def tuple_of(self, values: Sequence[tuple]) -> list[str]:
        """The ``Tuple`` block CNTK 2.7's ``@C.Function`` (a layer's, ``UnfoldFrom``'s) puts the
        values it is applied to through, ``values``: ``(Variable, uid)`` in the signature's
        order; inside, a ``Combine`` of a placeholder for each (named after the input it
        stands for; a constant or parameter read as itself, a leaf of the block). Returns
        the block's outputs' uids, one per value."""
        kinds = {e["uid"].value: e for e in self.leaves}
        inner, leaves, keys, mapped = [], [], [], []
        for v, uid in values:
            entry = kinds.get(uid)
            if entry is not None and entry["kind"].value in (2, 3):
                inner.append(uid)
                leaves.append(uid)
                continue
            named = entry["name"].value if entry is not None and entry["kind"].value == 0 \
                else ""
            keys.append(self.placeholder(v, name=named))
            inner.append(keys[-1])
            mapped.append(uid)
        combine = self.function("Combine", inner) + "_Output_0"
        made = self._block_function("Tuple", "", leaves, keys, mapped, combine)
        made = made.rpartition("_Output_")[0]
        return [f"{made}_Output_{k}" for k in range(len(values))]

    def placeholder(self, v: Variable, uid: str | None = None, axes_of=None,
                    name: str = "") -> str:
        """The placeholder standing for the argument ``v`` inside a block; ``uid``: an output
        read before the function computing it is written (a recurrence's delayed output:
        CNTK 2.7 lists it so, a placeholder named by the output's uid); ``axes_of``: the value
        whose dynamic axes it has, where not ``v``'s (a recurrence's state: its input
        sequence's, which may be on a named sequence axis); ``name``: its name (a ``Tuple``
        block's, the input's it stands for)."""
        if uid is None and id(v) in self.untyped:    # (a block applied to such an argument:
            # CNTK 2.7 names the block's placeholder after the argument)
            return self._untyped_argument(v, self.untyped_names.get(id(v), ""), keep_uid=False)
        uid = uid or f"Placeholder{next(self.count)}"
        self.leaves.append({"version": P.size_t(_VARIABLE_VERSION), "uid": P.text(uid),
                            "type": P.text("Variable"), "kind": P.size_t(4),
                            "name": P.text(name), "shape": P.shape(v.shape[self.lead(v):]),
                            "data_type": P.size_t(_dtype_id(v)), "is_sparse": P.boolean(False),
                            "needs_gradient": P.boolean(False),
                            "dynamic_axis": P.vector(self.dynamic_axes(
                                v if axes_of is None else axes_of))})
        return uid

    def block(self, b, root: str, arguments: list[str]) -> str:
        """The block function of the layer ``b`` whose body computes ``root`` (an output uid)
        from its placeholders; returns the block's output uid."""
        keys = [b.placeholders[id(a)] for a in b.arguments if id(a) in b.placeholders]
        values = [u for a, u in zip(b.arguments, arguments) if id(a) in b.placeholders]
        return self._block_function(b.op_name, b.name, b.leaves, keys, values, root)

    def fixed_block(self, op_name: str, name: str, ins: Sequence[Variable],
                    uids: Sequence[str], constants: Sequence[float], body,
                    attributes: dict | None = None, composite_name: str = "") -> str:
        """A block CNTK 2.7 builds for one op (``element_divide``'s
        ``ElementDivide``, ``element_and``'s ``And``): a placeholder for each of ``ins``
        (read as ``uids`` outside), the scalar ``constants`` as the block's leaves, and the
        functions ``body(writer, placeholders, constants, name)`` adds (returning its root's
        output uid); ``attributes``: the block function's own (a reduction's axes); returns
        the block function's uid (as :meth:`function` does); ``composite_name``: the name of
        the block's composite (``MultiAxisReduce``'s ``_static_axes_subop``)."""
        placeholders = [self.placeholder(v) for v in ins]
        leaves = [self.constant(c, ins[0]) for c in constants]
        root = body(self, placeholders, leaves, name)
        out = self._block_function(op_name, name, leaves, placeholders, list(uids), root,
                                   attributes, composite_name)
        return out.rpartition("_Output_")[0]

    def _block_function(self, op_name: str, name: str, leaves: Sequence[str],
                        keys: Sequence[str], values: Sequence[str], root: str,
                        attributes: dict | None = None, composite_name: str = "",
                        uid: str | None = None) -> str:
        uid = uid or f"Block{next(self.count)}"
        composite = {"version": P.size_t(COMPOSITE_VERSION),
                     "type": P.text("CompositeFunction"),
                     "root": P.text(root.rpartition("_Output_")[0]),
                     "uid": P.text(f"CompositeFunction{next(self.count)}")}
        if composite_name:
            composite["name"] = P.text(composite_name)
        entry = {"version": P.size_t(_FUNCTION_VERSION), "type": P.text("PrimitiveFunction"),
                 "uid": P.text(uid), "op": P.size_t(57),
                 "inputs": P.vector([P.text(i) for i in list(leaves) + list(values)]),
                 "attributes": P.dictionary(attributes or {}),
                 "block_function_op_name": P.text(op_name),
                 "block_function_composite": P.dictionary(composite),
                 "block_function_composite_arguments_map_keys": P.vector(P.text(k) for k in keys),
                 "block_function_composite_arguments_map_values":
                     P.vector(P.text(v) for v in values)}
        if name:
            entry["name"] = P.text(name)
        self.functions.append(entry)
        return uid + "_Output_0"

    def recurrent_block(self, op_name: str, x, x_uid: str, leaves: Sequence[str],
                        delayed: Sequence[tuple], body, computed: Sequence[tuple] = (),
                        read_order: bool = False) -> str:
        """A block CNTK 2.7 builds for one recurrent step (``LSTM`` inside ``Recurrence``)
        over the input ``x`` (read as ``x_uid``) and the ``leaves`` (parameters' uids its body
        reads): each output read back through a delay (``delayed``: per output, ``(delay op,
        offset, initial value's uid, the value giving the output's shape)``), written before
        the block, whose uid is so taken first; a placeholder for each delayed output and for
        ``x``; ``body(writer, x's placeholder, the states' placeholders)`` adds the step and
        returns its root function's output uid; ``computed``: ``(value, uid)`` of the values
        the step reads that are computed from no sequence (a Stabilizer's ``softplus`` of its
        parameter), written before the block, their functions read inside its composite as
        CNTK 2.7 writes its ``Stabilizer`` block inside the step's (``body`` then gets
        ``{id(value): uid}`` as a fourth argument; the block's inputs have their parameters
        and constants, CNTK 2.7 listing them where the walk meets them: ``RNNStep``'s
        ``[W, H, alpha, b]``; before mendB34 each was read through a placeholder of the block,
        a mapped value listed after its parameters);
        ``read_order``: the ``leaves`` listed in the order the body reads them (:meth:`read_order`)
        rather than as given.  Returns the block's uid (its outputs ``<uid>_Output_<k>``)."""
        uid = f"Block{next(self.count)}"
        for k, (*_, like) in enumerate(delayed):       # (on x's sequence axis: CNTK 2.7
            self.placeholder(like, f"{uid}_Output_{k}", x)  # refuses a Plus of two axes)
        delays = [self.function(op, [f"{uid}_Output_{k}", initial], {"offset": P.size_t(offset)})
                  + "_Output_0" for k, (op, offset, initial, _) in enumerate(delayed)]
        states = [self.placeholder(like, axes_of=x) for *_, like in delayed]
        argument = self.placeholder(x)
        root = body(self, argument, states, {id(v): u for v, u in computed}) \
            if computed else body(self, argument, states)
        if computed:        # (their functions inside the composite: its parameters and
            kept = {e["uid"].value for e in self.leaves if e["kind"].value in (2, 3)}
            kept.difference_update(leaves)                              # constants too)
            leaves = list(leaves) + [u for u in self._walked(root) if u in kept]
        if read_order:
            leaves = self.read_order(root, leaves)
        self._block_function(op_name, "", list(leaves), states + [argument],
                             delays + [x_uid], root, uid=uid)
        self.output_counts[uid] = len(delayed)
        return uid

    def read_order(self, root: str, leaves: Sequence[str]) -> list[str]:
        """``leaves`` in the order a walk from the function of ``root`` (an output uid) reads
        them, each function's inputs in turn, depth first: the order CNTK 2.7 gives a block's
        parameters and constants, whatever its file lists (it recomputes the block's inputs
        from its composite as it loads it: ``PrimitiveFunction.cpp:1255-1277``, the block's
        ``DetermineInputs`` over ``composite->Inputs()``, ``BlockFunction.h:98-117``,
        ``CompositeFunction.h:150-174`` and ``235-249``); those it never reaches last."""
        order = self._walked(root)
        wanted, walked = set(leaves), set(order)
        return [u for u in order if u in wanted] + [u for u in leaves if u not in walked]

    def constants_read(self, root: str) -> list[str]:
        """The parameters and constants a walk from the function of ``root`` (an output uid)
        meets, in order: a block's leaves, those its rules wrote as well (a GRU cell's 1 of
        ``1 - z``)."""
        kinds = {e["uid"].value: e["kind"].value for e in self.leaves}
        return [u for u in self._walked(root) if kinds.get(u) in (2, 3)]

    def _walked(self, root: str) -> list[str]:
        """The leaves a walk from the function of ``root`` (an output uid) meets, in order
        (:func:`._cntk_format.read_order` over the functions written so far)."""
        by_uid = {f["uid"].value: f for f in self.functions}

        def inputs_of(uid: str) -> list[str] | None:
            f = by_uid.get(uid)
            return None if f is None else [i.value for i in f["inputs"].value]
        return read_order(root.rpartition("_Output_")[0], inputs_of)

    def drop_leaf(self, uid: str) -> None:
        """Leave out the leaf ``uid`` a rule read but CNTK's form does not (the constant a
        shaped random draw is "like"), unless a function already reads it."""
        if any(uid in (i.value for i in f["inputs"].value) for f in self.functions):
            return
        self.leaves = [e for e in self.leaves if e["uid"].value != uid]
        for k in [k for k, u in self.uids.items() if u == uid]:
            del self.uids[k]

    def constant(self, value, like: Variable) -> str:
        """A Constant made by the writer (a scalar op's operand)."""
        dtype = np.float64 if str(like.dtype).endswith("float64") else np.float32
        uid = f"Constant{next(self.count)}"
        arr = np.asarray(value, dtype)
        self.leaves.append({"version": P.size_t(_VARIABLE_VERSION), "uid": P.text(uid),
                            "type": P.text("Variable"), "kind": P.size_t(3),
                            "name": P.text(""), "shape": P.shape(arr.shape),
                            "data_type": P.size_t(2 if dtype is np.float64 else 1),
                            "is_sparse": P.boolean(False), "needs_gradient": P.boolean(False),
                            "dynamic_axis": P.vector([]), "value": P.array(arr)})
        return uid

    # -- functions ---------------------------------------------------------------------------
    def function(self, op: str, inputs: Sequence[str], attributes: dict | None = None,
                 name: str = "") -> str:
        """Add one primitive function; returns its output's uid (``<uid>_Output_0``).  The
        first function of the op the value a rule writes was loaded as (:attr:`loaded`) is
        written with the file's attributes (:func:`._cntk_write_loaded.as_loaded`)."""
        uid = f"{op}{next(self.count)}"
        if self.loaded is not None and self.loaded[0] == op and op in LOADED_OPS:
            attributes, self.loaded = as_loaded(op, attributes or {}, self.loaded[1]), None
        entry = {"version": P.size_t(_FUNCTION_VERSION), "type": P.text("PrimitiveFunction"),
                 "uid": P.text(uid), "op": P.size_t(_OP[op]),
                 "inputs": P.vector([P.text(i) for i in inputs]),
                 "attributes": P.dictionary(attributes or {})}
        if name:
            entry["name"] = P.text(name)
        self.functions.append(entry)
        return uid

    def lead(self, v) -> int:
        """How many leading axes of ``v`` are CNTK's dynamic axes: 2 for a value on a sequence
        (batch, then sequence axis, Stadyn's layout), 1 with the batch axis, else 0."""
        if id(v) in self.sequences or getattr(v, "lead", 0) == 2:
            return 2
        return 1 if id(v) in self.batched or getattr(v, "batched", False) else 0

    def dynamic_axes(self, v) -> list:
        """CNTK's dynamic axes of ``v`` as a file stores them (the sequence axis first)."""
        lead = self.lead(v)
        if lead == 2 and self.sequence_axis_name(v) != DEFAULT_SEQUENCE_AXIS:
            return [P.axis(P.STATIC_AXIS_DYNAMIC, self.sequence_axis_name(v), True), BATCH_AXIS]
        return [_SEQUENCE_AXIS, BATCH_AXIS][2 - lead:]

    def sequence_axis_name(self, v) -> str:
        """The name of the sequence axis of ``v`` (a sequence): the one a rule put the
        sequence it made on (:attr:`axis_names`: ``Where``'s new axis, a slice's derived one),
        else that of the sequence it is computed from; CNTK's default axis for an input."""
        walked, name = [], DEFAULT_SEQUENCE_AXIS
        while True:
            if id(v) in self.axis_names:
                name = self.axis_names[id(v)]
                break
            walked.append(v)
            parent = getattr(v, "parent", None)
            ahead = [i for i in parent.inputs if id(i) in self.sequences] if parent else []
            if not ahead:
                break
            v = ahead[0]
        for u in walked:            # (the graph's values, which live while the file is
            if isinstance(u, Variable):     # written: each walked once)
                self.axis_names[id(u)] = name
        return name

    def static_rank(self, v: Variable) -> int:
        return len(v.shape) - self.lead(v)

    def static_axis_index(self, v: Variable, python_axis: int) -> int:
        """CNTK's stored (column-major) index of the axis ``python_axis`` of ``v`` (counted
        with the batch axis, as Stadyn's ops count it)."""
        nb = self.lead(v)
        a = python_axis % len(v.shape)
        if a < nb:
            raise CntkWriteUnsupported("an op along the batch axis", "CNTK's static axes only")
        return len(v.shape) - 1 - a


def _dtype_id(v: Variable) -> int:
    return 2 if str(v.dtype).endswith("float64") else 1
