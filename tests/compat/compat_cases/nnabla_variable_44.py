"""NNabla 1.39's Variable identity and two small silent differences (nneq44).

* ``==`` and ``hash()`` of Variables compare the C++ ``nbla::Variable`` underneath
  (``_variable.pyx`` ``__eq__``/``__hash__``): an unlinked view, a parametric function's
  parameter in a graph that sees another ``need_grad`` (a view of the registered one) and a
  Variable ``rewire_on`` another equal and hash as the original; Stadyn compared identity, so
  a dict keyed by ``nn.get_parameters()``'s values missed the fixed graph's parameter;
* ``NdArray.copy_from`` of an array zeroed or filled and not read since (NNabla holds no array
  for it yet): with the current context a float32 copy of the value itself, the source made
  float32 too; without it an IndexError;  Stadyn copied the source's dtype (uint8, wrapped);
* ``F.abs`` whose input is written between the forward and the backward: NNabla's backward
  takes the sign of the new values; Stadyn's took the old one (a sign saved by the forward).
  Other ops whose torch backward reads values saved by the forward (an output, an
  intermediate) where NNabla's reads the inputs as the backward finds them are left as known
  rows of ``written_before_backward__ops``.
"""

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import nnabla_refusal, outcome

V = "nnabla.Variable."
ND = "nnabla.NdArray."
FN = "nnabla.functions."


@nnabla_case(names=[V + "__eq__", V + "__hash__", V + "get_unlinked_variable", V + "rewire_on",
                    V + "__setitem__", "nnabla.get_parameters",
                    "nnabla.parametric_functions.affine"],
             note="x (2, 3): views (need_grad=False, of an op output, two views), == / != "
                  "against 1, None, 1.5, an ndarray, an NdArray; x in [1, x], x in [view, 1]; "
                  "a.rewire_on(b): ==, hash before/after, a dict keyed by a before; "
                  "x[0, 0] = 1: hash after; PF.affine twice on one W (fix_parameters=True the "
                  "second time): a dict keyed by nn.get_parameters() values looked up with "
                  "each graph's W")
def variable44_equal__views_rewire_and_parameters(nn, F, PF, r):
    r.touch(V + "__eq__", V + "__hash__", V + "get_unlinked_variable", V + "rewire_on",
            V + "__setitem__")
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    u = x.get_unlinked_variable(need_grad=False)
    y = F.tanh(x)
    yu = y.get_unlinked_variable()
    res = {"view": [u == x, u != x, hash(u) == hash(x), u in [x], len({x, u}), {x: 1}.get(u)],
           "output's view": [yu == y, hash(yu) == hash(y), yu == x],
           "two views": [x.get_unlinked_variable() == u, hash(x.get_unlinked_variable())
                         == hash(u)]}
    for name, other in (("int", 1), ("None", None), ("float", 1.5), ("ndarray", np.zeros(3)),
                        ("NdArray", x.data)):
        res["== " + name] = outcome(lambda: x == other, raised=nnabla_refusal)
        res["!= " + name] = outcome(lambda: x != other, raised=nnabla_refusal)
    res["x in [1, x]"] = outcome(lambda: x in [1, x], raised=nnabla_refusal)
    res["x in [view, 1]"] = outcome(lambda: x in [u, 1], raised=nnabla_refusal)

    a, b = nn.Variable((2, 3)), F.tanh(nn.Variable((2, 3)))
    c = a.get_unlinked_variable()
    ha, hb = hash(a), hash(b)
    keyed = {a: "a"}
    a.rewire_on(b)
    res["rewired"] = [a == b, hash(a) == hb, hash(a) == ha, hash(b) == hb, c == a, c == b,
                      keyed.get(b), b in keyed]

    d = nn.Variable.from_numpy_array(np.zeros((2, 3)), need_grad=True)
    du = d.get_unlinked_variable()
    hd = hash(d)
    d[0, 0] = 1.0
    res["setitem"] = [d == du, hash(d) == hd, hash(du) == hd]

    with nn.parameter_scope("variable44"):
        h = PF.affine(x, 2, name="fc")
        h2 = PF.affine(x, 2, name="fc", fix_parameters=True)
    params = nn.get_parameters()
    names = {v: k for k, v in params.items()}
    w = params["variable44/fc/affine/W"]
    w2 = h2.parent.inputs[1]
    res["parameters"] = [names.get(h.parent.inputs[1]), names.get(w2), w2 == w,
                         w2.need_grad, w.need_grad, hash(w2) == hash(w)]
    return res


def _uint8_array(nn):
    src = nn.NdArray((2,))
    src.data = 0
    src.cast(np.uint8)
    return src


@nnabla_case(names=[ND + "copy_from", ND + "fill", ND + "zero", ND + "zeroing"],
             note="a uint8 NdArray (2,) zeroed, or filled with 3, 300, -1, then copied into a "
                  "new NdArray with use_current_context True / False: what the copy raises, "
                  "its dtype and values, the source's after; a zeroed source copied twice "
                  "(True, then False), its zeroing after; a zeroed source read (.data) then "
                  "copied with False; an int32 array filled then copied")
def copy_from__filled_source(nn, F, PF, r):
    r.touch(ND + "copy_from", ND + "fill", ND + "zero", ND + "zeroing")
    res = {}
    for what in ("zero", "fill 3", "fill 300", "fill -1"):
        for current in (True, False):
            src = _uint8_array(nn)
            if what == "zero":
                src.zero()
            else:
                src.fill(float(what.split()[1]))
            dst = nn.NdArray((2,))
            key = "%s, use_current_context=%s: " % (what, current)
            got = outcome(lambda: dst.copy_from(src, use_current_context=current) is dst,
                          raised=nnabla_refusal)
            res[key + "copy"] = got
            if got is True:
                res[key + "dst"] = dst.data.copy()
            res[key + "src"] = src.data.copy()
    src = _uint8_array(nn)
    src.zero()
    dst = nn.NdArray((2,))
    dst.copy_from(src)
    res["zeroed, copied twice"] = [outcome(lambda: dst.copy_from(src, use_current_context=False)
                                           is dst, raised=nnabla_refusal), src.zeroing]
    res["zeroed, copied twice: dst"] = dst.data.copy()
    src = _uint8_array(nn)
    src.zero()
    src.data
    dst = nn.NdArray((2,))
    dst.copy_from(src, use_current_context=False)
    res["zeroed then read"] = dst.data.copy()
    src = nn.NdArray.from_numpy_array(np.array([1, 2], np.int32))
    src.fill(7)
    dst = nn.NdArray((2,))
    dst.copy_from(src)
    res["int32 filled"] = dst.data.copy()
    return res


@nnabla_case(names=[FN + "abs", V + "backward", V + "d"],
             note="y = F.abs(x), x = [-0.7, 0.3, 0.5, 0, 0.9], static (forward) and dynamic; "
                  "x.d = [0.4, -0.6, 0.2, -0.5, -0.0] before y.backward(ones): y and x.g "
                  "(NNabla's backward reads the sign of the new x: abs.hpp:42)")
def abs__input_written_before_backward(nn, F, PF, r):
    r.touch(V + "backward", V + "d")
    res = {}
    for dynamic in (False, True):
        key = "dynamic " if dynamic else "static "
        x = nn.Variable.from_numpy_array(np.array([-0.7, 0.3, 0.5, 0.0, 0.9], np.float32),
                                         need_grad=True)
        with nn.auto_forward(dynamic):
            y = F.abs(x)
        if not dynamic:
            y.forward()
        x.d = np.array([0.4, -0.6, 0.2, -0.5, -0.0], np.float32)
        x.grad.zero()
        y.backward(np.ones(5, np.float32))
        res[key + "y"] = y.d.copy()
        res[key + "x.g"] = x.g.copy()
    return res


_X0 = [-0.7, 0.3, 0.5, 0.1, 0.9]
_X1 = [0.4, -0.6, 0.2, -0.5, 0.25]
_Y0 = [0.6, 0.8, -0.4, 0.7, 0.3]
_Y1 = [-0.3, 0.5, 0.9, 0.2, -0.8]
_P0 = [0.6, 0.8, 0.4, 0.7, 0.3]
_P1 = [0.3, 0.5, 0.9, 0.2, 0.8]

# op -> (how it is called, whether it takes two inputs, first input before/after, second's)
_OPS = {
    "mul2": (lambda F, x, y: F.mul2(x, y), (_X0, _X1), (_Y0, _Y1)),
    "div2": (lambda F, x, y: F.div2(x, y), (_X0, _X1), (_Y0, _Y1)),
    "maximum2": (lambda F, x, y: F.maximum2(x, y), (_X0, _X1), (_Y0, _Y1)),
    "relu": (lambda F, x, y: F.relu(x), (_X0, _X1), None),
    "sigmoid": (lambda F, x, y: F.sigmoid(x), (_X0, _X1), None),
    "sin": (lambda F, x, y: F.sin(x), (_X0, _X1), None),
    "tan": (lambda F, x, y: F.tan(x), (_X0, _X1), None),
    "atanh": (lambda F, x, y: F.atanh(x), (_X0, _X1), None),
    "softsign": (lambda F, x, y: F.softsign(x), (_X0, _X1), None),
    "log_sigmoid": (lambda F, x, y: F.log_sigmoid(x), (_X0, _X1), None),
    "r_pow_scalar": (lambda F, x, y: F.r_pow_scalar(x, 2.0), (_X0, _X1), None),
    "clip_by_value": (lambda F, x, y: F.clip_by_value(x, -0.5, 0.5), (_X0, _X1), None),
    "norm": (lambda F, x, y: F.norm(x), (_X0, _X1), None),
    "pow2": (lambda F, x, y: F.pow2(x, y), (_P0, _P1), (_Y0, _Y1)),
    "squared_error": (lambda F, x, y: F.squared_error(x, y), (_X0, _X1), (_Y0, _Y1)),
    "absolute_error": (lambda F, x, y: F.absolute_error(x, y), (_X0, _X1), (_Y0, _Y1)),
    "binary_cross_entropy": (lambda F, x, y: F.binary_cross_entropy(x, y), (_P0, _P1),
                             (_P1, _P0)),
}
_SAVED = ("ops/: the op's torch backward reads what its forward saved (tan's and atanh's "
          "output or input as torch's formula has it, softsign's, log_sigmoid's and "
          "r_pow_scalar's intermediates, squared_error's and absolute_error's x0 - x1, "
          "binary_cross_entropy's, clip_by_value's and norm's masks and sums, pow2's output "
          "for its exponent's gradient), "
          "so a value written into an input between the forward and the backward is not "
          "seen; NNabla 1.39's backward reads its inputs as it finds them "
          "(base_transform_unary.hpp:128, base_transform_binary.hpp): F.abs is fixed "
          "(ops/_arith.py _NnablaAbs), these are not")
_KNOWN = {}
for _dyn in ("static ", "dynamic "):
    for _op in ("tan", "softsign", "log_sigmoid", "r_pow_scalar", "clip_by_value", "norm",
                "squared_error", "absolute_error", "binary_cross_entropy"):
        _KNOWN[_dyn + _op + " x.g"] = _SAVED
    for _op in ("pow2", "squared_error", "absolute_error", "binary_cross_entropy"):
        _KNOWN[_dyn + _op + " y.g"] = _SAVED
_KNOWN["static atanh x.g"] = _SAVED


@nnabla_case(names=[V + "backward", V + "d", V + "g"],
             note="an op's inputs (need_grad) written (.d) between its forward (static: "
                  "forward(); dynamic: as made) and backward(ones): each input's g, for "
                  "element-wise ops some of whose backward reads an input (NNabla's reads the "
                  "new values); the ops that match (mul2, div2, maximum2, relu, sigmoid, sin, "
                  "dynamic atanh) guard the rest",
             known=_KNOWN)
def written_before_backward__ops(nn, F, PF, r):
    r.touch(V + "backward", V + "d", V + "g")
    res = {}
    for dynamic in (False, True):
        for name in sorted(_OPS):
            call, first, second = _OPS[name]
            key = ("dynamic " if dynamic else "static ") + name
            x = nn.Variable.from_numpy_array(np.array(first[0], np.float32), need_grad=True)
            y = (nn.Variable.from_numpy_array(np.array(second[0], np.float32), need_grad=True)
                 if second else None)
            with nn.auto_forward(dynamic):
                out = call(F, x, y)
            if not dynamic:
                out.forward()
            x.d = np.array(first[1], np.float32)
            x.grad.zero()
            if second:
                y.d = np.array(second[1], np.float32)
                y.grad.zero()
            out.backward(np.ones(out.shape, np.float32))
            res[key + " x.g"] = x.g.copy()
            if second:
                res[key + " y.g"] = y.g.copy()
    return res
