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


def test_an_input_tried_early_is_forgotten_when_a_loop_closed_inside_it():
    # 'c' is made first; its delay reads h, whose 'd' is a loop of its own that closes while
    # h is tried, before h meets c still in the making.  cntk.exe attaches the delay's input
    # late (ConstructFromRoots: LateAttachInputs after the member is made), so c's W takes
    # the first seed, h's and d's the next, and h's W is made once (it was made twice, the
    # first one an unnamed extra parameter, with the seeds in another order)
    text = """{{ x = Input {{3}}
        s = {{ c = PastValue (4, h) + ParameterTensor ((4:3){0}) * x
              h = Tanh (ParameterTensor ((4:4){1}) * d + c)
              d = ParameterTensor ((4:3){2}) * x + PastValue (4, d) }}
        c = s.c ; h = s.h }}"""
    net, got = _build(text.format("", "", ""))
    _, expected = _build(text.format(", randomSeed = 0", ", randomSeed = 1", ", randomSeed = 2"))
    c_w, h_w, d_w = ("s.c.PlusArgs[1].TimesArgs[0]", "s.h.z.PlusArgs[0].TimesArgs[0]",
                     "s.d.PlusArgs[0].TimesArgs[0]")
    assert sorted(got) == sorted(expected) == sorted([c_w, h_w, d_w])
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    # the network computes the recurrence (NumPy, defaultHiddenActivation 0.1)
    xs = [np.random.RandomState(1).randn(3, 3).astype(np.float32)]
    h_prev, d_prev, want = np.full(4, 0.1), np.full(4, 0.1), []
    for x in xs[0]:
        d = x @ got[d_w] + d_prev
        h = np.tanh(d @ got[h_w] + h_prev + x @ got[c_w])
        want.append(h)
        h_prev, d_prev = h, d
    np.testing.assert_allclose(_run(net, "h", xs)[0], np.array(want), rtol=1e-5, atol=1e-6)


def test_a_checkpoint_forgets_a_delay_function_made_after_it():
    # a stabiliser of a delay whose dimensions come later (beta .* PastValue (0, h): a
    # PendingMap) given its node inside a try the evaluator rolls back: the node is of the
    # states the rollback forgets, so it is made again, of the dimensions known then
    from stadyn import functions as F
    from stadyn.brainscript._library import ForwardRef
    from stadyn.brainscript._loops import Loops, PendingMap
    loops = Loops(lambda v: None)
    pending = loops.delay(ForwardRef(None, "h"), None, 0.1, 1, False, "<string>:1")
    scaled = PendingMap(pending, lambda v: F.mul_scalar(v, 2.0), None)
    restore = loops.checkpoint()
    tried = loops.materialize(scaled, (4,))
    assert tried.shape[-1] == 4
    restore()
    assert scaled.variable is None and pending.variable is None
    again = loops.materialize(scaled, (3,))
    assert again is not tried and again.shape[-1] == 3
