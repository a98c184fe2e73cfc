"""What a program sees of the parameters around a ``compile_step`` step, as around an
uncompiled one (forward, ``zero_grad``, backward, ``update``): after the step ``W.g`` is that
step's gradient, and a parameter given new memory between steps (NNabla's
``W.data.fill(v)`` while a NumPy array kept from ``W.d`` reads the old: ``nnabla_object_model``
holds this to NNabla 1.39) is what the next step reads and updates.  The expectation is the
uncompiled twin, started from the same values and fed the same batches."""

import numpy as np
import pytest

import stadyn as sd
import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
import stadyn.compat.nnabla.parametric_functions as PF
import stadyn.compat.nnabla.solvers as S


def _model(solver_cls, **kw):
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        sd.seed(0)
        x, t = nn.Variable((4, 3)), nn.Variable((4, 2))
        with nn.parameter_scope("net"):
            loss = F.mean(F.squared_error(PF.affine(F.tanh(PF.affine(x, 5, name="a")), 2,
                                                   name="b"), t))
        params = nn.get_parameters()
        solver = solver_cls(**kw)
        solver.set_parameters(params)
    return x, t, loss, solver, params


def _batches(n):
    rng = np.random.RandomState(3)
    return [(rng.randn(4, 3), rng.randn(4, 2)) for _ in range(n)]


@pytest.mark.parametrize("solver_cls, kw, update, compiled", [
    (S.Momentum, {"lr": 0.1}, "inside", False),
    (S.Momentum, {"lr": 0.1}, "outside", False),
    (S.Adam, {"alpha": 0.05}, "inside", False),
    (S.Adam, {"alpha": 0.05}, "outside", False),
    pytest.param(S.Momentum, {"lr": 0.1}, "inside", True,      # inductor's program too
                 marks=pytest.mark.slow),
])
def test_step_leaves_each_parameter_its_gradient_and_follows_new_memory(solver_cls, kw, update,
                                                                        compiled):
    x1, t1, loss1, solver1, params1 = _model(solver_cls, **kw)
    x2, t2, loss2, solver2, params2 = _model(solver_cls, **kw)
    step = sd.compile_step(loss2, solver2, compile=compiled, update=update)
    kept = {}
    for i, (xb, tb) in enumerate(_batches(4)):
        if i == 2:              # new memory for a weight (a NumPy array reads the old one)
            for params in (params1, params2):
                W = params["net/a/affine/W"]
                kept[id(params)] = W.d
                W.data.fill(0.125)
        x1.d, t1.d = xb, tb
        loss1.forward()
        solver1.zero_grad()
        loss1.backward()
        solver1.update()
        x2.d, t2.d = xb, tb
        step()
        assert float(loss2.d) == pytest.approx(float(loss1.d), rel=1e-5, abs=1e-6)
        for name, v in params1.items():
            np.testing.assert_allclose(params2[name].g, v.g, rtol=1e-5, atol=1e-6,
                                       err_msg=f"step {i}: {name}.g")
            np.testing.assert_allclose(params2[name].d, v.d, rtol=1e-5, atol=1e-6,
                                       err_msg=f"step {i}: {name}.d")
    for params in (params1, params2):           # the kept arrays kept the old values
        assert not np.allclose(kept[id(params)], 0.125)
        assert not np.allclose(params["net/a/affine/W"].d, 0.125)   # updated from 0.125


@pytest.mark.parametrize("update", ["inside", "outside"])
def test_step_leaves_a_gradient_with_its_own_elements(update):
    # The gradient of sum(W + x) is a broadcast of ones; kept as W's gradient it must be an
    # array of its own elements.  NNabla 1.39 (two Sgd steps, then forward and backward
    # without zero_grad, then W.g[0, 0] = 5): W.g reads [5, 2, 2, ...].
    W = nn.Variable.from_numpy_array(np.ones((3, 4), np.float32), need_grad=True)
    x = nn.Variable.from_numpy_array(np.ones((3, 4), np.float32))
    loss = F.sum(W + x)
    solver = S.Sgd(0.1)
    solver.set_parameters({"W": W})
    step = sd.compile_step(loss, solver, compile=False, update=update)
    step()
    step()
    assert W.g.strides == (16, 4)
    np.testing.assert_array_equal(W.g, np.ones((3, 4)))
    loss.forward()
    loss.backward()
    W.g[0, 0] = 5.0
    expected = np.full((3, 4), 2.0, np.float32)
    expected[0, 0] = 5.0
    np.testing.assert_array_equal(W.g, expected)
