"""A placeholder made on a sequence axis bound to a value without one
(compat/cntk/_sequence_placeholders.py): its ops built again on that value.  (Values and
refusals are compared with CNTK 2.7 in compat_cases/cntk_fidelity_20.py,
``sequence_placeholder__bound_to_a_non_sequence``.)"""

from __future__ import annotations

import numpy as np
import pytest

import stadyn.compat.cntk as C


def _sequence_placeholder():
    return C.placeholder((3,), dynamic_axes=C.Axis.default_input_variable_dynamic_axes(),
                         name="p")


def test_replace_placeholders_in_place_keeps_the_function_and_its_readers():
    # reduce_sum(p * 2, 0) on x = [[0, 1, 2], [3, 4, 5]]: [[6], [24]] (NumPy: (2 * x).sum(1))
    p = _sequence_placeholder()
    h = p * 2.0
    f = C.reduce_sum(h, 0, name="s")
    g = f + 1.0                 # (made before the binding: reads f's root, rebuilt in place)
    x = C.input_variable(3, name="x")
    assert f.replace_placeholders({p: x}) is f
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert f.name == "s" and [a.name for a in f.arguments] == ["x"]
    assert len(f.output.dynamic_axes) == 1
    np.testing.assert_allclose(f.eval({x: data}), (2 * data).sum(1, keepdims=True))
    np.testing.assert_allclose(g.eval({x: data}), (2 * data).sum(1, keepdims=True) + 1)


def test_a_sequence_substitute_still_closes_a_recurrence():
    # h[t] = h[t-1] + x[t] over ones: the running count (1, 2, 3) on each of the 3 axes
    x = C.sequence.input_variable(3, name="x")
    q = C.placeholder((3,), dynamic_axes=x.dynamic_axes, name="q")
    h = C.plus(C.sequence.past_value(q), x, name="h")
    h.replace_placeholders({q: h.output})
    got = h.eval({x: [np.ones((3, 3), np.float32)]})
    np.testing.assert_allclose(got[0], np.repeat([[1.0], [2.0], [3.0]], 3, axis=1))


@pytest.mark.parametrize("how", ["replace", "call"])
def test_a_layer_applied_to_it_is_applied_again_to_the_value(how):
    # (CNTK 2.7 infers the Dense anew on the input: compat_cases/cntk_fidelity_21.py,
    # layer_on_sequence_placeholder__bound_to_a_non_sequence); its parameters are shared
    p = _sequence_placeholder()
    d = C.layers.Dense(2, name="d")
    f = C.plus(d(p), 1.0)
    x = C.input_variable(3, name="x")
    g = f.replace_placeholders({p: x}) if how == "replace" else f(x)
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    w, b = d.W.value, d.b.value
    assert [a.name for a in g.arguments] == ["x"] and len(g.output.dynamic_axes) == 1
    np.testing.assert_allclose(g.eval({x: data}), data @ w + b + 1.0, rtol=1e-6)


@pytest.mark.parametrize("how", ["replace", "call"])
def test_a_block_over_it_is_built_again_on_the_value(how):
    # (CNTK 2.7 takes a value without a sequence axis for the block's argument too:
    # compat_cases/cntk_fidelity_22.py,
    # as_block__over_a_sequence_placeholder_bound_to_a_non_sequence)
    p = _sequence_placeholder()
    q = C.placeholder(3, name="q")
    f = C.plus(C.as_block(C.plus(q, 1.0), [(q, p)], "Blk", "blk"), 1.0)
    x = C.input_variable(3, name="x")
    g = f.replace_placeholders({p: x}) if how == "replace" else f(x)
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert [a.name for a in g.arguments] == ["x"] and len(g.output.dynamic_axes) == 1
    np.testing.assert_allclose(g.eval({x: data}), data + 2.0)


def test_a_sequence_op_on_a_non_sequence_names_the_users_line():
    # (CNTK 2.7's types, compat_cases/cntk_fidelity_21.py: RuntimeError for sequence.last on
    # the batch axis alone, ValueError for sequence.reduce_sum; the words say where)
    x = C.input_variable(3, name="x")
    here = __file__.rsplit("/", 1)[-1]
    with pytest.raises(RuntimeError, match=rf"^sequence\.last: .*'Input\('x', \[#\], \[3\]\)'"
                                           rf".* at .*{here}:\d+$"):
        C.sequence.last(x)
    x0 = C.input_variable(3, name="x0", dynamic_axes=[])
    with pytest.raises(ValueError, match=rf"^sequence\.reduce_sum: .*no dynamic axes.* at "
                                         rf".*{here}:\d+$"):
        C.sequence.reduce_sum(x0)


def test_a_sequence_op_bound_to_a_non_sequence_is_refused_at_the_binding():
    p = _sequence_placeholder()
    f = C.sequence.past_value(p)
    x = C.input_variable(3, name="x")
    here = __file__.rsplit("/", 1)[-1]
    with pytest.raises(RuntimeError, match=rf"^sequence\.past_value: .* at .*{here}:\d+$"):
        f.replace_placeholders({p: x})


def test_a_selecting_op_on_the_batch_axis_alone_refuses_its_run_with_the_users_line():
    # (CNTK 2.7 builds sequence.where / gather / scatter of such an operand and fails when it
    # runs, RuntimeError: compat_cases/cntk_fidelity_22.py,
    # selecting_sequence_ops__on_the_batch_axis_alone); the words name compat's input
    # function and the line that built the op
    x = C.input_variable(1, name="x")
    here = __file__.rsplit("/", 1)[-1]
    f = C.sequence.where(x)
    with pytest.raises(RuntimeError, match=rf"^sequence\.where: .*'x'.* batch axis alone.*"
                                           rf"C\.sequence\.input_variable.* at .*{here}:\d+"):
        f.eval({x: np.ones((2, 1), np.float32)})
    x0 = C.input_variable(1, name="x0", dynamic_axes=[])
    with pytest.raises(RuntimeError, match=rf"^sequence\.gather: .*'x0'.*no dynamic axes.*"
                                           rf"C\.sequence\.input_variable\) at .*{here}:\d+$"):
        C.sequence.gather(x0, x0)
