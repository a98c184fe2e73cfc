"""NNabla 1.39's Variable identity (nneq44).

``==`` and ``hash()`` of Variables compare the C++ ``nbla::Variable`` underneath
(``_variable.pyx`` ``__eq__``/``__hash__``): an unlinked view, a parametric function's parameter
in a graph that sees another ``need_grad`` (a view of the registered one) and a Variable
``rewire_on`` another equal and hash as the original; Stadyn compared identity, so a dict keyed
by ``nn.get_parameters()``'s values missed the fixed graph's parameter.
"""

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import nnabla_refusal, outcome

V = "nnabla.Variable."


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
