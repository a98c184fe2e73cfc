"""What every parametric function shares: NNabla's two-level scope (``name`` above the
function's own scope), its parameters' creation (``fix_parameters`` freezes the graph's view,
not the registered parameter) and the checks of sizes and axes.
"""

from __future__ import annotations

import contextlib
from typing import Any, Sequence

import numpy as np
import torch

from .. import functions as F
from .._errors import ShapeError
from ..graph import Variable, read_as_one, value_holder
from ._registry import get_parameter_or_create, parameter_scope

__all__ = ["pf_scope", "parameter", "applied", "given_or", "counts", "count", "checked_axes",
           "checked_base_axis"]


@contextlib.contextmanager
def pf_scope(name: str | None, own: str):
    """The scope a parametric function creates its parameters in: its ``own`` scope (``affine``,
    ``conv``, ...), inside ``name`` when one is given -- NNabla's rule, so
    ``PF.affine(x, 5, name="l1")`` creates ``l1/affine/W``.

    Example:
        >>> import stadyn as sd
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     with pf_scope("l1", "affine"):
        ...         sd.get_parameter_or_create("W", (1,)).name
        'l1/affine/W'
    """
    if name is None:
        with parameter_scope(own):
            yield
        return
    if not isinstance(name, str) or not name:
        raise ShapeError(f"PF: name must be a non-empty string, got {name!r}")
    with parameter_scope(name), parameter_scope(own):
        yield


def parameter(name: str, shape: Sequence[int], initializer: Any, fix_parameters: bool = False,
              need_grad: bool = True, apply: Any = None, read_by: str | None = None) -> Variable:
    """The parameter ``name`` of the current scope as NNabla's parametric functions ask for it:
    registered with ``need_grad`` (an existing parameter's flag is set to it, as NNabla 1.39
    does: ``PF.affine`` over a ``W`` registered with ``need_grad=False`` trains it) and, with
    ``fix_parameters``, seen by the graph through a view that needs no gradient
    (``get_parameters()`` still lists it as trainable); ``apply`` (NNabla's
    ``apply_w``/``apply_b``) maps the parameter before use.

    A new parameter is float32, but for one needing no gradient made from an integer (or bool)
    NumPy array, which keeps the array's type as NNabla 1.39's does (``get_parameter_or_create``'s
    rule) where the function says how it reads it: ``read_by="reading"`` gives the function a
    float32 cast of it (``min_max_quantize``'s ``ql_min``/``ql_max``), ``read_by="writing"``
    (a batch normalisation's running statistics under ``batch_stat``) makes the parameter
    float32, values kept, as NNabla's forward writes float32 into it, and ``read_by="as_is"``
    gives it to the function in its own type (an INQ indicator, which NNabla 1.39 reads and
    rewrites as int32: case ``nnabla_fidelity_14.integer_initializers__no_gradient``).
    Elsewhere (a quantised copy, a binary weight and its scale, a spectral norm's ``u``: written
    by ops computing in float) the parameter is float32 whatever the array.

    Example:
        >>> import stadyn as sd
        >>> with sd.parameter_registry(sd.ParameterRegistry()) as registry:
        ...     w = parameter("W", (2,), 1.0, fix_parameters=True)
        ...     w.need_grad, registry.get("W").need_grad
        (False, True)
    """
    as_need_grad = (not fix_parameters) if need_grad else None
    var = get_parameter_or_create(name, tuple(int(s) for s in shape), initializer, need_grad,
                                  as_need_grad, None if read_by else np.float32,
                                  overwrite_need_grad=True)
    if read_by in ("reading", "writing") and not var.torch_dtype.is_floating_point:
        if read_by == "writing":
            holder = value_holder(var)
            Variable.data.fset(holder, Variable.data.fget(holder).detach().to(torch.float32))
        else:
            var = F.cast(var, "float32")
    return applied(apply, var)


def applied(apply: Any, var: Variable) -> Any:
    """``apply(var)`` (a parametric function's ``apply_w``/``apply_b``), its functions reading
    ``var`` recorded as reading one graph Variable of it, as NNabla's one Variable per call
    (``graph.read_as_one``: ``nn.grad`` counts them together); ``var`` without ``apply``.

    Example:
        >>> import stadyn as sd
        >>> applied(lambda w: w * 2.0, sd.Variable((2,))).shape
        (2,)
    """
    if apply is None:
        return var
    out = apply(var)
    read_as_one(out, var)
    return out


def given_or(initializer: Any, default: Any) -> Any:
    """``initializer`` unless it is None, else ``default``: a parametric function's ``*_init``
    may be a NumPy array, whose truth value ``initializer or default`` would ask for (NNabla
    1.39 tests for None).

    Example:
        >>> import numpy as np
        >>> given_or(np.array([1.0, 2.0]), 0.0).tolist(), given_or(None, 0.0)
        ([1.0, 2.0], 0.0)
    """
    return default if initializer is None else initializer


def counts(value: int | Sequence[int], fn: str, arg: str, sequence: bool) -> tuple[int, ...]:
    """``value`` (an int, or a sequence of ints where ``sequence``) as a tuple of ints >= 1;
    anything else is a :class:`~stadyn.ShapeError` naming ``PF.fn`` and ``arg``.

    Example:
        >>> counts(3, "affine", "n_outmaps", True), counts([2, 3], "affine", "n_outmaps", True)
        ((3,), (2, 3))
    """
    def bad() -> ShapeError:
        kind = "a positive int" + (" or a sequence of them" if sequence else "")
        return ShapeError(f"PF.{fn}: {arg} must be {kind}, got {value!r}")

    def one(v) -> int:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 1:
            raise bad()
        return int(v)
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return (one(value),)
    if not sequence or isinstance(value, (str, bytes)):
        raise bad()
    try:
        items = list(value)
    except TypeError:
        raise bad() from None
    if not items:
        raise bad()
    return tuple(one(v) for v in items)


def count(value: int, fn: str, arg: str) -> int:
    """One positive int (see :func:`counts`).  Example: ``count(4, "embed", "n_features")``."""
    return counts(value, fn, arg, False)[0]


def checked_axes(axes: Sequence[int], inp: Variable, fn: str) -> list[int]:
    """``axes`` as axes of ``inp`` in ``0 .. ndim - 1`` (negative ones count from the end).

    Example:
        >>> import stadyn as sd
        >>> checked_axes([-1], sd.Variable((2, 3)), "batch_normalization")
        [1]
    """
    out = []
    for a in axes:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)) or \
                not -inp.ndim <= a < inp.ndim:
            raise ShapeError(f"PF.{fn}: axes {tuple(axes)!r} do not fit an input of shape "
                             f"{inp.shape}")
        out.append(int(a) % inp.ndim)
    return out


def checked_base_axis(base_axis: int, inp: Variable, fn: str) -> int:
    """``base_axis`` checked against ``inp``'s rank.

    Example:
        >>> import stadyn as sd
        >>> checked_base_axis(1, sd.Variable((2, 3)), "affine")
        1
    """
    if isinstance(base_axis, (bool, np.bool_)) or not isinstance(base_axis, (int, np.integer)) \
            or not -inp.ndim <= base_axis <= inp.ndim:
        raise ShapeError(f"PF.{fn}: base_axis {base_axis!r} does not fit an input of shape "
                         f"{inp.shape}")
    return int(base_axis)
