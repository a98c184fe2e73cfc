"""NNabla 1.39 fidelity, seventeenth round: the outputs of NNabla's copying ops (``F.identity``,
``F.transpose``, ``F.slice``, ``x[i]``, ``F.split``, ``F.broadcast``, ``F.reshape(...,
inplace=False)``, ...) hold arrays of their own: writing ``y.d = v`` or ``y.d[i] = v`` leaves
the input alone (Stadyn's torch views wrote the input; ``F.broadcast``'s refused the write).
Only ``F.reshape`` with its default ``inplace=True`` shares its input's array.
"""

import numpy as np

from compat_harness import nnabla_case

_F = "nnabla.functions."

# op name -> (the names it touches, how it is called on the (2, 2) input ``a``)
_OPS = {
    "identity": ("identity", lambda F, a: F.identity(a)),
    "reshape": ("reshape", lambda F, a: F.reshape(a, (4,))),
    "reshape inplace=False": ("reshape", lambda F, a: F.reshape(a, (4,), inplace=False)),
    "Variable.reshape": ("reshape", lambda F, a: a.reshape((4,))),
    "transpose": ("transpose", lambda F, a: F.transpose(a, (1, 0))),
    "slice": ("slice", lambda F, a: F.slice(a, (0, 0), (1, 2))),
    "getitem": ("slice", lambda F, a: a[0]),
    "getitem column": ("slice", lambda F, a: a[:, 1]),
    "split": ("split", lambda F, a: F.split(a, axis=0)[1]),
    "broadcast": ("broadcast", lambda F, a: F.broadcast(F.reshape(a, (1, 2, 2)), (3, 2, 2))),
    "flip": ("flip", lambda F, a: F.flip(a, axes=(0,))),
    "stack": ("stack", lambda F, a: F.stack(a, axis=0)),
    "tile": ("tile", lambda F, a: F.tile(a, (1, 1))),
}


def _sharing(nn, F, make, dynamic, element):
    nn.set_auto_forward(dynamic)
    try:
        a = nn.Variable.from_numpy_array(np.arange(4, dtype=np.float32).reshape(2, 2),
                                         need_grad=True)
        y = make(F, a)
        if not dynamic:
            y.forward()
        if element:
            y.d.reshape(-1)[0] = 7.0       # (a write through the NumPy array handed out)
        else:
            y.d = np.full(y.shape, 7.0, np.float32)
        return {"a.d": a.d.copy(), "y.d": y.d.copy()}
    finally:
        nn.set_auto_forward(False)


@nnabla_case(names=[_F + n for n, _ in _OPS.values()] + ["nnabla.Variable.d"],
             note="y.d = v and y.d[i] = v on each op's output, static and dynamic: what a reads")
def view_outputs__own_memory(nn, F, r):
    r.touch(*[_F + n for n, _ in _OPS.values()], "nnabla.Variable.d")
    res = {}
    for key, (_, make) in _OPS.items():
        for dynamic in (False, True):
            for element in (False, True):
                got = _sharing(nn, F, make, dynamic, element)
                tag = "%s%s %s" % ("dynamic " if dynamic else "", key,
                                   "y.d[i] =" if element else "y.d =")
                for k, v in got.items():
                    res[tag + " " + k] = v
    return res


@nnabla_case(names=[_F + "transpose", _F + "slice", "nnabla.Variable.g"],
             note="after y.d is read, a backward through y still writes y.g and a.g; "
                  "a forward after y.d = v writes y again")
def view_outputs__gradients_and_reruns(nn, F, r):
    r.touch(_F + "transpose", _F + "slice", "nnabla.Variable.g")
    res = {}
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            a = nn.Variable.from_numpy_array(np.arange(6, dtype=np.float32).reshape(2, 3),
                                             need_grad=True)
            y = F.transpose(a, (1, 0))
            s = y[1:]
            loss = F.sum(F.mul2(s, s))
            loss.forward()
            res[mode + "y.d"] = y.d.copy()
            res[mode + "s.d"] = s.d.copy()
            a.grad.zero()
            loss.backward()
            res[mode + "a.g"] = a.g.copy()
            res[mode + "y.g"] = y.g.copy()
            res[mode + "s.g"] = s.g.copy()
            y.d = np.zeros((3, 2), np.float32)
            res[mode + "a.d after y.d ="] = a.d.copy()
            if not dynamic:
                loss.forward()
                res[mode + "y.d after forward"] = y.d.copy()
                res[mode + "loss after forward"] = loss.d.copy()
        finally:
            nn.set_auto_forward(False)
    return res
