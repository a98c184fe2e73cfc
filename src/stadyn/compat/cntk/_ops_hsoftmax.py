"""``cntk.losses.hierarchical_softmax_layer``: CNTK 2.7's two-level softmax, composed of the
compat layer's ops as CNTK composes it of its own (so a graph holding it is an ordinary graph
of catalog ops, with the gradients those ops have).

The ``label_dim`` labels are split into ``label_classes`` classes of ``ceil(label_dim /
label_classes)`` labels each (``label_classes`` defaults to ``ceil(sqrt(label_dim))``); a
label's probability is its class's (a softmax over ``b1 + x W1``) times its probability within
the class (a softmax over the class's own ``b2 + x W2``).  The four parameters are created here,
with CNTK's names, shapes and initialiser (``glorot_normal``): ``hsoftmax_w1`` ``(dim,
classes)``, ``hsoftmax_b1`` ``(classes,)``, ``hsoftmax_w2s`` ``(classes, dim, per class)``,
``hsoftmax_b2s`` ``(classes, per class)``.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x, label = C.input_variable(4), C.input_variable(1)
    >>> p, class_probs, all_probs = C.losses.hierarchical_softmax_layer(x, label, 6)
    >>> p.shape, class_probs.shape, len(all_probs), all_probs[0].shape
    ((1, 1), (3,), 3, (2,))
"""

from __future__ import annotations

import math

from ._ops_math import floor, round as round_  # noqa: A004 - CNTK's name
from ._ops_reduce import softmax
from ._ops_shape import one_hot, reshape
from ._ops_times import times, times_transpose
from ._variables import constant, parameter
from .initializer import glorot_normal

__all__ = ["hierarchical_softmax_layer"]


def hierarchical_softmax_layer(input_var, label_index, label_dim: int, label_classes=None):
    """A two-level hierarchical softmax over ``label_dim`` labels (CNTK 2.7's): returns
    ``(output_prob, class_probs, all_probs)`` -- the probability of the label ``label_index``
    (a ``(1,)`` index per sample; the probability is ``(1, 1)``, as CNTK 2.7 shapes it), the
    probabilities of the ``label_classes`` classes, and a list with, per class, the
    probabilities of its labels.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> x, label = C.input_variable(2), C.input_variable(1)
        >>> p, _, _ = C.losses.hierarchical_softmax_layer(x, label, 4)
        >>> v = p.eval({x: np.zeros((3, 2), np.float32), label: [[0], [1], [3]]})
        >>> v.shape, bool((v > 0).all() and (v < 1).all())
        ((3, 1, 1), True)
    """
    input_dim = int(input_var.shape[0])
    label_dim = int(label_dim)
    if not label_classes:
        label_classes = int(math.ceil(math.sqrt(float(label_dim))))
    label_classes = int(label_classes)
    per_class = int(math.ceil(label_dim / label_classes))

    target_class = floor((label_index + 0.5) / per_class)
    target_in_class = round_(label_index - target_class * per_class)

    w1 = parameter(shape=(input_dim, label_classes), init=glorot_normal(), name="hsoftmax_w1")
    b1 = parameter(shape=(label_classes,), init=glorot_normal(), name="hsoftmax_b1")
    w2s = parameter(shape=(label_classes, input_dim, per_class), init=glorot_normal(),
                    name="hsoftmax_w2s")
    b2s = parameter(shape=(label_classes, per_class), init=glorot_normal(),
                    name="hsoftmax_b2s")

    class_probs = softmax(b1 + times(input_var, w1))
    class_one_hot = one_hot(target_class, num_classes=label_classes, sparse_output=False)
    w2 = reshape(times(class_one_hot, w2s, output_rank=2), [input_dim, -1])
    b2 = reshape(times(class_one_hot, b2s, output_rank=1), [-1])
    probs_in_class = softmax(b2 + times(input_var, w2))

    prob_in_class = times_transpose(
        one_hot(target_in_class, num_classes=per_class, sparse_output=False), probs_in_class)
    class_prob = times_transpose(class_one_hot, class_probs)
    output_prob = prob_in_class * class_prob

    all_probs = []
    for i in range(label_classes):
        ci_one_hot = one_hot(constant(i), num_classes=label_classes, sparse_output=False)
        w2a = times(ci_one_hot, w2s, output_rank=2)
        b2a = times(ci_one_hot, b2s, output_rank=1)
        probs = softmax(b2a + times(input_var, w2a))
        all_probs.append(probs * times_transpose(ci_one_hot, class_probs))
    return output_prob, class_probs, all_probs
