"""NNabla 1.39's behaviours left as known differences in compat.nnabla, now matched:

* ``F.tensor_normalization`` / ``F.batch_normalization`` over several axes give their batch
  statistics through ``Reshape`` and ``Transpose`` nodes of their own (NNabla's
  ``BatchNormalizationInOutAdapter``), which ``y.forward()`` does not run;
* ``F.slice`` fills ``None`` entries as NNabla's Python wrapper does and refuses lists of
  different lengths, as its C++ setup does.
"""

import numpy as np

from compat_harness import nnabla_case

N = "nnabla."


def _tried(fn):
    try:
        return repr(fn())
    except Exception as exc:           # noqa: BLE001 (what NNabla raises is the result)
        return type(exc).__name__


@nnabla_case(names=[N + "functions.tensor_normalization", N + "functions.batch_normalization",
                    N + "Variable.forward", N + "Variable.parent"],
             note="x (2, 3, 2); tensor_normalization and batch_normalization with output_stat "
                  "over axes [0, 1, 2], [0, 1], [-1, 0] and [1]: the statistics after "
                  "y.forward(), after mean.forward(), after var.forward(); the node kinds "
                  "above them")
def tensor_normalization__stats_as_nodes(nn, F, r):
    res = {}
    for dynamic in (False, True):
        nn.set_auto_forward(dynamic)
        try:
            for fn in ("tensor_normalization", "batch_normalization"):
                for axes in ([0, 1, 2], [0, 1], [-1, 0], [1]):
                    key = "%s %s %s" % ("dynamic" if dynamic else "static", fn, axes)
                    x = nn.Variable.from_numpy_array(r.randn(2, 3, 2), need_grad=True)
                    if fn == "tensor_normalization":
                        y, mean, var = F.tensor_normalization(x, axes, output_stat=True)
                    else:
                        y, mean, var = F.batch_normalization(x, None, None, None, None,
                                                             axes=axes, output_stat=True)
                    y.forward()
                    res[key + ": y"] = y.d.copy()
                    res[key + ": mean after y.forward"] = mean.d.copy()
                    res[key + ": var after y.forward"] = var.d.copy()
                    mean.forward()
                    res[key + ": var after mean.forward"] = var.d.copy()
                    var.forward()
                    res[key + ": mean"] = mean.d.copy()
                    res[key + ": var"] = var.d.copy()
                    up = mean.parent.inputs[0].parent
                    res[key + ": nodes"] = [mean.parent.name, up.name if up else None,
                                            var.parent.name]
        finally:
            nn.set_auto_forward(False)
    r.touch(N + "Variable.forward", N + "Variable.parent")
    return res


@nnabla_case(names=[N + "functions.slice"],
             note="x (2, 3, 4): None entries in start, stop and step, fewer entries than "
                  "axes, omitted lists; the values or the error's class")
def slice__entries_filled(nn, F, r):
    nn.set_auto_forward(True)
    try:
        x = nn.Variable.from_numpy_array(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
        res = {}
        for args in [((1,), (3,), None), ((1,), None, None), (None, (2,), None),
                     ((None,), (None,), (-1,)), ((0,), (None,), None),
                     ((0, None), (None, 1), (1, -1)), (None, None, (-1,)),
                     ((1,), (None,), (None,)), ((None, 1), (2, None), (None, None)),
                     (None, None, None), ((0, 0, 0), (2, 3, 4), None)]:
            res[repr(args)] = _tried(lambda: F.slice(x, *args).d.tolist())
        return res
    finally:
        nn.set_auto_forward(False)


@nnabla_case(names=["nnabla.utils.progress.progress", "nnabla.utils.callback.callback_list"],
             note="a callback module that logs update_progress and update_status in "
                  "callback_list; progress() with the module's cpu_load_backend_ok (psutil "
                  "importable) False and then True: the calls (NNabla 1.39's progress calls "
                  "update_status() when psutil imports; neither environment here has psutil, "
                  "so the flag is set by hand on both sides)")
def progress__update_status(nn, r):
    import types
    cb = r.module("nnabla.utils.callback")
    PR = r.module("nnabla.utils.progress")
    module = r.side.module("nnabla.utils.progress")
    told = []
    mine = types.ModuleType("my_status_callbacks")
    mine.update_progress = lambda text: told.append(["update_progress", text])
    mine.update_status = lambda *args: told.append(["update_status"] + [repr(a) for a in args])
    was = module.cpu_load_backend_ok
    cb.callback_list.append(mine)
    res = {}
    try:
        for ok in (False, True):
            module.cpu_load_backend_ok = ok
            del told[:]
            PR.progress("Training", 0.5)
            PR.progress(None)
            res["psutil %s" % ok] = list(told)
    finally:
        module.cpu_load_backend_ok = was
        cb.callback_list.remove(mine)
    return res


def _error(fn):
    try:
        return repr(fn())
    except Exception as exc:           # noqa: BLE001 (what NNabla raises is the result)
        return type(exc).__name__ + ": " + str(exc)


@nnabla_case(names=[N + "Variable.name", N + "Variable.get_unlinked_variable",
                    N + "Variable.parent"],
             note="names set as non-ASCII bytes (UTF-8, Latin-1), a non-ASCII str, a "
                  "bytearray: what setting does, what reading gives (twice), an unlinked view's "
                  "and a function input's name")
def variable_name__non_ascii_bytes(nn, F, r):
    r.touch(N + "Variable.name", N + "Variable.get_unlinked_variable", N + "Variable.parent")
    res = {}
    x = nn.Variable((2,))
    res["set utf-8"] = _error(lambda: setattr(x, "name", b"\xc3\xa9t\xc3\xa9"))
    res["read"] = _error(lambda: x.name)
    res["read again"] = _error(lambda: x.name)
    res["unlinked"] = _error(lambda: x.get_unlinked_variable().name)
    res["output"] = _error(lambda: F.relu(x).name)
    res["function input"] = _error(lambda: F.relu(x).parent.inputs[0].name)
    res["set latin-1"] = _error(lambda: setattr(x, "name", b"\xe9"))
    res["read latin-1"] = _error(lambda: x.name)
    res["set ascii"] = _error(lambda: setattr(x, "name", b"ok"))
    res["read ascii"] = _error(lambda: x.name)
    res["set str"] = _error(lambda: setattr(x, "name", u"\xe9"))
    res["after str"] = _error(lambda: x.name)
    res["set bytearray"] = _error(lambda: setattr(x, "name", bytearray(b"ab")))
    res["read bytearray"] = _error(lambda: x.name)
    return res


def _twice(PythonFunction):
    """A PythonFunction computing 2x (a graph holding one runs eagerly on Stadyn)."""
    class Twice(PythonFunction):
        @property
        def name(self):
            return "Twice"

        def min_outputs(self):
            return 1

        def grad_depends_output_data(self, i, o):
            return False

        def grad_depends_input_data(self, i, j):
            return False

        def setup_impl(self, inputs, outputs):
            outputs[0].reset_shape(inputs[0].shape, True)

        def forward_impl(self, inputs, outputs):
            outputs[0].d = inputs[0].d * 2

        def backward_impl(self, inputs, outputs, propagate_down, accum):
            g = 2 * outputs[0].g
            if accum[0]:
                inputs[0].g += g
            else:
                inputs[0].g = g
    return Twice()


def _late_need_grad_eager(nn, F, PythonFunction, seed, how, eager=True):
    nn.seed(23)
    x = nn.Variable.from_numpy_array(np.ones((1, 8), np.float32), need_grad=False)
    w = nn.Variable.from_numpy_array(np.ones((1, 8), np.float32), need_grad=True)
    a = F.dropout(w, 0.5)
    e = F.dropout(w, 0.5)
    h = _twice(PythonFunction)(x * w) if eager else x * w * 2.0
    y = F.dropout(h, 0.5, seed=seed) * e
    z = F.dropout(w, 0.5)
    if how == "other order":        # the loss's run draws e before y's first dropout
        loss = F.sum(e * 3.0) + F.sum(y * y) + F.sum(z) + F.sum(a)
    else:
        loss = F.sum(y * y) + F.sum(z) + F.sum(a)
    res = {}
    if how != "loss":
        y.forward()
    loss.forward()
    res["y.d 1"] = y.d.copy()
    x.need_grad = True
    x.grad.zero()
    w.grad.zero()
    (loss if how == "loss" else y).backward(clear_buffer=False)
    res.update({"x.g": x.g.copy(), "w.g": w.g.copy()})
    loss.forward()                  # the generators are where the first forward left them
    res["y.d 2"] = y.d.copy()
    return res


@nnabla_case(names=["nnabla.Variable.need_grad", "nnabla.Variable.backward",
                    "nnabla.function.PythonFunction", "nnabla.functions.dropout"],
             note="nn.seed(23), x = w = ones((1, 8)); a = dropout(w), y = dropout(Twice(x * w)) "
                  "(seed -1 or 5) * dropout(w), z = dropout(w); loss = sum(y * y) + sum(z) + "
                  "sum(a) (a PythonFunction: the graph runs eagerly on Stadyn); loss.forward() "
                  "(or y.forward() first; or with sum(e * 3) first in the loss, e y's second "
                  "dropout, so the loss's run draws y's dropouts in another order), "
                  "x.need_grad = True, loss.backward() (or y.backward()), loss.forward(): the "
                  "gradients through the forward's masks; the last with x * w * 2 for Twice")
def need_grad_set_after_forward__eager_graph_replays_draws(nn, F, PF, r):
    PythonFunction = r.module("nnabla.function").PythonFunction
    r.touch("nnabla.Variable.need_grad", "nnabla.Variable.backward",
            "nnabla.functions.dropout")
    res = {}
    for seed in (-1, 5):
        for how in ("loss", "y forwarded, then loss", "other order"):
            for k, v in _late_need_grad_eager(nn, F, PythonFunction, seed, how).items():
                res["seed=%d, %s: %s" % (seed, how, k)] = v
        # the same without the PythonFunction (a lowered plan; its op-by-op replay failed too)
        for k, v in _late_need_grad_eager(nn, F, PythonFunction, seed, "other order",
                                          False).items():
            res["seed=%d, lowered, other order: %s" % (seed, k)] = v
    return res


@nnabla_case(names=["nnabla.functions.mean_subtraction"],
             note="F.mean_subtraction of x (4, 3) with a running mean of zeros and a "
                  "fractional counter t = [2.7]: NNabla counts int(2.7) + 1 = 3; the output, "
                  "the running mean, t's value and x's gradient, static and dynamic")
def mean_subtraction__fractional_counter(nn, F, r):
    res = {}
    x0 = r.randn(4, 3)
    w = r.randn(4, 3)
    for dynamic in (False, True):
        nn.set_auto_forward(dynamic)
        try:
            key = "dynamic" if dynamic else "static"
            x = nn.Variable.from_numpy_array(x0, need_grad=True)
            mean = nn.Variable.from_numpy_array(np.zeros(3, np.float32))
            t = nn.Variable.from_numpy_array(np.array([2.7], np.float32))
            y = F.mean_subtraction(x, mean, t)
            y.forward()
            x.grad.zero()
            y.backward(w)
            res.update({key + " y": y.d.copy(), key + " mean": mean.d.copy(),
                        key + " t": t.d.copy(), key + " t value": float(t.d[0]),
                        key + " x.g": x.g.copy()})
        finally:
            nn.set_auto_forward(False)
    return res
