"""NNabla 1.39's own test files (``python/test/`` of sony/nnabla) as users' programs, second
pass (nnuser43b): inputs that NNabla 1.39 takes and Stadyn got wrong or refused.

* ``F.random_shift`` with ``shifts`` moving an axis before ``base_axis`` (a sample axis:
  ``shifts=(0, 0, 1, 2), base_axis=-1`` of function/test_random_shift.py): NNabla computes it
  (random_shift.cpp, ``shift_recursive``: a sample reads another sample), Stadyn refused;
* ``y.parent.context`` of a function made under ``nn.context_scope(ctx1)`` is ``ctx1``
  (test_graph.py's ``test_function_context``); Stadyn gave its own native context;
* ``NdArray.copy_from(src, use_current_context=...)`` (test_nd_array.py's
  ``test_copy_from``): Stadyn had no such argument and returned None;
* ``get_parameter_or_create(existing_name)`` without a shape: NNabla's TypeError, Stadyn
  returned the parameter.

``x.get_unlinked_variable() == x`` (and ``hash``, ``in {x}``), and a Variable after
``rewire_on`` equal to the one given, which NNabla 1.39 answers by the C++ Variable underneath,
were known differences here until nneq44 (``nnabla_variable_44.py``).
"""

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import nnabla_refusal, outcome

V = "nnabla.Variable."
FN = "nnabla.functions."


@nnabla_case(names=[FN + "random_shift", V + "backward", V + "g"],
             note="x = arange(120) (2, 3, 4, 5): random_shift(x, shifts=(0, 0, 1, 2), "
                  "base_axis=-1, seed=5) in each border mode (constant -1), forward and "
                  "backward of (arange % 7); shifts=(1, 1, 0), base_axis=2, seed=3 "
                  "(function/test_random_shift.py moves sample axes so)")
def tests43b_random_shift__moves_sample_axes(nn, F, PF, r):
    r.touch(V + "backward", V + "g")
    x = nn.Variable.from_numpy_array(np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5),
                                     need_grad=True)
    dy = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5) % 7
    res = {}
    for mode in ("nearest", "reflect", "constant"):
        with nn.auto_forward(True):     # (computed as made: no graph to trace, cheaper)
            y = F.random_shift(x, shifts=(0, 0, 1, 2), border_mode=mode, constant_value=-1,
                               base_axis=-1, seed=5)
        x.grad.zero()
        y.backward(dy)
        res[mode] = {"y": y.d.copy(), "x.g": x.g.copy()}
    y = F.random_shift(x, shifts=(1, 1, 0), border_mode="nearest", base_axis=2, seed=3)
    y.forward()                         # (a static graph: built, then run)
    res["base_axis 2"] = y.d.copy()
    return res


@nnabla_case(names=["nnabla.context_scope", "nnabla.Context", "nnabla.function.Function.context"],
             note="ctx1 = Context(['cpu:float'], 'CpuCachedArray', '1'); y = F.relu(x) under "
                  "context_scope(ctx1); z = F.relu(x) under context_scope(y.parent.context): "
                  "str() of both functions' contexts (test_graph.py's test_function_context)")
def tests43b_function_context__the_scope_s(nn, F, PF, r):
    r.touch("nnabla.function.Function.context")
    x = nn.Variable.from_numpy_array(r.randn(2, 3))
    ctx1 = nn.Context(backend=["cpu:float"], array_class="CpuCachedArray", device_id="1")
    with nn.context_scope(ctx1):
        y = F.relu(x)
    with nn.context_scope(y.parent.context):
        z = F.relu(x)
    ctx1.device_id = "2"        # a later change: the functions keep the context they were made in
    y.forward()
    return {"y": str(y.parent.context), "z": str(z.parent.context), "values": y.d.copy()}


@nnabla_case(names=["nnabla.NdArray.copy_from", "nnabla.NdArray.zero", "nnabla.NdArray.cast"],
             note="dst.copy_from(src[, use_current_context]) for int32 -> float, float32 -> "
                  "int32, the returned object, and a uint8 src after src.zero() copied in a "
                  "cpu:float context (test_nd_array.py's test_copy_from)")
def tests43b_copy_from__use_current_context(nn, F, PF, r):
    r.touch("nnabla.NdArray.copy_from", "nnabla.NdArray.zero", "nnabla.NdArray.cast")
    get_extension_context = r.module("nnabla.ext_utils").get_extension_context
    res = {}
    src = nn.NdArray.from_numpy_array(np.array([1, 2, 3], np.int32))
    for name, kw in (("default", {}), ("current", {"use_current_context": True}),
                     ("source's", {"use_current_context": False})):
        dst = nn.NdArray((3,))
        dst.data = 0
        back = dst.copy_from(src, **kw)
        res[name] = {"returns dst": back is dst, "dtype": str(dst.dtype), "d": dst.data.copy()}
    dst = nn.NdArray.from_numpy_array(np.zeros(3, np.int32))
    dst.copy_from(nn.NdArray.from_numpy_array(np.array([1.5, 2, 3], np.float32)))
    res["float into int"] = {"dtype": str(dst.dtype), "d": dst.data.copy()}
    src = nn.NdArray((2, 3))
    src.data = 0
    src.cast(np.uint8)
    dst = nn.NdArray((2, 3))
    dst.copy_from(src, use_current_context=False)
    res["uint8"] = str(dst.dtype)
    src.zero()
    with nn.context_scope(get_extension_context("cpu", dtype="float")):
        dst.copy_from(src, use_current_context=True)
    res["uint8 zeroed, in float"] = {"dtype": str(dst.dtype), "d": dst.data.copy()}
    res["other shape"] = outcome(lambda: nn.NdArray((2,)).copy_from(nn.NdArray((3,))),
                                 raised=nnabla_refusal)
    return res


@nnabla_case(names=["nnabla.parameter.get_parameter_or_create"],
             note="get_parameter_or_create('w', (2, 3)), then 'w' again with no shape, with "
                  "shape=None, with (3, 2)")
def tests43b_get_parameter_or_create__existing_without_shape(nn, F, PF, r):
    get = r.module("nnabla.parameter").get_parameter_or_create
    get("w", (2, 3))
    return {"no shape": outcome(lambda: get("w"), raised=nnabla_refusal),
            "None": outcome(lambda: get("w", None), raised=nnabla_refusal),
            "other": outcome(lambda: get("w", (3, 2)), raised=nnabla_refusal),
            "same": outcome(lambda: list(get("w", (2, 3)).shape), raised=nnabla_refusal)}


@nnabla_case(names=[V + "get_unlinked_variable", V + "__eq__", V + "__hash__", V + "rewire_on",
                    V + "reshape"],
             note="x (2, 3): u = x.get_unlinked_variable() (need_grad=False too), "
                  "x.reshape((3, 2), unlink=True), y.data = x.data, a.rewire_on(b): == , hash "
                  "and membership in {x} (test_variable.py's test_variable_equality_and_hash "
                  "and test_variable_set)")
def tests43b_unlinked_variable__equal_and_hash(nn, F, PF, r):
    r.touch(V + "__eq__", V + "__hash__", V + "reshape", V + "get_unlinked_variable",
            V + "rewire_on")
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)

    def same(a, b):
        return [a == b, hash(a) == hash(b), a in {b}]
    y = nn.Variable((2, 3))
    y.data = x.data
    a, b = nn.Variable((2, 3)), F.tanh(nn.Variable((2, 3)))
    a.rewire_on(b)
    return {"unlinked": same(x.get_unlinked_variable(), x),
            "unlinked need_grad=False": same(x.get_unlinked_variable(need_grad=False), x),
            "reshaped unlink": same(x.reshape((3, 2), unlink=True), x),
            "data shared": same(y, x), "rewired": same(a, b), "itself": same(x, x)}
