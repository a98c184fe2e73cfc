"""NNabla 1.39's output arrays given by the user, which Stadyn left alone:

* ``y.data = nd`` on an op's output (``nd`` an ``nn.NdArray``): NNabla's output holds ``nd``
  from then on, so each forward writes into it (Stadyn copied ``nd``'s values into its own
  buffer and ``nd`` stayed at zeros);
* ``F.*(..., outputs=[nd])`` and ``PythonFunction()(..., outputs=[nd])``: the output holds
  ``nd`` (static: written by each forward; dynamic and NdArray inputs: written when the call
  returns); Stadyn refused the argument;
* a kept ``y.d`` of a graph that runs eagerly (one holding a ``PythonFunction``) shows the
  later forwards' values, as every other graph's did (Stadyn's eager runs gave the output new
  memory).
"""

import numpy as np

from compat_harness import nnabla_case
from compat_cases.nnabla_pyfunc_helpers import square

N = "nnabla."


def _write_squares(inputs, outputs):
    outputs[0].data.data = inputs[0].data.data ** 2


def _add_square_grad(inputs, outputs, propagate_down, accum):
    inputs[0].grad.data += 2 * inputs[0].data.data * outputs[0].grad.data


def _square(PythonFunction):
    return square(PythonFunction, _add_square_grad, name="MySquare", forward=_write_squares)


@nnabla_case(names=[N + "Variable.data", N + "NdArray"],
             note="y = exp(x); y.data = NdArray((2, 3)) after and before a forward; forward, "
                  "x changed, forward again: what nd holds each time; loss backward reads it")
def output_data_set_to_ndarray__forward_writes_it(nn, F, r):
    r.touch(N + "Variable.data", N + "NdArray")
    res = {}
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    y = F.exp(x)
    loss = F.sum(F.mul2(y, y))
    y.forward()
    nd = nn.NdArray((2, 3))
    nd.fill(7.0)
    y.data = nd
    res["after y.data = nd"] = nd.data.copy()
    res["y.d after y.data = nd"] = y.d.copy()
    loss.forward()
    res["nd after forward"] = nd.data.copy()
    x.d = x.d * 0.5
    loss.forward()
    res["nd after second forward"] = nd.data.copy()
    nd.fill(1.0)
    x.grad.zero()
    loss.backward()
    res["x.g after nd.fill(1)"] = x.g.copy()
    z = F.tanh(x)
    nd2 = nn.NdArray((2, 3))
    nd2.zero()
    z.data = nd2
    z.forward()
    res["before any forward: nd2 after forward"] = nd2.data.copy()
    return res


@nnabla_case(names=[N + "functions.exp", N + "functions.add_scalar", N + "functions.split",
                    N + "function.PythonFunction"],
             note="F.exp(x, outputs=[nd]) static (forward twice), dynamic, on NdArrays; "
                  "F.split refuses outputs=; a (3, 2) array for a (2, 3) output; a "
                  "PythonFunction with outputs=; a kept y.d of a graph holding a "
                  "PythonFunction after a second forward")
def function_outputs_given__hold_the_arrays(nn, F, r):
    PythonFunction = r.module("nnabla.function").PythonFunction
    r.touch(N + "functions.exp", N + "functions.add_scalar", N + "functions.split",
            N + "function.PythonFunction")
    res = {}
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    nd = nn.NdArray((2, 3))
    nd.zero()
    y = F.exp(x, outputs=[nd])
    res["static: nd before forward"] = nd.data.copy()
    y.forward()
    res["static: nd after forward"] = nd.data.copy()
    x.d = 1.0
    y.forward()
    res["static: nd after second forward"] = nd.data.copy()
    try:
        F.split(x, axis=1, outputs=[nn.NdArray((2,))] * 3)
        res["split takes no outputs="] = False
    except TypeError:
        res["split takes no outputs="] = True
    a = nn.NdArray((3, 2))                      # the size counts, not the shape
    t = F.add_scalar(x, 1.0, outputs=[a])
    t.forward()
    res["add_scalar into a (3, 2) array"] = [a.data.copy(), t.d.copy()]
    nn.set_auto_forward(True)
    nd3 = nn.NdArray((2, 3))
    F.add_scalar(x, 2.0, outputs=[nd3])
    res["dynamic: nd3"] = nd3.data.copy()
    nn.set_auto_forward(False)
    out = nn.NdArray((2, 3))
    F.exp(nn.NdArray.from_numpy_array(np.full((2, 3), 0.5, np.float32)), outputs=[out])
    res["NdArray inputs: out"] = out.data.copy()
    pnd = nn.NdArray((2, 3))
    s = _square(PythonFunction)(x, outputs=[pnd])
    x.d = 2.0
    s.forward()
    res["PythonFunction: pnd"] = pnd.data.copy()
    w = F.exp(_square(PythonFunction)(x))
    w.forward()
    kept = w.d
    x.d = 0.5
    w.forward()
    res["graph with a PythonFunction: kept w.d after second forward"] = kept.copy()
    return res


def _assigning_square(PythonFunction, add):
    base = type(_square(PythonFunction))

    class Assigning(base):
        def backward_impl(self, inputs, outputs, propagate_down, accum):
            grad = 2 * inputs[0].data.data * outputs[0].grad.data
            if add and accum[0]:
                inputs[0].grad.data += grad
            else:
                inputs[0].grad.data = grad

    return Assigning()


@nnabla_case(names=[N + "function.PythonFunction"],
             note="x = [10], x.g = 1 before backward; a backward_impl that assigns (or adds "
                  "when accum) the gradient of x * x; sum(f(x)) and sum(f(x)) + sum(3 x); "
                  "static and dynamic; x.g after backward (NNabla hands the leaf's own "
                  "gradient with accum True)")
def python_function_backward__leaf_gradient_and_accum(nn, F, r):
    PythonFunction = r.module("nnabla.function").PythonFunction
    r.touch(N + "function.PythonFunction")
    res = {}
    for add in (False, True):
        for two in (False, True):
            for dynamic in (False, True):
                nn.set_auto_forward(dynamic)
                try:
                    x = nn.Variable.from_numpy_array(np.array([10.0], np.float32),
                                                     need_grad=True)
                    x.g = 1.0
                    y = F.sum(_assigning_square(PythonFunction, add)(x))
                    if two:
                        y = y + F.sum(x * 3.0)
                    if not dynamic:
                        y.forward()
                    y.backward()
                finally:
                    nn.set_auto_forward(False)
                res["%s %s %s x.g" % ("adds" if add else "assigns", "two readers" if two
                                      else "one reader", "dynamic" if dynamic
                                      else "static")] = x.g.copy()
    return res


@nnabla_case(names=[N + "Variable.need_grad", N + "Variable.backward"],
             note="z = exp(a) with a needing no gradient, built twice: without and with "
                  "z.need_grad = True; forward, backward: z.d, a.g, z.g (Stadyn's static "
                  "plan of the second failed to trace and ran eagerly, a RuntimeWarning the "
                  "tests make an error)")
def root_needing_grad_over_leaves_needing_none(nn, F, r):
    r.touch(N + "Variable.need_grad", N + "Variable.backward")
    res = {}
    for flag in (False, True):
        a = nn.Variable.from_numpy_array(np.array([0.5, 1.0], np.float32))
        z = F.exp(a)
        if flag:
            z.need_grad = True
        z.forward()
        z.backward()
        res["z.need_grad %s: z.d, a.g, z.g" % flag] = [z.d.copy(), a.g.copy(), z.g.copy()]
    return res


def _conv_net_grads(nn, F, which, forwards, write):
    # dyadic values throughout (quarters, eighths; loss c2 * c2 / 2): every product and sum is
    # exact in float32, so the gradients compare exactly whatever order a kernel sums in
    x = nn.Variable.from_numpy_array(
        (np.arange(2 * 3 * 6 * 6, dtype=np.float32).reshape(2, 3, 6, 6) % 7 - 3) / 4,
        need_grad=True)
    w = nn.Variable.from_numpy_array(
        (np.arange(4 * 3 * 9, dtype=np.float32).reshape(4, 3, 3, 3) % 9 - 4) / 8,
        need_grad=True)
    w2 = nn.Variable.from_numpy_array(
        (np.arange(4 * 4 * 9, dtype=np.float32).reshape(4, 4, 3, 3) % 5 - 2) / 8,
        need_grad=True)
    c = F.convolution(x, w, pad=(1, 1))
    r = F.relu(c)
    c2 = F.convolution(r, w2, pad=(1, 1))
    loss = F.sum(F.mul_scalar(c2 * c2, 0.5))
    y = {"conv": c, "relu": r, "conv2": c2}[which]
    for _ in range(forwards):
        loss.forward()
    kept = y.d
    value = -0.25 * np.sign(kept) + np.arange(kept.size).reshape(kept.shape) % 7 / 8
    if write == "kept":
        kept[...] = value
    else:
        y.d = value
    x.grad.zero()
    w.grad.zero()
    loss.backward()
    return [x.g.copy(), w.g.copy()]


@nnabla_case(names=[N + "functions.convolution", N + "functions.relu", N + "Variable.d"],
             note="guard (Stadyn already agreed on f820786b): a 3-channel conv -> relu -> conv "
                  "net, which Stadyn's CPU static plans run channels-last; an output's y.d "
                  "written (assigned, or a kept array written) after 1 or 2 static forwards "
                  "(the second a static plan's) before backward: x.g, w.g read what was written")
def conv_net_written_outputs__channels_last_backward_reads_them(nn, F, r):
    r.touch(N + "functions.convolution", N + "functions.relu", N + "Variable.d")
    res = {}
    for which in ("conv", "relu", "conv2"):
        for forwards in (1, 2):
            for write in ("assigned", "kept"):
                res["%s y.d %s after %d forwards: x.g, w.g" % (which, write, forwards)] = \
                    _conv_net_grads(nn, F, which, forwards, write)
    return res
