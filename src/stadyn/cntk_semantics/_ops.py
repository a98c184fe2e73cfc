"""CNTK's element rules that both front ends share: safe division, hardmax, straight-through,
logistic loss, ``LogPlus``, constants shaped like a value, one-hot class ids."""

from __future__ import annotations

import math
from typing import Sequence

from .. import functions as F
from .._errors import ShapeError, UnrunnableError
from ..graph import Variable
from ..sequence import reshape_samples

def divide(a: Variable | None, b: Variable) -> Variable:
    """``a / b`` as CNTK 2.7 computes it (``ElementDivide``, and ``Reciprocal`` with ``a`` None
    for 1): 0 where ``b`` is 0, never inf or nan, and no gradient there.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> with sd.auto_forward():
        ...     y = divide(None, sd.Variable.from_numpy_array(np.array([0.0, 2.0], np.float32)))
        >>> y.d.tolist()
        [0.0, 0.5]
    """
    zero = F.stop_gradient(F.equal_scalar(b, 0.0))
    kept = F.r_sub_scalar(zero, 1.0)
    return F.div2(kept if a is None else F.mul2(a, kept), F.add2(b, zero))


def class_ids(x: Variable, num_classes: int) -> Variable:
    """The class ids CNTK 2.7's ``OneHotOp`` reads from ``x`` (int64): each value truncated
    (2.9 is class 2), a negative value (-0.5 too) no class (``num_classes``, whose one-hot
    vector :func:`stadyn.functions.one_hot` makes all zeros, as CNTK does; NNabla's would count
    -1 from the end).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([[2.9], [-0.5], [0.0], [3.0]], np.float32))
        >>> with sd.auto_forward():
        ...     y = F.one_hot(class_ids(x, 3), (3,))
        >>> y.d.tolist()
        [[0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    none = F.constant(float(num_classes), (1,) * x.ndim)
    return F.cast(F.where(F.less_scalar(x, 0.0), none, x), "int64")


def hardmax(x: Variable, lead: int, sample: Sequence[int]) -> Variable:
    """CNTK's ``Hardmax``: per sample (the axes after the ``lead`` ones, of shape ``sample``),
    1.0 at the first largest value in row-major order (the first value no later one exceeds:
    a NaN first wins, a later one is passed by) and 0.0 elsewhere, with no gradient; float64
    for a float64 ``x`` (as CNTK 2.7's), else float32.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> with sd.auto_forward():
        ...     y = hardmax(sd.Variable.from_numpy_array(np.array([[1.0, 3.0, 3.0]])), 1, (3,))
        >>> y.d.tolist()
        [[0.0, 1.0, 0.0]]
    """
    size = math.prod(sample)
    v = F.stop_gradient(x)
    flat = v if len(sample) == 1 else reshape_samples(v, lead, (size,))
    index = F.max(flat, axis=flat.ndim - 1, keepdims=True, only_index=True, rule="cntk")
    hot = F.cast(F.one_hot(F.cast(index, "int64"), (size,)),
                 "float64" if str(x.dtype) == "float64" else "float32")
    return hot if len(sample) == 1 else reshape_samples(hot, lead, tuple(sample))


def straight_through(x: Variable) -> Variable:
    """CNTK's ``StraightThrough`` (``straight_through_impl``): ``1`` where ``x > 0``, else
    ``-1`` (CNTK 2.7 gives -1 for 0 and for NaN), with the gradient of ``clip(x, -1, 1)``
    (what passes where ``|x| <= 1``, 0 for NaN): the sign plus the clipped input less itself
    held (a NaN clipped as 2).  ``C.straight_through_impl`` and the file reader's
    ``StraightThrough`` are this.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.cntk_semantics as S
        >>> x = sd.Variable.from_numpy_array(np.array([0.0, 2.0, -0.5, np.nan], np.float32))
        >>> with sd.auto_forward():
        ...     y = S.straight_through(x)
        >>> y.d.tolist()
        [-1.0, 1.0, -1.0, -1.0]
    """
    held = F.stop_gradient(x)
    sign = F.add_scalar(F.mul_scalar(F.greater(held, F.mul_scalar(held, 0.0)), 2.0), -1.0)
    number = F.equal(held, held)
    clipped = F.clip_by_value_scalar(F.where(number, x, F.add_scalar(
        F.mul_scalar(number, 0.0), 2.0)), -1.0, 1.0)
    return F.add2(sign, F.sub2(clipped, F.stop_gradient(clipped)))


def logistic(output: Variable, target: Variable, weight: Variable | None = None,
             samples: Variable | None = None) -> Variable:
    """CNTK's ``Logistic`` criterion (``weighted_binary_cross_entropy``; Source/
    ComputationNetworkLib/TrainingNodes.h:2081, LogisticNode), one number for the minibatch:
    with ``l = log(2 t o + 1 - t - o)`` (``t log o + (1 - t) log(1 - o)`` for a target of 0 or 1),
    ``-sum(l)``, or with a weight ``-N sum(w l) / sum(w)``, ``N`` the minibatch's samples
    (``samples``, a 0-d Variable; by default the number of ``weight``'s elements).  Its
    gradient is CNTK's (TrainingNodes.h:2046): for ``output`` only, that of ``-sum(w l)`` (the
    weighted value's ``N / sum(w)`` left out).  The three broadcast as element-wise ops do.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.cntk_semantics as S
        >>> o = sd.Variable.from_numpy_array(np.array([[0.25], [0.5]], np.float32))
        >>> t = sd.Variable.from_numpy_array(np.array([[1.0], [0.0]], np.float32))
        >>> w = sd.Variable.from_numpy_array(np.array([[3.0], [1.0]], np.float32))
        >>> with sd.auto_forward():
        ...     y = S.logistic(o, t, w)
        >>> round(float(y.d), 4)                  # -2 (3 log .25 + log .5) / 4
        2.426
    """
    t = F.stop_gradient(target)
    both = F.mul_scalar(F.mul2(output, t), 2.0)    # (output, target, weight: CNTK's order of
                                                    # the Logistic's inputs, as the graph shows)
    # (in CNTK's order, 2 t o + (1 - t), then - o, TrainingNodes.h:2092-2107: o itself for a
    # target of 1, where (2 o - 1) + 1 - o loses a small o's digits in float32)
    log_likelihood = F.log(F.sub2(F.add2(both, F.r_sub_scalar(t, 1.0)), output))
    if weight is None:
        return F.mul_scalar(F.sum(log_likelihood), -1.0)
    w = F.stop_gradient(weight)
    if samples is None:
        samples = F.sum(F.add_scalar(F.mul_scalar(w, 0.0), 1.0))
    total = F.mul_scalar(F.sum(F.mul2(log_likelihood, w)), -1.0)    # (what the gradient is of)
    value = F.div2(F.mul2(samples, total), F.sum(w))
    return F.add2(total, F.stop_gradient(F.sub2(value, total)))


def logistic_weights_refused(output: tuple[int, int], weight: tuple[int, int], logistic: str,
                             weight_node: str | None = None) -> tuple[type, str] | None:
    """What CNTK 2.7 builds (and saves, and loads) as a weighted ``Logistic`` but refuses when
    it runs (its ``LogisticNode``, Source/ComputationNetworkLib/TrainingNodes.h), in the order
    it finds them, as ``(error class, CNTK's words)``; None where it runs.  ``output`` and
    ``weight``: ``(dynamic axes, values per sample)`` of each (0: no batch axis, 1: the batch
    axis, 2: a sequence's too); ``logistic`` the Logistic node's name, ``weight_node`` the
    weight's, where known (CNTK names it).  An output without dynamic axes (its
    ``ValidateBinaryReduce``, ComputationNode.cpp:470-490); a weight of another size per
    sample than the output's (its validation, TrainingNodes.h); a weight on other dynamic axes
    than the output's (none: a constant, or the batch axis beside a sequence's: the column
    range it computes, ``ColumnRangeWithMBLayoutFor``, naming the weight an ``InputValue``
    where it has dynamic axes, else a ``LearnableParameter``, as CNTK's v1 graph makes an
    input without them) -- each an ``UnrunnableError``, a RuntimeError --; more than one value
    per sample (its weighted sum: a ``ShapeError``, a ValueError).

    Example:
        >>> import stadyn.cntk_semantics as S
        >>> S.logistic_weights_refused((1, 1), (1, 1), "Logistic5") is None
        True
        >>> error, words = S.logistic_weights_refused((1, 3), (1, 1), "Logistic5")
        >>> error.__name__, words
        ('UnrunnableError', 'The Matrix dimensions of the second argument weights the \
Logistic5 Logistic operation do not match.')
        >>> S.logistic_weights_refused((1, 3), (1, 3), "Logistic5")[1]
        'The input matrix dimensions do not match.'
        >>> S.logistic_weights_refused((0, 1), (1, 1), "Logistic5")[1]
        "Node 'Logistic5' (Logistic operation): Expected MBLayout in Input 0."
        >>> S.logistic_weights_refused((2, 1), (1, 1), "Logistic5", "Input7")[1][:43]
        "Node 'Input7' (InputValue operation): Colum"
    """
    (output_axes, output_size), (weight_axes, weight_size) = output, weight
    if not output_axes:
        return UnrunnableError, (f"Node '{logistic}' (Logistic operation): Expected MBLayout in "
                                 "Input 0.")
    if weight_size != output_size:
        return UnrunnableError, (f"The Matrix dimensions of the second argument weights the "
                                 f"{logistic} Logistic operation do not match.")
    if weight_axes != output_axes:
        kind = "InputValue" if weight_axes else "LearnableParameter"
        named = f"Node '{weight_node}' ({kind} operation): " if weight_node else ""
        return UnrunnableError, (f"{named}ColumnRangeWithMBLayoutFor: FrameRange's dynamic axis "
                                 "is inconsistent with matrix. They are compatible though--are "
                                 "you missing a ReconcileDynamicAxis operation?")
    if weight_size != 1:
        return ShapeError, "The input matrix dimensions do not match."
    return None


def constant_like(x: Variable, fill: float) -> Variable:
    """CNTK's ``ConstantOp`` (``zeros_like``, ``ones_like``): ``fill`` everywhere in ``x``'s
    shape, whatever ``x`` holds -- NaN and infinities too, which ``x * 0`` would keep: ``x`` is
    only compared with itself (0 or 1), and takes no gradient.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.cntk_semantics as S
        >>> x = sd.Variable.from_numpy_array(np.array([np.nan, np.inf, -1.0], np.float32))
        >>> with sd.auto_forward():
        ...     S.constant_like(x, 1.0).d.tolist(), S.constant_like(x, 0.0).d.tolist()
        ([1.0, 1.0, 1.0], [0.0, 0.0, 0.0])
    """
    x = F.stop_gradient(x)
    return F.add_scalar(F.mul_scalar(F.equal(x, x), 0.0), float(fill))


def sequence_columns(x: Variable) -> Variable:
    """The samples of ``x`` as the columns of CNTK 2.7's minibatch, the order its ranking
    nodes (``LambdaRank``, ``NDCG``) read them in: a sequence's steps packed as CNTK packs them
    (:func:`stadyn.functions.cntk_sequence_columns` over its lengths: step by step, each step's
    parallel streams side by side, gaps zero); a value without a sequence axis as it is.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.cntk_semantics as S
        >>> x = sd.sequence.input_variable(1)
        >>> x.d = [np.array([[1.0]]), np.array([[2.0], [3.0]])]
        >>> with sd.auto_forward():
        ...     columns = S.sequence_columns(x)
        >>> columns.d.ravel().tolist()      # streams (1, gap) and (2, 3), step by step
        [1.0, 2.0, 0.0, 3.0]
        >>> y = sd.Variable((4, 1))
        >>> S.sequence_columns(y) is y
        True
    """
    if x.sequence_lengths is None:
        return x
    return F.cntk_sequence_columns(x, x.sequence_lengths)


def log_add_exp(a: Variable, b: Variable) -> Variable:
    """CNTK's ``LogPlus`` (``C.log_add_exp``, BrainScript's ``LogPlus``): ``log(exp(a) +
    exp(b))`` as CNTK 2.7's ``LogAdd`` computes it (Math/TensorOps.h): the larger plus
    ``log1p(exp(smaller - larger))``, that log1p exact where its argument is below float's
    epsilon (``log_add_exp(log(0), 0)`` is CNTK's ``exp(-85.1)``, 1.1e-37, not 0).  The
    gradient is that of ``max + log(exp(a - max) + exp(b - max))``: ``sigmoid(a - b)`` for
    ``a``, the rest for ``b``.  ``a`` and ``b`` broadcast as element-wise ops do.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.cntk_semantics as S
        >>> a = sd.Variable.from_numpy_array(np.array([0.0, 1000.0, -85.1], np.float32))
        >>> b = sd.Variable.from_numpy_array(np.array([0.0, 0.0, 0.0], np.float32))
        >>> with sd.auto_forward():
        ...     y = S.log_add_exp(a, b)
        >>> [round(v, 4) for v in y.d.tolist()]
        [0.6931, 1000.0, 0.0]
    """
    top = F.maximum2(a, b)
    # the value the gradient is taken of (exp of at most 0: no overflow)
    smooth = F.add2(top, F.log(F.add2(F.exp(F.sub2(a, top)), F.exp(F.sub2(b, top)))))
    held = F.stop_gradient(top)
    small = F.stop_gradient(F.exp(F.sub2(F.minimum2(a, b), top)))
    # log1p(small) as log(u) * small / (u - 1) with u = 1 + small; small itself where u is 1
    u = F.add_scalar(small, 1.0)
    log1p = F.where(F.equal_scalar(u, 1.0), small,
                    F.div2(F.mul2(F.log(u), small), F.add_scalar(u, -1.0)))
    return F.add2(smooth, F.stop_gradient(F.sub2(F.add2(held, log1p), smooth)))


class _CannotRun:
    """The ``python_function`` computation :func:`cannot_run` builds: its output is shaped as
    CNTK shows it (``shape`` a sample's, the batch axis kept); running it raises ``message``."""

    def __init__(self, shape: tuple, message: str):
        self.shape, self.message = shape, message

    def output_shapes(self, shapes, dtypes):
        return [((shapes[0][0], *self.shape), dtypes[0])]

    def forward_arrays(self, arrays):
        raise UnrunnableError(self.message)

    def backward_arrays(self, state, grads, needed):
        return [None for _ in needed]


def cannot_run(weights: Variable, shape: tuple, where: str) -> Variable:
    """A CNTK sampling op (``random_sample``, ``random_sample_inclusion_frequency``) of
    ``weights`` that have the batch axis: CNTK 2.7 builds, saves and loads it, and its
    evaluation fails naming the weights' node -- ``where``, as ``Node 'Input3' (InputValue
    operation)`` -- with ``Minibatch data cannot be interpreted as a single 2D tensor.``  The
    result is shaped as CNTK shows it (a sample's ``shape`` after the batch axis of
    ``weights``); running it raises an ``UnrunnableError`` (a ``RuntimeError``) in CNTK's
    words.

    Example:
        >>> import stadyn as sd, stadyn.cntk_semantics as S
        >>> w = sd.Variable((2, 5))                    # a batch of 2 weight vectors
        >>> y = S.cannot_run(w, (3, 5), "Node 'w' (InputValue operation)")
        >>> y.shape
        (2, 3, 5)
        >>> try:
        ...     y.forward()
        ... except RuntimeError as e:
        ...     print("Node 'w' (InputValue operation): Minibatch data cannot" in str(e))
        True
    """
    return F.python_function(weights, function=_CannotRun(
        shape, f"{where}: Minibatch data cannot be interpreted as a single 2D tensor."))
