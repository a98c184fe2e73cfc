"""NNabla 1.39's refusals, dtypes and operands found while comparing again:

* ``F.norm`` / ``F.norm_normalization`` refuse ``p < 1``; the reductions refuse an axis given
  twice (``prod`` computed); tuples of axes that sort to increasing ones run (``(-3, 1)``);
* ``F.bit_shift`` shifts unsigned integers only (int32 is refused);
* ``F.assign`` of int32 gives float32 and leaves ``dst`` float32; ``F.batch_normalization``
  with int32 running statistics writes them as float32;
* ``PF.affine``, ``PF.convolution``, ``PF.batch_normalization`` read an int32 input as float32
  (``PF.embed`` reads it as indices);
* ``x + a`` (and ``F.add2(x, a)``) of a Variable and an NdArray gives an NdArray, computed at
  once on ``x``'s current value, in both modes;
* ``nnabla.functions`` has no ``take_along_axis`` and no ``stop_gradient``.
"""

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import nnabla_refusal, outcome

FN = "nnabla.functions."


def _forwarded(make, static):
    """``make()``'s output (forwarded in the static mode) with its dtype."""
    y = make()
    if static:
        y.forward()
    return [np.array(y.d, copy=True), str(y.d.dtype)]


def _outcome(make, static=True):
    """The error's type name when ``make()`` is refused (``RuntimeError`` for NNabla's
    refusals), else the outputs (forwarded in the static mode) with their dtypes."""
    return outcome(lambda: _forwarded(make, static), raised=nnabla_refusal)


@nnabla_case(names=[FN + n for n in ("norm", "norm_normalization", "sum", "prod", "max")],
             note="p < 1 and an axis given twice are refused (Stadyn computed prod over (0, 0) "
                  "and norm with p=0.5); axes that sort to increasing ones run")
def reductions__p_and_repeated_axes(nn, F, r):
    a = r.randn(2, 3, 4)
    res = {}
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            x = nn.Variable.from_numpy_array(a)
            calls = {
                "norm p=0.5": lambda: F.norm(x, p=0.5, axis=1),
                "norm p=1": lambda: F.norm(x, p=1, axis=1),
                "norm p=3 keepdims": lambda: F.norm(x, p=3, axis=(0, 2), keepdims=True),
                "norm (-3, 1)": lambda: F.norm(x, axis=(-3, 1)),
                "norm (1, -3)": lambda: F.norm(x, axis=(1, -3)),
                "norm -2": lambda: F.norm(x, axis=-2),
                "norm (0, 0)": lambda: F.norm(x, axis=(0, 0)),
                "norm_normalization p=0.5": lambda: F.norm_normalization(x, p=0.5, axes=1),
                "norm_normalization p=1.5": lambda: F.norm_normalization(x, p=1.5, axes=1),
                "prod (0, 0)": lambda: F.prod(x, axis=(0, 0)),
                "sum (2, -1)": lambda: F.sum(x, axis=(2, -1)),
                "max (-3, 1)": lambda: F.max(x, axis=(-3, 1)),
            }
            for k, make in calls.items():
                res[mode + k] = _outcome(make, static=not dynamic)
        finally:
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=[FN + "bit_shift"],
             note="NNabla 1.39 shifts unsigned integers only (BitShift::forward_impl: a type "
                  "error for int32, int8, float32); Stadyn shifted int32.  (uint16 to uint64 "
                  "run on NNabla but not on Stadyn: torch has no CPU shift for them)")
def bit_shift__unsigned_only(nn, F, r):
    res = {}
    for dt in ("uint8", "int32", "int8", "float32"):
        for dynamic in (False, True):
            nn.set_auto_forward(dynamic)
            try:
                x = nn.Variable.from_numpy_array(np.array([1, 2, 3, 5], dt))
                s = nn.Variable.from_numpy_array(np.array([1, 2, 0, 1], dt))
                res[("dynamic " if dynamic else "") + dt] = _outcome(
                    lambda: F.bit_shift(x, s), static=not dynamic)
            finally:
                nn.set_auto_forward(False)
    return res


@nnabla_case(names=[FN + "assign", FN + "batch_normalization"],
             note="NNabla 1.39 writes float32: assign's output and dst, and int32 running "
                  "statistics (Stadyn kept int32 for assign and refused the statistics)")
def integer_written_arrays__float32(nn, F, r):
    res = {}
    x_np = r.randint(-4, 5, (3, 4))
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            dst = nn.Variable.from_numpy_array(np.zeros((2,), np.int32))
            src = nn.Variable.from_numpy_array(np.array([3, -4], np.int32))
            y = F.assign(dst, src)
            if not dynamic:
                y.forward()
            res[mode + "assign"] = [y.d.copy(), str(y.d.dtype), dst.d.copy(), str(dst.d.dtype)]
            x = nn.Variable.from_numpy_array(x_np)
            beta = nn.Variable.from_numpy_array(np.zeros((1, 4), np.float32))
            gamma = nn.Variable.from_numpy_array(np.ones((1, 4), np.float32))
            mean = nn.Variable.from_numpy_array(np.zeros((1, 4), np.int32))
            var = nn.Variable.from_numpy_array(np.ones((1, 4), np.int32))
            y = F.batch_normalization(x, beta, gamma, mean, var, batch_stat=True)
            if not dynamic:
                y.forward()
            res[mode + "batch_normalization"] = [y.d.copy(), str(y.d.dtype)]
            res[mode + "running mean"] = [mean.d.copy(), str(mean.d.dtype)]
            res[mode + "running var"] = [var.d.copy(), str(var.d.dtype)]
        finally:
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=["nnabla.parametric_functions." + n
                    for n in ("affine", "convolution", "batch_normalization", "embed")],
             note="NNabla 1.39's parametric functions read int32 x as float32 (Stadyn's "
                  "refused affine and convolution, and batch-normalized in int32); embed reads "
                  "it as indices")
def pf_integer_inputs__float32(nn, F, PF, r):
    x_np = r.randint(-3, 4, (2, 3, 4, 4))
    res = {}
    nn.clear_parameters()
    x = nn.Variable.from_numpy_array(x_np, need_grad=False)
    outs = {"affine": PF.affine(x, 2),
            "convolution": PF.convolution(x, 3, (3, 3)),
            "batch_normalization": PF.batch_normalization(x)}
    ids = nn.Variable.from_numpy_array(np.array([[0, 4], [2, 1]], np.int32))
    outs["embed"] = PF.embed(ids, 5, 4)
    params = nn.get_parameters(grad_only=False)
    res["parameters"] = r.set_params({k: v for k, v in params.items() if "/bn/" not in "/" + k})
    for k, y in sorted(outs.items()):
        y.forward()
        res[k] = [y.d.copy(), str(y.d.dtype)]
    res["running mean"] = params["bn/mean"].d.copy()
    res["running var"] = params["bn/var"].d.copy()
    nn.clear_parameters()
    return res


@nnabla_case(names=[FN + "add2", FN + "mul2", FN + "relu", "nnabla.NdArray",
                    "nnabla.NdArray.data"],
             note="a Variable with an NdArray computes at once on the Variable's current value "
                  "(zeros before a static forward) and gives an NdArray, in both modes (Stadyn "
                  "refused the mix, or built a graph for x + a)")
def variable_with_ndarray__ndarray(nn, F, r):
    r.touch("nnabla.NdArray.data")
    a_np, b_np = r.randn(2, 3), r.randn(2, 3)
    res = {}
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            x = nn.Variable.from_numpy_array(a_np, need_grad=True)
            n = nn.NdArray.from_numpy_array(b_np)
            y = F.relu(x)           # not yet computed in the static mode
            calls = {"x + a": lambda: x + n, "a + x": lambda: n + x, "x - a": lambda: x - n,
                     "a - x": lambda: n - x, "x * a": lambda: x * n, "a / x": lambda: n / x,
                     "F.add2(x, a)": lambda: F.add2(x, n), "F.mul2(a, x)": lambda: F.mul2(n, x),
                     "relu(x) + a": lambda: y + n}
            for k, make in calls.items():
                v = make()
                res[mode + k] = [type(v).__name__, np.array(v.data, copy=True)]
        finally:
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=[FN + "gather", FN + "norm"],
             note="NNabla 1.39's functions module has neither (Stadyn's compat layer offered "
                  "its own take_along_axis and stop_gradient; they stay in stadyn.functions)")
def functions_nnabla_lacks(nn, F, r):
    res = {}
    res["has gather"], res["has norm"] = callable(F.gather), callable(F.norm)
    for name in ("take_along_axis", "stop_gradient"):
        res["has " + name] = hasattr(F, name)
    try:
        F.take_along_axis
        res["F.take_along_axis"] = "found"
    except AttributeError:
        res["F.take_along_axis"] = "AttributeError"
    return res


@nnabla_case(names=["nnabla.parametric_functions.affine", "nnabla.get_parameters",
                    "nnabla.Variable.need_grad", "nnabla.solvers.Sgd"],
             note="the registered W set need_grad=False after the graph was built: the graph "
                  "still writes its gradient and a solver given it before updates it; "
                  "get_parameters() and a solver given it afterwards leave it out; building "
                  "again sets the flag back (Stadyn stopped the gradient and the update)")
def parameter_need_grad_after_build__update(nn, F, PF, S, r):
    r.touch("nnabla.Variable.need_grad")
    res = {}
    x_np = r.randn(2, 3)
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.clear_parameters()
        nn.set_auto_forward(dynamic)
        try:
            x = nn.Variable.from_numpy_array(x_np)
            with nn.parameter_scope("fc"):
                PF.affine(x, 2)
            params = nn.get_parameters(grad_only=False)
            r.set_params(params)
            with nn.parameter_scope("fc"):       # the values set above (the dynamic mode)
                y = F.sum(F.tanh(PF.affine(x, 2)))
            solver = S.Sgd(0.5)
            solver.set_parameters(nn.get_parameters())
            w = nn.get_parameters()["fc/affine/W"]
            w.need_grad = False
            res[mode + "flag"] = w.need_grad
            res[mode + "listed"] = sorted(nn.get_parameters())
            solver.zero_grad()
            if not dynamic:
                y.forward()
            y.backward()
            res[mode + "W.g"] = w.g.copy()
            solver.update()
            res[mode + "W after update"] = w.d.copy()
            later = S.Sgd(0.5)
            later.set_parameters(nn.get_parameters())
            res[mode + "later solver's"] = sorted(later.get_parameters())
            with nn.parameter_scope("fc"):
                PF.affine(x, 2)
            res[mode + "flag after building again"] = w.need_grad
        finally:
            nn.set_auto_forward(False)
    nn.clear_parameters()
    return res


@nnabla_case(names=[FN + n for n in ("constant", "arange", "rand", "randn", "softmax")]
             + ["nnabla.Variable.reshape"],
             note="the functions with no inputs give NNabla Variables (Stadyn's gave its own, "
                  "so capsulenet's F.constant(...) logits had no .reshape: AttributeError)")
def no_input_functions__nnabla_variables(nn, F, r):
    r.touch("nnabla.Variable.reshape")
    res = {}
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            made = {"constant": F.constant(0.5, (2, 3)), "arange": F.arange(0, 6),
                    "rand": F.rand(shape=(2, 3)), "randn": F.randn(shape=(3, 2))}
            for k, v in sorted(made.items()):
                y = F.softmax(v.reshape((3, 2) if v.shape != (3, 2) else (2, 3)), axis=1)
                if not dynamic:
                    y.forward()
                res[mode + k] = [type(v).__name__, list(y.shape)]
            y = made["constant"].reshape((6,))
            if not dynamic:
                y.forward()
            res[mode + "constant reshaped"] = y.d.copy()
        finally:
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=[FN + "kl_multinomial"],
             note="NNabla 1.39 takes the logs of p + 1e-8 and q + 1e-8: a one-hot p, or a q "
                  "with a zero where p is not, gives a finite value (Stadyn's gave NaN and "
                  "inf).  The gradient w.r.t. q is compared where q > 0 only: NNabla's is "
                  "-p / q (-inf at a zero), Stadyn's -p / (q + 1e-8)")
def kl_multinomial__zero_probabilities(nn, F, r):
    res = {}
    p_np = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 0.5, 0.5, 0.0], [0.25, 0.25, 0.25, 0.25]],
                    np.float32)
    q_zero = np.array([[0.7, 0.1, 0.1, 0.1], [0.5, 0.0, 0.25, 0.25], [0.1, 0.2, 0.3, 0.4]],
                      np.float32)
    q_np = np.array([[0.7, 0.1, 0.1, 0.1], [0.5, 0.1, 0.2, 0.2], [0.1, 0.2, 0.3, 0.4]],
                    np.float32)
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            p = nn.Variable.from_numpy_array(p_np)
            y = F.kl_multinomial(p, nn.Variable.from_numpy_array(q_zero))
            if not dynamic:
                y.forward()
            res[mode + "kl, a zero in q"] = y.d.copy()
            q = nn.Variable.from_numpy_array(q_np, need_grad=True)
            y = F.kl_multinomial(p, q)
            if not dynamic:
                y.forward()
            q.g = 0
            y.backward(np.array([[1.0], [0.5], [2.0]], np.float32))
            res[mode + "kl"] = y.d.copy()
            res[mode + "q.g"] = q.g.copy()
        finally:
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=[FN + "broadcast_to", FN + "unique"],
             note="NNabla 1.39 gives float32 values for int32 data here too (Stadyn kept "
                  "int32); unique's indices and counts stay integers")
def integer_data__float32_more(nn, F, r):
    res = {}
    x_np = np.array([[3, -1, 3], [0, -1, 2]], np.int32)
    nn.set_auto_forward(True)
    try:
        x = nn.Variable.from_numpy_array(x_np)
        y = F.broadcast_to(x, nn.Variable.from_numpy_array(np.array([1, -2, 5], np.int32)),
                           axis=1)
        res["broadcast_to"] = [y.d.copy(), str(y.d.dtype)]
        u = F.unique(x, flatten=True, axis=0, with_counts=True)
        res["unique"] = [[v.d.copy(), str(v.d.dtype)] for v in (u if isinstance(u, (list, tuple))
                                                               else [u])]
    finally:
        nn.set_auto_forward(False)
    return res
