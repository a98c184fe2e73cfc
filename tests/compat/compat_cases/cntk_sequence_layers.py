"""``cntk.layers``' sequence layers (``Delay``, ``PastValueWindow``, ``UnfoldFrom``,
``RNNUnit``, ``return_full_state``), ``cntk.layers.sequence`` and the ``Sequence[...]`` types,
on minibatches of ragged sequences (lengths 3, 1, 5): values and the gradients of
``sum(out * w)`` w.r.t. the inputs and parameters (``run_sequence`` in cntk_sequence.py).
"""

import numpy as np

from compat_harness import cntk_case
from compat_cases.cntk_sequence import seq_case

_LS = "cntk.layers.sequence."
seq_case("Delay", lambda C, x: C.layers.Delay(2, initial_state=0.5)(x),
         names=["cntk.layers.Delay"])
seq_case("Delay__future", lambda C, x: C.layers.Delay(-1)(x), names=["cntk.layers.Delay"])


def _window(C, x, **kw):
    value, valid = C.layers.PastValueWindow(4, axis=-2, **kw)(x).outputs
    return C.splice(value * 2.0, valid, axis=-1)


seq_case("PastValueWindow", _window, names=["cntk.layers.PastValueWindow", "cntk.ops.splice"],
         note="the value (4, 3) and its validity (4, 1) spliced side by side")
seq_case("PastValueWindow__backwards", lambda C, x: _window(C, x, go_backwards=True),
         names=["cntk.layers.PastValueWindow", "cntk.ops.splice"])
seq_case("Recurrence_RNNUnit", lambda C, x: C.layers.Recurrence(C.layers.RNNUnit(3))(x),
         names=["cntk.layers.Recurrence", "cntk.layers.RNNUnit"], params=True,
         substitutes={"cntk.layers.RNNUnit": "cntk.layers.RNNStep"},
         note="CNTK 2.7's RNNUnit fails before it starts (blocks.py calls warnings.warn without "
              "importing warnings); its documented meaning is RNNStep's, which the real side "
              "runs")


def _full_state(C, x, layer):
    h, c = layer(C.layers.LSTM(2), return_full_state=True)(x).outputs
    return h + c * 2.0


seq_case("Recurrence_LSTM__return_full_state",
         lambda C, x: _full_state(C, x, C.layers.Recurrence),
         names=["cntk.layers.Recurrence", "cntk.layers.LSTM"], params=True,
         note="h + 2 c: both states of every step")
seq_case("Fold_LSTM__return_full_state", lambda C, x: _full_state(C, x, C.layers.Fold),
         names=["cntk.layers.Fold", "cntk.layers.LSTM"], params=True)
seq_case("UnfoldFrom_Dense",
         lambda C, x, h0: C.layers.UnfoldFrom(C.layers.Dense(3, activation=C.tanh))(h0, x),
         names=["cntk.layers.UnfoldFrom", "cntk.layers.Dense"], params=True, extra=(3,),
         note="out_t = Dense(out_{t-1}) from h0, as long as each sequence of x")
seq_case("UnfoldFrom__output_and_state",
         lambda C, x, h0: C.layers.UnfoldFrom(
             lambda h: (C.sigmoid(h) * 2.0, C.tanh(h * 0.5 + 0.3)))(h0, x),
         names=["cntk.layers.UnfoldFrom", "cntk.ops.sigmoid", "cntk.ops.tanh"], extra=(3,),
         note="the generator gives (output, new state)")
seq_case("UnfoldFrom__until_predicate_length_increase",
         lambda C, x, h0: C.layers.UnfoldFrom(
             lambda h: C.tanh(h * 1.5 + 0.2),
             until_predicate=lambda o: C.greater(C.reduce_sum(o), 1.2),
             length_increase=2)(h0, x),
         names=["cntk.layers.UnfoldFrom", "cntk.ops.greater", "cntk.ops.reduce_sum"],
         extra=(3,), note="at most twice as long as x; each sequence ends at the first step "
                          "whose values sum above 1.2")


@cntk_case(names=["cntk.layers.typing.Sequence", "cntk.layers.typing.SequenceOver",
                  "cntk.layers.typing.SequenceOverMeta", "cntk.layers.typing.Tensor",
                  "cntk.Function.with_signature", "cntk.ops.input_variable",
                  "cntk.sequence.reduce_sum", "cntk.Function.dynamic_axes",
                  "cntk.layers.Sequence", "cntk.layers.SequenceOver"])
def sequence_types(C, r):
    T = C.layers.typing
    r.touch("cntk.Function.dynamic_axes", "cntk.Function.eval", "cntk.Function.with_signature")

    @C.Function.with_signature(T.Sequence[T.Tensor[3]])
    def total(x):
        return C.sequence.reduce_sum(x) * 2.0

    over = T.SequenceOver[C.Axis("words")]
    y = C.input_variable(**over[T.Tensor[2]])
    z = C.input_variable(**C.layers.Sequence[T.Tensor[4]])
    meta = type(T.SequenceOver) is T.SequenceOverMeta and C.layers.SequenceOver is T.SequenceOver
    data = [r.randn(n, 3) for n in (3, 1, 5)]
    return {"total": total(data), "axes": [len(v.dynamic_axes) for v in (y, z)],
            "shapes": [list(v.shape) for v in (y, z)], "meta": bool(meta),
            "sequence axis": [bool(v.dynamic_axes[1].is_sequence_axis) for v in (y, z)]}


@cntk_case(names=["cntk.layers.sequence", _LS + "Recurrence", _LS + "Fold", _LS + "Delay",
                  _LS + "UnfoldFrom", _LS + "PastValueWindow", _LS + "LSTM", _LS + "RNNUnit",
                  _LS + "InferredDimension"])
def layers_sequence_module(C, r):
    """``cntk.layers.sequence`` as a module (CNTK's ``C.layers.sequence`` attribute is
    ``cntk.sequence``: the ops module shadows it)."""
    m = r.module("cntk.layers.sequence")
    x = C.sequence.input_variable(2)
    y = m.Fold(m.LSTM(2))(m.Delay(1)(x))
    r.touch("cntk.Function.eval")
    same = [getattr(m, n) is getattr(C.layers, n)
            for n in ("Recurrence", "UnfoldFrom", "PastValueWindow", "RNNUnit")]
    r.set_params(list(y.parameters))
    return {"same": same, "shadowed": C.layers.sequence is C.sequence,
            "inferred": int(m.InferredDimension),
            "out": y.eval({x: [np.ones((n, 2), np.float32) * 0.3 for n in (3, 1, 5)]})}


@cntk_case(names=["cntk.layers.BatchNormalization", "cntk.Trainer.train_minibatch",
                  "cntk.sequence.input_variable"],
           note="batch normalisation layers (per channel of each step's image, per element of "
                "each step's vector) on sequences, trained by a Trainer on ragged minibatches "
                "(CNTK 2.7's statistics: over the matrix it packs the sequences into, its gaps "
                "zeros; the first minibatch sets the running statistics): losses, parameters, "
                "statistics and an evaluation after")
def BatchNormalization__sequences_trained(C, r):
    img = C.sequence.input_variable((2, 2, 2))
    vec = C.sequence.input_variable(3)
    a = C.layers.BatchNormalization(map_rank=1, normalization_time_constant=16)(img)
    b = C.layers.BatchNormalization(normalization_time_constant=16)(vec)
    model = C.combine([C.tanh(a), C.tanh(b)])
    r.touch("cntk.Function.parameters", "cntk.Function.constants", "cntk.Function.eval",
            "cntk.Parameter.value", "cntk.Constant.value", "cntk.combine",
            "cntk.Trainer.previous_minibatch_loss_average", "cntk.Trainer.train_minibatch")
    loss = C.sequence.reduce_sum(C.reduce_sum(model.outputs[0] * model.outputs[0]) +
                                 C.reduce_sum(model.outputs[1]))
    trainer = C.Trainer(model, (loss, None),
                        [C.sgd(model.parameters, C.learning_parameter_schedule(0.1))])
    res = {"losses": []}
    for lengths in [(3, 1, 5), (2, 2), (4, 1, 1, 2)]:
        trainer.train_minibatch({img: [r.randn(n, 2, 2, 2) * 2.0 + 1.0 for n in lengths],
                                 vec: [r.randn(n, 3) - 0.5 for n in lengths]})
        res["losses"].append(trainer.previous_minibatch_loss_average)
    for k, p in enumerate(sorted(model.parameters, key=lambda p: (p.name, p.shape))):
        res["parameter %d" % k] = p.value
    for k, c in enumerate(sorted(model.constants, key=lambda c: (c.name, c.shape))):
        res["constant %d" % k] = np.asarray(c.value, np.float32)
    out = model.eval({img: [r.randn(n, 2, 2, 2) for n in (2, 3)],
                      vec: [r.randn(n, 3) for n in (2, 3)]})
    for k, o in enumerate(model.outputs):
        res["after %d" % k] = np.concatenate([np.asarray(v, np.float32) for v in out[o]], 0)
    return res


def _parameters_and_values(r, outs, size):
    """Each recurrence's parameters (set), shape and values on three sequences of ``x`` (its
    other arguments: 3 samples of ``size``)."""
    res = {}
    data = [r.randn(n, 3) for n in (3, 1, 2)]
    for k, y in enumerate(outs):
        res["params %d" % k] = r.set_params(y.parameters)
        feed = {a: data if a.name == "x" else r.randn(3, size) for a in y.arguments}
        res["shape %d" % k] = list(y.shape)
        res["value %d" % k] = np.concatenate(y.eval(feed), 0)
    return res


class _Model(object):
    """A model holding its cells as attributes (a step reaches them by ``self.cell``)."""

    def __init__(self, C):
        self.cell = C.layers.LSTM(4)
        self.other = C.layers.LSTM(6)
        self.cells = [C.layers.GRU(5), C.layers.GRU(7)]


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.RecurrenceFrom", "cntk.layers.Fold",
                  "cntk.layers.LSTM", "cntk.layers.GRU", "cntk.ops.functions.Function"],
           rtol=1e-5, atol=1e-6,
           note="a step reaching its recurrent cell by an attribute (m.cell(h, c, x)) or a "
                "computed index (recs[k]) while cells of other state shapes are held too: "
                "CNTK infers the states' shapes from the cell the step applies (Stadyn "
                "called the step with one state: no value for the arguments ['inp'])")
def Recurrence__cell_by_attribute_or_computed_index(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.parameters")
    x = C.sequence.input_variable(3, name="x")
    m = _Model(C)
    recs = [C.layers.LSTM(8), C.layers.LSTM(9)]
    k = 1

    @C.Function
    def step(h, c, inp):
        return m.other(h, c, inp)
    h0 = C.input_variable(9, name="h0")
    outs = [C.layers.Recurrence(lambda h, c, inp: m.cell(h, c, inp))(x),
            C.layers.Recurrence(step)(x),
            C.layers.RecurrenceFrom(lambda h, c, inp: recs[k](h, c, inp))(h0, h0, x),
            C.layers.Fold(lambda h, inp: m.cells[k - 1](h, inp))(x)]
    return _parameters_and_values(r, outs, 9)


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.RecurrenceFrom", "cntk.layers.Fold",
                  "cntk.layers.LSTM", "cntk.layers.GRU", "cntk.ops.functions.Function"],
           rtol=1e-5, atol=1e-6,
           note="a step reaching its recurrent cell through a list (recs[0](h, c, x)) or a "
                "dict, not a name of its own")
def Recurrence__cell_in_list(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.parameters", "cntk.Function.outputs")
    x = C.sequence.input_variable(3, name="x")
    recs = [C.layers.LSTM(4), C.layers.LSTM(6)]
    cells = {"gru": C.layers.GRU(5)}

    @C.Function
    def step(h, c, inp):
        return recs[0](h, c, inp)
    h0, c0 = C.input_variable(6, name="h0"), C.input_variable(6, name="c0")
    outs = [C.layers.Recurrence(step)(x),
            C.layers.RecurrenceFrom(lambda h, c, inp: recs[1](h, c, inp))(h0, c0, x),
            C.layers.Fold(lambda h, inp: cells["gru"](h, inp))(x)]
    return _parameters_and_values(r, outs, 6)


@cntk_case(names=["cntk.layers.Recurrence", "cntk.layers.RecurrenceFrom", "cntk.layers.Fold",
                  "cntk.layers.UnfoldFrom", "cntk.layers.Signature",
                  "cntk.Function.update_signature"],
           note="a typed @C.Function (its arguments of known shape) as the step of "
                "Recurrence, RecurrenceFrom, Fold (forward and backward) or the generator of "
                "UnfoldFrom: CNTK 2.7 calls it on placeholders of unknown shape as the layer is "
                "made (sequence.py's @Function), and refuses it there with TypeError "
                "(functions.py:333); an untyped step of the same body is taken and runs.  "
                "So is a layer given types by update_signature (an LSTM as a Recurrence's "
                "step; a Dense as a Sequential's step or after layer >>).  Stadyn took the "
                "typed step (before rmE37)")
def recurrence__typed_step_refused_as_made(C, r):
    r.touch("cntk.layers.Signature", "cntk.layers.Tensor", "cntk.Function.update_signature")
    T = C.layers.Tensor

    @C.Function
    @C.layers.Signature(T[3], T[4])
    def typed(h, x):
        return C.tanh(h + x[0:3])

    @C.Function
    @C.layers.Signature(T[3])
    def generator(h):
        return C.tanh(h)

    @C.Function
    def untyped(h, x):
        return C.tanh(h + x[0:3])

    def refused(make):
        try:
            make()
            return "made"
        except TypeError as e:
            return ["TypeError", str(e).split("\n")[0]]
    res = {"Recurrence": refused(lambda: C.layers.Recurrence(typed)),
           "Recurrence backward": refused(lambda: C.layers.Recurrence(typed, go_backwards=True)),
           "RecurrenceFrom": refused(lambda: C.layers.RecurrenceFrom(typed)),
           "Fold": refused(lambda: C.layers.Fold(typed)),
           "UnfoldFrom": refused(lambda: C.layers.UnfoldFrom(generator)),
           "Sequential of a Recurrence": refused(
               lambda: C.layers.Sequential([C.layers.Recurrence(typed)]))}

    def typed_layer(layer, *types):
        layer.update_signature(*types)
        return layer
    res["Recurrence of a typed LSTM"] = refused(
        lambda: C.layers.Recurrence(typed_layer(C.layers.LSTM(3), 3, 3, 4)))
    res["Sequential of a typed Dense"] = refused(
        lambda: C.layers.Sequential([typed_layer(C.layers.Dense(4), 3)]))
    res["layer >> typed Dense"] = refused(
        lambda: C.layers.Dense(3) >> typed_layer(C.layers.Dense(4), 3))
    x = C.sequence.input_variable(4)
    data = [np.arange(12, dtype=np.float32).reshape(3, 4) / 12]
    res["untyped step"] = C.layers.Recurrence(untyped)(x).eval({x: data})
    return res
