"""CNTK.core.bs's ``BS.RNNs.PreviousHCWithTrainedInitialState {shape}`` and
``NextHCWithTrainedInitialState`` (CNTK.core.bs:1184-1194): ``PreviousHC``/``NextHC`` whose h
and c start from two learned parameters ``initialH``, ``initialC`` (``initValue = 0``), checked
against values computed by hand."""

from __future__ import annotations

import numpy as np

import stadyn as sd
from stadyn.brainscript import StadynLibrary, build_network

_LOOP = """{ x = Input {3}
    hook = BS.RNNs.%sHCWithTrainedInitialState {%s}
    st = [ h = x + p.h ; c = h .* 2 + p.c ; dim = 3 ]
    p = hook (st)
    h = st.h ; c = st.c }"""


def _run(text: str, initial_h=None, initial_c=None):
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(text, StadynLibrary())
        params = sd.get_parameters(grad_only=False)
        assert {k: (v.shape, v.need_grad) for k, v in params.items()
                if "initial" in k} == {"hook.initialH": ((3,), True),
                                       "hook.initialC": ((3,), True)}
        assert not params["hook.initialH"].d.any()            # initValue = 0
        if initial_h is not None:
            params["hook.initialH"].d = np.array(initial_h, np.float32)
            params["hook.initialC"].d = np.array(initial_c, np.float32)
        net.nodes["x"].d = [np.arange(9, dtype=np.float32).reshape(3, 3)]
        out = []
        for name in ("h", "c"):
            net.nodes[name].forward()
            out.append(sd.sequence.unpack_value(net.nodes[name])[0].tolist())
        return out


def test_the_loop_starts_from_the_learned_initial_state():
    # x = [0 1 2], [3 4 5], [6 7 8]; h_t = x_t + h_(t-1), c_t = 2 h_t + c_(t-1), starting
    # from initialH = [1 2 3], initialC = [10 20 30]
    h, c = _run(_LOOP % ("Previous", "shape = 3"), [1, 2, 3], [10, 20, 30])
    assert h == [[1, 3, 5], [4, 7, 10], [10, 14, 18]]
    assert c == [[12, 26, 40], [20, 40, 60], [40, 68, 96]]
    # NextHC: from the end, h_2 = x_2 + initialH
    h, c = _run(_LOOP % ("Next", "shape = 3"), [1, 2, 3], [10, 20, 30])
    assert h == [[10, 14, 18], [10, 13, 16], [7, 9, 11]]
    assert c == [[64, 92, 120], [44, 64, 84], [24, 38, 52]]


def test_the_default_shape_is_inferred_from_a_known_input():
    # shape = (0): the delays' input gives it (h and c of x and 2x, no loop)
    h, c = _run("""{ x = Input {3}
        hook = BS.RNNs.PreviousHCWithTrainedInitialState {}
        s = hook ([ h = x ; c = x .* 2 ; dim = 3 ])
        h = s.h ; c = s.c }""")
    assert h == [[0, 0, 0], [0, 1, 2], [3, 4, 5]]
    assert c == [[0, 0, 0], [0, 2, 4], [6, 8, 10]]


def test_the_default_shape_is_inferred_inside_a_loop():
    # shape = (0) in a loop: the delays' input is made after them (h = x + p.h); cntk.exe
    # infers the parameters' dimensions from the state when it validates the loop
    # (CNTK.core.bs:1184-1189, ParameterTensor {(0)}): [3] here, the values as with shape = 3
    h, c = _run(_LOOP % ("Previous", ""), [1, 2, 3], [10, 20, 30])
    assert h == [[1, 3, 5], [4, 7, 10], [10, 14, 18]]
    assert c == [[12, 26, 40], [20, 40, 60], [40, 68, 96]]
    h, c = _run(_LOOP % ("Next", ""))          # initValue = 0: running sums from the end
    assert h == [[9, 12, 15], [9, 11, 13], [6, 7, 8]]
    assert c == [[48, 60, 72], [30, 36, 42], [12, 14, 16]]
