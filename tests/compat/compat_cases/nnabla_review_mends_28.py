"""NNabla 1.39 behaviours this session's reviews found Stadyn missing:

* ``F.relu`` and ``F.leaky_relu`` (``alpha >= 0``) take their backward's mask from the output
  ``y``, as NNabla's C++ kernels do (``ReLU::backward_impl`` reads ``outputs[0]``'s data,
  ``LeakyReLU``'s its ``sign`` array from the output where ``alpha >= 0``): a written ``y.d``
  changes the gradient; Stadyn took the mask from ``x``.  Static (one and two forwards) and
  dynamic; ``F.leaky_relu`` with a negative ``alpha`` reads ``x``, as NNabla's.
"""

import numpy as np

from compat_harness import nnabla_case

_F = "nnabla.functions."

# name -> (the function it touches, how it is called on the (2, 3) input ``a``)
_OPS = {
    "relu": ("relu", lambda F, a: F.relu(a)),
    "leaky_relu 0.1": ("leaky_relu", lambda F, a: F.leaky_relu(a, 0.1)),
    "leaky_relu 0": ("leaky_relu", lambda F, a: F.leaky_relu(a, 0.0)),
    "leaky_relu -0.2": ("leaky_relu", lambda F, a: F.leaky_relu(a, -0.2)),
}


def _grads(nn, F, make, dynamic, forwards, write):
    nn.set_auto_forward(dynamic)
    try:
        a = nn.Variable.from_numpy_array(
            (np.arange(6, dtype=np.float32).reshape(2, 3) - 2) / 6, need_grad=True)
        y = make(F, a)
        loss = F.sum(F.mul2(y, y))
        if not dynamic:
            for _ in range(forwards):
                loss.forward()
        if write:
            y.d = 0.5
        a.grad.zero()
        loss.backward()
        return {"a.g": a.g.copy(), "y.d": y.d.copy()}
    finally:
        nn.set_auto_forward(False)


@nnabla_case(names=sorted(set(_F + n for n, _ in _OPS.values())) + ["nnabla.Variable.d"],
             note="a = (arange(6) - 2) / 6, loss = sum(y * y); y.d = 0.5 written (or not) "
                  "after one or two static forwards, or in dynamic mode: a.g's mask is y's")
def relu_leaky_relu__backward_reads_written_output(nn, F, r):
    r.touch(*[_F + n for n, _ in _OPS.values()])
    r.touch("nnabla.Variable.d")
    res = {}
    for key, (_, make) in _OPS.items():
        for dynamic, forwards in ((False, 1), (False, 2), (True, 1)):
            for write in (True, False):
                tag = "%s %s %s" % ("dynamic" if dynamic else "static x%d" % forwards, key,
                                    "y.d = 0.5" if write else "as computed")
                for k, v in _grads(nn, F, make, dynamic, forwards, write).items():
                    res[tag + " " + k] = v
    return res
