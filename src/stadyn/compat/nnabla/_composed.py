"""NNabla 1.39 functions that are compositions of catalog ops (so they need no op of their
own): ``broadcast_to``, ``reduce_mean``, ``reduce_sum``, ``logical_and_scalar``,
``logical_or_scalar``, ``logical_xor_scalar``, ``binary_error``,
``epsilon_insensitive_loss``, ``multi_head_attention``, ``tensor_normalization`` and the
deprecated ``reduce``.  And two catalog ops whose output NNabla shapes differently from
Stadyn's (which CNTK's layers and ONNX share): ``global_average_pooling`` (NNabla 1.39:
``(N, C, 1, 1)`` whatever the input's rank) and ``kl_multinomial`` (``p.shape[:base_axis] +
(1,)``), reshaped here where the two differ; ``sigmoid_cross_entropy``, whose target
NNabla reads as an integer label (the catalog op's ``integer_target=True``); and ``relu``,
NNabla 1.39's ``x > 0 ? x : 0`` (the catalog op's ``rule="nnabla"``: 0 for NaN); and
``scatter_nd``, whose ``out=`` NNabla writes in place (see there); and ``slice``, whose
``None`` entries NNabla's wrapper fills before the op (see there).  ``functions.py`` exports
them beside the catalog (these six in place of the catalog's).

Example:
    >>> import numpy as np, stadyn as sd
    >>> import stadyn.compat.nnabla.functions as F
    >>> with sd.auto_forward():
    ...     y = F.reduce_sum(sd.Variable.from_numpy_array(np.arange(6.0).reshape(2, 3)))
    >>> float(y.d)
    15.0
"""

import warnings

import numpy as np

from ... import functions as _F
from ...graph import Variable as _Variable
from ._bn_stats import with_stats_as_nodes
from ._function import named
from ._overwritable import check_overwritable, check_unbranched, write_in_place
from ._refusals import check_dropout_p

__all__ = ["broadcast_to", "reduce_mean", "reduce_sum", "logical_and_scalar",
           "logical_or_scalar", "logical_xor_scalar", "binary_error",
           "epsilon_insensitive_loss", "multi_head_attention", "tensor_normalization",
           "reduce", "global_average_pooling", "kl_multinomial", "sigmoid_cross_entropy",
           "relu", "scatter_nd", "slice", "clip_by_value"]


def broadcast_to(x, y, axis=None):
    """``y`` broadcast to the shape of ``x`` (NNabla's deprecated ``broadcast_to``; ``x`` gives
    only its shape): ``y``'s axes line up with ``x``'s from ``axis`` on (default: the trailing
    axes).  NNabla 1.39 has no backward for it; here ``y`` gets the summed gradient.

    Example:
        >>> import stadyn as sd
        >>> import stadyn.compat.nnabla.functions as F
        >>> F.broadcast_to(sd.Variable((4, 2, 3, 5)), sd.Variable((2, 3)), axis=1).shape
        (4, 2, 3, 5)
    """
    target, part = tuple(x.shape), tuple(y.shape)
    start = len(target) - len(part) if axis is None or axis < 0 else int(axis)
    if start < 0 or target[start:start + len(part)] != part:
        raise ValueError(f"broadcast_to: y {part} does not fit x {target} at axis {start} (y's "
                         "shape must equal x's from that axis on)")
    fitted = (1,) * start + part + (1,) * (len(target) - start - len(part))
    return named(_F.broadcast(_F.reshape(y, fitted), target), "BroadcastTo")


def reduce_mean(x):
    """The mean of all of ``x``'s elements, a scalar (NNabla's ``reduce_mean``, ``F.mean(x)``).

    Example:
        >>> import numpy as np, stadyn as sd
        >>> import stadyn.compat.nnabla.functions as F
        >>> with sd.auto_forward():
        ...     y = F.reduce_mean(sd.Variable.from_numpy_array(np.arange(4.0)))
        >>> float(y.d)
        1.5
    """
    return named(_F.mean(x, rule="nnabla_reduce"), "ReduceMean")


def reduce_sum(x):
    """The sum of all of ``x``'s elements, a scalar (NNabla's ``reduce_sum``, ``F.sum(x)``).

    Example:
        >>> import numpy as np, stadyn as sd
        >>> import stadyn.compat.nnabla.functions as F
        >>> with sd.auto_forward():
        ...     y = F.reduce_sum(sd.Variable.from_numpy_array(np.arange(4.0)))
        >>> float(y.d)
        6.0
    """
    return named(_F.sum(x, rule="nnabla"), "ReduceSum")


def _truth(x):
    return _F.not_equal_scalar(x, 0.0)


def logical_and_scalar(x0, val):
    """``x0 != 0 and bool(val)`` element-wise, as 0/1 (NNabla's ``logical_and_scalar``).

    Example:
        >>> import numpy as np, stadyn as sd
        >>> import stadyn.compat.nnabla.functions as F
        >>> with sd.auto_forward():
        ...     y = F.logical_and_scalar(sd.Variable.from_numpy_array(np.array([0.0, 2.0])), True)
        >>> y.d.tolist()
        [0.0, 1.0]
    """
    truth = _truth(x0)
    return named(truth if val else _F.mul_scalar(truth, 0.0), "LogicalAndScalar")


def logical_or_scalar(x0, val):
    """``x0 != 0 or bool(val)`` element-wise, as 0/1 (NNabla's ``logical_or_scalar``).

    Example:
        >>> import numpy as np, stadyn as sd
        >>> import stadyn.compat.nnabla.functions as F
        >>> with sd.auto_forward():
        ...     y = F.logical_or_scalar(sd.Variable.from_numpy_array(np.array([0.0, 2.0])), True)
        >>> y.d.tolist()
        [1.0, 1.0]
    """
    truth = _truth(x0)
    return named(_F.add_scalar(_F.mul_scalar(truth, 0.0), 1.0) if val else truth,
                 "LogicalOrScalar")


def logical_xor_scalar(x0, val):
    """``(x0 != 0) != bool(val)`` element-wise, as 0/1 (NNabla's ``logical_xor_scalar``).

    Example:
        >>> import numpy as np, stadyn as sd
        >>> import stadyn.compat.nnabla.functions as F
        >>> with sd.auto_forward():
        ...     y = F.logical_xor_scalar(sd.Variable.from_numpy_array(np.array([0.0, 2.0])), 1)
        >>> y.d.tolist()
        [1.0, 0.0]
    """
    return named(_F.equal_scalar(x0, 0.0) if val else _truth(x0), "LogicalXorScalar")


def binary_error(x, target):
    """1 where ``x`` and ``target``, each thresholded at 0.5 (``>= 0.5`` is 1), differ, else 0
    (NNabla's ``binary_error``); no gradient flows through the thresholds.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> import stadyn.compat.nnabla.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([0.2, 0.6, 0.9]))
        >>> t = sd.Variable.from_numpy_array(np.array([0.0, 0.0, 1.0]))
        >>> with sd.auto_forward():
        ...     y = F.binary_error(x, t)
        >>> y.d.tolist()
        [0.0, 1.0, 0.0]
    """
    return named(_F.not_equal(_F.greater_equal_scalar(x, 0.5),
                              _F.greater_equal_scalar(target, 0.5)), "BinaryError")


def epsilon_insensitive_loss(x0, x1, epsilon):
    """``max(|x0 - x1| - epsilon, 0)`` element-wise (NNabla's ``epsilon_insensitive_loss``).

    Example:
        >>> import numpy as np, stadyn as sd
        >>> import stadyn.compat.nnabla.functions as F
        >>> a = sd.Variable.from_numpy_array(np.array([0.25, 1.0]))
        >>> b = sd.Variable.from_numpy_array(np.array([0.0, 0.0]))
        >>> with sd.auto_forward():
        ...     y = F.epsilon_insensitive_loss(a, b, 0.5)
        >>> y.d.tolist()
        [0.0, 0.5]
    """
    return named(_F.maximum_scalar(_F.add_scalar(_F.abs(_F.sub2(x0, x1)), -float(epsilon)), 0.0),
                 "EpsilonInsensitiveLoss")


def multi_head_attention(query, key, value, num_heads, q_weight, k_weight, v_weight, out_weight,
                         q_bias=None, k_bias=None, v_bias=None, out_bias=None, attn_bias_k=None,
                         attn_bias_v=None, dropout=0.0, additive_mask=None,
                         key_padding_mask=None):
    """Multi-head attention over sequence-first arrays (NNabla's ``multi_head_attention``).

    ``query`` is ``(L_T, B, D_q)``, ``key`` and ``value`` ``(L_S, B, D_k)`` and ``(L_S, B, D_v)``;
    the weights are ``(D_q, E)``, ``(D_k, E)``, ``(D_v, E_v)`` and ``(E_v, E_out)``, the biases
    their columns.  ``attn_bias_k``/``attn_bias_v`` (``E``/``E_v`` elements) append one learnt
    key/value position.  ``additive_mask`` ``(L_T, L_S)`` is added to the scores;
    ``key_padding_mask`` ``(B, L_S)`` is 1 where a key is padding (its score becomes ``-inf``).
    ``dropout`` applies to the attention weights.  Returns the output ``(L_T, B, E_out)`` and the
    attention weights ``(B * num_heads, L_T, L_S)``.

    Example:
        >>> import stadyn as sd
        >>> import stadyn.compat.nnabla.functions as F
        >>> q, kv = sd.Variable((3, 2, 4)), sd.Variable((5, 2, 4))
        >>> w = [sd.Variable((4, 4)) for _ in range(4)]
        >>> y, a = F.multi_head_attention(q, kv, kv, 2, *w)
        >>> y.shape, a.shape
        ((3, 2, 4), (4, 3, 5))
    """
    tgt_len, batch, _ = query.shape
    src_len = key.shape[0]
    embed, k_embed = q_weight.shape[1], k_weight.shape[1]
    v_embed = v_weight.shape[1]
    heads = int(num_heads)
    if value.shape[0] != src_len or key.shape[1] != batch or value.shape[1] != batch:
        raise ValueError(f"multi_head_attention: key {tuple(key.shape)} and value "
                         f"{tuple(value.shape)} must be (L_S, B, D) with the query's B {batch} "
                         "and the same L_S")
    if embed != k_embed:
        raise ValueError(f"multi_head_attention: the query's and the key's embedding dimensions "
                         f"differ ({embed} and {k_embed})")
    if heads <= 0 or embed % heads or v_embed % heads:
        raise ValueError(f"multi_head_attention: the embedding dimensions {embed} and {v_embed} "
                         f"must be divisible by num_heads {num_heads}")
    head_dim, head_vdim = embed // heads, v_embed // heads
    if key_padding_mask is not None and tuple(key_padding_mask.shape) != (batch, src_len):
        raise ValueError(f"multi_head_attention: key_padding_mask {tuple(key_padding_mask.shape)}"
                         f" must be (B, L_S) = {(batch, src_len)}")
    q = _F.affine(query, q_weight, q_bias, base_axis=2)
    k = _F.affine(key, k_weight, k_bias, base_axis=2)
    v = _F.affine(value, v_weight, v_bias, base_axis=2)
    q = _F.mul_scalar(q, float(head_dim) ** -0.5)
    if attn_bias_k is not None:
        src_len += 1
        k = _F.concatenate(k, _F.broadcast(_F.reshape(attn_bias_k, (1, 1, k_embed)),
                                           (1, batch, k_embed)), axis=0)
        v = _F.concatenate(v, _F.broadcast(_F.reshape(attn_bias_v, (1, 1, v_embed)),
                                           (1, batch, v_embed)), axis=0)
        if additive_mask is not None:
            additive_mask = _F.pad(additive_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = _F.pad(key_padding_mask, (0, 1))
    q = _F.transpose(_F.reshape(q, (tgt_len, batch * heads, head_dim)), (1, 0, 2))
    k = _F.transpose(_F.reshape(k, (src_len, batch * heads, head_dim)), (1, 0, 2))
    v = _F.transpose(_F.reshape(v, (src_len, batch * heads, head_vdim)), (1, 0, 2))
    scores = _F.batch_matmul(q, k, transpose_b=True)  # (B*H, L_T, L_S)
    if additive_mask is not None:
        scores = _F.add2(scores, _F.reshape(additive_mask, (1,) + tuple(additive_mask.shape)))
    if key_padding_mask is not None:
        shape4 = (batch, heads, tgt_len, src_len)
        scores = _F.where(_F.broadcast(_F.reshape(key_padding_mask, (batch, 1, 1, src_len)),
                                       shape4),
                          _F.constant(float("-inf"), shape4), _F.reshape(scores, shape4))
        scores = _F.reshape(scores, (batch * heads, tgt_len, src_len))
    weights = _F.softmax(scores, axis=2)
    if dropout > 0:
        check_dropout_p(dropout)        # (NNabla's F.dropout is set up at the call)
        weights = _F.dropout(weights, p=dropout)
    out = _F.batch_matmul(weights, v)  # (B*H, L_T, head_vdim)
    out = _F.reshape(_F.transpose(out, (1, 0, 2)), (tgt_len, batch, v_embed))
    return _F.affine(out, out_weight, out_bias, base_axis=2), weights


#: ``F.batch_normalization`` with NNabla's statistics nodes, built once for
#: :func:`tensor_normalization`
_BATCH_NORMALIZATION = with_stats_as_nodes("batch_normalization", _F.batch_normalization)


def tensor_normalization(x, axes, beta=None, gamma=None, eps=1e-05, output_stat=False):
    """``x`` normalised by its own mean and (biased) variance over every axis but ``axes``,
    then ``* gamma + beta`` where given (NNabla's ``tensor_normalization``, which is its batch
    normalisation with batch statistics and no running ones, as here).  ``output_stat`` also
    returns the mean and variance (differentiable), of ``x``'s size on ``axes`` and 1
    elsewhere.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> import stadyn.compat.nnabla.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([[1.0, 3.0], [5.0, 11.0]]))
        >>> with sd.auto_forward():
        ...     y, mean, var = F.tensor_normalization(x, 0, output_stat=True)
        >>> np.round(y.d, 3).tolist(), mean.d.ravel().tolist(), var.d.ravel().tolist()
        ([[-1.0, 1.0], [-1.0, 1.0]], [2.0, 8.0], [1.0, 9.0])
    """
    axes = [axes] if isinstance(axes, int) else list(axes)
    return _BATCH_NORMALIZATION(
        x, beta, gamma, None, None, axes=axes, decay_rate=0.0, eps=eps, batch_stat=True,
        output_stat=output_stat, rule="nnabla")


def reduce(x, op="sum"):
    """The sum (``op="sum"``) or mean (``"mean"``) of all of ``x``'s elements, a scalar
    (NNabla's deprecated ``reduce``: it warns with a ``DeprecationWarning``, as NNabla does).

    Example:
        >>> import numpy as np, warnings, stadyn as sd
        >>> import stadyn.compat.nnabla.functions as F
        >>> with sd.auto_forward(), warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", DeprecationWarning)
        ...     y = F.reduce(sd.Variable.from_numpy_array(np.arange(4.0)), "mean")
        >>> float(y.d)
        1.5
    """
    warnings.warn("Deprecated API. Use ``sum`` or ``mean`` instead.", DeprecationWarning,
                  stacklevel=3)               # the caller of functions.py's NdArray wrapper
    if op == "sum":
        return reduce_sum(x)
    if op == "mean":
        return reduce_mean(x)
    raise ValueError(f"reduce: op must be 'sum' or 'mean', got {op!r}")


def relu(x, inplace=False):
    """``x > 0 ? x : 0``, NNabla 1.39's ReLU: 0 for NaN (and for -inf), no gradient there.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> import stadyn.compat.nnabla.functions as F
        >>> with sd.auto_forward():
        ...     y = F.relu(sd.Variable.from_numpy_array(np.array([-1.0, np.nan, 2.0])))
        >>> y.d.tolist()
        [0.0, 0.0, 2.0]
    """
    return _F.relu(x, inplace, rule="nnabla")


def global_average_pooling(x):
    """The mean over the axes from 2 on, shaped ``(N, C, 1, 1)`` as NNabla 1.39 does for any
    input rank (an ``(N, C)`` input too; a 5-d one loses an axis).

    Example:
        >>> import stadyn as sd
        >>> import stadyn.compat.nnabla.functions as F
        >>> F.global_average_pooling(sd.Variable((2, 3, 4, 5, 6))).shape
        (2, 3, 1, 1)
    """
    y = _F.global_average_pooling(x)
    if y.ndim == 4:
        return y
    return named(_F.reshape(y, tuple(x.shape[:2]) + (1, 1)), "GlobalAveragePooling")


def kl_multinomial(p, q, base_axis=1):
    """The Kullback-Leibler divergence summed over the axes from ``base_axis`` on, shaped
    ``p.shape[:base_axis] + (1,)`` as NNabla 1.39 does (one size-1 axis for them all).

    Example:
        >>> import stadyn as sd
        >>> import stadyn.compat.nnabla.functions as F
        >>> F.kl_multinomial(sd.Variable((2, 3, 4)), sd.Variable((2, 3, 4))).shape
        (2, 1)
    """
    y = _F.kl_multinomial(p, q, base_axis=base_axis)
    shape = tuple(p.shape[:base_axis % p.ndim]) + (1,)
    if tuple(y.shape) == shape:
        return y
    return named(_F.reshape(y, shape), "KLMultinomial")


def sigmoid_cross_entropy(x, target):
    """Element-wise ``-(t log s(x) + (1 - t) log(1 - s(x)))`` for logits ``x``, with ``t`` the
    target read as NNabla 1.39 reads it: an integer label, a fractional value truncated toward
    zero (0.7 is 0, 1.7 is 1; NNabla's ``sigmoid_cross_entropy.cpp`` takes the label array as
    ``int``), and no gradient to it (NNabla raises "Label can not be propagated down" at the
    backward when the target needs one; here it gets none).

    Example:
        >>> import numpy as np, stadyn as sd
        >>> import stadyn.compat.nnabla.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([0.5, -1.0], np.float32))
        >>> t = sd.Variable.from_numpy_array(np.array([0.7, 1.0], np.float32))
        >>> with sd.auto_forward():
        ...     y = F.sigmoid_cross_entropy(x, t)
        >>> [round(float(v), 4) for v in y.d]   # 0.7 is the label 0
        [0.9741, 1.3133]
    """
    return _F.sigmoid_cross_entropy(x, target, integer_target=True)


def scatter_nd(data, indices, shape=None, out=None, add=False):
    """NNabla's ``F.scatter_nd`` (its argument order: ``out`` before ``add``): the catalog op,
    and with ``out=x`` NNabla 1.39's in-place form: ``x`` gets no gradient through the result
    (NNabla's backward leaves ``x.g`` as it was, measured: case
    ``nnabla_fidelity_10.scatter_nd__out_in_place``), and the result holds ``x``'s array, as
    NNabla's, ``x`` a leaf or computed, static or dynamic: ``x.d`` shows the result, each
    forward writes it there again, ``y.d = ...`` writes ``x`` and ``x.d = ...`` is what ``y``
    reads (cases ``nnabla_fidelity_15.scatter_nd__out_shares_x``,
    ``nnabla_fidelity_18.scatter_nd__out_computed_shares``), an ``x`` viewing another
    Variable's array (``v.reshape(shape, unlink=True)``, ``v.get_unlinked_variable()``)
    included: ``v`` then holds it too (case
    ``nnabla_fidelity_19.scatter_nd__out_view_shares``).  As NNabla's,
    an ``x`` computed by a function whose backward reads its output (``F.exp``, ``F.relu``)
    from an input that needs a gradient is refused, and so is an ``x`` another function reads
    (at the call, or at a forward when that function was made after it: ``_overwritable.py``).

    Example:
        >>> import numpy as np, stadyn as sd
        >>> import stadyn.compat.nnabla.functions as F
        >>> x = sd.Variable.from_numpy_array(np.zeros(3))
        >>> with sd.auto_forward():
        ...     y = F.scatter_nd(sd.Variable.from_numpy_array([9.0]), [[1]], out=x)
        >>> y.d.tolist(), x.d.tolist()
        ([0.0, 9.0, 0.0], [0.0, 9.0, 0.0])
    """
    if out is None:
        return _F.scatter_nd(data, indices, shape=shape, add=add)
    if shape is not None:
        raise TypeError("Only one of `shape` or `out` argument may be used.")
    check_overwritable(out, "scatter_nd")   # NNabla's in-place checks (_overwritable.py)
    check_unbranched(out, "scatter_nd")
    y = _F.scatter_nd(data, indices, out=_F.stop_gradient(out), add=add)
    if isinstance(out, _Variable):
        write_in_place(y, out)              # one array, as NNabla's (a view's Variables too)
    return y


def slice(x, start=None, stop=None, step=None):  # noqa: A001 - NNabla's name
    """The catalog's ``slice`` with ``None`` entries filled as NNabla 1.39's Python wrapper fills
    them before its C++ function runs (``python/src/nnabla/functions.py``, ``slice``): a
    ``None`` start is 0 (-1 for a negative step), a ``None`` step 1, and a ``None`` stop the
    size of axis ``i``, ``i`` the entry's index (``-x.shape[i] - 1`` for a negative step),
    counted from the first axis even where fewer entries than axes slice the trailing ones
    (case ``nnabla_functions_rare.slice__none_stop_fewer_entries``); an omitted list is one
    entry per axis, and lists of different lengths are refused, as NNabla's C++ setup
    refuses them (a ``RuntimeError``; case ``nnabla_fidelity_25.slice__entries_filled``).

    Example:
        >>> import numpy as np, stadyn as sd
        >>> import stadyn.compat.nnabla.functions as F
        >>> x = sd.Variable.from_numpy_array(np.arange(10.0).reshape(2, 5))
        >>> with sd.auto_forward():
        ...     y = F.slice(x, (-1,), (None,), (-1,))   # stop -x.shape[0] - 1 = -3
        >>> y.d.tolist()
        [[4.0, 3.0], [9.0, 8.0]]
    """
    start = list(start) if start is not None else [0] * x.ndim
    stop = list(stop) if stop is not None else list(x.shape)
    step = list(step) if step is not None else [1] * x.ndim
    for i, (s0, s1, s2) in enumerate(zip(start, stop, step)):
        backwards = s2 is not None and s2 < 0
        if s0 is None:
            start[i] = -1 if backwards else 0
        if s1 is None:
            stop[i] = -x.shape[i] - 1 if backwards else x.shape[i]
        if s2 is None:
            step[i] = 1
    if not len(start) == len(stop) == len(step):
        # (NNabla 1.39's C++ setup refuses it: ``RuntimeError: value error in setup_impl``)
        raise RuntimeError(f"slice: start {start}, stop {stop} and step {step} (the omitted "
                           f"ones filled for every axis of x's shape {tuple(x.shape)}) need "
                           "as many entries each, as NNabla's")
    return _F.slice(x, start, stop, step)


def clip_by_value(x, min, max):  # noqa: A002 - NNabla's names
    """NNabla 1.39's ``minimum(maximum(x, min), max)`` (``python/src/nnabla/functions.py``):
    ``MaximumScalar`` or ``Maximum2`` then ``MinimumScalar`` or ``Minimum2``, by whether each
    bound is a number or a Variable / NdArray; anything else is its ``TypeError``.  Where
    ``min > max`` the result is ``max`` (the catalog's one-op clip gave ``min`` where ``x``
    was at or below it: NNabla's own test draws both bounds from ``randn``).

    Example:
        >>> import numpy as np, stadyn as sd
        >>> import stadyn.compat.nnabla.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([-5.0, 0.5, 5.0]))
        >>> with sd.auto_forward():
        ...     y = F.clip_by_value(x, 2.0, 1.0)          # min > max: max everywhere
        ...     z = F.clip_by_value(x, -1.0, 1.0)
        >>> y.d.tolist(), z.d.tolist(), z.parent.name
        ([1.0, 1.0, 1.0], [-1.0, 0.5, 1.0], 'MinimumScalar')
    """
    for name, bound in (("min", min), ("max", max)):
        if not (np.isscalar(bound) or isinstance(bound, _Variable)):
            raise TypeError(f"clip_by_value: {name} must be Variable, NdArray, or scalar "
                            f"(NNabla 1.39's TypeError), got {type(bound).__name__}")
    y = _F.maximum_scalar(x, min) if np.isscalar(min) else _F.maximum2(x, min)
    return _F.minimum_scalar(y, max) if np.isscalar(max) else _F.minimum2(y, max)
