"""NNabla 1.39's gradient details mended in nngrad44: ``nn.grad`` of a registered parameter
read by two parametric function calls (each call its own graph Variable of it in NNabla's
graph), a backward onto a ``.g`` not zeroed, ``nn.grad`` through a function without a
backward function."""

import functools

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import as_raised, outcome

_FORMS = ("h1+3h2", "3h2+h1", "h1*F+h2", "h2+F+h1")


def _form(F, name, h1, h2, f):
    if name == "h1+3h2":
        return F.sum(h1) + F.sum(h2 * 3)
    if name == "3h2+h1":
        return F.sum(h2 * 3) + F.sum(h1)
    if name == "h1*F+h2":
        return F.sum(h1 * f) + F.sum(h2)
    return F.sum(h2) + F.sum(f * 2) + F.sum(h1)


@nnabla_case(names=["nnabla.grad", "nnabla.get_parameters", "nnabla.functions.affine",
                    "nnabla.parametric_functions.affine"], rtol=1e-6, atol=1e-6)
def nn_grad__parameter_shared_by_two_calls(nn, F, PF, r):
    """``nn.grad`` with respect to a ``W`` two ``PF.affine`` calls share (one
    ``parameter_scope``), with and without a program's ``F.affine(x, W)`` too: NNabla 1.39's
    graph holds one Variable of ``W`` per call (``get_unlinked_variable``), binds ``W`` to the
    one its search from the output meets last and counts only the functions below it
    (``F.sum(h1) + F.sum(h2 * 3)``: ``h2``'s call alone, 6 times the column sums of ``x``;
    swapped, ``h1``'s).  Stadyn added every reader's part (7 times), static and dynamic; and
    in dynamic mode a ``PF`` call and an ``F`` call on ``W`` both (``h + 2F``: NNabla 42.44,
    Stadyn 21.22).  With ``b`` asked for too, ``b`` binds to the last call's ``b`` as well.
    A weight shared by three steps of a recurrence: NNabla counts the last step's call only
    (``W`` 3.16 where a backward gives 12.87), and so does Stadyn now."""
    res = {}
    x_np = r.randn(2, 4)
    w_np = r.randn(4, 3)
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        for name in _FORMS:
            nn.clear_parameters()
            with nn.auto_forward(dynamic):
                x = nn.Variable.from_numpy_array(x_np)
                h1 = PF.affine(x, 3, name="fc", w_init=w_np.copy())
                h2 = PF.affine(x * 2, 3, name="fc")
                params = nn.get_parameters()
                y = _form(F, name, h1, h2, F.affine(x, params["fc/affine/W"]))
                alone, = nn.grad([y], [params["fc/affine/W"]])
                g, b = nn.grad([y], [params["fc/affine/W"], params["fc/affine/b"]])
            for v in (alone, g, b):
                v.forward()
            res[mode + name] = alone.d.copy()
            res[mode + name + " with b"] = [g.d.copy(), b.d.copy()]
        # a weight shared over three steps (an unrolled recurrence): the last step's call
        nn.clear_parameters()
        with nn.auto_forward(dynamic):
            h = nn.Variable.from_numpy_array(x_np[:, :3])
            for _ in range(3):
                h = F.tanh(PF.affine(h, 3, name="fc", w_init=w_np[:3] * 0.5))
            gs = nn.grad([F.sum(h)], list(nn.get_parameters().values()))
        for v in gs:
            v.forward()
        res[mode + "three steps"] = [v.d.copy() for v in gs]
    nn.clear_parameters()
    return res


_ONTO = ("a static graph's backward program returns each leaf's gradient summed (its readers' "
         "parts added in NNabla's order, graph/_ordered_sums.py) and adds the sum onto the "
         "gradient the leaf holds (graph/_grad_buffers.accumulate_grads): g0 + (p1 + p2); "
         "NNabla 1.39 adds each function's part onto it in its backward order, "
         "((g0 + p1) + p2): the last bit of some values")


@nnabla_case(names=["nnabla.Variable.backward", "nnabla.Variable.g"], rtol=0.0, atol=0.0,
             known={"static 2 readers": _ONTO, "static 3 readers": _ONTO})
def nn_backward__onto_a_gradient_not_zeroed(nn, F, r):
    """A leaf read by two or three functions whose ``.g`` holds a gradient before the
    backward (not zeroed: gradients accumulated over several backwards): NNabla 1.39 adds each
    function's part onto it in its backward order, ``((g0 + p1) + p2)``; Stadyn's dynamic
    backward added the parts' sum, ``g0 + (p1 + p2)`` (a third of 400 float32 values a bit
    apart).  The parts are exact (``x * a``: ``a``), so only the order of the additions
    shows.  Compared exactly."""
    n = 400
    xv, g0, a, b, c = (r.randn(n).astype(np.float32) for _ in range(5))
    res = {}
    for dynamic in (False, True):
        for readers in (2, 3):
            with nn.auto_forward(dynamic):
                x = nn.Variable.from_numpy_array(xv, need_grad=True)
                A, B, C = (nn.Variable.from_numpy_array(v) for v in (a, b, c))
                y = F.sum(x * A) + F.sum(x * B)
                if readers == 3:
                    y = y + F.sum(x * C)
            x.g = g0
            if not dynamic:
                y.forward()
            y.backward()
            res["%s %d readers" % ("dynamic" if dynamic else "static", readers)] = x.g.copy()
    r.touch("nnabla.Variable.backward", "nnabla.Variable.g")
    return res


_RAISED = functools.partial(outcome, raised=functools.partial(as_raised, first_line=True))


@nnabla_case(names=["nnabla.grad", "nnabla.functions.mish", "nnabla.functions.flip",
                    "nnabla.functions.cumprod", "nnabla.functions.sort",
                    "nnabla.functions.shift", "nnabla.parametric_functions.mean_subtraction"])
def nn_grad__function_without_backward_function(nn, F, PF, r):
    """``nn.grad`` through a function whose backward function NNabla 1.39 has not
    (python/src/nnabla/backward_function/<name>.py raises at once): ``NotImplementedError:
    mish_backward is not implemented.``, static and dynamic, also where the function's part
    is multiplied by 0.  Stadyn gave the gradient (``PF.mean_subtraction``'s included)."""
    xv = r.randn(2, 3, 4, 4).astype(np.float32)
    forms = [("mish", lambda x: F.mish(x)), ("flip", lambda x: F.flip(x, axes=[1])),
             ("cumprod", lambda x: F.cumprod(x, axis=1)), ("sort", lambda x: F.sort(x, axis=1)),
             ("shift", lambda x: F.shift(x, (1, 1))),
             ("mean_subtraction", lambda x: PF.mean_subtraction(x)),
             ("mish times 0", lambda x: F.mish(x) * 0 + x)]
    res = {}
    for dynamic in (False, True):
        for name, f in forms:
            nn.clear_parameters()

            def run():
                with nn.auto_forward(dynamic):
                    x = nn.Variable.from_numpy_array(xv, need_grad=True)
                    g, = nn.grad([F.sum(f(x) * 2.0)], [x])
                g.forward()
                return g.d.copy()
            res[("dynamic " if dynamic else "") + name] = _RAISED(run)
    nn.clear_parameters()
    return res
