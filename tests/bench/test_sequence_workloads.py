"""The sequence workloads of ``stadyn bench``: each Stadyn mode and the PyTorch twin compute
the same network, so the same first loss; the tagger's loss is also checked by hand: per-step
cross entropy of the twin's logits over the words of each sequence, padded steps excluded."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from stadyn.bench import WORKLOADS
from stadyn.bench._tagger_workload import lstm_tagger


def test_the_tagger_workload_is_registered_with_its_sizes():
    w = WORKLOADS["lstm-tagger"]
    assert (w.batch_size, w.embedding, w.hidden, w.bidirectional) == (64, 64, 128, True)


@pytest.mark.parametrize("bidirectional", [True, False], ids=["bilstm", "lstm"])
def test_the_tagger_and_its_torch_twin_compute_the_same_loss(bidirectional):
    w = lstm_tagger(batch_size=5, vocab=30, embedding=4, hidden=6, n_tags=7, min_length=1,
                    max_length=8, bidirectional=bidirectional)
    losses = [w.stadyn_case("static").first_loss, w.stadyn_case("dynamic").first_loss,
              w.torch_case("eager").first_loss]
    assert losses[0] == pytest.approx(losses[2], rel=1e-5)
    assert losses[1] == pytest.approx(losses[2], rel=1e-5)
    # by hand from the twin's per-word logits: the mean over words of -log softmax[tag]
    module, _ = w.torch_twin(0)
    words, tags = w.batch(0)
    logits = torch.cat([module(torch.from_numpy(s)[None], torch.tensor([len(s)]))
                        for s in words]).detach().numpy().astype(np.float64)
    target = np.concatenate([t[:, 0] for t in tags])
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    assert losses[0] == pytest.approx(-logp[np.arange(len(target)), target].mean(), rel=1e-5)
