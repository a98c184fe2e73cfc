"""CNTK layers start from CNTK 2.7's own initial values, bit for bit.

``refs/cntk27_initial_values.npz`` holds what CNTK 2.7 gives the parameters of Dense,
Convolution, ConvolutionTranspose, Embedding, LSTM (with peepholes, with a projection and
stabilisers), GRU and RNNStep layers, a Dropout between Dense layers and plain parameters
(``glorot_uniform``, ``uniform``, ``xavier``, ``he_uniform``), built one after the other in a
fresh process by ``refs/make_cntk_initial_values.py``.  The same build runs here on
``stadyn.compat.cntk`` from the start of CNTK's count of seeds (``sd.seed(0)``): every value
must be equal, which pins down the generator (mt19937_64), the draw, the fans, and which
parameters take a seed in which order (a layer takes its seeds when it is made, a Dropout one,
a constant or a seeded initialiser none).
"""

import os
import sys

import numpy as np
import pytest

import stadyn as sd
import stadyn.compat.cntk as C
from stadyn._random import set_fixed_seed

REFS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "refs")
sys.path.insert(0, REFS)

from make_cntk_initial_values import build  # noqa: E402


@pytest.fixture(scope="module")
def values():
    sd.seed(0)
    try:
        with sd.parameter_registry(sd.ParameterRegistry()):
            return build(C)
    finally:
        set_fixed_seed(None)            # the build fixes CNTK's seed at its end


REFERENCE = np.load(os.path.join(REFS, "cntk27_initial_values.npz"))


@pytest.mark.parametrize("name", REFERENCE.files)
def test_initial_value_equals_cntk_27s(values, name):
    expected = REFERENCE[name]
    assert name in values
    assert values[name].shape == expected.shape
    assert np.array_equal(values[name], expected), (values[name].ravel()[:4],
                                                   expected.ravel()[:4])


def test_a_layer_takes_its_seed_when_it_is_made_not_when_it_is_first_called():
    x = C.input_variable(3)
    sd.seed(0)
    first, second = C.layers.Dense(2), C.layers.Dense(2)
    second(x)
    first(x)                            # called last, made first: CNTK's seed 0
    sd.seed(0)
    alone = C.layers.Dense(2)
    alone(x)
    assert np.array_equal(first.W.value, alone.W.value)
    assert not np.array_equal(second.W.value, alone.W.value)
