"""Ranking and retrieval criteria: ``lambda_rank`` (value and LambdaRank gradients),
``ndcg_at_1`` and ``cosine_distance_with_negative_samples`` (values and gradients)."""

import numpy as np

from compat_harness import cntk_case
from compat_cases.cntk_ops import op_case


def _queries(r, sizes):
    """Scores, gains and group ids for groups of ``sizes``: gains distinct and decreasing in a
    group, its last 0 (CNTK's LambdaRank expects that order and pairs with the minimum)."""
    gains, groups = [], []
    for q, n in enumerate(sizes):
        g = np.sort(r.rand(n - 1, low=1.0, high=20.0))[::-1].round(2)
        gains.extend(list(g) + [0.0])
        groups.extend([q + 3] * n)
    n = sum(sizes)
    col = lambda v: np.asarray(v, np.float32).reshape(n, 1)  # noqa: E731
    return col(r.randn(n)), col(gains), col(groups)


@cntk_case(names=["cntk.losses.lambda_rank", "cntk.Function.grad", "cntk.Function.eval"],
           note="CNTK's LambdaRank gradient does not scale by the root gradient; both sides "
                "get the same random root")
def lambda_rank(C, r):
    r.touch("cntk.Function.grad", "cntk.Function.eval")
    group, gain = C.input_variable(1), C.input_variable(1)
    score = C.input_variable(1, needs_gradient=True)
    f = C.losses.lambda_rank(score, gain, group)
    s, g, q = _queries(r, [4, 3, 5])
    feed = {score: s, gain: g, group: q}
    value, (grad,) = r.cntk_forward_backward(f, feed, [score])
    doc = {score: np.array([[1], [2], [3], [4]], np.float32),
           gain: np.array([[7], [1], [3], [1]], np.float32),
           group: np.array([[1], [1], [2], [2]], np.float32)}
    return {"value": f.eval(feed), "shape": list(f.shape), "train_value": value,
            "grad": grad, "grad_of_sum": f.grad(feed, wrt=[score]),
            "documented": f.grad(doc, wrt=[score]), "documented_value": f.eval(doc)}


@cntk_case(names=["cntk.metrics.ndcg_at_1", "cntk.Function.eval"],
           note="the second group's top scores tie: CNTK ranks the lower gain first")
def ndcg_at_1(C, r):
    r.touch("cntk.Function.eval")
    group, score, gain = C.input_variable(1), C.input_variable(1), C.input_variable(1)
    f = C.metrics.ndcg_at_1(score, gain, group)
    s, g, q = _queries(r, [4, 3, 5, 2])
    s[4:6] = 5.0                                      # a tie at the top of group 2
    doc = {score: np.array([[2], [1], [3], [1]], np.float32),
           gain: np.array([[7], [1], [3], [1]], np.float32),
           group: np.array([[1], [1], [2], [2]], np.float32)}
    return {"value": f.eval({score: s, gain: g, group: q}), "shape": list(f.shape),
            "documented": f.eval(doc)}


op_case("cosine_distance_with_negative_samples",
        lambda C, x, y: C.cosine_distance_with_negative_samples(x, y, 1, 2), [(4,), (4,)],
        names=["cntk.losses.cosine_distance_with_negative_samples"])
op_case("cosine_distance_with_negative_samples__wrap",
        lambda C, x, y: C.cosine_distance_with_negative_samples(x, y, 2, 4), [(2, 3), (2, 3)],
        names=["cntk.losses.cosine_distance_with_negative_samples"],
        note="with 3 samples, shift 2 and 4 negatives the shifted samples wrap around twice")


def _hsoftmax(C, r, label_dim, label_classes, labels):
    r.touch("cntk.Function.eval", "cntk.Function.parameters", "cntk.Function.shape")
    x, label = C.input_variable(4, needs_gradient=True), C.input_variable(1)
    p, class_probs, all_probs = C.losses.hierarchical_softmax_layer(x, label, label_dim,
                                                                    label_classes)
    params = list(p.parameters)
    res = {"listing": r.set_params(params), "order": [q.name for q in params],
           "shapes": [list(p.shape), list(class_probs.shape), [list(a.shape) for a in all_probs]]}
    xv = r.randn(len(labels), 4).astype(np.float32)
    feed = {x: xv, label: np.asarray(labels, np.float32).reshape(-1, 1)}
    res["prob"] = p.eval(feed)
    res["class_probs"] = class_probs.eval({x: xv})
    res["all_probs"] = [a.eval({x: xv}) for a in all_probs]
    value, grads = r.cntk_forward_backward(p, feed, [x] + params)
    res["train_prob"] = value
    res["grad x"] = grads[0]
    for q, g in zip(params, grads[1:]):
        res["grad " + q.name] = g
    return res


@cntk_case(names=["cntk.losses.hierarchical_softmax_layer", "cntk.Function.parameters",
                  "cntk.Function.eval"],
           note="deterministic given the parameters (set from their names): the probability "
                "of each label, the class probabilities, every label's probability, and the "
                "gradients of sum(prob * w) w.r.t. the input and the four parameters")
def hierarchical_softmax_layer(C, r):
    return _hsoftmax(C, r, 7, None, [0, 3, 6, 2, 5])     # 3 classes of 3 labels (2 unused)


@cntk_case(names=["cntk.hierarchical_softmax_layer", "cntk.Function.eval"])
def hierarchical_softmax_layer__classes(C, r):
    return _hsoftmax(C, r, 6, 2, [0, 1, 2, 3, 4, 5])     # 2 classes of 3


def _nce(C, r, noise, num_samples, allow_duplicates, labels):
    r.touch("cntk.Function.eval", "cntk.Function.shape")
    classes, dim = len(noise), 3
    x = C.input_variable(dim, needs_gradient=True)
    y = C.input_variable(classes)
    W = C.parameter((classes, dim), init=0.0, name="W")
    b = C.parameter((classes, 1), init=0.0, name="b")
    r.set_params([W, b])
    loss = C.losses.nce_loss(W, b, x, y, np.asarray(noise, np.float32),
                             num_samples=num_samples, allow_duplicates=allow_duplicates,
                             seed=5)
    feed = {x: r.randn(len(labels), dim).astype(np.float32),
            y: np.eye(classes, dtype=np.float32)[labels]}
    value, grads = r.cntk_forward_backward(loss, feed, [x, W, b])
    return {"value": loss.eval(feed), "shape": list(loss.shape), "train_value": value,
            "grad x": grads[0], "grad W": grads[1], "grad b": grads[2]}


@cntk_case(names=["cntk.losses.nce_loss", "cntk.nce_loss", "cntk.Function.eval"],
           rtol=1e-5, atol=1e-5,
           note="the negatives are drawn (CNTK's generator and Stadyn's differ), so the noise "
                "puts all its mass on one class: every draw is that class and the loss, the "
                "importance weights and the gradients are deterministic (a sampled noise cannot "
                "be compared: without duplicates CNTK draws distinct classes, fewer than there "
                "are)")
def nce_loss(C, r):
    noise = [1e-9, 1e-9, 1.0, 1e-9, 1e-9, 1e-9]
    return _nce(C, r, noise, 4, True, [0, 2, 5, 1])

