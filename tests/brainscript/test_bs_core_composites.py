"""CNTK.core.bs's functions that are composites of other nodes, not nodes of their own, build
the nodes CNTK.core.bs writes (cntk.exe's node list, "Validating network", shows those):
``Round (_) = Floor (Plus (_, ConstantTensor (0.5, (1))))`` (CNTK.core.bs:467), ``Ceil (_) =
Negate (Floor (Negate (_)))`` (:457), ``Min (a, b) = if a < b then a else b`` and ``Max`` with
``>`` (:731-732; an ``if`` on a node is cntk.exe's ``If`` node, BrainScriptEvaluator.cpp:589-596).
Each inner node is named by its argument's path (``Floor``'s input is ``_``, ``Negate``'s
``input``, ``Plus``'s ``y``); the values against NumPy."""

from __future__ import annotations

import numpy as np

import stadyn as sd
from stadyn.brainscript import StadynLibrary, build_network


def _build(text: str):
    library = StadynLibrary()
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(text, library)
        constants = {k: np.asarray(v.d).ravel().tolist()
                     for k, v in sd.get_parameters(grad_only=False).items()}
    nodes = {**net.nodes, **net.inner_nodes}
    operations = {name: library._operations[id(v)][1] for name, v in nodes.items()
                  if id(v) in library._operations}
    return net, operations, constants


def test_round_and_ceil_are_floor_plus_and_negate_nodes():
    net, operations, constants = _build("{ x = Input {5} ; r = Round (x) ; c = Ceil (x) }")
    assert operations == {"x": "InputValue", "r": "Floor", "r._": "Plus",
                          "c": "Negate", "c.input": "Floor", "c.input._": "Negate"}
    # ConstantTensor (0.5, (1)): Plus's argument y
    assert constants == {"r._.y": [0.5]}
    x = np.array([[-2.5, -0.5, 0.4, 1.2, 2.5]], np.float32)
    net.nodes["x"].d = x
    for name in ("r", "c"):
        net.nodes[name].forward()
    np.testing.assert_array_equal(net.nodes["r"].d, np.floor(x + 0.5))    # -2, 0, 0, 1, 3
    np.testing.assert_array_equal(net.nodes["c"].d, np.ceil(x))


def test_min_and_max_are_if_nodes_over_a_comparison():
    net, operations, constants = _build("{ x = Input {3} ; y = Input {3}\n"
                                        "  lo = Min (x, y) ; hi = Max (x, 0) }")
    assert operations == {"x": "InputValue", "y": "InputValue", "lo": "If", "lo.if": "Less",
                          "hi": "If", "hi.if": "Greater"}
    # Max (x, 0): the 0 is a constant of the comparison (at hi.if) and of the If (at hi)
    assert constants == {"_hi.if": [0.0], "_hi": [0.0]}
    x, y = np.array([[-1.0, 2.0, 3.0]], np.float32), np.array([[0.5, 2.0, -4.0]], np.float32)
    net.nodes["x"].d, net.nodes["y"].d = x, y
    for name in ("lo", "hi"):
        net.nodes[name].forward()
    np.testing.assert_array_equal(net.nodes["lo"].d, np.minimum(x, y))
    np.testing.assert_array_equal(net.nodes["hi"].d, np.maximum(x, 0))


def test_sin_names_its_argument_z_as_cntk_core_bs():
    # CNTK.core.bs:683 ``Sin(z, tag='')`` (Sinh at :684 keeps ``x``): a node built in the
    # argument is named at the call's path plus the parameter's name
    net, operations, _ = _build("{ x = Input {3} ; s = Sin (Abs (x)) ; h = Sinh (Abs (x)) }")
    assert operations == {"x": "InputValue", "s": "Sin", "s.z": "Abs",
                          "h": "Sinh", "h.x": "Abs"}
    x = np.array([[-1.0, 0.5, 2.0]], np.float32)
    net.nodes["x"].d = x
    net.nodes["s"].forward()
    np.testing.assert_allclose(net.nodes["s"].d, np.sin(np.abs(x)), rtol=1e-6)
