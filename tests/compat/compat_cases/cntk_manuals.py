"""What running CNTK 2.7's own "Manual" notebooks (``Manual/Manual_How_to_*.ipynb``, with
``tools/cntk_notebooks.py``) on Stadyn found: ``Function.train``'s summary read as a dict
(``train_summary['updates']``, ``d["loss"]``) in Manual_How_to_feed_data, ``rmsprop(...,
max=np.inf)`` in Manual_How_to_use_learners, a user source's ragged sequences, the debugging
switches of Manual_How_to_debug, the metric columns of a Trainer without a metric."""

import contextlib
import io
import re

import numpy as np

from compat_harness import cntk_case

_TIMING = re.compile(r"\d+\.\d+s \( *\d+\.\d+ samples/s\)")


def _data():
    rs = np.random.RandomState(0)
    y = rs.randint(0, 2, 64)
    x = ((rs.randn(64, 2) + 3) * (y[:, None] + 1)).astype(np.float32)
    return x, np.eye(2, dtype=np.float32)[y]


@cntk_case(names=["cntk.Function.train", "cntk.Function.test", "cntk.variables.Record"],
           note="Manual_How_to_feed_data: `for d in train_summary['updates']: d['samples'], "
                "d['loss']`; CNTK 2.7's train/test return Records (dicts whose items are "
                "attributes too), Stadyn's were plain objects ('TrainingSummary' object is "
                "not subscriptable)")
def train_summary_is_a_record(C, r):
    r.touch("cntk.variables.Record", "cntk.Function.train", "cntk.Function.test")
    x, y = C.input_variable(2), C.input_variable(2)
    model = C.layers.Dense(2, init=C.glorot_uniform(seed=1))
    loss = C.cross_entropy_with_softmax(model(x), y)
    error = C.classification_error(model(x), y)
    learner = C.sgd(model.parameters, C.learning_parameter_schedule(0.1))
    data = _data()
    summary = C.combine([loss, error]).train(
        data, minibatch_size=16, parameter_learners=[learner],
        callbacks=[C.logging.ProgressPrinter(2)], epoch_size=32, max_epochs=2)
    res = {"is dict": isinstance(summary, dict), "keys": sorted(summary.keys())}
    res["updates samples"] = np.array([d["samples"] for d in summary["updates"]])
    res["updates loss"] = np.array([d["loss"] for d in summary["updates"]])
    res["updates metric"] = np.array([d["metric"] for d in summary["updates"]])
    res["update keys"] = sorted(summary["updates"][0].keys())
    res["epoch loss"] = np.array([e["loss"] for e in summary["epoch_summaries"]])
    res["epoch attr"] = summary.epoch_summaries[-1].samples
    test = C.combine([loss, error]).test(data, minibatch_size=32)
    res["test is dict"] = isinstance(test, dict)
    res["test"] = np.array([test["metric"], test["samples"]])
    return res


@cntk_case(names=["cntk.learners.rmsprop"],
           note="Manual_How_to_use_learners: `C.rmsprop(..., max=np.inf, min=1e-30)` "
                "(no upper bound on the step); Stadyn refused the infinite max")
def rmsprop_infinite_max(C, r):
    w = C.parameter((2, 3), init=0)
    lr = C.learning_parameter_schedule(1, minibatch_size=C.learners.IGNORE)
    learner = C.rmsprop([w], lr, gamma=0.999, inc=1.0 + 1e-9, dec=1.0 - 1e-9, max=np.inf,
                        min=1e-30)
    res = {}
    for step in range(30):
        grad = np.full((2, 3), 32.0, np.float32) * np.array([1, -1, 0.5], np.float32)
        learner.update({w: grad}, 32)
        if step in (0, 1, 29):
            res["after %d" % (step + 1)] = np.array(w.value)
    return res


def _ragged_source(C):
    io = C.io

    class Ragged(io.UserMinibatchSource):
        """Manual_How_to_create_user_minibatch_sources' pattern: word sequences of different
        lengths as ``Value.one_hot`` (padded), one label each, two sequences a minibatch."""

        def __init__(self, words, labels):
            self.words, self.labels, self.pos = words, labels, 0
            self.fsi = io.StreamInformation("features", 0, 'sparse', np.float32, (6,))
            self.lsi = io.StreamInformation("labels", 1, 'dense', np.float32, (3,))
            super(Ragged, self).__init__()

        def stream_infos(self):
            return [self.fsi, self.lsi]

        def next_minibatch(self, num_samples, number_of_workers, worker_rank, device=None):
            words = self.words[self.pos:self.pos + 2]
            labels = self.labels[self.pos:self.pos + 2]
            self.pos = (self.pos + 2) % len(self.words)
            end = self.pos == 0
            samples = sum(len(w) for w in words)
            return {self.fsi: io.MinibatchData(C.Value.one_hot(batch=words, num_classes=6),
                                               2, samples, end),
                    self.lsi: io.MinibatchData(C.Value(batch=np.asarray(labels, np.float32)),
                                               2, 2, end)}
    return Ragged


@cntk_case(names=["cntk.io.MinibatchData", "cntk.Value.one_hot", "cntk.io.UserMinibatchSource",
                  "cntk.sequence.last"],
           note="Manual_How_to_create_user_minibatch_sources: a user source's MinibatchData of "
                "Value.one_hot sequences of 3 and 4 words; Stadyn lost the lengths, so "
                "sequence.last read the shorter one's padding (first loss 1.609928 for "
                "CNTK's 1.607941)")
def user_source_ragged_sequences(C, r):
    r.touch("cntk.Value.one_hot")
    words = [[5, 0, 0], [5, 0, 0, 4], [1, 2], [3, 3, 2, 1, 4]]
    labels = [[[1, 0, 0]], [[0, 1, 0]], [[0, 0, 1]], [[1, 0, 0]]]
    src = _ragged_source(C)(words, labels)
    x, y = C.sequence.input_variable(6), C.input_variable(3)
    h = C.layers.Recurrence(C.layers.LSTM(4))(x)
    z = C.layers.Dense(3)(C.sequence.last(h))
    listing = r.set_params(z.parameters)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule_per_sample(0.5))])
    res = {"params": listing}
    losses = []
    for step in range(4):
        mb = src.next_minibatch(7, 1, 0)
        if step == 0:
            d = mb[src.fsi]
            res["first"] = [d.num_samples, d.num_sequences]
            res["first last"] = C.sequence.last(x).eval({x: d})
        trainer.train_minibatch({x: mb[src.fsi], y: mb[src.lsi]})
        losses.append(trainer.previous_minibatch_loss_average)
    res["losses"] = np.array(losses)
    return res


@cntk_case(names=["cntk.cntk_py.set_gpumemory_allocation_trace_level",
                  "cntk.cntk_py.enable_synchronous_gpukernel_execution",
                  "cntk.cntk_py.disable_forward_values_sharing"],
           note="Manual_How_to_debug's last cell calls CNTK's debugging switches; Stadyn had "
                "no set_gpumemory_allocation_trace_level, enable_synchronous_gpukernel_execution "
                "or disable_forward_values_sharing (AttributeError). They change nothing "
                "a program computes: the case checks an evaluation after them")
def debug_manual_switches(C, r):
    r.touch("cntk.cntk_py.set_gpumemory_allocation_trace_level",
            "cntk.cntk_py.enable_synchronous_gpukernel_execution",
            "cntk.cntk_py.disable_forward_values_sharing")
    C.cntk_py.set_gpumemory_allocation_trace_level(1)
    C.cntk_py.enable_synchronous_gpukernel_execution()
    C.cntk_py.disable_forward_values_sharing()
    x = C.input_variable(3)
    y = C.tanh(x) * 2 + x
    return {"eval": y.eval({x: r.randn(2, 3)})}


@cntk_case(names=["cntk.Trainer", "cntk.logging.ProgressPrinter",
                  "cntk.Trainer.summarize_training_progress"],
           note="Manual_How_to_feed_data: `C.Trainer(z, (loss, None), ...)` with "
                "ProgressPrinter(0); CNTK 2.7's native Trainer reports a metric of 0 "
                "('0  0' in the table, 'metric = 0.00% * 8' in the lines), Stadyn printed "
                "no metric")
def trainer_without_metric_prints(C, r):
    r.touch("cntk.Trainer.summarize_training_progress")
    x, y = C.input_variable(2), C.input_variable(2)
    w = C.parameter((2, 2), init=r.param_value("w", (2, 2)))
    z = C.times(x, w)
    loss = C.cross_entropy_with_softmax(z, y)
    data = np.arange(8, dtype=np.float32).reshape(4, 2) / 8
    labels = np.eye(2, dtype=np.float32)[[0, 1, 1, 0]]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        trainer = C.Trainer(z, (loss, None), C.sgd([w], 0.1),
                            [C.logging.ProgressPrinter(0), C.logging.ProgressPrinter(2)])
        for _ in range(5):
            trainer.train_minibatch({x: data, y: labels})
        trainer.summarize_training_progress()
    return {"printed": [_TIMING.sub("<time>", ln) for ln in out.getvalue().splitlines()
                        if ln.strip()]}


@cntk_case(names=["cntk.learners.universal", "cntk.learners.Learner.parameters",
                  "cntk.learners.Learner.update"],
           note="Manual_How_to_use_learners' inspect_update on C.universal(my_rmsprop, ...): "
                "`[p.value for p in learner.parameters]`, then `p.value = 0 * p.value`; "
                "Stadyn's universal learner gave its Variables ('Variable' object has no "
                "attribute 'value')")
def universal_learner_parameters(C, r):
    r.touch("cntk.learners.Learner.parameters", "cntk.learners.Learner.update")
    w = C.parameter((2, 3), init=r.param_value("w", (2, 3)), name="w")

    def update(parameters, gradients):
        return C.combine([C.assign(p, p - 0.1 * g) for p, g in zip(parameters, gradients)])

    learner = C.universal(update, [w])
    res = {"names": [p.name for p in learner.parameters],
           "before": np.array([p.value for p in learner.parameters])}
    for p in learner.parameters:
        p.value = 0 * p.value
    learner.update({w: np.full((2, 3), 3.0, np.float32)}, 3)
    res["after"] = np.array(learner.parameters[0].value)
    return res


@cntk_case(names=["cntk.learners.adadelta", "cntk.learners.Learner.update"],
           note="Manual_How_to_use_learners' adadelta2 (learning rate 1004, rho 0.999, 30 "
                "updates): CNTK 2.7 computes 1 - rho in float32 (0.00099998713); Stadyn used "
                "0.001 and printed -29.7967 for CNTK's -29.7969", rtol=1e-6)
def adadelta_float32_decay(C, r):
    r.touch("cntk.learners.Learner.update")
    res = {}
    for lr in (1, 1004):
        w = C.parameter((2,), init=0)
        schedule = C.learning_parameter_schedule(lr, minibatch_size=C.learners.IGNORE)
        learner = C.adadelta([w], schedule, 0.999, 1e-6)
        for _ in range(30):
            learner.update({w: np.full((2,), 32.0, np.float32)}, 32)
        res["lr %d" % lr] = np.array(w.value)
    return res


@cntk_case(names=["cntk.io.MinibatchData.number_of_samples",
                  "cntk.io.MinibatchData.number_of_sequences"],
           note="Manual_How_to_train_using_declarative_and_imperative_API counts "
                "data[label].number_of_samples (an AttributeError on Stadyn before)")
def minibatch_data__number_of_samples(C, r):
    r.touch("cntk.io.MinibatchData.number_of_samples", "cntk.io.MinibatchData.number_of_sequences")
    source = C.io.MinibatchSourceFromData(dict(x=r.randn(6, 2), y=r.onehot(6, 3)))
    mb = source.next_minibatch(4)
    d = mb[source.streams["x"]]
    return {"counts": [d.number_of_samples, d.num_samples, d.number_of_sequences,
                       d.num_sequences]}
