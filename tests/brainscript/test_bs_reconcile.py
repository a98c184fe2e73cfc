"""CNTK.core.bs's ``ReconcileDynamicAxis`` (and its other names ``ReconcileMBLayout``, ``CastAs``
with the arguments swapped), as cntk.exe's ``ReconcileDynamicAxisNode`` (ReshapingNodes.h)
computes it: the data as it is where its layout is the layout input's; one value per sequence
repeated over each step of the layout input's sequence (``BroadcastToPacked``); a sequence on a
layout of one value per sample refused; data with no dynamic axis (a parameter) copied to every
sample and step of the layout input (ForwardProp's ``AllowBroadcast``), its gradient the sum over
them; a layout input with no dynamic axis refused (``Validate``).  Values against NumPy; the use of
Tests/EndToEndTests/Text/SequenceClassification's seqcla.cntk (``zp = ReconcileDynamicAxis (z,
labels)``, z the last step of a sequence on its own axis, labels one per sequence) builds."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from stadyn.brainscript import StadynLibrary, build_network

XS = [np.array([[1.0, 2.0], [3.0, 4.0], [-1.0, 0.5]], np.float32),
      np.array([[5.0, 6.0]], np.float32)]


def _build(text: str):
    with sd.parameter_registry(sd.ParameterRegistry()):
        return build_network(text, StadynLibrary())


def _values(net, node):
    net.nodes["x"].d = XS
    y = net.nodes[node]
    y.forward()
    return [np.asarray(v) for v in sd.sequence.unpack_value(y)]


def test_one_value_per_sequence_is_repeated_over_the_layouts_steps():
    net = _build("""{ x = Input {2}
        last = BS.Sequences.Last (x)
        a = ReconcileDynamicAxis (last, x) ; b = CastAs (x, last) ; c = ReconcileMBLayout (last, x)
        same = ReconcileDynamicAxis (x .* 2, x) }""")
    want = [np.repeat(s[-1:], len(s), axis=0) for s in XS]
    for node in "abc":
        for got, w in zip(_values(net, node), want):
            np.testing.assert_array_equal(got, w)
    for got, s in zip(_values(net, "same"), XS):
        np.testing.assert_array_equal(got, s * 2)


def test_seqcla_reconciles_the_last_step_with_labels_of_one_per_sequence():
    net = _build("""{ t = DynamicAxis {}
        features = Input {3, dynamicAxis = t} ; labels = Input {2}
        W = ParameterTensor {(2:3)}
        z = BS.Sequences.Last (W * features)
        zp = ReconcileDynamicAxis (z, labels)
        ce = CrossEntropyWithSoftmax (labels, zp) }""")
    assert net.nodes["zp"].shape[1:] == (2,) and net.nodes["zp"].sequence_lengths is None


def test_a_parameter_is_copied_to_every_step_and_sample_of_the_layout():
    net = _build("""{ x = Input {2}
        p = ParameterTensor {3, init = "fixedValue", value = 0} ; q = ParameterTensor {(3:2)}
        y = ReconcileDynamicAxis (p, x)
        z = ReduceSum (y .* (q * x))
        last = BS.Sequences.Last (x) }""")
    p, q = net.nodes["p"], net.nodes["q"]
    p.d = np.array([1.0, -2.0, 0.5])
    for got, s in zip(_values(net, "y"), XS):
        np.testing.assert_array_equal(got, np.tile(p.d, (len(s), 1)))
    # the gradient of the parameter: the sum over the steps of all sequences
    z = net.nodes["z"]
    z.forward()
    p.g = np.zeros(3)
    z.backward()
    want = sum((s @ np.asarray(q.d)).sum(axis=0) for s in XS)  # (q's row-major [2 x 3] form)
    np.testing.assert_allclose(np.asarray(p.g), want, rtol=1e-5)
    # per sample (no sequence in the network): each sample gets the parameter
    flat = _build("""{ x = Input {2}
        y = ReconcileDynamicAxis (Constant (3), x) }""")
    x = flat.nodes["x"]
    x.reset_shape((4, 2), force=True)
    x.d = np.ones((4, 2))
    y = flat.nodes["y"]
    y.forward()
    np.testing.assert_array_equal(np.asarray(y.d).reshape(4, -1), np.full((4, 1), 3.0))


@pytest.mark.parametrize("call, words", [
    ("ReconcileDynamicAxis (x, BS.Sequences.Last (x))", "layouts are incompatible"),
    ("ReconcileDynamicAxis (x, ParameterTensor {2})",
     "y ReconcileDynamicAxis operation requires that the second argument has a dynamic axis")])
def test_what_cntk_exe_refuses_is_named(call, words):
    with pytest.raises(ConfigError, match=words):
        _build("{ x = Input {2} ; y = " + call + " }")
