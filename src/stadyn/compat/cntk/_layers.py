"""``cntk.layers`` (and the 2017 betas' ``cntk.models``) on Stadyn's layers."""

from __future__ import annotations

import contextlib
from typing import Any

from ... import layers as _L
from ._function import Function, cntk_name, unwrap, wrap

__all__ = ["Sequential", "For", "LayerStack", "default_options",
           "default_options_for", "Dense", "Convolution", "Convolution1D", "Convolution2D",
           "Convolution3D", "ConvolutionTranspose", "MaxPooling", "AveragePooling",
           "GlobalMaxPooling", "GlobalAveragePooling", "Dropout", "BatchNormalization",
           "Embedding", "Activation", "Label", "Identity"]


class LayerFunction:
    """A CNTK layer: callable on CNTK Functions, holding a Stadyn layer."""

    def __init__(self, layer: _L.Layer):
        self.layer = layer

    def __call__(self, *args):
        return wrap(self.layer(*unwrap(args)))

    @property
    def parameters(self):
        """The layer's parameters (after its first call), with CNTK's names."""
        return [Function(p, cntk_name(p), "parameter") for p in self.layer.parameters]

    def __rshift__(self, other):
        return Sequential([self, other])

    def __repr__(self) -> str:
        return f"<cntk layer {self.layer!r}>"


def _native(value: Any) -> Any:
    """The Stadyn object behind a CNTK-facing one (layers, adapted functions; recursively)."""
    if isinstance(value, LayerFunction):
        return value.layer
    if isinstance(value, list):
        return [_native(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_native(v) for v in value)
    return getattr(value, "__wrapped__", value) if callable(value) else value


def _layer(cls):
    def make(*args, **kwargs):
        return LayerFunction(cls(*_native(args), **{k: _native(v) for k, v in kwargs.items()}))
    make.__name__ = getattr(cls, "__name__", "layer")
    make.__doc__ = cls.__doc__
    return make


Dense = _layer(_L.Dense)
Convolution = _layer(_L.Convolution)
Convolution1D = _layer(_L.Convolution1D)
Convolution2D = _layer(_L.Convolution2D)
Convolution3D = _layer(_L.Convolution3D)
ConvolutionTranspose = _layer(_L.ConvolutionTranspose)
MaxPooling = _layer(_L.MaxPooling)
AveragePooling = _layer(_L.AveragePooling)
GlobalMaxPooling = _layer(_L.GlobalMaxPooling)
GlobalAveragePooling = _layer(_L.GlobalAveragePooling)
Dropout = _layer(_L.Dropout)
BatchNormalization = _layer(_L.BatchNormalization)
Embedding = _layer(_L.Embedding)
Activation = _layer(_L.Activation)
Label = _layer(_L.Label)
Identity = _layer(_L.Identity)


def Sequential(layers, name: str = "") -> LayerFunction:
    """``cntk.layers.Sequential``: lists flatten, tuples are parallel branches."""
    return LayerFunction(_L.Sequential(_native(list(layers)), name=name))


def For(what_range, constructor, name: str = "") -> LayerFunction:
    """``cntk.layers.For(range, lambda i: ...)``."""
    return LayerFunction(_L.For(what_range, _native_constructor(constructor), name=name))


def LayerStack(n: int, constructor) -> LayerFunction:
    """The 2017 betas' ``cntk.models.LayerStack(n, lambda [i]: ...)``."""
    return LayerFunction(_L.LayerStack(n, _native_constructor(constructor)))


def _native_constructor(constructor):
    import inspect
    try:
        takes_index = len(inspect.signature(constructor).parameters) > 0
    except (TypeError, ValueError):
        takes_index = True
    if takes_index:
        return lambda i: _native(constructor(i))
    return lambda: _native(constructor())


@contextlib.contextmanager
def default_options(**kwargs):
    """``cntk.layers.default_options``: override layer defaults (activations may be CNTK's)."""
    with _L.default_options(**{k: _native(v) for k, v in kwargs.items()}):
        yield


@contextlib.contextmanager
def default_options_for(functions, **kwargs):
    with _L.default_options_for(functions, **{k: _native(v) for k, v in kwargs.items()}):
        yield
