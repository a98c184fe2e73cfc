"""CTC training as CNTK's speech examples write it: ``forward_backward`` over ``labels_to_graph``
(value and the gradient w.r.t. the network output, with and without ``delayConstraint``, the
blank first or last, a repeated token) and ``edit_distance_error`` (penalties, squashing,
ignored tokens; sequences and one-frame samples), and training on them as CNTK 208 does (the
samples a Trainer counts for a criterion that is one number for the minibatch).

The labels are CNTK's frame labels: one-hot rows, 2 at the frame a token starts, 1 where it
continues."""

import contextlib
import io
import re

import numpy as np

from compat_harness import cntk_case

CLASSES = 5


def _frames(tokens, lengths):
    """Frame labels for ``tokens`` starting at the frames ``starts`` (``(token, start)`` pairs)
    over ``lengths`` frames."""
    rows = np.zeros((lengths, CLASSES), np.float32)
    for i, (token, start) in enumerate(tokens):
        end = tokens[i + 1][1] if i + 1 < len(tokens) else lengths
        rows[start, token] = 2.0
        rows[start + 1:end, token] = 1.0
    return rows


# three sequences: tokens (class, first frame), frames; the second repeats a token, the third
# starts its only token late
_SEQUENCES = [([(0, 0), (1, 2), (3, 5)], 8), ([(2, 0), (2, 2)], 4), ([(1, 3)], 6)]


def _ctc(C, r, blank, delay, sequences=_SEQUENCES):
    r.touch("cntk.Function.eval", "cntk.Function.shape", "cntk.Function.grad")
    labels = C.sequence.input_variable(CLASSES)
    z = C.sequence.input_variable(CLASSES, needs_gradient=True)
    if blank != CLASSES - 1:                         # the blank's own class: relabel tokens
        sequences = [([(t if t != blank else CLASSES - 1, s) for t, s in toks], n)
                     for toks, n in sequences]
    f = C.forward_backward(C.labels_to_graph(labels), z, blankTokenId=blank,
                           delayConstraint=delay)
    lab = [_frames(toks, n) for toks, n in sequences]
    out = [r.randn(n, CLASSES).astype(np.float32) * 2 for _, n in sequences]
    feed = {labels: lab, z: out}
    value, (grad,) = r.cntk_forward_backward(f, feed, [z])
    per_sequence = [f.eval({labels: [a], z: [b]}) for a, b in zip(lab, out)]
    return {"value": f.eval(feed), "shape": list(f.shape), "train_value": value,
            "grad": np.concatenate(grad, 0), "grad_of_sum": np.concatenate(
                f.grad(feed, wrt=[z]), 0), "per_sequence": np.array(per_sequence, np.float32)}


_NAMES = ["cntk.ops.forward_backward", "cntk.ops.labels_to_graph", "cntk.Function.grad",
          "cntk.Function.eval"]


@cntk_case(names=_NAMES, rtol=1e-4, atol=1e-5,
           note="float32 sums over paths: CNTK's own CTC and torch's differ in the last bits")
def ctc_forward_backward(C, r):
    return _ctc(C, r, blank=CLASSES - 1, delay=-1)


@cntk_case(names=_NAMES, rtol=1e-4, atol=1e-5,
           note="the blank is class 0 (its tokens moved to the last class)")
def ctc_forward_backward__blank_first(C, r):
    return _ctc(C, r, blank=0, delay=-1)


@cntk_case(names=_NAMES, rtol=1e-4, atol=1e-5,
           note="CNTK's delay rule: the gradient is softmax minus the normalised occupancy, "
                "not the value's derivative, and the final blank can only take frames before "
                "the delay")
def ctc_forward_backward__delay(C, r):
    return _ctc(C, r, blank=CLASSES - 1, delay=2)


@cntk_case(names=_NAMES, rtol=1e-4, atol=1e-5)
def ctc_forward_backward__delay_wide(C, r):
    return _ctc(C, r, blank=CLASSES - 1, delay=4)


@cntk_case(names=["cntk.labels_to_graph", "cntk.Function.eval"])
def ctc_labels_to_graph(C, r):
    r.touch("cntk.Function.eval")
    labels = C.sequence.input_variable(CLASSES)
    g = C.labels_to_graph(labels)
    lab = [_frames(toks, n) for toks, n in _SEQUENCES]
    return {"value": np.concatenate(g.eval({labels: lab}), 0), "shape": list(g.shape)}


def _onehot(ids):
    return np.eye(CLASSES, dtype=np.float32)[np.asarray(ids)]


@cntk_case(names=["cntk.metrics.edit_distance_error", "cntk.edit_distance_error",
                  "cntk.Function.eval"],
           note="CNTK 2.7 takes the second input as the reference (its token count divides)")
def ctc_edit_distance_error(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.shape")
    a, b = C.sequence.input_variable(CLASSES), C.sequence.input_variable(CLASSES)
    lengths = [7, 4, 5, 6]
    seq_a = [_onehot(r.randint(0, CLASSES, (n,))) for n in lengths]
    seq_b = [_onehot(r.randint(0, CLASSES, (n,))) for n in lengths]
    seq_b[3] = _onehot([1, 1, 1, 1, 4, 4])                   # squashed: 1 token, then ignored
    feed = {a: seq_a, b: seq_b}
    res = {}
    options = [{}, {"squashInputs": True}, {"squashInputs": True, "tokensToIgnore": [4]},
               {"subPen": 0, "delPen": 2, "insPen": 1},
               {"subPen": 3, "delPen": 1, "insPen": 2, "tokensToIgnore": [0, 1]}]
    for i, kw in enumerate(options):
        e = C.metrics.edit_distance_error(a, b, **kw)
        res["value %d" % i] = e.eval(feed)
        res["shape %d" % i] = list(e.shape)
    e = C.edit_distance_error(b, a, squashInputs=True)
    res["swapped"] = e.eval(feed)
    # CNTK's documented example: samples without a sequence axis are one frame each
    x, y = C.input_variable(2), C.input_variable(2)
    doc = C.edit_distance_error(x, y, 0, 1, 1, True, [1])
    res["documented"] = doc.eval({x: np.array([[1, 3], [2, 0]], np.float32),
                                  y: np.array([[2, 0], [2, 0]], np.float32)})
    flat = C.edit_distance_error(x, y)
    res["samples"] = flat.eval({x: np.array([[1, 3], [2, 0], [3, 1]], np.float32),
                                y: np.array([[2, 0], [2, 0], [0, 1]], np.float32)})
    return res


_TIMING = re.compile(r"\d+\.\d+s \( *\d+\.\d+ samples/s\)")


@cntk_case(names=["cntk.logging.progress_print", "cntk.Trainer.train_minibatch",
                  "cntk.Trainer.previous_minibatch_sample_count",
                  "cntk.Trainer.total_number_of_samples_seen", "cntk.Trainer.test_minibatch",
                  "cntk.eval.Evaluator.test_minibatch"], rtol=1e-4, atol=1e-5,
           note="CNTK 208's training: forward_backward and edit_distance_error are one number "
                "for the minibatch, so CNTK counts the samples of the first input with a "
                "sequence axis met depth first (the label frames), not the sequences; a "
                "reduce_sum over all axes of a per-frame loss counts the frames too")
def ctc_trainer_counts_frames(C, r):
    r.touch("cntk.Trainer.train_minibatch", "cntk.Trainer.test_minibatch",
            "cntk.eval.Evaluator.test_minibatch", "cntk.Trainer.previous_minibatch_sample_count",
            "cntk.Trainer.total_number_of_samples_seen")
    labels = C.sequence.input_variable(CLASSES)
    x = C.sequence.input_variable(3)
    w = C.parameter((3, CLASSES), init=r.param_value("w", (3, CLASSES)))
    b = C.parameter((CLASSES,), init=0.1)
    z = C.times(x, w) + b
    criteria = C.forward_backward(C.labels_to_graph(labels), z, blankTokenId=CLASSES - 1,
                                  delayConstraint=3)
    err = C.edit_distance_error(z, labels, squashInputs=True, tokensToIgnore=[CLASSES - 1])
    lab = [_frames(toks, n) for toks, n in _SEQUENCES]
    feats = [r.randn(n, 3).astype(np.float32) for _, n in _SEQUENCES]
    batches = [([0, 1], ), ([2], ), ([1, 2], )]
    out = io.StringIO()
    res = {}
    with contextlib.redirect_stdout(out):
        learner = C.momentum_sgd(z.parameters, C.learning_parameter_schedule_per_sample(0.01),
                                 C.momentum_schedule(0.9))
        trainer = C.Trainer(z, (criteria, err), learner)
        printer = C.logging.progress_print.ProgressPrinter(tag="Training", num_epochs=2)
        counts = []
        for epoch in range(2):
            for (ids,) in batches:
                trainer.train_minibatch({x: [feats[i] for i in ids],
                                         labels: [lab[i] for i in ids]})
                printer.update_with_trainer(trainer, with_metric=True)
                counts.append([trainer.previous_minibatch_sample_count,
                               trainer.previous_minibatch_loss_average,
                               trainer.previous_minibatch_evaluation_average,
                               trainer.total_number_of_samples_seen])
            printer.epoch_summary(with_metric=True)
    res["counts"] = counts
    res["printed"] = [_TIMING.sub("<time>", ln) for ln in out.getvalue().splitlines()
                      if ln.strip()]
    res["test"] = trainer.test_minibatch({x: feats, labels: lab})
    res["evaluator"] = C.eval.Evaluator(err).test_minibatch({x: feats, labels: lab})
    res["w"] = w.value
    # a per-frame loss summed over all axes: one number too, counted by its frames
    y = C.sequence.input_variable(CLASSES)
    total = C.reduce_sum(C.cross_entropy_with_softmax(z, y), axis=C.Axis.all_axes())
    sgd = C.sgd(z.parameters, C.learning_parameter_schedule_per_sample(0.01))
    summed = C.Trainer(z, total, sgd)
    onehot = [np.minimum(a, 1.0) for a in lab]
    summed.train_minibatch({x: feats, y: onehot})
    res["summed"] = [summed.previous_minibatch_sample_count,
                     summed.previous_minibatch_loss_average]
    return res
