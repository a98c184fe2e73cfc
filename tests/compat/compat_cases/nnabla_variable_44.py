"""NNabla 1.39's Variable identity and an NdArray copy (nneq44).

* ``==`` and ``hash()`` of Variables compare the C++ ``nbla::Variable`` underneath
  (``_variable.pyx`` ``__eq__``/``__hash__``): an unlinked view, a parametric function's
  parameter in a graph that sees another ``need_grad`` (a view of the registered one) and a
  Variable ``rewire_on`` another equal and hash as the original; Stadyn compared identity, so
  a dict keyed by ``nn.get_parameters()``'s values missed the fixed graph's parameter;
* ``NdArray.copy_from`` of an array zeroed or filled and not read since (NNabla holds no array
  for it yet): with the current context a float32 copy of the value itself, the source made
  float32 too; without it an IndexError;  Stadyn copied the source's dtype (uint8, wrapped).
"""

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import nnabla_refusal, outcome

V = "nnabla.Variable."
ND = "nnabla.NdArray."


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
