"""A placeholder replaced by a Function whose own placeholders were replaced before (a waiting
Function built since): CNTK 2.7 reads that Function's graph.  Stadyn handed the waiting
Function itself to the op (``sigmoid(): argument 'input' must be Tensor, not Deferred``).
Expectations: CNTK 2.7's shapes and values for the same programs (run with the real CNTK 2.7).
"""

import numpy as np

import stadyn.compat.cntk as C


def _built_over(new):
    p = C.placeholder()
    z = C.tanh(p) + 1
    z.replace_placeholders({p: new})
    return z


def test_a_placeholder_replaced_by_a_function_built_from_placeholders():
    x = C.input_variable(3, name="x")
    z = _built_over(x)
    q = C.placeholder()
    y = C.sigmoid(q)
    y.replace_placeholders({q: z})
    out = y.eval({x: np.array([[0.5, -1.0, 2.0]], np.float32)})
    # CNTK 2.7: (3,), ['x'], [[0.8118562698, 0.5593207479, 0.8769682050]]
    assert y.shape == (3,) and [a.name for a in y.arguments] == ["x"]
    np.testing.assert_allclose(out, [[0.8118562698, 0.5593207479, 0.8769682050]], rtol=1e-6)


def test_a_placeholder_replaced_by_a_built_function_over_unpacked_steps():
    s = C.sequence.input_variable(3)
    z = _built_over(C.sequence.unpack(s, 0.0, no_mask_output=True))
    q = C.placeholder()
    y = C.reduce_sum(C.sigmoid(q), axis=1)
    y.replace_placeholders({q: z})
    out = y.eval({s: [np.array([[0.5, -1.0, 2.0], [1.0, 0.0, -2.0]], np.float32)]})
    # CNTK 2.7: (-3, 1) (the unpacked steps stay free), [[[2.2481451], [2.0934601]]]
    assert y.shape == (-3, 1)
    np.testing.assert_allclose(np.asarray(out), [[[2.2481451], [2.0934601]]], rtol=1e-6)
