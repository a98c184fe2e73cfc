"""A CNTK 2.7 user's own programs (round 37), in the style of CNTK's tutorials and examples: a
sequence-to-sequence model with ``AttentionModel`` trained a few steps and decoded greedily by
``UnfoldFrom`` (CNTK_204), CNTK_202's slot tagger over sparse CTF streams read with
``INFINITELY_REPEAT`` across sweeps, a self-stabilized LSTM with dropout, two learners for two
parameter groups under the old ``learning_rate_schedule`` units, feature extraction by
``find_all_with_name`` + ``combine`` + ``clone(share)``, a ``UserFunction`` trained and cloned, an
``Evaluator`` over a held-out CTF with the printer logging to a file, typed ``@Function``s with
``For`` and lambdas in ``Sequential``, and ``sequence.where``/``gather``/``scatter``; each is run
unchanged on CNTK 2.7 and on ``stadyn.compat.cntk``."""

import contextlib
import io
import os
import re

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome

_TIMING = re.compile(r"\d+\.\d+s \( *\d+\.\d+ samples/s\)")
_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")


def _printed(text):
    """Printed lines, timings masked, their decimals apart (compared to the harness's
    tolerance: the last printed digit may round either way)."""
    lines = [_TIMING.sub("<time>", ln) for ln in text.splitlines() if ln.strip()]
    return [[_NUMBER.sub("#", ln), [float(v) for v in _NUMBER.findall(ln)]] for ln in lines]


def _ctf_sequences(path, sequences):
    """``sequences``: lists of rows ``{field: [(index, value), ...] or [dense values]}``."""
    with open(path, "w") as f:
        for seq, rows in enumerate(sequences):
            for row in rows:
                parts = []
                for name in sorted(row):
                    vals = row[name]
                    if vals and isinstance(vals[0], tuple):
                        parts.append("|%s %s" % (name, " ".join("%d:%g" % iv for iv in vals)))
                    else:
                        parts.append("|%s %s" % (name, " ".join("%g" % v for v in vals)))
                f.write("%d %s\n" % (seq, " ".join(parts)))


def _set_unique(r, params):
    """Seeded values for the parameters whose name and size are unique; those that share both
    (a Stabilizer's scalar ``alpha``s) keep their initial value, which is a constant.  Returns
    the sorted ``[name, shape]`` listing."""
    counts = {}
    for p in params:
        key = (p.name, int(np.prod(p.shape)))
        counts[key] = counts.get(key, 0) + 1
    shared = [k for k, n in counts.items() if n > 1 and k[1] != 1]
    if shared:
        raise ValueError("parameters sharing a name and size: %r" % shared)
    r.set_params([p for p in params if counts[(p.name, int(np.prod(p.shape)))] == 1])
    return sorted([p.name, list(p.shape)] for p in params)


def _values(params):
    """``{"name|size": values}``; parameters sharing a name and size give their values sorted,
    so the order the framework lists them in does not count."""
    out = {}
    for p in params:
        value = np.array(p.value, dtype=np.float64).ravel()
        out.setdefault("%s|%d" % (p.name, value.size), []).append(value)
    return {k: (v[0] if len(v) == 1 else np.sort(np.concatenate(v))) for k, v in out.items()}


def _onehots(V, indices):
    return np.eye(V, dtype=np.float32)[np.asarray(indices)]


# -- 1. sequence to sequence with attention, trained then decoded greedily (CNTK_204) -----------

@cntk_case(names=["cntk.layers.AttentionModel", "cntk.layers.UnfoldFrom", "cntk.layers.Delay",
                  "cntk.layers.Stabilizer", "cntk.layers.Label", "cntk.layers.SequenceOver",
                  "cntk.Function.with_signature", "cntk.sequence.slice", "cntk.ops.hardmax",
                  "cntk.Trainer.train_minibatch", "cntk.Function.argument_map"],
           rtol=1e-4, atol=1e-5,
           note="CNTK_204's model, small: an encoder Embedding -> Stabilizer -> "
                "Recurrence(LSTM, return_full_state) -> (Label, Label) over the input axis; a "
                "decoder whose Recurrence step is a @Function splicing the AttentionModel's "
                "value over the encoder into the LSTM's input, under default_options("
                "enable_self_stabilization=True); the criterion typed with "
                "Function.with_signature over two named axes, labels sliced past <s> and "
                "delayed by Delay(initial_state=<s>); three adam steps, then the greedy decoder "
                "UnfoldFrom(... >> hardmax, until_predicate on </s>, length_increase=1.5)")
def user37_attention_seq2seq_greedy(C, r):
    r.touch("cntk.Function.with_signature", "cntk.Trainer.train_minibatch",
            "cntk.Function.argument_map")
    V_in, V_out, H = 5, 4, 3
    input_axis, label_axis = C.Axis("inputAxis"), C.Axis("labelAxis")
    InputSequence = C.layers.SequenceOver[input_axis]
    LabelSequence = C.layers.SequenceOver[label_axis]
    sentence_start = C.constant(np.eye(V_out, dtype=np.float32)[0], name="s_start")
    sentence_end_index = V_out - 1
    with C.layers.default_options(enable_self_stabilization=True):
        encode = C.layers.Sequential([
            C.layers.Embedding(H, name="in_embed"), C.layers.Stabilizer(),
            C.layers.Recurrence(C.layers.LSTM(H - 1), return_full_state=True),
            (C.layers.Label("encoded_h"), C.layers.Label("encoded_c"))])
        label_embed = C.layers.Embedding(H, name="label_embed")
        stab_in, stab_out = C.layers.Stabilizer(), C.layers.Stabilizer()
        rec_block = C.layers.LSTM(H)
        proj = C.layers.Dense(V_out, name="out_proj")
        attention_model = C.layers.AttentionModel(H, name="attention_model")

    @C.Function
    def decode(history, input):
        encoded_input = encode(input)
        r_ = stab_in(label_embed(history))

        @C.Function
        def lstm_with_attention(dh, dc, x):
            h_att = attention_model(encoded_input.outputs[0], dh)
            return rec_block(dh, dc, C.splice(x, h_att))
        r_ = C.layers.Recurrence(lstm_with_attention)(r_)
        return C.layers.Label("out_proj_out")(proj(stab_out(r_)))

    @C.Function.with_signature(InputSequence[C.layers.Tensor[V_in]],
                               LabelSequence[C.layers.Tensor[V_out]])
    def criterion(input, labels):
        postprocessed = C.sequence.slice(labels, 1, 0)
        z = decode(C.layers.Delay(initial_state=sentence_start)(postprocessed), input)
        return (C.cross_entropy_with_softmax(z, postprocessed),
                C.classification_error(z, postprocessed))

    res = {"parameters": _set_unique(r, criterion.parameters),
           "arguments": [[a.name, list(a.shape)] for a in criterion.arguments]}
    trainer = C.Trainer(None, criterion, [C.adam(
        criterion.parameters, C.learning_parameter_schedule_per_sample(0.05),
        C.momentum_schedule_per_sample(0.9))])
    inputs = [_onehots(V_in, [1, 2, 3]), _onehots(V_in, [4, 1])]
    labels = [_onehots(V_out, [0, 1, 2, 3]), _onehots(V_out, [0, 2, 3])]
    steps = []
    for _ in range(3):
        trainer.train_minibatch(criterion.argument_map(inputs, labels))
        steps.append([trainer.previous_minibatch_loss_average,
                      trainer.previous_minibatch_evaluation_average,
                      trainer.previous_minibatch_sample_count])
    res["steps"] = steps

    @C.Function.with_signature(InputSequence[C.layers.Tensor[V_in]])
    def model_greedy(input):
        unfold = C.layers.UnfoldFrom(lambda history: decode(history, input) >> C.hardmax,
                                     until_predicate=lambda w: w[..., sentence_end_index],
                                     length_increase=1.5)
        return unfold(initial_state=sentence_start, dynamic_axes_like=input)
    res["greedy"] = [np.argmax(s, axis=-1).tolist() for s in model_greedy(inputs)]
    res["values"] = _values(criterion.parameters)
    return res
