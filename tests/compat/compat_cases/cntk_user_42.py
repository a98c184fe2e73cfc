"""A CNTK 2.7 user's own programs (round 42), from CNTK 2.7's own Python tests
(``cntk/layers/tests/layers_test.py``'s ``test_recurrence``: a ``RecurrenceFrom(GRU)`` whose
initial state is a sequence on an axis of its own) and what they rest on: ``past_value``,
``future_value`` and ``delay`` given a sequence as ``initial_state``, which CNTK 2.7 reads as
that sequence's last step (its first for a delay into the future), whatever its axis; each run
unchanged on CNTK 2.7 and on ``stadyn.compat.cntk``."""

import functools

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import as_raised, as_returned, outcome

_returned = functools.partial(outcome, convert=as_returned, raised=as_raised)


def _ragged(r, lengths, dim):
    return [r.randn(n, dim) for n in lengths]


@cntk_case(names=["cntk.sequence.past_value", "cntk.sequence.future_value",
                  "cntk.sequence.delay", "cntk.sequence.input_variable", "cntk.Axis"])
def user42_delay_from_a_sequence_initial_state(C, r):
    """``past_value(x, initial_state=s)`` with ``s`` a sequence on another axis (two sequences
    of 4 and 2 steps) starts each of ``x``'s sequences from ``s``'s last step;
    ``future_value`` ends them with ``s``'s first; ``delay`` by +-2 likewise; ``s`` on ``x``'s
    own axis too (not step by step: its last step).  Values, and the gradients w.r.t. ``x``
    and ``s`` (only the steps read get one); a delay by 3 from an initial state of 2 steps
    is refused when it runs, as CNTK 2.7 refuses it (ValueError)."""
    x = C.sequence.input_variable(2, sequence_axis=C.Axis("inputAxis"), needs_gradient=True)
    s = C.sequence.input_variable(2, sequence_axis=C.Axis("stateAxis"), needs_gradient=True)
    same = C.sequence.input_variable(2, sequence_axis=C.Axis("inputAxis"),
                                     needs_gradient=True)
    xv = r.randn(2, 3, 2)
    sv = _ragged(r, [4, 2], 2)
    samev = r.randn(2, 3, 2)
    res = {}
    for key, f, init, fed in [
            ("past", C.sequence.past_value(x, initial_state=s), s, sv),
            ("future", C.sequence.future_value(x, initial_state=s), s, sv),
            ("delay +2", C.sequence.delay(x, initial_state=s, time_step=2), s, sv),
            ("delay -2", C.sequence.delay(x, initial_state=s, time_step=-2), s, sv),
            ("past same axis", C.sequence.past_value(x, initial_state=same), same, samev)]:
        feed = {x: xv, init: fed}
        res[key + " eval"] = np.asarray(f.eval(feed))
        value, (gx, gs) = r.cntk_forward_backward(f, feed, [x, init])
        res[key] = np.asarray(value)
        res[key + " dx"] = np.asarray(gx)
        res[key + " ds"] = np.concatenate([np.asarray(g) for g in gs])
    # a delay by 3 from initial states of 4 and 2 steps: CNTK 2.7's ValueError at the run
    # (its initial state must have 1 step or at least 3)
    for key, k in [("past 3 short", 3), ("future 3 short", -3)]:
        f = C.sequence.delay(x, initial_state=s, time_step=k)
        res[key] = _returned(lambda: np.asarray(f.eval({x: xv, s: sv})).tolist())
    return res


@cntk_case(names=["cntk.layers.RecurrenceFrom", "cntk.layers.GRU", "cntk.layers.LSTM",
                  "cntk.layers.Recurrence", "cntk.layers.typing.SequenceOver",
                  "cntk.layers.typing.Tensor", "cntk.layers.typing.Signature",
                  "cntk.Function"])
def user42_recurrence_from_a_sequence_initial_state(C, r):
    """CNTK 2.7's ``test_recurrence``: ``RecurrenceFrom(GRU(5, init=0.05))`` fed an initial
    state that is a sequence on its own axis gives ``Recurrence(GRU(5, init=0.05),
    initial_state=0.1)``'s output when every step of it is 0.1 (the test's own expectation);
    with steps that differ, only the last (going backwards: the first) is read.  Forwards
    and backwards, GRU and LSTM (two initial-state sequences), sequences of unequal length
    in the batch; values and the gradients w.r.t. the input and the initial states."""
    L = C.layers
    T = C.layers.typing
    input_axis, state_axis = C.Axis("inputAxis"), C.Axis("stateAxis")
    In, St = T.SequenceOver[input_axis], T.SequenceOver[state_axis]
    x = np.reshape(np.arange(0, 25, dtype=np.float32), (1, 5, 5))
    R = L.Recurrence(L.GRU(5, init=0.05), go_backwards=False, initial_state=0.1)

    @C.Function
    @T.Signature(In[T.Tensor[5]])
    def F(x):
        return R(x)

    RF = L.RecurrenceFrom(L.GRU(5, init=0.05), go_backwards=False)

    @C.Function
    @T.Signature(s=St[T.Tensor[5]], x=In[T.Tensor[5]])
    def FF(s, x):
        return RF(s, x)

    res = {"constant": np.asarray(F(x)[0]), "from 0.1": np.asarray(FF(np.ones((1, 5, 5)) * 0.1,
                                                                        x)[0])}
    xs = r.randn(2, 3, 2)
    hs = _ragged(r, [4, 2], 3)
    cs = _ragged(r, [4, 2], 3)
    for key, backwards in [("forward", False), ("backward", True)]:
        gru = L.RecurrenceFrom(L.GRU(3, init=0.1), go_backwards=backwards)
        lstm = L.RecurrenceFrom(L.LSTM(3, init=0.2), go_backwards=backwards)
        xv = C.sequence.input_variable(2, sequence_axis=input_axis, needs_gradient=True)
        hv = C.sequence.input_variable(3, sequence_axis=state_axis, needs_gradient=True)
        cv = C.sequence.input_variable(3, sequence_axis=state_axis, needs_gradient=True)
        for cell, f, wrt in [("gru", gru(hv, xv), [xv, hv]),
                             ("lstm", lstm(hv, cv, xv), [xv, hv, cv])]:
            feed = {xv: xs, hv: hs, cv: cs} if cell == "lstm" else {xv: xs, hv: hs}
            value, grads = r.cntk_forward_backward(f, feed, wrt)
            res["%s %s" % (cell, key)] = np.asarray(value)
            res["%s %s dx" % (cell, key)] = np.asarray(grads[0])
            for name, g in zip(["dh", "dc"], grads[1:]):
                res["%s %s %s" % (cell, key, name)] = np.concatenate([np.asarray(a) for a in g])
    return res


@cntk_case(names=["cntk.Function.clone", "cntk.ops.functions.CloneMethod",
                  "cntk.constant", "cntk.Constant.value", "cntk.Function.constants",
                  "cntk.layers.BatchNormalization", "cntk.Trainer.train_minibatch"])
def user42_clone_copies_constants(C, r):
    """CNTK 2.7's ``function_test.py::test_clone_freeze``: ``clone('freeze')`` and
    ``clone('clone')`` deep-copy the constants a user made (Function.cpp:755-779), so a
    constant's ``value`` set after the clone changes the original's output and leaves the
    clone's; ``share`` keeps them.  A BatchNormalization's running statistics (constants)
    cloned with ``clone``: a training step of the clone moves the clone's, not the
    original's."""
    r.touch("cntk.Constant.value", "cntk.Function.constants", "cntk.Function.clone",
            "cntk.Trainer.train_minibatch")
    x = C.input_variable(3)
    k = C.constant(r.randn(3, 2), name="k")
    w = C.parameter(init=r.randn(3, 2), name="w")
    f = C.times(x, k) + C.times(x, w)
    clones = {m: f.clone(getattr(C.ops.functions.CloneMethod, m)) for m in
              ("freeze", "clone", "share")}
    xv = r.randn(2, 3)
    res = {"before %s" % m: np.asarray(c.eval({c.arguments[0]: xv})) for m, c in clones.items()}
    res["is k"] = {m: [q is k or q == k for q in c.constants] for m, c in clones.items()}
    k.value = r.randn(3, 2)
    res["original after"] = np.asarray(f.eval({x: xv}))
    for m, c in clones.items():
        res["after %s" % m] = np.asarray(c.eval({c.arguments[0]: xv}))
        res["constants %s" % m] = sorted(q.name for q in c.constants)

    y = C.input_variable(4)
    bn = C.layers.BatchNormalization(map_rank=1, normalization_time_constant=2, name="bn")(y)
    bn_clone = bn.clone(C.ops.functions.CloneMethod.clone)
    label = C.input_variable(4)
    loss = C.squared_error(bn_clone, label)
    trainer = C.Trainer(bn_clone, (loss, None), [C.sgd(bn_clone.parameters, lr=0.1)])
    yv = r.randn(5, 4) * 2 + 1
    trainer.train_minibatch({loss.arguments[0]: yv, loss.arguments[1]: r.randn(5, 4)})
    for key, g in (("bn original", bn), ("bn clone", bn_clone)):
        res[key + " constants"] = {q.name: np.asarray(q.value).ravel().tolist()
                                   for q in g.constants if q.name}
        res[key + " eval"] = np.asarray(g.eval({g.arguments[0]: yv}))
    return res


@cntk_case(names=["cntk.sequence.last", "cntk.sequence.reduce_sum",
                  "cntk.sequence.input_variable", "cntk.Function.eval"])
def user42_begin_flags_split_an_array_into_sequences(C, r):
    """CNTK 2.7's ``function_test.py::test_sequences_packed_in_single_ndarray``: an array fed
    to a sequence input is one sequence, but with sequence-begin flags (``{x: (data,
    [True, True])}``) its first axis holds the sequences (CNTK's ``Value.create``:
    ``list(np.atleast_1d(data))``), each of one step where it is a step's shape; as many
    flags as sequences, else CNTK's ValueError.  Inputs before the flagged one in the dict
    keep their array as one sequence."""
    r.touch("cntk.Function.eval")
    x = C.sequence.input_variable(2)
    last = C.sequence.last(x)
    data = np.asarray([[1, 2], [2, 3]], np.float32)
    res = {"one sequence": np.asarray(last.eval({x: data})),
           "two of one step": np.asarray(last.eval({x: (data, [True, True])})),
           "flags short": _returned(lambda: np.asarray(last.eval({x: (data, [True])})).tolist())}
    three = r.randn(2, 3, 2)
    total = C.sequence.reduce_sum(x)
    res["two of three steps"] = np.asarray(total.eval({x: (three, [True, True])}))
    res["one of three steps"] = np.asarray(total.eval({x: three[0]}))
    y = C.sequence.input_variable(2)
    both = C.sequence.reduce_sum(x) + C.sequence.reduce_sum(y)
    res["flags on the second input"] = _returned(
        lambda: np.asarray(both.eval({x: three[0], y: (three[1], [True, True, True])})).tolist())
    return res


@cntk_case(names=["cntk.layers.Dense", "cntk.layers.Embedding", "cntk.layers.Dropout"])
def user42_layer_arguments_refused_with_valueerror(C, r):
    """CNTK 2.7's own ``layers_test.py`` (``test_layers_dense``, ``test_layers_embedding``,
    ``test_layers_dropout``): the layers' contradictory or missing arguments are refused when
    the layer is made, each with a ValueError -- Dense's ``input_rank`` with ``map_rank``,
    Embedding's ``init`` with ``weights``, a shape with ``weights``, neither a shape nor
    ``weights``, Dropout's rates outside [0, 1), both rates or neither.  Embedding's
    ``weights`` alone, and under ``default_options(init=...)``, are taken."""
    L = C.layers
    calls = [("dense both ranks", lambda: L.Dense(2, input_rank=1, map_rank=1)),
             ("embedding init and weights",
              lambda: L.Embedding(shape=None, init=1, weights=[1., 2., 3.])),
             ("embedding shape and weights", lambda: L.Embedding(3, weights=[1., 2., 3.])),
             ("embedding no shape", lambda: L.Embedding(name="embedding")),
             ("dropout 1.5", lambda: L.Dropout(1.5, name="bar")),
             ("dropout -0.5", lambda: L.Dropout(-0.5)),
             ("dropout keep -1.5", lambda: L.Dropout(keep_prob=-1.5, name="bar")),
             ("dropout both", lambda: L.Dropout(0.5, keep_prob=0.5)),
             ("dropout neither", lambda: L.Dropout())]
    res = {key: _returned(lambda fn=fn: type(fn()).__name__ and "made") for key, fn in calls}
    y = C.input_variable(2)
    table = [[1., 3, 2], [3, 4, 1]]
    res["weights only"] = np.asarray(L.Embedding(weights=table, name="baz")(y).eval(
        {y: [[-1., 1.]]}))
    with C.layers.default_options(init=C.glorot_uniform()):
        res["weights under default_options"] = np.asarray(L.Embedding(weights=table)(y).eval(
            {y: [[1., 1.]]}))
    return res


@cntk_case(names=["cntk.input_variable", "cntk.Function.eval"])
def user42_zero_d_samples_refused(C, r):
    """CNTK 2.7's own ``function_test.py::test_0d_data_1d_sample_shape``: a list of 0-d
    arrays (or NumPy scalars) fed to an input of shape ``(1,)`` is refused (ValueError
    "Value::Create: The shape '[]' of sequence #0 is not compatible with the sample shape
    '[1]'"); a list of ``(1,)`` arrays, or nested lists, are taken."""
    r.touch("cntk.Function.eval")
    x = C.input_variable(shape=(1,))
    op = x + x
    res = {}
    for key, fed in [("0-d array", [np.asarray(2)]), ("two 0-d", [np.asarray(2), np.asarray(3)]),
                     ("float32 scalar", [np.float32(2)]), ("(1,) arrays", [np.asarray([2.])]),
                     ("nested lists", [[2]]), ("array", np.asarray([2]))]:
        res[key] = _returned(lambda fed=fed: np.asarray(op.eval({x: fed})).tolist())
    return res
