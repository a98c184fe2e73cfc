"""``sd.trace``: watch a value inside a graph as it trains, like CNTK's ``Trace`` node.

It is :func:`stadyn.functions.trace` (the op, ``F.trace``) with the probe's label defaulting to
the line of your script that placed it.
"""

from __future__ import annotations

from ..graph import Variable, user_location, format_location
from ..ops import function_of
from ..ops import reset_trace_counts

__all__ = ["trace", "reset_trace_counts"]

_trace_op = function_of("trace")


def trace(variable: Variable, every: int = 100, *, say: str | None = None, first: int = 10,
          gradient: bool = False, values: int = 0) -> Variable:
    """``variable`` unchanged; each time the graph runs, a line about its value goes to
    standard error (label, execution count, shape, min/max/mean/std, NaN and Inf counts, and
    the first ``values`` entries): the first ``first`` executions, then every ``every``-th, and
    with ``gradient=True`` its gradient too.  Use the returned Variable in place of the original
    so the probe is on the path the graph computes.  Static plans keep the probe on every replay.

    ``say`` labels the lines; by default it is ``file:line`` of the call.

    Example:
        >>> import io, contextlib, numpy as np, stadyn as sd, stadyn.functions as F
        >>> sd.reset_trace_counts()
        >>> x = sd.Variable.from_numpy_array(np.array([[0.5, -1.0]]), need_grad=True)
        >>> h = sd.trace(F.relu(x), every=2, first=1, say="relu")
        >>> loss = F.sum(h)
        >>> out = io.StringIO()
        >>> with contextlib.redirect_stderr(out):
        ...     for step in range(4):
        ...         loss.forward()
        >>> print(out.getvalue().strip())
        trace relu #1 forward (1, 2) float32: min 0 max 0.5 mean 0.25 std 0.25 nan 0 inf 0
        trace relu #2 forward (1, 2) float32: min 0 max 0.5 mean 0.25 std 0.25 nan 0 inf 0
        trace relu #4 forward (1, 2) float32: min 0 max 0.5 mean 0.25 std 0.25 nan 0 inf 0
    """
    if say is None:
        say = format_location(user_location()) or "trace"
    return _trace_op(variable, say=say, every=every, first=first, gradient=gradient,
                     values=values)

