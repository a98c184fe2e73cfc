"""``cntk.sequence`` and the recurrent layers: minibatches of ragged sequences (lengths 3, 1,
5), the inference value (``eval``), the training value and the gradients of ``sum(out * w)``
w.r.t. the input (and every parameter, set from its name by ``r.set_params``), through
``forward``/``backward``.

A sequence value comes back from CNTK as one array per sequence; the results concatenate
them along the steps (with ``lengths``), so a value at a wrong step or a step too many shows.
"""

import numpy as np

from compat_harness import cntk_case

LENGTHS = (3, 1, 5)


def _flat(value):
    """A value CNTK returns: one array per sequence (concatenated) or one batch array."""
    if isinstance(value, list):
        return np.concatenate([np.asarray(v, np.float32) for v in value], 0)
    return np.asarray(value, np.float32)


def _lengths(value):
    return [int(len(v)) for v in value] if isinstance(value, list) else None


def _weights(r, value):
    if isinstance(value, list):
        return [r.weights_like(np.asarray(v)) for v in value]
    return r.weights_like(np.asarray(value))


def eval_and_grads(r, f, feed, wrt, res):
    """``f``'s inference value for ``feed`` (``out``, ``out lengths``) and training value
    (``train_out``) into ``res``; returns the gradients of ``sum(out * w)`` (seeded ``w``)
    w.r.t. ``wrt``."""
    out = f.eval(feed)
    res["out"] = _flat(out)
    res["out lengths"] = _lengths(out)
    state, outs = f.forward(feed, [f.output], set([f.output]))
    value = outs[f.output]
    res["train_out"] = _flat(value)
    return f.backward(state, {f.output: _weights(r, value)}, set(wrt))


def run_sequence(C, r, build, step_shape, lengths=LENGTHS, params=False, extra=None,
                 touch=()):
    """``build(C, x[, extra input])`` on a sequence input of per-step ``step_shape``; results
    ``out``, ``out lengths``, ``shape``, ``train_out``, ``grad x`` (and ``grad h0`` for an
    ``extra`` non-sequence input of that shape), with ``params`` the parameters' listing and
    gradients."""
    x = C.sequence.input_variable(step_shape, needs_gradient=True)
    inputs = [x]
    if extra is not None:
        inputs.append(C.input_variable(extra, needs_gradient=True))
    f = build(C, *inputs)
    r.touch("cntk.Function.eval", "cntk.Function.shape", "cntk.Function.forward",
            "cntk.Function.backward", "cntk.Function.output", *touch)
    res = {"shape": list(f.shape)}
    plist = list(f.parameters) if params else []
    if params:
        r.touch("cntk.Function.parameters")
        res["params"] = r.set_params(plist)
    feed = {x: [r.randn(n, *step_shape) for n in lengths]}
    if extra is not None:
        feed[inputs[1]] = r.randn(len(lengths), *extra)
    grads = eval_and_grads(r, f, feed, inputs + plist, res)
    res["grad x"] = _flat(grads[x])
    if extra is not None:
        res["grad h0"] = _flat(grads[inputs[1]])
    for p in plist:
        res["grad %s|%d" % (p.name, int(np.prod(p.shape)))] = _flat(grads[p]).ravel()
    return res


def seq_case(name, build, step_shape=(3,), names=None, **kw):
    """Register ``run_sequence`` for ``build`` as case ``sequence.<name>`` (``kw``:
    ``lengths``, ``params``, ``extra``, ``touch`` (methods the build calls) for it; the rest
    are the case's options)."""
    opts = dict((k, kw.pop(k)) for k in ("lengths", "params", "extra", "touch") if k in kw)
    op = name.split("__")[0]
    names = (names or ["cntk.sequence." + op]) + ["cntk.sequence.input_variable"]

    def fn(C, r):
        return run_sequence(C, r, build, step_shape, **opts)
    fn.__name__ = "sequence." + name
    cntk_case(name="sequence." + name, names=names, **kw)(fn)


# -- cntk.sequence ------------------------------------------------------------------------------
seq_case("reduce_sum", lambda C, x: C.sequence.reduce_sum(x))
seq_case("reduce_max", lambda C, x: C.sequence.reduce_max(x))
seq_case("first", lambda C, x: C.sequence.first(x))
seq_case("last", lambda C, x: C.sequence.last(x))
seq_case("softmax", lambda C, x: C.sequence.softmax(x))
seq_case("broadcast_as", lambda C, x: C.sequence.broadcast_as(C.sequence.last(x) * 2.0, x),
         names=["cntk.sequence.broadcast_as", "cntk.sequence.last"])
seq_case("slice", lambda C, x: C.sequence.slice(x, 1, 0), lengths=(3, 2, 5))
seq_case("slice__negative", lambda C, x: C.sequence.slice(x, -2, 0),
         names=["cntk.sequence.slice"])
seq_case("slice__both", lambda C, x: C.sequence.slice(x, 0, -1), lengths=(3, 2, 5),
         names=["cntk.sequence.slice"])
# a slice of one step deletes the sequence axis in CNTK 2.7 (one value per sequence)
seq_case("slice__one_step", lambda C, x: C.sequence.slice(x, 1, 2), lengths=(3, 2, 5),
         names=["cntk.sequence.slice"])
seq_case("slice__one_step_from_end", lambda C, x: C.sequence.slice(x, -2, -1),
         lengths=(3, 2, 5), names=["cntk.sequence.slice"])
seq_case("slice__one_step_plus_last",
         lambda C, x: C.tanh(C.sequence.slice(x, 0, 1)) + C.sequence.last(x), lengths=(3, 2, 5),
         names=["cntk.sequence.slice", "cntk.sequence.last"])
seq_case("past_value", lambda C, x: C.sequence.past_value(x))
seq_case("past_value__initial_state_time_step",
         lambda C, x: C.sequence.past_value(x, initial_state=0.5, time_step=2),
         names=["cntk.sequence.past_value"])
seq_case("future_value", lambda C, x: C.sequence.future_value(x))
seq_case("future_value__initial_state_time_step",
         lambda C, x: C.sequence.future_value(x, initial_state=-1.0, time_step=2),
         names=["cntk.sequence.future_value"])
seq_case("unpack", lambda C, x: C.sequence.unpack(x, -2.0, no_mask_output=True))
seq_case("is_first", lambda C, x: C.sequence.is_first(x) * C.reduce_sum(x, axis=0))
seq_case("is_last", lambda C, x: C.sequence.is_last(x) * C.reduce_sum(x, axis=0))
seq_case("last__width_of_the_padded_length",
         lambda C, x: C.layers.Dense(2)(C.sequence.last(x) + C.sequence.reduce_max(x)),
         step_shape=(5,), params=True,
         names=["cntk.sequence.last", "cntk.sequence.reduce_max", "cntk.layers.Dense"],
         note="the per-sequence (B, 5) values, 5 the padded length, have no sequence axis "
              "(their ops' declarations say so), so Dense maps them as plain values")
seq_case("first__one_wide_steps",
         lambda C, x: C.layers.Dense(3)(C.sequence.first(x) * C.sequence.reduce_sum(x)),
         step_shape=(1,), params=True,
         names=["cntk.sequence.first", "cntk.sequence.reduce_sum", "cntk.layers.Dense"],
         note="built on a (1, 1, 1) sequence placeholder, the (1, 1) results look like "
              "(batch, steps) and have no sequence axis all the same")
seq_case("tanh_of_past", lambda C, x: C.tanh(x + C.sequence.past_value(x, time_step=1)),
         names=["cntk.sequence.past_value", "cntk.ops.tanh"],
         note="element-wise ops keep the sequence axis")

# -- recurrent layers (parameters set from their names) -------------------------------------------
_LAYERS = ["cntk.layers.Recurrence"]
seq_case("Recurrence_LSTM", lambda C, x: C.layers.Recurrence(C.layers.LSTM(4))(x),
         names=_LAYERS + ["cntk.layers.LSTM"], params=True)
seq_case("Recurrence_LSTM__backwards",
         lambda C, x: C.layers.Recurrence(C.layers.LSTM(4), go_backwards=True)(x),
         names=_LAYERS + ["cntk.layers.LSTM"], params=True)
seq_case("Recurrence_LSTM__peepholes",
         lambda C, x: C.layers.Recurrence(C.layers.LSTM(2, use_peepholes=True))(x),
         names=_LAYERS + ["cntk.layers.LSTM"], params=True)
seq_case("Recurrence_GRU", lambda C, x: C.layers.Recurrence(C.layers.GRU(3))(x),
         names=_LAYERS + ["cntk.layers.GRU"], params=True)
seq_case("Recurrence_GRU__initial_state_backwards",
         lambda C, x: C.layers.Recurrence(C.layers.GRU(3), go_backwards=True,
                                          initial_state=0.25)(x),
         names=_LAYERS + ["cntk.layers.GRU"], params=True)
seq_case("Recurrence_RNNStep", lambda C, x: C.layers.Recurrence(C.layers.RNNStep(5))(x),
         names=_LAYERS + ["cntk.layers.RNNStep"], params=True)
seq_case("Recurrence_RNNStep__tanh",
         lambda C, x: C.layers.Recurrence(C.layers.RNNStep(2, activation=C.tanh))(x),
         names=_LAYERS + ["cntk.layers.RNNStep"], params=True)
seq_case("Recurrence_function",
         lambda C, x: C.layers.Recurrence(lambda h, u: C.tanh(h * 0.5 + u))(x),
         names=_LAYERS, note="a plain function as the step: its state is shaped like a step")
seq_case("Fold_GRU", lambda C, x: C.layers.Fold(C.layers.GRU(3))(x),
         names=["cntk.layers.Fold", "cntk.layers.GRU"], params=True)
seq_case("Fold_LSTM__backwards",
         lambda C, x: C.layers.Fold(C.layers.LSTM(2), go_backwards=True)(x),
         names=["cntk.layers.Fold", "cntk.layers.LSTM"], params=True)
seq_case("RecurrenceFrom_GRU", lambda C, x, h0: C.layers.RecurrenceFrom(C.layers.GRU(3))(h0, x),
         names=["cntk.layers.RecurrenceFrom", "cntk.layers.GRU"], params=True, extra=(3,))
seq_case("LSTM_classifier",
         lambda C, x: C.layers.Sequential([
             C.layers.Embedding(4), C.layers.Recurrence(C.layers.LSTM(5)), C.sequence.last,
             C.layers.Dense(2)])(x),
         names=["cntk.layers.Embedding", "cntk.layers.Recurrence", "cntk.layers.LSTM",
                "cntk.sequence.last", "cntk.layers.Dense", "cntk.layers.Sequential"],
         params=True, note="the tutorials' sequence classifier")


_REDUCERS = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
             "reduce_log_sum_exp", "reduce_l1", "reduce_l2", "reduce_sum_square"]


@cntk_case(names=["cntk.ops.%s" % n for n in _REDUCERS] + ["cntk.Axis.all_axes"],
           rtol=1e-4, atol=1e-5,
           note="over all axes of sequences of different lengths: the steps only, not the "
                "padding (CNTK 208 counts its CTC loss this way; reduce_mean divides by the "
                "real steps' values)")
def reduce__all_axes_of_sequences(C, r):
    r.touch("cntk.Axis.all_axes")
    x = C.sequence.input_variable((2, 3), needs_gradient=True)
    data = [r.rand(n, 2, 3, low=0.5, high=1.5) for n in (4, 1, 3)]
    res = {}
    for name in _REDUCERS:
        f = getattr(C, name)(x, axis=C.Axis.all_axes())
        value, (grad,) = r.cntk_forward_backward(f, {x: data}, [x])
        res[name] = f.eval({x: data})
        res[name + " shape"] = list(f.shape)
        res[name + " grad"] = np.concatenate([np.asarray(g).reshape(-1, 2, 3) for g in grad])
    return res
