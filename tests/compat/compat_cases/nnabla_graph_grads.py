"""Where gradients go in NNabla's static graphs: an unlinked Variable shares its source's
gradient array (a backward through it accumulates there, and ``backward(grad=None)`` from the
source continues from it); the gradients of intermediates after ``forward(clear_no_need_grad=
True)``; ``need_grad=False`` set on an intermediate.
"""

from compat_harness import nnabla_case


@nnabla_case(names=["nnabla.Variable.get_unlinked_variable", "nnabla.Variable.backward",
                    "nnabla.Variable.g"],
             note="two-stage backward: a loss on h.get_unlinked_variable(need_grad=True) "
                  "fills h's gradient, h.backward(grad=None) carries it to h's inputs")
def unlinked__shares_grad(nn, F, r):
    r.touch("nnabla.Variable.get_unlinked_variable", "nnabla.Variable.backward",
            "nnabla.Variable.g")
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    w = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    h = F.tanh(x * w)
    h.persistent = True
    u = h.get_unlinked_variable(need_grad=True)
    loss = F.sum(F.sigmoid(u) * 3.0)
    h.forward()
    loss.forward()
    x.g = 0
    w.g = 0
    loss.backward()
    out = {"u.g": u.g.copy(), "h.g": h.g.copy(), "x.g before": x.g.copy()}
    h.backward(grad=None)
    out.update({"x.g": x.g.copy(), "w.g": w.g.copy()})
    # a second backward accumulates into the shared array
    loss.forward()
    loss.backward()
    out["h.g accumulated"] = h.g.copy()
    # assignments through either name reach the other
    u.g = 5.0
    out["h.g after u.g = 5"] = h.g.copy()
    h.g = 1.0
    out["u.g after h.g = 1"] = u.g.copy()
    # need_grad=False: no gradient reaches it
    v = h.get_unlinked_variable(need_grad=False)
    h.g = 0.0
    loss2 = F.sum(v * 2.0)
    loss2.forward()
    loss2.backward()
    out["h.g through need_grad=False"] = h.g.copy()
    return out


@nnabla_case(names=["nnabla.Variable.need_grad"],
             known={"x.g set after forward": "need_grad=False set between forward() and "
                                             "backward() reaches the next forward's plan only: "
                                             "the backward runs the program the forward built "
                                             "(stadyn.graph._runner.backward)"},
             note="need_grad=False set on an op's output stops the gradient there; True lifts "
                  "it; an output's inferred need_grad does not stop anything")
def need_grad__false_on_an_intermediate(nn, F, r):
    r.touch("nnabla.Variable.need_grad")
    x = nn.Variable.from_numpy_array(r.randn(3), need_grad=True)
    w = nn.Variable.from_numpy_array(r.randn(3), need_grad=True)
    h = F.tanh(x * w)
    y = F.sum(h * 3.0 + F.sigmoid(x))
    out = {}

    def run(key):
        y.forward()
        x.g = 0
        w.g = 0
        y.backward()
        out["x.g " + key], out["w.g " + key] = x.g.copy(), w.g.copy()

    h.need_grad = False
    run("stopped")
    out["h.need_grad"] = bool(h.need_grad)
    h.need_grad = True
    run("lifted")
    y.forward()
    h.need_grad = False
    x.g = 0
    y.backward()
    out["x.g set after forward"] = x.g.copy()
    h.need_grad = True
    # an output whose need_grad was inferred False, its input switched on later
    x2 = nn.Variable.from_numpy_array(r.randn(3))
    h2 = F.tanh(x2)
    z = F.sum(F.exp(h2) * x2)
    x2.need_grad = True
    z.forward()
    x2.g = 0
    z.backward()
    out["inferred"] = x2.g.copy()
    h2.need_grad = False
    z.forward()
    x2.g = 0
    z.backward()
    out["inferred, then set False"] = x2.g.copy()
    return out


_AFTER_CNNG = ("forward(clear_no_need_grad=True) gives values and (after backward()) gradients "
               "to the persistent intermediates only: the plan's backward program returns no "
               "other gradient, which would hold every intermediate's gradient to the end of "
               "the backward that saves the memory (stadyn.graph._plan._lower, "
               "Subgraph.filled)")


@nnabla_case(names=["nnabla.Variable.forward", "nnabla.Variable.backward"],
             known={"m.g": _AFTER_CNNG, "h.g": _AFTER_CNNG, "h2.g": _AFTER_CNNG,
                    "e.g": _AFTER_CNNG, "h.d kept": _AFTER_CNNG, "h2.d kept": _AFTER_CNNG,
                    "e.d kept": _AFTER_CNNG},
             note="NNabla's clear_no_need_grad frees only the values no backward reads (here "
                  "m = x * w: Mul2's backward reads its inputs, tanh/sigmoid/exp their outputs) "
                  "and keeps every intermediate's gradient after backward() without "
                  "clear_buffer; m's freed value is left out (NNabla reads a stale buffer)")
def clear_no_need_grad__intermediates(nn, F, r):
    r.touch("nnabla.Variable.forward", "nnabla.Variable.backward")
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    w = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    m = x * w
    h = F.tanh(m)
    h2 = F.sigmoid(h)
    e = F.exp(h2)
    y = F.sum(e * 2.0 + h)
    y.forward(clear_no_need_grad=True)
    out = {"y": y.d.copy(), "h.d kept": h.d.copy(), "h2.d kept": h2.d.copy(),
           "e.d kept": e.d.copy()}
    x.g = 0
    w.g = 0
    y.backward()
    out.update({"x.g": x.g.copy(), "w.g": w.g.copy(), "m.g": m.g.copy(), "h.g": h.g.copy(),
                "h2.g": h2.g.copy(), "e.g": e.g.copy()})
    # a persistent intermediate keeps both through clear_no_need_grad and clear_buffer
    h.persistent = True
    y.forward(clear_no_need_grad=True)
    y.backward(clear_buffer=True)
    out.update({"persistent h.d": h.d.copy(), "persistent h.g": h.g.copy(),
                "x.g twice": x.g.copy()})
    return out
