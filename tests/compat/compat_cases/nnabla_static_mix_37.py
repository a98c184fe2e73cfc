"""NNabla 1.39's static and dynamic graphs mixed (nnstatic37).

NNabla has one graph whatever the mode: a function made in ``auto_forward`` on a Variable a
static ``forward()`` computed is that Variable's reader like any other, and a backward from it
walks on into the static functions (src/nbla/computation_graph/variable.cpp ``backward``),
and the other way round.
"""

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import as_raised, outcome

V = "nnabla.Variable."


def _returned(got):
    return "returns"


def _raised(exc):
    return as_raised(exc, first_line=True)


def _x(nn, values=(1.0, 2.0)):
    return nn.Variable.from_numpy_array(np.array(values, np.float32), need_grad=True)


@nnabla_case(names=[V + "forward", V + "backward", "nnabla.set_auto_forward"])
def static_mix__dynamic_loss_on_static_output(nn, F, r):
    """``y = F.sum(x*2); y.forward()``, then in ``auto_forward`` ``l = y*3; l.backward()``:
    ``x.g == [6, 6]`` and ``y.g == 3``; a second backward adds into ``x.g`` (``y.g`` written
    anew); a gradient ``x`` held before adds; ``y.need_grad = False`` stops it; a ``y`` never
    forwarded reads zeros and still carries the gradient."""
    r.touch(V + "forward", V + "backward", "nnabla.set_auto_forward")
    res = {}
    x = _x(nn)
    y = F.sum(x * 2.0)
    y.forward()
    nn.set_auto_forward(True)
    loss = y * 3.0
    loss.backward()
    nn.set_auto_forward(False)
    res["x.g"], res["y.g"], res["l.d"] = x.g.copy(), y.g.copy(), loss.d.copy()
    loss.backward()
    res["second backward x.g"], res["second backward y.g"] = x.g.copy(), y.g.copy()

    x = _x(nn)
    x.g = np.array([10.0, 10.0], np.float32)
    y = F.sum(x * 2.0)
    y.forward()
    nn.set_auto_forward(True)
    loss = y * 3.0 + F.sum(x)
    loss.backward()
    nn.set_auto_forward(False)
    res["held gradient x.g"] = x.g.copy()

    x = _x(nn)
    y = F.sum(x * 2.0)
    y.forward()
    y.need_grad = False
    nn.set_auto_forward(True)
    loss = y * 3.0
    loss.backward()
    nn.set_auto_forward(False)
    res["y.need_grad=False x.g"] = x.g.copy()

    x = _x(nn)
    y = F.sum(x * 2.0)
    nn.set_auto_forward(True)
    loss = y * 3.0
    loss.backward()
    nn.set_auto_forward(False)
    res["not forwarded l.d"], res["not forwarded x.g"] = loss.d.copy(), x.g.copy()
    return res


@nnabla_case(names=[V + "forward", V + "backward", "nnabla.forward_all"])
def static_mix__buffers_and_roots(nn, F, r):
    """``h = exp(x); y = sum(h*h)`` forwarded with ``clear_no_need_grad`` (or ``h``
    persistent, ``clear_buffer``), then ``l = y*3`` backward in ``auto_forward``: ``x.g``,
    ``y.g``, ``h.g`` (``h``'s, the static part's).  Two roots of one ``forward_all``
    (``a = sum(x*x)``, ``b = sum(x*3)``) feeding ``l = a*2 + b*5``; a static output read
    beside one of its own intermediates (``l = sum(h * reshape(y))``: ``h.g`` sums both
    paths).  NNabla's ``y.g`` after ``l.backward(clear_buffer=True)`` is memory the clear
    reused (16.3 here), not compared."""
    r.touch(V + "forward", V + "backward", "nnabla.forward_all")
    res = {}
    for how in ("clear_no_need_grad", "persistent h", "clear_buffer backward"):
        x = _x(nn)
        h = F.exp(x)
        y = F.sum(h * h)
        if how == "persistent h":
            h.persistent = True
            y.forward(clear_buffer=True)
        elif how == "clear_no_need_grad":
            y.forward(clear_no_need_grad=True)
        else:
            y.forward()
        nn.set_auto_forward(True)
        loss = y * 3.0
        loss.backward(clear_buffer=how == "clear_buffer backward")
        nn.set_auto_forward(False)
        res[how + " x.g"] = x.g.copy()
        if how != "clear_buffer backward":
            res[how + " y.g"], res[how + " h.g"] = y.g.copy(), h.g.copy()

    x = _x(nn)
    a, b = F.sum(x * x), F.sum(x * 3.0)
    nn.forward_all([a, b])
    nn.set_auto_forward(True)
    loss = a * 2.0 + b * 5.0
    loss.backward()
    nn.set_auto_forward(False)
    res["two roots x.g"], res["two roots a.g"], res["two roots b.g"] = (
        x.g.copy(), a.g.copy(), b.g.copy())

    x = _x(nn)
    h = x * x
    y = F.sum(h)
    y.forward()
    nn.set_auto_forward(True)
    loss = F.sum(h * F.reshape(y, (1,)))
    loss.backward()
    nn.set_auto_forward(False)
    res["inner x.g"], res["inner h.g"], res["inner y.g"] = x.g.copy(), h.g.copy(), y.g.copy()
    return res


@nnabla_case(names=[V + "forward", V + "backward", "nnabla.solvers.Sgd.update",
                    "nnabla.parametric_functions.affine"])
def static_mix__parameters_and_solver(nn, F, PF, S, r):
    """``PF.affine`` forwarded statically, its loss (``squared_error`` against ones, mean)
    computed and differentiated in ``auto_forward``, ``Sgd(0.1)`` updating: three steps on
    new inputs, the losses, the gradients of the first step and the parameters after."""
    r.touch(V + "forward", V + "backward", "nnabla.solvers.Sgd.update",
            "nnabla.parametric_functions.affine")
    nn.clear_parameters()
    x = nn.Variable((2, 3))
    y = PF.affine(x, 2, name="fc", w_init=np.full((3, 2), 0.1, np.float32),
                  b_init=np.zeros(2, np.float32))
    solver = S.Sgd(0.1)
    solver.set_parameters(nn.get_parameters())
    res = {}
    for step in range(3):
        x.d = np.arange(6.0, dtype=np.float32).reshape(2, 3) * (step + 1) * 0.1
        y.forward()
        solver.zero_grad()
        nn.set_auto_forward(True)
        target = nn.Variable.from_numpy_array(np.ones((2, 2), np.float32))
        loss = F.mean(F.squared_error(y, target))
        loss.backward()
        nn.set_auto_forward(False)
        res["loss %d" % step] = loss.d.copy()
        if step == 0:
            for k, p in nn.get_parameters().items():
                res["first step grad " + k] = p.g.copy()
            res["first step y.g"] = y.g.copy()
        solver.update()
    for k, p in nn.get_parameters().items():
        res["after " + k] = p.d.copy()
    nn.clear_parameters()
    return res


@nnabla_case(names=[V + "forward", V + "backward", "nnabla.set_auto_forward"])
def static_mix__static_over_dynamic(nn, F, r):
    """The other way round: ``h = x*x`` computed in ``auto_forward``, ``y = sum(h*3)`` a static
    graph over it, backward from ``y`` (``x.g``, ``h.g``); and both ways in one graph:
    ``l = y*y`` in ``auto_forward`` again, backward from ``l`` through the static ``y`` into
    the dynamic ``h`` and ``x``."""
    r.touch(V + "forward", V + "backward", "nnabla.set_auto_forward")
    res = {}
    for both in (False, True):
        k = "dynamic-static-dynamic " if both else "static over dynamic "
        nn.set_auto_forward(True)
        x = _x(nn)
        h = x * x
        nn.set_auto_forward(False)
        y = F.sum(h * 3.0)
        y.forward()
        if both:
            nn.set_auto_forward(True)
            loss = y * y
            loss.backward()
            nn.set_auto_forward(False)
            res[k + "y.g"] = y.g.copy()
        else:
            y.backward()
        res[k + "x.g"], res[k + "h.g"] = x.g.copy(), h.g.copy()
    return res


@nnabla_case(names=[V + "reshape", V + "forward", V + "backward", V + "need_grad"])
def static_mix__reshaped_view_read_after_its_source(nn, F, r):
    """``w = h.reshape((3, 1), unlink=True)`` of ``h = tanh(x*2)``, read by ``relu(w*5 - 2)``
    after ``h``'s function (``sum(h*1.5) + sum(t)``) or before it (``sum(t) + sum(h*1.5)``),
    ``w.need_grad`` False or True: the loss and ``t`` at the first forward, at a forward on
    new ``x``, and the gradients after (``h.g`` is ``w.g``, one array: 6.5 where the relu
    passes with ``w.need_grad``).  NNabla's value after ``forward(clear_buffer=True)``
    reads memory the clear let go of, not compared."""
    r.touch(V + "reshape", V + "forward", V + "backward", V + "need_grad")
    res = {}
    for reader_first in (False, True):
        for need_grad in (False, True):
            k = "%s need_grad=%s " % ("reader first" if reader_first else "reader after",
                                      need_grad)
            x = _x(nn, (0.5, -1.0, 2.0))
            h = F.tanh(x * 2.0)
            w = h.reshape((3, 1), unlink=True)
            w.need_grad = need_grad
            t = F.relu(w * 5.0 - 2.0)
            if reader_first:
                loss = F.sum(t) + F.sum(h * 1.5)
            else:
                loss = F.sum(h * 1.5) + F.sum(t)
            loss.forward()
            res[k + "first loss"], res[k + "first t"] = loss.d.copy(), t.d.copy()
            x.d = np.array([1.0, -2.0, 0.25], np.float32)
            loss.forward()
            res[k + "new x loss"], res[k + "new x t"] = loss.d.copy(), t.d.copy()
            x.grad.zero()
            loss.backward()
            res[k + "x.g"], res[k + "h.g"], res[k + "w.g"] = x.g.copy(), h.g.copy(), w.g.copy()
    return res


@nnabla_case(names=[V + "backward", "nnabla.functions.sink", "nnabla.grad"])
def static_mix__sink_fills_its_inputs_gradients(nn, F, r):
    """``F.sink(..., one_input_grad=True)``'s backward fills each input's ``g`` with 1
    (sink.cpp: ``inp->grad()->fill(1)``), a leaf's too (``a.g = 4`` before: 1, plus 3 from
    ``sum(a*3)``, another input), on every backward (``l1.g = 0.3`` written between); static
    and dynamic.  ``nn.grad`` through a sink, either ``one_input_grad``, raises NNabla's
    ``NotImplementedError``."""
    r.touch(V + "backward", "nnabla.functions.sink", "nnabla.grad")
    res = {}
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)
        x = _x(nn)
        a = _x(nn)
        a.g = np.array([4.0, 4.0], np.float32)
        l1 = F.sum(x * 2.0)
        l2 = F.sum(x * x)
        m = l1 * 2.0
        s = F.sink(a, F.sum(a * 3.0), l1, l2, m)
        l2.g = 0.7
        s.forward()
        s.backward()
        for name, v in (("a", a), ("l1", l1), ("l2", l2), ("m", m), ("x", x)):
            res[k + name + ".g"] = v.g.copy()
        l1.g = 0.3
        l2.g = 0.3
        s.backward()
        for name, v in (("a", a), ("l1", l1), ("l2", l2), ("x", x)):
            res[k + "second " + name + ".g"] = v.g.copy()
        for one in (True, False):
            s2 = F.sink(l1, l2, one_input_grad=one)
            s2.forward()
            res[k + "nn.grad one_input_grad=%s" % one] = outcome(
                lambda: nn.grad([s2], [x]), _returned, _raised)
        nn.set_auto_forward(False)
    return res


@nnabla_case(names=["nnabla.get_parameters", "nnabla.parameter_scope",
                    "nnabla.clear_parameters", "nnabla.parameter.get_parameter_or_create"])
def static_mix__scopes_placed_when_entered(nn, r):
    """``nn.get_parameters()``'s order places a scope where it was first entered, empty or not
    (NNabla makes its dict then): a scope entered before a parameter outside it, nested
    scopes entered empty and filled later, re-entered scopes, ``'p/q'`` entering two, the
    listing from inside a scope, and ``clear_parameters`` forgetting the scopes it clears."""
    r.touch("nnabla.get_parameters", "nnabla.parameter_scope", "nnabla.clear_parameters",
            "nnabla.parameter.get_parameter_or_create")
    gp = nn.parameter.get_parameter_or_create
    res = {}

    def listed():
        return list(nn.get_parameters(grad_only=False).keys())

    nn.clear_parameters()
    with nn.parameter_scope("b"):
        pass
    gp("x", (1,))
    with nn.parameter_scope("b"):
        gp("W", (1,))
    res["entered empty first"] = listed()
    nn.clear_parameters()
    with nn.parameter_scope("a"):
        with nn.parameter_scope("inner"):
            pass
        gp("W", (1,))
        with nn.parameter_scope("inner"):
            gp("V", (1,))
    gp("y", (1,))
    with nn.parameter_scope("c"):
        with nn.parameter_scope("d"):
            pass
    with nn.parameter_scope("a"):
        gp("b", (1,))
    with nn.parameter_scope("c"):
        with nn.parameter_scope("e"):
            gp("Q", (1,))
        with nn.parameter_scope("d"):
            gp("R", (1,))
    res["nested"] = listed()
    with nn.parameter_scope("a"):
        res["inside a"] = listed()
    nn.clear_parameters()
    with nn.parameter_scope("p/q"):
        pass
    gp("z", (1,))
    with nn.parameter_scope("p"):
        gp("w", (1,))
    with nn.parameter_scope("p/q"):
        gp("v", (1,))
    res["two at once"] = listed()
    nn.clear_parameters()
    with nn.parameter_scope("k"):
        pass
    gp("z", (1,))
    nn.clear_parameters()
    gp("z", (1,))
    with nn.parameter_scope("k"):
        gp("w", (1,))
    res["after clear"] = listed()
    nn.clear_parameters()
    return res


@nnabla_case(names=[V + "forward", V + "backward", "nnabla.grad", "nnabla.set_auto_forward"])
def static_mix__intermediate_output_and_grad(nn, F, PF, r):
    """A dynamic loss over ``h``, an inner output of a static graph forwarded from ``y = h*5``:
    ``l.backward()`` after ``x.d`` changed walks ``h``'s function with the new ``x`` (``x*x``:
    ``x.g = 3 * 2x``) and runs no forward (``h.d``, ``y.d`` as forwarded); a second backward
    adds.  ``nn.grad`` of a dynamic ``l = y*3`` over a forwarded ``y = sum(x*x)``: ``dy`` is 3
    and ``dx`` goes on through ``y``'s function (6x: Stadyn gave zeros), differentiable again,
    and through a static dropout with its forward's mask; a static ``PF.affine`` under a
    dynamic loss: ``nn.grad`` w.r.t. its parameters, and w.r.t. a dynamic leaf beside them with
    a seed."""
    r.touch(V + "forward", V + "backward", "nnabla.grad", "nnabla.set_auto_forward")
    res = {}
    x = _x(nn)
    h = F.sum(x * x)
    y = h * 5.0
    y.forward()
    nn.set_auto_forward(True)
    loss = h * 3.0
    nn.set_auto_forward(False)
    x.d = np.array([10.0, 20.0], np.float32)
    x.g = 0.0
    loss.backward()
    res["x.g"], res["h.g"] = x.g.copy(), h.g.copy()
    res["h.d"], res["y.d"] = h.d.copy(), y.d.copy()
    loss.backward()
    res["second x.g"], res["second h.d"] = x.g.copy(), h.d.copy()

    x = _x(nn)
    y = F.sum(x * x)
    y.forward()
    nn.set_auto_forward(True)
    loss = y * 3.0
    dy, = nn.grad([loss], [y])
    dx, = nn.grad([loss], [x])
    ddx, = nn.grad([F.sum(dx * dx)], [x])
    nn.set_auto_forward(False)
    res["grad dy"], res["grad dx"] = np.asarray(dy.d).copy(), np.asarray(dx.d).copy()
    res["grad ddx"] = ddx.d.copy()

    x = _x(nn, (1.0, 2.0, 3.0, 4.0, 5.0, 6.0))
    d = F.dropout(x, 0.5, seed=3)
    y = F.sum(d)
    y.forward()
    nn.set_auto_forward(True)
    dx, = nn.grad([y * 3.0], [x])
    nn.set_auto_forward(False)
    res["dropout grad dx is 6 where kept"] = np.array_equal(dx.d, 6.0 * (d.d != 0))

    xi = nn.Variable.from_numpy_array(r.randn(3, 4).astype(np.float32))
    with nn.parameter_scope("static_mix_fc"):
        h = PF.affine(xi, 2)
        found = nn.get_parameters()
    res["params"] = r.set_params(found)
    params = list(found.values())
    t = F.tanh(h)
    t.forward()
    nn.set_auto_forward(True)
    loss = F.sum(t * t) + F.sum(h)
    for k, g in enumerate(nn.grad([loss], params)):
        res["param grad %d" % k] = g.d.copy()
    z = _x(nn, (0.5, -1.0))
    loss = F.sum(z * t[0, :])
    for k, g in enumerate(nn.grad([loss], [z] + params, grad_outputs=[2.0])):
        res["seeded grad %d" % k] = g.d.copy()
    nn.set_auto_forward(False)
    return res
