"""NNabla 1.39's graph editing and the gradients it leaves: ``Variable.rewire_on`` (the
rewired Variable is its new function's output, takes the ``need_grad`` of the Variable it
replaces, which is left a leaf sharing its arrays; a graph converter walks the rewired graph),
``backward()`` from an output set ``need_grad=False`` (the inputs still get gradients), and
``nnabla.function.PythonFunction``'s node and arrays.
"""

import numpy as np

from compat_harness import nnabla_case
from compat_cases.nnabla_pyfunc_helpers import square

N = "nnabla."


def _types(y):
    names = []
    y.visit(lambda f: names.append(f.info.type_name))
    return names


@nnabla_case(names=[N + "Variable.rewire_on", N + "Variable.need_grad",
                    N + "experimental.graph_converters.GraphConverter"],
             note="y.rewire_on(z) for each way of setting need_grad on y and z (set True, set "
                  "False, never set): y's need_grad after a forward, whether y is its new "
                  "function's output and z a leaf, the values and gradients through the "
                  "rewired graph; then a GraphConverter over the rewired graph; and "
                  "NNabla's refusals (z a leaf, z of another shape)")
def variable_rewire_on_output(nn, F, r):
    GC = r.module("nnabla.experimental.graph_converters")
    r.touch(N + "Variable.rewire_on", N + "Variable.need_grad")
    res = {}
    for yflag in (None, True, False):
        for zflag in (None, True, False):
            key = "y %s, z %s: " % (yflag, zflag)
            x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
            a = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
            y = F.tanh(x)
            u = F.sum(F.sin(y) * 2.0)
            z = F.exp(a)
            if yflag is not None:
                y.need_grad = yflag
            if zflag is not None:
                z.need_grad = zflag
            y.rewire_on(z)
            res[key + "z is a leaf"] = z.parent is None
            res[key + "y is its function's output"] = y.parent.outputs[0] == y
            res[key + "y's function"] = y.parent.info.type_name
            del z
            res[key + "y is its function's output, z gone"] = y.parent.outputs[0] == y
            u.forward()
            res[key + "value"] = float(u.d)
            res[key + "y.need_grad"] = y.need_grad
            x.grad.zero()
            a.grad.zero()
            u.backward()
            res[key + "a.g"] = a.g.copy()
            res[key + "x.g"] = x.g.copy()
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    y = F.tanh(x)
    u = F.sin(y)
    y.rewire_on(F.exp(F.mul_scalar(x, 0.5)))
    converted = GC.GraphConverter([]).convert(u)
    res["converted graph"] = _types(converted)
    converted.forward()
    res["converted value"] = converted.d.copy()
    for name, make in (("a leaf", lambda: nn.Variable((2, 3))),
                       ("another shape", lambda: F.exp(nn.Variable((3, 2))))):
        try:
            F.tanh(x).rewire_on(make())
            res["rewire_on " + name] = "none"
        except RuntimeError as e:
            res["rewire_on " + name] = type(e).__name__
    return res


@nnabla_case(names=[N + "Variable.backward", N + "Variable.need_grad"],
             note="backward() from an output set need_grad=False (NNabla's QATScheduler sets "
                  "it on the recording graph's output): static and dynamic; an intermediate "
                  "set need_grad=False still stops the gradient; the root also read by a "
                  "second output of one forward_all")
def backward_from_an_output_set_no_grad(nn, F, r):
    r.touch(N + "Variable.backward", N + "Variable.need_grad")
    res = {}
    x = nn.Variable.from_numpy_array(r.randn(3), need_grad=True)
    h = F.tanh(x)
    y = F.sum(h * h)
    y.need_grad = False
    y.forward()
    x.grad.zero()
    y.backward()
    res["static root"] = x.g.copy()
    res["root's need_grad"] = y.need_grad
    y.forward(clear_no_need_grad=True)
    x.grad.zero()
    y.backward(2.0)
    res["static root, clear_no_need_grad, seed 2"] = x.g.copy()
    h.need_grad = False
    y2 = F.sum(h * 2.0)
    y2.forward()
    x.grad.zero()
    y2.backward()
    res["intermediate stopped"] = x.g.copy()
    h.need_grad = True
    z = F.mul_scalar(y, 3.0)
    nn.forward_all([y, z])
    x.grad.zero()
    z.backward()
    res["read by a second root"] = x.g.copy()
    x.grad.zero()
    y.backward()
    res["the first root of two"] = x.g.copy()
    nn.set_auto_forward(True)
    x.grad.zero()
    d = F.sum(F.tanh(x) * x)
    d.need_grad = False
    d.backward()
    res["dynamic root"] = x.g.copy()
    nn.set_auto_forward(False)
    return res


def _square(PythonFunction, writes_input):
    def forward(inputs, outputs):
        outputs[0].d = inputs[0].d ** 2
        if writes_input:
            inputs[0].d[0] = 10.0

    def backward(inputs, outputs, propagate_down, accum):
        inputs[0].g = 2 * inputs[0].d * outputs[0].g
    return square(PythonFunction, backward, name="MySquare", forward=forward)


@nnabla_case(names=[N + "function.PythonFunction"],
             note="a PythonFunction's node (name 'Callback', info.type_name the subclass's "
                  "name, no info.args), a forward_impl writing into its input (the Variable "
                  "sees it), and the gradients through it from an intermediate input")
def python_function_node_and_inputs(nn, F, r):
    PythonFunction = r.module("nnabla.function").PythonFunction
    r.touch(N + "function.PythonFunction")
    res = {}
    x = nn.Variable.from_numpy_array(r.randn(3), need_grad=True)
    h = F.identity(x)
    y = _square(PythonFunction, False)(h)
    f = y.parent
    res["name"] = f.name
    res["type_name"] = f.info.type_name
    res["args"] = sorted(f.info.args)
    res["repr"] = repr(f)
    seen = []
    y.visit(lambda g: seen.append((g.name, g.info.type_name)))
    res["visited"] = seen
    s = F.sum(F.add2(y, F.mul_scalar(h, 3.0)))
    s.forward()
    x.grad.zero()
    s.backward()
    res["value"] = y.d.copy()
    res["x.g"] = x.g.copy()
    a = nn.Variable.from_numpy_array(np.array([1.0, 2.0, 3.0], np.float32))
    b = _square(PythonFunction, True)(a)
    b.forward()
    res["input written by forward_impl"] = a.d.copy()
    res["output"] = b.d.copy()
    return res
