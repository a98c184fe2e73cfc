"""Whether a network is one of sequences (``_sequence_use.py``) is the same whether a library
function is called through its ``BS.`` namespace or its node is written out: ``BS.Boolean.If``,
``BS.Boolean.And``, ``BS.Constants.*`` and ``BS.Parameters.*`` make no sequence node
(CNTK.core.bs:777-821: constants, element-wise products and the ``If`` node), so their Inputs
stay one sample each; ``BS.Boolean.Toggle`` (a ``PastValue``, CNTK.core.bs:815-817),
``BS.Loop.*`` and ``BS.Sequences.*`` make them sequences.  Values hand-computed."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
from stadyn.brainscript import StadynLibrary, build_network
from stadyn.brainscript._parser import parse_expression
from stadyn.brainscript._sequence_use import sequence_use

X, E = [1.0, 2.0], [1.0, 0.0]

# (namespaced, written out, y for x = [1, 2], e = [1, 0])
PLAIN = [
    ("y = BS.Boolean.If (e, x * 2, x)", "y = e .* (x * 2) + (Constant (1) - e) .* x", [2.0, 2.0]),
    ("y = BS.Boolean.And (e, x)", "y = e .* x", [1.0, 0.0]),
    ("y = BS.Boolean.Not (e) + x", "y = (Constant (1) - e) + x", [1.0, 3.0]),
    ("y = x + BS.Constants.One + 0 * e", "y = x + Constant (1) + 0 * e", [2.0, 3.0]),
    ("y = BS.Parameters.BiasParam (2) + x + 0 * e",
     "y = ParameterTensor ((2), initValue = 0) + x + 0 * e", [1.0, 2.0]),
]


def _net(text: str):
    with sd.parameter_registry(sd.ParameterRegistry()):
        return build_network("{ x = Input {2} ; e = Input {2} ; " + text + " }",
                             StadynLibrary())


@pytest.mark.parametrize("namespaced, plain, want", PLAIN,
                         ids=[p[0].split("(")[0][4:].strip() for p in PLAIN])
def test_a_namespaced_function_of_no_sequence_makes_no_sequences(namespaced, plain, want):
    for text in (namespaced, plain):
        assert not sequence_use(parse_expression("{ " + text + " }")).uses, text
        net = _net(text)
        x, e, y = (net.nodes[k] for k in "xey")
        assert x.shape == (1, 2) and x.sequence_lengths is None, text
        assert e.shape == (1, 2), text
        x.d, e.d = np.array([X]), np.array([E])
        y.forward()
        np.testing.assert_allclose(np.asarray(y.d), [want], err_msg=text)


def test_a_namespace_of_no_sequence_function_named_whole_makes_no_sequences():
    # BS.Network was the one such before bs2ci; BS.Constants and BS.Parameters are too
    for text in ("K = BS.Constants ; y = x + K.One", "P = BS.Parameters ; y = P.BiasParam (2) + x"):
        assert not sequence_use(parse_expression("{ x = Input {2} ; " + text + " }")).uses, text
        assert _net(text).nodes["x"].shape == (1, 2), text


@pytest.mark.parametrize("text", [
    "y = BS.Boolean.Toggle (c)", "y = BS.Loop.Previous (x)", "y = BS.Sequences.First (x)",
    "B = BS.Boolean ; y = B.If (e, x, x)",    # the namespace as a whole: any member
    "b = BS ; y = b.Sequences.First (x)",     # BS as a whole (before bsseq: not seen, and
    "b = BS ; y = b.Loop.Previous (x)",       # First refused its one-sample x)
    "y = PastValue (0, x)"])
def test_a_namespaced_sequence_function_makes_sequences(text):
    assert sequence_use(parse_expression("{ c = Input {1} ; " + text + " }")).uses
    net = _net("c = Input {1} ; " + text)
    assert net.nodes["x"].shape == (1, 1, 2) and net.nodes["x"].sequence_lengths is not None


def test_a_namespaced_call_and_its_plain_delay_agree():
    # BS.Loop.Previous (x) is PastValue (0, x) (initial 0.1): the same steps
    got = []
    for text in ("y = BS.Loop.Previous (x)", "y = PastValue (0, x)"):
        net = _net(text)
        net.nodes["x"].d = [np.array([[1.0, 2.0], [3.0, 4.0]])]
        net.nodes["y"].forward()
        got.append(sd.sequence.unpack_value(net.nodes["y"])[0])
    np.testing.assert_allclose(got[0], [[0.1, 0.1], [1.0, 2.0]], rtol=1e-6)
    np.testing.assert_allclose(got[1], got[0])


@pytest.mark.parametrize("text", [
    "{ a = DynamicAxis{} ; x = Input{3} ; S = BS.Sequences ; y = S.First (x) }",
    "{ a = DynamicAxis{} ; x = Input{3} ; b = BS ; y = b.Sequences.First (x) }",
    "{ a = DynamicAxis{} ; x = Input{3} ; B = BS.Boolean ; y = B.Toggle (x) }"])
def test_a_sequence_function_called_through_an_alias_names_its_argument(text):
    # where a DynamicAxis is declared, an Input passed to a sequence function is a sequence on
    # the default axis (CNTK gives it one), whether the function is named BS.Sequences.First
    # or through an alias of BS or of its namespace.  Before mendB33 the alias lost it (x a
    # sample), while the plain call recorded it
    assert sequence_use(parse_expression(text)).arguments == {"x"}
    # an alias of a namespace's member of no sequence use records nothing
    plain = text.replace("Toggle (x)", "If (x, x, x)").replace("First (x)", "Constants.One")
    assert sequence_use(parse_expression(plain)).arguments == frozenset()
