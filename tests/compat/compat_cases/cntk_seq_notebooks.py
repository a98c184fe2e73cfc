"""What running CNTK's own sequence notebooks on Stadyn found (tools/cntk_notebooks.py; CNTK_202
"Language Understanding", CNTK_599A "Sequence to Sequence"): an LSTM cell applied to
placeholders on the input's sequence axes, its loops closed by ``replace_placeholders`` through
``past_value(h)``/``future_value(h)`` (599A's ``LSTM_layer``), a criterion built anew on inputs
fed by different minibatches (202's ``do_train`` after evaluating one query), and a model's
layers reached by name before and after it is applied (202's ``z.embed.E.shape``,
``z.classify.b.value``)."""

import numpy as np

from compat_harness import cntk_case
from compat_cases.cntk_sequence import seq_case


def _lstm_layer(C, input, output_dim, hook_h, hook_c):
    """CNTK 599A's ``LSTM_layer``, as the notebook writes it."""
    dh = C.placeholder(shape=(output_dim), dynamic_axes=input.dynamic_axes)
    dc = C.placeholder(shape=(output_dim), dynamic_axes=input.dynamic_axes)
    LSTM_cell = C.layers.LSTM(output_dim)
    f_x_h_c = LSTM_cell(dh, dc, input)
    h_c = f_x_h_c.outputs
    h = hook_h(h_c[0])
    c = hook_c(h_c[1])
    replacements = {dh: h.output, dc: c.output}
    f_x_h_c.replace_placeholders(replacements)
    h = f_x_h_c.outputs[0]
    c = f_x_h_c.outputs[1]
    return C.combine([h]), C.combine([c])


def _lstm_599a(C, x, backwards=False):
    hook = C.sequence.future_value if backwards else C.sequence.past_value
    h, c = _lstm_layer(C, x, 2, hook, hook)
    return h + c * 0.5


_LSTM_NAMES = ["cntk.layers.LSTM", "cntk.ops.placeholder", "cntk.Function.replace_placeholders",
               "cntk.Function.outputs", "cntk.ops.combine"]
seq_case("LSTM_layer_599A", _lstm_599a, params=True, lengths=(2, 1, 3),
         names=_LSTM_NAMES + ["cntk.sequence.past_value"],
         touch=["cntk.Function.replace_placeholders", "cntk.Function.outputs"],
         note="CNTK 599A: Stadyn's LSTM ran its whole-sequence kernel on the placeholders, one "
              "output instead of (h, c)")
seq_case("LSTM_layer_599A__future_value", lambda C, x: _lstm_599a(C, x, True), params=True,
         lengths=(2, 1, 3),
         names=_LSTM_NAMES + ["cntk.sequence.future_value"],
         touch=["cntk.Function.replace_placeholders", "cntk.Function.outputs"],
         note="599A's encoder: the loop through future_value runs backwards")


@cntk_case(names=["cntk.ops.cross_entropy_with_softmax", "cntk.layers.Dense",
                  "cntk.sequence.input_variable", "cntk.Function.eval"],
           note="CNTK 202: a model evaluated on one query after training, then a criterion "
                "built anew on its input and the labels; Stadyn refused the label's "
                "last minibatch shape")
def criterion_after_inputs_fed_apart(C, r):
    r.touch("cntk.Function.eval")
    x, y = C.sequence.input_variable(5), C.sequence.input_variable(3)
    first, second = C.layers.Dense(3, name="first"), C.layers.Dense(3, name="second")
    ce = C.cross_entropy_with_softmax(first(x), y)
    r.set_params(first(x).parameters)
    X = [r.randn(3, 5), r.randn(2, 5)]
    Y = [np.eye(3, dtype=np.float32)[[0, 1, 2]], np.eye(3, dtype=np.float32)[[1, 2]]]
    res = {"ce": np.concatenate(ce.eval({x: X, y: Y}))}
    res["one query"] = first(x).eval({x: [X[0][:1]]})[0]
    ce2 = C.cross_entropy_with_softmax(second(x), y)
    res["params"] = r.set_params(second(x).parameters, scale=0.3)
    res["ce anew"] = np.concatenate(ce2.eval({x: X, y: Y}))
    return res


def _raises_value_error(fn):
    try:
        fn()
    except ValueError:
        return True
    return False


@cntk_case(names=["cntk.layers.Sequential", "cntk.layers.Embedding", "cntk.layers.Dense",
                  "cntk.layers.Recurrence", "cntk.layers.LSTM",
                  "cntk.layers.default_options"],
           note="CNTK 202: `z.embed.E.shape` and `z.classify.b.value` on a model not applied "
                "yet (CNTK: -1 for the axes the input decides), and on it after training; "
                "Stadyn had no attributes before the first application nor named layers "
                "inside a Sequential")
def layers_by_name_before_and_after_applied(C, r):
    with C.layers.default_options(initial_state=0.1):
        z = C.layers.Sequential([
            C.layers.Embedding(5, name="embed"),
            C.layers.Recurrence(C.layers.LSTM(4), go_backwards=False),
            C.layers.Dense(3, name="classify")])
    res = {"E shape": list(z.embed.E.shape), "W shape": list(z.classify.W.shape),
           "b shape": list(z.classify.b.shape), "b value": z.classify.b.value,
           "W value refused": _raises_value_error(lambda: z.classify.W.value),
           "Dense((2, 3)) W": list(C.layers.Dense((2, 3)).W.shape),
           "Embedding weights": C.layers.Embedding(weights=r.randn(4, 2)).E.value}
    x = C.sequence.input_variable(7)
    applied = z(x)
    res["applied E shape"] = list(applied.embed.E.shape)
    res["layer E shape after"] = list(z.embed.E.shape)
    res["params"] = r.set_params(applied.parameters)
    res["layer b after"] = z.classify.b.value
    res["layer E after"] = z.embed.E.value
    return res


def _one_word_lookahead(C):
    x = C.placeholder()
    return C.splice(x, C.sequence.future_value(x))


def _bi_recurrence(C, fwd, bwd):
    F = C.layers.Recurrence(fwd)
    G = C.layers.Recurrence(bwd, go_backwards=True)
    x = C.placeholder()
    return C.splice(F(x), G(x))


@cntk_case(names=["cntk.ops.placeholder", "cntk.ops.splice", "cntk.sequence.future_value",
                  "cntk.sequence.reduce_sum", "cntk.layers.Sequential", "cntk.layers.Recurrence",
                  "cntk.layers.Stabilizer", "cntk.ops.cross_entropy_with_softmax",
                  "cntk.ops.classification_error", "cntk.ops.combine",
                  "cntk.Function.placeholders", "cntk.Function.replace_placeholders"],
           note="CNTK 202's models: ops on a placeholder without a shape inside a Sequential "
                "(one-word look-ahead, bidirectional recurrence), an op on a layer "
                "(reduce_sum(Recurrence(...))), a criterion of a model not applied yet; Stadyn "
                "refused ops on placeholders without a shape")
def ops_waiting_for_placeholder_shapes(C, r):
    r.touch("cntk.Function.placeholders", "cntk.Function.replace_placeholders",
            "cntk.Function.eval", "cntk.Function.parameters")
    x = C.sequence.input_variable(6)
    data = [r.randn(3, 6), r.randn(1, 6), r.randn(4, 6)]
    res = {}
    with C.layers.default_options(initial_state=0.1):
        models = {
            "lookahead": C.layers.Sequential([C.layers.Embedding(2), _one_word_lookahead(C),
                                              C.layers.Recurrence(C.layers.LSTM(3)),
                                              C.layers.Dense(4)]),
            "birecurrence": C.layers.Sequential([
                C.layers.Embedding(5), _bi_recurrence(C, C.layers.LSTM(2), C.layers.GRU(3)),
                C.layers.Dense(7)]),
            "reduce_sum": C.layers.Sequential([
                C.layers.Embedding(4), C.layers.Stabilizer(),
                C.sequence.reduce_sum(C.layers.Recurrence(C.layers.LSTM(5))),
                C.layers.Dense(6)])}
    for key in sorted(models):
        z = models[key](x)
        res[key + " params"] = r.set_params(z.parameters)
        out = z.eval({x: data})
        res[key] = np.concatenate([np.asarray(o, np.float32).reshape(-1, 4 if key ==
                                   "lookahead" else 7 if key == "birecurrence" else 6)
                                   for o in out])
    labels = C.placeholder(name="labels")
    model = C.layers.Sequential([C.layers.Embedding(3), C.layers.Dense(4)])
    criterion = C.combine([C.cross_entropy_with_softmax(model, labels),
                           C.classification_error(model, labels)])
    res["criterion placeholders"] = [p.name for p in criterion.placeholders]
    criterion.replace_placeholders({criterion.placeholders[0]: C.sequence.input_variable(4)})
    res["after replace"] = [p.name for p in criterion.placeholders]
    return res


@cntk_case(names=["cntk.Function.clone", "cntk.ops.CloneMethod", "cntk.ops.alias",
                  "cntk.sequence.past_value", "cntk.ops.times", "cntk.ops.parameter"],
           note="CNTK 599A's greedy decoder: `model.clone(CloneMethod.share, {hook.output: "
                "hardmax(model).output})`.  A substitute computed from the graph is cloned "
                "with it (one set of inputs; Stadyn had the originals and the clones), and a "
                "substitute reading what it replaces through past_value makes a loop")
def clone_with_substitutes_from_the_graph(C, r):
    r.touch("cntk.Function.clone", "cntk.Function.arguments", "cntk.Function.eval")
    x, y = C.input_variable(2, name="x"), C.input_variable(2, name="y")
    m = C.layers.Dense(2)(x) + y
    res = {"params": r.set_params(m.parameters)}
    k = m.clone(C.CloneMethod.share, {x: C.sigmoid(y).output})
    res["arguments"] = [a.name for a in k.arguments]
    res["fresh input"] = [a == y for a in k.arguments]
    data = r.randn(3, 2)
    res["value"] = k.eval({k.arguments[0]: data})
    # a loop: hook := 0.5 f, f_t = tanh(past(hook)_t W + s_t)
    s = C.sequence.input_variable(2, name="s")
    W = C.parameter((2, 2), init=C.glorot_uniform(), name="Wloop")
    W.value = r.randn(2, 2)
    hook = C.alias(s * 1.0, name="hook")
    f = C.tanh(C.times(C.sequence.past_value(hook), W) + s)
    g = f.clone(C.CloneMethod.share, {hook.output: (f * 0.5).output})
    res["loop arguments"] = [a.name for a in g.arguments]
    seqs = [r.randn(3, 2), r.randn(1, 2), r.randn(4, 2)]
    res["loop"] = np.concatenate(g.eval({g.arguments[0]: seqs}))
    res["original"] = np.concatenate(f.eval({s: seqs}))
    # a plain clone of a sequence graph, evaluated before the original ever is
    s2 = C.sequence.input_variable(2, name="s2")
    f2 = C.tanh(C.sequence.past_value(s2) + s2)
    g2 = f2.clone(C.CloneMethod.share)
    res["sequence clone"] = np.concatenate(g2.eval({g2.arguments[0]: seqs}))
    return res


@cntk_case(names=["cntk.layers.Sequential", "cntk.layers.Embedding", "cntk.layers.Dense",
                  "cntk.layers.Recurrence", "cntk.layers.Stabilizer",
                  "cntk.layers.typing.Sequence", "cntk.layers.typing.SparseTensor",
                  "cntk.ops.sequence", "cntk.sequence.last", "cntk.Value.one_hot"],
           note="CNTK's ATIS example (Examples/LanguageUnderstanding/ATIS/Python): "
                "`model.update_signature(Sequence[SparseTensor[vocab_size]])` and `from "
                "cntk.ops.sequence import last`; Stadyn took only shapes and had no "
                "cntk.ops.sequence")
def update_signature_with_a_sequence_type(C, r):
    r.touch("cntk.Function.parameters", "cntk.Function.eval", "cntk.ops.sequence",
            "cntk.Value.one_hot")
    from_ops = C.ops.sequence.last
    model = C.layers.Sequential([
        C.layers.Embedding(3, name="embed"), C.layers.Stabilizer(),
        C.layers.Recurrence(C.layers.LSTM(4)), from_ops, C.layers.Dense(2)])
    typing = C.layers.typing
    model.update_signature(typing.Sequence[typing.SparseTensor[6]])
    res = {"params": r.set_params(model.parameters)}
    res["out"] = np.asarray(model(C.Value.one_hot([[0, 3, 5], [2]], 6)), np.float32)
    res["same module"] = C.ops.sequence.last is C.sequence.last
    return res
