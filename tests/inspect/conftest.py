"""Shared set-up of the inspection tests: the reference models, each built in a fresh
registry."""

from __future__ import annotations

import pytest

import stadyn as sd
from stadyn.models import cifar_convnet, digits_cnn


@pytest.fixture
def tutorial_cnn():
    """NNabla's tutorial deep CNN on a batch of 16 8x8 digits: (output, registry)."""
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        y = digits_cnn(sd.Variable((16, 1, 8, 8)))
    return y, registry


@pytest.fixture
def cntk_convnet():
    """CNTK's CIFAR-10 ConvNet on a batch of 16: (output, registry)."""
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        y = cifar_convnet(sd.Variable((16, 3, 32, 32)))
    return y, registry
