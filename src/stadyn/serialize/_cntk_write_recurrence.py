"""``Recurrence`` of a step the writer writes op by op (``RNNStep``, a step function of the
user's): the catalog's ``recurrence`` as CNTK 2.7 writes it -- the step's ops inside a block
(``RNNStep``, or the step's own op name) over a placeholder of the input sequence and one of
the delayed state, the state read back through ``PastValue`` (``FutureValue`` going
backwards) of the block's output with the initial state, as ``_cntk_write_more``'s LSTM and
GRU recurrences are.  The step's ops are written by the writer's own rules (``rules``: the
table of ``_cntk_write``), their values batched (one step of a sequence: the placeholders
carry the sequence axes).
"""

from __future__ import annotations

from . import _cntk_write_proto as P
from ._cntk_write_graph import CntkWriteUnsupported, walk
from ._cntk_write_more import _Step

__all__ = ["recurrence_rule", "STEP_BLOCKS"]

#: the steps CNTK 2.7 writes as a block inside the recurrence (by the step layer's op name)
STEP_BLOCKS = frozenset({"RNNStep"})


def recurrence_rule(rules: dict, different: dict):
    """The writer's rule for ``recurrence`` over the ops of ``rules`` (those of ``different``,
    which CNTK computes otherwise, refused)."""
    def rule(w, ins, uids, attrs, out, name):
        step = attrs["step"]
        n_seq = int(attrs.get("n_sequences", 1))
        n_states = len(step.states)
        if n_seq != 1 or n_states != 1 or len(ins) != n_seq + n_states + len(step.captured):
            raise CntkWriteUnsupported("recurrence", "a step of other than one input sequence "
                                                     "and one state")
        x, init = ins[0], ins[1]
        if init.parent is not None or id(init) in w.batched or init.size != 1:
            raise CntkWriteUnsupported("recurrence", "an initial state other than a constant "
                                                     "or parameter of one value")
        captured = dict(zip((id(c) for c in step.captured), uids[2:]))
        nodes = walk(step.outputs, w.cntk_op_of, frozenset(rules))
        for node in nodes:
            if node.spec.name in different:
                raise CntkWriteUnsupported(node.spec.name, different[node.spec.name])
            if node.spec.name not in rules or len([o for o in node.outputs
                                                   if o is not None]) > 1:
                raise CntkWriteUnsupported(node.spec.name, "an op of a recurrence's step the "
                                                           "writer has no rule for")
        state = step.outputs[0]
        like = _Step((1, 1) + tuple(state.shape[1:]), x.dtype)
        delay = "FutureValue" if attrs.get("go_backwards") else "PastValue"
        op_name = w.step_op_of(out)

        def ops(w_, reads: dict) -> str:
            # the step's ops, ``reads``: id(a value of the step) -> its uid
            made = {**reads, **captured}
            for v in [o for n in nodes for o in n.outputs if o is not None] + \
                    list(step.states) + list(step.inputs):
                w_.batched.add(id(v))       # (one step: its sequence axes the placeholders')
            for node in nodes:
                n_ins, n_attrs = node.spec.split_arguments(node.args, node.kwargs)
                n_ins = [i for i in n_ins if i is not None]
                if any(id(i) not in made for i in n_ins):
                    raise CntkWriteUnsupported(node.spec.name, "a value of a recurrence's step "
                                                               "the writer cannot read")
                n_uids = [made[id(i)] for i in n_ins]
                written = rules[node.spec.name](w_, n_ins, n_uids, n_attrs, node.outputs[0], "")
                made[id(node.outputs[0])] = n_uids[0] if written is None else \
                    written + "_Output_0"
            return made[id(state)]

        if op_name in STEP_BLOCKS:
            # (CNTK 2.7's block of the step layer, its output delayed)
            return w.recurrent_block(op_name, x, uids[0], list(uids[2:]),
                                     [(delay, 1, uids[1], like)],
                                     lambda w_, p_x, states: ops(
                                         w_, {id(step.states[0]): states[0],
                                              id(step.inputs[0]): p_x}))
        # a step function's ops as they are, the delay reading the last one's output (a
        # placeholder named by that output's uid, as CNTK 2.7 lists a value read before it is
        # written)
        later = f"Placeholder{next(w.count)}"
        delayed = w.function(delay, [later, uids[1]], {"offset": P.size_t(1)})
        root = ops(w, {id(step.states[0]): delayed + "_Output_0", id(step.inputs[0]): uids[0]})
        if root in (uids[0], delayed + "_Output_0", *captured.values()):
            # (the step's new state must be an op of its own: its input or a captured value,
            # even a function's output, would repoint the delay at a value outside the loop)
            raise CntkWriteUnsupported("recurrence", "a step whose new state is what it reads")
        entry = next(f for f in w.functions if f["uid"].value == delayed)
        entry["inputs"] = P.vector([P.text(root), P.text(uids[1])])
        w.placeholder(like, root)
        return root.rpartition("_Output_")[0]
    return rule
