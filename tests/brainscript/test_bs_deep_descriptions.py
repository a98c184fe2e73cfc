"""A deep but finite network description builds, as cntk.exe builds it (its evaluation is C++
recursion, limited by its stack alone): at 2d7f4600 Python's default limit of 1000 frames
stopped it with "evaluation nested too deeply" -- CNTK's own ResNet-34/50/101/152,
ResNet110_CIFAR10 and Inception-ResNet-V1 examples among them (a stack of blocks nests the
evaluation once a block).  Values hand-computed."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from stadyn import ConfigError
from stadyn.brainscript import StadynLibrary, build_network
from stadyn.train import feed


def test_a_recursion_400_deep_builds():
    before = sys.getrecursionlimit()
    net = build_network("{ f(x, k) = if k == 0 then x else f(x, k - 1) + 1 ; r = f(0, 400) }",
                        StadynLibrary())
    assert net.record["r"] == 400
    assert sys.getrecursionlimit() == before        # (raised while evaluating only)


def test_a_stack_of_200_layers_builds():
    # a chain of 200 Plus nodes made by recursion, as the examples' block stacks are
    text = ("{ x = Input {2} ; f(y, k) = if k == 0 then y else f(y + x, k - 1)\n"
            "  z = f(x, 200) ; outputNodes = (z) }")
    net = build_network(text, StadynLibrary())
    feed(net.nodes["x"], np.array([[1.0, 2.0]], np.float32))
    net.nodes["z"].forward()
    np.testing.assert_allclose(net.nodes["z"].d, [[201.0, 402.0]])


def test_a_runaway_recursion_is_still_a_config_error():
    with pytest.raises(ConfigError, match="nested too deeply"):
        build_network("{ f(n) = f(n + 1) ; r = f(0) }", StadynLibrary())
