"""Views of an intermediate (``h.reshape(shape, unlink=True)``) across static forwards whose
batch size changes and comes back (a cached plan replayed: ``Shapes.restore`` drops values of
the other size).  Expected values: NNabla 1.39's run of this test's body with ``nnabla`` and
``nnabla.functions`` in place of the compat modules: a view taken before a change of size keeps
its values; one taken before a change of shape of the same size follows the intermediate."""

from __future__ import annotations

import numpy as np

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F

# NNabla 1.39: the first two values each view shows after each step
NNABLA = [
    {0: [1, 2]},
    {0: [1, 2], 1: [11, 12]},
    {0: [1, 2], 1: [11, 12], 2: [21, 22]},
    {0: [1, 2], 1: [11, 12], 2: [21, 22], 3: [31, 32]},
    {0: [1, 2], 1: [11, 12], 2: [21, 22], 3: [31, 32], 4: [41, 42]},
    {0: [1, 2], 1: [11, 12], 2: [21, 22], 3: [31, 32], 4: [51, 52], 5: [51, 52]},
    {0: [1, 2], 1: [11, 12], 2: [21, 22], 3: [31, 32], 4: [61, 62], 5: [61, 62], 6: [61, 62]},
]


def test_views_of_an_intermediate_across_batch_sizes_are_nnablas():
    x = nn.Variable((2, 3))
    h = F.add_scalar(x, 1.0)
    y = F.mul_scalar(h, 2.0)
    views = {}
    steps = [(2, 3), (5, 3), (2, 3), (5, 3), (3, 2), (2, 3), (3, 2)]
    for k, (shape, want) in enumerate(zip(steps, NNABLA)):
        x.reset_shape(shape, force=True)
        x.d = 10 * k + np.arange(np.prod(shape)).reshape(shape)
        y.forward()
        views[k] = h.reshape(h.shape, unlink=True)
        got = {j: np.asarray(v.d).ravel()[:2].tolist() for j, v in views.items()}
        assert got == want, k
