"""CNTK Functions used in ways CNTK 2.7 refuses or reads in ways of its own: gradients asked
for Variables that have none, iterating over a Function, ``times`` of a Python scalar."""

import numpy as np

from compat_harness import cntk_case


def _outcome(call):
    """The call's result, or the type of the error it raised (what is compared)."""
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return type(exc).__name__


@cntk_case(names=["cntk.Function.grad", "cntk.Function.backward", "cntk.Function.forward"],
           note="CNTK 2.7 gives gradients w.r.t. parameters and inputs made with "
                "needs_gradient=True only: grad or backward asked for an input made without "
                "it, a constant or an output of the graph is its ValueError (Stadyn gave "
                "zeros, and for an output the gradient flowing into it)")
def gradients_of_variables_that_have_none(C, r):
    r.touch("cntk.Function.grad", "cntk.Function.backward", "cntk.Function.forward")
    x = C.input_variable(2, name="x")
    xg = C.input_variable(2, name="xg", needs_gradient=True)
    c = C.constant(r.randn(2), name="c")
    p = C.parameter((2,), init=r.randn(2), name="p")
    h = C.tanh(x * p, name="h")
    f = C.reduce_sum(h * c + xg * x)
    data = {x: r.randn(3, 2), xg: r.randn(3, 2)}
    res = {}
    for label, wrt in (("x", [x]), ("x_and_xg", [x, xg]), ("xg", [xg]), ("p", [p]),
                       ("c", [c]), ("h", [h.output])):
        res["grad_" + label] = _outcome(lambda: np.asarray(f.grad(data, wrt=wrt)))

    def backward(variables):
        state, out = f.forward(data, None, set(f.outputs))
        grads = f.backward(state, {f.output: np.ones_like(out[f.output])}, variables)
        return [np.asarray(grads[v]) for v in variables]
    for label, variables in (("x", {x}), ("c", {c}), ("h", {h.output}), ("xg", {xg}),
                             ("p", {p})):
        res["backward_" + label] = _outcome(lambda: backward(variables))
    return res
