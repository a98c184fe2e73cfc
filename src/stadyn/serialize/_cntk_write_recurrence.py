"""``Recurrence`` of a step the writer writes op by op (``RNNStep``, ``LSTM`` with
``return_full_state``, a step function of the user's): the catalog's ``recurrence`` as CNTK 2.7
writes it -- the step's ops inside a block (``RNNStep``, ``LSTM``: the step layer's op name;
several states a ``Combine`` of them as the block's root, one output each) over a placeholder
of the delayed states and one of the input sequence, each state read back through
``PastValue`` (``FutureValue`` going backwards) of its output with its initial state, as
``_cntk_write_more``'s LSTM and GRU recurrences are; a step function's ops as they are, each
delay reading the op that makes its state, an ``LSTM``, ``GRU`` or ``RNNStep`` cell it applies
as the cell's block inside the loop (:class:`_StepCells`).  The step's ops are written by the
writer's own rules (``rules``: the table of ``_cntk_write``), their values batched (one step of
a sequence: the placeholders carry the sequence axes).

An initial state is the delay's second input as CNTK 2.7 writes it: a scalar, a value per
element of the state (``initial_state=C.constant([1, 2, 3, 4])``: ``Constant`` of ``(4,)``),
or a value computed outside the loop (``C.tanh(...)``: the delay reads its ``Tanh``).
``UnfoldFrom``'s recurrence (the compat's, or a loaded file's loop of its form:
:func:`._legacy_loops.is_unfold_loop`) is written as CNTK 2.7 builds ``UnfoldFrom``; another
step that reads no input sequence is refused: CNTK 2.7's ``Recurrence`` refuses to build one
("Function 'step' has 1 unused arguments (x)"), and the file would hold a loop along no
sequence.

Example:
    >>> sorted(STEP_BLOCKS), sorted(SEVERAL_OUTPUTS)
    (['LSTM', 'RNNStep'], ['recurrence'])
"""

from __future__ import annotations

from . import _cntk_write_proto as P
from ._cntk_write_graph import Block, CntkWriteUnsupported, find_blocks, key, several_outputs, \
    walk, write_block_of_outputs
from ._cntk_write_more import _Step
from ._legacy_loops import is_unfold_loop

__all__ = ["recurrence_rule", "bias_last_sums", "bias_last_sum", "per_sequence_initials",
           "STEP_BLOCKS", "SEVERAL_OUTPUTS"]

#: the steps CNTK 2.7 writes as a block inside the recurrence (by the step layer's op name)
STEP_BLOCKS = frozenset({"RNNStep", "LSTM"})
#: the ops of several outputs this module's rule writes (a recurrence's states, with
#: ``return_full_state``: one output of the step's block, or its ops', each)
SEVERAL_OUTPUTS = frozenset({"recurrence"})


def _gate_slice(w, ins, uids, attrs, out, name):
    """A step's ``slice`` of one range of one axis of a sample (an LSTM step layer's gates,
    cut from its one product): CNTK's ``Slice`` along that static axis, as CNTK 2.7's LSTM
    block writes each gate.  The catalog's ranges are those of the trailing axes."""
    x = ins[0]
    n = len(attrs["start"])
    steps = attrs["step"] or (1,) * n
    cut = []
    for k, (b, e, s) in enumerate(zip(attrs["start"], attrs["stop"], steps)):
        axis = len(x.shape) - n + k
        r = slice(b, e, s).indices(x.shape[axis])
        if r != (0, x.shape[axis], 1):
            cut.append((axis, *r))
    if len(cut) != 1 or cut[0][3] != 1:
        raise CntkWriteUnsupported("slice", "a step's slice of other than one range of one axis")
    axis, begin, end, _ = cut[0]
    return w.function("Slice", uids, {
        "axis": P.static_axis(w.static_axis_index(x, axis)), "beginIndex": P.integer(begin),
        "endIndex": P.integer(end), "sliceStrides": P.integer(1)}, name=name)


#: rules for the ops of an LSTM layer (the gates it slices from its one product, which the
#: compat shows as no CNTK op of its own), in a recurrence's step and, registered in
#: ``_cntk_write``'s table, where the layer is applied to values (``LSTM(3)(h, c, x)``)
STEP_RULES = {"slice": _gate_slice}


def per_sequence_initials(node) -> set:
    """The ids of the initial states of the ``recurrence`` ``node`` (or the fused LSTM's and
    GRU's; none for another op),
    which may be values per sequence (``RecurrenceFrom``'s, an input without the sequence
    axis): CNTK 2.7 writes each as its delay's second input, as for one value for all."""
    fused = {"cntk_lstm_sequence": (2, 3), "cntk_gru_sequence": (2,)}   # (h0, c0's places)
    name = getattr(getattr(node, "spec", None), "name", "")
    if name in fused:
        ins = node.spec.split_arguments(node.args, node.kwargs)[0]
        return {id(ins[k]) for k in fused[name] if ins[k] is not None}
    if name != "recurrence":
        return set()
    ins, attrs = node.spec.split_arguments(node.args, node.kwargs)
    step = attrs["step"]
    ins = [i for i in ins if i is not None]       # (the sequences' lengths first, if read)
    end = len(ins) - len(step.captured)
    return {id(i) for i in ins[end - len(step.states):end]}


def _check_initial(w, inits, states) -> None:
    """Refuse an initial state CNTK 2.7 does not write as a delay's second input."""
    for init, state in zip(inits, states):
        if id(init) in w.batched:
            # (a value per sequence, RecurrenceFrom's: CNTK 2.7's PastValue reads it as it
            # is, an input of the batch axis alone)
            if id(init) in w.sequences or w.lead(init) != 1 or \
                    tuple(init.shape[1:]) != tuple(state.shape[1:]):
                raise CntkWriteUnsupported("recurrence", "an initial state per sequence of "
                                                         "other than the state's shape")
            continue
        if init.size != 1 and tuple(init.shape) != tuple(state.shape[1:]):
            raise CntkWriteUnsupported("recurrence", "an initial state of other than one value "
                                                     "or one per element of the state")


def _step_adapters(nodes, step) -> set:
    """The ids of the reshapes among ``nodes`` that only turn one step of ``step`` into a
    sequence of one step (a state or an input sequence read as ``(B, 1, *s)``) or back (a new
    state ``(B, *s)`` of one): Stadyn's, not ops of CNTK's step, whose values are a step's."""
    given = {id(v) for v in list(step.states) + list(step.inputs)}
    results = {id(v) for v in step.outputs}
    found = set()
    for node in nodes:
        if node.spec.name != "reshape" or len(node.inputs) != 1 or node.outputs[0] is None:
            continue
        i, o = tuple(node.inputs[0].shape), tuple(node.outputs[0].shape)
        if (id(node.inputs[0]) in given and o == i[:1] + (1,) + i[1:]) or \
                (id(node.outputs[0]) in results and i == o[:1] + (1,) + o[1:]):
            found.add(id(node))
    return found


def _reads(nodes, outputs, v) -> bool:
    """Whether the step of ``nodes`` making ``outputs`` reads ``v`` (an op of it, or as a new
    state itself)."""
    return any(i is v for n in nodes for i in n.inputs) or any(o is v for o in outputs)


def bias_last_sums(nodes) -> dict:
    """``RNNStep``'s sum ``add2(affine(x, W, b), affine(h, H))`` in the step ``nodes``, which
    CNTK 2.7 writes ``Plus(Plus(Times(W, x), Times(H, h)), b)`` (``layers/blocks.py``'s
    ``RNNStep``: ``times(x, W) + times(dh, H) + b``), so that its file lists the parameters
    ``[W, H, b]``: {id(the biased affine node): its sum node}, where nothing else reads the
    biased product."""
    found = {}
    for n in nodes:
        if getattr(n, "spec", None) is None or n.spec.name != "add2":
            continue
        a, h = (i.parent for i in n.inputs[:2])
        if any(getattr(m, "spec", None) is None or m.spec.name != "affine" for m in (a, h)) \
                or len(a.inputs) != 3 or len(h.inputs) != 2:
            continue
        if sum(i is a.outputs[0] for m in nodes for i in m.inputs) == 1:
            found[id(a)] = n
    return found


def bias_last_sum(w, uids: list[str], bias: str, name: str = "") -> str:
    """Write the sum of :func:`bias_last_sums` as CNTK 2.7 writes it: ``Plus(Plus(x W, h H),
    b)`` of the products ``uids`` (``x W`` without its bias, ``h H``) and the ``bias``'s uid,
    the outer ``Plus`` named ``name``; returns its uid."""
    return w.function("Plus", [w.function("Plus", list(uids[:2])) + "_Output_0", bias],
                      name=name)


#: the cells CNTK 2.7 writes as their block where a step function applies one (and a
#: ``Dense``: ``cntk_user_gru_dense.model``'s Dense block over the GRU block in the loop)
CELL_BLOCKS = frozenset({"RNNStep", "LSTM", "GRU", "Dense"})


class _StepCells:
    """The cells (:data:`CELL_BLOCKS`) a user's step function applies, in the ``nodes`` of its
    step, which CNTK 2.7 writes as the cell's block inside the loop (``cntk_user_rnn.model``:
    an ``RNNStep`` block over the delayed state and ``x``; ``cntk_user2.model``: an ``LSTM``
    block of two outputs, a ``Combine`` of h and c its root; ``cntk_user_gru.model``: a
    ``GRU`` block, its constant 1 first), so that it lists their parameters as it lists its
    own file's (``[W, H, b]``, ``[b, W, H]``, ``[b, W, H, H1]``: it rebuilds a
    block's inputs by walking its composite).  ``made``: the uids of the step's values so far
    (states, sequences and the ``captured`` values' ids first), which the step's writing adds
    to; ``x``: the input sequence, whose axes a cell's placeholders have."""

    def __init__(self, w, nodes, made: dict, captured: set, x):
        def cell_of(v):
            found = w.block_of(v)
            return found if found is not None and found[0] in CELL_BLOCKS else None
        self.w, self.nodes, self.made, self.captured, self.x = w, nodes, made, captured, x
        self.blocks, self._scope = find_blocks(nodes, cell_of)
        self.members = several_outputs(self.blocks)
        self.where: dict[int, "Block | None"] = {}     # id(a value written) -> its cell

    def scope(self, node) -> "Block | None":
        """The cell ``node`` is inside (None: the step's own ops)."""
        return self._scope.get(key(node))

    def rnn_sums(self) -> dict:
        """:func:`bias_last_sums` of the ``RNNStep`` cells: CNTK 2.7's ``(x W + h H) + b``."""
        return {k: n for k, n in bias_last_sums(self.nodes).items()
                if getattr(self.scope(n), "op_name", "") == "RNNStep"}

    def read(self, i, here: "Block | None", op: str) -> str:
        """The uid of the value ``i`` read by an op inside the cell ``here`` (None: none): a
        cell's argument its placeholder, a captured value one of the cell's leaves."""
        if here is not None and id(i) in here.argument_ids:
            if id(i) not in here.placeholders:
                here.placeholders[id(i)] = self.w.placeholder(i, axes_of=self.x)
            return here.placeholders[id(i)]
        if id(i) not in self.made:
            raise CntkWriteUnsupported(op, "a value of a recurrence's step the writer cannot "
                                           "read")
        uid = self.made[id(i)]
        if here is not None and id(i) in self.captured:
            if uid not in here.leaves:
                here.leaves.append(uid)
        elif self.where.get(id(i)) is not here:
            raise CntkWriteUnsupported(op, "a value read across a layer's boundary")
        return uid

    def several(self, node) -> bool:
        """Whether ``node`` makes an output of a cell of several outputs (an ``LSTM``'s h or
        c), which is written whole, its block's root a ``Combine``, once its values are."""
        out = node.outputs[0]
        b = self.members.get(id(out))
        if b is None:
            return False
        if id(out) not in self.made and all(id(o.parent.inputs[0]) in self.made
                                            for o in b.outputs):
            for o, uid in zip(b.outputs, write_block_of_outputs(self.w, b, self.read, None,
                                                                read_order=True)):
                self.made[id(o)], self.where[id(o)] = uid, None
        return True

    def written(self, node) -> None:
        """Note ``node`` written; the output of a cell: its block, over its arguments."""
        out = node.outputs[0]
        self.where[id(out)] = self.scope(node)
        b = self.blocks.get(id(out))
        if b is None:
            return
        uid = self.made[id(out)]
        if "_Output_" not in uid or uid in b.placeholders.values():
            raise CntkWriteUnsupported(b.op_name, "a layer whose output is its input")
        # (with the constants its ops wrote: CNTK 2.7's GRU block lists its 1 first; a value
        # computed outside the loop, a self-stabilized cell's softplus of alpha, read inside
        # the block's composite, its parameters and constants the block's, as CNTK 2.7's
        # Stabilizer block inside the cell's: [W, H, alpha, b] for RNNStep)
        b.leaves[:] = self.w.read_order(uid, [u for u in b.leaves if "_Output_" not in u] + [
            u for u in self.w.constants_read(uid) if u not in b.leaves])
        self.made[id(out)] = self.w.block(b, uid, [self.read(a, None, b.op_name)
                                                   for a in b.arguments])
        self.where[id(out)] = None


def _unfold_from(w, ops, step, x_uid: str, init, init_uid: str, like, x, outside: set) -> str:
    """``UnfoldFrom``'s recurrence as CNTK 2.7 builds it (``cntk/layers/sequence.py``: its
    state a ``ForwardDeclaration`` resolved to ``reconcile_dynamic_axes(new_state, like)``;
    ``tests/fixtures/legacy/cntk_layers/UnfoldFrom.model``): a ``ReconcileDynamicAxis`` of
    the step's new state onto the sequence ``x`` (read as ``x_uid``), a ``PastValue`` named
    ``unfold_prev_state`` of it from the initial state, the step's ops (``ops``) on that;
    the new state, read before it is written, listed as a placeholder named by its uid; the
    initial state ``init`` and ``x`` read through the ``Tuple`` block of ``UnfoldFrom``'s
    ``@Function`` (``unfold_from(s0, dynamic_axes_like)``, whose walk meets them in the other
    order), so that CNTK 2.7 lists the arguments ``[s0, like]``.  Returns the uid of the
    function making the new state."""
    init_uid, x_uid = w.tuple_of([(init, init_uid), (x, x_uid)])
    later = f"Placeholder{next(w.count)}"
    reconciled = w.function("ReconcileDynamicAxis", [later, x_uid])
    delayed = w.function("PastValue", [reconciled + "_Output_0", init_uid],
                         {"offset": P.size_t(1)}, name="unfold_prev_state")
    (root,) = ops(w, {id(step.states[0]): delayed + "_Output_0"})
    if "_Output_" not in root or root in outside or root == delayed + "_Output_0":
        raise CntkWriteUnsupported("recurrence", "a step whose new state is what it reads")
    entry = next(f for f in w.functions if f["uid"].value == reconciled)
    entry["inputs"] = P.vector([P.text(root), P.text(x_uid)])
    w.placeholder(like, root, x)
    return root.rpartition("_Output_")[0]


def recurrence_rule(rules: dict, different: dict):
    """The writer's rule for ``recurrence`` over the ops of ``rules`` (the writer's table,
    :data:`STEP_RULES` included; those of ``different``, which CNTK computes otherwise,
    refused) as they stand now: a copy, without the ``recurrence`` the table gets from this
    rule, so a recurrence nested in a step is refused."""
    rules = dict(rules)

    def rule(w, ins, uids, attrs, out, name):
        step = attrs["step"]
        n_seq = int(attrs.get("n_sequences", 1))
        n_states = len(step.states)
        if len(ins) != n_seq + n_states + len(step.captured):
            raise CntkWriteUnsupported("recurrence", "inputs the writer cannot read")
        x, inits, init_uids = ins[0], ins[n_seq:n_seq + n_states], uids[n_seq:n_seq + n_states]
        if any(w.lead(v) != 2 for v in ins[:n_seq]):
            raise CntkWriteUnsupported("recurrence", "an input that is no sequence")
        _check_initial(w, inits, step.outputs)
        captured = dict(zip((id(c) for c in step.captured), uids[n_seq + n_states:]))
        nodes = walk(step.outputs, w.cntk_op_of, frozenset(rules))
        for node in nodes:
            if node.spec.name in different:
                raise CntkWriteUnsupported(node.spec.name, different[node.spec.name])
            if node.spec.name not in rules or len([o for o in node.outputs
                                                   if o is not None]) > 1:
                raise CntkWriteUnsupported(node.spec.name, "an op of a recurrence's step the "
                                                           "writer has no rule for")
        op_name = w.step_blocks.get(id(out.parent)) or w.step_op_of(out)
        reads_input = any(_reads(nodes, step.outputs, v) for v in step.inputs)
        # (UnfoldFrom's, noted by the compat, or a loaded file's loop of its form)
        unfold = op_name == "UnfoldFrom" or is_unfold_loop(out)
        if unfold and (n_seq != 1 or n_states != 1 or attrs.get("go_backwards")):
            raise CntkWriteUnsupported("recurrence", "an UnfoldFrom of other than one state")
        if not unfold and not reads_input:
            raise CntkWriteUnsupported("recurrence", "a step that reads no input sequence "
                                                     "(CNTK 2.7's Recurrence refuses one: "
                                                     "'has 1 unused arguments')")
        likes = [_Step((1, 1) + tuple(s.shape[1:]), x.dtype) for s in step.outputs]
        adapters = _step_adapters(nodes, step)
        delay = "FutureValue" if attrs.get("go_backwards") else "PastValue"

        def ops(w_, reads: dict, cells: bool = False) -> list:
            # the step's ops, ``reads``: id(a value of the step) -> its uid; returns the uid of
            # each new state; ``cells``: a cell the step applies (a step function's) written
            # as its block inside the loop (_StepCells)
            made = {**captured, **reads}
            for v in [o for n in nodes for o in n.outputs if o is not None] + \
                    list(step.states) + list(step.inputs):
                w_.batched.add(id(v))       # (one step: its sequence axes the placeholders')
            w_.step_kind = op_name or ""    # (an LSTM's bias first, as CNTK 2.7 writes it)
            layer = _StepCells(w_, nodes, made, set(captured), x) if cells else None
            sums = bias_last_sums(nodes) if op_name == "RNNStep" else \
                layer.rnn_sums() if layer is not None else {}
            biases = {}                     # (id(the sum's node) -> the bias it adds last)
            try:
                for node in nodes:
                    if id(node) in adapters and id(node.inputs[0]) in made:
                        made[id(node.outputs[0])] = made[id(node.inputs[0])]
                        continue            # (one step as a sequence of one: no op of CNTK's)
                    if layer is not None and layer.several(node):
                        continue            # (a cell of several outputs: written whole)
                    here = layer.scope(node) if layer is not None else None
                    n_ins, n_attrs = node.spec.split_arguments(node.args, node.kwargs)
                    n_ins = [i for i in n_ins if i is not None]
                    if layer is not None:
                        n_uids = [layer.read(i, here, node.spec.name) for i in n_ins]
                    elif any(id(i) not in made for i in n_ins):
                        raise CntkWriteUnsupported(node.spec.name, "a value of a recurrence's "
                                                                   "step the writer cannot read")
                    else:
                        n_uids = [made[id(i)] for i in n_ins]
                    if id(node) in sums:            # (x W, its bias added after h H)
                        biases[id(sums[id(node)])] = n_uids.pop()
                        n_ins = n_ins[:2]
                    w_.layer = here                 # (an LSTM cell's bias first)
                    if id(node) in biases:
                        written = bias_last_sum(w_, n_uids, biases[id(node)])
                    else:
                        written = rules[node.spec.name](w_, n_ins, n_uids, n_attrs,
                                                        node.outputs[0], "")
                    w_.layer = None
                    made[id(node.outputs[0])] = n_uids[0] if written is None else \
                        written + "_Output_0"
                    if layer is not None:
                        layer.written(node)
            finally:
                w_.step_kind = ""
                w_.layer = None
            return [made[id(s)] for s in step.outputs]

        if unfold:
            return _unfold_from(w, ops, step, uids[0], inits[0], init_uids[0], likes[0], x,
                                set(captured.values()))
        if op_name in STEP_BLOCKS and n_seq == 1:
            # (CNTK 2.7's block of the step layer, its outputs delayed; several: a Combine of
            # them the block's root)
            def body(w_, p_x, states, inner=None):
                reads = {id(s): p for s, p in zip(step.states, states)}
                roots = ops(w_, {**reads, **(inner or {}), id(step.inputs[0]): p_x})
                return roots[0] if len(roots) == 1 else \
                    w_.function("Combine", roots) + "_Output_0"
            # (the captured values computed from no sequence, not leaves: their functions
            # read inside the block's composite, as CNTK 2.7's Stabilizer block)
            outer = list(zip(step.captured, uids[n_seq + n_states:]))
            computed = [(c, u) for c, u in outer if "_Output_" in u]
            return w.recurrent_block(op_name, x, uids[0],
                                     [u for _, u in outer if "_Output_" not in u],
                                     [(delay, 1, i, like) for i, like in zip(init_uids, likes)],
                                     body, computed, read_order=True)
        # a step function's ops as they are, each delay reading the op making its state (a
        # placeholder named by that output's uid, as CNTK 2.7 lists a value read before it is
        # written), the ops reading each input sequence itself (several: CNTK 2.7's loop of
        # PastValue over ops of them all, closed by replace_placeholders)
        # (a state the step does not read, an op's output a loop closed by
        # replace_placeholders carries: no delay, as CNTK 2.7 writes none)
        read = [_reads(nodes, (), s) for s in step.states]
        laters = [f"Placeholder{next(w.count)}" if r else None for r in read]
        delayed = [w.function(delay, [later, i], {"offset": P.size_t(1)}) if later else None
                   for later, i in zip(laters, init_uids)]
        reads = {id(s): d + "_Output_0" for s, d in zip(step.states, delayed) if d}
        sequences = dict(zip((id(v) for v in step.inputs), uids[:n_seq]))
        roots = ops(w, {**reads, **sequences}, cells=True)
        outside = {*sequences.values(), *reads.values(), *captured.values()}
        if any(r in outside for r in roots) or len(set(roots)) != len(roots):
            # (each new state must be an op of its own: its input or a captured value, even a
            # function's output, would repoint the delay at a value outside the loop)
            raise CntkWriteUnsupported("recurrence", "a step whose new state is what it reads")
        for d, root, i, like in zip(delayed, roots, init_uids, likes):
            if d is None:
                continue
            entry = next(f for f in w.functions if f["uid"].value == d)
            entry["inputs"] = P.vector([P.text(root), P.text(i)])
            w.placeholder(like, root, x)
        made = roots[0].rpartition("_Output_")[0]
        w.output_uids[made] = roots         # (the states' uids, the recurrence's outputs)
        return made
    return rule
