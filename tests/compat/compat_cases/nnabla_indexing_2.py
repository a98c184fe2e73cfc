"""NNabla 1.39's indexing assignment and NdArray indexing (its ``_indexing.pyx``,
``Variable.__setitem__`` in ``_variable.pyx``, ``NdArray.__getitem__`` / ``__setitem__`` and
the in-place operators in ``_nd_array.pyx``):

* ``x[key] = v`` on a Variable makes ``x`` the output of a graph writing ``v`` (a Variable, an
  NdArray, an array or a number, broadcast to the indexed shape) into what ``x`` was: the
  gradient reaches the old ``x`` except where it was overwritten, and ``v`` where it was
  written; static and dynamic (before, Stadyn's Variable took no item assignment: TypeError);
* ``a[key]`` of an NdArray is a new float32 NdArray (a copy), ``a[key] = v`` writes into new
  float32 memory (a NumPy array taken before keeps the old values); an NdArray iterates over
  its first axis (before: not subscriptable, not iterable);
* ``a *= b`` and ``a /= b`` of two arrays and ``a **= y`` give a new NdArray, ``a`` left as it
  was (before, Stadyn wrote them into ``a``);
* after ``x[key] = v``, ``x.need_grad`` is whether the old ``x`` or ``v`` needs a gradient;
* a Variable and an NdArray have no ``len()``, are true, compare with ``==`` by identity and
  refuse ``==`` with anything else (so ``1.0 in x``) and ``abs()`` (before, Stadyn's Variable
  had a length, compared False with a number and computed ``abs(x)``).
"""

import functools

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import builtin_type, outcome

# the built-in type of the exception ``fn()`` raises, or None
_error = functools.partial(outcome, convert=lambda _: None, raised=builtin_type)


def _assign(x, key, value):
    x[key] = value
    return x


# (label, key, shape of the value written, or None for a scalar 2.5)
_SETS = [
    ("[1, 1:3]", (1, slice(1, 3)), (2,)),
    ("[:, 0]", (slice(None), 0), None),
    ("[-1]", -1, (1,)),
    ("[..., ::2]", (Ellipsis, slice(None, None, 2)), (3, 2)),
    ("[None, 0, 2:0:-1]", (None, 0, slice(2, 0, -1)), (1, 2)),
    ("[[0, 2], [3, 1]]", ([0, 2], [3, 1]), (2,)),
    ("[[2, 0]]", [2, 0], (4,)),
    ("[mask]", np.array([[True, False, False, True], [False, True, False, False],
                         [False, False, False, True]]), None),
    ("[bool list]", [True, False, True], (1, 4)),
]


@nnabla_case(names=["nnabla.Variable.forward", "nnabla.Variable.backward",
                    "nnabla.Variable.from_numpy_array"])
def variable_setitem(nn, F, r):
    """``x[key] = v`` of a Variable computed from a leaf ``a`` (``x = 2 a``), basic and
    advanced keys, ``v`` a Variable of a broadcastable shape or a number: ``x``'s value and
    shape, the gradients of ``sum(x * w)`` w.r.t. ``a`` and ``v``; static and dynamic."""
    r.touch("nnabla.Variable.forward", "nnabla.Variable.backward",
            "nnabla.Variable.from_numpy_array")
    res = {}
    base = r.randn(3, 4).astype(np.float32)
    w = r.randn(3, 4).astype(np.float32)
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            for label, key, vshape in _SETS:
                a = nn.Variable.from_numpy_array(base, need_grad=True)
                x = F.mul_scalar(a, 2.0)
                if vshape is None:
                    v, value = None, 2.5
                else:
                    v = nn.Variable.from_numpy_array(r.randn(*vshape).astype(np.float32),
                                                     need_grad=True)
                    value = v
                x[key] = value
                y = F.sum(x * nn.Variable.from_numpy_array(w))
                if not dynamic:
                    y.forward()
                res[mode + label] = x.d.copy()
                res[mode + label + " shape"] = list(x.shape)
                a.grad.zero()
                if v is not None:
                    v.grad.zero()
                y.backward()
                res[mode + label + " grad a"] = a.g.copy()
                if v is not None:
                    res[mode + label + " grad v"] = v.g.copy()
        finally:
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=["nnabla.Variable.forward", "nnabla.NdArray.from_numpy_array"])
def variable_setitem_leaf_and_values(nn, F, r):
    """``x[key] = value`` on a leaf Variable, twice in a row, with a NumPy array, an NdArray
    and a list as the value; in dynamic mode the value is there at once."""
    r.touch("nnabla.Variable.forward", "nnabla.NdArray.from_numpy_array")
    res = {}
    base = r.randn(2, 3).astype(np.float32)
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            x = nn.Variable.from_numpy_array(base, need_grad=True)
            x[0] = np.array([1.0, 2.0, 3.0])
            x[1, 1:] = nn.NdArray.from_numpy_array(np.array([7.0, 8.0], np.float32))
            x[:, 0] = [-1.0, -2.0]
            if not dynamic:
                x.forward()
            res[mode + "x"] = x.d.copy()
            res[mode + "x dtype"] = str(x.d.dtype)
        finally:
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=["nnabla.Variable.from_numpy_array"])
def variable_setitem_refusals(nn, r):
    """What NNabla refuses in ``x[key] = v``: an integer out of the axis, more indices than
    axes, two ``...``, integers mixed with index arrays, a string key."""
    r.touch("nnabla.Variable.from_numpy_array")
    x = nn.Variable.from_numpy_array(r.randn(2, 3).astype(np.float32))
    return {
        "x[2] = 1": _error(lambda: _assign(x, 2, 1.0)),
        "x[-3] = 1": _error(lambda: _assign(x, -3, 1.0)),
        "x[0, 0, 0] = 1": _error(lambda: _assign(x, (0, 0, 0), 1.0)),
        "x[..., ...] = 1": _error(lambda: _assign(x, (Ellipsis, Ellipsis), 1.0)),
        "x[1, [0, 1]] = 1": _error(lambda: _assign(x, (1, [0, 1]), 1.0)),
        "x['a'] = 1": _error(lambda: _assign(x, "a", 1.0)),
    }


@nnabla_case(names=["nnabla.NdArray.from_numpy_array", "nnabla.NdArray.data",
                    "nnabla.NdArray.dtype", "nnabla.NdArray.shape", "nnabla.Variable.data",
                    "nnabla.Variable.grad"])
def ndarray_indexing(nn, r):
    """``a[key]`` and ``a[key] = v`` of NdArrays (float32 and int64): values, shapes, dtypes;
    a result is a copy; an assignment gives new memory (a NumPy array taken before keeps the
    old values); iterating goes over the first axis; what is refused."""
    r.touch("nnabla.NdArray.from_numpy_array", "nnabla.NdArray.data", "nnabla.NdArray.dtype",
            "nnabla.NdArray.shape", "nnabla.Variable.data", "nnabla.Variable.grad")
    res = {}
    af = nn.NdArray.from_numpy_array(r.randn(3, 4).astype(np.float32))
    ai = nn.NdArray.from_numpy_array(np.arange(12).reshape(3, 4))
    for name, a in (("float", af), ("int", ai)):
        for label, key in (("[1]", 1), ("[:, 1:3]", (slice(None), slice(1, 3))),
                           ("[None, ..., -1]", (None, Ellipsis, -1)),
                           ("[[0, 2]]", [0, 2]), ("[[2, 0], [1, 3]]", ([2, 0], [1, 3]))):
            b = a[key]
            res[name + label] = b.data.copy()
            res[name + label + " dtype"] = str(b.dtype)
    b = af[1]
    b.data[0] = 99.0
    res["a[1] after writing its copy"] = af.data[1].copy()
    res["iterated"] = [e.data.copy() for e in af]
    for name, arr in (("float", r.randn(3, 4).astype(np.float32)),
                      ("int", np.arange(12).reshape(3, 4))):
        a = nn.NdArray.from_numpy_array(arr)
        kept = a.data
        a[1] = 5
        a[:, 0] = np.array([7.0, 8.0, 9.0])
        a[[0, 2], [1, 3]] = [-1.0, -2.0]
        a[np.array([False, True, False])] = nn.NdArray.from_numpy_array(
            np.full((1, 4), 0.5, np.float32))
        res[name + " assigned"] = a.data.copy()
        res[name + " assigned dtype"] = str(a.dtype)
        res[name + " kept array"] = kept.copy()
    # a Variable's value and gradient NdArrays: written in place (a NumPy array kept sees it)
    x = nn.Variable.from_numpy_array(r.randn(2, 3).astype(np.float32), need_grad=True)
    kept = x.d
    x.data[0] = 7.0
    x.grad[1, 1:] = nn.NdArray.from_numpy_array(np.array([1.0, 2.0], np.float32))
    res["x.data[0] = 7"] = [x.d.copy(), kept.copy(), x.g.copy(), x.data[1].data.copy()]
    a = nn.NdArray.from_numpy_array(np.zeros((2, 3), np.float32))
    res["a[2] = 1"] = _error(lambda: _assign(a, 2, 1.0))
    res["a[0, 0, 0] = 1"] = _error(lambda: _assign(a, (0, 0, 0), 1.0))
    res["a['x'] = 1"] = _error(lambda: _assign(a, "x", 1.0))
    res["a[2]"] = _error(lambda: a[2])
    res["a[0.5]"] = _error(lambda: a[0.5])
    return res


@nnabla_case(names=["nnabla.NdArray.from_numpy_array", "nnabla.NdArray.data"])
def ndarray_inplace_operators(nn, r):
    """``a += y``, ``-=``, ``*=``, ``/=``, ``**=`` of NdArrays with numbers and NdArrays:
    whether ``a`` is the same object afterwards, its values, the original's values and a
    NumPy array taken before; static and dynamic mode alike."""
    r.touch("nnabla.NdArray.from_numpy_array", "nnabla.NdArray.data")
    res = {}
    x = np.abs(r.randn(2, 3)).astype(np.float32) + 0.5
    y = np.abs(r.randn(2, 3)).astype(np.float32) + 0.5

    def run(op, other):
        a = nn.NdArray.from_numpy_array(x)
        a0, kept = a, a.data
        if op == "+=":
            a += other
        elif op == "-=":
            a -= other
        elif op == "*=":
            a *= other
        elif op == "/=":
            a /= other
        else:
            a **= other
        return [a is a0, a.data.copy(), a0.data.copy(), kept.copy()]

    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            for op in ("+=", "-=", "*=", "/=", "**="):
                res[mode + "a " + op + " 2"] = run(op, 2.0)
                res[mode + "a " + op + " b"] = run(op, nn.NdArray.from_numpy_array(y))
            ai = nn.NdArray.from_numpy_array(np.array([1, 2]))
            ai += 1
            res[mode + "int a += 1"] = [str(ai.dtype), ai.data.copy()]
        finally:
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=["nnabla.Variable.from_numpy_array", "nnabla.NdArray.from_numpy_array",
                    "nnabla.Variable.data", "nnabla.Variable.grad"])
def variable_ndarray_protocol(nn, F, r):
    """The Python protocol of Variables and NdArrays: ``len()`` refused, always true,
    iterated over the first axis (``x[i]``), ``==`` their identity (an NdArray's: the array it
    views) and refused with anything else (so is ``in``), ``abs()`` refused."""
    r.touch("nnabla.Variable.from_numpy_array", "nnabla.NdArray.from_numpy_array",
            "nnabla.Variable.data", "nnabla.Variable.grad")
    arr = r.randn(3, 2).astype(np.float32)
    x = nn.Variable.from_numpy_array(arr, need_grad=True)
    y = nn.Variable.from_numpy_array(arr)
    a = nn.NdArray.from_numpy_array(arr)
    res = {
        "len(x)": _error(lambda: len(x)),
        "len(a)": _error(lambda: len(a)),
        "bool": [bool(x), bool(a), bool(nn.Variable(())), bool(nn.NdArray((0,)))],
        "iterated x shapes": [list(e.shape) for e in x],
        "iterated a": [e.data.copy() for e in a],
        "x == x, x != y, x == y": [x == x, x != y, x == y],
        "x == 1": _error(lambda: x == 1.0),
        "x == None": _error(lambda: x == None),  # noqa: E711 - the comparison is the case
        "1.0 in x": _error(lambda: 1.0 in x),
        "x == a": _error(lambda: x == a),
        "x in [y, x]": x in [y, x],
        "data == data, data == grad, a == a": [x.data == x.data, x.data == x.grad, a == a],
        "a == 1": _error(lambda: a == 1.0),
        "abs(x)": _error(lambda: abs(x)),
    }
    nn.set_auto_forward(True)
    try:
        z = nn.Variable.from_numpy_array(arr)
        res["iterated x dynamic"] = [e.d.copy() for e in z]
    finally:
        nn.set_auto_forward(False)
    return res


@nnabla_case(names=["nnabla.Variable.need_grad", "nnabla.Variable.backward"])
def variable_setitem_need_grad(nn, F, r):
    """``x.need_grad`` after ``x[:, 0] = v``: whether the old ``x`` (a leaf or an op's output,
    needing a gradient or not) or ``v`` (a number, a Variable needing a gradient or not) needs
    one; the gradients that reach ``v`` and, through an op's output, its input ``a``.

    ``y.forward()`` runs in the dynamic mode too: NNabla 1.39's rewire leaves ``x``'s
    need_grad unset until the graph is set up again, so without a forward ``x.need_grad`` reads
    False and a backward gives ``v`` no gradient (static mode alike before its forward).  That
    loss of the gradient is not copied: Stadyn's ``x`` needs one from the assignment on."""
    r.touch("nnabla.Variable.need_grad", "nnabla.Variable.backward")
    res = {}
    base = r.randn(2, 3).astype(np.float32)
    w = r.randn(2, 3).astype(np.float32)
    for dynamic in (False, True):
        nn.set_auto_forward(dynamic)
        try:
            for leaf in (True, False):
                for needs in (True, False):
                    for kind in ("number", "v needs", "v needs none"):
                        label = "%s%s %s, %s" % ("dynamic " if dynamic else "",
                                                 "leaf" if leaf else "op output",
                                                 "needs" if needs else "needs none", kind)
                        a = nn.Variable.from_numpy_array(base, need_grad=needs)
                        x = a if leaf else F.mul_scalar(a, 3.0)
                        v = None
                        if kind == "number":
                            x[:, 0] = 5.0
                        else:
                            v = nn.Variable.from_numpy_array(r.randn(2).astype(np.float32),
                                                             need_grad=kind == "v needs")
                            x[:, 0] = v
                        y = F.sum(x * nn.Variable.from_numpy_array(w))
                        y.forward()     # (NNabla's dynamic mode needs it: see the docstring)
                        res[label + " need_grad"] = x.need_grad
                        a.grad.zero()
                        if v is not None:
                            v.grad.zero()
                        y.backward()
                        if not leaf:
                            res[label + " grad a"] = a.g.copy()
                        if v is not None:
                            res[label + " grad v"] = v.g.copy()
        finally:
            nn.set_auto_forward(False)
    return res
