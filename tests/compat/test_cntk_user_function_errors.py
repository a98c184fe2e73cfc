"""An exception a CNTK user function's ``forward`` or ``backward`` raises reaches the caller as
it is: its type, its message and a traceback through the user's line.  CNTK 2.7 prints the
user's traceback and raises ``RuntimeError('SWIG director method error.')`` (compared in
``compat_cases/cntk_user_functions.py``, ``user_function_forward_error``); Stadyn wrapped the
forward's in a ``ShapeError`` ('cntk_user_function: cannot apply to inputs [...]')."""

import traceback

import numpy as np
import pytest

import stadyn.compat.cntk as C


class _Failing(C.ops.functions.UserFunction):
    def __init__(self, arg, fail_in):
        super().__init__([arg])
        self.fail_in = fail_in

    def forward(self, argument, device=None, outputs_to_retain=None):
        if self.fail_in == "forward":
            raise KeyError("no entry for this step")
        return argument, 2 * argument

    def backward(self, state, root_gradients):
        if self.fail_in == "backward":
            raise ZeroDivisionError("cannot scale the gradient")
        return 2 * root_gradients

    def infer_outputs(self):
        x = self.inputs[0]
        return [C.output_variable(x.shape, x.dtype, x.dynamic_axes)]


@pytest.mark.parametrize("fail_in, kind, message", [
    ("forward", KeyError, "no entry for this step"),
    ("backward", ZeroDivisionError, "cannot scale the gradient")])
def test_the_users_exception_reaches_the_caller(fail_in, kind, message):
    x = C.input_variable(2, needs_gradient=True)
    f = C.user_function(_Failing(x, fail_in))
    data = {x: np.ones((2, 2), np.float32)}
    with pytest.raises(kind, match=message) as raised:
        f.eval(data) if fail_in == "forward" else f.grad(data, wrt=[x])
    frames = traceback.extract_tb(raised.value.__traceback__)
    assert any(fr.filename == __file__ and fr.name == fail_in for fr in frames)
