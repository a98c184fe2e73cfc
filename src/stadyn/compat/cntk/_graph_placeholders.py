"""CNTK placeholders in Stadyn's graph: binding a placeholder made without a shape, a
placeholder standing for a value, and splicing a substitute in place of one (its sequence axis
followed by every value computed from it).  Re-exported by ``_graph``."""

from __future__ import annotations

from ...graph import Variable, is_lengths, new_lengths, set_sequence_axis, topological_nodes
from ._graph_records import BATCH, PLACEHOLDERS, SEQUENCE_AXES, SHAPELESS


def bind_placeholder(ph: Variable, shape: tuple, batched: bool) -> None:
    """Give a placeholder made without a shape the ``shape`` (and batch axis) of what it
    stands for."""
    ph.reset_shape(shape)
    SHAPELESS.discard(ph)
    if batched:
        BATCH.add(ph)


def placeholder_like(v: Variable) -> Variable:
    """A placeholder of ``v``'s shape (its batch and sequence axes too, of size 1 as in a graph
    not run yet: ``v`` may hold the last run's) standing for it."""
    lead = (2 if v.sequence_lengths is not None else 1) if BATCH(v) else 0
    ph = Variable((1,) * lead + tuple(v.shape[lead:]), dtype=v.dtype)
    PLACEHOLDERS[ph] = ""
    if BATCH(v):
        BATCH.add(ph)
    if v.sequence_lengths is not None:
        set_sequence_axis(ph, new_lengths())
        BATCH.forget()
    return ph


def replace_placeholder(ph: Variable, new: Variable) -> None:
    """Splice ``new`` into the graph in place of the placeholder ``ph``: whatever was computed
    from ``ph`` is computed from ``new`` from now on."""
    from ... import functions as F
    if ph not in PLACEHOLDERS:
        raise ValueError("replace_placeholders: only placeholders can be replaced")
    if ph in SHAPELESS:
        bind_placeholder(ph, new.shape, BATCH(new))
    elif _sample_shape(ph, new) != _sample_shape(new, ph):
        raise ValueError(f"replace_placeholders: a placeholder of shape {ph.shape} cannot take "
                         f"a variable of shape {new.shape}")
    del PLACEHOLDERS[ph]
    follow_sequence_axis(ph, new)
    ph.rewire_as(F.identity(new))     # (its op knows it as its output: plans find it)
    BATCH.forget()


def _sample_shape(v: Variable, other: Variable) -> tuple:
    """``v``'s shape without its batch axis, and without its sequence axis where ``other`` has
    one too (whose length is the last run's)."""
    both = v.sequence_lengths is not None and other.sequence_lengths is not None
    return tuple(v.shape[(2 if both else 1) if BATCH(v) else 0:])


def follow_sequence_axis(ph: Variable, new: Variable) -> None:
    """The placeholder ``ph``'s sequence axis becomes ``new``'s: the lengths made for ``ph``
    are computed as ``new``'s from now on, so every value computed from ``ph`` on its axis --
    also one outside the graph ``replace_placeholders`` was called on -- runs over ``new``'s
    steps (as CNTK's, whose placeholder takes its substitute's dynamic axes)."""
    from ... import functions as F
    old, lengths = ph.sequence_lengths, new.sequence_lengths
    if old is None or lengths is None or old is lengths or old.parent is not None \
            or not is_lengths(old):
        return
    old.rewire_as(F.identity(lengths))
    axis = SEQUENCE_AXES.get(lengths)
    if axis is not None:
        SEQUENCE_AXES[old] = axis
    else:
        SEQUENCE_AXES.pop(old, None)


def reads(roots: list, ph: Variable) -> bool:
    """Whether the graph computing ``roots`` (Variables) reads the placeholder ``ph`` (a root
    being ``ph`` counts): CNTK's ``replace_placeholders`` refuses one that none reads
    (:func:`not_found`).

    Example:
        >>> from stadyn import functions as F
        >>> a, b, c = Variable((2,)), Variable((2,)), Variable((2,))
        >>> y = F.add2(a, b)
        >>> reads([y], a), reads([y, c], c), reads([y], c)
        (True, True, False)
    """
    return any(r is ph for r in roots) or any(
        i is ph for n in topological_nodes(list(roots)) for i in n.inputs)


def not_found(key, function) -> ValueError:
    """CNTK 2.7's error for a placeholder ``key`` given to ``function.replace_placeholders``
    that its graph does not read."""
    return ValueError(f"Placeholder '{key}' specified for replacement not found in the "
                      f"Function '{function!r}'.")
