"""What NNabla 1.39 refuses (``tools/nnabla_fuzz.py``'s one-sided accepts: Stadyn computed
them): each call's outcome -- refused with a ``RuntimeError``, or the output -- next to the
nearest calls NNabla accepts, so a refusal too wide shows as well as one missing.

* the binary functions broadcast only between inputs of the same rank (``(2,)`` with
  ``(2, 2)`` is refused, ``(1, 2)`` with ``(2, 2)`` is not), also through ``x + y``;
* ``concatenate`` of one input, ``split`` along an axis of size 1;
* ``unique`` in the static mode (it runs in the dynamic one).
"""

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import nnabla_refusal, outcome

FN = "nnabla.functions."


def _forwarded(make, static):
    """``make()``'s outputs (forwarded in the static mode), copied."""
    y = make()
    ys = list(y) if isinstance(y, (list, tuple)) else [y]
    if static:
        for v in ys:
            v.forward()
    return [np.array(v.d, copy=True) for v in ys]


def _outcome(nn, make, static=True):
    """``'RuntimeError'`` (or another error's type name) when ``make()`` is refused, else the
    outputs (forwarded in the static mode)."""
    return outcome(lambda: _forwarded(make, static), raised=nnabla_refusal)


@nnabla_case(names=[FN + n for n in ("add2", "sub2", "mul2", "div2", "pow2", "maximum2",
                                     "minimum2", "squared_error", "greater", "logical_and")]
             + ["nnabla.Variable"],
             note="different ranks are refused whatever the sizes; same ranks broadcast where "
                  "a size is 1")
def binary__ranks_must_match(nn, F, r):
    res = {}
    pairs = {"(2,) (2,2)": ((2,), (2, 2)), "(2,2) (2,)": ((2, 2), (2,)),
             "(2,4,3,3) (3,3)": ((2, 4, 3, 3), (3, 3)), "(1,) (4,3)": ((1,), (4, 3)),
             "(1,2) (2,2)": ((1, 2), (2, 2)), "(4,1,3) (1,2,3)": ((4, 1, 3), (1, 2, 3)),
             "(2,3) (3,3)": ((2, 3), (3, 3))}
    for label, (s0, s1) in pairs.items():
        a = nn.Variable.from_numpy_array(np.abs(r.randn(*s0)) + 0.5)
        b = nn.Variable.from_numpy_array(np.abs(r.randn(*s1)) + 0.5)
        for name in ("add2", "sub2", "mul2", "div2", "pow2", "maximum2", "minimum2",
                     "squared_error", "greater", "logical_and"):
            res["%s %s" % (name, label)] = _outcome(
                nn, lambda name=name, a=a, b=b: getattr(F, name)(a, b))
        for label2, op in (("+", lambda p, q: p + q), ("-", lambda p, q: p - q),
                           ("*", lambda p, q: p * q), ("/", lambda p, q: p / q),
                           ("**", lambda p, q: p ** q)):
            res["x %s y %s" % (label2, label)] = _outcome(nn, lambda op=op: op(a, b))
    # and in the dynamic mode, where the call computes
    with nn.auto_forward():
        a = nn.Variable.from_numpy_array(r.randn(2))
        b = nn.Variable.from_numpy_array(r.randn(2, 2))
        res["dynamic add2 (2,) (2,2)"] = _outcome(nn, lambda: F.add2(a, b), static=False)
        res["dynamic x * y (2,2) (2,)"] = _outcome(nn, lambda: b * a, static=False)
    return res


@nnabla_case(names=[FN + "concatenate", FN + "split"],
             note="one input, and an axis of size 1, are refused; two inputs and size 2 not")
def concatenate_split__at_least_two(nn, F, r):
    res = {}
    x = nn.Variable.from_numpy_array(r.randn(4, 2))
    y = nn.Variable.from_numpy_array(r.randn(3, 2))
    res["concatenate one axis 0"] = _outcome(nn, lambda: F.concatenate(x, axis=0))
    res["concatenate one axis -1"] = _outcome(nn, lambda: F.concatenate(x, axis=-1))
    res["concatenate one default"] = _outcome(nn, lambda: F.concatenate(x))
    res["concatenate two"] = _outcome(nn, lambda: F.concatenate(x, y, axis=0))
    for shape, axis in (((3, 1), -1), ((1, 1), 1), ((4, 1, 2, 3), 1), ((1, 1, 1, 2), -2),
                        ((4, 2, 1, 1), -1), ((2, 3), 0), ((4, 1, 2, 3), -2)):
        v = nn.Variable.from_numpy_array(r.randn(*shape))
        res["split %s axis %d" % (shape, axis)] = _outcome(
            nn, lambda v=v, axis=axis: F.split(v, axis=axis))
    return res


@nnabla_case(names=[FN + "unique"],
             note="refused in the static mode; the dynamic mode computes it")
def unique__dynamic_only(nn, F, r):
    res = {}
    x = nn.Variable.from_numpy_array(np.array([3.0, 1.0, 3.0, 2.0, 1.0], np.float32))
    res["static"] = _outcome(nn, lambda: F.unique(x, axis=0))
    res["static with counts"] = _outcome(nn, lambda: F.unique(x, axis=0, with_counts=True))
    with nn.auto_forward():
        res["dynamic"] = _outcome(nn, lambda: F.unique(x, axis=0), static=False)
    return res
