"""Row-sparse gradients (``Learner.set_row_sparse_gradients``) against NumPy transcriptions of
CNTK 2.7's sparse kernels: ``Source/Math/Matrix.cpp:1652-1745`` (momentum, Nesterov),
``CPUSparseMatrix.cpp:1323-1353`` (``NormalGrad``) and ``1358-1421`` (``Adagrad``).  The
CNTK 2.7 runs themselves are the harness cases ``cntk:sparse_learners__*``
(``tests/compat/compat_cases/cntk_sparse_learners_35.py``)."""

import numpy as np
import pytest
import torch

import stadyn as sd
from stadyn.learners import (adadelta, adagrad, adam, fsadagrad, momentum_sgd, nesterov,
                             rmsprop, sgd)

STEPS = [([0, 2], 3), ([1, 2], 2), ([4, 0], 4), ([6], 1)]   # (rows touched, sample count)


def _grads(seed=0):
    rs = np.random.RandomState(seed)
    out = []
    for rows, _ in STEPS:
        g = np.zeros((7, 3), np.float32)
        g[rows] = rs.randn(len(rows), 3)
        out.append(g)
    return out


def _run(make, sparse=True):
    w = sd.Variable.from_numpy_array(np.arange(21, dtype=np.float32).reshape(7, 3) * 0.1,
                                     need_grad=True)
    learner = make([w])
    seen = []
    for (rows, n), g in zip(STEPS, _grads()):
        if sparse:
            learner.set_row_sparse_gradients({w: rows})
        w.grad = torch.from_numpy(g)
        learner.update(n)
        seen.append(w.d.copy())
    return seen


def _reference(rule, m=0.9, unit_gain=True, average=True):
    """NumPy transcription of CNTK 2.7's sparse kernels (lr 0.5 per minibatch: 0.5 / M)."""
    w = np.arange(21, dtype=np.float64).reshape(7, 3) * 0.1
    s = np.zeros_like(w)
    seen = []
    for (rows, n), g in zip(STEPS, _grads()):
        lr = 0.5 / n
        r = sorted(set(rows))
        u = 1 - m if unit_gain else 1.0
        if rule == "momentum":
            s[r] = m * s[r] + u * g[r]
            w[r] -= lr * s[r]
        elif rule == "nesterov":
            s[r] = m * s[r] + u * g[r]
            w -= m * s
            w[r] -= u * lr * g[r]
        elif rule == "adagrad":
            s[r] += g[r] ** 2
            a = np.sqrt(1e-16 + s[r])
            ave = np.mean(1 / a) if average else 1.0
            w[r] -= lr / ave * g[r] / a
        seen.append(w.copy())
    return seen


@pytest.mark.parametrize("unit_gain", [True, False])
def test_momentum_decays_only_the_touched_rows(unit_gain):
    got = _run(lambda p: momentum_sgd(p, 0.5, 0.9, unit_gain=unit_gain))
    for a, b in zip(got, _reference("momentum", unit_gain=unit_gain)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # a row not touched since step 0 keeps its place (the dense rule moves it on)
    np.testing.assert_array_equal(got[1][0], got[0][0])
    dense = _run(lambda p: momentum_sgd(p, 0.5, 0.9, unit_gain=unit_gain), sparse=False)
    assert not np.allclose(dense[1][0], dense[0][0])


def test_nesterov_moves_every_row_by_its_momentum():
    got = _run(lambda p: nesterov(p, 0.5, 0.9))
    for a, b in zip(got, _reference("nesterov")):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_nesterov_without_momentum_moves_nothing():
    got = _run(lambda p: nesterov(p, 0.5, 0.0))
    np.testing.assert_array_equal(got[-1], np.arange(21, dtype=np.float32).reshape(7, 3) * 0.1)


@pytest.mark.parametrize("average", [True, False])
def test_adagrad_averages_over_the_touched_rows(average):
    got = _run(lambda p: adagrad(p, 0.5, need_ave_multiplier=average))
    for a, b in zip(got, _reference("adagrad", average=average)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", [lambda p: sgd(p, 0.5), lambda p: adadelta(p, 0.5)])
def test_sgd_and_adadelta_as_dense(make):
    for a, b in zip(_run(make), _run(make, sparse=False)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def _gpu_reference(rule):
    """NumPy transcription of CNTK 2.7's GPU kernels on a block-sparse gradient (the rows it
    holds, a block each; ``_getvalue4BlockSparseCol`` reads 0 for the others) and of their
    learners (``Learner.cpp``: LearnerFSAdaGrad, LearnerAdam, LearnerRMSProp):
    ``_fsadagrad4BlockSparseCol``, ``_adam4BlockSparseCol`` (``GPUMatrixCUDAKernels.cuh``),
    ``_rmsprop4BlockSparseCol`` with ``GPUSparseMatrix::RmsProp``'s init and average."""
    w = np.arange(21, dtype=np.float64).reshape(7, 3) * 0.1
    ada, mom = np.zeros_like(w), np.zeros_like(w)           # (rmsprop: avars, signs)
    steps = np.zeros_like(w)
    count, seen = 0.0, []
    for (rows, n), g in zip(STEPS, _grads()):
        block = {r: k for k, r in enumerate(sorted(set(rows)))}
        bsc = g[sorted(block)].astype(np.float64)            # only the rows held

        def grad(i, j):
            return bsc[block[i], j] if i in block else 0.0
        lr = 0.5 / n
        if rule == "rmsprop":
            count += 1
            temps = np.zeros_like(w)
            if count <= 1:                                  # not initialized: init kernel
                for i in range(7):
                    for j in range(3):
                        ada[i, j], mom[i, j], steps[i, j] = grad(i, j) ** 2, 0.0, 0.02
            for i in range(7):
                for j in range(3):
                    gij = grad(i, j)
                    ada[i, j] = 0.9 * ada[i, j] + 0.1 * gij * gij
                    sign = float(np.sign(gij))
                    steps[i, j] = min(steps[i, j] * 1.2, 10.0) if mom[i, j] * sign > 0 \
                        else max(steps[i, j] * 0.5, 0.001)
                    temps[i, j] = steps[i, j] / np.sqrt(ada[i, j] + 1e-6)
                    mom[i, j] = sign
            ave = temps.mean()
            for r, k in block.items():
                w[r] -= lr / ave * bsc[k] * temps[r]
        elif rule == "fsadagrad":
            count = 0.99 * count + 0.01 * n
            ada_mul = np.sqrt(count)
            for i in range(7):
                for j in range(3):
                    gij = grad(i, j)
                    ada[i, j] = 0.99 * ada[i, j] + 0.01 * gij * gij
                    if ada[i, j] != 0:
                        gij *= min(ada_mul / np.sqrt(ada[i, j]), 10.0)
                    gij = 0.9 * mom[i, j] + 0.1 * gij
                    mom[i, j] = gij
                    w[i, j] -= lr * gij
        else:                                               # adam
            count += 1
            corr = np.sqrt(1 - 0.99 ** count) / (1 - 0.9 ** count)
            for i in range(7):
                for j in range(3):
                    gij = grad(i, j)
                    ada[i, j] = 0.99 * ada[i, j] + 0.01 * gij * gij
                    mult = corr / (np.sqrt(ada[i, j]) + 1e-8)
                    gij = 0.9 * mom[i, j] + 0.1 * gij
                    mom[i, j] = gij
                    w[i, j] -= lr * gij * mult
        seen.append(w.copy())
    return seen


@pytest.mark.parametrize("rule, make", [
    ("adam", lambda p: adam(p, 0.5, 0.9, variance_momentum=0.99)),
    ("fsadagrad", lambda p: fsadagrad(p, 0.5, 0.9, variance_momentum=0.99)),
    ("rmsprop", lambda p: rmsprop(p, 0.5, 0.9, 1.2, 0.5, 10.0, 0.001))])
def test_adam_fsadagrad_rmsprop_as_cntks_gpu_kernels(rule, make):
    """CNTK 2.7's CPU build refuses these on a sparse gradient (Matrix.cpp:1822-1880); its GPU
    build runs the kernels transcribed in _gpu_reference, and Stadyn does as the GPU build:
    every element moves, untouched rows by their momentum (a program written for CNTK's GPUs,
    LanguageUnderstanding.py's fsadagrad over an Embedding, trains)."""
    got = _run(make)
    for a, b in zip(got, _gpu_reference(rule)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_l2_makes_the_gradient_dense_as_cntks_gpu_build():
    """L2 on a row-sparse gradient: CNTK 2.7's CPU build refuses it (ScaleAndAdd), its GPU
    build adds the parameter into the gradient as a dense matrix (Matrix.cpp's ScaleAndAdd,
    GPU sparse c: CopyToDenseMatrix) and the dense momentum rule follows."""
    def make(p):
        return momentum_sgd(p, 0.5, 0.9, l2_regularization_weight=0.1)
    sparse, dense = _run(make), _run(make, sparse=False)
    for a, b in zip(sparse, dense):
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(sparse[1][0], sparse[0][0])     # an untouched row moves


def test_adamax_refused_in_cntks_words():
    """adamax: no CPU kernel (CNTK 2.7's words), and the GPU one divides by the zero
    accumulator of the rows never touched (NaN there): refused, nothing moved or counted."""
    w = sd.Variable.from_numpy_array(np.ones((7, 3), np.float32), need_grad=True)
    learner = adam([w], 0.5, 0.9, adamax=True)
    learner.set_row_sparse_gradients({w: [1]})
    w.grad = torch.ones(7, 3)
    with pytest.raises(RuntimeError, match="Function: AdamUpdate  -> Feature Not Implemented"):
        learner.update(1)
    np.testing.assert_array_equal(w.d, np.ones((7, 3), np.float32))
    assert learner.total_number_of_samples_seen == 0


def test_rows_are_for_one_update_and_checked():
    w = sd.Variable.from_numpy_array(np.zeros((3, 1), np.float32), need_grad=True)
    learner = momentum_sgd([w], 0.5, 0.5)
    with pytest.raises(sd.StadynError, match=r"rows \[3\] of parameter 0 are outside its 3"):
        learner.set_row_sparse_gradients({w: [3]})
    learner.set_row_sparse_gradients({w: [0]})
    w.grad = torch.ones(3, 1)
    learner.update(1)
    learner.update(1)                           # dense again: every row moves
    assert w.d[1, 0] != 0 and w.d[0, 0] != w.d[1, 0]


def test_refusal_after_the_parameters_before_it():
    """CNTK 2.7 updates a learner's parameters in order: those before the refused one move
    (harness case cntk:sparse_learners__adamax__bias_first has CNTK 2.7's numbers)."""
    b = sd.Variable.from_numpy_array(np.zeros(3, np.float32), need_grad=True)
    w = sd.Variable.from_numpy_array(np.ones((7, 3), np.float32), need_grad=True)
    learner = adam([b, w], 0.5, 0.9, adamax=True)
    learner.set_row_sparse_gradients({w: [2]})
    b.grad, w.grad = torch.ones(3), torch.ones(7, 3)
    with pytest.raises(RuntimeError, match="AdamUpdate"):
        learner.update(1)
    assert (b.d < 0).all() and (w.d == 1).all()
    fresh = adam([b], 0.5, 0.9, adamax=True)
    assert learner.step_scalars(None, 1)["step_size"] != fresh.step_scalars(
        None, 1)["step_size"]          # the update begun is counted (its bias correction)
