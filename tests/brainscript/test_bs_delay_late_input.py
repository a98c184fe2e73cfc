"""A delay's input is attached late, as cntk.exe does (ComputationNetwork::ConstructFromRoots
calls a delay node's LateAttachInputs after the members are made): reading ``c = g.c`` of a
``RecurrentLSTMP`` or ``RecurrentGRU`` as a network member makes the same parameters as
reading only ``g.h`` -- the same count, names and values -- and the seeds of parameters left
to the count are taken in cntk.exe's order (the member evaluated first makes its parameters
first; the delay's input makes its own once, later)."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
from stadyn._random import auto_seeds_kept, restart_auto_seeds
from stadyn.brainscript import StadynLibrary, build_network


def _build(text: str):
    with auto_seeds_kept(), sd.parameter_registry(sd.ParameterRegistry()):
        restart_auto_seeds(0)      # (the count of the tests after this one left as it was)
        net = build_network(text, StadynLibrary())
        params = {k: v.d.copy() for k, v in sd.get_parameters().items()}
    return net, params


def _run(net, node: str, xs):
    net.nodes["x"].d = xs
    y = net.nodes[node]
    y.forward()
    return sd.sequence.unpack_value(y)


@pytest.mark.parametrize("layer, count", [("RecurrentLSTMP (4, x)", 15),
                                          ("RecurrentLSTMP (4, cellDim = 5, x)", 16),
                                          ("RecurrentGRU (4, x)", 9)])
def test_reading_c_makes_the_parameters_of_h_alone(layer, count):
    # members are made by name: 'c' before 'z', so the cell is made first and its delay of h
    # meets the cell still in the making
    only_h, expected = _build(f"{{ x = Input {{3}}\n g = BS.RNNs.{layer}\n z = g.h }}")
    both, got = _build(f"{{ x = Input {{3}}\n g = BS.RNNs.{layer}\n z = g.h\n c = g.c }}")
    assert len(expected) == count
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    rng = np.random.RandomState(0)
    xs = [rng.randn(n, 3).astype(np.float32) for n in (3, 1)]
    for a, b in zip(_run(only_h, "z", xs), _run(both, "z", xs)):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)


def test_seeds_count_in_cntk_exe_order_past_a_late_input():
    # 'c' is made first: its W takes the first seed; its delay reads h, which is made later
    # (once), its W taking the second seed -- as the same network with those seeds given
    text = """{{ x = Input {{3}}
        s = {{ c = ParameterTensor ((4:0){0}) * x + PastValue (4, h)
              h = Tanh (ParameterTensor ((4:4){1}) * c) }}
        c = s.c ; h = s.h }}"""
    _, got = _build(text.format("", ""))
    _, expected = _build(text.format(", randomSeed = 0", ", randomSeed = 1"))
    assert sorted(got) == sorted(expected) == ["s.c.PlusArgs[0].TimesArgs[0]",
                                               "s.h.z.TimesArgs[0]"]
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
