"""The interface the NNabla and CNTK import rules of the op rules are written against.

An import rule (``OpRules.nnp_import``, ``OpRules.cntk_import``) receives a :class:`LegacyNode`:
one function of a decoded NNabla or CNTK network (:mod:`._legacy_ir`) whose inputs the importer
(:mod:`._legacy_import`) has already built as Stadyn Variables.  A rule that cannot express one
particular call raises :class:`MappingUnsupported` through ``unsupported(reason)``; the importer
turns it into an error naming the file, the function, its type and the reason.
"""

from __future__ import annotations

import abc
from typing import Any, Callable, NoReturn

from .._errors import StadynError

__all__ = ["LegacyNode", "MappingUnsupported", "MappingRefusedAtRun"]


class MappingUnsupported(StadynError, ValueError):
    """A rule cannot express this particular call (raised through ``unsupported``)."""


class MappingRefusedAtRun(MappingUnsupported, RuntimeError):
    """A call the framework builds but refuses when its graph runs (CNTK 2.7's RuntimeError
    when it validates the network), raised through ``refused_at_run``."""


class LegacyNode(abc.ABC):
    """One function of a decoded NNabla or CNTK network as an import rule sees it.

    ``type`` is the format's op type (``"Convolution"``, ``"RectifiedLinear"``), ``attrs`` its
    attributes as the decoder gives them (NNabla: the ``<type>_param`` fields present in the
    file -- proto3 text leaves out zeros, so :meth:`field` fills them in; CNTK 2: as CNTK's Python
    API shows them; CNTK v1: the node's stored fields).  Inputs are Stadyn Variables in the
    file's order (CNTK 2's ``Times`` keeps its C++ order ``(W, x)``).

    Example (an import rule)::

        def _leaky_relu_nnp(node):
            return F.leaky_relu(node.var(0), node.field("alpha", float))
    """

    type: str
    name: str
    attrs: dict[str, Any]
    n_outputs: int
    #: whose numbers the file's random functions draw: ``"torch"`` (Stadyn's own, the
    #: default) or ``"nnabla"`` (NNabla 1.39's CPU numbers: ``load_nnp(..., draws="nnabla")``,
    #: as compat.nnabla's loaders load a file)
    draws: str = "torch"

    def attr(self, name: str, default: Any = None) -> Any:
        """The attribute ``name`` as decoded (``default`` if absent)."""
        return self.attrs.get(name, default)

    def field(self, name: str, kind: type, default: Any = None) -> Any:
        """An NNabla parameter field: absent means proto3's zero of ``kind`` (``0``, ``0.0``,
        ``False``, ``""``, ``()`` for a ``tuple`` (a ``Shape``), ``[]`` for a ``list`` (a
        repeated field)) unless ``default`` is given; a value of the wrong type is
        unsupported."""
        if name not in self.attrs:
            return kind() if default is None else default
        value = self.attrs[name]
        try:
            if kind is tuple:
                if isinstance(value, dict) and not value:      # an empty Shape message
                    return ()
                if not isinstance(value, tuple):
                    raise TypeError
                return tuple(int(v) for v in value)
            if kind is list:
                items = value if isinstance(value, list) else [value]
                if any(isinstance(v, (dict, tuple, list)) for v in items):
                    raise TypeError
                return list(items)
            if kind is bool:
                if not isinstance(value, bool):
                    raise TypeError
                return value
            if kind is str:
                if not isinstance(value, str):
                    raise TypeError
                return value
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError
            if kind is int and value != int(value):
                raise TypeError
            return kind(value)
        except (TypeError, ValueError):
            self.unsupported(f"field {name!r} holds {value!r}, not a {kind.__name__}")

    @property
    @abc.abstractmethod
    def n_inputs(self) -> int:
        """How many inputs the function has."""

    @abc.abstractmethod
    def var(self, i: int) -> Any:
        """Input ``i`` as a Stadyn Variable."""

    @abc.abstractmethod
    def shape(self, i: int) -> tuple[int, ...]:
        """The static shape of input ``i`` as built (the batch axis first where it has one)."""

    @abc.abstractmethod
    def batched(self, i: int) -> bool:
        """Whether input ``i`` has the batch axis first (a data input or what is computed
        from one; parameters and constants have none)."""

    def lead(self, i: int) -> int:
        """How many leading axes of input ``i`` are not sample axes: 0 for a parameter or
        constant, 1 for the batch axis, 2 for a CNTK sequence (batch and sequence axes)."""
        return 1 if self.batched(i) else 0

    #: set by :meth:`reduces_dynamic_axes`: the outputs have no batch (or sequence) axis
    outputs_unbatched: bool = False

    def reduces_dynamic_axes(self) -> None:
        """Say that this function's outputs have no batch axis although an input has one (a
        CNTK reduction over ``Axis.all_axes()``, whose output is one value for the whole
        minibatch); called by a rule before it returns."""
        self.outputs_unbatched = True

    def producer(self, i: int) -> "tuple[str, str]":
        """``(uid, op type)`` of what the file computes input ``i`` with, as the file names
        them (a CNTK input: ``("Input3", "InputValue")``; a function: ``("Softmax5",
        "Softmax")``); ``("", "")`` where the builder does not know."""
        return "", ""

    @abc.abstractmethod
    def const(self, i: int) -> Any:
        """Input ``i``'s value as a NumPy array when it is known before the graph runs (a
        parameter or constant of the file); unsupported otherwise."""

    def unsupported(self, reason: str) -> NoReturn:
        """Give up on this function: raises :class:`MappingUnsupported` with ``reason``."""
        raise MappingUnsupported(reason)

    def refused_at_run(self, reason: str) -> NoReturn:
        """Give up on a call the framework itself refuses when it runs: raises
        :class:`MappingRefusedAtRun` (a RuntimeError too) with ``reason``, the framework's
        words."""
        raise MappingRefusedAtRun(reason)

    def refuse_when_run(self, value: Any, reason: str, error: type = RuntimeError,
                        when: "Callable[[], bool] | None" = None) -> Any:
        """``value`` (this function's output, or a stand-in), marked so that running the loaded
        graph raises ``error`` with ``reason``, the framework's words, where the framework
        loads the file but refuses it when it runs (``Network.refused_at_run``); ``when``:
        refused only by the runs it tells (called once a run's data are in the inputs; True:
        refuse), where the framework refuses some data and computes others.  By default, a
        refusal at loading (:meth:`refused_at_run`)."""
        self.refused_at_run(reason)
