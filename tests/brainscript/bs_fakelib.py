"""A pure-Python stand-in for Stadyn's engine: layers and nodes that record how they were made.

Layer constructors and node functions carry CNTK's BrainScript signatures (parameter names,
order and defaults from CNTK.core.bs, see tests/fixtures/brainscript/library_facts.md), so a
call CNTK would reject is rejected here too; each call is recorded with exactly the arguments
the script gave.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stadyn._errors import ConfigError
from stadyn.brainscript import Library


@dataclass(eq=False)
class Node:
    """A graph node: the op that made it, its inputs and attributes."""

    op: str
    inputs: tuple = ()
    attrs: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Node({self.op})"

    def chain(self) -> list[str]:
        """Ops from the graph input up to this node, following each node's first input."""
        ops, node = [], self
        while isinstance(node, Node):
            ops.append(node.op)
            node = node.inputs[0] if node.inputs else None
        return ops[::-1]


@dataclass(eq=False)
class Layer:
    """A layer made by a layer constructor; calling it on a node makes a node."""

    kind: str
    args: tuple
    kwargs: dict

    def __call__(self, x):
        node = Node(self.kind, (x,), {"layer": self})
        activation = self.kwargs.get("activation")
        if activation is None:
            return node
        if not callable(activation):
            raise ConfigError(f"{self.kind}: activation must be a function")
        return activation(node)


# CNTK.core.bs signatures (the fake checks calls against them)
def LinearLayer(outDim, bias=True, init="glorotUniform", initValueScale=1, inputRank=None,
                mapRank=None, initBias=0): ...
def DenseLayer(outDim, bias=True, activation=None, init="glorotUniform", initValueScale=1,
               inputRank=None, mapRank=None, initBias=0): ...
def ConvolutionalLayer(numOutputChannels, filterShape, bias=True, activation=None,
                       init="glorotUniform", initValueScale=1, initBias=0, stride=1, pad=False,
                       lowerPad=0, upperPad=0, dilation=1, maxTempMemSizeInSamples=0): ...
def MaxPoolingLayer(filterShape, stride=1, pad=False, lowerPad=0, upperPad=0, ceilOutDim=False): ...
def AveragePoolingLayer(filterShape, stride=1, pad=False, lowerPad=0, upperPad=0, ceilOutDim=False,
                        includePad=False): ...
def BatchNormalizationLayer(spatialRank=0, initialScale=1, normalizationTimeConstant=5000,
                            blendTimeConstant=0, epsilon=0.00001, useCntkEngine=False,
                            disableRegularization=False): ...
def Input(dims, dynamicAxis="", sparse=False, tag="feature"): ...
def Constant(val, rows=1, cols=1, tag=""): ...
def Parameter(outputDim, inputDim, learningRateMultiplier=1.0, init="", initValueScale=1, value=0,
              initValue="", initFromFilePath="", initFromLiteral="", initOnCPUOnly=True,
              randomSeed=-1, tag=""): ...
def Times(x, y, outputRank=1, inferInputRankToMap=-1, tag=""): ...
def Plus(_, y, tag=""): ...
def CrossEntropyWithSoftmax(labelSequence, outProbVectorSequence, axis=0, tag=""): ...
def ClassificationError(labelSequence, outVectorSequence, topN=1, axis=0, tag=""): ...
def _unary(_, tag=""): ...


_LAYERS = (LinearLayer, DenseLayer, ConvolutionalLayer, MaxPoolingLayer, AveragePoolingLayer,
           BatchNormalizationLayer)
_NODES = (Input, Constant, Parameter, Times, Plus, CrossEntropyWithSoftmax, ClassificationError)
_UNARY = ("ReLU", "Sigmoid", "Tanh", "Softmax", "Dropout")


class FakeLibrary(Library):
    """Records every library call and operator hook in ``calls`` as ``(name, args, kwargs)``;
    operator hooks are recorded as ``<Op>``."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple, dict]] = []
        functions: dict[str, Callable] = {}
        for stub in _LAYERS:
            functions[stub.__name__] = self._recorder(stub.__name__, stub, Layer)
        for stub in _NODES:
            functions[stub.__name__] = self._recorder(stub.__name__, stub, Node)
        for name in _UNARY:
            functions[name] = self._recorder(name, _unary, Node)
        super().__init__(functions)

    def _recorder(self, name: str, stub: Callable, make: type) -> Callable:
        signature = inspect.signature(stub)

        def call(*args, **kwargs):
            self.calls.append((name, args, kwargs))
            return make(name, args, kwargs)

        call.__name__ = name
        call.__signature__ = signature  # the evaluator checks arguments against it
        return call

    def calls_to(self, *names: str) -> list[tuple[str, tuple, dict]]:
        return [c for c in self.calls if c[0] in names]

    # ---- engine side -------------------------------------------------------------------
    def is_node(self, value: Any) -> bool:
        return isinstance(value, Node)

    def _op(self, name: str, *inputs):
        self.calls.append((f"<{name}>", inputs, {}))
        return Node(name, inputs)

    def times(self, a, b):
        return self._op("Times", a, b)

    def element_times(self, a, b):
        return self._op("ElementTimes", a, b)

    def reciprocal(self, x):
        return self._op("Reciprocal", x)

    def plus(self, a, b):
        return self._op("Plus", a, b)

    def minus(self, a, b):
        return self._op("Minus", a, b)

    def negate(self, x):
        return self._op("Negate", x)

    def less(self, a, b):
        return self._op("Less", a, b)

    def equal(self, a, b):
        return self._op("Equal", a, b)

    def if_then_else(self, c, t, e):
        return self._op("If", c, t, e)
