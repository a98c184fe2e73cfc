"""Shared set-up of the inspection tests: the reference models, each built in a fresh
registry."""

from __future__ import annotations

import pytest

import stadyn as sd
from stadyn.models import cifar_convnet, digits_cnn


def _built(model, shape):
    """``(model(Variable(shape)), its registry)``."""
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        y = model(sd.Variable(shape))
    return y, registry


@pytest.fixture
def tutorial_cnn():
    """NNabla's tutorial deep CNN on a batch of 16 8x8 digits: (output, registry)."""
    return _built(digits_cnn, (16, 1, 8, 8))


@pytest.fixture
def cntk_convnet():
    """CNTK's CIFAR-10 ConvNet on a batch of 16: (output, registry)."""
    return _built(cifar_convnet, (16, 3, 32, 32))
