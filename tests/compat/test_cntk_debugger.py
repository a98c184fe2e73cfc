"""``cntk.debugging.debug_model`` where CNTK 2.7 never returns, so no reference can be written
(the compared behaviour is in ``compat_cases/cntk_debugger.py``): ``b`` or ``f`` alone, which
CNTK 2.7 takes and then spins on for ever, print the usage here; an ``in_stream`` that ends
while the debugger waits (CNTK 2.7 prompts again for ever) raises an error saying so."""

import io

import numpy as np
import pytest

import stadyn.compat.cntk as C


def _model():
    x = C.input_variable(2, name="x")
    return x, C.tanh(C.plus(x, C.parameter(2, init=0.5, name="b")), name="out")


def test_b_and_f_alone_are_not_understood():
    x, z = _model()
    out = io.StringIO()
    dz = C.debugging.debug_model(z, io.StringIO("f\nb\nc\n"), out)
    got = dz.eval({x: np.ones((1, 2), np.float32)})
    assert np.allclose(got, np.tanh(1.5))
    assert out.getvalue().count(C.debugging.DEBUG_USAGE) == 2


def test_an_ended_in_stream_raises_eof_error():
    x, z = _model()
    dz = C.debugging.debug_model(z, io.StringIO("n\n"), io.StringIO())
    # (an error in a user function's forward reaches the caller as the op's error, its
    # message kept)
    with pytest.raises(Exception, match="debug_model: in_stream ended while the debugger "
                                        "waits for a command"):
        dz.eval({x: np.ones((1, 2), np.float32)})


def test_q_calls_sys_exit_by_default():
    x, z = _model()
    dz = C.debugging.debug_model(z, io.StringIO("q\n"), io.StringIO())
    with pytest.raises(SystemExit) as raised:
        dz.eval({x: np.ones((1, 2), np.float32)})
    assert raised.value.code == 0
