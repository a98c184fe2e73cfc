"""NNabla 1.39 fidelity: the differences the 31st session recorded and left.

* ``F.random_flip`` with an axis before ``base_axis`` (``axes=(0,)``, an NdArray or a Variable):
  NNabla 1.39 takes it (random_flip.cpp's ``flip_recursive`` reads a sample axis backwards when
  the row of draws current as it enters that axis says so; the row steps with the samples),
  Stadyn refused it (``ShapeError``: "axes (0,) include a sample axis").
* ``F.fused_batch_normalization`` over several axes: NNabla 1.39's Python wrapper passes ``z``
  through its ``BatchNormalizationInOutAdapter`` (``z=None``: ``AssertionError``, "All inputs
  must be Variable."), and without ``output_stat`` hands its C++ function ``x`` itself with the
  adapted ``beta`` (``RuntimeError``: "Shape of beta(inputs[1]) does not match"); with
  ``output_stat=True`` and ``batch_stat=False`` the C++ setup refuses the outputs.  Only
  ``output_stat=True`` with ``batch_stat=True`` and a ``z`` computes.  Stadyn computed each.
* ``F.mean_subtraction``'s counter ``t``: NNabla 1.39's ``MeanSubtraction`` casts its array to
  int32 at each forward that updates the running mean (float32 ``[0.]`` from
  ``PF.mean_subtraction`` until the first forward), so a float written later is truncated,
  counts stay exact past 2**24 and ``nn.save_parameters`` writes an int32 dataset; Stadyn's
  ``t`` stayed float32 (``compat/nnabla/_counters.py`` now casts it).
"""

import numpy as np

from compat_harness import nnabla_case

_F = "nnabla.functions."


def _tried(fn):
    """The result of ``fn()``, or the error's type and the words NNabla's message holds (the
    part both frameworks write; NNabla's adds its build path, Stadyn's the user's line)."""
    try:
        return fn()
    except Exception as exc:           # noqa: BLE001 (what NNabla raises is the result)
        text = str(exc)
        # the built-in type a user catches (Stadyn's NNablaRefusal is a RuntimeError)
        kind = next(t.__name__ for t in (AssertionError, RuntimeError, TypeError, ValueError,
                                         Exception) if isinstance(exc, t))
        for words in ("All inputs must be Variable.", "Shape of beta(inputs[1]) does not "
                      "match. beta: (1, 12) != expected: (1, 3, 1).",
                      "If batch_stat_ is false, it cannot output batch mean and variance."):
            if words in text:
                return "%s: %s" % (kind, words)
        return "%s: (other words) %s" % (kind, text[:80])


# (axes, base_axis) of a (2, 3, 2, 2) input
_FLIPS = (((0,), 1), ((0, 3), 1), ((0, 1), 2), ((1, 3), 2), ((0,), 2), ((0, 2), 3),
          ((0, 1, 3), 2))

# (shape, axes, base_axis) whose gradients NNabla maps as its forward (review B of session 32)
_GRAD_FLIPS = (((3, 2, 2), (0,), 1), ((3, 4, 2), (0, 1), 2), ((2, 3, 2, 2), (0, 1), 2),
               ((3, 2, 2, 2), (0, 1, 2), 3), ((2, 2, 3), (1,), 2), ((4, 3, 2), (0, 2), 2),
               ((3, 3, 2), (0, 1, 2), 2))


@nnabla_case(names=[_F + "random_flip", "nnabla.NdArray.from_numpy_array"],
             rtol=0, atol=0,
             note="F.random_flip of an NdArray arange(24).reshape(2, 3, 2, 2) along axes "
                  "before base_axis (seeds 0-5; axes (0,), (0, 3), (0, 1) with base_axis 2, "
                  "...), and of a Variable along (0, 1) with base_axis=2 after nn.seed(7): "
                  "three static forwards, each with x's gradient of backward(arange(24)); "
                  "the output and x's gradient of backward(arange * 10) for the shapes, axes "
                  "and base_axis of _GRAD_FLIPS, seeds 0-7 (NNabla's backward maps dy as its "
                  "forward maps x)")
def random_flip__sample_axes(nn, F, r):
    res = {}
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 2, 2)
    for seed in range(6):
        for axes, base in _FLIPS:
            nd = nn.NdArray.from_numpy_array(x)
            y = F.random_flip(nd, axes=axes, base_axis=base, seed=seed)
            res["seed %d axes %s base_axis %d" % (seed, axes, base)] = y.data.copy()
    v = nn.Variable.from_numpy_array(x, need_grad=True)
    nn.seed(7)
    y = F.random_flip(v, axes=(0, 1), base_axis=2)
    for k in range(3):
        y.forward()
        v.grad.zero()
        y.backward(np.arange(24, dtype=np.float32).reshape(y.shape))
        res["forward %d y" % k] = y.d.copy()
        res["forward %d x.g" % k] = v.g.copy()
    for shape, axes, base in _GRAD_FLIPS:
        x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        for seed in range(8):
            v = nn.Variable.from_numpy_array(x, need_grad=True)
            y = F.random_flip(v, axes=axes, base_axis=base, seed=seed)
            y.forward()
            v.grad.zero()
            y.backward(x * 10)
            key = "shape %s axes %s base_axis %d seed %d" % (shape, axes, base, seed)
            res[key + " y"] = y.d.copy()
            res[key + " x.g"] = v.g.copy()
    r.touch("nnabla.NdArray.from_numpy_array")
    return res


@nnabla_case(names=[_F + "fused_batch_normalization"], rtol=1e-4, atol=1e-5,
             note="F.fused_batch_normalization of x (2, 3, 4) over axes [1, 2] (beta, gamma, "
                  "running mean and variance of shape (1, 3, 4)), with and without z, "
                  "batch_stat and output_stat each True or False, static and dynamic: the "
                  "error's type and words, or the output and running statistics; over [1] "
                  "the output; over [-3, -1] and [-1] (parameters (2, 1, 4), (1, 1, 4)) the "
                  "error or output")
def fused_batch_normalization__several_axes(nn, F, r):
    res = {}
    x0, z0 = r.randn(2, 3, 4), r.randn(2, 3, 4)
    for dynamic in (False, True):
        nn.set_auto_forward(dynamic)
        try:
            for with_z in (False, True):
                for batch_stat in (True, False):
                    for output_stat in (False, True):
                        key = "%s z=%s batch_stat=%s output_stat=%s" % (
                            "dynamic" if dynamic else "static", with_z, batch_stat,
                            output_stat)

                        def run(with_z=with_z, batch_stat=batch_stat,
                                output_stat=output_stat, axes=(1, 2), shape=(1, 3, 4)):
                            x = nn.Variable.from_numpy_array(x0)
                            z = nn.Variable.from_numpy_array(z0) if with_z else None
                            beta = nn.Variable.from_numpy_array(np.full(shape, 0.2, np.float32))
                            gamma = nn.Variable.from_numpy_array(np.full(shape, 1.5, np.float32))
                            mean = nn.Variable.from_numpy_array(np.full(shape, 0.1, np.float32))
                            var = nn.Variable.from_numpy_array(np.full(shape, 2.0, np.float32))
                            out = F.fused_batch_normalization(
                                x, beta, gamma, mean, var, z, axes=list(axes),
                                batch_stat=batch_stat, output_stat=output_stat)
                            y = out[0] if output_stat else out
                            y.forward()
                            return {"y": y.d.copy(), "running mean": mean.d.copy(),
                                    "running variance": var.d.copy()}
                        got = _tried(run)
                        if isinstance(got, dict):
                            for k, v in got.items():
                                res["%s: %s" % (key, k)] = v
                        else:
                            res[key] = got
                        if not output_stat and batch_stat:
                            res[key + " axes [1]"] = _tried(
                                lambda: run(axes=(1,), shape=(1, 3, 1))["y"])
                        # negative axes: NNabla's wrapper places the parameters' axes with
                        # ``i in axes``, so none fits (ValueError)
                        res[key + " axes [-3, -1]"] = _tried(
                            lambda: run(axes=(-3, -1), shape=(2, 1, 4))["y"])
                        res[key + " axes [-1]"] = _tried(
                            lambda: run(axes=(-1,), shape=(1, 1, 4))["y"])
        finally:
            nn.set_auto_forward(False)
    return res


# NNabla 1.39's solvers update a parameter whose gradient was never computed (a fresh grad
# array reads zeros, not ``zeroing``), so weight_decay(0.1) decays the running mean (no backward
# reaches it) to [1.49985 ...]; so do Stadyn's since nnsolv27 (solvers/_solver.py _with_grad).


@nnabla_case(names=["nnabla.parametric_functions.mean_subtraction", _F + "mean_subtraction",
                    "nnabla.save_parameters", "nnabla.load_parameters"],
             note="PF.mean_subtraction of x (4, 3): t's dtype and value before the first "
                  "forward, after one and two, after t.d = 5.5 and a forward, after t.d = "
                  "[2**24] (int32) and two forwards (float32 would stop at 16777216), the "
                  "h5 file's datasets (dtype, value) and t after nn.load_parameters of it; "
                  "F.mean_subtraction of a float32 t = [2.7] (static: float32 until the "
                  "forward; dynamic: int32 at the call), of an int32 t, of a float t with "
                  "update_running_mean=False (stays float32), and t.data = a float32 NdArray "
                  "(cast again at the next forward); two imperative calls on NdArrays; "
                  "Sgd, Momentum and Adam over PF.mean_subtraction's parameters after a "
                  "backward: t.g read (t cast to float32 and updated), with weight_decay(0.1), "
                  "or every p.grad.zero() (t skipped, stays int32), then a forward")
def mean_subtraction__int32_counter(nn, F, PF, S, r):
    import h5py
    res = {}

    def read(name, v):
        res[name + " dtype"] = str(v.d.dtype)
        res[name] = v.d.astype(np.float64).tolist()

    nn.clear_parameters()
    try:
        x = nn.Variable.from_numpy_array(r.randn(4, 3), need_grad=True)
        y = PF.mean_subtraction(x, name="ms")
        t = nn.get_parameters(grad_only=False)["ms/mean_subtraction/t"]
        read("PF t before", t)
        y.forward()
        read("PF t after 1", t)
        y.forward()
        read("PF t after 2", t)
        t.d = 5.5
        read("PF t = 5.5", t)
        y.forward()
        read("PF t = 5.5, forward", t)
        t.d = np.array([2 ** 24], np.int32)
        y.forward()
        y.forward()
        read("PF t from 2**24, two forwards", t)
        res["PF mean"] = nn.get_parameters(grad_only=False)["ms/mean_subtraction/mean"].d.copy()
        nn.save_parameters("ms.h5")
        with h5py.File("ms.h5", "r") as f:
            for k in ("ms/mean_subtraction/mean", "ms/mean_subtraction/t"):
                res["h5 " + k + " dtype"] = str(f[k].dtype)
                res["h5 " + k] = np.asarray(f[k][()], np.float64)
        nn.clear_parameters()
        nn.load_parameters("ms.h5")
        read("loaded t", nn.get_parameters(grad_only=False)["ms/mean_subtraction/t"])
    finally:
        nn.clear_parameters()
    x = nn.Variable.from_numpy_array(np.arange(6, dtype=np.float32).reshape(2, 3))
    for dynamic in (False, True):
        mode = "dynamic" if dynamic else "static"
        nn.set_auto_forward(dynamic)
        try:
            for given in ("float", "int32", "no update"):
                m = nn.Variable.from_numpy_array(np.ones(3, np.float32))
                t = nn.Variable.from_numpy_array(
                    np.array([3], np.int32) if given == "int32" else np.array([2.7], np.float32))
                y = F.mean_subtraction(x, m, t, update_running_mean=given != "no update")
                key = "%s %s t" % (mode, given)
                read(key + " at the call", t)
                y.forward()
                read(key + " after forward", t)
                t.data = nn.NdArray.from_numpy_array(np.array([3.5], np.float32))
                read(key + " given a float NdArray", t)
                y.forward()
                read(key + " given a float NdArray, forward", t)
                res[key + " mean"] = m.d.copy()
        finally:
            nn.set_auto_forward(False)
    # NNabla's imperative mode: NdArrays in, the counter NdArray cast itself
    m = nn.NdArray.from_numpy_array(np.ones(3, np.float32))
    t = nn.NdArray.from_numpy_array(np.array([2.7], np.float32))
    for k in range(2):
        out = F.mean_subtraction(nn.NdArray.from_numpy_array(
            np.arange(6, dtype=np.float32).reshape(2, 3)), m, t)
        res["NdArray call %d out" % k] = out.data.copy()
        res["NdArray call %d mean" % k] = m.data.copy()
        res["NdArray call %d t dtype" % k] = str(t.data.dtype)
        res["NdArray call %d t" % k] = t.data.astype(np.float64).tolist()
    # solvers over the int32 t: NNabla's cast_data_and_get_pointer<float> casts it in place
    for name in ("Sgd", "Momentum", "Adam"):
        for how in ("t.g read", "t.g read, weight_decay(0.1)", "grad.zero(), weight_decay(0.1)"):
            nn.clear_parameters()
            try:
                x = nn.Variable.from_numpy_array(np.arange(6, dtype=np.float32).reshape(2, 3),
                                                 need_grad=True)
                y = PF.mean_subtraction(x)
                ps = nn.get_parameters(grad_only=False)
                solver = getattr(S, name)()
                solver.set_parameters(ps)
                y.forward()
                y.backward()
                if how.startswith("t.g"):
                    ps["mean_subtraction/t"].g
                else:
                    for p in ps.values():
                        p.grad.zero()
                if "weight_decay" in how:
                    solver.weight_decay(0.1)
                solver.update()
                key = "%s, %s: " % (name, how)
                read(key + "t", ps["mean_subtraction/t"])
                res[key + "mean"] = ps["mean_subtraction/mean"].d.copy()
                y.forward()
                read(key + "t after a forward", ps["mean_subtraction/t"])
            finally:
                nn.clear_parameters()
    r.touch("nnabla.save_parameters", "nnabla.load_parameters")
    return res


@nnabla_case(names=["nnabla.parametric_functions.fused_batch_normalization"],
             rtol=1e-4, atol=1e-5,
             note="PF.fused_batch_normalization of x (2, 3, 4) over axes [1, 2] (and [-3, "
                  "-1], [-1]: NNabla's F refuses its PF's parameters), with and "
                  "without z, output_stat True or False: the error's type and words or the "
                  "output, and the parameters registered (NNabla's PF makes them before its F "
                  "fails)")
def PF_fused_batch_normalization__several_axes(nn, F, PF, r):
    res = {}
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 4))
    z = nn.Variable.from_numpy_array(r.randn(2, 3, 4))
    try:
        for with_z in (False, True):
            for output_stat in (False, True):
                key = "z=%s output_stat=%s" % (with_z, output_stat)
                for axes in ([1, 2], [-3, -1], [-1]):
                    nn.clear_parameters()

                    def run(with_z=with_z, output_stat=output_stat, axes=axes):
                        out = PF.fused_batch_normalization(x, z if with_z else None, axes=axes,
                                                           output_stat=output_stat)
                        y = out[0] if output_stat else out
                        y.forward()
                        return y.d.copy()
                    at = "" if axes == [1, 2] else " axes %s" % axes
                    res[key + at] = _tried(run)
                    res[key + at + " parameters"] = sorted(
                        [k, list(v.shape)] for k, v in nn.get_parameters(grad_only=False).items())
    finally:
        nn.clear_parameters()
    return res


@nnabla_case(names=["nnabla.parametric_functions.fused_batch_normalization"],
             note="PF.fused_batch_normalization that NNabla's F refuses (over axes [1, 2] "
                  "without z: AssertionError; nonlinearity 'sigmoid': RuntimeError) with "
                  "integer or bool running statistics in param_init, batch_stat True or "
                  "False, and with a list (a refused initializer, ValueError when made): the "
                  "error's type, and the parameters NNabla's PF made before its F failed with "
                  "their dtypes and values -- no forward ran to write float32 into mean and var, "
                  "so they keep the array's type (Stadyn made them as a batch_stat=True call, "
                  "float32)")
def PF_fused_batch_normalization__refused_integer_statistics(nn, F, PF, r):
    res = {}
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 4))
    calls = {"axes [1, 2]": ((1, 3, 4), {"axes": [1, 2]}),
             "sigmoid": ((1, 3, 1), {"nonlinearity": "sigmoid"})}
    try:
        for label, (shape, kwargs) in sorted(calls.items()):
            for dtype in ("int32", "bool", "list"):
                for batch_stat in (True, False):
                    nn.clear_parameters()
                    stats = np.arange(int(np.prod(shape))).reshape(shape) % 3
                    init = {"mean": stats.astype(np.int32 if dtype == "list" else dtype),
                            "var": (stats + 1).astype(np.int32 if dtype == "list" else dtype)}
                    if dtype == "list":
                        init["var"] = init["var"].tolist()
                    key = "%s %s batch_stat=%s" % (label, dtype, batch_stat)
                    # (the error's built-in type a user catches: NNablaRefusal's RuntimeError)
                    res[key] = _tried(lambda: PF.fused_batch_normalization(
                        x, batch_stat=batch_stat, param_init=init, **kwargs)).split(":")[0]
                    for k, v in sorted(nn.get_parameters(grad_only=False).items()):
                        res["%s %s dtype" % (key, k)] = str(v.d.dtype)
                        res["%s %s" % (key, k)] = v.d.astype(np.float64)
    finally:
        nn.clear_parameters()
    return res


@nnabla_case(names=["nnabla.solvers.Momentum", "nnabla.NdArray.zero"],
             note="a solver skips a gradient still zeroing (NNabla 1.39's Solver::update and "
                  "weight_decay, src/nbla/solver.cpp): every p.grad.zero() of PF.affine's "
                  "parameters after a backward, then weight_decay(0.1) and update (Sgd, Adam); "
                  "x trained through x.reshape(unlink=True), zero_grad() and update() with no "
                  "backward (Momentum)")
def solver__skips_zeroing_gradient(nn, F, PF, S, r):
    res = {}
    for name in ("Sgd", "Adam"):
        nn.clear_parameters()
        try:
            x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
            y = PF.affine(x, 2, name="a")
            ps = nn.get_parameters()
            r.set_params(ps)
            solver = getattr(S, name)()
            solver.set_parameters(ps)
            y.forward()
            y.backward()
            for p in ps.values():
                p.grad.zero()
            solver.weight_decay(0.1)
            solver.update()
            for k, p in ps.items():
                res["%s %s" % (name, k)] = p.d.copy()
                res["%s %s.g" % (name, k)] = p.g.copy()
        finally:
            nn.clear_parameters()
    x = nn.Variable.from_numpy_array(np.ones(4, np.float32), need_grad=True)
    v = x.reshape((2, 2), unlink=True)
    solver = S.Momentum(0.1, 0.9)
    solver.set_parameters({"x": x})
    y = F.sum(v * v)
    y.forward()
    solver.zero_grad()
    y.backward()
    solver.update()
    res["view: after a step"] = x.d.copy()
    solver.zero_grad()
    solver.update()
    res["view: zero_grad, update"] = x.d.copy()
    res["view: zeroing"] = bool(x.grad.zeroing)
    r.touch("nnabla.NdArray.zero")
    return res
