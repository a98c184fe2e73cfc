"""What running CNTK's own ``Examples/`` programs on Stadyn found (tests/examples/
cntk_examples.py; docs/cntk-examples.md), each compared with CNTK 2.7."""

import contextlib
import io
import os
import re
import shutil
import tempfile

import numpy as np

from compat_harness import cntk_case


@cntk_case(names=["cntk.convolution", "cntk.reshape", "cntk.constant", "cntk.square"],
           note="Examples/Image/Classification/ConvNet/Python/ConvNetLRN_CIFAR10_DataAug.py: "
                "local response normalisation slides a (1, 2n+1, 1, 1) map, which has no "
                "output axis, over the squares reshaped to (1, channels, h, w); Stadyn read the "
                "map as (out, in, kh, kw) and refused the 5-D operand")
def lrn_convolution_map_of_the_operands_rank(C, r):
    def local_response_normalization(k, n, alpha, beta):        # as the program writes it
        x = C.placeholder(name='lrn_arg')
        x2 = C.square(x)
        x2s = C.reshape(x2, (1, C.InferredDimension), 0, 1)
        W = C.constant(alpha / (2 * n + 1), (1, 2 * n + 1, 1, 1), name='W')
        y = C.convolution(W, x2s)
        b = C.reshape(y, C.InferredDimension, 0, 2)
        den = C.exp(beta * C.log(k + b))
        return C.element_divide(x, den), y
    x = C.input_variable((6, 4, 5))
    lrn, y = local_response_normalization(1.0, 2, 1e-3, 0.75)
    out = lrn(x)                                  # as the program applies it
    data = r.randn(2, 6, 4, 5) * 10
    return {"shape": np.array(y.shape), "lrn": out.eval({x: data})}


@cntk_case(names=["cntk.random_sample", "cntk.random_sample_inclusion_frequency"],
           note="Examples/Text/WordLMWithSampledSoftmax/word_rnn.py: the sampling weights are a "
                "row (reshape(Constant(w), (1, vocab))); Stadyn wanted a vector")
def sampling_weights_as_a_row(C, r):
    w = np.array([[4.0, 1.0, 1.0, 2.0, 0.5, 0.5, 3.0, 1.0, 2.0]], np.float32)
    row = C.reshape(C.Constant(w[0]), shape=(1, 9))
    # dense rows as the program's use_sparse=False path makes them (CNTK's are sparse)
    rows = C.times(C.random_sample(row, 5, False), C.Constant(np.eye(9, dtype=np.float32)))
    rows = rows.eval()
    freq = C.random_sample_inclusion_frequency(row, 5, True)
    # the draws are each framework's own; their shape and one-hot rows are CNTK's
    return {"rows_shape": np.array(rows.shape), "row_sums": np.asarray(rows).sum(axis=1),
            "distinct": np.array(len(set(np.asarray(rows).argmax(axis=1).tolist()))),
            "freq_shape": np.array(freq.shape), "freq": freq.eval()}


@cntk_case(names=["cntk.layers", "cntk.layers.typing"],
           note="Examples/LanguageUnderstanding/ATIS/Python/LanguageUnderstanding.py uses np "
                "without importing NumPy: CNTK 2.7's `from cntk.layers import *` hands it out")
def layers_star_import_gives_numpy(C, r):
    found = []
    for module in (C.layers.__name__, C.layers.typing.__name__):
        names = {}
        exec("from %s import *" % module, names)
        found.append(names.get("np") is np)
    return {"np": np.array(found)}


@cntk_case(names=["cntk.layers", "cntk.layers.FunctionType", "cntk.layers.division",
                  "cntk.layers.warn"],
           note="programs written `from cntk.layers import *` then use C.times, sequence.last "
                "or FunctionType without importing them: CNTK 2.7's module hands them out")
def layers_star_import_gives_cntk_and_sequence(C, r):
    import __future__
    import types
    import warnings
    names = {}
    exec("from %s import *" % C.layers.__name__, names)
    # the case's C records the names it touches: compare the modules by name
    cntk, sequence = names.get("C"), names.get("sequence")
    return {"found": np.array([getattr(cntk, "__name__", "") + ".layers" == C.layers.__name__,
                               getattr(sequence, "__name__", "") == C.sequence.__name__,
                               names.get("FunctionType") is types.FunctionType,
                               names.get("division") is __future__.division,
                               names.get("warn") is warnings.warn,
                               C.layers.FunctionType is types.FunctionType,
                               C.layers.division is __future__.division,
                               C.layers.warn is warnings.warn])}


@cntk_case(names=["cntk.CheckpointConfig", "cntk.Function.train"],
           note="Examples/1stSteps/MNIST_Complex_Training.py checkpoints to Models/mnist.cmf "
                "in a folder that is not there; CNTK 2.7 makes it, Stadyn refused to write")
def checkpoint_folder_is_made(C, r):
    r.touch("cntk.Function.train")
    folder = tempfile.mkdtemp()
    try:
        path = os.path.join(folder, "Models", "deeper", "model.cmf")
        x, y = r.randn(16, 3), r.onehot(16, 2)
        model = C.layers.Dense(2)

        @C.Function.with_signature(C.layers.Tensor[3], C.layers.Tensor[2])
        def criterion(data, label):
            z = model(data)
            return C.cross_entropy_with_softmax(z, label), C.classification_error(z, label)
        learner = C.sgd(model.parameters, C.learning_parameter_schedule(0.1))
        criterion.train((x, y), minibatch_size=8, max_epochs=1, parameter_learners=[learner],
                        callbacks=[C.CheckpointConfig(path, 16, restore=False)])
        return {"written": np.array(os.path.exists(path))}
    finally:
        shutil.rmtree(folder)


@cntk_case(names=["cntk.debugging.set_computation_network_trace_level",
                  "cntk.debugging.start_profiler", "cntk.debugging.stop_profiler",
                  "cntk.debugging.enable_profiler", "cntk.debugging.disable_profiler",
                  "cntk.debugging.set_checked_mode", "cntk.debugging.set_node_timing",
                  "cntk.debugging.force_deterministic"],
           note="Examples/Image/Classification/ResNet/Python/TrainResNet_CIFAR10.py and "
                "ConvNet_CIFAR10_DataAug.py import from cntk.debugging, missing in Stadyn")
def debugging_switches(C, r):
    names = {}
    exec("from %s.debugging import *" % C.__name__, names)
    wanted = ["set_computation_network_trace_level", "start_profiler", "stop_profiler",
              "enable_profiler", "disable_profiler", "set_checked_mode", "set_node_timing",
              "force_deterministic"]
    r.touch(*["cntk.debugging." + n for n in wanted])
    names["set_computation_network_trace_level"](0)
    names["set_checked_mode"](False)
    names["enable_profiler"]()
    names["disable_profiler"]()
    return {"star": np.array([n in names for n in wanted])}


@cntk_case(names=["cntk.cntk_py.reset_random_seed"],
           note="tests/examples/cntk_examples.py runs CNTK's Examples one after another in one "
                "process and restarts CNTK's count of auto-selected seeds before each, so each "
                "program's parameters start as in a process of its own; Stadyn had no "
                "reset_random_seed")
def reset_random_seed_restarts_the_count(C, r):
    C.cntk_py.reset_random_seed(0)
    first = C.layers.Dense(3)(C.input_variable(2)).parameters
    C.layers.Dense(4)(C.input_variable(2))                       # moves the count on
    C.cntk_py.reset_random_seed(0)
    again = C.layers.Dense(3)(C.input_variable(2)).parameters
    C.cntk_py.reset_random_seed(7)
    seventh = C.parameter((2, 3), init=C.glorot_uniform())
    C.cntk_py.set_fixed_random_seed(5)
    C.cntk_py.reset_random_seed(0)                               # unfixes it
    a, b = C.parameter((4,), init=C.uniform(1)), C.parameter((4,), init=C.uniform(1))
    return {"first": [p.value for p in first], "again": [p.value for p in again],
            "seventh": seventh.value, "unfixed_differ": np.array(
                not np.array_equal(a.value, b.value))}


@cntk_case(names=["cntk.train.distributed.data_parallel_distributed_learner",
                  "cntk.logging.ProgressPrinter"],
           note="Examples/1stSteps/MNIST_Complex_Training.py trains through "
                "data_parallel_distributed_learner: CNTK 2.7 writes no 'Learning rate' line for "
                "it (nor 'Momentum'), Stadyn wrote the wrapped learner's")
def distributed_learner_writes_no_rate(C, r):
    r.touch("cntk.logging.ProgressPrinter")
    data, target = r.randn(8, 3), r.onehot(8, 2)
    model = C.layers.Dense(2)

    @C.Function.with_signature(C.layers.Tensor[3], C.layers.Tensor[2])
    def criterion(x, y):
        z = model(x)
        return C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)
    res = {"parameters": r.set_params(model.parameters)}
    lr = C.learning_parameter_schedule_per_sample(0.1)
    for name, make in (("sgd", lambda: C.sgd(model.parameters, lr)),
                       ("momentum", lambda: C.momentum_sgd(model.parameters, lr,
                                                           C.momentum_schedule(0.9)))):
        for how in ("trainer", "train"):
            out = io.StringIO()
            learner = C.train.distributed.data_parallel_distributed_learner(make())
            with contextlib.redirect_stdout(out):
                if how == "trainer":
                    trainer = C.Trainer(None, criterion, [learner],
                                        [C.logging.ProgressPrinter(freq=100)])
                    trainer.train_minibatch({criterion.arguments[0]: data,
                                             criterion.arguments[1]: target})
                else:
                    criterion.train((data, target), minibatch_size=8, max_epochs=1,
                                    parameter_learners=[learner],
                                    callbacks=[C.logging.ProgressPrinter(freq=100)])
            res[name + " " + how] = [ln for ln in out.getvalue().splitlines()
                                     if ln.startswith(("Learning rate", "Momentum"))] + ["(end)"]
    return res


def _atis_like(r, folder, vocab, labels, sequences):
    """A CTF file of ``sequences`` queries as ATIS's (``S0`` a word, ``S2`` its slot label,
    both sparse), and a reader of it."""
    path = os.path.join(folder, "queries.ctf")
    with open(path, "w") as f:
        for s in range(sequences):
            for _ in range(r.randint(2, 7, ())):
                f.write("%d\t|S0 %d:1\t|S2 %d:1\n" % (s, r.randint(0, vocab, ()),
                                                        r.randint(0, labels, ())))
    return path


@cntk_case(names=["cntk.Function.load", "cntk.Function.test", "cntk.Evaluator.test_minibatch",
                  "cntk.Trainer.test_minibatch", "cntk.logging.ProgressPrinter"],
           note="Examples/LanguageUnderstanding/ATIS/Python/LanguageUnderstanding.py evaluates "
                "the model it saved and loaded again, applied to the criterion's query input: "
                "the loaded recurrence read the lengths of the file's own input, not those of "
                "the query it was applied to, and Stadyn printed 'metric = 1512.50% * 8' "
                "(sgd here: CNTK 2.7's CPU build has no fsadagrad for a sparse gradient)")
def loaded_sequence_model_tested_on_a_reader(C, r):
    r.touch("cntk.Function.load", "cntk.Function.test", "cntk.Evaluator.test_minibatch",
            "cntk.Trainer.test_minibatch", "cntk.logging.ProgressPrinter")
    vocab, labels = 9, 4
    Sequence, SparseTensor = C.layers.typing.Sequence, C.layers.typing.SparseTensor

    def criterion_of(model):
        @C.Function.with_signature(query=Sequence[SparseTensor[vocab]],
                                   labels=Sequence[SparseTensor[labels]])
        def criterion(query, labels):
            z = model(query)
            return (C.cross_entropy_with_softmax(z, labels),
                    C.classification_error(z, labels))
        return criterion

    with r.tempdir() as folder:
        path = _atis_like(r, folder, vocab, labels, 12)

        def reader(training):
            return C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
                query=C.io.StreamDef(field='S0', shape=vocab, is_sparse=True),
                slot_labels=C.io.StreamDef(field='S2', shape=labels, is_sparse=True))),
                randomize=False, max_sweeps=C.io.INFINITELY_REPEAT if training else 1)
        model = C.layers.Sequential([C.layers.Embedding(5), C.layers.Recurrence(
            C.layers.LSTM(6)), C.layers.Dense(labels)])
        model.update_signature(Sequence[SparseTensor[vocab]])
        res = {"parameters": r.set_params(model.parameters)}
        criterion = criterion_of(model)
        source = reader(True)
        criterion.train(source, streams=(source.streams.query, source.streams.slot_labels),
                        minibatch_size=20, max_epochs=2, epoch_size=20,
                        parameter_learners=[C.sgd(criterion.parameters, 0.5)])
        model.save(os.path.join(folder, "model.cmf"))
        loaded = C.Function.load(os.path.join(folder, "model.cmf"))
        criterion = criterion_of(loaded)
        out = io.StringIO()
        source = reader(False)
        with contextlib.redirect_stdout(out):
            summary = criterion.test(
                source, streams=(source.streams.query, source.streams.slot_labels),
                minibatch_size=1000, callbacks=[C.logging.ProgressPrinter(tag='Evaluation')])
        res["test"] = np.array([summary.metric, summary.samples])
        res["printed"] = out.getvalue().splitlines()
        # the same by minibatches of about 15 words, through an Evaluator and a Trainer
        evaluator = C.Evaluator(criterion.outputs[1])
        trainer = C.Trainer(loaded, criterion, [C.sgd(loaded.parameters, 0.0)])
        source = reader(False)
        averages = []
        while True:
            mb = source.next_minibatch(15, input_map={
                criterion.arguments[0]: source.streams.query,
                criterion.arguments[1]: source.streams.slot_labels})
            if not mb:
                break
            averages.append([evaluator.test_minibatch(mb), trainer.test_minibatch(mb),
                             mb[criterion.arguments[0]].num_samples])
        res["minibatches"] = np.array(averages)
    return res


@cntk_case(names=["cntk.logging.ProgressPrinter", "cntk.logging.ProgressPrinter.update",
                  "cntk.logging.ProgressPrinter.epoch_summary"],
           note="Examples/Image/Classification/ConvNet/Python/ConvNet_CIFAR10_DataAug.py's "
                "evaluate() drives a ProgressPrinter by hand: CNTK's update(loss, "
                "minibatch_size, metric) takes the minibatch's averages (Stadyn's native "
                "update takes sums: the line read 2.34% where CNTK's reads 37.50%), and "
                "epoch_summary returns (average loss, average metric, samples), which the "
                "program unpacks (Stadyn returned a ProgressRecord)")
def progress_printer_by_hand(C, r):
    r.touch("cntk.logging.ProgressPrinter.update", "cntk.logging.ProgressPrinter.epoch_summary")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        printer = C.logging.ProgressPrinter(tag='Evaluation', num_epochs=1)
        printer.update(0, 16, 0.5)
        printer.update(1.5, 16, 0.25)
        summary = printer.epoch_summary(with_metric=True)
    lines = [ln.split(" 0.0")[0] for ln in out.getvalue().splitlines() if ln.strip()]
    return {"summary": np.array(list(summary), dtype=np.float64), "lines": lines}


_TIMING = re.compile(r"\d+\.\d+s \( *\d+\.\d+ samples/s\)")


def _printed(text):
    return [_TIMING.sub("<time>", ln) for ln in text.splitlines() if ln.strip()]


@cntk_case(names=["cntk.logging.ProgressPrinter.update_with_trainer",
                  "cntk.logging.ProgressPrinter.avg_loss_since_start",
                  "cntk.logging.ProgressPrinter.avg_metric_since_start",
                  "cntk.logging.ProgressPrinter.avg_loss_since_last",
                  "cntk.logging.ProgressPrinter.avg_metric_since_last",
                  "cntk.logging.ProgressPrinter.reset_start",
                  "cntk.logging.ProgressPrinter.reset_last",
                  "cntk.logging.ProgressPrinter.epochs",
                  "cntk.logging.ProgressPrinter.end_progress_print",
                  "cntk.Trainer.summarize_training_progress"],
           note="CNTK 2.7's by-hand calls keep counts of their own, apart from what a Trainer "
                "holding the printer reports: minibatch lines by freq and first (a minibatch "
                "printed on its own shows as [n+1-n]), a line without the metric when update "
                "has none, freq=0's table and no summary, epoch numbers of their own")
def progress_printer_by_hand_and_by_trainer(C, r):
    r.touch("cntk.logging.ProgressPrinter.update_with_trainer",
            "cntk.logging.ProgressPrinter.avg_loss_since_start",
            "cntk.logging.ProgressPrinter.avg_metric_since_start",
            "cntk.logging.ProgressPrinter.avg_loss_since_last",
            "cntk.logging.ProgressPrinter.avg_metric_since_last",
            "cntk.logging.ProgressPrinter.reset_start", "cntk.logging.ProgressPrinter.reset_last",
            "cntk.logging.ProgressPrinter.epochs",
            "cntk.logging.ProgressPrinter.end_progress_print",
            "cntk.Trainer.summarize_training_progress")
    res = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        p = C.logging.ProgressPrinter(freq=2, first=1)
        for k in range(5):
            p.update(1.0 + k, 4 + k, 0.1 * k if k != 3 else None)
        res["averages"] = np.array([p.avg_loss_since_start(), p.avg_metric_since_start(),
                                    p.avg_loss_since_last(), p.avg_metric_since_last()])
        res["reset_last"] = np.array(p.reset_last(), dtype=np.float64)
        res["reset_start"] = np.array(p.reset_start(), dtype=np.float64)
        res["empty"] = np.array(p.epoch_summary(True), dtype=np.float64)
        p = C.logging.ProgressPrinter(tag='Evaluation', num_epochs=1)
        p.update(2.0, 8)
        p.update(3.0, 0, 1.0)                                  # no samples: nothing
        res["no_metric"] = np.array(p.epoch_summary(), dtype=np.float64)
        res["epochs"] = np.array(p.epochs)
        p = C.logging.ProgressPrinter(freq=0)
        for k in range(4):
            p.update(1.0 + k, 4, 0.5)
        res["geometric"] = [repr(p.epoch_summary(True))]
    res["by_hand"] = _printed(out.getvalue())
    x, y = C.input_variable(3), C.input_variable(2)
    z = C.layers.Dense(2)(x)
    res["parameters"] = r.set_params(z.parameters)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        held = C.logging.ProgressPrinter(freq=1, tag='Held')
        hand = C.logging.ProgressPrinter(freq=1, tag='Hand')
        trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                            [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))], [held])
        for k in range(3):
            trainer.train_minibatch({x: r.randn(4 + k, 3), y: r.onehot(4 + k, 2)})
            held.update_with_trainer(trainer, with_metric=True)
            hand.update_with_trainer(trainer, with_metric=k > 0)
        res["held"] = np.array(held.epoch_summary(True))
        trainer.summarize_training_progress()
        res["hand"] = np.array(hand.epoch_summary(True))
        trainer.summarize_training_progress()              # an epoch without minibatches
        held.epoch_summary()
        res["counts"] = np.array([held.epochs, hand.epochs, held.total_training_updates(),
                                  hand.total_training_updates()])
        held.end_progress_print("not printed: no log file")
    res["trainer"] = _printed(out.getvalue())
    with r.tempdir() as folder:
        path = os.path.join(folder, "log")
        with contextlib.redirect_stdout(io.StringIO()):
            p = C.logging.ProgressPrinter(freq=1, log_to_file=path, num_epochs=2)
            p.update(1.0, 2, 0.5)
            p.epoch_summary(True)
            p.end_progress_print("the end")
        with open(path) as f:
            res["log"] = [ln.replace(path, "<log>") for ln in _printed(f.read())]
    return res


@cntk_case(names=["cntk.Trainer", "cntk.Trainer.test_minibatch", "cntk.logging.ProgressPrinter"],
           note="Examples/Image/Classification/ConvNet/Python/ConvNet_CIFAR10_DataAug.py "
                "evaluates through a Trainer made by its own Evaluator(criterion) helper, which "
                "calls CNTK's private Trainer._get_loss_metric (missing in Stadyn), and "
                "reports each minibatch's average to a ProgressPrinter by hand")
def dummy_trainer_evaluates_by_hand(C, r):
    r.touch("cntk.Trainer.test_minibatch", "cntk.logging.ProgressPrinter")
    model = C.layers.Dense(4)

    @C.Function.with_signature(C.layers.Tensor[3], C.layers.Tensor[4])
    def criterion(data, label):
        z = model(data)
        return C.cross_entropy_with_softmax(z, label), C.classification_error(z, label)
    res = {"parameters": r.set_params(model.parameters)}

    def evaluator(criterion):                  # as the program writes it
        loss, metric = C.Trainer._get_loss_metric(criterion)
        parameters = set(loss.parameters)
        if metric:
            parameters |= set(metric.parameters)
        learner = C.momentum_sgd(tuple(parameters), lr=C.learning_parameter_schedule(1),
                                 momentum=C.momentum_schedule(0))
        return C.Trainer(None, (loss, metric), learner)
    single = C.Trainer._get_loss_metric((criterion.outputs[0],))
    res["single"] = [type(single[0]).__name__, repr(single[1])]
    try:
        C.Trainer._get_loss_metric(tuple(criterion.outputs) * 2)
        res["three"] = ["accepted"]
    except ValueError as exc:
        res["three"] = [type(exc).__name__]
    trainer = evaluator(criterion)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        printer = C.logging.ProgressPrinter(tag='Evaluation', num_epochs=1)
        for n in (16, 16, 5):
            metric = trainer.test_minibatch({criterion.arguments[0]: r.randn(n, 3) * 3,
                                             criterion.arguments[1]: r.onehot(n, 4)})
            printer.update(0, n, metric)
        loss, metric, samples = printer.epoch_summary(with_metric=True)
    res["summary"] = np.array([loss, metric, samples])
    res["lines"] = _printed(out.getvalue())
    return res


@cntk_case(names=["cntk.reshape", "cntk.times_transpose"],
           note="Examples/Text/WordLMWithSampledSoftmax/word_rnn.py: "
                "reshape(times_transpose(W, h) + b, (vocab,)) of a sequence h; C.reshape of a "
                "sequence dropped its sequence axis (padding steps mixed in), so "
                "cross_entropy_with_softmax(z, labels) refused the label sequence")
def reshape_of_a_sequence(C, r):
    h = C.sequence.input_variable(4)
    W = C.constant(r.randn(9, 4))
    b = C.constant(r.randn(9, 1))
    z = C.reshape(C.times_transpose(W, h) + b, shape=(9,))
    data = [r.randn(3, 4), r.randn(2, 4)]
    return {"axes": np.array(len(z.dynamic_axes)), "z": z.eval({h: data})}


@cntk_case(names=["cntk.Trainer.train_minibatch"],
           note="Examples/Text/CharacterLM/char_rnn.py trains on consecutive 100-character "
                "pieces of one text, the first marked as a sequence start, the rest not")
def train_minibatch_with_sequence_begin_flags(C, r):
    r.touch("cntk.Trainer.train_minibatch")
    x = C.sequence.input_variable(3)
    y = C.sequence.input_variable(2)
    z = C.layers.Sequential([C.layers.Recurrence(C.layers.LSTM(4)), C.layers.Dense(2)])(x)
    res = {"parameters": r.set_params(z.parameters)}
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.0))])
    pieces = [(r.randn(5, 3), r.onehot(5, 2)) for _ in range(3)]
    losses = []
    for k, (features, labels) in enumerate(pieces):
        trainer.train_minibatch(({x: [features], y: [labels]}, [k == 0]))
        losses.append(trainer.previous_minibatch_loss_average)
    for features, labels in pieces[1:]:                   # each on its own, from a fresh state
        trainer.train_minibatch(({x: [features], y: [labels]}, [True]))
        losses.append(trainer.previous_minibatch_loss_average)
    res["losses"] = np.array(losses)
    return res


@cntk_case(names=["cntk.Trainer.test_minibatch"],
           note="test_minibatch with CNTK's sequence-begin flags, ((data, flags)) or one "
                "input's (data, flags): a False flag goes on from where the Trainer's previous "
                "minibatch left the sequence, trained or tested (one state shared by "
                "train_minibatch and test_minibatch; a minibatch without flags starts afresh "
                "and is carried on from too); Stadyn read the pair as two inputs' data")
def test_minibatch_with_sequence_begin_flags(C, r):
    r.touch("cntk.Trainer.test_minibatch")
    x = C.sequence.input_variable(3)
    y = C.sequence.input_variable(2)
    z = C.layers.Sequential([C.layers.Recurrence(C.layers.LSTM(4)),
                             C.layers.Recurrence(C.layers.GRU(3)), C.layers.Dense(2)])(x)
    res = {"parameters": r.set_params(z.parameters)}
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.squared_error(z, y)),
                        [C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.5),
                                        C.momentum_schedule(0.5))])
    whole = [r.randn(6, 3), r.randn(6, 3)]
    labels = [r.onehot(6, 2), r.onehot(6, 2)]

    def piece(a, b):
        return [s[a:b] for s in whole], [s[a:b] for s in labels]
    # (a first training minibatch with a False flag, after tests only, CNTK 2.7 refuses: its
    # training network has no previous minibatch's layout to match; so does Stadyn, see
    # cntk_sequence_begin.py)
    trainer.train_minibatch(({x: piece(1, 3)[0], y: piece(1, 3)[1]}, [True, True]))
    losses = [trainer.previous_minibatch_loss_average]
    tests = [trainer.test_minibatch({x: whole, y: labels})]
    for k, (a, b) in enumerate(((0, 2), (2, 4), (4, 6))):      # the sweep in three pieces
        xs, ys = piece(a, b)
        if k == 1:                                      # the flags with one input's data
            tests.append(trainer.test_minibatch({x: (xs, [False, False]), y: ys}))
        else:
            tests.append(trainer.test_minibatch(({x: xs, y: ys}, [k == 0, k == 0])))
    steps = (("test", (0, 3), [True, True]), ("train", (3, 5), [False, False]),
             ("test", (5, 6), [False, True]), ("test", (0, 2), None),
             ("test", (2, 4), [False, False]), ("train", (4, 6), [True, False]),
             ("test", (1, 4), [False, False]))
    for kind, (a, b), flags in steps:
        xs, ys = piece(a, b)
        data = {x: xs, y: ys} if flags is None else ({x: xs, y: ys}, flags)
        if kind == "test":
            tests.append(trainer.test_minibatch(data))
        else:
            trainer.train_minibatch(data)
            losses.append(trainer.previous_minibatch_loss_average)
    res["tests"] = np.array(tests)
    res["losses"] = np.array(losses)
    res["after"] = r.param_values(z.parameters)
    refused = []
    xs, ys = piece(0, 2)
    for data in (({x: (xs, [False, False]), y: ys}, [True, True]),
                 {x: (xs, [True, True]), y: (ys, [True, True])}):
        try:
            trainer.test_minibatch(data)
            refused.append("accepted")
        except ValueError as exc:
            refused.append(type(exc).__name__ + ": " + str(exc))
    res["refused"] = refused
    return res


@cntk_case(names=["cntk.Trainer.train_minibatch"],
           note="char_rnn.py's truncated back-propagation through time, further: an LSTM (after "
                "a Stabilizer, as the program's), a GRU and a plain recurrent step in one "
                "model, two sequences per minibatch, lengths changing from one to the next, "
                "flags per sequence, "
                "a learning rate (the carried states are the previous step's values, "
                "computed before its update), and eval afterwards starting afresh")
def sequence_begin_flags_carry_every_recurrence(C, r):
    r.touch("cntk.Trainer.train_minibatch")
    x = C.sequence.input_variable(3)
    y = C.sequence.input_variable(2)
    z = C.layers.Sequential([C.layers.Stabilizer(), C.layers.Recurrence(C.layers.LSTM(4)),
                             C.layers.Recurrence(C.layers.GRU(5)),
                             C.layers.Recurrence(C.layers.RNNStep(6)), C.layers.Dense(2)])(x)
    res = {"parameters": r.set_params(z.parameters)}
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)),
                        [C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.5),
                                        C.momentum_schedule(0.5))])
    losses = []
    # (sequences of one length per minibatch: with several lengths CNTK 2.7 pairs them by
    # the slots it packs them into, which Stadyn refuses to imitate)
    for flags, lengths in (([True, True], (4, 4)), ([False, False], (3, 3)),
                           ([False, True], (5, 5)), ([True, False], (2, 2)),
                           ([False, False], (1, 1))):
        xs = [r.randn(n, 3) for n in lengths]
        ys = [r.onehot(n, 2) for n in lengths]
        trainer.train_minibatch(({x: xs, y: ys}, flags))
        losses.append(trainer.previous_minibatch_loss_average)
    res["losses"] = np.array(losses)
    res["after"] = r.param_values(z.parameters)
    data = [r.randn(3, 3)]
    res["eval"] = z.eval({x: data})[0]
    trainer.train_minibatch({x: data, y: [r.onehot(3, 2)]})     # no flags: a fresh start
    res["unflagged"] = np.array(trainer.previous_minibatch_loss_average)
    return res


@cntk_case(names=["cntk.Function.eval"],
           note="Examples/Text/CharacterLM/char_rnn.py samples text one character at a time, "
                "z.eval(([x], [True])) and then z.eval(([x], [False])): each run goes on from "
                "the state the previous one ended in (Stadyn began every run afresh)")
def eval_with_sequence_begin_flags(C, r):
    r.touch("cntk.Function.eval")
    x = C.sequence.input_variable(3)
    z = C.layers.Sequential([C.layers.Recurrence(C.layers.LSTM(4)),
                             C.layers.Recurrence(C.layers.GRU(5)), C.layers.Dense(2)])(x)
    res = {"parameters": r.set_params(z.parameters)}
    whole = [r.randn(5, 3), r.randn(5, 3)]
    res["whole"] = np.stack(z.eval({x: whole}))
    pieces = []
    for k, (a, b) in enumerate(((0, 2), (2, 3), (3, 5))):
        data = [s[a:b] for s in whole]
        if k == 1:                                     # flags given with the input's data
            pieces.append(np.stack(z.eval({x: (data, [False, False])})))
        else:
            pieces.append(np.stack(z.eval(({x: data}, [k == 0, k == 0]))))
    res["pieces"] = np.concatenate(pieces, axis=1)
    res["afresh"] = np.stack(z.eval({x: [s[3:5] for s in whole]}))
    return res
