"""NaN and infinity tracing: :func:`check_numerics` and the checks the graph makes under it.

Under ``with sd.check_numerics():`` the first op whose output (forward) or whose gradient for
one of its inputs (backward) holds a NaN or an infinity raises :class:`~stadyn.NumericsError`
naming the op, its scope, the user's line that created it and the phase.

How it is checked, by mode:

* **dynamic** (and static graphs that run eagerly): every op's outputs are checked as they are
  made; every input that needs a gradient passes through a probe (an identity in the forward
  pass) whose backward checks the gradient this op gives that input — before it is summed with
  other ops' gradients, so the op that made a NaN is the one named.  Each check waits for the
  device: expect dynamic mode to run a few times slower.
* **static**: the lowered program runs unchanged; afterwards its outputs (forward) or the
  gradients it wrote (backward) are checked, one reduction and one wait per tensor.  Only when
  one is not finite is the step replayed op by op, with the dynamic-mode checks, to find the op.

Off (the default), none of this costs anything but one flag test per op call.

``check_numerics(nan_only=True, error=...)`` is the check a framework's own debugging switch
makes (CNTK 2.7's ``set_checked_mode``): NaN only, infinities pass, and ``error`` says what to
raise for an op's non-finite output or input gradient (or None where that op is not to be
named, e.g. an inner op of a bigger one, or where the NaN lies only in a sequence's padding).
"""

from __future__ import annotations

import contextlib
from typing import Callable, Sequence

import torch

from .._errors import NumericsError
from ._variable import Variable

__all__ = ["check_numerics", "numerics_enabled", "check_outputs", "probe_inputs",
           "not_finite", "node_label"]

_depth = [0]
# what the innermost check_numerics block checks: (nan_only, error, op_by_op), see
# check_numerics
_policy: list = []


@contextlib.contextmanager
def check_numerics(nan_only: bool = False, error: Callable | None = None,
                   op_by_op: bool = False):
    """Within this block, the first NaN or infinity an op makes is an error naming the op.

    Works in both modes and for ``forward``, ``backward``, ``Trainer`` steps and compiled-away
    static plans alike (see the module docstring for what it costs).

    With ``nan_only`` infinities pass.  ``error(node, output, input, tensor)`` chooses the
    error for a node whose output number ``output`` (forward; ``input`` None) or whose gradient
    for its input number ``input`` (backward; ``output`` None) holds ``tensor`` with a value
    that is not finite: an exception to raise, or None to let it pass.  Without it,
    :class:`~stadyn.NumericsError`.  With ``op_by_op`` a static graph runs op by op (no
    lowered program), so every op's output and every gradient is checked as it is made, not
    only the values the graph gives (a NaN that a later op hides, ``maximum(nan, 0)``, is
    found too).  The innermost block decides.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable.from_numpy_array(np.array([1.0, 0.0]))
        >>> y = F.log(x)
        >>> with sd.check_numerics():
        ...     y.forward()
        Traceback (most recent call last):
        ...
        stadyn._errors.NumericsError: log, created at <doctest ...>:1: its output holds -inf ...
    """
    _depth[0] += 1
    _policy.append((bool(nan_only), error, bool(op_by_op)))
    try:
        yield
    finally:
        _policy.pop()
        _depth[0] -= 1


def numerics_enabled() -> bool:
    """Whether a :func:`check_numerics` block is active."""
    return _depth[0] > 0


def node_label(node) -> str:
    """``'log in scope 'net/fc1', created at train.py:12'``: the op, its scope, its line.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph._numerics import node_label
        >>> with sd.parameter_scope("net"):
        ...     y = F.relu(sd.Variable((2,)))
        >>> node_label(y.parent).startswith("relu in scope 'net', created at <doctest")
        True
    """
    text = node.spec.name
    if node.scope:
        text += f" in scope '{node.scope}'"
    where = node.where
    if where:
        text += f", created at {where}"
    return text


def not_finite(t: torch.Tensor) -> str | None:
    """What is wrong with ``t`` ('NaN', 'inf', '-inf', joined) if it is a floating tensor
    holding a value that is not finite (under ``check_numerics(nan_only=True)``: a NaN); else
    None."""
    if not (isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())):
        return None
    bad = torch.isnan(t) if _policy and _policy[-1][0] else ~torch.isfinite(t)
    if not bool(bad.any()):
        return None
    kinds = []
    if bool(torch.isnan(t).any()):
        kinds.append("NaN")
    if bool((t == float("inf")).any()):
        kinds.append("inf")
    if bool((t == float("-inf")).any()):
        kinds.append("-inf")
    return f"{' and '.join(kinds)} ({int(bad.sum())} of {t.numel()} values)"


def check_outputs(node, outs) -> None:
    """Raise :class:`NumericsError` (or the check's own ``error``) if an output of ``node``
    is not finite (forward)."""
    custom = _policy[-1][1] if _policy else None
    for i, t in enumerate((outs,) if isinstance(outs, torch.Tensor) else outs):
        what = not_finite(t)
        if what is not None:
            if custom is not None:
                exc = custom(node, i, None, t)
                if exc is None:
                    continue
                raise exc
            which = "its output" if isinstance(outs, torch.Tensor) else f"its output {i}"
            raise NumericsError(f"{node_label(node)}: {which} holds {what} in the forward pass",
                                node.spec.name, node.scope, node.where, "forward")


class _Probe(torch.autograd.Function):
    """Identity forward; backward checks the gradient one op gives one of its inputs."""

    @staticmethod
    def forward(ctx, x, node, index):
        ctx.node, ctx.index = node, index
        ctx.policy = _policy[-1] if _policy else (False, None, False)   # the forward's block
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        _policy.append(ctx.policy)
        try:
            what = not_finite(grad)
        finally:
            _policy.pop()
        if what is not None:
            node, index = ctx.node, ctx.index
            custom = ctx.policy[1]
            if custom is not None:
                exc = custom(node, None, index, grad)
                if exc is None:
                    return grad, None, None
                raise exc
            source = node.inputs[index] if index < len(node.inputs) else None
            name = f" ('{source.graph_name}')" if source is not None and source.graph_name else ""
            raise NumericsError(
                f"{node_label(node)}: the gradient it gives its input {index}{name} holds "
                f"{what} in the backward pass", node.spec.name, node.scope, node.where,
                "backward")
        return grad, None, None


def probe_inputs(node, tensors: Sequence, originals: Sequence, ktensors: dict | None = None,
                 koriginals: dict | None = None) -> tuple[list, dict | None]:
    """An op call's tensor arguments (``tensors``, ``ktensors``) with each one that came from
    a Variable (``originals``, ``koriginals``) and needs a gradient passed through a probe that
    checks the gradient this op gives it.  Inputs are numbered as ``node.inputs`` numbers them."""
    out = []
    k = 0
    for t, a in zip(tensors, originals):
        if isinstance(a, Variable):
            out.append(_Probe.apply(t, node, k) if t.requires_grad else t)
            k += 1
        else:
            out.append(t)
    if not ktensors:
        return out, ktensors
    kout = {}
    for name, t in ktensors.items():
        if isinstance(koriginals[name], Variable):
            kout[name] = _Probe.apply(t, node, k) if t.requires_grad else t
            k += 1
        else:
            kout[name] = t
    return out, kout
