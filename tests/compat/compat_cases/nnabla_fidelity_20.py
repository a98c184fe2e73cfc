"""NNabla 1.39 fidelity, twentieth round: the backward of ``F.swish``, ``F.mul_n`` and
``F.prod`` reads the output ``y`` (NNabla's kernels: swish ``dy * (y + sigmoid(x) * (1 - y))``,
mul_n ``dy * y / x_i``, prod ``dy * y / x``, 0 where ``x`` is 0), so a ``y.d`` written before
the backward changes the gradient, static (one and two forwards) and dynamic; an input holding
a 0 shows each formula's own value there (mul_n's ``0 / 0``).  A ``y.d`` array is alive as
the output is written, so the write gives ``y`` new memory (the backward reads that).
"""

import numpy as np

from compat_harness import nnabla_case

_F = "nnabla.functions."


def _inputs(nn, zero):
    a = (np.arange(6, dtype=np.float32).reshape(2, 3) - 2) / 6
    if not zero:
        a = a + np.float32(0.05)
    b = np.linspace(-1.5, 2.0, 6).astype(np.float32).reshape(2, 3)
    return (nn.Variable.from_numpy_array(a, need_grad=True),
            nn.Variable.from_numpy_array(b, need_grad=True))


# name -> (the function it touches, how it is called on the (2, 3) inputs a and b)
_OPS = {
    "swish": ("swish", lambda F, a, b: F.swish(a)),
    "mul_n": ("mul_n", lambda F, a, b: F.mul_n(a, b, a)),
    "prod axis 1": ("prod", lambda F, a, b: F.prod(a, axis=1)),
    "prod all": ("prod", lambda F, a, b: F.prod(b)),
    "prod axes 0 1 keepdims": ("prod", lambda F, a, b: F.prod(a, axis=(0, 1), keepdims=True)),
}


def _grads(nn, F, make, dynamic, forwards, write, zero):
    nn.set_auto_forward(dynamic)
    try:
        a, b = _inputs(nn, zero)
        y = make(F, a, b)
        loss = F.sum(F.mul2(y, y))
        if not dynamic:
            for _ in range(forwards):
                loss.forward()
        kept = y.d                          # (alive: y.d = 0.5 gives y new memory)
        if write:
            y.d = 0.5
        del kept
        a.grad.zero()
        b.grad.zero()
        loss.backward()
        return {"a.g": a.g.copy(), "b.g": b.g.copy(), "y.d": y.d.copy()}
    finally:
        nn.set_auto_forward(False)


@nnabla_case(names=sorted(set(_F + n for n, _ in _OPS.values())) + ["nnabla.Variable.d"],
             note="loss = sum(y * y); y.d = 0.5 written (or not) after one or two static "
                  "forwards, or in dynamic mode, inputs with and without a 0: the gradients "
                  "read y")
def written_outputs__swish_mul_n_prod_read_them(nn, F, r):
    r.touch(*[_F + n for n, _ in _OPS.values()])
    r.touch("nnabla.Variable.d")
    res = {}
    for key, (_, make) in _OPS.items():
        for zero in (False, True):
            for dynamic, forwards in ((False, 1), (False, 2), (True, 1)):
                for write in (True, False):
                    tag = "%s %s%s %s" % ("dynamic" if dynamic else "static x%d" % forwards,
                                          key, " (a 0)" if zero else "",
                                          "y.d = 0.5" if write else "as computed")
                    got = _grads(nn, F, make, dynamic, forwards, write, zero)
                    for k, v in got.items():
                        res[tag + " " + k] = v
    return res
