"""What NNabla 1.39 refuses that Stadyn's catalog ops would compute: the checks NNabla's
functions make when they are set up (at the call, in both modes), made here before the
catalog op is called, with NNabla's error type (``RuntimeError``; :class:`NNablaRefusal` is
also a ``ValueError``, as Stadyn's shape errors are) and a message naming the function, the
inputs and the user's line.

* the binary functions (``add2``, ``mul2``, ``maximum2``, ``equal``, ``squared_error``, ...;
  NNabla's ``BaseTransformBinary``) broadcast only between inputs of the same rank: a
  ``(2,)`` and a ``(2, 2)`` are refused (``Dimensions of inputs must match``), where
  NumPy's rule would line them up from the right;
* ``concatenate`` needs at least two inputs, ``split`` at least two outputs (an axis of
  size 1 is refused: NNabla's ``Function::setup`` checks ``min_inputs`` / ``min_outputs``);
* ``unique`` needs the dynamic mode (``nn.set_auto_forward(True)``): its output shape is
  known only once it has run;
* the reductions over several axes (``sum``, ``mean``, ``max``, ``min``, ``prod``, ``norm``,
  ``norm_normalization``) refuse an axis given twice (``(0, 0)``, ``(2, -1)`` of a 3-D
  input); ``prod`` alone would compute.  (A tuple mixing negative and non-negative axes,
  ``(0, -1)``, fails in NNabla 1.39 through a bug of its own, its Python wrapper sorting the
  axes before its C++ counts the negative ones from the end: Stadyn reduces over the axes
  meant, docs/nnabla-names.md.)
* ``norm`` and ``norm_normalization`` need ``p >= 1`` (``Norm::setup_impl``);
* ``bit_shift`` shifts unsigned integers only (uint8, uint16, uint32, uint64):
  ``BitShift::forward_impl`` refuses int32, int8, float32, ... (a ``type error``);
* ``deconvolution`` refuses an output of size 0 or less on a spatial axis
  (``Deconvolution::setup_impl``: ``size_i > 0``), which Stadyn would compute, empty;
* ``fused_batch_normalization`` implements ``nonlinearity='relu'`` only (another is refused
  at the call, where Stadyn's op would refuse it at the run), and over several axes computes
  only with ``z`` and ``output_stat=True`` (:func:`check_fused_batch_normalization`, which
  ``PF.fused_batch_normalization`` calls too); ``fused_convolution`` refuses
  a bias with batch normalisation, an activation it does not implement (``swish``) and
  ``leaky_relu`` / ``elu`` without their one ``nonlinearity_args`` value; ``batch_normalization``
  and ``fused_batch_normalization`` refuse ``batch_stat=False`` without both running
  statistics, and ``batch_stat=True`` with a running statistic that is a function's output
  (a plain ``ValueError`` from NNabla's Python wrapper, :func:`check_running_stats`, where
  Stadyn's op would fail inside or update a copy); ``top_k_data`` with
  ``with_index=True`` needs ``reduce=True`` (``TopKData::setup_impl``); ``one_hot`` needs as
  many class counts in ``shape`` as ``x``'s last axis has entries (``OneHot::setup_impl``:
  ``(4, 2)`` with ``(10,)`` is refused where Stadyn's op read the first column alone);
* ``dropout`` takes NNabla's arguments ``x, p, seed`` only: Stadyn's ``output_mask`` and
  ``train_only`` are NNabla 1.39's ``TypeError`` (``dropout() got an unexpected keyword
  argument``); its ``p`` must be in ``[0, 1)`` (``Dropout::setup_impl``, dropout.cpp:32:
  ``p = 2.0`` or ``-0.5`` is refused where Stadyn's op would scale by ``1 / (1 - p)``), also
  inside ``F.multi_head_attention`` and the attention layers of ``PF``, which drop out when
  their ``dropout`` is above 0 (:func:`check_dropout_p`); ``F.dropout``'s fourth argument is
  NNabla's ``n_outputs`` (``functions.py``);
* ``clip_grad_by_value`` takes ``min`` and ``max`` as Variables: a number or a NumPy array
  there is NNabla's ``AssertionError`` (``All inputs must be Variable``); ``einsum`` needs
  ``equation=`` by keyword (NNabla's wrapper reads ``kw['equation']``: its ``KeyError``), not
  empty (a ``RuntimeError``);
* ``rnn``, ``lstm`` and ``gru`` check the shapes of their inputs as NNabla's ``setup_impl``
  does, and tell a lone ``weight`` or ``bias`` by its rank (``_rnn_refusals.py``).

The Python operators of ``nn.Variable`` (``x + y``, ``x * y``, ...) go through the same
binary check (``_variable.py``).

Example:
    >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
    >>> F.add2(nn.Variable((2,)), nn.Variable((2, 2)))
    Traceback (most recent call last):
    ...
    stadyn.compat.nnabla._refusals.NNablaRefusal: add2: NNabla 1.39 ...
"""

from __future__ import annotations

import functools
import inspect
import numbers
from typing import Any, Callable

import numpy as np

from ..._errors import ShapeError
from ...graph import format_location, get_auto_forward, user_location
from ._rnn_refusals import RECURRENT, recurrent_problem

__all__ = ["NNablaRefusal", "BINARY", "check_binary", "check_fused_batch_normalization",
           "check_running_stats",
           "refusing_what_nnabla_refuses", "check_dropout_p"]

# NNabla 1.39's functions on BaseTransformBinary (include/nbla/function/*.hpp: the
# NBLA_DEFINE_TRANSFORM_BINARY* declarations, and add2.hpp)
BINARY = ("add2", "bc_add2", "sub2", "mul2", "div2", "pow2", "maximum2", "minimum2", "mod2",
          "atan2", "equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
          "logical_and", "logical_or", "logical_xor", "absolute_error", "squared_error",
          "huber_loss", "epsilon_insensitive_loss")


class NNablaRefusal(ShapeError, RuntimeError):
    """A call NNabla 1.39 refuses (a ``RuntimeError`` there): see the module docstring."""


def _refuse(name: str, why: str) -> NNablaRefusal:
    line = format_location(user_location())
    return NNablaRefusal(f"{name}: NNabla 1.39 refuses this call: {why}"
                         + (f" (called at {line})" if line else ""))


def _shape(v: Any) -> tuple | None:
    shape = getattr(v, "shape", None)
    return None if shape is None else tuple(int(s) for s in shape)


def check_binary(name: str, x0: Any, x1: Any) -> None:
    """Refuse inputs of NNabla's binary function ``name`` that NNabla 1.39 refuses: ranks that
    differ, or sizes that differ where neither is 1.

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> check_binary("mul2", nn.Variable((4, 3)), nn.Variable((1, 3)))  # fine
        >>> check_binary("mul2", nn.Variable((4, 3)), nn.Variable((3,)))
        Traceback (most recent call last):
        ...
        stadyn.compat.nnabla._refusals.NNablaRefusal: mul2: NNabla 1.39 refuses this call: ...
    """
    s0, s1 = _shape(x0), _shape(x1)
    if s0 is None or s1 is None:
        return
    if len(s0) != len(s1):
        raise _refuse(name, f"its inputs must have the same number of dimensions, got "
                            f"inputs[0] {s0} ({len(s0)}-D) and inputs[1] {s1} ({len(s1)}-D); "
                            f"reshape one (F.reshape) so that the ranks match")
    for i, (a, b) in enumerate(zip(s0, s1)):
        if a != b and min(a, b) != 1:
            raise _refuse(name, f"inputs[0] {s0} and inputs[1] {s1} differ in axis {i} "
                                f"where neither size is 1 (no broadcast)")


def _check_concatenate(*x, axis=None, **_):
    if len(x) == 1 and isinstance(x[0], (list, tuple)):
        x = tuple(x[0])
    if len(x) < 2:
        raise _refuse("concatenate", f"it needs at least 2 inputs, given {len(x)}")


def _check_split(x, axis=0, **_):
    shape = _shape(x)
    if shape is None or not isinstance(axis, int) or not -len(shape) <= axis < len(shape):
        return                          # the op's own checks name the problem
    if shape[axis] < 2:
        raise _refuse("split", f"it needs at least 2 outputs, and axis {axis} of the input "
                               f"{shape} has size {shape[axis]}")


def _check_unique(*_, **__):
    if not get_auto_forward():
        raise _refuse("unique", "it can be used only in the dynamic mode "
                                "(nn.set_auto_forward(True) or `with nn.auto_forward():`): "
                                "its output's shape is known only once it has run")


def _axes_checker(name: str, arg: str, position: int = 1) -> Callable:
    def check(*args, **kwargs):
        x = args[0] if args else kwargs.get("x")
        axes = args[position] if len(args) > position else kwargs.get(arg)
        shape = _shape(x)
        if shape is None or axes is None or not hasattr(axes, "__iter__"):
            return
        try:
            given = [int(a) for a in axes]
        except (TypeError, ValueError):
            return                      # the op's own checks name the problem
        ndim = len(shape)
        if any(not -ndim <= a < ndim for a in given):
            return
        counted = [a + ndim if a < 0 else a for a in given]
        if len(set(counted)) < len(counted):
            raise _refuse(name, f"{arg}={tuple(given)} of a {ndim}-D input names an axis "
                                f"twice (Transpose: axes duplicated)")
    return check


def _check_norm_p(name: str, position: int) -> Callable:
    axes_check = _axes_checker(name, "axes" if name == "norm_normalization" else "axis", 2)

    def check(*args, **kwargs):
        p = args[position] if len(args) > position else kwargs.get("p")
        if p is not None and not float(p) >= 1:
            raise _refuse(name, f"`p` must be greater than or equal to 1, got p={p}")
        axes_check(*args, **kwargs)
    return check


def _check_bit_shift(x=None, *_, **__):
    dtype = getattr(x, "dtype", None)
    name = str(dtype).replace("torch.", "")       # a NumPy dtype, or torch's uint16 ...
    if dtype is not None and not name.startswith("uint"):
        raise _refuse("bit_shift", f"it shifts unsigned integers only (uint8, uint16, uint32, "
                                   f"uint64), inputs[0] is {name}")


def _check_deconvolution(x=None, weight=None, bias=None, base_axis=1, pad=None, stride=None,
                         dilation=None, group=1, channel_last=False, output_padding=None,
                         *_, **__):
    xs, ws = _shape(x), _shape(weight)
    if xs is None or ws is None or channel_last or len(ws) < 3:
        return                          # the op's own checks name the problem
    spatial = len(ws) - 2
    first = int(base_axis) + 1
    if first + spatial != len(xs):
        return
    try:
        stride, dilation, pads, output_padding = (
            [default] * spatial if v is None else [int(e) for e in v]
            for v, default in ((stride, 1), (dilation, 1), (pad, 0), (output_padding, 0)))
    except (TypeError, ValueError):
        return
    if any(len(v) != spatial for v in (stride, dilation, pads, output_padding)):
        return
    for i in range(spatial):
        size = (stride[i] * (xs[first + i] - 1) + dilation[i] * (ws[2 + i] - 1) + 1
                - 2 * pads[i] + output_padding[i])
        if size <= 0:
            raise _refuse("deconvolution", f"its output would have size {size} on spatial axis "
                                           f"{i} (input {xs[first + i]}, kernel {ws[2 + i]}, "
                                           f"pad {pads[i]}, stride {stride[i]}, dilation "
                                           f"{dilation[i]}): NNabla checks size > 0")


def check_running_stats(name: str, mean: Any, variance: Any, batch_stat: Any) -> None:
    """Refuse the running statistics NNabla 1.39's ``batch_normalization`` and
    ``fused_batch_normalization`` refuse before building anything
    (``python/src/nnabla/normalization_functions.py``, both wrappers): ``batch_stat=False``
    with ``mean`` or ``variance`` None (there is nothing to normalise by), ``batch_stat=True``
    with either one the output of a function (the running update would write into a computed
    value), each a ``ValueError``.

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> check_running_stats("batch_normalization", None, None, True)  # batch statistics
        >>> check_running_stats("batch_normalization", nn.Variable((1, 3)), None, False)
        Traceback (most recent call last):
        ...
        ValueError: batch_normalization: If batch_stat is False, mean and variance must not ...
    """
    if not batch_stat and (mean is None or variance is None):
        raise ValueError(f"{name}: If batch_stat is False, mean and variance must not be None "
                         f"(NNabla 1.39; called at {format_location(user_location())})")
    if batch_stat and any(getattr(v, "parent", None) is not None for v in (mean, variance)):
        raise ValueError(f"{name}: if batch_stat is True, mean and variance must not have a "
                         "parent function (NNabla 1.39 updates them in place; called at "
                         f"{format_location(user_location())})")


def _check_batch_normalization(x=None, beta=None, gamma=None, mean=None, variance=None,
                               axes=(1,), decay_rate=0.9, eps=1e-05, batch_stat=True,
                               *_, **__) -> None:
    check_running_stats("batch_normalization", mean, variance, batch_stat)


def _check_fused_running_stats(x=None, beta=None, gamma=None, mean=None, variance=None,
                               z=None, axes=(1,), decay_rate=0.9, eps=1e-05, batch_stat=True,
                               *args, **kwargs) -> None:
    # F's call only: PF makes its statistics (check_fused_batch_normalization is PF's too)
    check_running_stats("fused_batch_normalization", mean, variance, batch_stat)
    check_fused_batch_normalization(x, beta, gamma, mean, variance, z, axes, decay_rate, eps,
                                    batch_stat, *args, **kwargs)


def check_fused_batch_normalization(x=None, beta=None, gamma=None, mean=None, variance=None,
                                    z=None, axes=(1,), decay_rate=0.9, eps=1e-05,
                                    batch_stat=True, nonlinearity="relu", output_stat=False,
                                    *_, **__) -> None:
    """Refuse a ``fused_batch_normalization`` (``F``'s arguments; ``PF``'s too, whose
    parameters are made as ``axes`` asks) that NNabla 1.39 refuses: ``beta`` or ``gamma`` of a
    shape other than ``x``'s over ``axes`` (a negative axis counts as none: ``ValueError``); a
    ``nonlinearity`` other than ``'relu'``; over several ``axes``, a missing ``z`` (its
    adapter's ``AssertionError``),
    no ``output_stat`` (its wrapper hands the C++ function ``x`` itself with the adapted
    ``beta``: ``Shape of beta(inputs[1]) does not match``) or ``output_stat`` without
    ``batch_stat`` (case ``nnabla_fidelity_26.fused_batch_normalization__several_axes``).

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> x = nn.Variable((2, 3, 4))
        >>> check_fused_batch_normalization(x, z=x, axes=[1, 2], output_stat=True)  # computes
        >>> check_fused_batch_normalization(x, axes=[1, 2])
        Traceback (most recent call last):
        ...
        AssertionError: All inputs must be Variable. ...
    """
    name = "fused_batch_normalization"
    axes = [int(a) for a in (axes if isinstance(axes, (list, tuple)) else [axes])]
    if x is not None:
        # NNabla 1.39's wrapper (normalization_functions.py, _create_bn_dummy_vars) builds the
        # parameters' shape with ``i in axes`` over the axes as given: a negative axis is in
        # no place, so beta and gamma of x's shape over it do not fit
        adaptive = tuple(int(n) if i in axes else 1 for i, n in enumerate(x.shape))
        if any(p is not None and tuple(p.shape) != adaptive for p in (beta, gamma)):
            raise ValueError(
                "The shapes of beta and gamma must be {}. If you want to use a tensor with other "
                "shape, use arithmetic operators like `tensor_normalization(x, axes, beta=None, "
                "gamma=None) * gamma + beta`.".format(adaptive))
    if len(axes) > 1 and z is None:
        # NNabla 1.39's wrapper passes z through its BatchNormalizationInOutAdapter, whose
        # F.transpose(None) fails the inputs' assertion (function.pyx.tmpl, whose message
        # formats the type of a generator expression)
        raise AssertionError("All inputs must be Variable. [<class 'generator'>] (NNabla 1.39's "
                             f"{name} over several axes {axes} needs z)")
    if nonlinearity != "relu":
        raise _refuse(name, f"nonlinearity {nonlinearity!r} is not implemented (only 'relu')")
    if len(axes) == 1 or x is None:
        return
    if output_stat and not batch_stat:
        raise _refuse(name, "If batch_stat_ is false, it cannot output batch mean and "
                            "variance.")
    if not output_stat:
        # its wrapper gives the C++ function x itself, not the adapted input, with the adapted
        # beta: BatchNormalization::setup_impl's shape check fails (batch_normalization.cpp)
        ndim = len(x.shape)
        axes = [a % ndim for a in axes]
        inner = 1
        for a in axes:
            inner *= int(x.shape[a])
        adapted = (1,) * (ndim - len(axes)) + (inner,)
        expected = [1] * ndim
        expected[ndim - len(axes)] = int(x.shape[ndim - len(axes)])
        raise _refuse(name, "Shape of beta(inputs[1]) does not match. beta: (%s) != expected: "
                            "(%s). (NNabla 1.39 computes several axes with output_stat=True "
                            "only)" % (", ".join(map(str, adapted)),
                                       ", ".join(map(str, expected))))


_FUSED_CONVOLUTION_ACTIVATIONS = ("identity", "", "relu", "sigmoid", "tanh", "leaky_relu", "elu",
                                  "relu6")


def _check_fused_convolution(x=None, weight=None, bias=None, beta=None, gamma=None, mean=None,
                             variance=None, z=None, base_axis=1, pad=None, stride=None,
                             dilation=None, group=1, channel_last=False, decay_rate=0.9,
                             eps=1e-05, batch_stat=True, nonlinearity="relu",
                             nonlinearity_args=(), *_, **__):
    name = "fused_convolution"
    if bias is not None and beta is not None:
        raise _refuse(name, "a convolution bias and batch normalization inputs at the same "
                            "time are prohibited")
    if nonlinearity not in _FUSED_CONVOLUTION_ACTIVATIONS:
        raise _refuse(name, f"activation {nonlinearity!r} is not implemented (one of "
                            f"{', '.join(repr(a) for a in _FUSED_CONVOLUTION_ACTIVATIONS)})")
    if nonlinearity in ("leaky_relu", "elu") and len(list(nonlinearity_args or ())) != 1:
        raise _refuse(name, f"{nonlinearity} requires 1 argument in nonlinearity_args (alpha)")


def _check_top_k_data(x=None, k=None, abs=False, reduce=True, base_axis=1,  # noqa: A002
                      with_index=False, *_, **__):
    if with_index and not reduce:
        raise _refuse("top_k_data", "reduce must be true when with_index = true")


def _check_one_hot(x=None, shape=None, *_, **__):
    dims, classes = _shape(x), shape
    if dims and classes is not None and len(tuple(classes)) != dims[-1]:
        raise _refuse("one_hot", f"shape {tuple(classes)} needs one class count per entry of "
                      f"x's last axis: {len(tuple(classes))} != {dims[-1]} (x {dims})")


def check_dropout_p(p: Any) -> None:
    """Refuse a dropout probability outside ``[0, 1)``, as NNabla 1.39's ``Dropout`` does when
    it is set up (dropout.cpp:32, ``p_ >= 0. && p_ < 1.``; its ``RuntimeError``), on ``p``
    as the ``float`` it keeps (dropout.hpp:58): ``0.99999999`` is ``1.0`` there, refused,
    and ``-1e-50`` is ``-0.0``, taken.

    Example:
        >>> check_dropout_p(0.5)
        >>> check_dropout_p(1.0)
        Traceback (most recent call last):
        ...
        stadyn.compat.nnabla._refusals.NNablaRefusal: dropout: NNabla 1.39 refuses this call: ...
    """
    if not 0.0 <= np.float32(p) < 1.0:
        raise _refuse("dropout", f"p must be between 0.0 and 1.0 (1.0 excluded), got {p}")


def _check_dropout(x=None, p=0.5, *_, **kwargs):
    # NNabla 1.39's F.dropout(x, p=0.5, seed=-1, n_outputs=-1, outputs=None): Stadyn's op
    # has output_mask / train_only (and rule) there instead
    check_dropout_p(p)
    for key in kwargs:
        if key in ("output_mask", "train_only"):
            raise TypeError(f"dropout() got an unexpected keyword argument {key!r} (Stadyn's "
                            f"F.dropout has it, NNabla 1.39's takes x, p, seed)")


def _check_clip_grad_by_value(x=None, min=None, max=None, *_, **__):  # noqa: A002
    # NNabla 1.39's functions check every input is a Variable (function.pyx.tmpl, whose
    # message formats the type of a generator expression); Stadyn's op would fail inside
    for arg, value in (("min", min), ("max", max)):
        if isinstance(value, (numbers.Number, np.ndarray, np.generic)):
            raise AssertionError(
                "All inputs must be Variable. [<class 'generator'>] (NNabla 1.39's "
                f"clip_grad_by_value takes {arg} as a Variable of x's shape, got "
                f"{type(value).__name__}; called at {format_location(user_location())})")


def _check_einsum(*_, **kwargs):
    # NNabla 1.39's F.einsum(*x, **kw) reads kw['equation'] (a positional string is one more
    # input there); an empty equation fails its C++ preprocessing (a RuntimeError)
    if "equation" not in kwargs:
        raise KeyError("equation (NNabla 1.39's F.einsum takes it by keyword only, "
                       f"F.einsum(a, b, equation='ij,jk->ik'); called at "
                       f"{format_location(user_location())})")
    equation = kwargs["equation"]
    if not isinstance(equation, (str, bytes)):
        # NNabla 1.39's Cython binding converts it to a C++ string: TypeError("expected bytes,
        # NoneType found") for equation=None
        raise TypeError(f"expected bytes, {type(equation).__name__} found (F.einsum's equation "
                        f"is a string, e.g. equation='ij,jk->ik'; called at "
                        f"{format_location(user_location())})")
    if equation in ("", b""):
        raise _refuse("einsum", "value error in preprocess: the equation is empty")


def _recurrent_checker(name: str, fn: Callable) -> Callable:
    # the arguments bound as ``fn`` binds them: one given by position read by its own name
    signature = inspect.signature(fn)

    def check(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return                      # the call itself names the problem
        why = recurrent_problem(name, **bound.arguments)
        if why is not None:
            raise _refuse(name, why)
    return check


def _binary_checker(name: str) -> Callable:
    def check(x0=None, x1=None, *_, **__):
        check_binary(name, x0, x1)
    return check


_CHECKS: dict[str, Callable] = {
    **{n: _binary_checker(n) for n in BINARY},
    "concatenate": _check_concatenate,
    "split": _check_split,
    "unique": _check_unique,
    **{n: _axes_checker(n, "axis") for n in ("sum", "mean", "max", "min", "prod")},
    "norm": _check_norm_p("norm", 1),
    "norm_normalization": _check_norm_p("norm_normalization", 1),
    "bit_shift": _check_bit_shift,
    "deconvolution": _check_deconvolution,
    "batch_normalization": _check_batch_normalization,
    "fused_batch_normalization": _check_fused_running_stats,
    "fused_convolution": _check_fused_convolution,
    "top_k_data": _check_top_k_data,
    "one_hot": _check_one_hot,
    "dropout": _check_dropout,
    "clip_grad_by_value": _check_clip_grad_by_value,
    "einsum": _check_einsum,
}


def refusing_what_nnabla_refuses(name: str, fn: Callable) -> Callable:
    """``fn`` (NNabla's function ``name``) refusing, before it is called, what NNabla 1.39
    refuses (the module docstring); ``fn`` itself where NNabla has no such check.

    Example:
        >>> import stadyn.functions as sdF
        >>> concat = refusing_what_nnabla_refuses("concatenate", sdF.concatenate)
        >>> concat.__name__
        'concatenate'
    """
    check = _recurrent_checker(name, fn) if name in RECURRENT else _CHECKS.get(name)
    if check is None:
        return fn

    @functools.wraps(fn)
    def call(*args, **kwargs):
        check(*args, **kwargs)
        return fn(*args, **kwargs)
    return call
