"""The two small interfaces an op's ONNX rules are written against.

Neither ops nor their rules import onnx: an export rule (``OpRules.onnx_export``, see
:mod:`.op_rules`) receives an :class:`Emitter`, an import rule (``OpRules.onnx_import``) an
:class:`ImportedNode`.  Both are abstract here; the exporter (:mod:`._onnx_export`) and the
importer (:mod:`._onnx_import`) implement them.  A rule that cannot express one particular call
(an attribute combination, a dtype) calls ``unsupported(reason)``, which raises
:class:`OnnxUnsupported`; the exporter and importer turn it
into an error naming the op, its scope and the reason.
"""

from __future__ import annotations

import abc
from typing import Any, NoReturn, Sequence

import numpy as np

from .._errors import StadynError

__all__ = ["Emitter", "ImportedNode", "OnnxUnsupported", "ExportError", "INT64_MAX"]

INT64_MAX = 2 ** 63 - 1


class ExportError(StadynError, ValueError):
    """A graph cannot be written as asked: an op without an ONNX mapping, an attribute value a
    model file cannot hold, a ``sd.grad`` node.  The message names the op and its scope."""


class OnnxUnsupported(StadynError, ValueError):
    """An ONNX mapping cannot express this particular call (raised through ``unsupported``).

    ``needs_constant`` names the ONNX input whose value the mapping needed when the graph is
    built (a shape, axes, pads) but which is a graph input; binding it with
    ``import_onnx(..., constants={name: value})`` lets the import go on."""

    def __init__(self, message: str, needs_constant: str | None = None):
        super().__init__(message)
        self.needs_constant = needs_constant


class Emitter(abc.ABC):
    """Builds an ONNX graph for the export mappings.

    Names are strings; every graph tensor the exporter hands to a mapping has a known static
    shape and dtype (``shape``, ``dtype``) and knows whether its first axis is the dynamic batch
    axis (``batch``).  Tensors a mapping creates itself have none of these.

    Example (an export mapping)::

        def _relu6_onnx(g, inputs, attrs):
            x, = inputs
            return g.op("Clip", [x, g.scalar(0.0, x), g.scalar(6.0, x)])
    """

    opset: int

    # -- primitives -----------------------------------------------------------------------------
    @abc.abstractmethod
    def op(self, op_type: str, inputs: Sequence[str], n_outputs: int = 1, **attrs: Any
           ) -> Any:
        """Emit one ONNX node; returns its output name (a list of names if ``n_outputs > 1``).

        Attribute values: int/bool, float, str, lists of ints or floats, NumPy arrays (tensors).
        """

    @abc.abstractmethod
    def const(self, value: Any, dtype: Any = None) -> str:
        """A constant (an initializer) holding ``value``; Python ints become int64, floats
        float32 unless ``dtype`` says otherwise."""

    @abc.abstractmethod
    def shape(self, name: str) -> tuple[int, ...]:
        """The static shape of a graph tensor (the size it had when the graph was built)."""

    @abc.abstractmethod
    def dtype(self, name: str) -> np.dtype:
        """The element type of a graph tensor."""

    @abc.abstractmethod
    def batch(self, name: str) -> bool:
        """True if the tensor's first axis is the (dynamic) batch axis."""

    def unsupported(self, reason: str) -> NoReturn:
        """Give up on this node: raises :class:`OnnxUnsupported` with ``reason``."""
        raise OnnxUnsupported(reason)

    # -- helpers built on the primitives --------------------------------------------------------
    def ndim(self, name: str) -> int:
        return len(self.shape(name))

    def ints(self, values: Sequence[int]) -> str:
        """A 1-D int64 constant (shapes, axes, pads)."""
        return self.const(np.asarray([int(v) for v in values], dtype=np.int64))

    def scalar(self, value: float, like: str) -> str:
        """A 0-d constant of ``like``'s dtype."""
        return self.const(np.asarray(value, dtype=self.dtype(like)))

    def cast(self, x: str, dtype: Any) -> str:
        """``x`` converted to ``dtype`` (a NumPy dtype or its name)."""
        return self.op("Cast", [x], to=np.dtype(dtype))

    def reduce(self, op_type: str, x: str, axes: Sequence[int] | None, keepdims: bool) -> str:
        """``ReduceSum``/``ReduceMean``/... over ``axes`` (None: every axis), whichever way the
        target opset takes the axes (an input from opset 18, ReduceSum from 13)."""
        if axes is not None and len(axes) == 0:
            return self.op("Identity", [x])
        as_input = op_type == "ReduceSum" or self.opset >= 18
        if axes is None:
            return self.op(op_type, [x], keepdims=int(keepdims))
        if as_input:
            return self.op(op_type, [x, self.ints(axes)], keepdims=int(keepdims))
        return self.op(op_type, [x], axes=[int(a) for a in axes], keepdims=int(keepdims))

    def reshape(self, x: str, shape: Sequence[int]) -> str:
        """``Reshape`` to ``shape`` (``0`` copies the input's size on that axis, ``-1`` infers)."""
        return self.op("Reshape", [x, self.ints(shape)])

    def unsqueeze(self, x: str, axes: Sequence[int]) -> str:
        return self.op("Unsqueeze", [x, self.ints(axes)])

    def squeeze(self, x: str, axes: Sequence[int]) -> str:
        return self.op("Squeeze", [x, self.ints(axes)])


class ImportedNode(abc.ABC):
    """One ONNX node as an import mapping sees it: attributes as Python values, inputs as Stadyn
    Variables or, where the mapping needs a value at build time (a shape, pads, axes), as NumPy
    arrays.

    Example (an import mapping)::

        def _leaky_relu_import(node):
            return leaky_relu(node.var(0), node.attr("alpha", 0.01))
    """

    op_type: str
    name: str
    opset: int
    attrs: dict[str, Any]
    n_outputs: int

    def attr(self, name: str, default: Any = None) -> Any:
        """The attribute ``name`` (ints, floats, strings, lists, NumPy arrays for tensors)."""
        return self.attrs.get(name, default)

    @property
    @abc.abstractmethod
    def n_inputs(self) -> int:
        """How many input slots the node has (absent optional inputs included)."""

    @abc.abstractmethod
    def has(self, i: int) -> bool:
        """True if input ``i`` is given (not absent, not the empty name)."""

    @abc.abstractmethod
    def var(self, i: int, need_grad: bool | None = None) -> Any:
        """Input ``i`` as a Variable (a constant input becomes a parameter or a constant leaf;
        ``need_grad`` overrides whether a parameter made from it is trained)."""

    @abc.abstractmethod
    def const(self, i: int, default: Any = None) -> Any:
        """Input ``i`` as a NumPy array (``default`` if absent); not a constant: unsupported."""

    @abc.abstractmethod
    def is_const(self, i: int) -> bool:
        """True if input ``i`` is known when the graph is built (an initializer, a Constant)."""

    @abc.abstractmethod
    def shape(self, i: int) -> tuple[int, ...]:
        """The static shape of input ``i``."""

    @abc.abstractmethod
    def dtype(self, i: int) -> np.dtype:
        """The element type of input ``i``."""

    @abc.abstractmethod
    def constant_variable(self, value: np.ndarray) -> Any:
        """A leaf Variable holding ``value`` (no gradient), e.g. for ``Constant``."""

    def unsupported(self, reason: str) -> NoReturn:
        """Give up on this node: raises :class:`OnnxUnsupported` with ``reason``."""
        raise OnnxUnsupported(reason)
