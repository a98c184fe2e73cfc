"""NNabla 1.39 behaviours a review of nnuser37 (integer indexing, float16 inputs in the float
context) found Stadyn missing:

* ``x[key]`` of a bool Variable gave bool; NNabla's ``Slice`` / ``GatherNd`` write float32
  whatever they read, bools included (the int32 / int64 / uint8 / float16 / float64 rows and
  ``x[key] = value`` of each were already right: kept here against regressions);
* ``F.reshape`` (``inplace=True``, its default), ``x.reshape`` and ``F.identity`` of a float16
  Variable in the float context gave float32, in both modes; NNabla's share the input's
  array (Reshape) or copy it in its own dtype (Identity), so they are float16, while
  ``F.reshape(..., inplace=False)`` and the other functions give float32;
* a function of a float16 Variable built in the static graph had its dtype float16 before
  its forward (shape inference ran on the uncast input; it cast only to retry a failure),
  NNabla's float32;
* ``F.dropout(x, output_mask=True)`` / ``train_only=True`` ran (Stadyn's op has those
  arguments); NNabla 1.39's ``F.dropout(x, p, seed, n_outputs, outputs)`` raises
  ``TypeError``.
"""

import numpy as np

from compat_harness import nnabla_case

_F = "nnabla.functions."
_DTYPES = (np.float16, np.float64, np.int32, np.int64, np.uint8, np.bool_)


def _keys(nn):
    return {"slice": (slice(1, 3),), "int": (1,), "ellipsis": (Ellipsis, 0),
            "list": ([2, 0],), "array": (np.array([2, 0]),),
            "mask": (np.array([True, False, True]),),
            "variable": (nn.Variable.from_numpy_array(np.array([[2, 0]])),)}


@nnabla_case(names=["nnabla.Variable.__getitem__", "nnabla.Variable.__setitem__"])
def indexing_dtypes__float32(nn, F, r):
    """``x[key]`` and ``x[key] = value`` of Variables of every dtype (bool, integers, float16,
    float64) with every kind of key, in the static graph: the dtypes and values."""
    res = {}
    base = np.array([[1, 0], [2, 1], [0, 3]])
    for dtype in _DTYPES:
        name = np.dtype(dtype).name
        for kind, key in _keys(nn).items():
            x = nn.Variable.from_numpy_array(base.astype(dtype))
            y = x[key if len(key) > 1 else key[0]]
            y.forward()
            res["%s %s dtype" % (name, kind)] = str(y.d.dtype)
            res["%s %s" % (name, kind)] = y.d.astype(np.float64)
        for kind, key in [("slice", slice(0, 2)), ("list", [1, 0]),
                          ("mask", np.array([True, False, True]))]:
            x = nn.Variable.from_numpy_array(base.astype(dtype))
            x[key] = nn.Variable.from_numpy_array(np.array([7, 8], np.int32))
            x.forward()
            res["%s set %s dtype" % (name, kind)] = str(x.d.dtype)
            res["%s set %s" % (name, kind)] = x.d.astype(np.float64)
    r.touch("nnabla.Variable.__getitem__", "nnabla.Variable.__setitem__")
    return res


@nnabla_case(names=[_F + "reshape", _F + "identity", "nnabla.Variable.reshape", _F + "relu",
                    "nnabla.auto_forward"])
def half_input__reshape_identity_keep_float16(nn, F, r):
    """Functions of a float16 Variable in NNabla's default float context, static and under
    ``auto_forward``: the dtype and values of ``F.reshape`` (in place and copying),
    ``x.reshape``, ``F.identity``, chains of them, and of ``F.relu`` / ``F.transpose``
    (float32); the loss over them backward (the input's gradient values)."""
    x_np = (r.randn(2, 3) * 2).astype(np.float16)
    res = {}
    fns = {"reshape": lambda x: F.reshape(x, (3, 2)),
           "copying reshape": lambda x: F.reshape(x, (3, 2), inplace=False),
           "identity": lambda x: F.identity(x),
           "method reshape": lambda x: x.reshape((6,)),
           "reshape of reshape": lambda x: F.reshape(F.reshape(x, (3, 2)), (6,)),
           "identity of reshape": lambda x: F.identity(F.reshape(x, (6,))),
           "reshape of relu": lambda x: F.reshape(F.relu(x), (6,)),
           "transpose": lambda x: F.transpose(x, (1, 0))}
    for mode in ("static", "auto"):
        for key, fn in fns.items():
            x = nn.Variable.from_numpy_array(x_np, need_grad=True)
            if mode == "auto":
                with nn.auto_forward():
                    y = fn(x)
                    loss = F.sum(y * y)
            else:
                y = fn(x)
                loss = F.sum(y * y)
                loss.forward()
            res["%s %s dtype" % (mode, key)] = str(y.d.dtype)
            res["%s %s" % (mode, key)] = y.d.astype(np.float32)
            loss.backward()
            res["%s %s x.g" % (mode, key)] = x.g.astype(np.float32)
    r.touch("nnabla.Variable.reshape", "nnabla.auto_forward")
    return res


@nnabla_case(names=[_F + "dropout"])
def dropout__stadyn_arguments_refused(nn, F, r):
    """``F.dropout`` given Stadyn's ``output_mask`` / ``train_only``: NNabla 1.39's
    ``TypeError``; its own ``p`` and ``seed`` by name work."""
    x = nn.Variable.from_numpy_array(np.ones((2, 3), np.float32))
    res = {}
    for kw in ("output_mask", "train_only"):
        try:
            F.dropout(x, 0.5, **{kw: True})
            res[kw] = "no error"
        except TypeError as exc:
            res[kw] = "TypeError"
            res[kw + " names it"] = kw in str(exc)
    y = F.dropout(x, p=0.0, seed=3)
    y.forward()
    res["p=0"] = y.d.copy()
    return res


@nnabla_case(names=[_F + "relu", _F + "convolution", _F + "add2", _F + "reshape",
                    _F + "identity", _F + "affine"],
             known={"identity dtype before": (
                 "NNabla 1.39's Identity output has no array before its forward (read, it is "
                 "allocated float32; the forward then copies in the input's float16: "
                 "identity.cpp:35-45); Stadyn's static inference gives the dtype the forward "
                 "will write, float16 (graph/_precision.py _float_context_cast)")})
def half_input__float32_before_forward(nn, F, r):
    """Functions of a float16 Variable built in the static graph, read before and after their
    forward: the dtype a function's output has before it ran (float32, but for the in-place
    reshape and identity, which stay float16) and the shapes; the values after."""
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 5, 5).astype(np.float16))
    w = nn.Variable.from_numpy_array(r.randn(2, 3, 3, 3))
    res = {}
    for key, y in [("relu", F.relu(x)), ("convolution", F.convolution(x, w)),
                   ("add2", F.add2(x, nn.Variable.from_numpy_array(r.randn(2, 3, 5, 5)))),
                   ("reshape", F.reshape(x, (2, 75))), ("identity", F.identity(x)),
                   ("affine of relu", F.affine(F.reshape(F.relu(x), (2, 75)),
                                               nn.Variable.from_numpy_array(r.randn(75, 4))))]:
        res[key + " dtype before"] = str(y.d.dtype)
        res[key + " shape"] = list(y.shape)
        y.forward()
        res[key + " dtype"] = str(y.d.dtype)
        res[key] = y.d.astype(np.float32)
    return res
