"""What CNTK 2.7 reports of the axes that sequence ops make and leave.

* A **new sequence axis**: ``sequence.where`` (and ``sequence.gather``, whose body is a
  ``Where``) names it ``whereNodeDynamicAxis_conditionVar_<uid of the condition>``;
  ``to_sequence`` ``<sequence_axis_name_prefix><uid of the value>`` (``toSequence_`` by
  default); ``gather`` with ``new_sequence_axis_typeinfo=(scale, add)`` derives it from the
  condition's axis (``defaultDynamicAxis_times_1_plus_2``; ``(1, 0)`` is the condition's axis
  itself), and ``sequence.slice`` from its input's (``<axis>_times_1_minus_1`` for
  ``slice(x, 0, -1)``, ``<axis>_fixedSliceOf_2`` for ``slice(x, 1, 3)``).  The name is
  recorded for the new sequences' lengths (``SEQUENCE_AXES``), so what is computed from them
  is on the same axis.
* The **unpacked steps**: ``sequence.unpack`` makes the padded step axis a static one that
  CNTK shows as a free dimension (``-3``: ``(-3, 3)`` for steps of 3, ``(-3,)`` for the mask);
  so do the values computed from it element by element (``tanh``, ``* 2``, ``+ b``).

Example:
    >>> import stadyn.compat.cntk as C
    >>> x = C.sequence.input_variable(3)
    >>> C.sequence.unpack(x, 0.0, no_mask_output=True).shape
    (-3, 3)
"""

from __future__ import annotations

from ...graph import Variable
from . import _graph as G
from ._axis import Axis

__all__ = ["FREE_DIMENSION", "value_uid", "name_new_axis", "on_derived_axis", "derived_axis_name",
           "free_steps"]

FREE_DIMENSION = -3

# op categories whose outputs line up with their inputs axis by axis (broadcasting aside)
_ELEMENTWISE = frozenset({"activation", "arithmetic", "math", "logical"})


def value_uid(v: Variable) -> str:
    """CNTK's uid of the value ``v``: ``Input3``, ``Parameter12``, ``Plus9_Output_0``."""
    uid = G.uid_of(v)
    if G.kind_of(v) != "output":
        return uid
    return f"{uid}_Output_{G.OUTPUT_INDEX.get(v, 0)}"


def name_new_axis(out: Variable, prefix: str, source: Variable) -> Variable:
    """Put the sequences of ``out`` on the axis ``prefix + uid of source``; returns ``out``."""
    return _on_axis(out, prefix + value_uid(source))


def derived_axis_name(source: Variable, scale: int, add: int) -> str:
    """The axis CNTK derives from ``source``'s sequence axis for sequences ``scale`` times as
    long plus ``add`` steps (``GetDerivedDynamicAxes``: ``gather``'s
    ``new_sequence_axis_typeinfo``, ``sequence.slice``); a slice of one step deletes the axis
    in CNTK, and is left on the default axis here."""
    base = G.SEQUENCE_AXES.get(source.sequence_lengths) if \
        source.sequence_lengths is not None else None
    name = base.name if base is not None else Axis.default_dynamic_axis().name
    if (scale, add) == (1, 0):
        return name
    if (scale, add) == (0, 1):
        return Axis.default_dynamic_axis().name
    if scale > 0:
        return f"{name}_times_{scale}" + (f"_plus_{add}" if add > 0 else f"_minus_{-add}")
    return f"{name}_fixedSliceOf_{add}"


def _on_axis(out: Variable, name: str) -> Variable:
    if out.sequence_lengths is not None and name != Axis.default_dynamic_axis().name:
        G.SEQUENCE_AXES[out.sequence_lengths] = Axis(name)
    return out


def on_derived_axis(out: Variable, name: str) -> Variable:
    """Put the sequences of ``out`` on the axis named ``name``; returns ``out``."""
    return _on_axis(out, name)


def free_steps(v: Variable) -> frozenset:
    """The axes of ``v``'s shape (batch axis included) that hold ``sequence.unpack``'s padded
    steps: those of an unpack's outputs, and of values without a sequence axis computed from
    them element by element, from inputs of the output's rank, where the axis keeps its
    size."""
    found: dict[int, frozenset] = {}
    stack = [v]
    while stack:
        u = stack.pop()
        if id(u) in found:
            continue
        node = u.parent
        if node is None:
            found[id(u)] = frozenset()
            continue
        if node.spec.name == "sequence_unpack":
            found[id(u)] = frozenset({1})
            continue
        if node.spec.category not in _ELEMENTWISE and node.spec.name != "identity":
            found[id(u)] = frozenset()
            continue
        inputs = [i for i in node.inputs if isinstance(i, Variable)]
        pending = [i for i in inputs if id(i) not in found]
        if pending:
            stack.append(u)
            stack.extend(pending)
            continue
        shape, axes = tuple(u.shape), set()
        if u.sequence_lengths is None:      # (a sequence masked by an unpack's mask is not)
            for i in inputs:
                if len(i.shape) == len(shape):
                    axes.update(a for a in found[id(i)] if shape[a] == i.shape[a])
        found[id(u)] = frozenset(axes)
    return found[id(v)]
