"""How ops that are not sequence ops relate to the sequence axis: the rules their declarations
name (``@op(..., sequence=rule)``, see :func:`stadyn.graph._sequence.propagate`).

The default, ``"keep"``, gives an output its input's sequence axis when the output's first two
axes equal the input's (batch, padded length).  That is right for an op whose output's leading
axes *are* its input's whenever the shapes say so -- element-wise ops, ``affine`` over the
sample axes, ``reshape`` (row-major: equal leading axes mean every (batch, step) block stays
where it was), ``concatenate``/``tile``/``pad`` (they change the length of an axis they touch).
It is wrong for an op whose output's axis 0 or 1 is some other axis that can happen to have
the same size: a reduction over axis 1 (``(B, T, H) -> (B, H)`` with ``H == T``), a transpose
that moves axis 1, ``affine`` with ``base_axis=1``, a split or stack at axis 0 or 1.  In a
static graph the coincidence is the rule, not the exception: a sequence input is ``(1, 1,
...)`` until fed.  Those ops declare one of the rules below, which look at the call's
attributes (and the number of axes of its inputs, never at sizes that feeding changes).

An op over axis 1 that keeps its length (``softmax``/``cumsum`` along the steps) keeps the
axis: its output's axis 1 still counts the steps, though padded steps take part in the values.
``sort`` and ``flip`` along axis 0 or 1 reorder the steps, so they drop it.

Example:
    >>> import stadyn as sd, stadyn.functions as F
    >>> x = sd.sequence.input_variable(1)                     # (1, 1, 1) until fed
    >>> F.sum(x, axis=1).sequence_lengths is None, F.sum(x, axis=2).sequence_lengths is None
    (True, False)
"""

from __future__ import annotations

from typing import Any, Callable

from ._util import norm_axis

__all__ = ["unless_axes", "unless_moved", "from_base_axis", "unless_class_axis", "at_axis",
           "stack_axis", "slice_rule", "gather_rule", "batch_matmul_rule", "dot_rule",
           "einsum_rule", "matrix_axes_rule", "top_k_rule"]

_Rule = Callable[[dict, list], Any]


def _ndim(v: Any) -> int:
    return len(v.shape) if v is not None and hasattr(v, "shape") else 0


def _axes(value: Any, ndim: int, default: Any) -> list[int] | None:
    """``value`` (an axis, axes or None for ``default``) as non-negative axes; None: all."""
    if value is None:
        value = default
    if value is None:
        return None
    values = [value] if isinstance(value, int) else list(value)
    return [norm_axis(int(a), ndim) for a in values]


def unless_axes(attr: str = "axis", default: Any = None) -> _Rule:
    """Keep unless the op works across axis 0 or 1 (``attr``: an axis, axes, or None for
    ``default``, None meaning every axis): reductions, ``sort``, ``flip``.

    Example:
        >>> unless_axes()({"axis": 2}, [_Shaped((4, 5, 6))]), unless_axes()({"axis": None}, [])
        ('keep', 'drop')
    """
    def rule(attrs: dict, inputs: list) -> str:
        axes = _axes(attrs.get(attr), _ndim(inputs[0]) if inputs else 0, default)
        return "drop" if axes is None or 0 in axes or 1 in axes else "keep"
    return rule


def unless_moved(attrs: dict, inputs: list) -> str:
    """``transpose``: keep when axes 0 and 1 stay where they are.

    Example:
        >>> unless_moved({"axes": (0, 2, 1)}, [_Shaped((2, 3, 3))])
        'drop'
    """
    ndim = _ndim(inputs[0])
    axes = attrs.get("axes")
    axes = list(range(ndim))[::-1] if axes is None else [norm_axis(int(a), ndim) for a in axes]
    return "keep" if axes[:2] == [0, 1] else "drop"


def from_base_axis(name: str = "x", attr: str = "base_axis") -> _Rule:
    """Ops over the axes from ``base_axis`` on (``affine``, convolutions, ``kl_multinomial``):
    the output is on input ``name``'s axis when ``base_axis >= 2`` (the batch and step axes are
    outer axes), else on none.

    Example:
        >>> from_base_axis()({"base_axis": 1}, [_Shaped((2, 3, 3))])
        'drop'
    """
    def rule(attrs: dict, inputs: list) -> str:
        base = int(attrs.get(attr, 1))
        ndim = _ndim(inputs[0])
        base = base + ndim if base < 0 else base
        return f"of:{name}" if base >= 2 else "drop"
    return rule


def unless_class_axis(attrs: dict, inputs: list) -> str:
    """Criteria over a class ``axis`` (None: the last): keep when the classes lie past axis 1.

    Example:
        >>> unless_class_axis({"axis": -1}, [_Shaped((2, 3))])      # (B, T): T is the classes
        'drop'
    """
    ndim = _ndim(inputs[0])
    axis = attrs.get("axis")
    axis = ndim - 1 if axis is None else norm_axis(int(axis), ndim)
    return "keep" if axis >= 2 else "drop"


def at_axis(attrs: dict, inputs: list) -> str:
    """``split``, ``take_along_axis``: keep when ``axis`` is past axis 1.

    Example:
        >>> at_axis({"axis": 1}, [_Shaped((2, 3, 4))])
        'drop'
    """
    return "keep" if norm_axis(int(attrs.get("axis", 0)), _ndim(inputs[0])) >= 2 else "drop"


def stack_axis(attrs: dict, inputs: list) -> str:
    """``stack``: the new axis is past axis 1.

    Example:
        >>> stack_axis({"axis": 1}, [_Shaped((2, 3))])
        'drop'
    """
    return "keep" if norm_axis(int(attrs.get("axis", 0)), _ndim(inputs[0]) + 1) >= 2 \
        else "drop"


def slice_rule(attrs: dict, inputs: list) -> str:
    """``slice``: keep when axes 0 and 1 are taken whole and in order.

    Example:
        >>> slice_rule({"start": (0, 0, 1), "stop": (2, 3, 4), "step": None},
        ...            [_Shaped((2, 3, 4))])
        'keep'
    """
    shape = tuple(inputs[0].shape)
    start, stop, step = attrs.get("start"), attrs.get("stop"), attrs.get("step")
    n = len(start if start is not None else stop if stop is not None else step or ())
    start = list(start) if start is not None else [None] * n
    stop = list(stop) if stop is not None else [None] * n
    step = list(step) if step is not None else [1] * n
    first = len(shape) - n              # the axes before it are taken whole
    for axis in (0, 1):
        k = axis - first
        if k >= 0 and slice(start[k], stop[k], step[k]).indices(shape[axis]) != \
                (0, shape[axis], 1):
            return "drop"
    return "keep"


def gather_rule(attrs: dict, inputs: list) -> str:
    """``gather``: ``x.shape[:axis] + Indices.shape[batch_dims:] + x.shape[axis + 1:]``, so the
    leading axes are ``x``'s past ``axis`` 1, ``Indices``' where ``axis == batch_dims`` is 0
    or 1 (an embedding lookup of a sequence of ids).

    Example:
        >>> gather_rule({"axis": 0, "batch_dims": 0}, [_Shaped((9, 4)), _Shaped((2, 3))])
        'of:Indices'
    """
    x = inputs[0]
    axis = norm_axis(int(attrs.get("axis") or 0), _ndim(x))
    batch_dims = int(attrs.get("batch_dims") or 0)
    if axis >= 2:
        return "of:x"
    return "of:Indices" if axis == batch_dims else "drop"


def batch_matmul_rule(attrs: dict, inputs: list) -> str:
    """``batch_matmul``: the output's leading axes are ``a``'s when ``a``'s batch axes include
    both (4 axes or more) or its rows are its axis 1 (3 axes, not ``transpose_a``); ``b``'s only
    when its batch axes include both.

    Example:
        >>> batch_matmul_rule({"transpose_a": True}, [_Shaped((2, 3, 4)), _Shaped((2, 3, 5))])
        'drop'
    """
    a, b = inputs[0], inputs[1]
    if getattr(a, "sequence_lengths", None) is not None:
        return "of:a" if _ndim(a) >= 4 or not attrs.get("transpose_a") else "drop"
    return "of:b" if _ndim(b) >= 4 else "drop"


def dot_rule(attrs: dict, inputs: list) -> str:
    """``dot`` (NumPy's): ``a``'s leading axes stay when ``a`` has three axes or more.

    Example:
        >>> dot_rule({}, [_Shaped((2, 3)), _Shaped((3, 4))])        # contracts over axis 1
        'drop'
    """
    a = inputs[0]
    return "of:a" if getattr(a, "sequence_lengths", None) is not None and _ndim(a) >= 3 else "drop"


def einsum_rule(attrs: dict, inputs: list) -> str:
    """``einsum``: the output's first two subscripts are those of the first operand with a
    sequence axis (an ellipsis there: the shapes decide, ``keep``).

    Example:
        >>> einsum_rule({"equation": "bti,ij->btj"}, [_Seq((2, 3, 4)), _Shaped((4, 5))])
        'of:0'
        >>> einsum_rule({"equation": "bti->bi"}, [_Seq((2, 3, 4))])
        'drop'
    """
    equation = str(attrs.get("equation", "")).replace(" ", "")
    if "->" not in equation:
        return "drop"
    lhs, out = equation.split("->")
    terms = lhs.split(",")
    for k, (v, term) in enumerate(zip(inputs, terms)):
        if getattr(v, "sequence_lengths", None) is not None:
            if "." in term[:2] or "." in out[:2]:
                return "keep"
            return f"of:{k}" if len(out) >= 2 and out[:2] == term[:2] else "drop"
    return "drop"


def matrix_axes_rule(attrs: dict, inputs: list) -> str:
    """Ops over the last two axes as matrices (``matrix_diag_part``): keep when those are
    past axis 1.

    Example:
        >>> matrix_axes_rule({}, [_Shaped((2, 3, 3))])
        'drop'
    """
    return "keep" if _ndim(inputs[0]) >= 4 else "drop"


def top_k_rule(attrs: dict, inputs: list) -> str:
    """``top_k_data``: with ``reduce``, ``x.shape[:base_axis] + (k,)``, so the steps survive
    only when ``base_axis >= 2``; without, ``x``'s shape (the axis kept).

    Example:
        >>> top_k_rule({"reduce": True, "base_axis": 1}, [_Shaped((2, 3, 4))])
        'drop'
    """
    if not attrs.get("reduce", True):
        return "keep"
    return from_base_axis()(attrs, inputs)


class _Shaped:
    """A stand-in with a shape (the examples above)."""

    sequence_lengths = None

    def __init__(self, shape):
        self.shape = shape


class _Seq(_Shaped):
    sequence_lengths = object()
