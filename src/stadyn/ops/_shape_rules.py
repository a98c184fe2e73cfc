"""Shape rules that infer a static op's outputs without running it on ``meta`` tensors.

A static build infers each op call's outputs by running the op's implementation on ``meta``
tensors.  For element-wise ops that goes through torch's Python references, whose wrapper
(``torch/_prims_common/wrappers.py``) calls a function ``torch._compile._disable_dynamo``
wrapped: its first call imports ``torch._dynamo`` (and with it sympy and mpmath), 1-3 s of the
first static op of a process, and mpmath's import leaves the CPU's "invalid" floating-point flag
set, so NumPy warned ``invalid value encountered in add`` for ``np.ones(3) + x`` (a static
Variable ``x``: NumPy's object loop calls ``x.__radd__``, which built the first node).

The rules here are chosen by the op's declaration (:data:`SHAPE_RULES`, read by ``@op``):

* ``"elementwise"`` (``@op(..., elementwise=True)`` for broadcast ops of several inputs,
  ``@op(..., shape="elementwise")`` for ops of one input: ``exp``, ``relu``, ``add_scalar``;
  ``elementwise`` means more to CNTK's first inference pass): the output has the inputs' broadcast
  shape; its dtype and ``requires_grad`` are what the implementation gives on real CPU tensors
  of the same dtypes, each with one more, empty, leading axis and its axes of length other than
  1 empty too (no element is computed, so no floating-point flag is raised and no value
  matters); a 0-d input beside inputs with axes stays 0-d (torch promotes 0-d tensors below
  them), and where every input is 0-d each takes the one empty axis;
* ``"reduce"`` (``@op(..., shape="reduce")``, ``axis`` and ``keepdims`` attributes): the input's
  shape less the axes ``norm_axes`` names (kept as length 1 with ``keepdims``); the dtype is the
  implementation's on a CPU tensor of ones of the input's rank, its axes of length 1 but where
  the input's are empty (``max`` and ``min`` refuse those); ``max``/``min`` with
  ``with_index=True`` (two outputs) keep meta inference;
* ``"same"`` (``@op(..., shape="same")``, one tensor input: ``softmax``, ``log_softmax``): the
  input's shape; the dtype is the implementation's on a one-element CPU tensor of ones of the
  input's rank.
* ``"where"`` (NNabla's ``where``): the element-wise rule, after a condition whose shape is
  ``x_true``'s leading shape is given trailing axes of length 1 (NNabla's rule, which NumPy's
  broadcast does not follow).

A rule that cannot decide (inputs broadcasting does not take, an axis out of range,
inputs that are not meta tensors, an implementation that fails or answers another shape on its
probe) returns None, and the op's implementation runs on the meta tensors as before, so errors
keep their words.

Example:
    >>> import torch
    >>> from stadyn.ops import CATALOG
    >>> out = CATALOG["add2"].infer([torch.empty((2, 1), device="meta"),
    ...                              torch.empty((3,), device="meta")], {})
    >>> tuple(out.shape), out.dtype, out.device.type
    ((2, 3), torch.float32, 'meta')
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch

from ._util import norm_axes

__all__ = ["SHAPE_RULES", "rule_for"]

_Tensor = torch.Tensor


def _is_meta(a: Any) -> bool:
    return type(a) is _Tensor and a.device.type == "meta"


def _broadcast(shapes: list) -> tuple | None:
    """NumPy's broadcast of ``shapes``, or None where it does not take them."""
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for s in shapes:
        for k, d in enumerate(s, ndim - len(s)):
            if d != 1:
                if out[k] != 1 and out[k] != d:
                    return None
                out[k] = d
    return tuple(out)


def _probe_shape(shape) -> tuple:
    return tuple(1 if d == 1 else 0 for d in shape)


def _outputs(impl: Callable, args: list, kwargs: dict, probe: Callable):
    """What ``impl`` gives with each tensor argument replaced by ``probe(tensor)``, or None
    where it fails."""
    swapped = [probe(a) if isinstance(a, _Tensor) else a for a in args]
    kw = {k: (probe(v) if isinstance(v, _Tensor) else v) for k, v in kwargs.items()}
    try:
        out = impl(*swapped, **kw)
    except Exception:  # noqa: BLE001 - the meta inference gives the error, in its words
        return None
    return out


def _meta_like(o: _Tensor, shape: tuple) -> _Tensor:
    return torch.empty(shape, dtype=o.dtype, device="meta").requires_grad_(o.requires_grad)


def _tensors(args: list, kwargs: dict) -> list | None:
    """The tensor arguments of one call, or None when one is not a plain meta tensor or
    tensors hide in a list."""
    found = []
    for a in (*args, *kwargs.values()):
        if isinstance(a, _Tensor):
            if not _is_meta(a):
                return None
            found.append(a)
        elif isinstance(a, (list, tuple)) and any(isinstance(e, _Tensor) for e in a):
            return None
    return found


def _one_tensor(args: list, kwargs: dict) -> _Tensor | None:
    """The one tensor argument of a call (a plain meta tensor), or None (none, several,
    another kind: :func:`_tensors`)."""
    tensors = _tensors(args, kwargs)
    return tensors[0] if tensors is not None and len(tensors) == 1 else None


def elementwise(impl: Callable, args: list, kwargs: dict):
    """The meta outputs of an element-wise op's call (see the module docstring), or None.

    Example:
        >>> import torch
        >>> x = torch.empty((4, 1), device="meta", dtype=torch.int64)
        >>> y = torch.empty((5,), device="meta", dtype=torch.float64)
        >>> out = elementwise(lambda a, b: a * b, [x, y], {})
        >>> tuple(out.shape), out.dtype
        ((4, 5), torch.float64)
    """
    tensors = _tensors(args, kwargs)
    if not tensors:
        return None
    shape = _broadcast([tuple(t.shape) for t in tensors])
    if shape is None:
        return None
    # Each probe gets a leading empty axis (its other axes aligned to the broadcast rank), so
    # no element is computed even where every axis has length 1: garbage values there raised
    # NumPy's floating-point warnings inside its loop ((-2.5) ** x of a static (1,) ``x``).  A
    # 0-d input stays 0-d beside inputs with axes, as torch's type promotion ranks 0-d tensors
    # below them (its one element is 1, never used: the output is empty); where every input is
    # 0-d they all take the one axis, which keeps their promotion among themselves.
    scalars = all(t.ndim == 0 for t in tensors)
    rank = len(shape)

    def probe(t):
        if t.ndim == 0 and not scalars:
            p = torch.ones((), dtype=t.dtype)
        else:
            p = torch.empty((0,) + (1,) * (rank - t.ndim) + _probe_shape(t.shape), dtype=t.dtype)
        return p.requires_grad_(t.requires_grad)
    out = _outputs(impl, args, kwargs, probe)
    expect = (0,) + _probe_shape(shape)
    if isinstance(out, _Tensor):
        return _meta_like(out, shape) if tuple(out.shape) == expect else None
    if isinstance(out, tuple) and out and all(isinstance(o, _Tensor) and tuple(o.shape) == expect
                                              for o in out):
        return tuple(_meta_like(o, shape) for o in out)
    return None


def reduce(impl: Callable, args: list, kwargs: dict, axis: Any = None,
           keepdims: bool = False):
    """The meta output of a reduction over ``axis`` (``norm_axes``' rule: None for every axis,
    an empty list for none), or None.

    Example:
        >>> import torch
        >>> x = torch.empty((2, 3, 4), device="meta")
        >>> tuple(reduce(lambda t: t.sum((0, 2)), [x], {}, axis=(0, -1)).shape)
        (3,)
    """
    x = _one_tensor(args, kwargs)
    if x is None:
        return None
    try:
        axes = norm_axes(axis, x.ndim)
    except Exception:  # noqa: BLE001 - an axis out of range: the meta inference says so
        return None
    if axes == []:      # ops read no axis differently: sum none, max(rule="cntk") every one
        return None
    axes = set(range(x.ndim)) if axes is None else set(axes)
    shape = tuple(1 if k in axes else d for k, d in enumerate(x.shape)
                  if keepdims or k not in axes)

    def probe(t):       # (an empty axis stays empty: max and min refuse to reduce one)
        return torch.ones(tuple(0 if d == 0 else 1 for d in t.shape), dtype=t.dtype,
                          device="cpu").requires_grad_(t.requires_grad)
    out = _outputs(impl, args, kwargs, probe)
    if isinstance(out, _Tensor) and out.ndim == len(shape):
        return _meta_like(out, shape)
    return None


def same(impl: Callable, args: list, kwargs: dict):
    """The meta output of an op of one tensor input whose output has that input's shape
    (``softmax`` along an axis), or None.

    Example:
        >>> import torch
        >>> x = torch.empty((2, 3), device="meta", dtype=torch.float16)
        >>> out = same(lambda t: torch.softmax(t, 1), [x], {})
        >>> tuple(out.shape), out.dtype
        ((2, 3), torch.float16)
    """
    x = _one_tensor(args, kwargs)
    if x is None:
        return None
    shape = tuple(x.shape)
    # one element, the rank kept (axes read the same); not empty where the input is: CPU
    # kernels skip their dtype checks on empty tensors (log_softmax of bool), meta does not
    probed = (1,) * len(shape)

    def probe(t):
        return torch.ones(probed, dtype=t.dtype, device="cpu").requires_grad_(t.requires_grad)
    out = _outputs(impl, args, kwargs, probe)
    if isinstance(out, _Tensor) and tuple(out.shape) == probed:
        return _meta_like(out, shape)
    return None


def _reduce_rule(impl: Callable) -> Callable:
    def rule(args: list, kwargs: dict):
        # the attributes as the call gives them (the first parameter is the input)
        attrs = dict(kwargs)
        names = ("axis", "keepdims")
        for name, value in zip(names, args[1:3]):
            attrs[name] = value
        return reduce(impl, args, kwargs, attrs.get("axis"), bool(attrs.get("keepdims", False)))
    return rule


def _where_rule(impl: Callable) -> Callable:
    def rule(args: list, kwargs: dict):
        # NNabla's ``where``: a condition of lower rank whose shape is ``x_true``'s leading
        # shape applies to each of their trailing elements; aligned so, the three broadcast
        # as the element-wise rule's inputs (a call by keyword: meta inference)
        if len(args) != 3 or kwargs:
            return None
        cond, x_true, x_false = args
        if (_is_meta(cond) and _is_meta(x_true) and cond.ndim < x_true.ndim
                and tuple(x_true.shape[:cond.ndim]) == tuple(cond.shape)):
            cond = cond.reshape(tuple(cond.shape) + (1,) * (x_true.ndim - cond.ndim))
        return elementwise(impl, [cond, x_true, x_false], kwargs)
    return rule


#: rule name -> a maker of the rule for one op's implementation: ``rule(meta_args,
#: meta_kwargs)`` gives the call's meta outputs, or None (the implementation then runs on them)
SHAPE_RULES: dict[str, Callable[[Callable], Callable | None]] = {
    "elementwise": lambda impl: functools.partial(elementwise, impl),
    "reduce": _reduce_rule,
    "same": lambda impl: functools.partial(same, impl),
    # ``where``'s: the element-wise rule after aligning a condition of ``x_true``'s leading
    # shape to its leading axes
    "where": _where_rule,
    # no rule: meta inference
    "meta": lambda impl: None,
}


def rule_for(impl: Callable, shape: Any, elementwise: bool) -> Callable | None:
    """The shape rule a declaration names (``shape="elementwise"``, ``shape="reduce"``;
    ``elementwise=True``: the element-wise rule), bound to ``impl``; None for a declaration
    that names none or ``shape="meta"``.

    Example:
        >>> rule_for(torch.add, None, True) is not None, rule_for(torch.add, None, False)
        (True, None)
    """
    if isinstance(shape, str):
        if shape not in SHAPE_RULES:
            raise ValueError(f"shape={shape!r}: a shape rule is one of {sorted(SHAPE_RULES)} "
                             "or a function")
        return SHAPE_RULES[shape](impl)
    if elementwise and shape is None:
        return SHAPE_RULES["elementwise"](impl)
    return None
