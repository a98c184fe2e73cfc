"""BrainScript's division against cntk.exe's kernels: ``Reciprocal`` (and ``1/x``, which
BrainScriptEvaluator.cpp:333-341 makes a ``Reciprocal`` node) is ``a == 0 ? 0 : 1 / a``
(Source/Math/TensorOps.h:277), ``ElementDivide (x, y)`` is ``ElementTimes (x, Reciprocal
(y))`` (CNTK.core.bs:460), so an infinite dividend over a 0 divisor is ``inf * 0``, NaN, and
``x / number`` is ``x .* (1/number)`` (BrainScriptEvaluator.cpp:343-346), ``x .* inf`` for 0;
expectations hand-computed from those lines."""

from __future__ import annotations

import numpy as np

import stadyn as sd
from stadyn.brainscript import build_network
from stadyn.brainscript._stadyn_library import StadynLibrary
from stadyn.train import feed

X = np.array([[1.0, np.inf, 0.0, -3.0]], np.float32)
Y = np.array([[0.0, 0.0, 2.0, -0.5]], np.float32)


def _run(text: str, names: str) -> dict:
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("{ x = Input {4} ; y = Input {4} ; " + text + " }",
                            StadynLibrary())
        feed(net.nodes["x"], X)
        feed(net.nodes["y"], Y)
        out = {}
        for name in names.split():
            net.nodes[name].forward()
            out[name] = net.nodes[name].d.copy()
        return out


def test_reciprocal_of_zero_is_zero_as_cntk_exe_kernel():
    out = _run("r = Reciprocal (y) ; o = 1 / y", "r o")
    np.testing.assert_array_equal(out["r"], [[0.0, 0.0, 0.5, -2.0]])
    np.testing.assert_array_equal(out["o"], [[0.0, 0.0, 0.5, -2.0]])


def test_element_divide_is_element_times_of_the_reciprocal():
    out = _run("d = ElementDivide (x, y) ; dn = ElementDivide (x, 0) ; z = x / 0 ; "
               "e = ElementTimes (x, Reciprocal (y))", "d dn z e")
    # 1 * 0, inf * 0, 0 * 0.5, -3 * -2
    np.testing.assert_array_equal(out["d"], [[0.0, np.nan, 0.0, 6.0]])
    np.testing.assert_array_equal(out["d"], out["e"])
    np.testing.assert_array_equal(out["dn"], [[0.0, np.nan, 0.0, 0.0]])
    np.testing.assert_array_equal(out["z"], [[np.inf, np.inf, np.nan, -np.inf]])


def test_element_divide_makes_cntk_exes_nodes():
    # CNTK.core.bs:460: the product at the call's path, the Reciprocal at ElementTimes's
    # argument y (d.y), a number divisor Reciprocal's Constant {val} (_AsNodes, [1 x 1])
    lib = StadynLibrary()
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("{ x = Input {4} ; y = Input {4} ; d = ElementDivide (x, y) ; "
                            "dn = ElementDivide (x, 4) }", lib)
        made = {k: (tuple(v.shape), np.asarray(v.d).ravel().tolist())
                for k, v in sd.get_parameters(grad_only=False).items()}
        inner = lib.inner_nodes(dict(net.nodes))
        assert made == {"inputs.arr[0].res": ((1, 1), [4.0])}
        assert sorted(inner) == ["d.y", "dn.y"]
        assert [lib.operation_of(inner[k]) for k in ("d.y", "dn.y")] == ["Reciprocal"] * 2
        assert lib.operation_of(net.nodes["d"]) == "ElementTimes"
        assert lib.made_inputs(net.nodes["d"]) == [net.nodes["x"], inner["d.y"]]
        feed(net.nodes["x"], X)
        net.nodes["dn"].forward()
        np.testing.assert_array_equal(net.nodes["dn"].d, X * np.float32(0.25))
