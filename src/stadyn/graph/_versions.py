"""Three counters the plan cache reads (``_runner.py``) to know when its plans must re-check
their leaves, be built again, or be looked up by new gradient marks."""

from __future__ import annotations

__all__ = ["layout_changed", "layout_version", "bump_graph_version", "graph_version",
           "gradient_marks_version", "shapes_changed", "shapes_version"]

# Three counters the plan cache reads (``_runner.py``): the layout version changes when some
# leaf's shape, dtype, device or need_grad may have changed (plans then re-check their leaves'
# signature), the graph version when a graph is rewired (plans are then built again), the
# gradient marks' version when an op output's need_grad changed (plans are then looked up by
# the graph's new marks: a program flipping them back and forth reuses the plans of both).
_layout = [0]
_graph = [0]
_marks = [0]
# moved on where a Variable made before may show another shape: a run's outputs re-inferred or
# given values of another shape, a leaf fed another shape (what is worked out from shapes and
# kept -- compat.cntk's free axes of a value -- holds while it stands; building moves it not)
_shapes = [0]


def layout_changed() -> None:
    """Record that some leaf's shape, dtype, device or need_grad may have changed (static plans
    then re-check their leaves before replaying)."""
    _layout[0] += 1


def layout_version() -> int:
    """The count of :func:`layout_changed` calls (and leaf allocations) so far."""
    return _layout[0]


def bump_graph_version() -> None:
    """Invalidate every cached plan (called when a graph is rewired).

    Example:
        >>> from stadyn.graph._versions import bump_graph_version, graph_version
        >>> before = graph_version(); bump_graph_version(); graph_version() == before + 1
        True
    """
    _graph[0] += 1


def gradient_marks_version() -> int:
    """The count of changes to a Variable's ``need_grad`` (its gradient marks) so far."""
    return _marks[0]


def graph_version() -> int:
    """The count of :func:`bump_graph_version` calls so far."""
    return _graph[0]


def shapes_changed() -> None:
    """Record that a Variable made before may show another shape now (a run re-inferred or
    gave its outputs other shapes, a leaf was fed another shape).

    Example:
        >>> before = shapes_version(); shapes_changed(); shapes_version() == before + 1
        True
    """
    _shapes[0] += 1


def shapes_version() -> int:
    """The count of :func:`shapes_changed` calls so far: what is worked out from the shapes of
    a graph and kept holds while it stands.

    Example:
        >>> import torch, stadyn as sd
        >>> from stadyn.graph import shapes_version
        >>> x = sd.Variable((2, 3)); before = shapes_version()
        >>> x.data = torch.ones(2, 3); shapes_version() == before     # (the same shape)
        True
        >>> x.data = torch.ones(4, 3); shapes_version() > before
        True
    """
    return _shapes[0]
