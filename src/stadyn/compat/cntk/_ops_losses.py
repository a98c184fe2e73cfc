"""CNTK's losses and metrics (``cntk.losses``, ``cntk.metrics``): one value per sample, summed
over the minibatch by the Trainer.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> z, t = C.input_variable(3), C.input_variable(3)
    >>> ce = C.cross_entropy_with_softmax(z, t)
    >>> ce.eval({z: np.zeros((1, 3), np.float32), t: np.eye(3, dtype=np.float32)[:1]}).round(4)
    array([[1.0986]], dtype=float32)
"""

from __future__ import annotations

import inspect
import math

import numpy as np

from ... import functions as F
from ... import cntk_semantics as S
from ..._errors import ShapeError
from ...graph import Variable
from ...cntk_semantics import broadcast_pair
from ._deferrable import defer_module
from ._run_checks import refuse_when_run
from ._sparse_operands import refuse_sparse_operands, refuse_sparse_run
from ._loss_targets import (_broadcast_target, _core, _cross_entropy_of,
                            _cross_entropy_of_whole_samples, _target_like, _topn_target)
from ._mixins import GraphObject
from ._adapt import (batched, binary, const, float_arrays, lead_axes, named, one_op, operand,
                     refuse_name, swig_count,
                     operands_dtype, same_dtype, sample_axes, sample_axis,
                     sample_shape, unwrap, wrap)
from ._axis import Axis
from ._axis_arguments import takes_axes, whole_sample
from ._mixed_axes import refuse_mixed_axes
from ._shown_constants import scalar_constant, show_constants, show_topn_constant

__all__ = ["cross_entropy_with_softmax", "binary_cross_entropy", "weighted_binary_cross_entropy",
           "squared_error", "cosine_distance", "classification_error", "fmeasure",
           "cosine_distance_with_negative_samples"]


def _axis(x, axis) -> int:
    a = axis.static_axis_index() if isinstance(axis, Axis) else int(axis)
    return sample_axis(x, a)


@float_arrays("output_vector", "target_vector")
@takes_axes(axis="axis")
def cross_entropy_with_softmax(output_vector, target_vector, axis=-1, name: str = ""):
    """``log_sum_exp(z) - sum(t * z)`` along ``axis``: the cross entropy of ``softmax(z)`` for a
    target that sums to 1 (one-hot or soft), with CNTK's gradients (``softmax(z) - t`` for
    ``z``, ``-z`` for ``t``).  Of matrix samples ``(R, C)`` along the default axis, CNTK 2.7's
    ``(R, R)`` (:func:`_cross_entropy_of_matrices`); along ``axis=None`` (all static axes),
    over the whole sample."""
    refuse_mixed_axes("TransposeTimes", (output_vector, target_vector), 0, "placeholder")
    if whole_sample(axis):      # (None, all static axes: over the whole sample, as CNTK 2.7)
        out = _cross_entropy_of_whole_samples(output_vector, target_vector)
        made = named(wrap(out), name, "CrossEntropyWithSoftmax")
        # (CNTK 2.7's ReduceLogSum and ElementTimes of sparse data: refused when run)
        refuse_sparse_run("CrossEntropyWithSoftmax", [output_vector, target_vector], made)
        return _loss_block(made, name, (output_vector, target_vector), "Minus")
    if _matrices_along_default_axis(output_vector, target_vector, axis):
        return _cross_entropy_of_matrices(output_vector, target_vector, name)
    if isinstance(axis, Axis) or int(axis) != -1:   # (ElementTimes: the target broadcast)
        target_vector = _broadcast_target(target_vector, output_vector,
                                          "cross_entropy_with_softmax along an axis")
    out = _cross_entropy_of(operand(output_vector),
                            _target_like(target_vector, output_vector, True),
                            _axis(output_vector, axis),
                            lead_axes(target_vector) != lead_axes(output_vector) and
                            (isinstance(axis, Axis) or int(axis) != -1),
                            max(0, lead_axes(target_vector) - lead_axes(output_vector)))
    return _loss_block(named(wrap(out), name, "CrossEntropyWithSoftmax"), name,
                       (output_vector, target_vector), "Minus")


@float_arrays("output_vector", "target_vector")
@takes_axes(axis="axis")
def classification_error(output_vector, target_vector, axis=-1, topN: int = 1,
                         name: str = ""):
    """1 for a sample whose target class (the target's argmax) is not among the ``topN``
    largest outputs, else 0; with ``topN > 1``, the number of such samples in the minibatch
    (one number, as CNTK 2.7 gives it).  Along another ``axis`` than the last given as -1
    (``axis=1`` of ``(R, C)`` scores per sample, as CNTK's Fast R-CNN examples ask), CNTK 2.7
    computes something else (Function.cpp, ``ClassificationError``): a row is wrong where the
    target differs anywhere from the row's maxima (all of them marked), and a sample's error
    is the mean of its rows': one number per sample.  Samples of rank 2 or more count whole
    with ``topN > 1`` (the target's largest among the sample's ``topN`` largest values); along
    the default axis with ``topN=1`` CNTK 2.7 refuses samples of rank 3 or more (RuntimeError,
    as the function is made).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> z, y = C.input_variable((2, 2)), C.input_variable((2, 2))
        >>> C.classification_error(z, y, topN=2).eval(
        ...     {z: np.array([[[4, 3], [2, 1]]], np.float32),
        ...      y: np.array([[[0, 0], [1, 0]]], np.float32)}).tolist()
        1.0
    """
    _topn_checked({"topN": topN, "axis": axis})
    if int(topN) > 1 and not (batched(output_vector) and batched(target_vector)):
        return _topn_refused_when_run(output_vector, target_vector, name)
    refuse_mixed_axes("TransposeTimes", (output_vector, target_vector), 0, "Hardmax")
    axis = _python_axis(axis)
    if int(topN) == 1 and axis is None:
        return _classification_error_along(output_vector, target_vector, None, name)
    if int(topN) == 1 and isinstance(axis, int) and int(axis) != -1:
        return _classification_error_along(output_vector, target_vector, axis, name)
    default_axis = not isinstance(axis, Axis) and int(axis) == -1
    if int(topN) == 1 and default_axis and len(sample_shape(target_vector)) > 2:
        raise RuntimeError(
            "Function 'ClassificationError' (1 - TransposeTimes(target, Hardmax(output))): "
            "TransposeTimes operation currently requires the right operand (the target, of "
            f"shape {tuple(sample_shape(target_vector))}) to be of rank 1 or 2\n(CNTK 2.7 "
            "refuses classification_error of samples of rank 3 or more along its default "
            "axis; give axis= or topN=)")
    if int(topN) == 1 and _matrices_along_default_axis(output_vector, target_vector, axis):
        return _classification_error_of_matrices(output_vector, target_vector, name)
    if int(topN) == 1 and default_axis and len(sample_shape(output_vector)) > 1 and \
            lead_axes(target_vector) == lead_axes(output_vector) and \
            tuple(sample_shape(target_vector)) != tuple(sample_shape(output_vector)):
        if _core(tuple(sample_shape(target_vector))) == tuple(sample_shape(output_vector))[-1:]:
            t = _target_like(target_vector, output_vector, True)
            return _classification_error_of_rows(output_vector, target_vector, t, name)
    o, t, ax = operand(output_vector), _target_like(target_vector, output_vector, True), \
        _axis(output_vector, axis)
    if int(topN) > 1 and default_axis and len(sample_shape(output_vector)) > 1:
        # CNTK 2.7's ClassificationError node with topN reads a sample (a step of a sequence)
        # as one column of all its values: the target's largest among the topN largest of
        # the whole sample
        size = int(np.prod(sample_shape(output_vector)))
        lead = lead_axes(output_vector)
        o = S.reshape_sample(o, (size,), lead > 0, sequence=lead == 2)
        t = _topn_target(target_vector, output_vector, t, size)
        ax = lead
    out = F.classification_error(o, t, ax, int(topN))
    if topN > 1 and batched(output_vector):
        from . import _graph as G
        out = F.sum(out)
        G.BATCH.unmark(out)
    made = named(wrap(out), name, "ClassificationError")
    if int(topN) > 1:       # (CNTK 2.7's primitive ClassificationError reading N, a constant
        show_topn_constant(made.variable)                                  # after its operands)
        return made
    return _loss_block(made, name, (output_vector, target_vector), "Minus", one=True)


def _topn_refused_when_run(output_vector, target_vector, name: str):
    """``classification_error(..., topN > 1)`` of an output or target without the batch axis
    (a constant): CNTK 2.7 builds it, a scalar, and refuses every run, its ClassificationError
    node (inputs: the target, then the output) expecting a minibatch layout on both."""
    out = F.mul_scalar(F.add2(F.sum(operand(output_vector)), F.sum(operand(target_vector))),
                       0.0)
    made = named(wrap(one_op(out, output_vector, target_vector)), name, "ClassificationError")
    missing = 0 if not batched(target_vector) else 1
    refuse_when_run(out, f"Node '{made.root_function.uid}' (ClassificationError operation): "
                    f"Expected MBLayout in Input {missing}.\nclassification_error with topN > "
                    f"1: its {('target', 'output')[missing]} has no batch axis (CNTK 2.7 "
                    "counts the minibatch's samples; give it an input's samples)", RuntimeError)
    return made


def _classification_error_of_matrices(output_vector, target_vector, name: str):
    """CNTK 2.7's ``ClassificationError`` of matrix samples ``(R, C)`` along its default axis
    (Function.cpp's ``1 - TransposeTimes(labels, Hardmax(output))``): the hardmax is the
    whole sample's (one 1 at its first largest value) and the error an ``(R, R)`` matrix,
    ``1 - hardmax @ labels.T``.  Of an operand without dynamic axes (one matrix), whose rows
    CNTK 2.7 holds as its columns, the hardmax is each row's.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> z, y = C.input_variable((2, 2)), C.input_variable((2, 2))
        >>> C.classification_error(z, y).eval({z: np.array([[[1, 2], [0, 0]]], np.float32),
        ...                                    y: np.array([[[0, 1], [1, 0]]], np.float32)})
        array([[[0., 1.],
                [1., 1.]]], dtype=float32)
    """
    o, t = operand(output_vector), operand(target_vector)
    h = S.hardmax(o, 1, tuple(sample_shape(output_vector)) if lead_axes(output_vector)
                  else tuple(o.shape[1:]))
    out = F.r_sub_scalar(F.batch_matmul(h, t, transpose_b=True), 1.0)
    return _loss_block(named(wrap(one_op(out, o, t)), name, "ClassificationError"), name,
                       (o, t), "Minus", one=True)


def _classification_error_of_rows(output_vector, target_vector, t, name: str):
    """CNTK 2.7's ``ClassificationError`` along its default axis of samples ``(..., V)`` and
    a ``(V,)`` label (``t``: given leading axes of 1): ``1 - TransposeTimes(label,
    Hardmax(output))``, the hardmax the whole sample's (one 1 at its first largest value),
    so ``(..., 1)``: 1 in every row but the one holding that value, 1 less the label's value
    at it there.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> z, y = C.input_variable((2, 3)), C.input_variable(3)
        >>> C.classification_error(z, y).eval({z: np.array([[[1, 2, 0], [0, 5, 0]]], np.float32),
        ...                                    y: np.array([[0, 1, 0]], np.float32)}).tolist()
        [[[1.0], [0.0]]]
    """
    o = operand(output_vector)
    h = S.hardmax(o, lead_axes(output_vector), tuple(sample_shape(output_vector)))
    hit = F.sum(F.mul2(h, F.cast(t, str(h.dtype))), axis=o.ndim - 1, keepdims=True)
    out = F.r_sub_scalar(hit, 1.0)
    return _loss_block(named(wrap(one_op(out, o, t)), name, "ClassificationError"), name,
                       (o, operand(target_vector)), "Minus", one=True)


def _matrices_along_default_axis(output_vector, target_vector, axis) -> bool:
    """Whether CNTK 2.7 computes a loss of these operands along its default axis with
    ``TransposeTimes`` of matrices (Function.cpp, ``CrossEntropyWithSoftmax`` and
    ``ClassificationError`` along ``Axis(0)``): samples ``(R, C)`` of one shape, with the
    batch axis alone or no dynamic axis (one of them without it, a constant, is multiplied
    with every sample of the other)."""
    return not isinstance(axis, Axis) and int(axis) == -1 and \
        len(sample_shape(output_vector)) == 2 and lead_axes(output_vector) <= 1 and \
        lead_axes(target_vector) <= 1 and \
        tuple(sample_shape(target_vector)) == tuple(sample_shape(output_vector))


def _cross_entropy_of_matrices(output_vector, target_vector, name: str):
    """CNTK 2.7's ``CrossEntropyWithSoftmax`` of matrix samples ``(R, C)`` along its default
    axis (``ReduceLogSum(z) - TransposeTimes(t, z)``): ``(R, R)``, the log-sum-exp of row
    ``i`` of ``z`` less the product of that row with row ``j`` of ``t``.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> z, t = C.input_variable((2, 2)), C.input_variable((2, 2))
        >>> C.cross_entropy_with_softmax(z, t).eval(
        ...     {z: np.array([[[1, 0], [0, 0]]], np.float32),
        ...      t: np.array([[[1, 0], [0, 1]]], np.float32)}).round(4)
        array([[[0.3133, 1.3133],
                [0.6931, 0.6931]]], dtype=float32)
    """
    o, t = operand(output_vector), operand(target_vector)
    top = F.max(o, axis=o.ndim - 1, keepdims=True)
    lse = F.add2(F.log(F.sum(F.exp(F.sub2(o, top)), axis=o.ndim - 1, keepdims=True)), top)
    out = F.sub2(lse, F.batch_matmul(o, t, transpose_b=True))
    return _loss_block(named(wrap(one_op(out, o, t)), name, "CrossEntropyWithSoftmax"), name,
                       (o, t), "Minus")


def _python_axis(axis):
    """``classification_error``'s ``axis`` as CNTK 2.7's Python hands it on (sanitize_axis):
    a static ``C.Axis(k)`` as the index ``k`` (both become C++'s ``Axis(-1 - k)``), ``None``
    and ``Axis.all_static_axes()`` as ``None`` (all the sample's axes); others as given."""
    if axis is None or (isinstance(axis, Axis) and axis == Axis.all_static_axes()):
        return None
    if isinstance(axis, Axis) and axis.is_static_axis and axis != Axis.new_leading_axis():
        return int(axis.static_axis_index())
    return axis


def _classification_error_along(output_vector, target_vector, axis, name: str):
    """CNTK 2.7's ``ClassificationError`` along an axis that is not its first (C++'s; Python
    gives -1 for that one): ``mean(sum(target != (o == max(o, axis)), axis) >= 1)`` over all
    the sample's axes.  ``axis=None`` (``Axis.all_static_axes()``): along all of them, 1 for
    a sample whose target differs anywhere from its maxima (Function.cpp:1844-1866).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> z, y = C.input_variable((2, 3)), C.input_variable((2, 3))
        >>> e = C.classification_error(z, y, axis=1)
        >>> e.eval({z: np.array([[[1, 2, 0], [3, 1, 0]]], np.float32),
        ...         y: np.array([[[0, 1, 0], [0, 1, 0]]], np.float32)}).tolist()
        [0.5]
    """
    target_vector = _broadcast_target(target_vector, output_vector,
                                      "classification_error along an axis")
    o, t = operand(output_vector), _target_like(target_vector, output_vector)
    ax = tuple(range(lead_axes(output_vector), len(o.shape))) if axis is None else \
        _axis(output_vector, axis)
    marked = F.cast(F.equal(o, F.max(o, axis=ax, keepdims=True)), str(o.dtype))
    wrong = F.cast(F.not_equal(t, marked), str(o.dtype))
    # an output without the target's dynamic axes (a constant) is compared with every
    # sample of the target: the sample's axes are those after the target's leading ones
    lead = max(lead_axes(output_vector), lead_axes(target_vector))
    shift = lead - lead_axes(output_vector)
    ax = tuple(a + shift for a in ax) if isinstance(ax, tuple) else ax + shift
    rows = F.cast(F.greater_equal_scalar(F.sum(wrong, axis=ax, keepdims=True), 1.0),
                  str(o.dtype))
    out = F.mean(rows, axis=tuple(range(lead, len(rows.shape)))) if len(rows.shape) > lead \
        else rows
    return _loss_block(named(wrap(one_op(out, o, t)), name, "ClassificationError"), name,
                       (o, t), "ReduceElements")


# CNTK 2.7's BinaryCrossEntropy keeps its logs finite by 1e-6 (float32) inside them
# (CNTKv2LibraryDll/Function.cpp, BinaryCrossEntropy): log(1e-6 + o) and log((1 + 1e-6) - o)
_BCE_EPS = np.float32(1e-6)
_BCE_ONE_PLUS_EPS = np.float32(1.0) + _BCE_EPS


@float_arrays("output", "target")
def binary_cross_entropy(output, target, name: str = ""):
    """``-(t log(1e-6 + o) + (1 - t) log(1 + 1e-6 - o))`` element by element, computed in
    CNTK 2.7's order, so an output of exactly 0 or 1 costs ``-log(1e-6)`` (13.8), not
    infinity.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> o, t = C.input_variable(2), C.input_variable(2)
        >>> C.binary_cross_entropy(o, t).eval({o: np.array([[0.0, 0.5]], np.float32),
        ...                                    t: np.array([[1.0, 1.0]], np.float32)}).round(4)
        array([[13.8155,  0.6931]], dtype=float32)
    """
    refuse_name(name, "BinaryCrossEntropy")
    refuse_mixed_axes("ElementTimes", (output, target), 0, "Log")
    o, t = operand(output), operand(target)
    # CNTK 2.7's block BinaryCrossEntropy over the ops its C++ builds, with its three scalar
    # Constants: Negate(Plus(ElementTimes(t, Log(Plus(1e-6, o))),
    # ElementTimes(Minus(1, t), Log(Minus(1 + 1e-6, o))))) (weighted_binary_cross_entropy
    # is its primitive Logistic)
    eps, one, one_eps = (const(c) for c in (_BCE_EPS, np.float32(1.0), _BCE_ONE_PLUS_EPS))
    picked = binary(F.mul2, target, _log(binary(F.add2, eps, output, op="Plus")),
                    op="ElementTimes")
    other = binary(F.mul2, binary(F.sub2, one, target, op="Minus"),
                   _log(binary(F.sub2, one_eps, output, op="Minus")), op="ElementTimes")
    out = F.mul_scalar(unwrap(binary(F.add2, picked, other, op="Plus")), -1.0)
    from . import _graph as G
    G.mark_block(out, "BinaryCrossEntropy", name, [o, t], "Negate")
    return wrap(out)


def _log(x):
    """CNTK's Log op of ``x`` inside ``binary_cross_entropy`` (Stadyn's ``log``: NaN below 0,
    as before)."""
    return named(wrap(one_op(F.log(unwrap(x)), unwrap(x))), "", "Log")


@float_arrays("output", "target", "weight")
def weighted_binary_cross_entropy(output, target, weight, name: str = ""):
    """CNTK 2.7's weighted ``Logistic``: ``-N sum(w l) / sum(w)`` over the minibatch with
    ``l = log(2 t o + 1 - t - o)`` and ``N`` its samples, one number; the gradient that of
    ``-sum(w l)`` (:func:`stadyn.cntk_semantics.logistic`).  CNTK 2.7 takes one output value
    and one weight per sample: what else it builds is refused when it runs, in its words
    (:func:`_refuse_weights`).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> o, t, w = (C.input_variable(1, name=n) for n in "otw")
        >>> f = C.weighted_binary_cross_entropy(o, t, w)
        >>> ones = np.ones((2, 1), np.float32)
        >>> round(float(f.eval({o: ones / 4, t: ones, w: ones * 2})), 4)
        2.7726
    """
    if not isinstance(weight, GraphObject) and not isinstance(weight, Variable):
        weight = wrap(const(weight))    # (a number: CNTK 2.7's Constant)
    o, t, w = operand(output), operand(target), operand(weight)
    # N: the samples of the weight (or of the output, for a weight without the batch axis)
    counted, lead = (w, int(batched(weight))) if batched(weight) or not batched(output) \
        else (o, 1)
    per_sample = math.prod(counted.shape[lead:])
    ones = F.add_scalar(F.mul_scalar(F.stop_gradient(counted), 0.0), 1.0)
    out = S.logistic(o, t, w, F.mul_scalar(F.sum(ones), 1.0 / per_sample))
    if batched(output):
        from . import _graph as G
        G.BATCH.unmark(out)
    made = named(wrap(one_op(out, o, t, weight)), name, "Logistic")
    _refuse_weights(out, made, output, weight)
    return made


def _refuse_weights(out, made, output, weight) -> None:
    """What CNTK 2.7 builds as ``weighted_binary_cross_entropy`` but refuses when it runs, in
    its words (:func:`stadyn.cntk_semantics.logistic_weights_refused`), then what Stadyn
    sees."""
    def axes_and_size(x):       # (its dynamic axes, a sequence's two, and a sample's size)
        return lead_axes(x), math.prod(sample_shape(x))

    of_output, of_weight = axes_and_size(output), axes_and_size(weight)
    refused = S.logistic_weights_refused(of_output, of_weight, made.root_function.uid,
                                         weight.uid)
    if refused is None:
        return
    error, words = refused
    if not of_output[0]:
        why = "the output has no dynamic axes (CNTK 2.7 refuses a Logistic of such an output)"
    elif error is ShapeError:
        why = ("CNTK 2.7's Logistic takes one output value per sample, not "
               f"{sample_shape(output)}")
    elif of_output[1] != of_weight[1]:
        why = (f"a weight of shape {sample_shape(weight)} per sample for an output of "
               f"{sample_shape(output)}")
    elif of_weight[0]:
        why = ("the weight is on other dynamic axes than the output (CNTK 2.7 takes one "
               "weight per sample, on the output's axes)")
    else:
        why = ("the weight has no batch axis (a constant, a number?); CNTK 2.7 takes one "
               "weight per sample, an input as the output is")
    refuse_when_run(out, f"{words}\nweighted_binary_cross_entropy: {why}", error)


@float_arrays("output", "target")
def squared_error(output, target, name: str = ""):
    """``sum((output - target) ** 2)`` over each sample's axes: one number per sample (the two
    broadcast as CNTK broadcasts: sample axes aligned on the right, the batch axis apart)."""
    refuse_mixed_axes("Minus", (output, target), 1, "placeholder")
    dtype = operands_dtype(output, target, op="SquaredError", arrays=True)  # NumPy: float64
    a, b = same_dtype([operand(output, dtype), operand(target, dtype)], "SquaredError")
    se = F.squared_error(*broadcast_pair(a, b, batched(output), batched(target)))
    lead = max(lead_axes(output), lead_axes(target))
    made = named(wrap(one_op(F.sum(se, axis=list(range(lead, len(se.shape)))), output,
                             target)), name, "SquaredError")
    return _loss_block(made, name, (output, target), "ReduceElements")


def _loss_block(made, name: str, operands, root_op: str, one: bool = False):
    """``made`` (a loss computed by one Stadyn op) shown as the block CNTK 2.7 makes of it
    (Function.cpp, ``SquaredError``, ``CrossEntropyWithSoftmax``, ``ClassificationError``
    of top 1: ``AsBlock`` of their ops over placeholders): its output ``Block<n>_Output_0``,
    its root the block of the loss's kind, whose ``block_root`` is the op ``root_op``
    (``ReduceElements``, ``Minus``).  The writer of CNTK files writes the block by the
    loss's rule (``serialize.CNTK_ONE_OP_BLOCKS``).  ``one``: the block holds the scalar
    constant 1 (float32), listed first among its inputs (``ClassificationError``'s
    ``1 - TransposeTimes(labels, Hardmax(prediction))``)."""
    from . import _graph as G
    refuse_name(name, root_op)
    v = made.variable if isinstance(made, GraphObject) else None
    if v is None or v.parent is None or v in G.BLOCKS:
        return made
    kind = G.op_name_of(v)
    G.mark_outputs([v], kind, block=True)
    G.mark_block(v, kind, name, [operand(o) for o in operands], root_op)
    if one:
        show_constants(v, (scalar_constant(1.0, np.float32),))
    return made


@float_arrays("x", "y")
def cosine_distance(x, y, name: str = ""):
    """The cosine of the angle between ``x`` and ``y``, per sample (CNTK's ``cosine_distance``
    is the similarity ``x . y / (|x| |y|)``), computed as CNTK's CosDistanceNode: the dot
    product times each inverse norm, clamped at 1/1e-30 (a zero vector gives 0, not NaN:
    :func:`stadyn.cntk_semantics.cos_distance`)."""
    xy = binary(F.mul2, x, y)
    dot = F.sum(operand(xy), axis=sample_axes(xy))
    out = S.cos_distance_of(dot, S.inverse_norm(operand(x), sample_axes(x)),
                            S.inverse_norm(operand(y), sample_axes(y)))
    made = named(wrap(one_op(out, x, y)), name, "CosDistance")
    _refuse_unbatched_cosines(out, made, x, y)
    return made


def _refuse_unbatched_cosines(out, made, x, y) -> None:
    """What CNTK 2.7 builds as ``cosine_distance`` but refuses when it runs: one operand with
    the batch axis and one without (a constant), or two without where either holds more than
    one column (its matrix view of ``(2, 3)`` or ``(3, 1)`` is several; ``(3,)`` and ``(1, 3)``
    run; two of shapes that broadcast, ``(3,)`` and ``(2, 3)``, are its ValueError)."""
    if batched(x) and batched(y):
        return
    error = RuntimeError
    if batched(x) or batched(y):
        why = ("one operand has the batch axis and the other (a constant?) has none; CNTK "
               "2.7 takes both per sample")
        words = "SetDims: MBLayout must be set first, before calling this function."
    elif tuple(sample_shape(x)) != tuple(sample_shape(y)):
        why = (f"operands of shapes {tuple(sample_shape(x))} and {tuple(sample_shape(y))} "
               "without the batch axis: CNTK 2.7 broadcasts no constant here")
        words, error = "InnerProduct: Matrices a and b should have same dimension.", ValueError
    else:
        columns = [math.prod(sample_shape(v)[:-1]) for v in (x, y)]
        if max(columns) <= 1:
            return
        why = (f"operands of shapes {tuple(sample_shape(x))} and {tuple(sample_shape(y))} "
               "without the batch axis: CNTK 2.7 reads each as columns of its last axis, "
               "and gives one value only")
        words = "Resize: Cannot resize the matrix because it is a view."
    refuse_when_run(out, f"Node '{made.root_function.uid}' (CosDistance operation): {words}"
                    f"\ncosine_distance: {why}", error)


def fmeasure(output, target, beta: float = 1, name: str = ""):
    """``1 - F_beta`` of each sample's ``output`` (probabilities, counted softly) against its
    binary ``target``: ``1 - (1 + b^2) P R / (b^2 P + R)`` for the precision ``P = sum(o t) /
    sum(o)`` and recall ``R = sum(o t) / sum(t)``, summed over every static axis (of a 3-D
    ``output``, over axes 1 and 2: one value per class), built of CNTK's ops as CNTK 2.7's
    ``fmeasure`` builds it (cntk/losses/__init__.py:446-451), so its root is a ``Minus``.  The
    axes come from the shape ``output`` shows when called: a placeholder without a shape (a
    waiting call, a layer not applied) shows ``(-2,)``, of rank 1, so it is summed over every
    axis once bound; a placeholder of shape ``(2, 2, 3)``, per class.  ``output`` and
    ``target`` of shapes of other ranks are CNTK's ``AssertionError``.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> p = C.placeholder((2, 2, 3))
        >>> C.losses.fmeasure(p, C.input_variable((2, 2, 3))).shape
        (2, 1, 1)
        >>> C.losses.fmeasure(C.placeholder(), C.input_variable((2, 3)))
        Traceback (most recent call last):
          ...
        AssertionError: fmeasure: target of shape (2, 3) and output of shape (-2,) ...
    """
    from ._ops_reduce import reduce_sum
    from ._ops_math import element_divide, element_times, minus, plus
    shown = tuple(output.shape)         # (CNTK reads ``.shape``: a placeholder's is (-2,))
    if len(tuple(target.shape)) != len(shown):
        raise AssertionError(f"fmeasure: target of shape {tuple(target.shape)} and output of "
                             f"shape {shown} are of other ranks (CNTK 2.7 asserts "
                             "len(target.shape) == len(output.shape))")
    axis = (1, 2) if len(shown) == 3 else None
    correct = reduce_sum(element_times(output, target), axis=axis)
    precision = element_divide(correct, reduce_sum(output, axis=axis))
    recall = element_divide(correct, reduce_sum(target, axis=axis))
    b2 = float(beta) ** 2
    top = element_times(element_times(1.0 + b2, precision), recall)
    return minus(1.0, element_divide(top, plus(element_times(b2, precision), recall)),
                 name=name)


@float_arrays("x", "y")
def cosine_distance_with_negative_samples(x, y, shift: int, num_negative_samples: int,
                                          name: str = ""):
    """Per sample ``i`` of a minibatch of ``N``: the cosine similarity of ``x_i`` with ``y_i``,
    then with ``num_negative_samples`` other samples' ``y``: ``y_j`` for ``j = (i + shift + k)
    mod N``, ``k = 0, 1, ...`` (CNTK's order) -- shape ``(1 + num_negative_samples,)``.  Of
    sequences, the samples are the columns of CNTK 2.7's packed minibatch (sequences sharing
    parallel streams, step by step, a stream's gaps zero columns); the result keeps the
    sequence axis."""
    shift, count = int(shift), int(num_negative_samples)
    # CNTK 2.7 takes 0 for either (LinearAlgebraNodes.h:1790-1793: no negatives, or the
    # sample itself first); its unsigned arguments refuse a negative one
    if shift < 0 or count < 0:
        raise ValueError("cosine_distance_with_negative_samples: shift and "
                         "num_negative_samples must be integers of at least 0")
    if not (batched(x) and batched(y)) or tuple(sample_shape(x)) != tuple(sample_shape(y)):
        raise ValueError("cosine_distance_with_negative_samples: x and y need the batch axis "
                         f"and equal shapes, got {tuple(sample_shape(x))} and "
                         f"{tuple(sample_shape(y))}")
    out = S.cosine_with_negative_samples(operand(x), operand(y), shift, count, lead_axes(x))
    # (CNTK 2.7's one op reads x, y, then its shift and count as float32 scalar Constants:
    # its inputs and constants list them so, and its model file holds them so)
    one_op(out, operand(x), operand(y))
    show_constants(out, (scalar_constant(float(shift), np.float32),
                         scalar_constant(float(count), np.float32)), last=True)
    return named(wrap(out), name, "CosDistanceWithNegativeSamples")


# CNTK 2.7 refuses these when run on a sparse input (a tensor operation on sparse data) (the
# losses' labels may be sparse)
refuse_sparse_operands(globals(), ["cross_entropy_with_softmax", "classification_error",
                                  "squared_error", "binary_cross_entropy", "cosine_distance"],
                       {"cross_entropy_with_softmax": (0,), "classification_error": (0,)})

# CNTK 2.7 makes a block of these over placeholders too (Function.cpp's AsBlock): waiting,
# their output is Block<n>_Output_0 and their root a block (_printed.makes_block)
# (classification_error of top 1: of top N > 1, one primitive op; binary_cross_entropy a block
# as well, weighted_binary_cross_entropy not: its root CNTK's Logistic primitive)
squared_error.makes_block = cross_entropy_with_softmax.makes_block = True
binary_cross_entropy.makes_block = True
classification_error.makes_block = lambda *args, **kwargs: int(inspect.signature(
    classification_error).bind(*args, **kwargs).arguments.get("topN", 1)) == 1


def _topn_constant(top) -> tuple:
    """The constant N (float32) CNTK 2.7's top-N ``ClassificationError`` reads, its last
    input."""
    return (scalar_constant(float(top), np.float32),)


def _shown_while_waiting(args: tuple, kwargs: dict) -> tuple:
    """The constants CNTK 2.7's ``classification_error`` over a waiting operand lists among its
    inputs (first, last), as once built: top 1's block its 1 first, top N's op N last."""
    top = int(inspect.signature(classification_error).bind(*args, **kwargs).arguments.get(
        "topN", 1))
    if top == 1:
        return (scalar_constant(1.0, np.float32),), ()
    return (), _topn_constant(top)


classification_error.shown_constants = _shown_while_waiting


def _topn_checked(arguments: dict) -> None:
    """``classification_error``'s ``topN`` as CNTK 2.7 takes it, as it is called (of a
    waiting operand too; its ``axis`` checked before, ``takes_axes``): SWIG's refusals,
    ``topN=0`` (``False``) its ValueError; ``topN > 1`` along any axis but the default
    (-1, C++'s ``Axis(0)``) its RuntimeError (LogicError, Function.cpp:1870-1872)."""
    top = swig_count(arguments["topN"], "classification_error")
    if top == 0:   # (False: an int too)
        raise ValueError("ClassificationError: The topN argument must be > 0.")
    axis = _python_axis(arguments["axis"])
    if top > 1 and (axis is None or isinstance(axis, Axis) or int(axis) != -1):
        raise RuntimeError("ClassificationError: The topN feature is not supported along a "
                           f"specific axis.\n(topN={top} with axis={arguments['axis']!r}: "
                           "CNTK 2.7 takes topN along the default axis, -1, only)")


# ops on placeholders without a shape (or on layers) wait for their shapes
# (fmeasure is made of ops that wait, as CNTK 2.7's Python function is)
defer_module(globals(), [n for n in __all__ if n != "fmeasure"],
             as_called={"classification_error": _topn_checked})
