"""CNTK 2.7's truncated back-propagation through time in its Python readers:
``MinibatchSource(..., truncation_length=N)`` packs ``max(1, M // N)`` slots of N steps (a
slot's row holding pieces of several sequences), and a Trainer's recurrences go on, in each
slot, from the state the slot's sequence ended the previous minibatch with."""

import functools
import os

import numpy as np

from compat_harness import cntk_case
from compat_outcomes import outcome

LENGTHS = [7, 3, 9, 5, 4, 6, 8, 2]


def _ctf(folder, r):
    """Sequences of LENGTHS steps: ``x`` 2 values, ``y`` one-hot of 3."""
    path = os.path.join(folder, "seq.ctf")
    with open(path, "w") as f:
        for s, n in enumerate(LENGTHS):
            xs, ys = r.randn(n, 2), r.onehot(n, 3)
            for t in range(n):
                f.write("%d |x %.5f %.5f |y %s\n" % (s, xs[t, 0], xs[t, 1],
                                                     " ".join("%d" % v for v in ys[t])))
    return path


def _source(C, path, n=4, **kw):
    streams = C.io.StreamDefs(x=C.io.StreamDef(field="x", shape=2),
                              y=C.io.StreamDef(field="y", shape=3))
    return C.io.MinibatchSource(C.io.CTFDeserializer(path, streams), randomize=False,
                                truncation_length=n, **kw)


@cntk_case(names=["cntk.io.MinibatchSource", "cntk.io.MinibatchData"],
           note="Stadyn refused truncation_length (a ValueError)")
def truncated_minibatches(C, r):
    """Minibatches of 8 and 12 samples with truncation length 4 (two and three slots), over
    one and two sweeps: sequences, samples and sweep ends of each (CNTK 2.7's Value of a
    truncated minibatch cannot be read as arrays), and the running sum of x along each
    sequence (a Recurrence of plus) summed over each minibatch: the state goes on in each
    slot."""
    r.touch("cntk.io.MinibatchData")
    res = {}
    with r.tempdir() as folder:
        path = _ctf(folder, r)
        for size, sweeps in ((8, 1), (12, 2), (3, 1)):
            src = _source(C, path, max_sweeps=sweeps)
            got = []
            while True:
                mb = src.next_minibatch(size)
                if not mb:
                    break
                d = mb[src.streams.x]
                got.append([int(d.num_sequences), int(d.num_samples), bool(d.end_of_sweep)])
            res["mb_%d_%d" % (size, sweeps)] = got
        x = C.sequence.input_variable(2)
        total = C.reduce_sum(C.layers.Recurrence(C.plus, initial_state=0.0)(x))
        w = C.parameter((1,), init=np.ones(1, np.float32))
        trainer = C.Trainer(None, (total * w, None),
                            [C.sgd([w], C.learning_parameter_schedule(0.0))])
        src = _source(C, path, max_sweeps=1)
        sums = []
        while True:
            mb = src.next_minibatch(8, input_map={x: src.streams.x})
            if not mb:
                break
            trainer.train_minibatch(mb)
            sums.append([trainer.previous_minibatch_sample_count,
                         float(trainer.previous_minibatch_loss_average)])
        res["running_sums"] = sums
    return res


@cntk_case(names=["cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch"],
           note="Stadyn refused truncation_length (a ValueError)", rtol=1e-4, atol=1e-5)
def truncated_lstm_training(C, r):
    """An LSTM of 4 and a Dense of 3 trained with momentum SGD on minibatches of 8 samples
    truncated at 3 steps (two slots) for a sweep and a half: each step's loss, metric and
    sample count, a test minibatch of the same source in between (its state goes on too), and
    the parameters at the end."""
    r.touch("cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch")
    x = C.sequence.input_variable(2, name="x")
    y = C.sequence.input_variable(3, name="y")
    z = C.layers.Sequential([C.layers.Recurrence(C.layers.LSTM(4)), C.layers.Dense(3)])(x)
    res = {"parameters": r.set_params(z.parameters)}
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.2),
                                        C.momentum_schedule(0.5))])
    with r.tempdir() as folder:
        path = _ctf(folder, r)
        src = _source(C, path, n=3, max_samples=66)
        steps = []
        for k in range(20):
            mb = src.next_minibatch(8, input_map={x: src.streams.x, y: src.streams.y})
            if not mb:
                break
            if k == 4:
                steps.append(["test", float(trainer.test_minibatch(mb))])
                continue
            trainer.train_minibatch(mb)
            steps.append([trainer.previous_minibatch_sample_count,
                          float(trainer.previous_minibatch_loss_average),
                          float(trainer.previous_minibatch_evaluation_average)])
        res["steps"] = steps
    res["after"] = r.param_values(z.parameters)
    return res


@cntk_case(names=["cntk.sequence.past_value", "cntk.sequence.future_value"],
           note="Stadyn refused truncation_length (a ValueError); a past_value outside a "
                "loop then read its initial state at each piece that goes on, a future_value "
                "its initial state past each piece that goes on (CNTK 2.7: 0)")
def truncated_past_value(C, r):
    """A ``past_value`` and a ``future_value`` outside a recurrence loop over truncated
    minibatches (8 samples, truncation length 4): a piece that goes on reads, at its first
    step, the last step of its slot's previous piece, and past its last step 0 (not the
    initial state: its future is in the next minibatch); the sum of the delayed values of
    each minibatch."""
    r.touch("cntk.sequence.past_value", "cntk.sequence.future_value")
    res = {}
    with r.tempdir() as folder:
        path = _ctf(folder, r)
        for name, delay in (("past", C.sequence.past_value), ("future", C.sequence.future_value)):
            x = C.sequence.input_variable(2)
            w = C.parameter((1,), init=np.ones(1, np.float32))
            total = C.reduce_sum(delay(x, initial_state=0.5)) * w
            trainer = C.Trainer(None, (total, None),
                                [C.sgd([w], C.learning_parameter_schedule(0.0))])
            sums = []
            src = _source(C, path, max_sweeps=1)
            while True:
                mb = src.next_minibatch(8, input_map={x: src.streams.x})
                if not mb:
                    break
                trainer.train_minibatch(mb)
                sums.append([trainer.previous_minibatch_sample_count,
                             float(trainer.previous_minibatch_loss_average)])
            res[name] = sums
    return res


def _counts(src, size, **kw):
    """``[sequences, samples, sweep end]`` of each minibatch of ``size`` until the data ends
    (at most 30), then ``"end"``."""
    got = []
    for _ in range(30):
        mb = src.next_minibatch(size, **kw)
        if not mb:
            got.append("end")
            break
        d = mb[src.streams.x]
        got.append([int(d.num_sequences), int(d.num_samples), bool(d.end_of_sweep)])
    return got


@cntk_case(names=["cntk.io.MinibatchSource.next_minibatch"],
           note="Stadyn refused num_data_partitions > 1 with truncation_length (a ValueError)")
def truncated_partitions(C, r):
    """Truncated minibatches read in two and three data partitions in one process (one
    source per partition): each partition's share of the slots and every second (third)
    sequence, its sequences, samples and sweep ends over one and two sweeps; too many
    partitions for the slots is refused; and a Recurrence's running sum trained on each
    partition's minibatches (its state goes on in the partition's slots)."""
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    res = {}
    with r.tempdir() as folder:
        path = _ctf(folder, r)
        for size, parts, sweeps in ((8, 2, 1), (8, 2, 2), (12, 2, 2), (16, 2, 1), (12, 3, 2)):
            for index in range(parts):
                src = _source(C, path, max_sweeps=sweeps)
                res["mb_%d_%d_%d_%d" % (size, parts, sweeps, index)] = _counts(
                    src, size, num_data_partitions=parts, partition_index=index)
        try:
            _source(C, path, max_sweeps=1).next_minibatch(8, num_data_partitions=3,
                                                          partition_index=0)
            res["too_many"] = "read"
        except ValueError:
            res["too_many"] = "ValueError"
        x = C.sequence.input_variable(2)
        total = C.reduce_sum(C.layers.Recurrence(C.plus, initial_state=0.0)(x))
        w = C.parameter((1,), init=np.ones(1, np.float32))
        for index in range(2):
            trainer = C.Trainer(None, (total * w, None),
                                [C.sgd([w], C.learning_parameter_schedule(0.0))])
            src = _source(C, path, max_sweeps=1)
            sums = []
            while True:
                mb = src.next_minibatch(12, input_map={x: src.streams.x},
                                        num_data_partitions=2, partition_index=index)
                if not mb:
                    break
                trainer.train_minibatch(mb)
                sums.append([trainer.previous_minibatch_sample_count,
                             float(trainer.previous_minibatch_loss_average)])
            res["running_sums_%d" % index] = sums
    return res


@cntk_case(names=["cntk.io.MinibatchSource.get_checkpoint_state",
                  "cntk.io.MinibatchSource.restore_from_checkpoint"],
           note="Stadyn's restore gave out the steps the slots held when the state was taken "
                "(CNTK 2.7 starts with empty slots), and a minibatch of another size went on "
                "with the slots (or was refused) where CNTK 2.7 empties them")
def truncated_checkpoint(C, r):
    """A truncated source's checkpoint taken mid-sequence (after 1, 2 and 3 minibatches of 8,
    truncation length 4): the minibatches that follow its restore on the same source after
    reading on and on a new source (the slots start empty: the steps they held are not
    given out), against reading on; and minibatches whose size changes (12 after 8, 4 after
    12, 16 after 8: the slots are emptied each time)."""
    r.touch("cntk.io.MinibatchSource.get_checkpoint_state",
            "cntk.io.MinibatchSource.restore_from_checkpoint")
    res = {}
    with r.tempdir() as folder:
        path = _ctf(folder, r)
        for cut in (1, 2, 3):
            src = _source(C, path, max_sweeps=2)
            res["head_%d" % cut] = [
                [int(mb[src.streams.x].num_samples)] for mb in
                [src.next_minibatch(8) for _ in range(cut)]]
            state = src.get_checkpoint_state()
            res["on_%d" % cut] = _counts(src, 8)
            src.restore_from_checkpoint(state)
            res["restored_%d" % cut] = _counts(src, 8)
            fresh = _source(C, path, max_sweeps=2)
            fresh.restore_from_checkpoint(state)
            res["fresh_%d" % cut] = _counts(fresh, 8)
        for sizes in ((8, 12, 12, 4, 4, 4), (12, 12, 4, 8), (8, 16, 16, 16)):
            src = _source(C, path, max_sweeps=1)
            got = []
            for size in sizes:
                mb = src.next_minibatch(size)
                d = mb[src.streams.x] if mb else None
                got.append("end" if d is None else [int(d.num_sequences), int(d.num_samples)])
            res["sizes_" + "_".join(str(s) for s in sizes)] = got
    return res


@cntk_case(names=["cntk.sequence.past_value"],
           note="a past_value outside a loop began every sequence afresh (its initial state) "
                "where explicit sequence-begin flags said it goes on")
def flagged_past_value(C, r):
    """A one-step ``past_value`` outside a recurrence loop given explicit sequence-begin
    flags: a sequence flagged False reads, at its first step, the input's last step of its
    slot in the previous minibatch (CNTK's DelayedValueNode), in a Trainer's minibatches
    (flagged or not before) and in a Function's ``eval``; three sequences going on from a
    minibatch of two is CNTK's RuntimeError."""
    r.touch("cntk.sequence.past_value")
    x = C.sequence.input_variable(2)
    w = C.parameter((1,), init=np.ones(1, np.float32))
    delayed = C.sequence.past_value(x, initial_state=0.5)
    trainer = C.Trainer(None, (C.reduce_sum(delayed) * w, None),
                        [C.sgd([w], C.learning_parameter_schedule(0.0))])
    a = [r.randn(4, 2).astype(np.float32) for _ in range(2)]
    b = [r.randn(4, 2).astype(np.float32) for _ in range(2)]
    c = [r.randn(3, 2).astype(np.float32) for _ in range(3)]
    sums = []
    for data, flags in ((a, None), (b, [False, True]), (b, [False, False]), (a, [True, False]),
                        (c, [False, True, False])):
        try:
            trainer.train_minibatch(({x: data}, flags) if flags else {x: data})
            sums.append(float(trainer.previous_minibatch_loss_average *
                              trainer.previous_minibatch_sample_count))
        except RuntimeError:
            sums.append("RuntimeError")
    res = {"sums": sums, "eval": [np.asarray(v) for v in delayed.eval({x: a})]}
    res["eval_flags"] = [np.asarray(v) for v in delayed.eval(({x: b}, [False, True]))]
    res["eval_flags_2"] = [np.asarray(v) for v in delayed.eval(({x: a}, [False, False]))]
    return res


def _arrays(got):
    """A run's arrays (a dict's one value's)."""
    got = list(got.values())[0] if isinstance(got, dict) else got
    return [np.asarray(a) for a in got]


# ``fn()``'s arrays, or ``"RuntimeError"`` (any other error propagates)
_outcome = functools.partial(outcome, convert=_arrays, raised=lambda e: "RuntimeError",
                             catch=RuntimeError)


@cntk_case(names=["cntk.Function.eval", "cntk.Function.forward", "cntk.io.MinibatchData.asarray",
                  "cntk.eval.Evaluator.test_minibatch"],
           note="Stadyn gave every truncated minibatch's arrays and outputs, its Function runs "
                "beginning each piece afresh (CNTK 2.7 goes on in each slot from the previous "
                "run and refuses to unpack a minibatch whose sequences go on and are not one "
                "per slot)")
def truncated_eval(C, r):
    """A Recurrence of plus run by ``eval`` and then ``forward`` on each truncated minibatch
    (8 samples, truncation length 4): each piece goes on in its slot from the Function's
    previous run (the ``forward`` from the ``eval``'s end on the same minibatch), and where a
    sequence goes on and the sequences are not one per slot the outputs (and
    ``MinibatchData.asarray()``) are CNTK's RuntimeError, the run's states kept; an
    Evaluator's ``test_minibatch`` over the same minibatches goes on in each slot too."""
    r.touch("cntk.Function.eval", "cntk.Function.forward", "cntk.io.MinibatchData.asarray",
            "cntk.eval.Evaluator.test_minibatch")
    res = {}
    with r.tempdir() as folder:
        path = _ctf(folder, r)
        x = C.sequence.input_variable(2)
        z = C.layers.Recurrence(C.plus, initial_state=0.0)(x)
        src = _source(C, path, max_sweeps=1)
        k = 0
        while True:
            mb = src.next_minibatch(8)
            if not mb:
                break
            d = mb[src.streams.x]
            res["asarray_%d" % k] = _outcome(lambda: list(d.asarray()))
            res["eval_%d" % k] = _outcome(lambda: z.eval({x: d}))
            res["forward_%d" % k] = _outcome(lambda: z.forward({x: d})[1])
            k += 1
        w = C.parameter((1,), init=np.ones(1, np.float32))
        evaluator = C.eval.Evaluator(C.reduce_sum(C.layers.Recurrence(C.plus)(x)) * w)
        src = _source(C, path, max_sweeps=1)
        tests = []
        while True:
            mb = src.next_minibatch(8, input_map={x: src.streams.x})
            if not mb:
                break
            tests.append(float(evaluator.test_minibatch(mb)))
        res["evaluator"] = tests
    return res


@cntk_case(names=["cntk.train.training_session", "cntk.CrossValidationConfig"],
           note="Stadyn's cross-validation stopped at the source's sweep end (2 of its 5 "
                "minibatches) and the training source kept its slots (CNTK 2.7 restores it "
                "after each cross-validation, emptying them)", rtol=1e-4,
           atol=1e-5)
def truncated_training_session(C, r):
    """A training session on a truncated source (an LSTM of 3 and a Dense of 3, minibatches
    of 8 samples truncated at 3 steps, 40 samples) with cross-validation every 16 samples on
    another truncated source: the CV callback's errors and counts, and the parameters at the
    end."""
    r.touch("cntk.train.training_session", "cntk.CrossValidationConfig")
    x = C.sequence.input_variable(2, name="x")
    y = C.sequence.input_variable(3, name="y")
    z = C.layers.Sequential([C.layers.Recurrence(C.layers.LSTM(3)), C.layers.Dense(3)])(x)
    r.set_params(z.parameters)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.2))])
    calls = []

    def callback(index, average_error, num_samples, num_minibatches):
        calls.append([index, float(average_error), num_samples, num_minibatches])
        return True

    with r.tempdir() as folder:
        path = _ctf(folder, r)
        src = _source(C, path, n=3)
        cv = _source(C, path, n=3, max_sweeps=1)
        C.training_session(
            trainer=trainer, mb_source=src, mb_size=8,
            model_inputs_to_streams={x: src.streams.x, y: src.streams.y}, max_samples=40,
            cv_config=C.CrossValidationConfig(cv, 8, 16, model_inputs_to_streams={
                x: cv.streams.x, y: cv.streams.y}, callback=callback)).train()
    return {"calls": calls, "after": r.param_values(z.parameters)}
