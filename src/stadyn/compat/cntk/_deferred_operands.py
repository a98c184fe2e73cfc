"""The operands a waiting op (``_deferred.Deferred``) deals in: the registry of CNTK layer
classes (an operand that waits for its input), placeholders without a shape, the flag set while
``@C.Function`` probes a Python function, and :class:`UnknownOutput`, a waiting Function's output.

Example:
    >>> import stadyn.compat.cntk as C
    >>> C.relu(C.placeholder()).output.shape
    (-2,)
"""

from __future__ import annotations

from typing import Any

from . import _graph as G
from ._axis import Axis
from ._mixins import GraphObject, TensorOpsMixin, compared_output, not_a_variable
from ._variable_text import axis_mark, dims_text

__all__ = ["LAYER_CLASSES", "PROBING", "UnknownOutput", "waiting_of"]


# The classes of CNTK layers (``_layers_function.LayerFunction`` registers itself: it is above).
LAYER_CLASSES: list = []


class _Layers:
    """``isinstance(v, LayerFunction())`` against the registered layer classes."""

    def __instancecheck__(self, v) -> bool:
        return isinstance(v, tuple(LAYER_CLASSES))


def _layer_function():
    return _Layers()


def _shapeless(value: Any) -> bool:
    # (a root function given as an operand is none: its output, which the ``deferrable``
    # wrapper gives the op in its place, _adapt.root_as_output, is a waiting Function's or a
    # built one's, never a placeholder without a shape)
    return isinstance(value, GraphObject) and value.variable in G.SHAPELESS


# Set while ``@C.Function`` probes a Python function on placeholders for its untyped
# arguments: a call that would wait raises instead, and the Function is built when applied
# (``_waiting_function._Deferred``), its body run on operands with shapes.
PROBING = [False]


def _arguments_of(value: Any) -> tuple:
    """The arguments a value bound to a placeholder reads: a Function's, an output's (its
    owner's), or the value itself (an input, a placeholder)."""
    if not isinstance(value, GraphObject):
        return ()
    found = getattr(value, "arguments", None)
    if found is None:
        output = getattr(value, "is_output", False)
        found = waiting_of(value).arguments if output else (value,)
    return tuple(a for a in found if isinstance(a, GraphObject))


def _keep(layer) -> GraphObject:
    """A layer's own placeholder (CNTK names it after the layer's argument, ``keep``)."""
    return layer._own_placeholder()


class UnknownOutput(TensorOpsMixin):
    """The output of a :class:`Deferred` not built yet: CNTK 2.7's output of unknown shape
    (``(-2,)``, printed ``[???]``) and unknown dynamic axes.  An op given it waits as for its
    Function, and uses the built Function's output.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> out = C.relu(C.placeholder()).output
        >>> out.shape, out.dynamic_axes, out.is_output, out.is_placeholder
        ((-2,), (Axis('UnknownAxes'),), True, False)
    """

    is_output = True
    is_placeholder = is_input = is_parameter = is_constant = False
    is_sparse = needs_gradient = False

    def __init__(self, waiting: Any, index: int = 0, picked: bool = False):
        self.waiting = waiting  # (the waiting Function whose output it is)
        self.index = index      # (which of its Function's outputs: an LSTM's c is 1)
        # (taken from its Function's ``outputs``, an LSTM's h too: one of several once built,
        # not the built Function's only ``output``)
        self.picked = picked or bool(index)

    @property
    def owner(self) -> Any:
        """The Function whose output it is, as CNTK 2.7 gives it: the waiting Function's root
        (its primitive op, ``Plus``; a layer's block; a loaded file's root), not the
        composite."""
        return self.waiting.root_function

    def of(self, built: Any) -> Any:
        """This output of ``built``, the Function its owner built (its output ``index``)."""
        if self.picked:     # (an LSTM's h is its built Function's first output of two)
            return built.outputs[self.index]
        return getattr(built, "output", built)

    @property
    def name(self) -> str:
        """Its Function's name (CNTK 2.7's output of ``relu(p, name="r")`` is ``r``)."""
        return getattr(self.waiting, "name", "") or ""

    @property
    def shape(self) -> tuple:
        """Its Function's (``(-2,)``, unknown, unless inferred from placeholders' shapes)."""
        if self.picked:     # (an LSTM's h or c: known once its Function is built)
            typed = getattr(self.waiting, "_typed", None)
            return (-2,) if typed is None else tuple(typed.outputs[self.index].shape)
        shape = getattr(self.waiting, "shape", (-2,))
        return shape if isinstance(shape, tuple) else (-2,)

    @property
    def dynamic_axes(self) -> tuple:
        """Its Function's (CNTK's unknown ones unless the placeholders it reads give them)."""
        if isinstance(getattr(type(self.waiting), "dynamic_axes", None), property):
            return self.waiting.dynamic_axes
        return Axis.unknown_dynamic_axes()

    @property
    def dtype(self):
        """The type its operands give it (``np.float32`` for numbers and layers), None where
        it reads placeholders without a shape only (CNTK's unknown data type)."""
        return self.waiting._known_dtype()

    #: compared as a Variable is (CNTK 2.7's Variable_eq)
    compared_by_variable = True

    def __eq__(self, other) -> bool:    # (the same Function's output, as CNTK's compare)
        if other is None:
            return False
        other = compared_output(other)  # (its Function: ``w.output == w`` is True)
        if not isinstance(other, (UnknownOutput, GraphObject)):
            raise not_a_variable()      # (``out == 3``: CNTK 2.7's TypeError, as a Variable's)
        return isinstance(other, UnknownOutput) and other.waiting is self.waiting and \
            other.index == self.index

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash((id(self.waiting), self.index))

    @property
    def uid(self) -> str:
        """CNTK's ``<op><n>_Output_0`` (``Block<n>`` for a layer's), the same each time."""
        uid = self.waiting._output_uid()
        return uid[:-1] + str(self.index) if self.index else uid

    def __repr__(self) -> str:
        """``Output('Plus5_Output_0', [???], [???])`` (its name where its Function has one;
        its shape where placeholders' shapes give it, ``[? x 3]``)."""
        shape = self.shape
        dims = dims_text(shape)
        axes = self.dynamic_axes        # (known where its placeholders have none: [], [#])
        axes = "???" if axes == Axis.unknown_dynamic_axes() else ", ".join(
            axis_mark(a) for a in axes)
        return f"Output('{self.name or self.uid}', [{axes}], [{dims}])"


def waiting_of(output: Any) -> Any:
    """The Function that makes ``output``: a waiting one's (an :class:`UnknownOutput`'s
    ``waiting``, where its ``owner`` is CNTK's root op), else its ``owner``.

    Example:
        >>> import stadyn.compat.cntk as C
        >>> f = C.relu(C.placeholder())
        >>> waiting_of(f.output) is f
        True
    """
    return output.waiting if isinstance(output, UnknownOutput) else output.owner
