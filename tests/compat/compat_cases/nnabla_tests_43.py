"""NNabla 1.39's own test files (``python/test/`` of sony/nnabla) as users' programs (nnuser43).

Run with only their imports changed, ``test_indexing.py``, ``test_parameter.py``,
``test_graph.py``, ``test_variable.py`` and ``test_variable_arithmetic_ops.py`` failed on
Stadyn where NNabla 1.39 passes.  Each case here is the failing input, cut down, run on both:

* an NdArray indexed by a boolean Variable or NdArray (a mask): Stadyn read the mask as
  float32 indices 1 and 0 (``a[mask]`` gathered ``a[1], a[0], ...``; ``a[mask] = -1`` wrote
  ``a[0]`` and ``a[1]``), a silent wrong result (``test_nnabla_boolean_array_as_index``);
* ``x[:, :5].parent.arguments``: NNabla's ``Slice`` holds numbers (its ``F.slice`` fills the
  ``None`` entries), Stadyn's held ``None`` (``test_slice_arguments``);
* ``get_parameter_or_create(name, initializer=array)`` without a shape: NNabla takes the
  array's shape, Stadyn refused; without either, NNabla's ``AssertionError``
  (``test_get_parameter_with_initializer``);
* ``nn.forward_all(..., function_pre_hook=, function_post_hook=)`` (``test_function_hook``);
* ``loss.clear_all_graph_links()`` cuts every function's outputs up to ``loss``, as truncated
  BPTT needs (``test_clear_all_graph_links``): Stadyn cut ``loss``'s own link alone, so a
  state carried to the next step kept its graph and the next step's gradients ran on
  through the steps before, silently wrong.

``import nnabla`` alone giving ``nn.functions`` (``test_variable_arithmetic_ops.py``) needs a
fresh interpreter: ``tests/examples/test_nnabla_own_tests.py`` runs those files.
"""

from functools import partial

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import as_raised, as_returned, nnabla_refusal, outcome

V = "nnabla.Variable."
FN = "nnabla.functions."
_returned_or_raised = partial(outcome, convert=as_returned, raised=as_raised)
_refused = partial(outcome, raised=nnabla_refusal)


@nnabla_case(names=["nnabla.NdArray.__getitem__", "nnabla.NdArray.__setitem__", V + "data"],
             note="x = rand(6), mask = x > 0.5 as a bool Variable; x.data[mask], "
                  "x.data[mask.data], then x.data[mask] = -1 (test_indexing.py's "
                  "test_nnabla_boolean_array_as_index)")
def tests43_ndarray_bool_mask__gathers_and_writes(nn, F, PF, r):
    r.touch("nnabla.NdArray.__getitem__", "nnabla.NdArray.__setitem__", V + "data")
    x_np = r.rand(6)
    mask = np.array([True, False, True, True, False, True])
    x = nn.Variable.from_numpy_array(x_np)
    m = nn.Variable.from_numpy_array(mask)
    res = {"by Variable": x.data[m].data.copy(), "by NdArray": x.data[m.data].data.copy()}
    x.data[m] = -1
    res["written"] = x.d.copy()
    x.data[(m.data,)] = 2                       # a mask inside a tuple key
    res["written by tuple"] = x.d.copy()
    return res


@nnabla_case(names=[V + "__getitem__", FN + "slice", "nnabla.function.Function.arguments"],
             note="x (10, 10): x[:, :5], x[::-1, :-6:-1], x[2:, 1] and F.slice(x, ...) "
                  "-> parent.arguments (test_indexing.py's test_slice_arguments)")
def tests43_getitem_slice__arguments_filled(nn, F, PF, r):
    r.touch(V + "__getitem__", "nnabla.function.Function.arguments")
    x = nn.Variable((10, 10))
    res = {}
    for name, y in [("[:, :5]", x[:, :5]), ("[::-1, :-6:-1]", x[::-1, :-6:-1]),
                    ("[2:, 1]", x[2:, 1].parent.inputs[0]),
                    ("F.slice", F.slice(x, (0, 0), (10, 5), (1, 1)))]:
        args = y.parent.arguments
        res[name] = {k: list(args[k]) for k in ("start", "stop", "step")}
    return res


@nnabla_case(names=["nnabla.parameter.get_parameter_or_create", V + "d", V + "shape"],
             note="get_parameter_or_create('p', initializer=array (2, 3)) with no shape; "
                  "then 'q' with neither a shape nor an array, 'u' with only an initializer "
                  "(test_parameter.py's test_get_parameter_with_initializer)")
def tests43_get_parameter_or_create__shape_from_array(nn, F, PF, r):
    r.touch("nnabla.parameter.get_parameter_or_create", V + "d", V + "shape")
    get = r.module("nnabla.parameter").get_parameter_or_create
    a = r.randn(2, 3).astype(np.float32)
    p = get("p", initializer=a, need_grad=True)
    res = {"shape": list(p.shape), "d": p.d.copy(), "registered": sorted(nn.get_parameters())}
    res["no shape, zeros"] = _returned_or_raised(lambda: get("q").shape)
    res["no shape, initializer"] = _returned_or_raised(
        lambda: get("u", initializer=lambda shape: np.zeros(shape)).shape)
    res["registered after"] = sorted(nn.get_parameters())
    return res


@nnabla_case(names=["nnabla.forward_all", "nnabla.function.Function.info",
                    "nnabla.function.Function.outputs", FN + "relu", FN + "sin", FN + "cos"],
             note="a = relu(x), b = sin(a), c = cos(a * 2); nn.forward_all([b, c], "
                  "function_pre_hook=, function_post_hook=): the functions each saw, in order "
                  "(test_graph.py's test_function_hook)")
def tests43_forward_all__function_hooks(nn, F, PF, r):
    r.touch("nnabla.forward_all", "nnabla.function.Function.info",
            "nnabla.function.Function.outputs")
    x = nn.Variable.from_numpy_array(np.array([1.0, -2.0], np.float32))
    a = F.relu(x)
    b, c = F.sin(a), F.cos(a * 2)
    seen = []
    nn.forward_all([b, c],
                   function_pre_hook=lambda f: seen.append("pre " + f.info.type_name),
                   function_post_hook=lambda f: seen.append(
                       "post {} {}".format(f.info.type_name, f.outputs[0].d.round(4).tolist())))
    return {"seen": seen, "b": b.d.copy(), "c": c.d.copy()}


@nnabla_case(names=[V + "clear_all_graph_links", V + "backward", V + "parent", V + "g",
                    FN + "tanh", FN + "sum"],
             note="truncated BPTT: h = tanh(h * w + x_t), loss = sum(h * h); forward, backward, "
                  "loss.clear_all_graph_links() per step, 3 steps: w.g per step and whether h "
                  "and an intermediate keep a parent (test_variable.py's "
                  "test_clear_all_graph_links)")
def tests43_clear_all_graph_links__truncated_bptt(nn, F, PF, r):
    r.touch(V + "clear_all_graph_links", V + "backward", V + "parent", V + "g")
    w = nn.Variable.from_numpy_array(np.array([0.5, -1.0], np.float32), need_grad=True)
    h = nn.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32))
    res = {"w.g": [], "h has a parent": [], "inner has a parent": []}
    for step in range(3):
        x = nn.Variable.from_numpy_array(np.array([step + 1.0, 1.0], np.float32))
        inner = h * w
        h = F.tanh(inner + x)
        loss = F.sum(h * h)
        loss.forward()
        w.grad.zero()
        loss.backward()
        res["w.g"].append(w.g.copy())
        loss.clear_all_graph_links()
        res["h has a parent"].append(h.parent is not None)
        res["inner has a parent"].append(inner.parent is not None)
    res["loss"] = loss.d.copy()
    return res


@nnabla_case(names=["nnabla.testing", "nnabla.testing.assert_allclose"],
             note="nnabla.testing.assert_allclose, which every file of NNabla's python/test "
                  "imports: its default tolerances (rtol 1e-5, atol 1e-6), NaNs equal, and "
                  "what it raises past them")
def tests43_testing__assert_allclose(nn, F, PF, r):
    testing = r.module("nnabla.testing")
    check = testing.assert_allclose
    one = np.float32(1.0)
    return {
        "within atol": _returned_or_raised(lambda: check(one + 9e-7, one)),
        "within rtol": _returned_or_raised(lambda: check(np.float64(1000.009), 1000.0)),
        "past both": _returned_or_raised(lambda: check(np.float64(1000.02), 1000.0)),
        "nan equal": _returned_or_raised(lambda: check([np.nan, 1.0], [np.nan, 1.0])),
        "nan not equal": _returned_or_raised(
            lambda: check([np.nan], [np.nan], equal_nan=False)),
        "given rtol": _returned_or_raised(lambda: check(1.5, 1.0, rtol=0.6)),
        "shape": _returned_or_raised(lambda: check(np.ones(2), np.ones(3))),
    }


@nnabla_case(names=[FN + "clip_by_value", V + "backward", V + "g"],
             note="x, min, max from randn (3, 4): min > max at some elements, as "
                  "function/test_clip_by_value.py draws them; Variable bounds (values, "
                  "gradients of x, min, max, the functions made), number bounds 0.3 > -0.2, "
                  "NdArray bounds imperatively")
def tests43_clip_by_value__min_above_max(nn, F, PF, r):
    r.touch(V + "backward", V + "g")
    x = nn.Variable.from_numpy_array(r.randn(3, 4), need_grad=True)
    lo = nn.Variable.from_numpy_array(r.randn(3, 4), need_grad=True)
    hi = nn.Variable.from_numpy_array(r.randn(3, 4), need_grad=True)
    y = F.clip_by_value(x, lo, hi)
    y.forward()
    for v in (x, lo, hi):
        v.grad.zero()
    y.backward(r.randn(3, 4))
    res = {"y": y.d.copy(), "x.g": x.g.copy(), "min.g": lo.g.copy(), "max.g": hi.g.copy(),
           "min > max at": np.argwhere(lo.d > hi.d), "function": y.parent.info.type_name}
    with nn.auto_forward(True):
        z = F.clip_by_value(x, 0.3, -0.2)
    res["numbers"] = z.d.copy()
    res["numbers: function"] = z.parent.info.type_name
    res["NdArrays"] = F.clip_by_value(x.data, lo.data, hi.data).data.copy()
    return res


@nnabla_case(names=[FN + "one_hot"],
             note="one_hot's shape needs one class count per entry of x's last axis: (4, 1) "
                  "with (10, 8) and (4, 2) with (10,) are NNabla's RuntimeError "
                  "(function/test_one_hot.py); (4, 2) with (10, 8) and negative or too large "
                  "indices compute (a zero row out of range)")
def tests43_one_hot__shape_per_last_axis(nn, F, PF, r):
    res = {}
    for ishape, shape in (((4, 1), (10, 8)), ((4, 2), (10,))):
        res["{} {}".format(ishape, shape)] = _refused(
            lambda: list(F.one_hot(nn.Variable(ishape), shape).shape))
    x = nn.Variable.from_numpy_array(np.array([[1, 2], [-1, 7], [3, -9], [12, 0]]))
    with nn.auto_forward(True):
        y = F.one_hot(x, (4, 8))
    res["values"] = y.d.copy()
    return res


@nnabla_case(names=[FN + "random_flip", FN + "random_shift", FN + "random_crop",
                    FN + "vat_noise"],
             note="a negative base_axis counts from the end, as NNabla's refine_axis "
                  "(function/test_random_flip.py and test_vat_noise.py pass -1 and -2): "
                  "each random function with base_axis -k and a seed gives what it gives "
                  "with ndim - k and the same seed (the draws themselves are not compared), "
                  "vat_noise's values with base_axis -1 and -2")
def tests43_negative_base_axis__counted_from_the_end(nn, F, PF, r):
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 4, 5))
    res = {}
    with nn.auto_forward(True):
        for k in (1, 2, 3):
            for name, call in (
                    ("random_flip", lambda b: F.random_flip(x, axes=[3], base_axis=b, seed=7)),
                    ("random_shift", lambda b: F.random_shift(x, shifts=(0, 0, 0, 2),
                                                              base_axis=b, seed=7)),
                    ("random_crop", lambda b: F.random_crop(x, shape=(4, 3), base_axis=b,
                                                            seed=7))):
                if name != "random_flip" and k == 3:
                    continue
                a, b = call(-k), call(4 - k)
                res["{} -{}".format(name, k)] = {"shape": list(a.shape),
                                                 "same as {}".format(4 - k):
                                                 bool(np.array_equal(a.d, b.d))}
        w = nn.Variable.from_numpy_array(np.zeros((2, 3, 4, 5), np.float32))
        for k in (1, 2):
            res["vat_noise -{}".format(k)] = F.vat_noise(x, w, base_axis=-k, eps=2.0).d.copy()
    return res


@nnabla_case(names=[FN + "assign", V + "backward", V + "g"],
             note="a = assign(dst, src), dummy = a + 0.5, forward and backward with dst, src "
                  "needing gradients (function/test_assign.py): dst.g is a.g (NNabla's "
                  "assign.cpp backward_impl copies or adds the output's gradient into dst's), "
                  "src.g stays zero; static, then dynamic with dst.g accumulated")
def tests43_assign__gradient_to_dst(nn, F, PF, r):
    r.touch(V + "backward", V + "g")
    res = {}
    for mode in ("static", "dynamic"):
        dst = nn.Variable((2, 3), need_grad=True)
        src = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
        with nn.auto_forward(mode == "dynamic"):
            a = F.assign(dst, src)
            out = F.sum(a * nn.Variable.from_numpy_array(r.randn(2, 3)))
        out.forward()
        dst.g = 1.0 if mode == "dynamic" else 0.0       # (backward adds to it)
        src.grad.zero()
        out.backward()
        res[mode] = {"dst": dst.d.copy(), "a.g": a.g.copy(), "dst.g": dst.g.copy(),
                     "src.g": src.g.copy()}
    return res
