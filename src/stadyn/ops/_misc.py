"""Identity, constants, casts and graph helpers."""

from __future__ import annotations

import numpy as np
import torch

from ..graph import get_current_context
from ._registry import op


@op(1, category="misc", keeps_input_dtype=lambda attrs: True)
def identity(x):
    """The input unchanged (a new graph node).  Example: ``F.identity(x)``."""
    return x.view_as(x)  # a view, not ``x`` itself: the output gets its own autograd node


@op(0, category="misc")
def constant(val=0.0, shape=()):
    """An array of ``shape`` filled with ``val`` (no inputs, no gradient).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     c = F.constant(2.0, (2,))
        >>> c.d
        array([2., 2.], dtype=float32)
    """
    return torch.full(tuple(int(s) for s in shape), float(val),
                      device=get_current_context().device)


@op(1, category="misc", frameworks=("stadyn", "cntk"))
def stop_gradient(x):
    """The input's value with no gradient flowing back.  Example: ``F.stop_gradient(h)``."""
    return x.detach()


class _Unlinked(torch.autograd.Function):
    """Forward, the input; backward, zeros (nothing reaches the input)."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return torch.zeros_like(grad)


@op(1, category="misc")
def unlink(x):
    """The input's value, passing no gradient back (NNabla's ``unlink``, a layer of its GUI
    network designer).  Unlike ``stop_gradient``, the output needs a gradient when the input
    does, so a backward from it runs (and leaves the input's gradient as it was).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([1.0, 2.0]), need_grad=True)
        >>> with sd.auto_forward():
        ...     y = F.unlink(x) * 2.0 + x
        >>> y.backward(np.ones(2, np.float32))
        >>> y.d.tolist(), x.g.tolist()
        ([3.0, 6.0], [1.0, 1.0])
    """
    return _Unlinked.apply(x) if x.requires_grad else x.view_as(x)


#: The element types ``cast`` converts to, by name.
CAST_DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
               "uint8", "bool")


@op(1, category="misc", frameworks=("stadyn", "cntk"))
def cast(x, dtype="float32"):
    """``x`` converted to ``dtype`` (a name from :data:`CAST_DTYPES`): floats to integers round
    toward zero, anything to ``bool`` is ``x != 0``.  The gradient flows between floating-point
    types.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     y = F.cast(sd.Variable.from_numpy_array([-1.7, 0.0, 2.9]), "int64")
        >>> y.d
        array([-1,  0,  2])
    """
    if dtype not in CAST_DTYPES:
        raise ValueError(f"cannot cast to {dtype!r}; the types are {', '.join(CAST_DTYPES)}")
    return x.to(getattr(torch, dtype))


#: How many values of :func:`arange`'s float32 running sum are added up at a time
_ARANGE_BLOCK = 1 << 20


@op(0, category="misc")
def arange(start, stop, step=1):
    """``start, start + step, ...`` while below ``stop`` (above it for a negative ``step``), as
    float32, computed as NNabla 1.39 does (``function/generic/arange.cpp``): ``start``,
    ``stop`` and ``step`` rounded to float32 and each value the previous one plus ``step`` in
    float32, the count too.  The rounding adds up: ``F.arange(0, 100, 0.1)`` has 1001 values,
    the last 99.99905, as NNabla's (``torch.arange`` gives 1000).  A sum that stops growing
    short of ``stop`` (``F.arange(0, 2e7, 1)`` sticks at 16777216) is a ``ValueError``:
    NNabla's loop never ends there.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     r = F.arange(1, 2, 0.25)
        >>> r.d
        array([1.  , 1.25, 1.5 , 1.75], dtype=float32)
    """
    if step == 0:
        raise ValueError("arange: step must not be 0")
    first, last, delta = np.float32(start), np.float32(stop), np.float32(step)
    # NNabla's float32 running sum, a block at a time until it passes stop or sticks (a value
    # that stops growing: step below its rounding, where NNabla's loop never ends).  The count
    # from exact arithmetic is the first block's size, capped: it is short where the rounded
    # step falls short (F.arange(0.5, 0.4, -1e-7) has 1118481 values, not 1000000) and far
    # too many where the sum sticks early (F.arange(1, 2, 1e-9): 4 GB, then a stuck sum)
    n = max(int(np.ceil((float(last) - float(first)) / float(delta))), 0) + 2
    blocks, current = [], first
    while True:
        n = min(n, _ARANGE_BLOCK)
        steps = np.full(n + 1, delta, np.float32)
        steps[0] = current
        values = np.add.accumulate(steps, dtype=np.float32)
        inside = values < last if delta > 0 else values > last
        if not inside.all():
            blocks.append(values[:int(np.argmin(inside))])
            break
        if values[-1] == values[-2]:
            # the sum stopped growing short of stop: NNabla's counting loop (arange.cpp:33-38)
            # never ends there; the values would repeat the stuck one
            raise ValueError(f"arange({start}, {stop}, {step}): in float32 the running sum "
                             f"sticks at {float(values[-1])!r} (adding {float(delta)!r} no longer "
                             f"changes it) and never reaches {float(last)!r}; NNabla 1.39's loop "
                             "never ends")
        blocks.append(values[:-1])
        current, n = values[-1], _ARANGE_BLOCK
    values = np.concatenate(blocks) if len(blocks) > 1 else blocks[0].copy()
    return torch.from_numpy(values).to(get_current_context().device)


@op(2, category="misc", traceable=False)
def assign(dst, src):
    """Copy ``src`` into ``dst`` in place (NNabla's ``assign``, e.g. to update a moving average
    of parameters) and give the copied value.  As NNabla 1.39's (assign.cpp,
    ``backward_impl``), the output's gradient goes to ``dst`` (added to what it has) and none
    to ``src``.  A static graph holding it runs eagerly (an in-place write into a parameter
    cannot be traced).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> dst = sd.Variable.from_numpy_array(np.zeros(2))
        >>> with sd.auto_forward():
        ...     y = F.assign(dst, sd.Variable.from_numpy_array([1.0, 2.0]))
        >>> dst.d, y.d
        (array([1., 2.], dtype=float32), array([1., 2.], dtype=float32))
    """
    if tuple(dst.shape) != tuple(src.shape):
        raise ValueError(f"assign: dst {tuple(dst.shape)} and src {tuple(src.shape)} differ in "
                         "shape")
    with torch.no_grad():
        dst.copy_(src)
    # the written dst's values, through dst: its gradient is the output's (none to src)
    return dst.clone() if dst.requires_grad and torch.is_grad_enabled() else src.detach().clone()


@op(category="misc", sequence="drop", forwards_inputs=True,
    seeds_inputs=lambda attrs: not attrs["one_input_grad"])
def sink(*x, one_input_grad=True):
    """A 0-d zero that depends on every input: ``sink(a, b).forward()`` computes both, and its
    ``backward()`` sends a gradient of ones into each input (``one_input_grad``), as NNabla's
    ``sink``.  With ``one_input_grad=False`` it sends nothing and the backward flows from each
    input's gradient as the program left it (``l1.g = 0.3; l2.g = 0.7; s.backward()``: a leaf
    input's own gradient stays as it is), as NNabla 1.39's ``Sink`` (``OpSpec.seeds_inputs``).
    Its forward is its inputs' too: ``a.backward()`` after it reads the values it computed (the
    same dropout masks) instead of running ``a``'s forward again.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([1.0, 2.0]), need_grad=True)
        >>> s = F.sink(x * 2.0, x * 3.0)
        >>> s.forward(); s.backward()
        >>> x.g
        array([5., 5.], dtype=float32)
    """
    total = None
    for t in x:
        term = (t - t.detach()).sum() if one_input_grad else t.sum() * 0.0
        total = term if total is None else total + term
    return total.to(torch.float32)
