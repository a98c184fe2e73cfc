"""Refusals of ops waiting on placeholders name the user's line where the op was made: the
element-wise shape clash found when the placeholders are bound (CNTK 2.7's RuntimeError names
``Plus`` and the two shapes; the case ``replace_placeholders__elementwise_shape_clash`` holds
its words), and a sequence op given a placeholder made without dynamic axes (case
``placeholder__no_dynamic_axes_waiting``)."""

import inspect
import sys

import numpy as np
import pytest

import stadyn.compat.cntk as C


def _line() -> int:
    """The caller's line number."""
    return inspect.currentframe().f_back.f_lineno


def test_a_shape_clash_found_at_binding_names_the_op_and_its_line():
    p = C.placeholder((C.InferredDimension, 3))
    g, made = C.plus(p, np.ones(3, np.float32)), _line()
    with pytest.raises(RuntimeError) as caught:
        g.replace_placeholders({p: C.input_variable((2, 4))})
    text = str(caught.value)
    assert text.startswith("Plus: ") and "(2, 4)" in text and "(3,)" in text, text
    assert text.endswith(f"test_cntk_deferred_refusals.py:{made}"), text


def test_a_sequence_op_on_a_placeholder_without_dynamic_axes_names_its_line():
    p = C.placeholder((2,), dynamic_axes=[])
    with pytest.raises(ValueError) as caught:
        line = _line() + 1
        C.sequence.last(C.relu(p))
    text = str(caught.value)
    assert text.startswith("sequence.last: A sequence function can only be applied"), text
    assert text.endswith(f"test_cntk_deferred_refusals.py:{line}"), text


@pytest.mark.parametrize("op, kind", [
    (lambda p: C.sequence.unpack(p, 0), ValueError),
    (lambda p: C.sequence.where(p), RuntimeError),
    (lambda p: C.sequence.gather(p, p), RuntimeError),
    (lambda p: C.sequence.scatter(p, p), RuntimeError)], ids=["unpack", "where", "gather",
                                                              "scatter"])
def test_the_step_selecting_sequence_ops_refuse_a_placeholder_without_dynamic_axes(op, kind):
    """CNTK 2.7 refuses these as they are called on ``placeholder((2,), dynamic_axes=[])``:
    unpack with ValueError "Axis::OperandSequenceAxis() sentinel cannot be resolved ...",
    where/gather/scatter with RuntimeError "vector::_M_range_insert" (run on CNTK 2.7 by a
    reviewer's probe); Stadyn accepted them and waited."""
    p = C.placeholder((2,), dynamic_axes=[], name="p")
    with pytest.raises(kind, match="dynamic_axes=\\[\\]"):
        op(p)


def test_data_for_a_placeholder_not_bound_names_it_and_the_line_of_the_run():
    # CNTK 2.7 raises RuntimeError 'Unknown DataType.' (case placeholder__eval_before_binding);
    # Stadyn's words name the placeholder, the op and the user's line of the eval
    p = C.placeholder((3,), dynamic_axes=[], name="scores")
    f = C.relu(p)
    with pytest.raises(RuntimeError) as caught:
        f.eval({p: np.ones(3, np.float32)})
    line = _line() - 1
    text = str(caught.value)
    assert text.startswith("Unknown DataType.\n"), text
    assert f"test_cntk_deferred_refusals.py:{line}: ReLU.eval: the placeholder 'scores'" in text


def test_a_sequence_op_skips_its_hook_on_a_sequence_and_still_refuses_a_placeholder(monkeypatch):
    # the hook refusing operands without dynamic axes bound every call (a fifth of a
    # sequence.last's time: benchmarks/cntk_sequence_calls.py); a call on anything it cannot
    # refuse skips it, a call on a placeholder of dynamic_axes=[] (given in any way) does not
    bound = []
    real = inspect.Signature.bind

    def bind(self, *args, **kwargs):        # (the wrapper's binding, not the native op's)
        if sys._getframe(1).f_code.co_filename.endswith("_deferrable.py"):
            bound.append(self)
        return real(self, *args, **kwargs)
    monkeypatch.setattr(inspect.Signature, "bind", bind)
    x = C.sequence.input_variable(2)
    C.sequence.last(x), C.sequence.reduce_sum(x, name="r"), C.sequence.past_value(x, 0.5)
    assert bound == []
    for call in [lambda p: C.sequence.last(p), lambda p: C.sequence.last(p, name="n"),
                 lambda p: C.sequence.last(seq=p), lambda p: C.sequence.past_value(p, 0.5)]:
        with pytest.raises((ValueError, RuntimeError), match="made with dynamic_axes"):
            call(C.placeholder(2, dynamic_axes=[]))
