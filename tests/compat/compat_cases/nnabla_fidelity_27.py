"""NNabla 1.39 fidelity: solvers and parameters (the 27th helper session, nnsolv27).

* A solver's ``weight_decay`` and ``update`` on a parameter no backward reached: NNabla 1.39
  skips only a gradient that is ``zeroing`` (``src/nbla/solver.cpp:213-340``); a gradient never
  written is not (``SyncedArray``'s constructor, ``src/nbla/synced_array.cpp:68-69``), reads
  zeros and is decayed and updated.  Stadyn's solvers skipped every parameter without a
  gradient.
* ``v.d = value`` / ``v.g = value`` broadcast an array as NumPy's ``a[...] = value`` (NNabla
  1.39); Stadyn refused every other shape.  Float64 writes and a float16 gradient stay known
  differences.
* ``S.Nesterov``: NNabla 1.39 rounds ``w += -momentum v_old + (1 + momentum) v``; Stadyn rounded
  ``w -= momentum u + lr g`` (last-bit differences, now bit for bit); its state ``m`` keeps the
  opposite sign (a known difference until mendD33: NNabla's sign now).
* ``v.d = [1, 2, 3]`` (a list or tuple of the Variable's shape) is the NumPy array it makes,
  int64 (mendD33; Stadyn wrote it as float32).
"""

import numpy as np

from compat_harness import nnabla_case

# NNabla 1.39's solver classes (its AMSGRAD is Stadyn's AMSGRAD/AMSGrad)
_SOLVERS = ("Sgd", "Momentum", "Nesterov", "Adam", "AdamW", "AMSGRAD", "Adagrad", "Adadelta",
            "RMSprop", "RMSpropGraves", "AMSBound", "AdaBound", "AdaBelief", "Lamb", "Lars",
            "SgdW", "Lion", "Adamax")


@nnabla_case(names=["nnabla.solvers." + n for n in _SOLVERS] + ["nnabla.NdArray.fill",
                                                                 "nnabla.NdArray.zero"],
             note="every solver (defaults) over p = [1, -2] and q = [0.5, 0.5]: "
                  "weight_decay(0.5) then update, with p's gradient never written, zeroed by "
                  "p.grad.zero(), filled with p.grad.fill(0), after solver.zero_grad(), after "
                  "zero_grad() and a backward reaching q only; p, p.g after; then a second "
                  "update (the gradient kept); Sgd(lr=1) with clip_grad_by_norm, scale_grad, "
                  "check_inf_or_nan_grad, check_inf_grad, check_nan_grad on a gradient never "
                  "written, after weight_decay(0.5), and on a need_grad=False parameter")
def solver_weight_decay_no_backward(nn, F, PF, S, r):
    res = {}
    for name in _SOLVERS:
        for how in ("never written", "grad.zero()", "grad.fill(0)", "zero_grad()",
                    "backward of q only"):
            solver = getattr(S, name)()
            p = nn.Variable.from_numpy_array(np.array([1.0, -2.0], np.float32),
                                             need_grad=True)
            q = nn.Variable.from_numpy_array(np.array([0.5, 0.5], np.float32),
                                             need_grad=True)
            solver.set_parameters({"p": p, "q": q})
            if how == "grad.zero()":
                p.grad.zero()
            elif how == "grad.fill(0)":
                p.grad.fill(0)
            elif how == "zero_grad()":
                solver.zero_grad()
            elif how == "backward of q only":
                solver.zero_grad()
                y = F.sum(q * q)
                y.forward()
                y.backward()
            solver.weight_decay(0.5)
            solver.update()
            key = "%s, %s" % (name, how)
            res[key + ": p"] = p.d.copy()
            res[key + ": p.g"] = p.g.copy()
            res[key + ": q"] = q.d.copy()
            solver.update()
            res[key + ": p, second update"] = p.d.copy()
    for how in ("clip_grad_by_norm(1)", "scale_grad(2)", "checks", "weight_decay(0.5), "
                "clip_grad_by_norm(0.1)", "need_grad=False, weight_decay(0.5)"):
        solver = S.Sgd(lr=1.0)
        p = nn.Variable.from_numpy_array(np.ones(2, np.float32),
                                         need_grad=not how.startswith("need_grad"))
        solver.set_parameters({"p": p})
        if how.startswith("weight_decay") or how.startswith("need_grad"):
            solver.weight_decay(0.5)
        if "clip_grad_by_norm" in how:
            solver.clip_grad_by_norm(0.1 if "0.1" in how else 1.0)
        elif how == "scale_grad(2)":
            solver.scale_grad(2.0)
        elif how == "checks":
            res["checks"] = [bool(solver.check_inf_or_nan_grad()),
                             bool(solver.check_inf_grad()), bool(solver.check_nan_grad())]
        solver.update()
        res["Sgd(lr=1), " + how + ": p"] = p.d.copy()
        res["Sgd(lr=1), " + how + ": p.g"] = p.g.copy()
    r.touch("nnabla.NdArray.fill", "nnabla.NdArray.zero")
    return res


def _tried(fn):
    """``fn()``, or the built-in error type a user catches and whether NumPy's broadcasting
    words (which NNabla 1.39's message is) are in the message."""
    try:
        return fn()
    except Exception as exc:           # noqa: BLE001 (what NNabla raises is the result)
        kind = next(t.__name__ for t in (ValueError, TypeError, RuntimeError, Exception)
                    if isinstance(exc, t))
        return [kind, "could not broadcast input array from shape" in str(exc)]


_ONE_TENSOR = ("a Stadyn Variable holds one tensor, in which its ops compute and whose dtype "
               "its gradient has (torch's rule): a float64 value written is held as float32 "
               "(docs/nnabla-names.md, 'Variable.d = values of another floating dtype'), where "
               "NNabla 1.39 keeps the array's float64 and computes in float32; the values agree")
_HALF_GRAD = ("NNabla 1.39 casts a float32 leaf's gradient array to float16 (v.grad.cast) and "
              "fills it lazily in float16 (0.0999755859375); Stadyn refuses the cast "
              "(ArgumentError: a leaf's gradient has its value's dtype, torch's rule; "
              "compat/nnabla/_variable_arrays.py _set_grad) and fills float32")


@nnabla_case(names=["nnabla.Variable.d", "nnabla.Variable.g", "nnabla.NdArray.cast"],
             known={"g = float64 array: dtype": _ONE_TENSOR,
                    "g = float64 array: grad dtype": _ONE_TENSOR,
                    "d = float64 array: dtype": _ONE_TENSOR,
                    "d = float64 array: data dtype": _ONE_TENSOR,
                    "d = list row: dtype": _ONE_TENSOR, "g = list row: dtype": _ONE_TENSOR,
                    "grad.cast(float16)": _HALF_GRAD, "grad float16 fill(0.1)": _HALF_GRAD,
                    "grad float16 fill(0.1) dtype": _HALF_GRAD},
             note="v.d = / v.g = on a (2, 3) leaf (need_grad) and an op output: arrays of "
                  "shape (3,), (1, 3), (2, 1), (1, 2, 3), a 0-d array, a float, a list row, "
                  "and shapes that do not broadcast ((4,), (3, 2), (6,): the error type and "
                  "NumPy's words); a float64 array written to .g and .d (dtype, values); "
                  "fill(0.1) / zero() of float16 data (from_numpy_array, data.cast, an "
                  "NdArray) and of a gradient cast to float16")
def assignment__broadcast(nn, F, r):
    r.touch("nnabla.Variable.d", "nnabla.Variable.g", "nnabla.NdArray.cast")
    res = {}
    f64 = np.arange(6, dtype=np.float64).reshape(2, 3) / 3
    v = nn.Variable((2, 3), need_grad=True)
    v.g = f64
    res["g = float64 array: dtype"] = v.g.dtype.name
    res["g = float64 array: grad dtype"] = str(np.dtype(v.grad.dtype))
    res["g = float64 array"] = v.g.astype(np.float64)
    v = nn.Variable((2, 3), need_grad=True)
    v.d = f64
    res["d = float64 array: dtype"] = v.d.dtype.name
    res["d = float64 array: data dtype"] = str(np.dtype(v.data.dtype))
    res["d = float64 array"] = v.d.astype(np.float64)
    values = [("ones(3)", np.array([1.0, 2.0, 3.0], np.float32)),
              ("ones((1,3))", np.array([[4.0, 5.0, 6.0]], np.float32)),
              ("ones((2,1))", np.array([[7.0], [8.0]], np.float32)),
              ("(1,2,3)", np.arange(6, dtype=np.float32).reshape(1, 2, 3)),
              ("0-d array", np.array(2.5, np.float32)), ("float", 1.5),
              ("list row", [1.0, 2.0, 3.0]),
              ("wrong (4,)", np.ones(4, np.float32)), ("wrong (3,2)", np.ones((3, 2), np.float32)),
              ("wrong (6,)", np.arange(6, dtype=np.float32))]
    for what in ("d", "g"):
        for name, value in values:
            v = nn.Variable((2, 3), need_grad=True)

            def write(v=v, what=what, value=value):
                setattr(v, what, value)
                return getattr(v, what).astype(np.float64)
            res["%s = %s" % (what, name)] = _tried(write)
            if name == "list row":
                res["%s = list row: dtype" % what] = getattr(v, what).dtype.name
    # an op's output: written whole, then a backward reads what was written
    x = nn.Variable.from_numpy_array(np.ones((2, 3), np.float32), need_grad=True)
    y = F.add_scalar(x, 1.0)
    loss = F.sum(F.mul2(y, y))
    loss.forward()
    y.d = np.array([1.0, 2.0, 3.0], np.float32)
    res["output d = ones(3)"] = y.d.copy()
    x.grad.zero()
    loss.backward()
    res["output d = ones(3): x.g"] = x.g.copy()
    # float16 arrays filled lazily
    for how in ("fill(0.1)", "zero()"):
        def run(a):
            if how == "zero()":
                a.zero()
            else:
                a.fill(0.1)
        v = nn.Variable.from_numpy_array(np.ones((2,), np.float16))
        run(v.data)
        res["from_numpy float16 " + how] = [v.d.dtype.name, v.d.astype(np.float64).tolist()]
        v = nn.Variable((2,))
        v.data.cast(np.float16)
        run(v.data)
        res["data.cast float16 " + how] = [v.d.dtype.name, v.d.astype(np.float64).tolist()]
        a = nn.NdArray((2,))
        a.cast(np.float16)
        run(a)
        res["NdArray float16 " + how] = [a.data.dtype.name, a.data.astype(np.float64).tolist()]
    v = nn.Variable((2,), need_grad=True)
    res["grad.cast(float16)"] = _tried(lambda: str(np.dtype(v.grad.cast(np.float16).dtype)))
    v.grad.fill(0.1)
    res["grad float16 fill(0.1)"] = v.g.astype(np.float64)
    res["grad float16 fill(0.1) dtype"] = v.g.dtype.name
    return res


@nnabla_case(names=["nnabla.Variable.d"],
             note="v.d = a list or tuple of the leaf's shape (need_grad=False): [1, 2, 3], "
                  "(1, 2, 3), [True, False, True] on a (3,) leaf, [[1, 2, 3], [4, 5, 6]] on a "
                  "(2, 3) one: the dtype NumPy gives the list, and the values")
def assignment__list_of_the_shape(nn, F, r):
    r.touch("nnabla.Variable.d")
    res = {}
    for key, shape, value in (("list int", (3,), [1, 2, 3]), ("tuple int", (3,), (1, 2, 3)),
                              ("list bool", (3,), [True, False, True]),
                              ("nested list int", (2, 3), [[1, 2, 3], [4, 5, 6]])):
        v = nn.Variable(shape)
        v.d = value
        res[key + ": dtype"] = v.d.dtype.name
        res[key] = v.d.astype(np.float64)
    return res


@nnabla_case(names=["nnabla.solvers.Nesterov"],
             tols={"p": (0, 0), "state m": (0, 0), "p (1000,), 5 updates": (0, 0)},
             note="Nesterov(lr=0.1, momentum=0.9) over a (3,) parameter, three updates with "
                  "seeded gradients: the parameter (bit for bit: Stadyn rounds as "
                  "nesterov.cpp does since nnsolv27) and get_states()['p'].pstate['m'] (NNabla's "
                  "sign since mendD33, bit for bit); a (1000,) parameter after five updates, "
                  "bit for bit")
def nesterov__state_sign(nn, F, PF, S, r):
    r.touch("nnabla.solvers.Nesterov")
    solver = S.Nesterov(lr=0.1, momentum=0.9)
    p = nn.Variable.from_numpy_array(r.randn(3), need_grad=True)
    solver.set_parameters({"p": p})
    for _ in range(3):
        p.g = r.randn(3)
        solver.update()
    res = {"p": p.d.copy(), "state m": solver.get_states()["p"].pstate["m"].d.copy()}
    solver = S.Nesterov(lr=0.1, momentum=0.9)
    q = nn.Variable.from_numpy_array(r.randn(1000), need_grad=True)
    solver.set_parameters({"q": q})
    for _ in range(5):
        q.g = r.randn(1000)
        solver.update()
    res["p (1000,), 5 updates"] = q.d.copy()
    return res
