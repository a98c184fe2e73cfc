"""``nnabla.functions.random_choice``: what is certain (a weight-one member is always drawn,
so values and gradients are exact; without replacement every member once), the distribution
of many draws after ``nn.seed`` (frequencies within 0.01), and seeding.
"""

import numpy as np

from compat_harness import nnabla_case
from compat_cases.nnabla_functions_more import _seeding

_NAMES = ["nnabla.functions.random_choice"]


def _onehot_weights(r, shape):
    w = np.zeros(shape, np.float32)
    idx = r.randint(0, shape[-1], shape[:-1])
    np.put_along_axis(w, idx[..., None], 3.0, axis=-1)
    return w


@nnabla_case(names=_NAMES)
def random_choice__certain(nn, F, r):
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 4), need_grad=True)
    w = nn.Variable.from_numpy_array(_onehot_weights(r, (2, 3, 4)), need_grad=True)
    y = F.random_choice(x, w, shape=(2, 2))
    y.forward()
    x.g, w.g = 0, 0
    y.backward(r.weights_like(y.d))
    z = F.random_choice(x, w)
    z.forward()
    return {"out": y.d.copy(), "shape": list(y.shape), "grad x": x.g.copy(),
            "grad w": w.g.copy(), "one": z.d.copy(), "one shape": list(z.shape)}


@nnabla_case(names=_NAMES)
def random_choice__no_replace(nn, F, r):
    x = nn.Variable.from_numpy_array(r.randn(3, 6), need_grad=True)
    w = nn.Variable.from_numpy_array(r.rand(3, 6, low=0.1, high=1.0))
    y = F.random_choice(x, w, shape=(6,), replace=False)
    y.forward()
    x.g = 0
    y.backward(np.ones(y.shape, np.float32))
    return {"sorted": np.sort(y.d, axis=-1), "grad x": x.g.copy()}


@nnabla_case(names=_NAMES, tols={"freq": (0, 0.01), "freq first": (0, 0.012)},
             note="the streams differ: compared are frequencies of 40000 draws after nn.seed(7)")
def random_choice__distribution(nn, F, r):
    nn.seed(7)
    x = nn.Variable.from_numpy_array(np.arange(5, dtype=np.float32))
    w = nn.Variable.from_numpy_array(np.array([1, 2, 3, 2, 0.5], np.float32))
    with nn.auto_forward():
        y = F.random_choice(x, w, shape=(40000,))
        xs = nn.Variable.from_numpy_array(np.tile(np.arange(5, dtype=np.float32), (10000, 1)))
        ws = nn.Variable.from_numpy_array(np.tile(np.array([4, 1, 1, 1, 1], np.float32),
                                                  (10000, 1)))
        z = F.random_choice(xs, ws, shape=(3,), replace=False)
    freq = np.bincount(y.d.astype(np.int64), minlength=5) / 40000.0
    first = np.bincount(z.d[:, 0].astype(np.int64), minlength=5) / 10000.0
    distinct = bool(all(len(set(row)) == 3 for row in z.d.tolist()))
    res = {"freq": freq.astype(np.float32), "freq first": first.astype(np.float32),
           "distinct": distinct}
    res.update(_seeding(nn, lambda: F.random_choice(x, w, shape=(50,), seed=4)))
    return res


@nnabla_case(names=_NAMES, note="the arguments both refuse")
def random_choice__refused(nn, F, r):
    x = nn.Variable.from_numpy_array(r.randn(2, 3))
    calls = {"shapes differ": lambda: F.random_choice(x, nn.Variable.from_numpy_array(
        np.ones((2, 4), np.float32))),
        "too many without replacement": lambda: F.random_choice(
            x, nn.Variable.from_numpy_array(np.ones((2, 3), np.float32)), shape=(4,),
            replace=False)}
    res = {}
    for key, call in sorted(calls.items()):
        try:
            call().forward()
            res[key] = "accepted"
        except Exception:  # noqa: BLE001 - NNabla raises RuntimeError, Stadyn ValueError
            res[key] = "refused"
    return res
