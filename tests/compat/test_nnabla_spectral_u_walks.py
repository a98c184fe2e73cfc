"""compat.nnabla's ``_spectral_u.write_after_backward`` walks a backward's graph only when a
live spectral-norm node could write its ``u`` (a start kept, ``w`` taking a gradient): found
among those nodes alone, not through the graph or the nodes' ``attrs`` (which bind the call's
arguments again).  What it writes is held to NNabla 1.39 by the ``sn_u__*`` cases."""

import weakref

import numpy as np

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
from stadyn.compat.nnabla import _spectral_u


def test_no_writing_node_no_walk(monkeypatch):
    walked = []
    real = _spectral_u._backward_order
    # (spectral norm nodes other tests of this worker left alive, a writing one among them,
    # would be walked for: this test sees only its own)
    monkeypatch.setattr(_spectral_u, "_STARTS", weakref.WeakKeyDictionary())
    monkeypatch.setattr(_spectral_u, "_backward_order",
                        lambda root: walked.append(root) or real(root))
    u = nn.Variable.from_numpy_array(np.ones(3, np.float32))
    w = nn.Variable.from_numpy_array(np.eye(3, dtype=np.float32), need_grad=False)
    x = nn.Variable.from_numpy_array(np.ones(4, np.float32), need_grad=True)
    with nn.auto_forward():
        kept = F.spectral_norm(w, u)            # lives, its w takes no gradient
        loss = F.sum(x * 2.0)
    loss.backward()
    assert walked == [] and kept is not None
    np.testing.assert_allclose(x.g, 2.0)
    w.need_grad = True                          # now it could write: the graph is walked
    loss.backward()
    assert walked == [loss]
