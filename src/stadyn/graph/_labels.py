"""Profiler labels: while :func:`stadyn.profile` records, each op call runs inside a
``torch.profiler.record_function`` range named by its scope and op (``'cnn/conv1/convolution'``),
in dynamic mode and in static plans built while it records (the plan's build — a trace that
runs each labelled op once — is one range of its own, :data:`BUILD_LABEL`).

Off (the default), an op call pays one flag test.
"""

from __future__ import annotations

__all__ = ["labels_enabled", "set_labels", "op_label", "LABEL_PREFIX", "BUILD_LABEL"]

#: Stadyn's own PyTorch custom ops live in the ``stadyn_kernels`` namespace, so the profiler
#: events of their calls never read as op labels.
LABEL_PREFIX = "stadyn::"
BUILD_LABEL = "(building a static plan)"     # the range around a plan built while labelling
_active = [0]


def labels_enabled() -> bool:
    """Whether op calls are being labelled for the profiler."""
    return _active[0] > 0


def set_labels(on: bool) -> None:
    """Start (``True``) or stop (``False``) labelling op calls; calls nest."""
    _active[0] += 1 if on else -1


def op_label(op: str, scope: str) -> str:
    """The profiler range name of an op call: ``'stadyn::cnn/conv1/convolution'``.

    Example:
        >>> from stadyn.graph._labels import op_label
        >>> op_label("convolution", "cnn/conv1"), op_label("relu", "")
        ('stadyn::cnn/conv1/convolution', 'stadyn::relu')
    """
    return f"{LABEL_PREFIX}{scope}/{op}" if scope else f"{LABEL_PREFIX}{op}"
