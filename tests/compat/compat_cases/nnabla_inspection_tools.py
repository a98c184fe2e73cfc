"""``nnabla.utils.inspection``'s function-hook tools: ``NanInfTracer`` (which function it names,
in which pass, what it prints, when it raises) and ``TimeProfiler`` / ``CpuTimerCallback`` (the
scopes and functions it times, its averages, its printout and CSV files, times masked).  Also
``backward(function_pre_hook=..., function_post_hook=...)``: the hooks given to ``forward`` are
the forward's own; a backward post hook reads the gradients of the function's inputs as they
stand once it has added its share.
"""

import contextlib
import csv
import io
import os
import re

import numpy as np

from compat_harness import nnabla_case

INSP = "nnabla.utils.inspection."
NIT = INSP + "NanInfTracer."
TP = INSP + "TimeProfiler."
CPU = INSP + "CpuTimerCallback."


def _without_rank(text):
    # NNabla 1.39 adds 1 to a function's rank once a static forward ran it (see inspection_pprint)
    text = re.sub(r" \(rank: \d+\)", "", text)
    return re.sub(r", created at [^ ]+ has", " has", text)   # Stadyn names the user's line too


def _raised(fn):
    """``fn()``'s printout and the ValueError it raised (None when none)."""
    out = io.StringIO()
    err = None
    with contextlib.redirect_stdout(out):
        try:
            fn()
        except ValueError as e:
            err = _without_rank(str(e))
    return [out.getvalue(), err]


@nnabla_case(names=[INSP + "NanInfTracer", NIT + "trace", NIT + "check",
                    NIT + "forward_post_hook", NIT + "backward_post_hook", NIT + "pre_hook",
                    NIT + "post_hook", NIT + "key_to_stat_fwd", NIT + "key_to_stat_bwd"])
def nan_inf_tracer(nn, F, r):
    I = r.module("nnabla.utils.inspection")
    r.touch(NIT + "trace", NIT + "check", NIT + "forward_post_hook", NIT + "backward_post_hook",
            NIT + "pre_hook", NIT + "post_hook", NIT + "key_to_stat_fwd", NIT + "key_to_stat_bwd")
    res = {}
    x = nn.Variable.from_numpy_array(np.array([1.0, 0.0, 4.0], np.float32), need_grad=True)
    w = nn.Variable.from_numpy_array(np.array([2.0, 3.0, -1.0], np.float32), need_grad=True)
    h = F.log(x)                 # -inf at 0
    y = F.sum(F.tanh(h * w))

    def run(tracer, backward=True):
        def go():
            with tracer.trace():
                y.forward(function_post_hook=tracer.forward_post_hook)
                if backward:
                    y.backward(function_post_hook=tracer.backward_post_hook)
        return go

    res["forward inf"] = _raised(run(I.NanInfTracer(), backward=False))
    res["trace_inf=False"] = _raised(run(I.NanInfTracer(trace_inf=False), backward=False))
    res["no details"] = _raised(run(I.NanInfTracer(need_details=False), backward=False))
    # finite forward, NaN in the backward: z ** 0.5 has an inf gradient at 0, times 0: NaN
    z = nn.Variable.from_numpy_array(np.array([0.0, 1.0, 4.0], np.float32), need_grad=True)
    s = F.pow_scalar(z, 0.5)
    y2 = F.sum(s * F.identity(z))

    def both(tracer):
        def go():
            with tracer.trace():
                y2.forward(function_post_hook=tracer.forward_post_hook)
                y2.backward(function_post_hook=tracer.backward_post_hook)
        return go
    t = I.NanInfTracer()
    res["backward"] = _raised(both(t))
    res["forward functions"] = [f.name for f in t.key_to_stat_fwd]
    res["backward functions"] = [f.name for f in t.key_to_stat_bwd]
    res["stat keys"] = sorted(t.key_to_stat_fwd[s.parent].keys())
    res["backward nan only"] = _raised(both(I.NanInfTracer(trace_inf=False)))
    res["backward inf only"] = _raised(both(I.NanInfTracer(trace_nan=False)))
    res["z.g"] = z.g.copy()
    # nothing traced: no hooks at all
    off = I.NanInfTracer(trace_nan=False, trace_inf=False)
    res["off hooks"] = [off.forward_post_hook is None, off.backward_post_hook is None,
                        off.pre_hook is None]
    try:
        off.post_hook
        res["post_hook"] = None
    except NotImplementedError:
        res["post_hook"] = "NotImplementedError"
    # check() without the context manager, after a clean run: nothing raised
    ok = I.NanInfTracer()
    y3 = F.sum(F.tanh(w))
    y3.forward(function_post_hook=ok.forward_post_hook)
    y3.backward(function_post_hook=ok.backward_post_hook)
    ok.check()
    res["clean"] = [f.name for f in ok.key_to_stat_bwd]
    return res


@nnabla_case(names=["nnabla.Variable.backward"])
def backward_function_hooks(nn, F, r):
    r.touch("nnabla.Variable.backward")
    x = nn.Variable.from_numpy_array(np.array([1.0, 2.0, 3.0], np.float32), need_grad=True)
    h = F.tanh(x)
    y = F.sum(h * h + x)
    log = []

    def pre(f):
        log.append("pre " + f.name)

    def post(f):
        log.append(["post " + f.name] + [np.round(i.g, 4).tolist() for i in f.inputs])

    res = {}
    x.g = 0
    y.forward(function_pre_hook=pre)
    res["forward"] = list(log)
    del log[:]
    y.backward()
    res["forward's hooks in backward"] = list(log)
    y.forward()
    y.backward(function_post_hook=post)
    res["post, accumulating"] = list(log)
    del log[:]
    y.forward(clear_no_need_grad=True)
    x.g = 0
    y.backward(function_pre_hook=pre, function_post_hook=post)
    res["both after clear_no_need_grad"] = list(log)
    res["x.g"], res["h.g"] = x.g.copy(), h.g.copy()

    # the order of the backward: the deepest function first; of equal depth, the one reached
    # first from the root through each function's inputs in order
    def order(y):
        seen = []
        y.forward()
        y.backward(function_pre_hook=lambda f: seen.append(f.name))
        return seen
    x = nn.Variable.from_numpy_array(np.ones(3, np.float32), need_grad=True)
    a, b = F.sin(x), F.cos(x)
    res["order a*b"], res["order b*a"] = order(F.sum(a * b)), order(F.sum(b * a))
    a, b = F.exp(F.sin(x)), F.cos(x)
    res["order deeper first"] = order(F.sum(a * b))
    a, b, c = F.sin(x), F.exp(F.cos(x)), F.tanh(x)
    res["order three branches"] = order(F.sum(a * b + c))
    h = F.sin(x)
    b = F.cos(h)
    a = F.exp(F.tanh(h))
    res["order shared input"] = order(F.sum(a * b))
    return res


def _masked(text):
    return re.sub(r"\d+(\.\d+)?(e-?\d+)?", "#", text)


@nnabla_case(names=[INSP + "TimeProfiler", TP + "scope", TP + "pre_hook", TP + "post_hook",
                    TP + "calc_elapsed_time", TP + "average", TP + "get_all_results",
                    TP + "to_csv", TP + "__call__", INSP + "CpuTimerCallback",
                    TP + "create_new_profiler", TP + "call_pre_hook", TP + "call_post_hook",
                    CPU + "pre_hook", CPU + "post_hook", CPU + "timer", CPU + "average",
                    CPU + "calc_elapsed_time"])
def time_profiler(nn, F, r):
    I = r.module("nnabla.utils.inspection")
    r.touch(TP + "scope", TP + "pre_hook", TP + "post_hook", TP + "calc_elapsed_time",
            TP + "average", TP + "get_all_results", TP + "to_csv", TP + "__call__",
            INSP + "CpuTimerCallback", TP + "create_new_profiler", TP + "call_pre_hook",
            TP + "call_post_hook", CPU + "pre_hook", CPU + "post_hook", CPU + "timer",
            CPU + "average", CPU + "calc_elapsed_time")
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    y = F.sum(F.sigmoid(F.tanh(x) * 2.0))
    tp = I.TimeProfiler("cpu", "0")
    for _ in range(3):
        with tp.scope("forward"):
            y.forward(function_pre_hook=tp.pre_hook, function_post_hook=tp.post_hook)
        with tp.scope("backward"):
            y.backward(function_pre_hook=tp.pre_hook, function_post_hook=tp.post_hook)
        tp.calc_elapsed_time(["forward", "backward", "summary"])
    avg = tp.average()
    res = {"scopes": sorted(avg),
           "forward keys": [str(k) for k in avg["forward"]],
           "backward keys": [str(k) for k in avg["backward"]],
           "summary keys": sorted(str(k) for k in avg["summary"]),
           "nums": [v["num"] for v in tp.average(start_index=1)["forward"].values()],
           "scale": sorted({v["scale"] for s in avg.values() for v in s.values()}),
           "times are numbers": all(v["time"] >= 0 for s in avg.values() for v in s.values()),
           "all results": sorted((k, len(v)) for k, v in
                                 ((s, [len(t) for t in res.values()])
                                  for s, res in tp.get_all_results().items()))}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        tp()
    res["printed"] = _masked(out.getvalue())
    with r.tempdir() as folder:
        tp.to_csv(folder)
        for name in ("profile_summary.csv", "profile_detail.csv"):
            with open(os.path.join(folder, name)) as f:
                rows = list(csv.reader(f))
            header = rows[0][:2] + sorted(rows[0][2:])
            res[name] = [header, sorted(row[0] for row in rows[1:]), len(rows) - 1]
    try:
        I.TimeProfiler("tpu", "0")
    except NotImplementedError as e:
        res["unknown extension"] = str(e)
    c = I.CpuTimerCallback("cpu", "0")
    c.pre_hook("k")
    c.post_hook("k")
    c.calc_elapsed_time()
    res["cpu timer"] = sorted(c.average()["k"].keys())
    res["timer"] = isinstance(c.timer(), float)
    tp2 = I.TimeProfiler("cpu", "0")
    tp2.create_new_profiler("manual")
    tp2.call_pre_hook("manual", "step")
    tp2.call_post_hook("manual", "step")
    tp2.calc_elapsed_time("manual")
    res["manual"] = [sorted(tp2.average()), sorted(tp2.average()["manual"])]
    try:
        tp2.call_post_hook("nope", "k")
    except ValueError as e:
        res["unknown scope"] = str(e)
    return res


@nnabla_case(names=["nnabla.ext_utils.import_extension_module",
                    "nnabla.ext_utils.list_extensions"])
def extension_modules(nn, F, r):
    """``import_extension_module('cpu')``'s device helpers (what scripts call to wait for the
    device or free its cache; a TimeProfiler synchronizes through them) and a forward under
    its ``context()``; an extension that is not there raises ModuleNotFoundError."""
    E = r.module("nnabla.ext_utils")
    ext = E.import_extension_module("cpu")
    res = {"list": E.list_extensions(),
           "devices": [ext.get_devices(), ext.get_device_count()],
           "calls": [ext.synchronize(), ext.synchronize(device_id="0"),
                     ext.device_synchronize("0"), ext.clear_memory_cache()],
           "array classes": ext.array_classes()}
    x = nn.Variable.from_numpy_array(np.array([1.0, -2.0], np.float32))
    with nn.context_scope(ext.context()):
        y = F.relu(x)
    y.forward()
    res["forward"] = y.d.copy()
    try:
        ext.context(type_config="double")
    except ValueError as e:
        res["bad type_config"] = str(e)
    try:
        E.import_extension_module("tpu")
    except ModuleNotFoundError as e:
        res["missing"] = str(e)
    return res
