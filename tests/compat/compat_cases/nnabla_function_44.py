"""NNabla's Function API on one function (nnfunc44): ``f = y.parent``, then ``f.setup(inputs,
outputs)``, ``f.forward(inputs, outputs)``, ``f.backward(inputs, outputs, accum)`` on Variables
other than the ones ``f`` was made on, as ``nbla_test_utils.function_tester`` (NNabla 1.39's
``python/test/``) drives every function.  Stadyn had none of these methods (AttributeError).
Each case checks one rule on NNabla 1.39 itself: ``accum`` adds into ``grad`` or overwrites it
(a NaN there gone), ``propagate_down`` is the inputs' ``need_grad``, one Variable at two
positions takes both gradients in order, a function of two outputs, an optional input left
out, the top function of one NNabla composes (``F.clip_by_value``'s ``MinimumScalar``) runs
alone; ``nnabla.backward_functions.registry``; ``nnabla.dtypes`` and ``nnabla_pb2``.

And the double-backward tests' first step, ``F.sink(*outputs, one_input_grad=False)
.backward()`` with the outputs forwarded and their ``g`` set but the sink itself not
forwarded: Stadyn re-ran the forward from the sink alone, which took the outputs for inner
Variables and let go of their gradients -- every input gradient 0 and the outputs' ``g``
zeroed, silently (``function44_sink_backward__without_its_forward``).
"""

from functools import partial

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import as_raised, as_returned, outcome

FN = "nnabla.function.Function."
_returned_or_raised = partial(outcome, convert=as_returned, raised=as_raised)


def _var(nn, a, need_grad=True):
    return nn.Variable.from_numpy_array(np.asarray(a, np.float32)).apply(need_grad=need_grad)


@nnabla_case(names=[FN + "setup", FN + "forward", FN + "backward", "nnabla.functions.sigmoid"],
             note="f = F.sigmoid(x (2, 3)).parent run on x2 (1, 4), y2 (7,): setup gives y2 "
                  "x2's shape; backward with accum default (added), [False] (overwritten, "
                  "also over NaN), and with x2.need_grad False (x2.g untouched)")
def function44_forward_backward__other_variables(nn, F, PF, r):
    r.touch(FN + "setup", FN + "forward", FN + "backward")
    f = F.sigmoid(nn.Variable((2, 3), need_grad=True)).parent
    x2 = _var(nn, r.randn(1, 4))
    y2 = nn.Variable((7,))
    f.setup([x2], [y2])
    res = {"shape": list(y2.shape)}
    f.forward([x2], [y2])
    res["y"] = y2.d.copy()
    y2.g = r.randn(1, 4)
    g0 = r.randn(1, 4).astype(np.float32)
    x2.g = g0
    f.backward([x2], [y2])
    res["accum"] = x2.g.copy()
    f.backward([x2], [y2], [False])
    res["overwritten"] = x2.g.copy()
    x2.g = np.float32("nan")
    f.backward([x2], [y2], [False])
    res["over nan"] = x2.g.copy()
    x2.need_grad = False
    x2.g = g0
    f.backward([x2], [y2])
    res["no need_grad"] = x2.g.copy()
    return res


@nnabla_case(names=[FN + "backward", "nnabla.functions.mul2"],
             note="y = F.mul2(a, a): backward([a, a], [y], accum) with [False, True] (the "
                  "first overwrites, the second adds) and [True, False] (the second "
                  "overwrites what the first added)")
def function44_mul2_same_variable__accum_in_order(nn, F, PF, r):
    r.touch(FN + "backward")
    a = _var(nn, r.randn(3))
    y = F.mul2(a, a)
    f = y.parent
    f.forward([a, a], [y])
    y.g = r.randn(3)
    res = {"y": y.d.copy()}
    for accum in ([False, True], [True, False]):
        a.g = 10.0
        f.backward([a, a], [y], accum)
        res[str(accum)] = a.g.copy()
    return res


@nnabla_case(names=[FN + "forward", FN + "backward", "nnabla.functions.split"],
             note="F.split(x (2, 3), axis=0): its function run on x2 (2, 4) into two new "
                  "outputs, then backward from both (x2.g added to)")
def function44_split__two_outputs(nn, F, PF, r):
    r.touch(FN + "forward", FN + "backward")
    ys = F.split(nn.Variable((2, 3), need_grad=True), axis=0)
    f = ys[0].parent
    x2 = _var(nn, r.randn(2, 4))
    outs = [nn.Variable((4,)), nn.Variable((4,))]
    f.forward([x2], outs)
    res = {"y0": outs[0].d.copy(), "y1": outs[1].d.copy()}
    for o in outs:
        o.g = r.randn(4)
    x2.g = 1.0
    f.backward([x2], outs)
    res["x.g"] = x2.g.copy()
    return res


@nnabla_case(names=[FN + "forward", FN + "backward", "nnabla.functions.affine"],
             note="F.affine(x, w) without a bias: run on x2 (3, 2), w2 (2, 4) with "
                  "x2.need_grad False (only w2.g written, overwritten: accum [True, False])")
def function44_affine__no_bias_one_input_propagated(nn, F, PF, r):
    r.touch(FN + "forward", FN + "backward")
    y = F.affine(nn.Variable((5, 2)), nn.Variable((2, 4), need_grad=True))
    f = y.parent
    x2, w2 = _var(nn, r.randn(3, 2), need_grad=False), _var(nn, r.randn(2, 4))
    y2 = nn.Variable((3, 4))
    f.forward([x2, w2], [y2])
    res = {"y": y2.d.copy()}
    y2.g = r.randn(3, 4)
    x2.g = 5.0
    w2.g = 5.0
    f.backward([x2, w2], [y2], [True, False])
    res["x.g"], res["w.g"] = x2.g.copy(), w2.g.copy()
    return res


@nnabla_case(names=[FN + "forward", FN + "backward", "nnabla.functions.clip_by_value"],
             note="y = F.clip_by_value(x, -1, 1): y.parent is NNabla's MinimumScalar (the top "
                  "of the two functions it is); run on [x] it clips at 1 only")
def function44_clip_by_value__top_function_alone(nn, F, PF, r):
    r.touch(FN + "forward", FN + "backward")
    x = _var(nn, [-2.0, 0.5, 3.0])
    y = F.clip_by_value(x, -1.0, 1.0)
    f = y.parent
    f.forward([x], [y])
    res = {"name": f.name, "y": y.d.copy()}
    y.g = np.ones(3, np.float32)
    x.g = 0.0
    f.backward([x], [y])
    res["x.g"] = x.g.copy()
    return res


@nnabla_case(names=[FN + "need_setup_recompute", FN + "setup_recompute", FN + "recompute",
                    "nnabla.NdArray.clear"],
             note="y = F.tanh(x): y.data.clear(), then f.recompute([x], [y]) writes y again "
                  "(nbla_test_utils.recomputation_test)")
def function44_recompute__after_clear(nn, F, PF, r):
    r.touch(FN + "need_setup_recompute", FN + "setup_recompute", FN + "recompute",
            "nnabla.NdArray.clear")
    x = _var(nn, r.randn(2, 3))
    y = F.tanh(x)
    f = y.parent
    res = {"need setup": f.need_setup_recompute(0)}
    f.setup_recompute([x], [y])
    f.forward([x], [y])
    first = y.d.copy()
    y.data.clear()
    f.recompute([x], [y])
    res["same"] = bool(np.array_equal(first, y.d))
    res["y"] = y.d.copy()
    return res


@nnabla_case(names=["nnabla.functions.sink", "nnabla.Variable.backward"],
             note="y = F.sigmoid(x) forwarded, y.g set, then F.sink(y, one_input_grad=False)"
                  ".backward() with the sink not forwarded (backward_function_tester's first "
                  "step): x.g is y.g * y * (1 - y), y.g stays")
def function44_sink_backward__without_its_forward(nn, F, PF, r):
    r.touch("nnabla.Variable.backward")
    x = _var(nn, r.randn(2, 3))
    x.grad.zero()
    y = F.sigmoid(x)
    y.forward()
    y.g = r.randn(2, 3)
    F.sink(y, one_input_grad=False).backward()
    return {"x.g": x.g.copy(), "y.g": y.g.copy()}


@nnabla_case(names=["nnabla.backward_functions.registry"],
             note="registry['Tanh'] on dy, x, y = F.tanh(x): the gradient as a graph; its "
                  "forward, then the backward of sum(gx * w) into x and dy (double backward)")
def function44_backward_functions_registry__tanh(nn, F, PF, r):
    r.touch("nnabla.backward_functions.registry")
    registry = r.module("nnabla.backward_functions").registry
    x = _var(nn, r.randn(2, 3))
    y = F.tanh(x)
    dy = _var(nn, r.randn(2, 3))
    gx = registry["Tanh"]([dy], [x], [x.shape], [y], [y.shape])
    F.sink(gx).forward()
    res = {"gx": gx.d.copy(), "known": ["Tanh" in registry, "Sigmoid" in registry,
                                        registry.get("NoSuchFunction")]}
    x.grad.zero()
    dy.grad.zero()
    loss = F.sum(gx * _var(nn, r.randn(2, 3), need_grad=False))
    loss.forward()
    loss.backward()
    res["x.g"], res["dy.g"] = x.g.copy(), dy.g.copy()
    return res


@nnabla_case(names=["nnabla.dtypes", "nnabla.dtypes.np_dtpye_to_int",
                    "nnabla.dtypes.int_to_np_dtype", "nnabla.utils.nnabla_pb2",
                    "nnabla.utils.converter"],
             note="nnabla.dtypes' numbers of NumPy's types; an NNablaProtoBuf of one parameter "
                  "and one optimizer serialised (the same bytes); nnabla.utils.converter "
                  "imports (NNabla's test utilities import all three at their top)")
def function44_dtypes_pb2_converter__import(nn, F, PF, r):
    D = r.module("nnabla.dtypes")
    pb = r.module("nnabla.utils.nnabla_pb2")
    r.module("nnabla.utils.converter")
    res = {"to int": {np.dtype(t).name if t is not bool else "bool": n
                      for t, n in D.np_dtpye_to_int.items()},
           "to type": {str(n): np.dtype(t).name for n, t in D.int_to_np_dtype.items()}}
    proto = pb.NNablaProtoBuf()
    p = proto.parameter.add()
    p.variable_name = "w"
    p.shape.CopyFrom(pb.Shape(dim=[2, 1]))
    p.data.extend([0.5, -1.0])
    p.need_grad = True
    proto.parameter.append(pb.Parameter(variable_name="b"))
    proto.optimizer.append(pb.Optimizer(name="opt"))
    res["bytes"] = list(proto.SerializeToString())
    return res


@nnabla_case(names=["nnabla.functions.clip_grad_by_value"],
             note="x (2, 6), min and max drawn apart so that min > max at some positions "
                  "(nbla_test_utils' clip_grad_by_value test draws them so): backward of dy "
                  "in [-3, 3]; NNabla's clip_grad_by_value.cpp takes dy > max as max, else "
                  "dy < min as min")
def function44_clip_grad_by_value__min_above_max(nn, F, PF, r):
    x = _var(nn, r.randn(2, 6))
    lo = _var(nn, r.randn(2, 6), need_grad=False)
    hi = _var(nn, r.randn(2, 6), need_grad=False)
    y = F.clip_grad_by_value(x, lo, hi)
    y.forward()
    x.grad.zero()
    y.backward(np.linspace(-3.0, 3.0, 12).reshape(2, 6).astype(np.float32))
    return {"y": y.d.copy(), "x.g": x.g.copy(), "min > max": int((lo.d > hi.d).sum())}


@nnabla_case(names=["nnabla.functions.broadcast_to", "nnabla.functions.logical_and_scalar",
                    "nnabla.functions.logical_or_scalar", "nnabla.functions.logical_xor_scalar",
                    "nnabla.functions.binary_error", "nnabla.functions.epsilon_insensitive_loss",
                    FN + "name", FN + "forward"],
             note="the type names of the functions Stadyn composes of other ops "
                  "(y.parent.name: Stadyn gave its top op's, NotEqual for BinaryError); "
                  "broadcast_to's function run on new x2 (2, 3), y2 (3,)")
def function44_composed__type_names(nn, F, PF, r):
    r.touch(FN + "name", FN + "forward")
    x, t = nn.Variable((2,)), nn.Variable((2,))
    ys = [F.broadcast_to(nn.Variable((2, 3)), nn.Variable((3,))), F.logical_and_scalar(x, True),
          F.logical_or_scalar(x, 1), F.logical_xor_scalar(x, 0), F.binary_error(x, t),
          F.epsilon_insensitive_loss(x, t, 0.1)]
    res = {"names": [y.parent.name for y in ys]}
    x2, y2 = _var(nn, r.randn(2, 3)), _var(nn, r.randn(3))
    out = nn.Variable((2, 3))
    ys[0].parent.forward([x2, y2], [out])
    res["broadcast_to"] = out.d.copy()
    return res


@nnabla_case(names=[FN + "backward", "nnabla.functions.dropout"],
             note="y = F.dropout(x, 0.5); y.forward() (the graph's), then y.parent.backward([x], "
                  "[y], [False]): the gradient reads that forward's mask, dy * (y != 0) * 2 "
                  "(test_dropout.py's accumulation test; the masks themselves are random)")
def function44_dropout__backward_reads_graph_forward_mask(nn, F, PF, r):
    r.touch(FN + "backward")
    x = _var(nn, r.rand(4, 6) + 0.5)
    y = F.dropout(x, 0.5)
    res = {}
    for step in range(2):
        y.forward(clear_no_need_grad=True)
        mask = y.d != 0
        dy = r.randn(4, 6).astype(np.float32)
        x.g = 1.0
        y.g = dy
        y.parent.backward([x], [y], [False])
        res["mask read %d" % step] = bool(np.allclose(x.g, dy * mask * 2.0))
    return res
