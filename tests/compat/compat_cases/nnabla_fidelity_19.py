"""NNabla 1.39 fidelity, nineteenth round: in the dynamic mode, an op whose backward reads its
own output (``F.exp``, ``F.tanh``, ``F.sigmoid``, ``F.softmax``), its output given new memory
(``y.d = 5``, ``y.data.fill(5)``) while a ``y.d`` NumPy array is alive, once or twice, then
backward (Stadyn's read the old memory, which torch had saved).
"""

import numpy as np

from compat_harness import nnabla_case

_F = "nnabla.functions."

_SELF_READING = {
    "exp": lambda F, a: F.exp(F.mul_scalar(a, 0.1)),
    "tanh": lambda F, a: F.tanh(a),
    "sigmoid": lambda F, a: F.sigmoid(a),
    "softmax": lambda F, a: F.softmax(a, axis=1),
}


def _renew(y, how):
    if how == "y.d = 5":
        y.d = 5
    elif how == "fill":
        y.data.fill(5)
    else:                                   # two fills, each with a y.d array alive
        y.data.fill(5)
        kept_again = y.d
        y.d = 7
        return kept_again.copy()
    return None


@nnabla_case(names=[_F + n for n in _SELF_READING] + ["nnabla.NdArray.fill"],
             note="dynamic mode: y = op(a) whose backward reads y, y.d = 5 / fill(5) / two "
                  "renewals while a y.d array is alive, loss = sum(y * y) backward: a.g reads "
                  "the written y")
def dynamic_self_reading_outputs__backward_reads_written(nn, F, r):
    r.touch(*[_F + n for n in _SELF_READING])
    r.touch("nnabla.NdArray.fill")
    res = {}
    nn.set_auto_forward(True)
    try:
        for key, make in _SELF_READING.items():
            for how in ("y.d = 5", "fill", "twice"):
                a = nn.Variable.from_numpy_array(
                    np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3), need_grad=True)
                y = make(F, a)
                kept = y.d
                loss = F.sum(F.mul2(y, y))
                between = _renew(y, how)
                a.grad.zero()
                loss.backward()
                tag = "%s %s " % (key, how)
                res[tag + "a.g"] = a.g.copy()
                res[tag + "y.d"] = y.d.copy()
                res[tag + "kept"] = kept.copy()
                if between is not None:
                    res[tag + "kept between"] = between
    finally:
        nn.set_auto_forward(False)
    return res
