"""A BrainScript parameter of an ``initValueScale`` that is not positive ends as cntk.exe ends it.

cntk.exe never goes through the Python API's ``CreateInitializer`` (which refuses a scale
``<= 0`` when the initializer is made): ``LearnableParameter::InitRandom``
(Source/ComputationNetworkLib/InputAndParamNodes.cpp:273-290) multiplies the distribution's
range by ``initValueScale`` and draws.  A normal kind's ``sigma <= 0`` is then refused in
``CPUMatrix``'s words (Source/Math/CPUMatrixImpl.h:1082 ``SetGaussianRandomValue``, :1103
``SetTruncatedNormalRandomValue``); a uniform kind calls Boost's
``uniform_real_distribution(-range, range)`` (CPUMatrixImpl.h:1007-1014), which for a range
``<= 0`` draws again for ever (CNTK 2.7 never returns:
tests/fixtures/cntk_uniform_endless/outcomes.json), so Stadyn refuses it with one error saying so.
``zero`` takes no scale.  Stadyn used the Python API's factories: the normal kinds were refused
in ``CreateInitializer``'s words, ``xavier`` and ``uniform`` drew (``uniform`` of -1 a range
with its sign flipped, of 0 zeros).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from stadyn.brainscript import StadynLibrary, build_network

# (BrainScript init name, cntk.exe's distribution: CPUMatrix's method that draws it)
_INITS = [("glorotUniform", "Uniform"), ("glorotNormal", "Gaussian"), ("heUniform", "Uniform"),
          ("heNormal", "Gaussian"), ("xavier", "Uniform"), ("gaussian", "Gaussian"),
          ("uniform", "Uniform"), ("uniform1", "Uniform"), ("normal", "Gaussian"),
          ("truncNormal", "TruncatedNormal")]

_NETWORK = """{
    x = Input (3)
    W = ParameterTensor ((2:3), init = '%s', initValueScale = %s)
    z = Times (W, x)
}"""


def _build(init: str, scale) -> dict:
    with sd.parameter_registry(sd.ParameterRegistry()):
        return build_network(_NETWORK % (init, scale), StadynLibrary()).record


def _refusal(method: str) -> str:
    """The message (a regular expression) cntk.exe's draw of ``method`` ends with."""
    if method == "Uniform":
        return (r"SetUniformRandomValue: the range \[\S+, \S+\) is empty: CNTK 2\.7 \(cntk\.exe "
                r"and its Python API\) never returns there .*Stadyn refuses it")
    return re.escape(f"Set{method}RandomValue: sigma must be a positive value.")


@pytest.mark.parametrize("scale", [0, -1])
@pytest.mark.parametrize("init,method", _INITS)
def test_a_scale_not_positive_ends_as_in_cntk_exe(init, method, scale):
    with pytest.raises(ConfigError) as info:
        _build(init, scale)
    # the user's line and the node, then cntk.exe's words (or, where it never returns, ours)
    assert re.fullmatch(r"<string>:3:\d+: ParameterTensor: " + _refusal(method),
                        str(info.value).splitlines()[0])


@pytest.mark.parametrize("scale", [0, -1])
def test_zero_takes_no_scale(scale):
    w = _build("zero", scale)["W"]
    np.testing.assert_array_equal(np.asarray(w.d), np.zeros((3, 2), np.float32))


def test_a_pending_parameter_is_refused_when_its_shape_is_known():
    """cntk.exe draws a parameter of an inferred dimension when validation knows it
    (``LazyInitParameters``): the refusal names the node that inferred it and its line."""
    net = """{
    x = Input (3)
    W = Parameter (2, 0, init = 'uniform', initValueScale = -0.5)
    z = Times (W, x)
}"""
    with sd.parameter_registry(sd.ParameterRegistry()), pytest.raises(ConfigError) as info:
        build_network(net, StadynLibrary())
    assert re.fullmatch(r"<string>:4:\d+: Times: " + _refusal("Uniform"),
                        str(info.value).splitlines()[0])
    assert "[0.02500000037252903, -0.02500000037252903)" in str(info.value)


def test_a_positive_scale_draws_as_the_python_factories():
    """Built directly (not through ``stadyn.layers``' factories), every kind draws the same
    values as before for a positive scale (the range U(±0.05f * 0.5f) for ``uniform``)."""
    import stadyn.layers as L
    from stadyn.brainscript._layer_library import cntk_initializer
    same = {"glorotUniform": L.glorot_uniform, "glorotNormal": L.glorot_normal,
            "heUniform": L.he_uniform, "heNormal": L.he_normal, "xavier": L.xavier,
            "uniform1": L.uniform, "normal": L.normal, "truncNormal": L.truncated_normal}
    for name, factory in same.items():
        got = cntk_initializer(name, 0.5).with_seed(7)((40, 30), 40, 30)
        np.testing.assert_array_equal(got, factory(0.5, seed=7)((40, 30), 40, 30))
    w = cntk_initializer("uniform", 0.5).with_seed(7)((40, 30), 40, 30)
    assert np.abs(w).max() <= np.float32(0.05) * np.float32(0.5) and np.abs(w).max() > 0.02
