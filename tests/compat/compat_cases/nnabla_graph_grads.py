"""Where gradients go in NNabla's static graphs: an unlinked Variable shares its source's
gradient array (a backward through it accumulates there, and ``backward(grad=None)`` from the
source continues from it); the gradients of intermediates after ``forward(clear_no_need_grad=
True)``; ``need_grad=False`` set on an intermediate.
"""

import numpy as np

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


@nnabla_case(names=["nnabla.Variable.need_grad"],
             note="need_grad set between forward() and backward(): the backward reads every "
                  "Variable's need_grad again, but a function none of whose inputs needed a "
                  "gradient in the forward stays out of it")
def need_grad__set_after_forward(nn, F, r):
    r.touch("nnabla.Variable.need_grad")
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    w = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    h = F.tanh(x * w)
    y = F.sum(F.sigmoid(h) * 2.0 + x)
    out = {}

    def run(key, before, after):
        before()
        y.forward()
        x.g, w.g = 0, 0
        after()
        y.backward()
        out["x.g " + key], out["w.g " + key] = x.g.copy(), w.g.copy()
        x.need_grad, w.need_grad, h.need_grad = True, True, True

    def nothing():
        pass

    def x_off():
        x.need_grad = False

    def x_on():
        x.need_grad = True

    def h_off():
        h.need_grad = False

    def h_on():
        h.need_grad = True

    run("leaf off after", nothing, x_off)
    run("leaf on after", x_off, x_on)
    run("leaf off and on again", nothing, lambda: (x_off(), x_on()))
    run("stop lifted after", h_off, h_on)
    run("stop set after", nothing, h_off)
    # a stop lifted after the forward where the consumer took part through another input
    z = F.sum(h * x)
    h.need_grad = False
    z.forward()
    x.g, w.g = 0, 0
    h.need_grad = True
    z.backward()
    out["x.g stop lifted, consumer active"] = x.g.copy()
    out["w.g stop lifted, consumer active"] = w.g.copy()
    # the same graph, forward again: the marks of now
    z.forward()
    x.g, w.g = 0, 0
    z.backward()
    out["x.g forward again"], out["w.g forward again"] = x.g.copy(), w.g.copy()
    return out


@nnabla_case(names=["nnabla.Variable.forward", "nnabla.Variable.backward"],
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


@nnabla_case(names=["nnabla.Variable.persistent", "nnabla.Variable.backward"],
             note="persistent set between forward(clear_no_need_grad=True) and "
                  "backward(clear_buffer=True) keeps that intermediate's gradient (and the "
                  "value its backward read); need_grad=False set in between still leaves "
                  "every other intermediate's gradient after a backward without clear_buffer")
def clear_no_need_grad__marks_after_forward(nn, F, r):
    r.touch("nnabla.Variable.persistent", "nnabla.Variable.backward")
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    w = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    h = F.tanh(x * w)
    h2 = F.sigmoid(h)
    y = F.sum(F.exp(h2) * 2.0 + h)
    y.forward(clear_no_need_grad=True)
    x.g, w.g = 0, 0
    h.persistent = True
    y.backward(clear_buffer=True)
    out = {"x.g": x.g.copy(), "h.g": h.g.copy(), "h.d": h.d.copy()}
    h.persistent = False
    y.forward(clear_no_need_grad=True)
    x.g, w.g = 0, 0
    h.need_grad = False
    y.backward()
    out.update({"x.g stopped": x.g.copy(), "h2.g stopped": h2.g.copy()})
    return out


@nnabla_case(names=["nnabla.Variable.need_grad"],
             note="need_grad=True set after the forward on an op output whose inputs needed "
                  "none: its function took no part in the forward, so no gradient reaches it "
                  "(its .g, set to 7 before, stays); where the consumer took part through "
                  "another input that input still gets its gradient")
def need_grad__start_after_forward(nn, F, r):
    r.touch("nnabla.Variable.need_grad")
    X, C = r.randn(3), r.randn(3)
    out = {}
    x = nn.Variable.from_numpy_array(X)
    h = F.tanh(x)
    y = F.sum(F.exp(h) * 2.0)
    y.forward()
    h.need_grad = True
    h.g = 7.0
    y.backward()
    out["h.g start after"] = h.g.copy()
    x = nn.Variable.from_numpy_array(X, need_grad=True)
    c = nn.Variable.from_numpy_array(C)
    b = F.tanh(c)
    b2 = F.sigmoid(b)
    y = F.sum(F.exp(b2) * x)
    y.forward()
    b.need_grad = True
    b.g, b2.g, x.g = 7.0, 7.0, 7.0
    y.backward()
    out.update({"b.g mixed": b.g.copy(), "b2.g mixed": b2.g.copy(), "x.g mixed": x.g.copy()})
    # set before the forward: the gradient starts there
    y.forward()
    x.g = 7.0
    y.backward()
    out.update({"b.g before": b.g.copy(), "x.g before": x.g.copy()})
    return out


@nnabla_case(names=["nnabla.Variable.need_grad", "nnabla.auto_forward"],
             note="dynamic mode: need_grad set after an op ran follows the static rule. False "
                  "on an output its consumers used stops the gradient there (what lies behind "
                  "it keeps its .g, set to 7 before); True lifts it; True on an output whose "
                  "op took no part gives it none; False set before the consumers ran keeps "
                  "them off it even when lifted after, and lifted before them it passes all")
def need_grad__dynamic_after_the_op_ran(nn, F, r):
    r.touch("nnabla.Variable.need_grad", "nnabla.auto_forward")
    X, W = r.randn(3), r.randn(3)
    out = {}

    def grads(key, *named):
        out.update({f"{key} {n}.g": v.g.copy() for n, v in named})

    def sevens(*vs):
        for v in vs:
            v.g = 7.0

    with nn.auto_forward():
        x = nn.Variable.from_numpy_array(X, need_grad=True)
        w = nn.Variable.from_numpy_array(W, need_grad=True)
        m = x * w
        h = F.tanh(m)
        y = F.sum(h * 3.0 + x)
    sevens(x, w, m, h)
    h.need_grad = False
    y.backward()
    grads("stopped", ("x", x), ("w", w), ("m", m), ("h", h))
    h.need_grad = True
    sevens(x, w, m, h)
    y.backward()
    grads("lifted", ("x", x), ("w", w), ("m", m), ("h", h))
    with nn.auto_forward():
        x = nn.Variable.from_numpy_array(X)
        h = F.tanh(x)
        y = F.sum(F.exp(h) * 2.0)
    h.need_grad = True
    sevens(x, h)
    y.backward()
    grads("started", ("h", h))
    with nn.auto_forward():
        x = nn.Variable.from_numpy_array(X, need_grad=True)
        h = F.tanh(x)
        h.need_grad = False
        y = F.sum(h * 3.0 + x)
        h.need_grad = True
    sevens(x, h)
    y.backward()
    grads("stopped before, lifted after", ("x", x), ("h", h))
    with nn.auto_forward():
        x = nn.Variable.from_numpy_array(X, need_grad=True)
        h = F.tanh(x)
        h.need_grad = False
        h.need_grad = True
        y = F.sum(h * 3.0 + x)
    sevens(x, h)
    y.backward()
    grads("stopped and lifted before", ("x", x), ("h", h))
    with nn.auto_forward():
        x = nn.Variable.from_numpy_array(X, need_grad=True)
        w = nn.Variable.from_numpy_array(W, need_grad=True)
        y = F.sum(F.tanh(x * w))
    w.need_grad = False
    sevens(x, w)
    y.backward()
    grads("leaf off after", ("x", x), ("w", w))
    return out


@nnabla_case(names=["nnabla.Variable.need_grad", "nnabla.auto_forward"],
             note="dynamic mode: a leaf set need_grad=True after ops used it gets its gradient "
                  "through the ops that took part (another input needed a gradient when they "
                  "ran: x * w, tanh(x * w) then reused in another op), none through an op that "
                  "took none (exp(w)); the other inputs' gradients are unchanged")
def need_grad__dynamic_leaf_switched_on_late(nn, F, r):
    r.touch("nnabla.Variable.need_grad", "nnabla.auto_forward")
    X, W, C = r.randn(2, 3), r.randn(2, 3), r.randn(2, 3)
    out = {}
    with nn.auto_forward():
        x = nn.Variable.from_numpy_array(X, need_grad=True)
        w = nn.Variable.from_numpy_array(W)
        c = nn.Variable.from_numpy_array(C)
        h = F.tanh(x * w)
        z = F.exp(w)
        y = F.sum(h * z + h * w + F.sigmoid(w + c))
    w.need_grad = True
    x.g, w.g, h.g = 0.0, 7.0, 0.0
    y.backward()
    out.update({"x.g": x.g.copy(), "w.g": w.g.copy(), "h.g": h.g.copy()})
    w.g = 0.0
    y.backward(grad=2.0)               # again: the recorded ops are kept
    out["w.g again, seed 2"] = w.g.copy()
    with nn.auto_forward():            # through an op of several outputs, w used twice in it
        x = nn.Variable.from_numpy_array(X, need_grad=True)
        w = nn.Variable.from_numpy_array(W)
        a, b = F.split(F.stack(x * w, w, axis=0), axis=0)
        y = F.sum(a * b) + F.sum(F.tanh(b))
    w.need_grad = True
    w.g = 0.0
    y.backward(clear_buffer=True)
    out["w.g split"] = w.g.copy()
    return out


@nnabla_case(names=["nnabla.grad", "nnabla.Variable.need_grad", "nnabla.auto_forward"],
             note="nn.grad in dynamic mode reads need_grad as it is when called: an "
                  "intermediate set False after its consumers ran stops the gradient there "
                  "(False then True again: it passes); a stopped intermediate asked for gets "
                  "zeros; an output's own need_grad=False is not read without a seed, and is "
                  "with one (NNabla multiplies the output by its seed first)")
def grad__dynamic_after_a_stop(nn, F, r):
    r.touch("nnabla.grad", "nnabla.Variable.need_grad", "nnabla.auto_forward")
    X = r.randn(2, 3)
    out = {}

    def graph():
        with nn.auto_forward():
            x = nn.Variable.from_numpy_array(X, need_grad=True)
            h = F.tanh(x)
            y = F.sum(h * x + F.sin(h) * 2.0)
        return x, h, y

    x, h, y = graph()
    h.need_grad = False
    with nn.auto_forward():
        out["stopped"] = nn.grad([y], [x])[0].d.copy()
        out["stopped, w.r.t. h"] = nn.grad([y], [h])[0].d.copy()
    h.need_grad = True
    with nn.auto_forward():
        out["lifted"] = nn.grad([y], [x])[0].d.copy()
    x, h, y = graph()
    with nn.auto_forward():
        z = F.sum(F.exp(h))
    h.need_grad = False
    with nn.auto_forward():
        dx, = nn.grad([y, z], [x])
    out["two outputs, stopped"] = dx.d.copy()
    x, h, y = graph()
    y.need_grad = False
    with nn.auto_forward():
        dx, = nn.grad([y], [x])
        out["output stopped itself"] = dx.d.copy()
        dx, = nn.grad([y], [x], grad_outputs=[3.0])
    out["output stopped itself, seed 3"] = dx.d.copy()
    return out


@nnabla_case(names=["nnabla.grad", "nnabla.Variable.need_grad", "nnabla.auto_forward"],
             note="nn.grad in dynamic mode: a leaf set need_grad=True after ops used it gets "
                  "its gradient through the ops that took part (x * w, h * w; not exp(w)), "
                  "which can be differentiated again; asked alone, with a seed")
def grad__dynamic_leaf_switched_on_late(nn, F, r):
    r.touch("nnabla.grad", "nnabla.Variable.need_grad", "nnabla.auto_forward")
    X, W = r.randn(2, 3), r.randn(2, 3)
    out = {}
    with nn.auto_forward():
        x = nn.Variable.from_numpy_array(X, need_grad=True)
        w = nn.Variable.from_numpy_array(W)
        h = F.tanh(x * w)
        y = F.sum(h * F.exp(w) + h * w)
    w.need_grad = True
    with nn.auto_forward():
        dw, dx = nn.grad([y], [w, x])
        out.update({"dw": dw.d.copy(), "dx": dx.d.copy()})
        out["d sum(dw^2) / dx"] = nn.grad([F.sum(dw * dw)], [x])[0].d.copy()
        out["dw alone, seed 2"] = nn.grad([y], [w], grad_outputs=[2.0])[0].d.copy()
    with nn.auto_forward():
        z = F.sum(F.exp(w) * 3.0)
        x2 = nn.Variable.from_numpy_array(X)
        v = F.sum(F.exp(x2) * 2.0)
    x2.need_grad = True
    with nn.auto_forward():
        out["no op took part"] = nn.grad([v], [x2])[0].d.copy()
        out["from the start"] = nn.grad([z], [w])[0].d.copy()
    return out


@nnabla_case(names=["nnabla.Variable.need_grad", "nnabla.functions.mean_subtraction",
                    "nnabla.functions.roi_align"],
             note="need_grad=False set after the forward of a graph holding ops that cannot be "
                  "traced (Stadyn runs it eagerly) but are deterministic: mean_subtraction "
                  "without its update, roi_align; the gradient stops there as in any graph")
def need_grad__set_after_forward_eager_graph(nn, F, r):
    r.touch("nnabla.Variable.need_grad", "nnabla.functions.mean_subtraction",
            "nnabla.functions.roi_align")
    X = r.randn(1, 2, 4, 4)
    out = {}

    def graph():
        x = nn.Variable.from_numpy_array(X, need_grad=True)
        mean = nn.Variable.from_numpy_array(np.full((2, 4, 4), 0.25))
        t = nn.Variable.from_numpy_array(np.array([3.0]))
        h = F.tanh(x)
        m = F.mean_subtraction(h, mean, t, update_running_mean=False)
        boxes = nn.Variable.from_numpy_array(np.array([[0, 0.5, 0.5, 2.5, 3.0]]))
        a = F.roi_align(m, boxes, (2, 2), (1.0, 1.0), 2)
        y = F.sum(a * 3.0) + F.sum(F.sin(h) * x)
        return x, {"h": h, "m": m}, y

    for name in ("h", "m"):
        x, marks, y = graph()
        y.forward()
        marks[name].need_grad = False
        x.g = 0
        y.backward()
        out[f"x.g, {name} set off after the forward"] = x.g.copy()
        out[f"y, {name} set off after the forward"] = y.d.copy()
    return out


@nnabla_case(names=["nnabla.Variable.need_grad", "nnabla.Variable.backward"],
             note="static graph z = sum(m * x + exp(m)), m = 3x, x = [1, 2]: one forward, "
                  "then m.need_grad = False and two backwards (cut), m.need_grad = True and "
                  "two backwards with no forward between (the whole gradient: the backward "
                  "compares the marks with the program's forward, not with the cut "
                  "backward's), cut again, then a forward(clear_no_need_grad) and "
                  "backward(clear_buffer)")
def need_grad__set_back_between_backwards(nn, F, r):
    r.touch("nnabla.Variable.need_grad", "nnabla.Variable.backward")
    x = nn.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32), need_grad=True)
    m = F.mul_scalar(x, 3.0)
    z = F.sum(m * x + F.exp(m))
    z.forward()
    out = {}
    for flag, label in ((False, "cut"), (True, "uncut"), (False, "cut again")):
        m.need_grad = flag
        for i in range(2):
            x.grad.zero()
            z.backward()
            out["%s %d" % (label, i)] = x.g.copy()
    m.need_grad = True
    x.grad.zero()
    z.forward(clear_no_need_grad=True)
    z.backward(clear_buffer=True)
    out["after a forward"] = x.g.copy()
    return out
