"""Profiler labels: while :func:`stadyn.profile` records, each op call runs inside a
``torch.profiler.record_function`` range named by its scope and op (``'cnn/conv1/convolution'``),
in dynamic mode and in static plans built while it records (the plan's build — a trace that
runs each labelled op once — is one range of its own, :data:`BUILD_LABEL`).

A static plan's backward program is labelled too: while a labelled graph is traced for its
backward, :func:`label_backward` brackets every autograd node an op's forward created with a
pre-hook and a hook that enter and leave a range named by the op (:func:`backward_label`), so
the traced backward holds the range markers around that node's ATen ops.  :func:`is_range_marker`
lets the forward/backward split keep a range with the ops it brackets, and :func:`tidy_ranges`
drops ranges left empty by the passes and joins neighbouring ranges of one op.

Off (the default), an op call pays one flag test, and plans built while it is off hold no
markers.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch
import torch.fx as fx

__all__ = ["labels_enabled", "set_labels", "labels_off", "op_label", "backward_label",
           "label_backward", "is_range_marker", "place_ranges", "tidy_ranges", "LABEL_PREFIX",
           "BUILD_LABEL", "BACKWARD_SUFFIX"]

#: Stadyn's own PyTorch custom ops live in the ``stadyn_kernels`` namespace, so the profiler
#: events of their calls never read as op labels.
LABEL_PREFIX = "stadyn::"
BUILD_LABEL = "(building a static plan)"     # the range around a plan built while labelling
BACKWARD_SUFFIX = " (backward)"              # ends the range name of an op's backward
_ENTER = torch.ops.profiler._record_function_enter_new.default
_EXIT = torch.ops.profiler._record_function_exit._RecordFunction
_active = [0]


def labels_enabled() -> bool:
    """Whether op calls are being labelled for the profiler."""
    return _active[0] > 0


def set_labels(on: bool) -> None:
    """Start (``True``) or stop (``False``) labelling op calls; calls nest."""
    _active[0] += 1 if on else -1


@contextmanager
def labels_off() -> Iterator[None]:
    """Op calls inside are not labelled, even while the profiler records (a program whose
    ops a compiler fuses has no per-op time to show).

    Example:
        >>> from stadyn.graph._labels import labels_enabled, labels_off, set_labels
        >>> set_labels(True)
        >>> with labels_off():
        ...     labels_enabled()
        False
        >>> labels_enabled(); set_labels(False)
        True
    """
    saved, _active[0] = _active[0], 0
    try:
        yield
    finally:
        _active[0] = saved


def op_label(op: str, scope: str) -> str:
    """The profiler range name of an op call: ``'stadyn::cnn/conv1/convolution'``.

    Example:
        >>> from stadyn.graph._labels import op_label
        >>> op_label("convolution", "cnn/conv1"), op_label("relu", "")
        ('stadyn::cnn/conv1/convolution', 'stadyn::relu')
    """
    return f"{LABEL_PREFIX}{scope}/{op}" if scope else f"{LABEL_PREFIX}{op}"


def backward_label(op: str, scope: str) -> str:
    """The profiler range name of an op's backward in a static plan.

    Example:
        >>> from stadyn.graph._labels import backward_label
        >>> backward_label("convolution", "cnn/conv1")
        'stadyn::cnn/conv1/convolution (backward)'
    """
    return op_label(op, scope) + BACKWARD_SUFFIX


def label_backward(outputs, label: str, seen: set) -> None:
    """Bracket each autograd node that made ``outputs`` and is not in ``seen`` (the nodes of
    the ops before) with a range named ``label``: the node's pre-hook enters it, its hook
    leaves it.  Run while tracing, the range's markers land in the traced backward around the
    node's ATen ops; the autograd graph is the trace's own and is dropped with it.

    Example:
        >>> import torch
        >>> x = torch.ones(2, requires_grad=True)
        >>> seen = set()
        >>> y = (x * 2).sum()
        >>> label_backward(y, "stadyn::y (backward)", seen)
        >>> sorted(type(n).__name__ for n in seen)
        ['MulBackward0', 'SumBackward0']
        >>> with torch.profiler.profile() as prof:
        ...     _ = torch.autograd.grad(y, x)
        >>> sum(e.name == "stadyn::y (backward)" for e in prof.events())
        2
    """
    ranges: list = []

    def enter(grad_outputs):
        ranges.append(torch.profiler.record_function(label))
        ranges[-1].__enter__()

    def leave(grad_inputs, grad_outputs):
        ranges.pop().__exit__(None, None, None)

    stack = [t.grad_fn for t in ([outputs] if isinstance(outputs, torch.Tensor) else outputs)
             if isinstance(t, torch.Tensor) and t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or node in seen or not hasattr(node, "register_prehook") \
                or type(node).__name__ == "AccumulateGrad":
            continue
        seen.add(node)
        node.register_prehook(enter)
        node.register_hook(leave)
        stack.extend(n for n, _ in node.next_functions)


def is_range_marker(n: fx.Node) -> bool:
    """Is ``n`` a traced ``record_function`` marker (a range's start or end)?"""
    return n.op == "call_function" and n.target in (_ENTER, _EXIT)


def place_ranges(graph: fx.Graph, forward: set, backward: set) -> tuple[set, set]:
    """Split the range markers of a traced joint program between its forward and backward
    programs (``forward``, ``backward``: the other nodes of each): a range goes with the
    program that holds the ops it brackets (the forward when both do); a range around no op of
    either is dropped.  Returns ``(forward markers, backward markers)``."""
    holds: dict[fx.Node, set] = {}
    open_ranges: list[fx.Node] = []
    for n in graph.nodes:
        if n.op != "call_function":
            continue
        if n.target is _ENTER:
            holds[n] = set()
            open_ranges.append(n)
        elif n.target is _EXIT:
            if n.args[0] in open_ranges:
                open_ranges.remove(n.args[0])
        elif open_ranges:
            where = "fw" if n in forward else "bw" if n in backward else None
            if where is not None:
                for r in open_ranges:
                    holds[r].add(where)
    fw_markers: set = set()
    bw_markers: set = set()
    for enter, where in holds.items():
        side = fw_markers if "fw" in where else bw_markers if "bw" in where else None
        if side is not None:
            side.add(enter)
            side.update(u for u in enter.users if u.target is _EXIT)
    return fw_markers, bw_markers


def tidy_ranges(gm: fx.GraphModule) -> fx.GraphModule:
    """Drop the ranges that bracket no op and join a range's end to the start of the next
    range of the same name when no op lies between them.

    Example:
        >>> import torch
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> def f(x):
        ...     with torch.profiler.record_function("a"):
        ...         y = x + 1
        ...     with torch.profiler.record_function("a"):
        ...         y = y * 2
        ...     with torch.profiler.record_function("b"):
        ...         pass
        ...     return y
        >>> gm = tidy_ranges(make_fx(f)(torch.ones(2)))
        >>> [n.target.__name__ for n in gm.graph.nodes if n.op == "call_function"]
        ['_record_function_enter_new.default', 'add.Tensor', 'mul.Tensor',
         '_record_function_exit._RecordFunction']
    """
    graph = gm.graph
    changed = False
    open_end: dict[str, fx.Node] = {}     # the last end of a range by name, if nothing followed
    for n in list(graph.nodes):
        if n.op != "call_function":
            continue
        if n.target is _ENTER:
            name = n.args[0]
            end = open_end.pop(name, None)
            ends = [u for u in n.users if u.target is _EXIT]
            if end is not None and len(ends) == 1:
                # ...end(a) start(a)...: the first range runs on to the second one's end.
                ends[0].args = (end.args[0],)
                graph.erase_node(end)
                graph.erase_node(n)
                changed = True
            continue
        if n.target is _EXIT:
            enter = n.args[0]
            if enter.next is n:                  # start, end: an empty range
                graph.erase_node(n)
                graph.erase_node(enter)
                changed = True
                continue
            open_end.clear()
            open_end[enter.args[0]] = n
            continue
        open_end.clear()
    if changed:
        graph.lint()
        gm.recompile()
    return gm
