"""NNabla 1.39's dtypes and operands (``compat/nnabla/_float_inputs.py``, ``_variable.py``):

* the functions that move or pick values (``transpose``, ``slice``, ``concatenate``, ``stack``,
  ``tile``, ``pad``, ``broadcast``, ``flip``, ``split``, the poolings, ``gather``, ``sort``,
  ...) give float32 for int32 inputs; ``reshape`` and ``identity`` keep int32;
* ``mod2`` computes in its first input's dtype (the second is cast to it);
* ``x + y`` (``-``, ``*``, ``/``, ``**``) with an NdArray ``y`` is ``F.add2``: refused for
  another rank; with a NumPy array ``y`` it is ``F.add_scalar(x, float(y))``: a one-value
  array is its value, a longer one is refused (``TypeError``).
"""

import numpy as np

from compat_harness import nnabla_case

from .nnabla_refusals import _outcome

FN = "nnabla.functions."
_MOVERS = ("transpose", "slice", "concatenate", "stack", "tile", "pad", "broadcast", "flip",
           "split", "interpolate", "unpooling", "shift", "gather", "gather_nd", "sort",
           "top_k_data", "matrix_diag", "matrix_diag_part", "trilu", "embed", "bool_gather",
           "scatter_nd", "scatter_add", "bool_fill", "max_pooling", "average_pooling",
           "affine", "meshgrid", "searchsorted", "reshape", "identity")


@nnabla_case(names=[FN + n for n in _MOVERS],
             note="NNabla 1.39 gives float32 for int32 data (values equal); reshape and "
                  "identity keep int32 (Stadyn kept int32 for all)")
def integer_data__float32(nn, F, r):
    res = {}
    i_np = r.randint(-9, 10, (2, 3, 4))
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            i = nn.Variable.from_numpy_array(i_np)
            idx = nn.Variable.from_numpy_array(np.array([[1, 0]], np.int32))
            ids = nn.Variable.from_numpy_array(np.array([2, 0, 1], np.int32))
            table = nn.Variable.from_numpy_array(r.randint(-5, 5, (3, 2)))
            mask = nn.Variable.from_numpy_array(np.array([1, 0], np.int32))
            fill = nn.Variable.from_numpy_array((r.randn(2, 3, 4) > 0).astype(np.int32))
            flat = F.reshape(i, (24,))
            outs = {
                "transpose": lambda: F.transpose(i, (1, 0, 2)),
                "slice": lambda: F.slice(i, (0, 1, 0), (2, 3, 3)),
                "concatenate": lambda: F.concatenate(i, i, axis=1),
                "stack": lambda: F.stack(i, i),
                "tile": lambda: F.tile(i, (2, 1, 1)),
                "pad": lambda: F.pad(i, (1, 2)),
                "broadcast": lambda: F.broadcast(F.reshape(i, (1, 2, 3, 4)), (2, 2, 3, 4)),
                "flip": lambda: F.flip(i),
                "split": lambda: F.split(i)[1],
                "interpolate": lambda: F.interpolate(i, output_size=(6, 8), mode="nearest"),
                "unpooling": lambda: F.unpooling(i, (2, 2)),
                "shift": lambda: F.shift(i, (1,)),
                "gather": lambda: F.gather(i, idx, axis=0),
                "gather_nd": lambda: F.gather_nd(i, idx),
                "sort": lambda: F.sort(i),
                "top_k_data": lambda: F.top_k_data(i, 2),
                "matrix_diag": lambda: F.matrix_diag(i),
                "matrix_diag_part": lambda: F.matrix_diag_part(F.reshape(i, (2, 3, 2, 2))),
                "trilu": lambda: F.trilu(i),
                "embed": lambda: F.embed(ids, table),
                "bool_gather": lambda: F.bool_gather(F.reshape(i, (2, 12)), mask),
                "scatter_nd": lambda: F.scatter_nd(i, idx, (3, 3, 4)),
                "scatter_add": lambda: F.scatter_add(i, fill, i, axis=0),
                "bool_fill": lambda: F.bool_fill(i, fill, 1.5),
                "max_pooling": lambda: F.max_pooling(i, (2, 2)),
                "average_pooling": lambda: F.average_pooling(i, (2, 2)),
                "affine": lambda: F.affine(i, nn.Variable.from_numpy_array(
                    r.randint(-3, 3, (12, 2)))),
                "meshgrid": lambda: F.meshgrid(flat, flat)[0],
                "searchsorted": lambda: F.searchsorted(
                    nn.Variable.from_numpy_array(np.array([[1, 3, 5, 7]], np.int32)),
                    nn.Variable.from_numpy_array(np.array([[0, 3, 6]], np.int32))),
                "reshape": lambda: F.reshape(i, (6, 4)),
                "identity": lambda: F.identity(i),
            }
            for key in sorted(outs):
                res[mode + key] = _outcome(nn, outs[key], not dynamic)
        finally:
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=[FN + "mod2"],
             note="NNabla 1.39 computes mod2 in its first input's dtype, the second cast to it "
                  "(Stadyn promoted int32 with float32 to float32 and took C's fmod)")
def mod2__first_input_dtype(nn, F, r):
    res = {}
    i0 = np.array([0, 1, 2, -3, -4, 5, 7, -7], np.int32)
    i1 = np.array([1, 2, -3, 2, 3, -2, 4, 4], np.int32)
    f0 = np.array([1.5, -2.5, 3.5, -4.25, 5.0, -6.0, 7.75, -7.75], np.float32)
    f1 = np.array([1.5, 2.5, -3.5, 4.0, 5.0, 6.0, -2.75, 2.75], np.float32)
    arrays = {"i": i0, "I": i1, "f": f0, "F": f1}
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            for a, b in (("i", "F"), ("f", "I"), ("i", "I"), ("f", "F")):
                for fmod in (False, True):
                    x0 = nn.Variable.from_numpy_array(arrays[a])
                    x1 = nn.Variable.from_numpy_array(arrays[b])
                    res["%smod2 %s %s fmod=%s" % (mode, a, b, fmod)] = _outcome(
                        nn, lambda: F.mod2(x0, x1, fmod=fmod), not dynamic)
        finally:
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=["nnabla.Variable", "nnabla.NdArray"],
             note="x + NdArray is F.add2 (ranks must match); x + NumPy array is "
                  "F.add_scalar(x, float(array)) (Stadyn broadcast both)")
def operators__array_operands(nn, r):
    res = {}
    x_np = r.randn(2, 3)
    ops = (("+", lambda p, q: p + q), ("-", lambda p, q: p - q), ("*", lambda p, q: p * q),
           ("/", lambda p, q: p / q), ("**", lambda p, q: p ** q))
    operands = {
        "NdArray (3,)": lambda: nn.NdArray.from_numpy_array(np.abs(r.randn(3)) + 0.5),
        "NdArray (1,3)": lambda: nn.NdArray.from_numpy_array(np.abs(r.randn(1, 3)) + 0.5),
        "numpy (3,)": lambda: np.abs(r.randn(3)).astype(np.float32) + 0.5,
        "numpy (2,3)": lambda: np.abs(r.randn(2, 3)).astype(np.float32) + 0.5,
        "numpy (1,)": lambda: np.array([1.5], np.float32),
        "numpy (1,1,1)": lambda: np.array([[[2.0]]], np.float32),
        "numpy scalar": lambda: np.float32(0.5),
    }
    for label in sorted(operands):
        for name, op in ops:
            x = nn.Variable.from_numpy_array(np.abs(x_np) + 0.5)
            other = operands[label]()
            if label.startswith("NdArray"):
                # NNabla's static add2 of a Variable and an NdArray: only the refusal is
                # compared (the accepted one mixes modes)
                res["x %s %s" % (name, label)] = _refused_or_shape(lambda: op(x, other))
            else:
                res["x %s %s" % (name, label)] = _outcome(nn, lambda: op(x, other), True)
    return res


def _refused_or_shape(make):
    try:
        return list(make().shape)
    except RuntimeError:
        return "RuntimeError"
    except Exception as e:  # noqa: BLE001 - the type is the result
        return type(e).__name__


@nnabla_case(names=["nnabla.NdArray.fill", "nnabla.NdArray.zero", "nnabla.Variable.data"],
             note="a backward after an output's kept NdArray was filled reads the values "
                  "written, in both modes (Stadyn's dynamic mode raised torch's 'modified by an "
                  "inplace operation')")
def kept_ndarray_fill__backward(nn, F, r):
    for name in ("nnabla.NdArray.fill", "nnabla.NdArray.zero", "nnabla.Variable.data"):
        r.touch(name)
    res = {}
    x_np = r.randn(2, 3)
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else "static "
        nn.set_auto_forward(dynamic)
        try:
            x = nn.Variable.from_numpy_array(x_np, need_grad=True)
            y = F.mul_scalar(x, 2.0)
            z = F.sum(F.mul2(y, F.tanh(y)))
            if not dynamic:
                z.forward()
            kept = y.data
            y.d.fill(0.5)
            x.g = 0
            z.backward()
            res[mode + "x.g after y.d.fill"] = x.g.copy()
            kept.fill(-1.5)
            x.g = 0
            z.backward()
            res[mode + "x.g after kept y.data.fill"] = x.g.copy()
            res[mode + "y.d"] = y.d.copy()
            kept.zero()
            x.g = 0
            z.backward()
            res[mode + "x.g after kept y.data.zero"] = x.g.copy()
            kept_x = x.data
            kept_x.fill(0.25)
            if not dynamic:
                z.forward()
            x.g = 0
            z.backward()
            res[mode + "z after kept x.data.fill"] = np.array(z.d, copy=True)
            res[mode + "x.g after kept x.data.fill"] = x.g.copy()
        finally:
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=[FN + n for n in ("convolution", "deconvolution", "depthwise_convolution",
                                     "layer_normalization", "instance_normalization",
                                     "weight_standardization", "batch_det", "batch_inv",
                                     "softmax_cross_entropy", "categorical_cross_entropy",
                                     "global_average_pooling", "squared_error",
                                     "absolute_error")],
             note="NNabla 1.39 computes these in float32 for int32 data (Stadyn refused them "
                  "or gave int32)")
def integer_nn_inputs__float32(nn, F, r):
    res = {}
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            x = nn.Variable.from_numpy_array(r.randint(-3, 4, (2, 2, 4, 4)))
            w = nn.Variable.from_numpy_array(r.randint(-2, 3, (3, 2, 2, 2)))
            wt = nn.Variable.from_numpy_array(r.randint(-2, 3, (2, 3, 2, 2)))
            wd = nn.Variable.from_numpy_array(r.randint(-2, 3, (2, 3, 3)))
            m = nn.Variable.from_numpy_array(np.array([[[2, 1], [1, 3]], [[1, 0], [4, 1]]],
                                                      np.int32))
            logits = nn.Variable.from_numpy_array(r.randint(-3, 4, (3, 4)))
            target = nn.Variable.from_numpy_array(np.array([[1], [3], [0]], np.int32))
            v = nn.Variable.from_numpy_array(r.randint(-3, 4, (3, 4)))
            outs = {
                "convolution": lambda: F.convolution(x, w),
                "deconvolution": lambda: F.deconvolution(x, wt),
                "depthwise_convolution": lambda: F.depthwise_convolution(x, wd),
                "layer_normalization": lambda: F.layer_normalization(
                    x, nn.Variable.from_numpy_array(np.zeros((1, 2, 4, 4), np.int32)),
                    nn.Variable.from_numpy_array(np.ones((1, 2, 4, 4), np.int32))),
                "instance_normalization": lambda: F.instance_normalization(
                    x, nn.Variable.from_numpy_array(np.zeros((1, 2, 1, 1), np.int32)),
                    nn.Variable.from_numpy_array(np.ones((1, 2, 1, 1), np.int32))),
                "weight_standardization": lambda: F.weight_standardization(w),
                "batch_det": lambda: F.batch_det(m),
                "batch_inv": lambda: F.batch_inv(m),
                "softmax_cross_entropy": lambda: F.softmax_cross_entropy(logits, target),
                "categorical_cross_entropy": lambda: F.categorical_cross_entropy(
                    F.softmax(logits), target),
                "global_average_pooling": lambda: F.global_average_pooling(x),
                "squared_error": lambda: F.squared_error(logits, v),
                "absolute_error": lambda: F.absolute_error(logits, v),
            }
            for key in sorted(outs):
                res[mode + key] = _outcome(nn, outs[key], not dynamic)
        finally:
            nn.set_auto_forward(False)
    return res
