"""``trace``: a value probe inside a graph, like CNTK's ``Trace`` node.

``F.trace(x, say="h1")`` is ``x`` unchanged, and each time the graph runs it may print a line
about the value flowing through it (and, with ``gradient=True``, about its gradient on the way
back): the first ``first`` executions, then every ``every``-th, as CNTK's ``logFirst`` and
``logFrequency`` do.  The line gives the label, the execution count, the shape and dtype, the
minimum, maximum, mean and standard deviation, how many entries are NaN or infinite, and the
first ``values`` entries.

The probe is a PyTorch custom op (``stadyn_kernels::trace``), so a static plan and a compiled
step keep it: a static plan runs it on every replay, not only while the plan is traced.  It
copies the tensor it watches (a custom op cannot return its input), so it costs one copy per
execution; take it out of a graph that is being timed.

Example:
    >>> import numpy as np, stadyn as sd, stadyn.functions as F
    >>> import io, contextlib
    >>> out = io.StringIO()
    >>> with sd.auto_forward(), contextlib.redirect_stderr(out):
    ...     y = F.trace(sd.Variable.from_numpy_array(np.array([1.0, -2.0, 4.0])), say="h", values=2)
    >>> print(out.getvalue().strip())
    trace h #1 forward (3,) float32: min -2 max 4 mean 1 std 2.449 nan 0 inf 0 [1, -2, ...]
"""

from __future__ import annotations

import sys
import threading

import torch

from ._registry import op
from ._kernels import kernel_op

__all__ = ["trace", "reset_trace_counts", "TRACE_COUNTS"]

#: How many times each probe has run, by ``(label, phase)``; :func:`reset_trace_counts` clears it.
TRACE_COUNTS: dict[tuple[str, str], int] = {}
_lock = threading.Lock()


def reset_trace_counts() -> None:
    """Start every probe's execution count again from zero (the next run is ``#1``).

    Example:
        >>> from stadyn.ops._trace import reset_trace_counts, TRACE_COUNTS
        >>> reset_trace_counts(); TRACE_COUNTS
        {}
    """
    with _lock:
        TRACE_COUNTS.clear()


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def _describe(t: torch.Tensor, values: int) -> str:
    shape = "(" + ", ".join(str(s) for s in t.shape) + ("," if t.dim() == 1 else "") + ")"
    dtype = str(t.dtype).replace("torch.", "")
    if t.numel() == 0:
        return f"{shape} {dtype}: empty"
    f = t.detach().to(torch.float64).reshape(-1)
    finite = torch.isfinite(f)
    n_nan = int(torch.isnan(f).sum())
    n_inf = int(torch.isinf(f).sum())
    ok = f[finite]
    if ok.numel():
        std = float(ok.std(unbiased=False)) if ok.numel() > 1 else 0.0
        stats = (f"min {_fmt(float(ok.min()))} max {_fmt(float(ok.max()))} "
                 f"mean {_fmt(float(ok.mean()))} std {_fmt(std)}")
    else:
        stats = "no finite entries"
    text = f"{shape} {dtype}: {stats} nan {n_nan} inf {n_inf}"
    if values > 0:
        head = [_fmt(float(v)) for v in f[:values]]
        text += " [" + ", ".join(head) + (", ...]" if f.numel() > values else "]")
    return text


def _log(t: torch.Tensor, say: str, phase: str, every: int, first: int, values: int) -> None:
    with _lock:
        n = TRACE_COUNTS.get((say, phase), 0) + 1
        TRACE_COUNTS[(say, phase)] = n
    if n <= first or (every > 0 and n % every == 0):
        print(f"trace {say} #{n} {phase} {_describe(t, values)}", file=sys.stderr, flush=True)


def _trace_impl(x: torch.Tensor, say: str, phase: str, every: int, first: int,
                values: int, gradient: bool) -> torch.Tensor:
    _log(x, say, phase, every, first, values)
    return x.clone()


def _trace_fake(x, say, phase, every, first, values, gradient):
    return torch.empty_like(x)


def _trace_setup(ctx, inputs, output):
    ctx.args = inputs[1:]


def _trace_backward(ctx, g):
    say, _, every, first, values, gradient = ctx.args
    if gradient:
        g = _trace_kernel(g, say, "backward", every, first, values, gradient)
    return g, None, None, None, None, None, None


_trace_kernel = kernel_op("stadyn_kernels::trace",
                          "(Tensor x, str say, str phase, int every, int first, int values, "
                          "bool gradient) -> Tensor",
                          _trace_impl, _trace_fake, _trace_backward, _trace_setup)


@op(1, category="debug")
def trace(x, say="", every=100, first=10, gradient=False, values=0):
    """``x`` unchanged, printing a line about it to standard error as the graph runs: on the
    first ``first`` executions and every ``every``-th one after (CNTK's ``Trace`` defaults: 10
    and 100); with ``gradient=True`` also about its gradient in the backward pass; ``values``
    first entries shown.  The line names the probe by ``say``.  Works in both modes, in static
    plans (on every replay) and in compiled steps.  See :mod:`stadyn.ops._trace`.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> import io, contextlib
        >>> sd.reset_trace_counts()
        >>> x = sd.Variable.from_numpy_array(np.ones((2, 2)), need_grad=True)
        >>> y = F.sum(F.trace(x * 3.0, say="x3", gradient=True))
        >>> out = io.StringIO()
        >>> with contextlib.redirect_stderr(out):
        ...     for _ in range(2):
        ...         y.forward(); y.backward()
        >>> print(out.getvalue().strip())
        trace x3 #1 forward (2, 2) float32: min 3 max 3 mean 3 std 0 nan 0 inf 0
        trace x3 #1 backward (2, 2) float32: min 1 max 1 mean 1 std 0 nan 0 inf 0
        trace x3 #2 forward (2, 2) float32: min 3 max 3 mean 3 std 0 nan 0 inf 0
        trace x3 #2 backward (2, 2) float32: min 1 max 1 mean 1 std 0 nan 0 inf 0
    """
    if not say:
        raise ValueError("trace: give the probe a label (say=...), which its lines carry")
    if every < 0 or first < 0 or values < 0:
        raise ValueError(f"trace {say}: every, first and values must be >= 0 "
                         f"(got {every}, {first}, {values})")
    return _trace_kernel(x, str(say), "forward", int(every), int(first), int(values),
                         bool(gradient))
