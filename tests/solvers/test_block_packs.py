"""The exact CPU blocks take runs of tensors smaller than a block as one array (packs,
``solvers/_float32_blocks.py``'s ``_Plan``): every kernel gives, bit for bit, what it gives each
tensor alone (a list of one tensor: never packed), whether the tensors lie end to end in memory
(a view over them) or apart (copied in and out); the cached plans follow tensors replaced
(``.data =``, ``set_``, another dtype at the same address), gradients turned non-contiguous,
states loaded, and per-tensor scalars that differ (down to a zero's sign); they keep no tensor
alive."""

import gc
import weakref

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.learners as L
import stadyn.solvers as S
from stadyn.solvers import _cntk_cpu as C
from stadyn.solvers import _float32_blocks as B
from stadyn.solvers import _float32_kernels as K

# small ones in runs (packs), one past a block, an empty one, small ones after it
SIZES = [3, 1000, 40000, 5, 30000, 7, B.BLOCK + 9, 11, 0, 200, 2000, 64]

NNABLA = {
    "weight_decay": (0, lambda p, g, s: K.weight_decay_blocks(g, p, rate=0.01)),
    "sgd": (0, lambda p, g, s: K.sgd_blocks(p, g, lr=0.1)),
    "sgdw": (1, lambda p, g, s: K.sgdw_blocks(p, g, *s, lr=0.1, momentum=0.9, decay=0.01)),
    "adagrad": (1, lambda p, g, s: K.adagrad_blocks(p, g, *s, lr=0.1, eps=1e-8)),
    "rmsprop": (1, lambda p, g, s: K.rmsprop_blocks(p, g, *s, lr=0.1, decay=0.9, eps=1e-8)),
    "adadelta": (2, lambda p, g, s: K.adadelta_blocks(p, g, *s, lr=1.0, decay=0.95,
                                                      eps=1e-6)),
    "adamax": (2, lambda p, g, s: K.adamax_blocks(p, g, *s, step_size=0.01, beta1=0.9,
                                                  beta2=0.999, eps=1e-8)),
    "lion": (1, lambda p, g, s: K.lion_blocks(p, g, *s, lr=0.01, beta1=0.9, beta2=0.99,
                                              weight_decay=0.1)),
    "lamb": (2, lambda p, g, s: K.lamb_blocks(p, g, *s, eta=0.01, correction1=0.1,
                                              correction2=0.001, beta1=0.9, beta2=0.999,
                                              eps=1e-6, gamma_l=0.0, gamma_u=10.0,
                                              weight_decay=0.01)),
    "lars": (1, lambda p, g, s: K.lars_blocks(p, g, *s, lr=0.1, momentum=0.9, coefficient=0.001,
                                              eps=1e-8, weight_decay=0.01)),
    "clip": (0, lambda p, g, s: K.clip_grad_by_norm_blocks(g, clip_norm=1.0)),
    "adam": (2, lambda p, g, s: B.adam_blocks(p, g, *s, step_size=0.01, beta1=0.9, beta2=0.999,
                                              eps=1e-8, decay=0.001)),
    "amsgrad": (3, lambda p, g, s: B.adam_blocks(p, g, s[0], s[1], v_max=s[2], step_size=0.01,
                                                 beta1=0.9, beta2=0.999, eps=1e-8)),
    "adabelief": (2, lambda p, g, s: B.adabelief_blocks(p, g, *s, step_size=0.01, sgd=False,
                                                        correction2=0.5, beta1=0.9,
                                                        beta2=0.999, eps=1e-8, decay=0.001)),
    "adabound": (2, lambda p, g, s: B.adabound_blocks(p, g, *s, step_size=0.01, lower=0.001,
                                                      upper=1.0, beta1=0.9, beta2=0.999,
                                                      eps=1e-8)),
    "rmsprop_graves": (3, lambda p, g, s: B.rmsprop_graves_blocks(p, g, *s, lr=0.01, decay=0.95,
                                                                  momentum=0.9, eps=1e-4)),
}
CNTK = {
    "l2": (0, lambda p, g, s: C.l2_cntk(g, p, rate=0.01)),
    "sgd": (0, lambda p, g, s: C.sgd_cntk(p, g, lr=0.1)),
    "momentum": (1, lambda p, g, s: C.momentum_cntk(p, g, *s, lr=0.1, momentum=0.9,
                                                    unit_gain=True)),
    "nesterov": (1, lambda p, g, s: C.momentum_cntk(p, g, *s, lr=0.1, momentum=0.9,
                                                    unit_gain=False, nesterov=True)),
    "adam": (2, lambda p, g, s: C.adam_cntk(p, g, *s, lr=0.01, correction=0.3, beta1=0.9,
                                            beta2=0.999, eps=1e-8, unit_gain=True)),
    "adamax": (2, lambda p, g, s: C.adam_cntk(p, g, *s, lr=0.01, correction=0.3, beta1=0.9,
                                              beta2=0.999, eps=1e-8, unit_gain=True,
                                              adamax=True)),
    "fsadagrad": (2, lambda p, g, s: C.fsadagrad_cntk(p, g, *s, lr=0.01, momentum=0.9,
                                                      var_momentum=0.999, ada_mul=0.5,
                                                      unit_gain=True)),
    "adagrad": (1, lambda p, g, s: C.adagrad_cntk(p, g, *s, lr=0.01, average_multiplier=False)),
    "adagrad_mean": (1, lambda p, g, s: C.adagrad_cntk(p, g, *s, lr=0.01,
                                                       average_multiplier=True)),
    "rmsprop": (3, lambda p, g, s: C.rmsprop_cntk(p, g, *s, lr=0.01, gamma=0.95, inc=1.2,
                                                  dec=0.7, max_step=10.0, min_step=0.001,
                                                  first=0.0, average_multiplier=False)),
    "rmsprop_mean": (3, lambda p, g, s: C.rmsprop_cntk(p, g, *s, lr=0.01, gamma=0.95, inc=1.2,
                                                       dec=0.7, max_step=10.0, min_step=0.001,
                                                       first=0.0, average_multiplier=True)),
    "adadelta": (2, lambda p, g, s: C.adadelta_cntk(p, g, *s, lr=1.0, rho=0.95, eps=1e-6)),
}


def _values(seed: int, dtype) -> list[np.ndarray]:
    rs = np.random.RandomState(seed)
    return [rs.randn(n).astype(dtype) for n in SIZES]


def _laid_out(values: list[np.ndarray], layout: str) -> list[torch.Tensor]:
    """Tensors holding ``values``: ``"flat"`` end to end in one buffer, ``"apart"`` one element
    between each (never end to end), ``"own"`` each in its own memory."""
    if layout == "own":
        return [torch.from_numpy(v.copy()) for v in values]
    gap = 1 if layout == "apart" else 0
    buffer = torch.zeros(sum(v.size + gap for v in values), dtype=torch.from_numpy(values[0]).dtype)
    out, at = [], 0
    for v in values:
        t = buffer[at:at + v.size]
        t.copy_(torch.from_numpy(v))
        out.append(t)
        at += v.size + gap
    return out


def _lists(n_states: int, layout: str, dtype):
    params = _laid_out(_values(0, dtype), layout)
    grads = _laid_out(_values(1, dtype), layout)
    states = [_laid_out([np.abs(v) for v in _values(2 + k, dtype)], layout)
              for k in range(n_states)]
    return params, grads, states


def _numbers(params, grads, states):
    return [t.numpy().copy() for ts in (params, grads, *states) for t in ts]


def _run_twice(rule, n_states, layout, dtype, alone):
    params, grads, states = _lists(n_states, layout, dtype)
    for _ in range(2):
        if alone:
            for i in range(len(params)):
                assert rule([params[i]], [grads[i]], [s[i:i + 1] for s in states])
        else:
            assert rule(params, grads, states)
    return _numbers(params, grads, states)


def _assert_bitwise(a, b):
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.view(np.uint8), y.view(np.uint8))


@pytest.mark.parametrize("layout", ["flat", "apart"])
@pytest.mark.parametrize("name", sorted(NNABLA))
def test_nnabla_kernels_pack_small_tensors_bit_for_bit(name, layout):
    n_states, rule = NNABLA[name]
    B._PLANS.clear()
    expected = _run_twice(rule, n_states, "own", np.float32, alone=True)
    got = _run_twice(rule, n_states, layout, np.float32, alone=False)
    _assert_bitwise(got, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["flat", "apart"])
@pytest.mark.parametrize("name", sorted(CNTK))
def test_cntk_kernels_pack_small_tensors_bit_for_bit(name, layout, dtype):
    n_states, rule = CNTK[name]
    expected = _run_twice(rule, n_states, "own", dtype, alone=True)
    got = _run_twice(rule, n_states, layout, dtype, alone=False)
    _assert_bitwise(got, expected)


def test_small_tensors_go_through_packs():
    params, grads, states = _lists(2, "apart", np.float32)
    B._PLANS.clear()
    assert C.adam_cntk(params, grads, *states, lr=0.01, correction=0.3, beta1=0.9,
                       beta2=0.999, eps=1e-8, unit_gain=True)
    plan, = B._PLANS.values()
    # runs of small tensors up to a block: 3+1000+40000+5, 30000+7, (11 alone), 200+2000+64
    assert sorted((p[0], p[1]) for p in plan.packs.values()) == [(0, 4), (4, 6), (9, 12)]


def _sgd_expected(w, g, lr):
    return w + g * np.float32(-lr)


def test_a_parameter_replaced_by_data_assignment_is_updated_in_its_new_memory():
    params, grads, _ = _lists(0, "flat", np.float32)
    assert C.sgd_cntk(params, grads, lr=0.1)
    old = params[1].data
    kept = old.numpy().copy()
    params[1].data = torch.from_numpy(np.random.RandomState(9).randn(SIZES[1])
                                      .astype(np.float32))   # new memory, same length
    before = [p.numpy().copy() for p in params]
    assert C.sgd_cntk(params, grads, lr=0.1)
    for p, w, g in zip(params, before, grads):
        np.testing.assert_array_equal(p.numpy(), _sgd_expected(w, g.numpy(), 0.1))
    np.testing.assert_array_equal(old.numpy(), kept)         # the old memory left alone


def test_same_address_of_another_length_or_dtype_gets_a_new_plan():
    params, grads, _ = _lists(0, "apart", np.float32)
    assert K.sgd_blocks(params, grads, lr=0.1)
    w = params[3]
    w.set_(w.untyped_storage(), w.storage_offset(), (3,))   # same address, 3 of its 5 values
    grads[3] = grads[3][:3].clone()
    before = [p.numpy().copy() for p in params]
    assert K.sgd_blocks(params, grads, lr=0.1)
    for p, b, g in zip(params, before, grads):
        np.testing.assert_array_equal(p.numpy(), b - g.numpy() * np.float32(0.1))
    # float64 tensors, then float32 ones at the very same addresses and lengths
    p64 = _laid_out(_values(0, np.float64), "flat")
    g64 = _laid_out(_values(1, np.float64), "flat")
    assert C.sgd_cntk(p64, g64, lr=0.1)
    p32 = [t.view(torch.float32)[:t.numel()] for t in p64]
    g32 = [t.view(torch.float32)[:t.numel()] for t in g64]
    for k, t in enumerate(p32):
        t.copy_(torch.from_numpy(_values(5, np.float32)[k]))
    for k, t in enumerate(g32):
        t.copy_(torch.from_numpy(_values(6, np.float32)[k]))
    before = [p.numpy().copy() for p in p32]
    assert C.sgd_cntk(p32, g32, lr=0.1)
    for p, b, g in zip(p32, before, g32):
        np.testing.assert_array_equal(p.numpy(), _sgd_expected(b, g.numpy(), 0.1))


def test_a_gradient_made_non_contiguous_in_place_is_read_in_its_logical_order():
    params = _laid_out([np.random.RandomState(k).randn(6).astype(np.float32)
                        for k in range(4)], "apart")
    grads = [torch.from_numpy(np.random.RandomState(10 + k).randn(2, 3).astype(np.float32))
             for k in range(4)]
    assert C.sgd_cntk(params, grads, lr=0.1)
    grads[2].t_()                                           # same memory, now non-contiguous
    before = [p.numpy().copy() for p in params]
    assert C.sgd_cntk(params, grads, lr=0.1)
    for p, b, g in zip(params, before, grads):
        np.testing.assert_array_equal(p.numpy(),
                                      _sgd_expected(b, g.contiguous().numpy().reshape(-1), 0.1))


@pytest.mark.parametrize("lrs", [[0.0, -0.0, 0.0], [0.1, 0.2, 0.1]])
def test_per_tensor_scalars_that_differ_even_in_a_zeros_sign_are_not_shared(lrs):
    params = _laid_out([np.full(4, -0.0, np.float32)] * 3, "apart")
    grads = _laid_out([np.ones(4, np.float32)] * 3, "apart")
    assert C.sgd_cntk(params, grads, lr=lrs)
    for p, lr in zip(params, lrs):
        expected = np.float32(-0.0) + np.ones(4, np.float32) * -np.float32(lr)
        np.testing.assert_array_equal(p.numpy().view(np.uint32), expected.view(np.uint32))


def test_overlapping_tensors_are_updated_one_after_the_other():
    w = torch.from_numpy(np.arange(4, dtype=np.float32))
    g = torch.ones(4)
    assert C.sgd_cntk([w, w[:2]], [g, g[:2]], lr=0.5)      # w[:2] twice, as C++ would
    np.testing.assert_array_equal(w.numpy(), np.float32([-1.0, 0.0, 1.5, 2.5]))


def test_loaded_learner_states_are_read_from_their_memory():
    def learner():
        rs = np.random.RandomState(0)
        ps = [sd.Variable.from_numpy_array(rs.randn(n).astype(np.float32), need_grad=True)
              for n in (5, 7, 300, 2)]
        return ps, L.adam(ps, 0.01, 0.9)

    def step(ps, learner, seed):
        rs = np.random.RandomState(seed)
        for p in ps:
            p.grad = torch.from_numpy(rs.randn(*p.shape).astype(np.float32))
        learner.update(4)

    a_ps, a = learner()
    for k in range(3):
        step(a_ps, a, k)
    state = a.state_dict()
    b_ps, b = learner()
    step(b_ps, b, 7)                     # plans made for b's states and parameters
    b.load_state_dict(state)
    for p, q in zip(b_ps, a_ps):
        p.d = q.d.copy()
    step(a_ps, a, 3)
    step(b_ps, b, 3)
    for p, q in zip(a_ps, b_ps):
        np.testing.assert_array_equal(p.d, q.d)


def test_plans_keep_no_tensor_or_memory_alive():
    memory = [np.abs(v) for k in range(4) for v in _values(k, np.float32)]   # own the memory
    tensors = [torch.from_numpy(m) for m in memory]
    n = len(SIZES)
    params, grads, m, u = (tensors[k * n:(k + 1) * n] for k in range(4))
    assert K.adamax_blocks(params, grads, m, u, step_size=0.01, beta1=0.9, beta2=0.999,
                           eps=1e-8)
    assert any(plan.packs for plan in B._PLANS.values())
    refs = [weakref.ref(x) for x in memory + tensors]
    del memory, tensors, params, grads, m, u
    gc.collect()
    assert all(r() is None for r in refs)


def test_an_empty_parameter_alone_is_no_error_as_in_nnabla():
    """NNabla 1.39 (run on this input): Lamb and clip_grad_by_norm of a solver whose only
    parameter has no element update nothing and raise nothing; with a second parameter
    ``[1, 1, 1]`` (gradient 2) clipped to norm 1, Lamb leaves it at 0.999000013 and its
    gradient at 0.577350259.  Stadyn indexed the empty block's first element (IndexError)."""
    import stadyn.compat.nnabla as nn
    import stadyn.compat.nnabla.solvers as S
    a = nn.Variable.from_numpy_array(np.zeros((0,), np.float32), need_grad=True)
    a.g = np.zeros((0,), np.float32)
    alone = S.Lamb()
    alone.set_parameters({"a": a})
    alone.clip_grad_by_norm(1.0)
    alone.update()
    assert a.d.shape == (0,)
    b = nn.Variable.from_numpy_array(np.ones((3,), np.float32), need_grad=True)
    b.g = np.full(3, 2.0, np.float32)
    both = S.Lamb()
    both.set_parameters({"a": a, "b": b})
    both.clip_grad_by_norm(1.0)
    both.update()
    assert b.d.tolist() == [0.9990000128746033] * 3
    assert b.g.tolist() == [0.5773502588272095] * 3


def test_parameters_set_anew_are_updated_as_by_a_fresh_solver():
    import stadyn.solvers as S

    def variables(seed):
        rs = np.random.RandomState(seed)
        vs = {"p%d" % k: sd.Variable.from_numpy_array(rs.randn(n).astype(np.float32),
                                                      need_grad=True)
              for k, n in enumerate((5, 7, 300, 2, 40))}
        for v in vs.values():
            v.g = rs.randn(*v.shape).astype(np.float32)
        return vs

    solver = S.Adam(alpha=0.01)
    solver.set_parameters(variables(0))
    solver.update()
    fresh_vars = variables(1)
    solver.set_parameters(fresh_vars)               # new parameters, states started afresh
    solver.update()
    B._PLANS.clear()
    expected_vars = variables(1)
    fresh = S.Adam(alpha=0.01)
    fresh.set_parameters(expected_vars)
    fresh.update()
    for k in fresh_vars:
        np.testing.assert_array_equal(fresh_vars[k].d, expected_vars[k].d)


def test_cntk_float_adam_divides_as_cntk_in_double():
    """CNTK's float Adam takes ``(float)(1.0 / (sqrt(v) + eps))`` in double; the blocks divide
    in float (the same bits for every float, tests/solvers/exhaustive_reciprocal.py).  Expected
    here: the kernel's arithmetic in NumPy with the double division, on moments of random bit
    patterns (every magnitude, subnormals, infinities, NaNs)."""
    rs = np.random.RandomState(0)
    n = 1 << 18
    v = rs.randint(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    v = v.copy()
    w, g, m = (rs.randn(n).astype(np.float32) for _ in range(3))
    f = np.float32
    b1, b2, eps, lr, corr = f(0.9), f(0.999), f(1e-8), f(0.01), f(0.3)
    with np.errstate(all="ignore"):
        v2 = v * b2 + (g * (f(1) - b2)) * g
        r = (1.0 / (np.sqrt(v2) + eps).astype(np.float64)).astype(np.float32) * corr
        m2 = m * b1 + g * (f(1) - b1)
        expected = w - (m2 * r) * lr
    tw, tg, tm, tv = (torch.from_numpy(x.copy()) for x in (w, g, m, v))
    assert C.adam_cntk([tw], [tg], [tm], [tv], lr=float(lr), correction=float(corr),
                       beta1=float(b1), beta2=float(b2), eps=1e-8, unit_gain=True)
    _assert_bitwise([tw.numpy(), tv.numpy(), tm.numpy()], [expected, v2, m2])


def test_lamb_keeps_its_r_and_finds_its_plans_again():
    # Lamb's blocks made NNabla's r afresh on every update and walked both passes without a
    # plan (no packs: each small tensor through the kernels alone); the solver now keeps r
    # while its parameters stay, and the second update finds the first's two plans (the
    # moments and the step) -- benchmarks/solver_blocks_overhead_ab.py --only Lamb for the cost
    rng = np.random.default_rng(0)
    ps = [sd.Variable.from_numpy_array(rng.standard_normal(n).astype(np.float32),
                                       need_grad=True) for n in (5, 40, 7, 300, 3)]
    solver = S.Lamb(eta=0.01)
    solver.set_parameters({f"p{i}": p for i, p in enumerate(ps)})
    for p in ps:
        p.g = rng.standard_normal(p.shape).astype(np.float32)
    solver.update()
    B._PLANS.clear()
    solver.update()
    made = set(B._PLANS)
    solver.update()
    assert len(made) == 2 and set(B._PLANS) == made
