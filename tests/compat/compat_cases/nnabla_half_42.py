"""NNabla 1.39 in a ``cpu:half`` context, mended in nnhalf42: a float32 leaf read by several
functions has its gradients summed in float16."""

import numpy as np

from compat_harness import nnabla_case

_HALF = ["nnabla.context_scope", "nnabla.ext_utils.get_extension_context"]

_G_DTYPE = ("a float32 leaf's gradient written by a function made in cpu:half is float16 on "
            "NNabla 1.39 (the function's backward casts the grad array to Half) and float32 "
            "in Stadyn, whose cast back to a leaf's dtype is autograd's (graph/_precision.py); "
            "the values are the same")


def _f32(a):
    return np.asarray(a, np.float32)


@nnabla_case(names=_HALF + ["nnabla.functions.tanh", "nnabla.functions.sigmoid",
                            "nnabla.functions.exp", "nnabla.functions.affine"],
             rtol=0.0, atol=0.0,
             known={"static g dtype": _G_DTYPE, "dyn g dtype": _G_DTYPE})
def half42__shared_leaf_gradients(nn, F, r):
    """A float32 leaf read by several functions made in ``cpu:half``: NNabla 1.39 adds each
    function's gradient into the leaf's grad array as ``Half`` (one float16 rounding per
    addition), where Stadyn cast the leaf once per function and added the gradients of the
    casts in float32 (``tanh(x) + sigmoid(x)``: x.g not a float16 number).  Stadyn now reads
    one half copy of the leaf in all of them (``graph/_precision.HalfCopies``), whose
    gradient autograd sums in float16.  Static and dynamic: two element-wise readers, the
    same leaf read twice by one function (``x * x``), two affines sharing their input; three
    readers are added in NNabla's order (nnhalf43: ``graph/_ordered_sums.py``)."""
    EU = r.module("nnabla.ext_utils")
    r.touch(*_HALF)
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(42)
    xv = rs.randn(30).astype(np.float32)
    av = rs.randn(4, 300).astype(np.float32)
    w1v = (rs.randn(300, 5) * 0.3).astype(np.float32)
    w2v = (rs.randn(300, 5) * 0.3).astype(np.float32)
    dy = rs.randn(30).astype(np.float32)
    da = rs.randn(4, 5).astype(np.float32)
    exprs = [("two", lambda x: F.tanh(x) + F.sigmoid(x)),
             ("square", lambda x: x * x * 0.7),
             ("three", lambda x: F.tanh(x) + F.sigmoid(x) + F.exp(x))]
    res = {}
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)
        gdt = set()
        for name, f in exprs:
            x = nn.Variable.from_numpy_array(xv, need_grad=True)
            with nn.context_scope(half):
                y = f(x)
            y.forward()
            x.grad.zero()
            y.backward(dy)
            res[k + name + " y"] = _f32(y.d)
            res[k + name + " x.g"] = _f32(x.g)
            gdt.add(str(x.g.dtype))
        a = nn.Variable.from_numpy_array(av, need_grad=True)
        w1 = nn.Variable.from_numpy_array(w1v, need_grad=True)
        w2 = nn.Variable.from_numpy_array(w2v, need_grad=True)
        with nn.context_scope(half):
            y = F.affine(a, w1) * F.affine(a, w2)
        y.forward()
        a.grad.zero()
        y.backward(da)
        res[k + "affine y"] = _f32(y.d)
        res[k + "affine a.g"] = _f32(a.g)
        res[k + "affine w1.g"] = _f32(w1.g)
        gdt.add(str(a.g.dtype))
        res[k + "g dtype"] = sorted(gdt)
        nn.set_auto_forward(False)
    return res


_BC = ["nnabla.Variable.__add__", "nnabla.Variable.__sub__", "nnabla.Variable.__mul__",
       "nnabla.functions.add2", "nnabla.functions.mul2"]


@nnabla_case(names=_HALF + _BC, rtol=0.0, atol=0.0,
             known={"static g dtype": _G_DTYPE, "dyn g dtype": _G_DTYPE})
def half42__broadcast_gradient_overflow(nn, F, r):
    """A broadcast input's gradient in ``cpu:half`` is NNabla's float16 fold
    (``half41__broadcast_gradients``); where the fold passes 65504 NNabla 1.39's ``Half``
    gives ``inf`` and says nothing, where Stadyn's fold also gave ``inf`` but NumPy warned
    ("overflow encountered in cast", a RuntimeWarning per backward).  The row "warnings"
    counts the RuntimeWarnings the backwards raised (NNabla: none).  Static and dynamic:
    ``x + b``, ``x - b``, ``x * b``, ``F.add2``, ``F.mul2`` with ``b`` of shape
    (1, 3, 1, 1) over (4, 3, 5, 5) and ``dy`` of 20000 (the fold reaches inf after four
    rows), and one whose channels reach inf, -inf and no overflow."""
    import warnings
    EU = r.module("nnabla.ext_utils")
    r.touch(*(_HALF + _BC))
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(4242)
    a0 = (rs.rand(4, 3, 5, 5) * 2 + 0.2).astype(np.float32)
    b0 = (rs.rand(1, 3, 1, 1) * 2 + 0.3).astype(np.float32)
    mixed = (rs.randn(4, 3, 5, 5) * 300).astype(np.float32)
    mixed[:, 0] += 20000
    mixed[:, 1] -= 20000
    dys = [np.full((4, 3, 5, 5), 20000.0, np.float32), mixed]
    fns = [("x + b", lambda a, b: a + b), ("x - b", lambda a, b: a - b),
           ("x * b", lambda a, b: a * b), ("F.add2", F.add2), ("F.mul2", F.mul2)]
    res = {}
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)
        gdt = set()
        caught = 0
        for i, dy in enumerate(dys):
            for name, fn in fns:
                a = nn.Variable.from_numpy_array(a0, need_grad=True)
                b = nn.Variable.from_numpy_array(b0, need_grad=True)
                with nn.context_scope(half):
                    y = fn(a, b)
                y.forward()
                a.grad.zero()
                b.grad.zero()
                with warnings.catch_warnings(record=True) as seen:
                    warnings.simplefilter("always")
                    y.backward(dy)
                caught += sum(issubclass(w.category, RuntimeWarning) for w in seen)
                key = "%s%d %s" % (k, i, name)
                res[key + " x.g"] = _f32(a.g)
                res[key + " b.g"] = _f32(b.g)
                gdt.update([str(a.g.dtype), str(b.g.dtype)])
        res[k + "warnings"] = caught
        res[k + "g dtype"] = sorted(gdt)
        nn.set_auto_forward(False)
    return res


_DIV_GRAD = (
    "nn.grad through Div2 in cpu:half: NNabla 1.39 builds Div2's gradient from Half "
    "functions (backward_function/div2.py: -dy * x0 / x1 ** 2, each step rounded to "
    "float16) before F.sum's fold, and differentiates those; Stadyn's Div2 gradient is its "
    "Half formula evaluated in float and rounded once (ops/_half_elementwise.py DIV2, as "
    "NNabla's backward kernel computes it), differentiated by torch: b's gradient 2 of 3 "
    "values one float16 step apart (41.96875 for 42.0), x's second-order gradient 61 of "
    "300 (up to 0.0078)")


_OPERATORS = ["nnabla.Variable.__add__", "nnabla.Variable.__sub__", "nnabla.Variable.__mul__",
              "nnabla.Variable.__truediv__"]


@nnabla_case(names=_HALF + _OPERATORS + ["nnabla.grad", "nnabla.functions.tanh",
                                         "nnabla.functions.sum"],
             rtol=0.0, atol=0.0,
             known={"static x / b gb": _DIV_GRAD, "dyn x / b gb": _DIV_GRAD,
                    "static x / b gx": _DIV_GRAD, "dyn x / b gx": _DIV_GRAD})
def half42__grad_in_half(nn, F, r):
    """``nn.grad`` in ``cpu:half``.  Of a float32 leaf: Stadyn's ``grad`` node read the leaf
    through a half copy of its own, which the outputs do not depend on, so every gradient
    was zeros (``nn.grad([F.tanh(x)], [x])``: 0 for NNabla's 0.786); it now reads the
    leaf's one copy (``graph/_precision.HalfCopies``).  Of a broadcast input (``x * b``,
    ``b`` of shape (1, 3, 1, 1)): NNabla 1.39 builds the gradient from its functions,
    ``dy * x`` as ``Mul2``'s Half output and then ``F.sum``'s Half fold over the broadcast
    axes (backward_function/utils.py ``sum_for_arithmetics``), where Stadyn summed the float
    gradients and rounded once; and the gradient of ``sum(gb * w)`` with respect to ``x``
    (second order).  Static and dynamic; ``x / b`` is a known row (NNabla's Div2 gradient
    in Half steps)."""
    EU = r.module("nnabla.ext_utils")
    r.touch(*(_HALF + _OPERATORS))
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(4243)
    xv = (rs.rand(4, 3, 5, 5) * 2 + 0.2).astype(np.float32)
    bv = (rs.rand(1, 3, 1, 1) * 2 + 0.3).astype(np.float32)
    dyv = (rs.randn(4, 3, 5, 5) * 3).astype(np.float32)
    wv = rs.randn(1, 3, 1, 1).astype(np.float32)
    tv = rs.randn(2, 7).astype(np.float32)
    fns = [("x + b", lambda a, b: a + b), ("x - b", lambda a, b: a - b),
           ("x * b", lambda a, b: a * b), ("b * x", lambda a, b: b * a),
           ("x / b", lambda a, b: a / b)]
    res = {}
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)
        t = nn.Variable.from_numpy_array(tv, need_grad=True)
        with nn.context_scope(half):
            gt = nn.grad([F.tanh(t)], [t])[0]
        gt.forward()
        res[k + "tanh gt"] = _f32(gt.d)
        for name, f in fns:
            x = nn.Variable.from_numpy_array(xv, need_grad=True)
            b = nn.Variable.from_numpy_array(bv, need_grad=True)
            with nn.context_scope(half):
                y = f(x, b)
                gb = nn.grad([y], [b], grad_outputs=[dyv])[0]
                z = F.sum(gb * nn.Variable.from_numpy_array(wv))
                gx = nn.grad([z], [x])[0]
            gb.forward()
            gx.forward()
            res[k + name + " gb"] = _f32(gb.d)
            res[k + name + " gx"] = _f32(gx.d)
        nn.set_auto_forward(False)
    return res


_LEAF_CAST = (
    "a float32 leaf read by a function made in cpu:half: NNabla 1.39 casts its array to Half "
    "as float_bits.hpp downconvert_to does (4e-8, 5.3e-8, 3e-8, -4e-8 become zeros), Stadyn "
    "by torch's cast (graph/_precision.py _down: 5.96e-8), so x * 1.0 is 5.96e-8 in 4 of 7 "
    "values; the flush in the cast would hide it from the static partition's recast of a "
    "parameter (graph/_partition.py _recast_of_primal matches a plain _to_copy only)")


@nnabla_case(names=_HALF + ["nnabla.functions.exp", "nnabla.functions.erf",
                            "nnabla.Variable.__mul__"],
             rtol=0.0, atol=0.0,
             known={"static g dtype": _G_DTYPE, "dyn g dtype": _G_DTYPE,
                    "static x * 1 y": _LEAF_CAST, "dyn x * 1 y": _LEAF_CAST})
def half42__below_smallest_subnormal(nn, F, r):
    """NNabla 1.39's float -> ``Half`` conversion gives a value below the smallest float16
    subnormal (``|v| < 2**-24``) a zero of its sign (float_bits.hpp ``downconvert_to``,
    step 4), where torch rounds ``(2**-25, 2**-24)`` up to ``2**-24`` (5.96e-8): a float32
    leaf of 4e-8 read in ``cpu:half`` (``x * 1.0``), ``F.exp(-17)`` (4.1e-8) and its
    gradient, ``F.erf``'s gradient at 4.1 (5.6e-8) were 5.96e-8 in Stadyn and are 0 on
    NNabla (now ``ops/_half_elementwise.nnabla_half`` where a ``Half`` step is computed in
    float and converted; ``F.exp`` has NNabla's ``Half`` formula).  Static and dynamic; the
    leaf's cast is a known row."""
    EU = r.module("nnabla.ext_utils")
    r.touch(*(_HALF + ["nnabla.Variable.__mul__"]))
    half = EU.get_extension_context("cpu", type_config="half")
    tiny = np.array([4e-8, 5.3e-8, 3e-8, 7e-8, -4e-8, 2.9e-8, 1e-7], np.float32)
    low = np.array([-17.0, -16.8, -16.7, -16.5, -17.5, -10.0, -16.6], np.float32)
    far = np.array([4.0, 4.05, 4.1, 3.95, 3.9, -4.1, 4.2], np.float32)
    dy = np.array([1.0, 0.5, 1e-3, 2.0, 1.0, 3e-4, 1.0], np.float32)
    res = {}
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)
        gdt = set()
        for name, values, f in (("x * 1", tiny, lambda v: v * 1.0), ("exp", low, F.exp),
                                ("erf", far, F.erf)):
            v = nn.Variable.from_numpy_array(values, need_grad=True)
            with nn.context_scope(half):
                y = f(v)
            y.forward()
            v.grad.zero()
            y.backward(dy)
            res[k + name + " y"] = _f32(y.d)
            res[k + name + " signs"] = np.signbit(np.asarray(y.d)).tolist()
            res[k + name + " g"] = _f32(v.g)
            gdt.add(str(v.g.dtype))
        res[k + "g dtype"] = sorted(gdt)
        nn.set_auto_forward(False)
    return res


@nnabla_case(names=_HALF + ["nnabla.grad", "nnabla.functions.tanh", "nnabla.functions.sigmoid"],
             rtol=2e-6, atol=0.0)   # float32 rows: tanh one float32 ulp apart; half rows exact
def half42__grad_outputs_variable(nn, F, r):
    """``nn.grad(..., grad_outputs=[v])`` with a Variable ``v``: NNabla 1.39 differentiates
    ``o * v`` (python/src/nnabla/grad.py, ``output = o * go``), so ``v`` is read when the
    gradient is computed and, when it depends on the input, differentiated too; Stadyn
    raised ShapeError (a Variable made a NumPy object array).  A constant ``v`` and
    ``v = F.sigmoid(x)``, float32 and ``cpu:half``, static and dynamic."""
    EU = r.module("nnabla.ext_utils")
    r.touch(*_HALF)
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(4244)
    xv = rs.randn(3, 7).astype(np.float32)
    gv = (rs.randn(3, 7) * 2).astype(np.float32)
    res = {}
    for dyn in (False, True):
        nn.set_auto_forward(dyn)
        for ctx in ("float", "half"):
            k = ("dyn " if dyn else "static ") + ctx
            x = nn.Variable.from_numpy_array(xv, need_grad=True)
            g = nn.Variable.from_numpy_array(gv)
            if ctx == "half":
                with nn.context_scope(half):
                    y = F.tanh(x)
                    gc = nn.grad([y], [x], grad_outputs=[g])[0]
                    gs = nn.grad([y], [x], grad_outputs=[F.sigmoid(x)])[0]
            else:
                y = F.tanh(x)
                gc = nn.grad([y], [x], grad_outputs=[g])[0]
                gs = nn.grad([y], [x], grad_outputs=[F.sigmoid(x)])[0]
            gc.forward()
            gs.forward()
            res[k + " constant"] = _f32(gc.d)
            res[k + " sigmoid(x)"] = _f32(gs.d)
        nn.set_auto_forward(False)
    return res
