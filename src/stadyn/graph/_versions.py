"""Three counters the plan cache reads (``_runner.py``) to know when its plans must re-check
their leaves, be built again, or be looked up by new gradient marks."""

from __future__ import annotations

__all__ = ["layout_changed", "layout_version", "bump_graph_version", "graph_version",
           "gradient_marks_version"]

# Three counters the plan cache reads (``_runner.py``): the layout version changes when some
# leaf's shape, dtype, device or need_grad may have changed (plans then re-check their leaves'
# signature), the graph version when a graph is rewired (plans are then built again), the
# gradient marks' version when an op output's need_grad changed (plans are then looked up by
# the graph's new marks: a program flipping them back and forth reuses the plans of both).
_layout = [0]
_graph = [0]
_marks = [0]


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
