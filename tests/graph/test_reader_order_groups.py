"""NNabla's backward order (graph/_reader_order.py, _reader_leaves.py ``mixed_groups`` /
``arrange_mixed``) for two ops keeping their backward over one intermediate and a leaf:
``h = 2x``, ``loss = sum(h * 3) + sum(A(h, z)) + sum(B(h, z))``, ``A`` and ``B`` ``a * b``
whose backward writes its gradients over what the inputs hold.

NNabla 1.39 runs ``B`` first (rank 2 like ``h * 3`` and ``A``, found first from the root: the
last ``add2``'s second input), then ``h * 3``, then ``A`` (case
``nnabla_late_28.python_function__several_inputs_needing_a_gradient``, graph "two assigning
Mul2(h, z) ..."), so by hand, with ``x.g = 1``, ``z.g = 10`` held before: ``B`` sees
``h.g = 0`` (accum False) and ``z.g = 10`` (accum True) and writes ``h.g = z``,
``z.g = h = 2x``; ``h * 3`` adds 3; ``A`` sees ``h.g = z + 3``, ``z.g = 2x`` (accum True) and
writes ``h.g = z``, ``z.g = 2x``; so ``x.g = 1 + 2z``, ``z.g = 2x``.  Before, the two ran as
torch's autograd reached them, the second seeing ``h.g`` at zeros: ``x.g`` ``[19, 23, -1]``.
"""

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F

X = np.array([0.5, -1.0, 2.0], np.float32)
Z = np.array([3.0, 4.0, -2.0], np.float32)


class _Mul2:
    """``a * b`` whose backward waits (``defer_input`` / ``run_leaves``) and writes its
    gradients over what the inputs hold; it notes what it saw."""

    def __init__(self, tag, z, seen):
        self.tag, self.z, self.seen, self.k = tag, z, seen, None

    def output_shapes(self, shapes, dtypes):
        return [(shapes[0], dtypes[0])]

    def forward_arrays(self, arrays):
        return arrays, [arrays[0] * arrays[1]]

    def backward_arrays(self, state, grads, needed):
        a, b = state
        if self.k is not None:
            self.kept = (a, b, grads[0])
            return [np.zeros_like(a), np.zeros_like(b)]
        return [b * grads[0], a * grads[0]]

    def defer_input(self, k):
        self.k = k

    def held_gradient(self, k):
        g = self.z.data.grad
        return (np.zeros(Z.shape, np.float32) if g is None else g.numpy().copy()), True

    def run_leaves(self, partial, accum):
        a, b, g = self.kept
        self.seen.append((self.tag, partial[0].tolist(), partial[1].tolist(),
                          accum[0], accum[1]))
        return {0: b * g, 1: a * g}


@pytest.mark.parametrize("dynamic", [False, True])
def test_two_kept_ops_over_an_intermediate_and_a_leaf_run_in_nnabla_order(dynamic):
    x = sd.Variable.from_numpy_array(X, need_grad=True)
    z = sd.Variable.from_numpy_array(Z, need_grad=True)
    seen = []
    with sd.auto_forward(dynamic):
        h = x * 2.0
        loss = (F.sum(h * 3.0) + F.sum(F.python_function(h, z, function=_Mul2("a", z, seen)))
                + F.sum(F.python_function(h, z, function=_Mul2("b", z, seen))))
    if not dynamic:
        loss.forward()
    x.g = np.ones(3, np.float32)
    z.g = np.full(3, 10.0, np.float32)
    loss.backward()
    assert seen == [("b", [0.0, 0.0, 0.0], [10.0, 10.0, 10.0], False, True),
                    ("a", (Z + 3).tolist(), (2 * X).tolist(), True, True)]
    np.testing.assert_allclose(x.g, 1 + 2 * Z)
    np.testing.assert_allclose(z.g, 2 * X)


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_chain_of_kept_ops_over_a_shared_leaf_runs_each_once_in_nnabla_order(dynamic):
    """``loss = sum(B(A(h, z), z))``, ``h = 2x``: one group (``z`` shared), but torch's autograd
    completes ``A``'s output's gradient (running ``B``) before it runs ``A``'s backward, which
    needs that gradient.  NNabla runs ``B`` (rank 3) then ``A``: ``B`` sees ``A.g = 0``
    (accum False), ``z.g = 10`` (accum True) and writes ``A.g = z``, ``z.g = A = 2xz``; ``A``
    sees ``h.g = 0``, ``z.g = 2xz`` and writes ``h.g = z * z``, ``z.g = 2xz``: ``x.g = 1 +
    2z²`` ([19, 33, 9], NNabla 1.39's: case ``nnabla_pyfunc_36.python_function__groups_over_
    shared_inputs``).  Before, the group ran at ``A``'s output's completion, ``A``'s backward
    not yet kept: it never ran (``x.g`` [1, 1, 1])."""
    x = sd.Variable.from_numpy_array(X, need_grad=True)
    z = sd.Variable.from_numpy_array(Z, need_grad=True)
    seen = []
    with sd.auto_forward(dynamic):
        h = x * 2.0
        a = F.python_function(h, z, function=_Mul2("a", z, seen))
        loss = F.sum(F.python_function(a, z, function=_Mul2("b", z, seen)))
    if not dynamic:
        loss.forward()
    x.g = np.ones(3, np.float32)
    z.g = np.full(3, 10.0, np.float32)
    loss.backward()
    assert seen == [("b", [0.0, 0.0, 0.0], [10.0, 10.0, 10.0], False, True),
                    ("a", [0.0, 0.0, 0.0], (2 * X * Z).tolist(), False, True)]
    np.testing.assert_allclose(x.g, 1 + 2 * Z * Z)
    np.testing.assert_allclose(z.g, 2 * X * Z)
