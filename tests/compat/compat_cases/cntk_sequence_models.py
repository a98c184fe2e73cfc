"""Sequence models over two sequence axes (an encoder's and a decoder's, as CNTK 204's
sequence-to-sequence model has them): ``AttentionModel`` on its own and inside a decoder's
``Recurrence``, named axes (``Axis.new_unique_dynamic_axis``, ``sequence_axis=``), and the
self-stabilised recurrent steps.  Encoder sequences of lengths 3, 1, 5 and decoder sequences of
lengths 2, 4, 1: values, and the gradients of ``sum(out * w)`` w.r.t. both inputs and the
parameters (``run_sequence`` in cntk_sequence.py for one axis).

A stabiliser's ``alpha`` keeps its initial value (every stabiliser's parameter is a scalar
named ``alpha``, so the harness cannot tell them apart by name and size); its presence is in
the listing of all parameters.
"""

import numpy as np

from compat_harness import cntk_case
from compat_cases.cntk_sequence import LENGTHS, _flat, eval_and_grads, seq_case

ENC, DEC = (3, 1, 5), (2, 4, 1)


def run_two_axes(C, r, build, enc_shape=(3,), dec_shape=(2,)):
    """``build(C, enc, dec)`` on an encoder and a decoder sequence input, each on its own named
    axis; results as ``run_sequence``'s plus the grads w.r.t. both inputs."""
    enc_axis = C.Axis.new_unique_dynamic_axis("encoderAxis")
    dec_axis = C.Axis.new_unique_dynamic_axis("decoderAxis")
    x = C.sequence.input_variable(enc_shape, sequence_axis=enc_axis, needs_gradient=True)
    y = C.sequence.input_variable(dec_shape, sequence_axis=dec_axis, needs_gradient=True)
    f = build(C, x, y)
    r.touch("cntk.Function.eval", "cntk.Function.shape", "cntk.Function.forward",
            "cntk.Function.backward", "cntk.Function.output", "cntk.Function.parameters",
            "cntk.Axis.new_unique_dynamic_axis")
    params = list(f.parameters)
    settable = [p for p in params if p.name != "alpha"]
    res = {"shape": list(f.shape),
           "all params": sorted([p.name, list(p.shape)] for p in params),
           "params": r.set_params(settable)}
    feed = {x: [r.randn(n, *enc_shape) for n in ENC], y: [r.randn(n, *dec_shape) for n in DEC]}
    grads = eval_and_grads(r, f, feed, [x, y] + settable, res)
    res["grad enc"] = _flat(grads[x])
    res["grad dec"] = _flat(grads[y])
    for p in settable:
        res["grad %s|%d" % (p.name, p.value.size)] = _flat(grads[p]).ravel()
    return res


def two_axes_case(name, build, names, **kw):
    """Register ``run_two_axes`` for ``build`` as case ``sequence_models.<name>``."""
    opts = dict((k, kw.pop(k)) for k in ("enc_shape", "dec_shape") if k in kw)

    def fn(C, r):
        return run_two_axes(C, r, build, **opts)
    fn.__name__ = "sequence_models." + name
    cntk_case(name="sequence_models." + name,
              names=names + ["cntk.sequence.input_variable",
                             "cntk.Axis.new_unique_dynamic_axis"], **kw)(fn)


_ATT = ["cntk.layers.AttentionModel"]
two_axes_case("AttentionModel",
              lambda C, x, y: C.layers.AttentionModel(4, enable_self_stabilization=False)(x, y),
              _ATT, note="each decoder step attends over all steps of its encoder sequence")
two_axes_case("AttentionModel__stabilized",
              lambda C, x, y: C.layers.AttentionModel(4)(x, y) * 2.0, _ATT,
              note="four stabilisers (alpha at its initial value)")
two_axes_case("AttentionModel__window",
              lambda C, x, y: C.layers.AttentionModel(
                  4, attention_span=3, attention_axis=-3,
                  enable_self_stabilization=False)(x, y),
              _ATT, note="CNTK's deprecated mode: the last 3 encoder steps (PastValueWindow "
                         "along axis -3), the result shaped (1, 1, h)")


def _decoder(C, x, y):
    """CNTK 204's first decoder layer: an LSTM whose input is spliced with the attention over
    the encoder, the attention computed from the LSTM's previous output (built, as there, in a
    Function of placeholders applied to the inputs)."""
    attention = C.layers.AttentionModel(4, enable_self_stabilization=False)
    lstm = C.layers.LSTM(5)

    @C.Function
    def decode(history, encoded):
        @C.Function
        def lstm_with_attention(dh, dc, u):
            h_att = attention(encoded, dh)
            return lstm(dh, dc, C.splice(u, h_att))
        return C.layers.Recurrence(lstm_with_attention)(history)
    return decode(y, x)


two_axes_case("Recurrence_LSTM_with_attention", _decoder,
              _ATT + ["cntk.layers.Recurrence", "cntk.layers.LSTM", "cntk.ops.splice",
                      "cntk.ops.functions.Function"])


def _stabilized(C, x, step):
    with C.layers.default_options(enable_self_stabilization=True):
        return C.layers.Recurrence(step())(x)


seq_case("Recurrence_LSTM__self_stabilization",
         lambda C, x: _stabilized(C, x, lambda: C.layers.LSTM(4)),
         names=["cntk.layers.Recurrence", "cntk.layers.LSTM", "cntk.layers.default_options"],
         params=True, note="the stabiliser's alpha is set from its name like the weights")
seq_case("Recurrence_GRU__self_stabilization",
         lambda C, x: _stabilized(C, x, lambda: C.layers.GRU(2)),
         names=["cntk.layers.Recurrence", "cntk.layers.GRU", "cntk.layers.default_options"],
         params=True)
seq_case("Recurrence_RNNStep__self_stabilization",
         lambda C, x: C.layers.Recurrence(C.layers.RNNStep(
             3, enable_self_stabilization=True))(x),
         names=["cntk.layers.Recurrence", "cntk.layers.RNNStep"], params=True)



# -- steps with several stabilisers, and projected steps (cell_shape) --------------------------
ALPHA = 0.3        # every stabiliser's alpha (not its initial value: each scales by 0.37)


def run_stabilized(C, r, make, go_backwards=False):
    """``Recurrence(make(), initial_state=0.25)`` over ragged sequences; every ``alpha`` set to
    ``ALPHA`` (a step has several, all named ``alpha`` and of size 1, so the harness cannot tell
    them apart: a stabiliser missing or misplaced changes the values), the other parameters from
    their names.  The alphas' gradients are compared as a sorted list."""
    x = C.sequence.input_variable((3,), needs_gradient=True)
    f = C.layers.Recurrence(make(), go_backwards=go_backwards, initial_state=0.25)(x)
    r.touch("cntk.Function.eval", "cntk.Function.shape", "cntk.Function.forward",
            "cntk.Function.backward", "cntk.Function.output", "cntk.Function.parameters")
    params = list(f.parameters)
    settable = [p for p in params if p.name != "alpha"]
    alphas = [p for p in params if p.name == "alpha"]
    for p in alphas:
        p.value = np.array(ALPHA, np.float32).reshape(p.shape)
    res = {"shape": list(f.shape),
           "all params": sorted([p.name, list(p.shape)] for p in params),
           "params": r.set_params(settable)}
    grads = eval_and_grads(r, f, {x: [r.randn(n, 3) for n in LENGTHS]}, [x] + params, res)
    res["grad x"] = _flat(grads[x])
    for p in settable:
        res["grad %s|%d" % (p.name, p.value.size)] = _flat(grads[p]).ravel()
    res["grad alphas (sorted)"] = np.sort(np.array(
        [float(np.asarray(grads[p]).ravel()[0]) for p in alphas], np.float32))
    return res


def stabilized_case(name, make, names, go_backwards=False, **kw):
    """Register ``run_stabilized`` for ``make`` as case ``sequence.<name>``."""
    def fn(C, r):
        return run_stabilized(C, r, lambda: make(C), go_backwards)
    fn.__name__ = "sequence." + name
    cntk_case(name="sequence." + name,
              names=names + ["cntk.layers.Recurrence", "cntk.sequence.input_variable"],
              **kw)(fn)


stabilized_case("Recurrence_LSTM__peepholes_self_stabilization",
                lambda C: C.layers.LSTM(2, use_peepholes=True, enable_self_stabilization=True),
                ["cntk.layers.LSTM"],
                note="three stabilisers: the previous h, the previous c in the input and forget "
                     "gates' peepholes, the new c in the output gate's")
stabilized_case("Recurrence_LSTM__cell_shape_peepholes_self_stabilization",
                lambda C: C.layers.LSTM(4, cell_shape=6, use_peepholes=True,
                                        enable_self_stabilization=True),
                ["cntk.layers.LSTM"],
                note="the cell at 6, h projected to 4 by P (6, 4) after a fourth stabiliser")
stabilized_case("Recurrence_GRU__cell_shape_self_stabilization",
                lambda C: C.layers.GRU(3, cell_shape=3, enable_self_stabilization=True),
                ["cntk.layers.GRU"],
                note="CNTK's GRU needs cell_shape == shape; it still adds the projection P")
stabilized_case("Recurrence_RNNStep__cell_shape_self_stabilization_backwards",
                lambda C: C.layers.RNNStep(3, cell_shape=5, activation=C.tanh,
                                           enable_self_stabilization=True),
                ["cntk.layers.RNNStep", "cntk.ops.tanh"], go_backwards=True)
stabilized_case("Recurrence_GRU__self_stabilization_alpha",
                lambda C: C.layers.GRU(2, enable_self_stabilization=True),
                ["cntk.layers.GRU"], note="the stabiliser's alpha away from its initial value")
seq_case("Recurrence_LSTM__cell_shape",
         lambda C, x: C.layers.Recurrence(C.layers.LSTM(4, cell_shape=6))(x),
         names=["cntk.layers.Recurrence", "cntk.layers.LSTM"], params=True,
         note="the cell at 6, h projected to 4 by P (6, 4)")
seq_case("Recurrence_RNNStep__cell_shape",
         lambda C, x: C.layers.Recurrence(C.layers.RNNStep(3, cell_shape=5))(x),
         names=["cntk.layers.Recurrence", "cntk.layers.RNNStep"], params=True)

_STEPS = [("LSTM", dict(shape=4)), ("LSTM", dict(shape=4, enable_self_stabilization=True)),
          ("LSTM", dict(shape=4, cell_shape=6, use_peepholes=True,
                        enable_self_stabilization=True)),
          ("GRU", dict(shape=2, enable_self_stabilization=True)),
          ("GRU", dict(shape=2, cell_shape=2)),
          ("RNNStep", dict(shape=3, cell_shape=5, enable_self_stabilization=True))]


@cntk_case(names=["cntk.layers.LSTM", "cntk.layers.GRU", "cntk.layers.RNNStep",
                  "cntk.layers.Recurrence", "cntk.Function.parameters",
                  "cntk.sequence.input_variable"])
def recurrent_step_parameters(C, r):
    """Each step's parameters: names and shapes (sorted), and in the order CNTK lists them."""
    r.touch("cntk.Function.parameters")
    listing, order = [], []
    for kind, kw in _STEPS:
        x = C.sequence.input_variable(3)
        f = C.layers.Recurrence(getattr(C.layers, kind)(**kw))(x)
        items = [[p.name, list(p.shape)] for p in f.parameters]
        listing.append(sorted(items))
        order.append(items)
    return {"listing": listing, "order": order}


def _models(C):
    """Models whose parameter order ``Function.parameters`` gives: stacked and bidirectional
    recurrences, an embedding, folds, nested ``Sequential``s."""
    L = C.layers
    s, e = C.sequence.input_variable(3), C.sequence.input_variable(10)
    fw, bw = L.Recurrence(L.LSTM(3)), L.Recurrence(L.GRU(2), go_backwards=True)
    return [
        L.Sequential([L.Recurrence(L.LSTM(4)), L.Recurrence(L.GRU(2))])(s),
        L.Sequential([L.Embedding(5), L.Recurrence(L.LSTM(4)), L.Dense(2)])(e),
        C.splice(fw(s), bw(s)),
        L.Sequential([L.Fold(L.RNNStep(3)), L.Dense(2)])(s),
        L.Sequential([L.Recurrence(L.LSTM(4, enable_self_stabilization=True,
                                          use_peepholes=True)), L.Dense(2)])(s),
        L.Sequential([L.Sequential([L.Dense(4), L.Dense(3)]), L.Dense(2)])(
            C.input_variable(3)),
    ]


@cntk_case(names=["cntk.Function.parameters", "cntk.layers.Sequential", "cntk.layers.Embedding",
                  "cntk.layers.Fold", "cntk.ops.splice"])
def model_parameter_order(C, r):
    """The order ``Function.parameters`` lists a model's parameters in (CNTK's walk: the last
    layer's first, a recurrent cell's as its expression visits them)."""
    r.touch("cntk.Function.parameters")
    return {"order": [[[p.name, list(p.shape)] for p in f.parameters] for f in _models(C)]}


# -- loops closed by replace_placeholders / ForwardDeclaration.resolve_to -----------------------
def _forward_declaration(C, x):
    """CNTK's documented example, weighted by the input: a running sum through a loop."""
    total = C.layers.ForwardDeclaration()
    out = C.sequence.past_value(total, initial_state=0.5) * 0.8 + x
    total.resolve_to(out)
    return out


seq_case("ForwardDeclaration", _forward_declaration, step_shape=(),
         names=["cntk.layers.ForwardDeclaration", "cntk.sequence.past_value"],
         note="out_t = 0.8 out_{t-1} + x_t, out_{-1} = 0.5, on scalar steps (the forward "
              "declaration has no shape)")


def _placeholder_rnn(C, x, backwards=False):
    """A hand-written recurrent layer: h = tanh(x W + delay(h) H), the loop closed with
    replace_placeholders."""
    W = C.parameter((3, 4), init=C.glorot_uniform(), name="W")
    H = C.parameter((4, 4), init=C.glorot_uniform(), name="H")
    p = C.placeholder(shape=(4,), name="h_prev")
    delay = C.sequence.future_value if backwards else C.sequence.past_value
    h = C.tanh(C.times(x, W) + C.times(delay(p), H))
    h.replace_placeholders({p: h.output})
    return h


seq_case("replace_placeholders_rnn", _placeholder_rnn,
         names=["cntk.Function.replace_placeholders", "cntk.ops.placeholder",
                "cntk.sequence.past_value", "cntk.ops.times", "cntk.ops.parameter"],
         params=True, touch=["cntk.Function.replace_placeholders"])
seq_case("replace_placeholders_rnn__future_value", lambda C, x: _placeholder_rnn(C, x, True),
         names=["cntk.Function.replace_placeholders", "cntk.ops.placeholder",
                "cntk.sequence.future_value", "cntk.ops.times", "cntk.ops.parameter"],
         params=True, touch=["cntk.Function.replace_placeholders"],
         note="a loop through future_value runs backwards")


def _placeholder_cell(C, x):
    """Two loops closed at once: a cell c and an output h that read each other's past."""
    dh = C.placeholder(shape=(2,), name="dh")
    dc = C.placeholder(shape=(2,), name="dc")
    W = C.parameter((3, 2), init=C.glorot_uniform(), name="Wx")
    c = C.sequence.past_value(dc, initial_state=0.1) * C.sigmoid(C.times(x, W)) \
        + C.tanh(C.sequence.past_value(dh))
    h = C.tanh(c) * 2.0
    out = C.combine([h, c])
    out.replace_placeholders({dh: h.output, dc: c.output})
    return h + c * 0.5


seq_case("replace_placeholders_two_states", _placeholder_cell,
         names=["cntk.ops.placeholder", "cntk.sequence.past_value", "cntk.ops.combine",
                "cntk.ops.sigmoid"],
         params=True)


# -- SequentialConvolution: the first filter axis along the sequence ----------------------------
_SC = ["cntk.layers.SequentialConvolution"]
seq_case("SequentialConvolution",
         lambda C, x: C.layers.SequentialConvolution((3, 2), 4)(x), step_shape=(2, 6),
         lengths=(5, 3, 4), names=_SC, params=True,
         note="no padding: each sequence n - 2 steps long")
seq_case("SequentialConvolution__pad_strides",
         lambda C, x: C.layers.SequentialConvolution((3, 2), 3, pad=True, strides=(2, 1),
                                                     activation=C.tanh)(x),
         step_shape=(2, 6), names=_SC + ["cntk.ops.tanh"], params=True,
         note="ceil(n / 2) steps, windows centred on every other step")
seq_case("SequentialConvolution__reduction_rank_0",
         lambda C, x: C.layers.SequentialConvolution((2, 3), 2, reduction_rank=0, pad=True)(x),
         step_shape=(5,), names=_SC, params=True, note="one channel; an even filter along the "
                                                     "steps is padded more after than before")
seq_case("SequentialConvolution__1d_no_filters",
         lambda C, x: C.layers.SequentialConvolution((2,), bias=False)(x),
         step_shape=(3,), lengths=(3, 2, 5), names=_SC, params=True,
         note="a filter along the steps only, a scalar per step")
