"""Where ``stadyn.compat.cntk``'s layers computed wrong values, silently, on operands with no
dynamic axes (noaxes): an input made with ``dynamic_axes=[]``, a constant.  Stadyn's layers take
an operand's first axis for the batch; CNTK 2.7 applies the layer to the operand as one
sample.  And a layer applied to a placeholder of a known shape shows the parameters CNTK 2.7
makes at the call (``Dense(4)(placeholder((3,))).W``)."""

import numpy as np

from compat_harness import cntk_case


def _shapes_values(f, feed):
    return {"shape": list(f.shape), "value": np.asarray(f.eval(feed), np.float32)}


@cntk_case(names=["cntk.layers.Dense", "cntk.layers.Embedding",
                  "cntk.layers.LayerNormalization", "cntk.layers.BatchNormalization",
                  "cntk.layers.Dropout", "cntk.layers.Sequential", "cntk.input_variable",
                  "cntk.constant"],
           note="layers on an input made with dynamic_axes=[] and on a constant: CNTK 2.7 "
                "applies each to the operand as one sample (Dense(4) over (3,): (4,), W "
                "(3, 4); over (2, 3): (4,), W (2, 3, 4); "
                "LayerNormalization over the whole sample; a nested "
                "Sequential of Dense: (2,)).  Stadyn took the first axis for the batch: "
                "Dense gave (3, 4) with W (4,), LayerNormalization gave zeros.  (Convolution: "
                "tests/compat/test_cntk_no_dynamic_axes.py; CNTK 2.7 corrupts its heap "
                "running it)")
def no_dynamic_axes__layers(C, r):
    r.touch("cntk.layers.Dense", "cntk.layers.Embedding",
            "cntk.layers.LayerNormalization", "cntk.layers.BatchNormalization",
            "cntk.layers.Dropout", "cntk.layers.Sequential", "cntk.input_variable",
            "cntk.constant", "cntk.Function.eval", "cntk.Function.shape")
    res = {}
    x = C.input_variable(3, dynamic_axes=[], name="x")
    xv = np.array([0.5, -1.0, 2.0], np.float32)
    d = C.layers.Dense(4, init=C.glorot_uniform(seed=1))(x)
    res["Dense"] = _shapes_values(d, {x: xv})
    res["Dense W"] = list(d.W.shape)
    m = C.input_variable((2, 3), dynamic_axes=[], name="m")
    mv = np.arange(6, dtype=np.float32).reshape(2, 3) / 4 - 0.5
    d2 = C.layers.Dense(4, init=C.glorot_uniform(seed=2))(m)
    res["Dense rank 2"] = _shapes_values(d2, {m: mv})
    res["Dense rank 2 W"] = list(d2.W.shape)
    d3 = C.layers.Dense(4, init=0.5, bias=False)(C.constant(xv))
    res["Dense on a constant"] = {"shape": list(d3.shape), "value": np.asarray(d3.eval())}
    e = C.layers.Embedding(2, init=C.glorot_uniform(seed=4))(x)
    res["Embedding"] = _shapes_values(e, {x: xv})
    res["LayerNormalization"] = _shapes_values(C.layers.LayerNormalization()(m), {m: mv})
    res["BatchNormalization"] = _shapes_values(C.layers.BatchNormalization()(x), {x: xv})
    res["Dropout"] = _shapes_values(C.layers.Dropout(0.5)(x), {x: xv})
    s = C.layers.Sequential([C.layers.Dense(5, init=C.glorot_uniform(seed=5)),
                             C.layers.Sequential([C.layers.Dense(
                                 2, init=C.glorot_uniform(seed=6))])])(x)
    res["nested Sequential"] = _shapes_values(s, {x: xv})
    return res


@cntk_case(names=["cntk.layers.Dense", "cntk.Function.grad"],
           note="the gradients of a Dense over an input made with dynamic_axes=[] "
                "(needs_gradient): CNTK 2.7's of W (3, 4) is the input by column, of b ones, "
                "the input's the rows' sums of W.  Stadyn's W was (4,)")
def no_dynamic_axes__dense_gradients(C, r):
    r.touch("cntk.layers.Dense", "cntk.Function.grad", "cntk.input_variable")
    x = C.input_variable(3, dynamic_axes=[], needs_gradient=True, name="x")
    d = C.layers.Dense(4, init=C.glorot_uniform(seed=7))(x)
    g = d.grad({x: np.array([0.5, -1.0, 2.0], np.float32)}, wrt=[d.W, d.b, x])
    return {"W": np.asarray(g[d.W]), "b": np.asarray(g[d.b]), "x": np.asarray(g[x])}


@cntk_case(names=["cntk.layers.Dense", "cntk.placeholder"],
           note="a layer applied to a placeholder of a known shape (with the batch axis, or "
                "dynamic_axes=[]): CNTK 2.7 makes its parameters at the call, W (3, 4), and "
                "the Function bound to an input computes with them.  Stadyn raised "
                "AttributeError \"Deferred has no 'W'\"")
def no_dynamic_axes__placeholder_parameters(C, r):
    r.touch("cntk.layers.Dense", "cntk.placeholder", "cntk.Function.replace_placeholders",
            "cntk.Function.parameters")
    res = {}
    xv = np.array([0.5, -1.0, 2.0], np.float32)
    for label, axes in (("batch axis", None), ("no dynamic axes", [])):
        kw = {} if axes is None else {"dynamic_axes": axes}
        p = C.placeholder((3,), name="p", **kw)
        f = C.layers.Dense(4, init=C.glorot_uniform(seed=8))(p)
        res[label] = {"W": list(f.W.shape), "b": list(f.b.shape), "shape": list(f.shape),
                      "parameters": sorted(list(q.shape) for q in f.parameters)}
        w = np.asarray(f.W.value)
        x = C.input_variable(3, name="x", **kw)
        z = f.replace_placeholders({p: x})
        out = np.asarray(z.eval({x: xv if axes == [] else xv[None]}))
        res[label]["bound"] = out.reshape(-1)
        res[label]["bound is x @ W + b"] = bool(np.allclose(out.reshape(-1), xv @ w, atol=1e-6))
    return res


@cntk_case(names=["cntk.ops.softmax", "cntk.ops.hardmax", "cntk.ops.log_softmax"],
           note="softmax and hardmax with no axis over an operand of more than one axis and "
                "no dynamic axes (an input made with dynamic_axes=[], a constant, a "
                "parameter): CNTK 2.7 works on each row (along the last axis), where over a "
                "sample with the batch axis it takes the whole sample.  Stadyn took the whole "
                "operand")
def no_dynamic_axes__softmax_rows(C, r):
    r.touch("cntk.ops.softmax", "cntk.ops.hardmax", "cntk.ops.log_softmax",
            "cntk.input_variable", "cntk.constant", "cntk.parameter", "cntk.Function.grad")
    xv = (np.arange(12, dtype=np.float32).reshape(2, 2, 3) - 5) / 3
    x = C.input_variable((2, 2, 3), dynamic_axes=[], needs_gradient=True, name="x")
    res = {}
    for label, f in (("softmax", C.softmax(x)), ("hardmax", C.hardmax(x)),
                     ("log_softmax", C.log_softmax(x))):
        res[label] = {"shape": list(f.shape), "value": np.asarray(f.eval({x: xv}))}
    w = C.constant(np.linspace(-1, 1, 12).reshape(2, 2, 3).astype(np.float32))
    res["softmax gradient"] = np.asarray(C.reduce_sum(C.softmax(x) * w).grad({x: xv}, wrt=[x]))
    res["softmax of a constant"] = np.asarray(C.softmax(C.constant(xv[0])).eval())
    res["hardmax of a constant"] = np.asarray(C.hardmax(C.constant(xv[1])).eval())
    p = C.parameter((2, 3), init=xv[0])
    res["softmax of a parameter"] = np.asarray(C.softmax(p).eval())
    b = C.input_variable((2, 3), name="b")
    res["with the batch axis"] = np.asarray(C.softmax(b).eval({b: xv}))
    return res
