"""The solver harness: every solver of ``stadyn.solvers`` through the same checks.

The solvers under test are ``stadyn.solvers.__all__`` minus the base class and the functional
module; each needs an entry in :data:`REFERENCES` (a NumPy re-implementation of NNabla's update
rule, from NNabla's ``solvers.yaml`` and C++ sources, and NNabla's default hyperparameters), and a
solver without one fails :func:`test_every_solver_has_a_reference`.

Checks per solver: the foreach path equals the per-tensor loop; three steps equal the NumPy
reference; the defaults are NNabla's; ``update()`` skips parameters without a gradient;
``set_parameters(reset=False, retain_state=True)``; ``weight_decay``, ``clip_grad_by_norm``,
``check_inf_or_nan_grad``, the learning rate; ``save_states``/``load_states``; invalid learning
rates.  The functional maths (``stadyn.solvers.functional``) is also checked foreach == loop with
per-parameter scalars the solver classes do not use.
"""

from __future__ import annotations

import copy
import math
import os
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
import stadyn.solvers as S
from stadyn.solvers import functional as Fn

# the solver classes (AMSGrad is another name of AMSGRAD, NNabla's; the module also has the
# solver hooks, functions)
SOLVER_NAMES = [n for n in S.__all__ if isinstance(getattr(S, n), type)
                and n not in ("Optimizer", "Solver", "SolverState", "AMSGrad")]
SHAPES = {"a": (3,), "b": (2, 4), "c": (2, 3, 2)}


# Tiny tensors: one intra-op thread avoids thread-pool waits on a loaded 2-core machine.
pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ---------------------------------------------------------------------------------------------
# NumPy references of NNabla's update rules (float64; ``s`` is the per-parameter state dict,
# ``t`` the step count after increment, ``h`` the current and ``h0`` the initial hyperparameters)
# ---------------------------------------------------------------------------------------------
def sgd_step(w, g, s, t, h, h0):
    return w - h["lr"] * g


def momentum_step(w, g, s, t, h, h0):
    s["m"] = h["momentum"] * s["m"] + h["lr"] * g
    return w - s["m"]


def nesterov_step(w, g, s, t, h, h0):
    """NNabla: ``v_t = m v_{t-1} - lr g; w += -m v_{t-1} + (1 + m) v_t``."""
    v_prev = s["m"]
    s["m"] = h["momentum"] * v_prev - h["lr"] * g
    return w - h["momentum"] * v_prev + (1 + h["momentum"]) * s["m"]


def _adam_moments(g, s, h, m="mean", v="var"):
    s[m] = h["beta1"] * s[m] + (1 - h["beta1"]) * g
    s[v] = h["beta2"] * s[v] + (1 - h["beta2"]) * g * g


def _bias_corrected(alpha, t, h):
    return alpha * math.sqrt(1 - h["beta2"] ** t) / (1 - h["beta1"] ** t)


def adam_step(w, g, s, t, h, h0):
    _adam_moments(g, s, h)
    return w - _bias_corrected(h["alpha"], t, h) * s["mean"] / (np.sqrt(s["var"]) + h["eps"])


def adamw_step(w, g, s, t, h, h0, wd=None):
    """Adam, then ``- eta_t * wd * w_old`` with ``eta_t = alpha / alpha_initial``; NNabla's
    ``weight_decay(rate)`` replaces ``wd`` by ``rate`` in the next update."""
    w_old = w
    w = adam_step(w, g, s, t, h, h0)
    return w - (h["alpha"] / h0["alpha"]) * (h["wd"] if wd is None else wd) * w_old


def amsgrad_step(w, g, s, t, h, h0, bias_correction=False):
    _adam_moments(g, s, h, "m", "v")
    s["v_hat"] = np.maximum(s["v_hat"], s["v"])
    alpha = _bias_corrected(h["alpha"], t, h) if bias_correction else h["alpha"]
    return w - alpha * s["m"] / (np.sqrt(s["v_hat"]) + h["eps"])


def rmsprop_step(w, g, s, t, h, h0):
    s["v"] = h["decay"] * s["v"] + (1 - h["decay"]) * g * g
    return w - h["lr"] * g / (np.sqrt(s["v"]) + h["eps"])


def adagrad_step(w, g, s, t, h, h0):
    s["v"] = s["v"] + g * g
    return w - h["lr"] * g / (np.sqrt(s["v"]) + h["eps"])


def adadelta_step(w, g, s, t, h, h0):
    d, eps = h["decay"], h["eps"]
    s["e_sqr_grad"] = d * s["e_sqr_grad"] + (1 - d) * g * g
    delta = np.sqrt((s["e_sqr_delta"] + eps) / (s["e_sqr_grad"] + eps)) * g
    s["e_sqr_delta"] = d * s["e_sqr_delta"] + (1 - d) * delta * delta
    return w - h["lr"] * delta


def lion_step(w, g, s, t, h, h0, wd=0.0):
    """NNabla: ``u = sign(lerp(g, m, b1)); m = lerp(g, m, b2); w -= lr (u + wd w)``."""
    u = np.sign(h["beta1"] * s["m"] + (1 - h["beta1"]) * g)
    s["m"] = h["beta2"] * s["m"] + (1 - h["beta2"]) * g
    return w - h["lr"] * (u + wd * w)


def _nnabla_solver_refs():
    """The references of NNabla's further solvers (``nnabla_solver_refs.py`` beside this file,
    loaded by path: this module is also loaded from other folders' tests)."""
    import importlib.util
    import sys
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nnabla_solver_refs.py")
    spec = importlib.util.spec_from_file_location("_stadyn_nnabla_solver_refs", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class Reference:
    """NNabla's update rule, its defaults, and the (non-default) settings the tests use."""

    step: Callable
    state: tuple[str, ...]
    defaults: dict
    kwargs: dict
    extra_configs: list[dict] = field(default_factory=list)
    fused_weight_decay: bool = False


REFERENCES: dict[str, Reference] = {
    "Sgd": Reference(sgd_step, (), {"lr": 1e-3}, {"lr": 0.1}),
    "Momentum": Reference(momentum_step, ("m",), {"lr": 1e-3, "momentum": 0.9},
                          {"lr": 0.1, "momentum": 0.8}),
    "Nesterov": Reference(nesterov_step, ("m",), {"lr": 1e-3, "momentum": 0.9},
                          {"lr": 0.1, "momentum": 0.8}),
    "Adam": Reference(adam_step, ("mean", "var"),
                      {"alpha": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8},
                      {"alpha": 0.05, "beta1": 0.8, "beta2": 0.95, "eps": 1e-6}),
    "AdamW": Reference(adamw_step, ("mean", "var"),
                       {"alpha": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "wd": 1e-4},
                       {"alpha": 0.05, "beta1": 0.8, "beta2": 0.95, "eps": 1e-6, "wd": 0.1},
                       fused_weight_decay=True),
    "AMSGRAD": Reference(amsgrad_step, ("m", "v", "v_hat"),
                         {"alpha": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8},
                         {"alpha": 0.05, "beta1": 0.8, "beta2": 0.95, "eps": 1e-6},
                         extra_configs=[{"alpha": 0.05, "bias_correction": True}]),
    "RMSprop": Reference(rmsprop_step, ("v",), {"lr": 1e-3, "decay": 0.9, "eps": 1e-8},
                         {"lr": 0.05, "decay": 0.8, "eps": 1e-6}),
    "Adagrad": Reference(adagrad_step, ("v",), {"lr": 1e-2, "eps": 1e-8},
                         {"lr": 0.1, "eps": 1e-6}),
    "Adadelta": Reference(adadelta_step, ("e_sqr_grad", "e_sqr_delta"),
                          {"lr": 1.0, "decay": 0.95, "eps": 1e-6},
                          {"lr": 0.5, "decay": 0.8, "eps": 1e-4}),
    "Lion": Reference(lion_step, ("m",), {"lr": 1e-4, "beta1": 0.9, "beta2": 0.99},
                      {"lr": 0.05, "beta1": 0.8, "beta2": 0.9}, fused_weight_decay=True),
}


REFERENCES.update(_nnabla_solver_refs().more_references(Reference))


def test_every_solver_has_a_reference():
    assert sorted(set(SOLVER_NAMES) - set(REFERENCES)) == [], "solvers without a reference"
    assert sorted(set(REFERENCES) - set(SOLVER_NAMES)) == [], "references of unknown solvers"


def _configs():
    params = []
    for name in SOLVER_NAMES:
        ref = REFERENCES.get(name)
        if ref is None:
            params.append(pytest.param(name, {}, id=f"{name}-MISSING"))
            continue
        for k, kwargs in enumerate([ref.kwargs] + ref.extra_configs):
            params.append(pytest.param(name, kwargs, id=f"{name}-{k}"))
    return params


CONFIGS = _configs()


def _reference(name: str) -> Reference:
    if name not in REFERENCES:
        pytest.fail(f"solver {name} has no NumPy reference in tests/solvers/test_solvers.py")
    return REFERENCES[name]


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------
def make_parameters(seed: int = 0, shapes: dict = SHAPES) -> dict[str, sd.Variable]:
    rng = np.random.default_rng(seed)
    return {k: sd.Variable.from_numpy_array(rng.standard_normal(s).astype(np.float32),
                                            need_grad=True)
            for k, s in shapes.items()}


def gradients(step: int, shapes: dict = SHAPES) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(100 + step)
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}


def set_gradients(params: dict[str, sd.Variable], grads: dict[str, np.ndarray]) -> None:
    for k, g in grads.items():
        params[k].grad = torch.tensor(g)


def values(params: dict[str, sd.Variable]) -> dict[str, np.ndarray]:
    return {k: v.d.copy() for k, v in params.items()}


def plain_states(solver: S.Solver) -> dict[str, dict]:
    """``solver.get_states()`` (NNabla's SolverStates) as ``{name: {state: tensor copy, "t":
    steps}}``, after checking each is a SolverState over the solver's own state names."""
    plain = {}
    for name, state in solver.get_states().items():
        assert isinstance(state, S.SolverState)
        assert sorted(state.pstate) == sorted(solver.state_names())
        plain[name] = {**{k: v.data.clone() for k, v in state.pstate.items()}, "t": state.t}
    return plain


def make_solver(name: str, kwargs: dict, params: dict) -> S.Solver:
    solver = getattr(S, name)(**kwargs)
    solver.set_parameters(params)
    return solver


class NumpySolver:
    """Runs a :class:`Reference` on float64 copies of the parameters."""

    def __init__(self, name: str, kwargs: dict, params: dict[str, sd.Variable]):
        ref = _reference(name)
        self.ref = ref
        self.h0 = {**ref.defaults, **kwargs}
        self.h = dict(self.h0)
        self.w = {k: v.d.astype(np.float64) for k, v in params.items()}
        self.state = {k: {s: np.zeros(w.shape) for s in ref.state} for k, w in self.w.items()}
        self.t = {k: 0 for k in self.w}
        self.options = {"bias_correction": True} if kwargs.get("bias_correction") else {}

    def update(self, grads: dict[str, np.ndarray], **extra) -> None:
        for k, g in grads.items():
            self.t[k] += 1
            self.w[k] = self.ref.step(self.w[k], g.astype(np.float64), self.state[k], self.t[k],
                                      self.h, self.h0, **self.options, **extra)


# ---------------------------------------------------------------------------------------------
# (1) foreach == per-tensor loop
# ---------------------------------------------------------------------------------------------
def _with_paths(configs):
    """Each config once per update path besides the per-tensor loop: ``foreach``, and ``fused``
    for solvers that have a fused kernel (a ``fused`` attribute, on by default)."""
    params = []
    for p in configs:
        name, kwargs = p.values
        paths = ["fused", "foreach"] if hasattr(getattr(S, name)(), "fused") else ["foreach"]
        params += [pytest.param(name, kwargs, path, id=f"{p.id}-{path}") for path in paths]
    return params


@pytest.mark.parametrize("name, kwargs, path", _with_paths(CONFIGS))
def test_foreach_equals_loop(name, kwargs, path):
    _reference(name)
    fast_params, loop_params = make_parameters(), make_parameters()
    fast = make_solver(name, kwargs, fast_params)
    if path == "foreach" and hasattr(fast, "fused"):
        fast.fused = False
    loop = make_solver(name, kwargs, loop_params)
    loop.foreach = False
    for step in range(4):
        grads = gradients(step)
        for solver, params in ((fast, fast_params), (loop, loop_params)):
            set_gradients(params, grads)
            solver.weight_decay(0.01)
            solver.clip_grad_by_norm(1.5)
            solver.update()
        for k in SHAPES:
            np.testing.assert_allclose(fast_params[k].d, loop_params[k].d, rtol=1e-6, atol=1e-7,
                                       err_msg=f"{name}: parameter {k} after step {step}")
    fast_states, loop_states = plain_states(fast), plain_states(loop)
    for k in SHAPES:
        for key, value in fast_states[k].items():
            if key == "t":
                assert value == loop_states[k]["t"]
            else:
                np.testing.assert_allclose(value.numpy(), loop_states[k][key].numpy(), rtol=1e-6,
                                           atol=1e-7, err_msg=f"{name}: state {k}/{key}")


FUNCTIONAL_CALLS = {  # (params, grads, 3 state lists, per-parameter lrs, foreach)
    "sgd": lambda P, G, St, lrs, fe: Fn.sgd(P, G, lr=lrs, foreach=fe),
    "momentum": lambda P, G, St, lrs, fe: Fn.momentum(P, G, St[0], momentum=[0.9, 0.5, 0.7],
                                                      gain=lrs, foreach=fe),
    "nesterov": lambda P, G, St, lrs, fe: Fn.nesterov(P, G, St[0], momentum=0.9, gain=lrs,
                                                      foreach=fe),
    "adam": lambda P, G, St, lrs, fe: Fn.adam(P, G, St[0], St[1], step_size=lrs, beta1=0.8,
                                              beta2=0.9, eps=1e-6, gain=0.5, v_max=St[2],
                                              decoupled_decay=[0.01, 0.0, 0.02], foreach=fe),
    "rmsprop": lambda P, G, St, lrs, fe: Fn.rmsprop(P, G, St[0], lr=lrs, decay=0.8, eps=1e-6,
                                                    foreach=fe),
    "adagrad": lambda P, G, St, lrs, fe: Fn.adagrad(P, G, St[0], lr=lrs, eps=1e-6, foreach=fe),
    "adadelta": lambda P, G, St, lrs, fe: Fn.adadelta(P, G, St[0], St[1], lr=lrs, decay=0.9,
                                                      eps=1e-5, foreach=fe),
    "lion": lambda P, G, St, lrs, fe: Fn.lion(P, G, St[0], lr=lrs, beta1=0.8, beta2=0.9,
                                              weight_decay=[0.1, 0.0, 0.3], foreach=fe),
    "add_weight_decay": lambda P, G, St, lrs, fe: Fn.add_weight_decay(G, P, rate=lrs,
                                                                      foreach=fe),
    "clip_by_norm": lambda P, G, St, lrs, fe: Fn.clip_by_norm(G, max_norm=[0.5, 100.0, 1.0],
                                                              foreach=fe),
    "clip_by_value": lambda P, G, St, lrs, fe: Fn.clip_by_value(G, limit=[0.5, 0.2, 1.0],
                                                                foreach=fe),
    "scale_gradients": lambda P, G, St, lrs, fe: Fn.scale_gradients(G, factor=lrs, foreach=fe),
}


FUNCTIONAL_CALLS.update(_nnabla_solver_refs().functional_calls(Fn))
NOT_UPDATES = {"fused_adam_available"}  # predicates, not update rules


@pytest.mark.parametrize("rates", ["per-tensor list", "0-d tensor"])
@pytest.mark.parametrize("function", [f for f in Fn.__all__ if f not in NOT_UPDATES])
def test_functional_foreach_equals_loop(function, rates):
    """Per-parameter scalar lists, 0-d tensor scalars (how a compiled step feeds them) and
    options (``gain``, ``v_max``, decays) on both paths."""
    assert function in FUNCTIONAL_CALLS, f"no foreach/loop check for functional.{function}"
    results = []
    for foreach in (True, False):
        params = [torch.tensor(a) for a in values(make_parameters(1)).values()]
        grads = [torch.tensor(a) for a in gradients(7).values()]
        states = [[torch.full_like(p, 0.1) for p in params] for _ in range(3)]
        lrs = [0.1, 0.05, 0.2] if rates == "per-tensor list" else torch.tensor(0.1)
        for _ in range(3):
            FUNCTIONAL_CALLS[function](params, grads, states, lrs, foreach)
        results.append(params + grads + [t for group in states for t in group])
    for fast, loop in zip(*results):
        np.testing.assert_allclose(fast.numpy(), loop.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("decay", [0.0, 0.01], ids=["adam", "adamw"])
def test_fused_adam_takes_a_transposed_gradient_element_by_element(decay):
    """A gradient laid out otherwise than its parameter (a convolution weight's, through the
    second backward of a gradient penalty, is transposed in memory): the fused kernel's step is
    the per-tensor loop's on the same values.  torch's CPU kernel pairs elements by their place
    in memory; before, a (4, 3) weight given a transposed gradient stepped a third of its
    elements by another element's gradient (and so, at Adam's first step, the wrong way)."""
    torch.manual_seed(0)
    weight = torch.randn(4, 3)
    grad = torch.randn(3, 4).t()            # (4, 3), its columns contiguous
    assert not grad.is_contiguous()
    results = []
    for fused in (True, False):
        p = [weight.clone()]
        m, v = [torch.zeros_like(weight)], [torch.zeros_like(weight)]
        for _ in range(2):
            if fused:
                Fn.fused_adam(p, [grad], m, v, step_size=0.1, beta1=0.5, beta2=0.999, eps=1e-8,
                              decoupled_decay=decay)
            else:
                Fn.adam(p, [grad.contiguous()], m, v, step_size=0.1, beta1=0.5, beta2=0.999,
                        eps=1e-8, decoupled_decay=decay, foreach=False)
        results.append((p[0], m[0], v[0]))
    for fast, loop in zip(*results):
        np.testing.assert_allclose(fast.numpy(), loop.numpy(), rtol=1e-6, atol=1e-7)
    assert torch.equal(torch.sign(results[0][0] - weight * (1 - 2 * decay)), -torch.sign(grad))


# ---------------------------------------------------------------------------------------------
# (2) three steps == NNabla's formula in NumPy
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, kwargs", CONFIGS)
def test_three_steps_match_numpy_reference(name, kwargs):
    params = make_parameters()
    expected = NumpySolver(name, kwargs, params)
    solver = make_solver(name, kwargs, params)
    for step in range(3):
        grads = gradients(step)
        set_gradients(params, grads)
        solver.update()
        expected.update(grads)
    for k in SHAPES:
        np.testing.assert_allclose(params[k].d, expected.w[k], rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name}: parameter {k}")
        assert plain_states(solver)[k]["t"] == 3


def test_adabelief_rectified_steps_match_the_reference():
    """RAdam's rectification starts where rho_t > 4 (step 5 with beta2 = 0.999): seven steps
    cover the plain-momentum steps before it and the rectified ones after."""
    kwargs = {"alpha": 0.05, "eps": 1e-3, "rectify": True}
    params = make_parameters()
    expected = NumpySolver("AdaBelief", kwargs, params)
    solver = make_solver("AdaBelief", kwargs, params)
    for step in range(7):
        set_gradients(params, gradients(step))
        solver.update()
        expected.update(gradients(step))
        for k in SHAPES:
            np.testing.assert_allclose(params[k].d, expected.w[k], rtol=1e-5, atol=1e-6,
                                       err_msg=f"parameter {k} after step {step}")


# ---------------------------------------------------------------------------------------------
# (3) NNabla's defaults
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_defaults_are_nnablas(name):
    ref = _reference(name)
    solver = getattr(S, name)()
    assert solver.hyper == ref.defaults
    # NNabla 1.39 gives the float32 it keeps (the learning_rate_is_float32 compat case)
    assert solver.learning_rate() == float(np.float32(ref.defaults[solver.lr_name]))


def test_amsgrad_bias_correction_is_off_by_default():
    assert S.AMSGRAD().bias_correction is False
    assert S.AMSGrad is S.AMSGRAD            # Stadyn's former spelling


# ---------------------------------------------------------------------------------------------
# (4) parameters without a gradient are not updated
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_update_skips_parameters_without_gradient(name):
    ref = _reference(name)
    params = make_parameters()
    solver = make_solver(name, ref.kwargs, params)
    set_gradients(params, gradients(0))
    solver.update()
    before = values(params)
    states_before = plain_states(solver)
    solver.zero_grad()
    set_gradients(params, {"a": gradients(1)["a"]})
    solver.update()
    states = plain_states(solver)
    assert not np.array_equal(params["a"].d, before["a"])
    assert states["a"]["t"] == 2
    for k in ("b", "c"):
        np.testing.assert_array_equal(params[k].d, before[k])
        assert states[k]["t"] == 1
        for key in ref.state:
            np.testing.assert_array_equal(states[k][key].numpy(),
                                          states_before[k][key].numpy())


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_update_after_backward_touches_only_the_graphs_parameters(dynamic):
    params = make_parameters()
    solver = make_solver("Adam", {"alpha": 0.1}, params)
    before = values(params)
    with sd.auto_forward(dynamic):
        loss = F.sum(params["a"] * params["a"]) + F.sum(params["b"])
    if not dynamic:
        loss.forward()
    solver.zero_grad()
    loss.backward()
    solver.update()
    assert not np.array_equal(params["a"].d, before["a"])
    assert not np.array_equal(params["b"].d, before["b"])
    np.testing.assert_array_equal(params["c"].d, before["c"])
    assert plain_states(solver)["c"]["t"] == 0


# ---------------------------------------------------------------------------------------------
# (5) set_parameters(reset=False, retain_state=...)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_set_parameters_retains_state(name):
    ref = _reference(name)
    params = make_parameters()
    solver = make_solver(name, ref.kwargs, {"a": params["a"]})
    for step in range(2):
        set_gradients(params, {"a": gradients(step)["a"]})
        solver.update()
    kept = plain_states(solver)["a"]

    solver.set_parameters({"a": params["a"], "b": params["b"]}, reset=False, retain_state=True)
    states = plain_states(solver)
    assert list(solver.get_parameters()) == ["b", "a"]          # NNabla 1.39's order (run)
    assert states["a"]["t"] == 2 and states["b"]["t"] == 0
    for key in ref.state:
        np.testing.assert_array_equal(states["a"][key].numpy(), kept[key].numpy())
        np.testing.assert_array_equal(states["b"][key].numpy(), np.zeros(SHAPES["b"]))
    if ref.state:
        assert any(np.abs(kept[key].numpy()).sum() > 0 for key in ref.state)

    solver.set_parameters({"a": params["a"]}, reset=False, retain_state=False)
    assert plain_states(solver)["a"]["t"] == 0
    # NNabla 1.39 (run): the parameters keep their order, the state of 'a' made again moves
    assert list(solver.get_parameters()) == ["b", "a"]
    assert list(solver.get_states()) == ["a", "b"]

    solver.set_parameters({"c": params["c"]})
    assert list(solver.get_parameters()) == ["c"]


def test_a_name_given_again_keeps_the_solvers_variable_and_its_state():
    """NNabla 1.39 (run here) keeps the Variable a solver has under a name given again with
    reset=False: it goes on updating that one, not the new Variable; with retain_state its
    state is kept (the compat case
    solver_set_parameters_existing_name holds both against NNabla's numbers)."""
    params = make_parameters()
    solver = make_solver("Momentum", {"lr": 0.1}, {"a": params["a"]})
    set_gradients(params, {"a": gradients(0)["a"]})
    solver.update()
    velocity = plain_states(solver)["a"]["m"].clone()
    before = params["a"].d.copy()
    replacement = sd.Variable.from_numpy_array(np.zeros(SHAPES["a"]), need_grad=True)
    solver.set_parameters({"a": replacement}, reset=False, retain_state=True)
    assert solver.get_parameters()["a"] is params["a"]
    np.testing.assert_array_equal(plain_states(solver)["a"]["m"].numpy(), velocity.numpy())
    params["a"].grad = torch.zeros(SHAPES["a"])
    replacement.grad = torch.zeros(SHAPES["a"])
    solver.update()  # w = w - (0.9 v + 0.1 * 0)
    np.testing.assert_allclose(params["a"].d, before - 0.9 * velocity.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(replacement.d, np.zeros(SHAPES["a"]))

    with pytest.raises(sd.ParameterError, match="'a'.*\\(5,\\).*\\(3,\\)"):
        solver.set_parameters({"a": sd.Variable((5,), need_grad=True)}, reset=False,
                              retain_state=True)
    assert solver.get_parameters()["a"] is params["a"]


# ---------------------------------------------------------------------------------------------
# (6) weight decay, clipping, inf/nan check, learning rate
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_weight_decay(name):
    """NNabla 1.39's semantics (the solvers are NNabla's ``S``): ``weight_decay`` and
    ``update`` skip only a ``zeroing`` gradient; a parameter whose gradient was never written
    ("c" here) reads zeros, so it is decayed and updated with ``0 + rate * w`` (run there:
    ``Sgd(lr=1).weight_decay(0.5)`` takes an untouched ``[1, 1]`` to ``[0.5, 0.5]``; the
    harness case nnabla_fidelity_27's solver_weight_decay_no_backward holds every solver's
    numbers), and that gradient stays for the next update, as NNabla keeps it."""
    ref = _reference(name)
    params = make_parameters()
    solver = make_solver(name, ref.kwargs, params)
    expected = NumpySolver(name, ref.kwargs, params)
    written = {k: g for k, g in gradients(0).items() if k != "c"}
    zeros_c = np.zeros(SHAPES["c"], np.float32)
    set_gradients(params, written)
    w = values(params)
    solver.weight_decay(0.2)
    if ref.fused_weight_decay:
        # NNabla fuses Lion's (AdamW's, ...) decay into the update: the gradients are untouched
        for k in written:
            np.testing.assert_array_equal(params[k].g, written[k])
        solver.update()           # (c.g is read after: a read gives the gradient its zeros)
        # NNabla's Lars adds the decay into the gradient as it updates (lars.cpp:73)
        decayed_c = 0.2 * w["c"] if name == "Lars" else zeros_c
        np.testing.assert_allclose(params["c"].g, decayed_c, rtol=1e-6)
        grads = {**written, "c": zeros_c}
        expected.update(grads, wd=0.2)
    else:
        grads = {**written, "c": zeros_c}
        for k in grads:
            np.testing.assert_allclose(params[k].g, grads[k] + 0.2 * w[k], rtol=1e-6, atol=1e-7)
        solver.update()
        grads = {k: grads[k] + 0.2 * w[k].astype(np.float64) for k in grads}
        expected.update(grads)
    assert not np.array_equal(params["c"].d, w["c"]), "the never-written gradient is updated"
    # the decay applies to the update after the call only; "c" keeps the gradient it has
    kept_c = params["c"].g.copy()
    set_gradients(params, {k: gradients(1)[k] for k in written})
    solver.update()
    expected.update({**{k: gradients(1)[k] for k in written}, "c": kept_c})
    for k in grads:
        np.testing.assert_allclose(params[k].d, expected.w[k], rtol=1e-5, atol=1e-6)


def test_zeroing_gradients_are_skipped_and_never_written_ones_are_not():
    """NNabla 1.39 (run: /tmp script of nnsolv27, numbers in the harness case
    solver_weight_decay_no_backward): ``Sgd(lr=1)`` with ``weight_decay(0.5)`` halves a
    parameter whose gradient was never written or was ``fill(0)``-ed, and leaves one zeroed by
    ``zero_grad()`` or ``.grad.zero()`` (``zeroing``, ``src/nbla/solver.cpp:218``) as it is;
    the gradient checks, clipping and scaling see zeros either way."""
    def fresh():
        v = sd.Variable.from_numpy_array(np.ones(2, np.float32), need_grad=True)
        solver = S.Sgd(lr=1.0)
        solver.set_parameters({"p": v})
        return v, solver

    v, solver = fresh()
    solver.weight_decay(0.5)
    solver.update()
    np.testing.assert_array_equal(v.d, [0.5, 0.5])
    np.testing.assert_array_equal(v.g, [0.5, 0.5])

    v, solver = fresh()
    solver.zero_grad()
    solver.weight_decay(0.5)
    solver.update()
    np.testing.assert_array_equal(v.d, [1.0, 1.0])

    v, solver = fresh()
    solver.weight_decay(0.5)
    solver.clip_grad_by_norm(0.1)           # 0.5 * [1, 1] clipped to norm 0.1
    assert solver.check_inf_or_nan_grad() is False
    solver.update()
    np.testing.assert_allclose(v.d, [0.9292893409729004] * 2, rtol=1e-7)


@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_clip_grad_by_norm_is_per_parameter(name):
    params = make_parameters()
    solver = make_solver(name, _reference(name).kwargs, params)
    big = np.full(SHAPES["a"], 3.0, np.float32)            # norm 5.196
    small = np.full(SHAPES["b"], 0.1, np.float32)          # norm 0.283
    set_gradients(params, {"a": big, "b": small})
    solver.clip_grad_by_norm(1.0)
    np.testing.assert_allclose(np.linalg.norm(params["a"].g), 1.0, rtol=1e-6)
    np.testing.assert_allclose(params["a"].g, big / np.linalg.norm(big), rtol=1e-6)
    np.testing.assert_array_equal(params["b"].g, small)
    assert params["c"].grad is None


@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_check_inf_or_nan_grad(name):
    params = make_parameters()
    solver = make_solver(name, _reference(name).kwargs, params)
    assert solver.check_inf_or_nan_grad() is False
    grads = gradients(0)
    set_gradients(params, grads)
    assert solver.check_inf_or_nan_grad() is False
    for bad in (np.inf, -np.inf, np.nan):
        broken = dict(grads)
        broken["b"] = grads["b"].copy()
        broken["b"][1, 2] = bad
        set_gradients(params, broken)
        assert solver.check_inf_or_nan_grad() is True, f"{bad} not found"


@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_set_learning_rate_is_used_by_the_next_update(name):
    ref = _reference(name)
    params = make_parameters()
    solver = make_solver(name, ref.kwargs, params)
    expected = NumpySolver(name, ref.kwargs, params)
    lr_name = solver.lr_name
    assert solver.learning_rate() == pytest.approx(ref.kwargs[lr_name])
    set_gradients(params, gradients(0))
    solver.update()
    expected.update(gradients(0))
    solver.set_learning_rate(ref.kwargs[lr_name] / 4)
    expected.h[lr_name] = ref.kwargs[lr_name] / 4
    assert solver.learning_rate() == pytest.approx(ref.kwargs[lr_name] / 4)
    set_gradients(params, gradients(1))
    solver.update()
    expected.update(gradients(1))
    for k in SHAPES:
        np.testing.assert_allclose(params[k].d, expected.w[k], rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# (7) save_states / load_states
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_loaded_states_continue_training_exactly(name, tmp_path):
    ref = _reference(name)
    params = make_parameters()
    solver = make_solver(name, ref.kwargs, params)
    for step in range(3):
        set_gradients(params, gradients(step))
        solver.update()
    path = tmp_path / "states.safetensors"
    solver.save_states(path)
    snapshot = values(params)
    for step in range(3, 5):
        set_gradients(params, gradients(step))
        solver.update()

    resumed = {k: sd.Variable.from_numpy_array(v, need_grad=True) for k, v in snapshot.items()}
    other = make_solver(name, ref.kwargs, resumed)
    other.load_states(path)
    assert {k: s["t"] for k, s in plain_states(other).items()} == {k: 3 for k in SHAPES}
    for step in range(3, 5):
        set_gradients(resumed, gradients(step))
        other.update()
    for k in SHAPES:
        np.testing.assert_array_equal(resumed[k].d, params[k].d)


def test_save_states_is_atomic(tmp_path, monkeypatch):
    import safetensors.torch

    params = make_parameters()
    solver = make_solver("Adam", {}, params)
    path = tmp_path / "states.safetensors"
    solver.save_states(path)
    original = path.read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["states.safetensors"]

    def crash_halfway(tensors, filename, metadata=None):
        with open(filename, "wb") as f:
            f.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(safetensors.torch, "save_file", crash_halfway)
    set_gradients(params, gradients(0))
    solver.update()
    with pytest.raises(OSError, match="disk full"):
        solver.save_states(path)
    assert path.read_bytes() == original
    assert sorted(os.listdir(tmp_path)) == ["states.safetensors"]


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign", "other_solver"])
def test_loading_a_bad_state_file_raises(damage, tmp_path):
    from safetensors.torch import save_file

    params = make_parameters()
    path = tmp_path / "states.safetensors"
    if damage == "garbage":
        path.write_bytes(b"\x00\x01 this is not a state file" * 10)
    elif damage == "truncated":
        make_solver("Adam", {}, params).save_states(path)
        path.write_bytes(path.read_bytes()[:40])
    elif damage == "foreign":
        save_file({"x": torch.zeros(2)}, str(path))
    else:
        make_solver("Sgd", {}, params).save_states(path)
    solver = make_solver("Adam", {}, params)
    with pytest.raises(sd.StadynError):
        solver.load_states(path)


# ---------------------------------------------------------------------------------------------
# (8) invalid learning rates
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_invalid_learning_rate_raises(name):
    # NaN is refused; a negative rate is taken, as NNabla 1.39 takes it (gradient ascent; its
    # results for every solver: compat case nnabla_review_mends_38c.rm38c_negative_learning_rates)
    ref = _reference(name)
    lr_name = getattr(S, name)().lr_name       # NNabla's name: lr, alpha (Adam's), eta (Lamb's)
    assert getattr(S, name)(**{lr_name: -0.5}).learning_rate() == -0.5
    with pytest.raises(sd.StadynError, match=lr_name):
        getattr(S, name)(**{lr_name: float("nan")})
    solver = getattr(S, name)()
    assert solver.learning_rate() == float(np.float32(ref.defaults[lr_name]))
    solver.set_learning_rate(-1.0)
    assert solver.learning_rate() == -1.0


@pytest.mark.parametrize("name", SOLVER_NAMES)
def test_a_learning_rate_of_none_names_the_argument(name):
    _reference(name)
    lr_name = getattr(S, name)().lr_name
    with pytest.raises(sd.ArgumentError, match=rf"{name}: {lr_name} must be a number, got None"):
        getattr(S, name)(**{lr_name: None})
    with pytest.raises(TypeError, match=lr_name):       # the built-in a user expects
        getattr(S, name)(**{lr_name: "0.1"})


# ---------------------------------------------------------------------------------------------
# (9) loaded states pass the constructor's checks, or nothing is loaded
# ---------------------------------------------------------------------------------------------
def _tampered_state_file(path, edit) -> None:
    """Rewrite the solver state file at ``path`` with ``edit(metadata dict, tensors)``."""
    import json as _json

    from safetensors import safe_open
    from safetensors.torch import save_file
    with safe_open(str(path), framework="pt") as f:
        meta = dict(f.metadata())
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    hyper, steps = _json.loads(meta["hyper"]), _json.loads(meta["t"])
    edit(hyper, steps, tensors)
    meta["hyper"], meta["t"] = _json.dumps(hyper), _json.dumps(steps)
    save_file(tensors, str(path), metadata=meta)


_TAMPERING = {
    "nan alpha": (lambda h, t, x: h.update(alpha=float("nan")), "alpha must be finite"),
    "infinite alpha": (lambda h, t, x: h.update(alpha=float("inf")), "alpha must be finite"),
    "alpha as text": (lambda h, t, x: h.update(alpha="0.1"), "alpha must be a number"),
    "unknown hyperparameter": (lambda h, t, x: h.update(lr=0.1), r"hyperparameters \['lr'\]"),
    "nan beta2": (lambda h, t, x: h.update(beta2=float("nan")), "beta2 must be finite"),
    "negative step count": (lambda h, t, x: t.update(c=-1), "step count"),
    "nan moment": (lambda h, t, x: x["c/var"].fill_(float("nan")), "'c/var' holds a NaN"),
    "wrong shape": (lambda h, t, x: x.update({"c/mean": torch.zeros(5)}),
                    r"'c/mean' has shape \(5,\)"),
}


def test_a_state_file_with_a_negative_learning_rate_loads(tmp_path):
    # a negative rate is a solver's as NNabla 1.39 takes it (Sgd(-0.1) ascends), so a file
    # holding one loads (it was refused as "invalid learning rate -0.1")
    params = make_parameters()
    saved = make_solver("Adam", {"alpha": 0.01}, params)
    saved.update()
    path = tmp_path / "adam-states.safetensors"
    saved.save_states(path)
    _tampered_state_file(path, lambda h, t, x: h.update(alpha=-0.1))
    solver = make_solver("Adam", {"alpha": 0.01}, make_parameters(seed=1))
    solver.load_states(path)
    assert solver.learning_rate() == float(np.float32(-0.1))      # float32, as NNabla


@pytest.mark.parametrize("damage", sorted(_TAMPERING))
def test_a_tampered_state_file_is_refused_naming_it_and_changes_nothing(damage, tmp_path):
    """An lr of NaN in a saved state used to bypass the constructor and make every weight NaN
    after one update; a bad last entry used to leave the first ones loaded."""
    edit, message = _TAMPERING[damage]
    params = make_parameters()
    saved = make_solver("Adam", {"alpha": 0.01}, params)
    for step in range(2):
        set_gradients(params, gradients(step))
        saved.update()
    path = tmp_path / "adam-states.safetensors"
    saved.save_states(path)
    _tampered_state_file(path, edit)

    fresh = make_parameters(seed=1)
    solver = make_solver("Adam", {"alpha": 0.01}, fresh)
    set_gradients(fresh, gradients(0))
    solver.update()
    before = plain_states(solver), dict(solver.hyper)
    with pytest.raises(sd.ModelFileError, match=rf"adam-states\.safetensors: .*{message}"):
        solver.load_states(path)
    assert solver.hyper == before[1]
    for name, state in plain_states(solver).items():
        assert state["t"] == before[0][name]["t"]
        for key in ("mean", "var"):
            assert torch.equal(state[key], before[0][name][key]), f"{name}/{key} changed"
    set_gradients(fresh, gradients(1))
    solver.update()
    assert all(np.isfinite(v.d).all() for v in fresh.values())


@pytest.mark.usefixtures("fresh_parameters")
def test_a_model_files_tampered_solver_state_is_refused_naming_the_model_file(tmp_path):
    import io
    import zipfile

    x = sd.Variable((2, 3))
    import stadyn.parametric_functions as PF
    y = PF.affine(x, 2, name="fc")
    params = sd.get_parameters()
    solver = S.Adam(alpha=0.01)
    solver.set_parameters(params)
    for p in params.values():
        p.grad = torch.ones(p.shape)
    solver.update()
    path = tmp_path / "net.stadyn"
    sd.save(path, {"y": y}, {"x": x}, solver=solver)
    states = tmp_path / "s.safetensors"
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    states.write_bytes(members["solver.safetensors"])
    _tampered_state_file(states, lambda h, t, x: h.update(alpha=float("inf")))
    members["solver.safetensors"] = states.read_bytes()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for n, data in members.items():
            z.writestr(n, data)
    path.write_bytes(buffer.getvalue())

    net = sd.load(path)
    other = S.Adam(alpha=0.01)
    other.set_parameters(net.get_parameters())
    with pytest.raises(sd.ModelFileError, match=r"net\.stadyn: solver\.safetensors: .*alpha "
                                                r"must be finite"):
        net.load_solver_states(other)
    assert other.hyper["alpha"] == 0.01


_FORMER = {"Momentum": {"v": "m"}, "Nesterov": {"v": "m"}, "Adam": {"m": "mean", "v": "var"},
           "Adadelta": {"e_g": "e_sqr_grad", "e_x": "e_sqr_delta"}, "AMSGrad": {}, "RMSprop": {},
           "Adagrad": {}, "Lion": {}}


@pytest.mark.parametrize("name", sorted(_FORMER))
def test_state_files_written_with_the_former_names_still_load(name):
    """Files from before the states took NNabla's names (tests/fixtures/solver_states_v1, made
    by its make_states.py at commit 2e45692) load, each tensor under its new name (Nesterov's
    negated: those files kept -v, its state is NNabla's v since mendD33,
    tests/solvers/test_nesterov_states.py)."""
    from safetensors.numpy import load_file
    path = os.path.join(os.path.dirname(__file__), "..", "fixtures", "solver_states_v1",
                        f"{name}.safetensors")
    written = load_file(path)
    with sd.parameter_registry(sd.ParameterRegistry()):
        # The parameters under the names PF.affine(x, 2, name="fc") gave them then.
        with sd.parameter_scope("n"), sd.parameter_scope("fc"):
            sd.get_parameter_or_create("W", (3, 2))
            sd.get_parameter_or_create("b", (2,))
        solver = getattr(S, name)(0.01) if name in ("Momentum", "Nesterov") else getattr(S, name)()
        solver.set_parameters(sd.get_parameters())
        solver.load_states(path)
        states = solver.get_states()
    for key, array in written.items():
        param, _, old = key.rpartition("/")
        new = _FORMER[name].get(old, old)
        sign = -1 if name == "Nesterov" else 1
        np.testing.assert_array_equal(states[param].pstate[new].d, sign * array)
        assert states[param].t == 2


TENSOR_HYPER_CALLS = {  # hyperparameters given as floats (checked against NumPy above)
    "adam": (lambda P, G, St, h, fe: Fn.adam(P, G, St[0], St[1], foreach=fe, eps=1e-6, **h),
             dict(step_size=0.1, beta1=0.8, beta2=0.9, gain=0.5, decoupled_decay=0.01)),
    "fsadagrad": (lambda P, G, St, h, fe: Fn.fsadagrad(P, G, St[0], St[1], foreach=fe, **h),
                  dict(lr=0.1, momentum=0.9, gain=0.1, var_momentum=0.95, ada_mul=1.5)),
    "fsadagrad_momentum_0": (      # the gain CNTK's learners pass with a zero momentum: 1
        lambda P, G, St, h, fe: Fn.fsadagrad(P, G, St[0], St[1], foreach=fe, **h),
        dict(lr=0.1, momentum=0.0, gain=1.0, var_momentum=0.95, ada_mul=1.5)),
}


@pytest.mark.parametrize("foreach", [True, False])
@pytest.mark.parametrize("call", list(TENSOR_HYPER_CALLS))
def test_functional_tensor_hyperparameters_equal_floats(call, foreach):
    """A compiled step feeds every hyperparameter as a 0-d tensor: parameters and states then
    equal those of the same floats (a zero momentum included: the step is the scaled gradient
    and the momentum state is left alone)."""
    fn, hyper = TENSOR_HYPER_CALLS[call]
    results = []
    for as_tensor in (False, True):
        params = [torch.tensor(a) for a in values(make_parameters(1)).values()]
        grads = [torch.tensor(a) for a in gradients(7).values()]
        states = [[torch.full_like(p, 0.1) for p in params] for _ in range(2)]
        h = {k: torch.tensor(v, dtype=params[0].dtype) if as_tensor else v
             for k, v in hyper.items()}
        for _ in range(3):
            fn(params, grads, states, h, foreach)
        results.append(params + [t for group in states for t in group])
    for k, (floats, tensors) in enumerate(zip(*results)):
        np.testing.assert_allclose(tensors.numpy(), floats.numpy(), rtol=1e-6, atol=1e-7,
                                   err_msg=f"{call}: result {k}")


@pytest.mark.parametrize("name", ["Sgd", "Momentum", "Adam"])
def test_state_dict_round_trip_restores_hyperparameters_and_continues_exactly(name):
    """``state_dict``/``load_state_dict`` (what checkpoints use) carry the learning rate as it
    was set, the step counts and the state tensors."""
    ref = _reference(name)
    params = make_parameters()
    solver = make_solver(name, ref.kwargs, params)
    lr_name = "alpha" if "alpha" in ref.defaults else "lr"
    solver.set_learning_rate(ref.kwargs[lr_name] / 4)
    for step in range(2):
        set_gradients(params, gradients(step))
        solver.update()
    state, snapshot = copy.deepcopy(solver.state_dict()), values(params)
    for step in range(2, 4):
        set_gradients(params, gradients(step))
        solver.update()
    resumed = {k: sd.Variable.from_numpy_array(v, need_grad=True) for k, v in snapshot.items()}
    other = make_solver(name, ref.kwargs, resumed)
    other.load_state_dict(state)
    assert other.learning_rate() == pytest.approx(ref.kwargs[lr_name] / 4)
    for step in range(2, 4):
        set_gradients(resumed, gradients(step))
        other.update()
    for k in SHAPES:
        np.testing.assert_array_equal(resumed[k].d, params[k].d)
