"""The ``lstm-tagger`` workload of ``stadyn bench``: CNTK_202-style slot tagging -- a tag for
every word of ragged sequences, trained with per-step cross entropy -- against a PyTorch twin
that runs a bidirectional ``nn.LSTM`` on packed sequences.

The network: word ids -> embedding -> ``Recurrence(LSTM(H))`` forwards and
``Recurrence(LSTM(H), go_backwards=True)`` spliced per step (a BiLSTM; ``bidirectional=False``
keeps the forward one) -> ``Dense(tags)`` at every step -> softmax cross entropy at every
step, summed over each sequence's steps (``sd.sequence.reduce_sum``: padded steps never count)
and divided by the number of words; momentum SGD.  The twin gets the same initial parameters
and computes its dense layer and loss on the packed steps only, so the two compute the same
loss (checked by ``first_loss``).

Example:
    >>> w = lstm_tagger(batch_size=4, hidden=8, embedding=4, max_length=6)
    >>> s, t = w.stadyn_case("static"), w.torch_case("eager")
    >>> abs(s.first_loss - t.first_loss) < 1e-5
    True
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn

from .. import functions as F
from .. import layers as L
from .. import parametric_functions as PF
from .. import sequence as Seq
from ..graph import Variable
from ._sequence_workload import SequenceWorkload, _gates_to_torch

__all__ = ["TaggerWorkload", "lstm_tagger"]


class TaggerWorkload(SequenceWorkload):
    """An LSTM (or BiLSTM) tagger over ragged sequences (see the module's docstring)."""

    def __init__(self, *args, bidirectional: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.bidirectional = bidirectional

    def batch(self, seed: int = 0) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The sequences of word ids (int64) and of their tags ``(n, 1)`` (int64)."""
        rng = np.random.RandomState(seed)
        lengths = rng.randint(self.min_length, self.max_length + 1, self.batch_size)
        words = [rng.randint(0, self.vocab, n).astype(np.int64) for n in lengths]
        tags = [rng.randint(0, self.n_classes, (n, 1)).astype(np.int64) for n in lengths]
        return words, tags

    def make_model(self):
        forwards = L.Recurrence(L.LSTM(self.hidden), name="fwd")
        backwards = L.Recurrence(L.LSTM(self.hidden), go_backwards=True, name="bwd")
        out = L.Dense(self.n_classes, name="out")

        def model(words: Variable) -> Variable:
            emb = PF.embed(words, self.vocab, self.embedding, name="embed")
            h = forwards(emb)
            if self.bidirectional:
                h = F.concatenate(h, backwards(emb), axis=2)
            return out(h)
        return model

    def loss(self, model, x: Variable, t: Variable) -> Variable:
        per_step = F.softmax_cross_entropy(model(x), t)            # (B, T, 1), a sequence
        words = sum(len(w) for w in self.batch(0)[0])
        return F.sum(Seq.reduce_sum(per_step)) * (1.0 / words)

    def _inputs(self, seed: int):
        words, tags = self.batch(seed)
        x = Seq.input_variable((), dtype=np.int64)
        x.d = words
        t = Seq.input_variable((1,), dtype=np.int64)
        t.d = tags
        return x, t

    def torch_twin(self, seed: int = 0):
        module = _TaggerTwin(self.initial_parameters(seed), self.bidirectional)
        words, tags = self.batch(seed)
        lengths = torch.tensor([len(w) for w in words])
        ids = nn.utils.rnn.pad_sequence([torch.from_numpy(w) for w in words], batch_first=True)
        packed_tags = nn.utils.rnn.pack_padded_sequence(
            nn.utils.rnn.pad_sequence([torch.from_numpy(t[:, 0]) for t in tags],
                                      batch_first=True),
            lengths, batch_first=True, enforce_sorted=False).data
        return module, lambda: nn.functional.cross_entropy(module(ids, lengths), packed_tags)


class _TaggerTwin(nn.Module):
    """The PyTorch twin: ``nn.Embedding``, a (bidirectional) ``nn.LSTM`` over packed sequences,
    ``nn.Linear`` on the packed steps (the logits of every word, in packed order)."""

    def __init__(self, params: dict[str, torch.Tensor], bidirectional: bool):
        super().__init__()
        emb = params["embed/embed/W"]
        w = params["fwd/lstm/W"]
        hidden = params["fwd/lstm/H"].shape[0]
        self.embed = nn.Embedding(emb.shape[0], emb.shape[1])
        self.lstm = nn.LSTM(w.shape[0], hidden, batch_first=True, bidirectional=bidirectional)
        out_w = params["out/W"]
        self.out = nn.Linear(out_w.shape[0], out_w.shape[1])
        with torch.no_grad():
            self.embed.weight.copy_(emb)
            for prefix, suffix in [("fwd", "")] + ([("bwd", "_reverse")] if bidirectional else []):
                getattr(self.lstm, "weight_ih_l0" + suffix).copy_(
                    _gates_to_torch(params[f"{prefix}/lstm/W"]))
                getattr(self.lstm, "weight_hh_l0" + suffix).copy_(
                    _gates_to_torch(params[f"{prefix}/lstm/H"]))
                getattr(self.lstm, "bias_ih_l0" + suffix).copy_(
                    _gates_to_torch(params[f"{prefix}/lstm/b"][None])[:, 0])
                getattr(self.lstm, "bias_hh_l0" + suffix).zero_()
            self.out.weight.copy_(out_w.t())
            self.out.bias.copy_(params["out/b"])

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(ids), lengths, batch_first=True,
                                                   enforce_sorted=False)
        steps, _ = self.lstm(packed)
        return self.out(steps.data)


def lstm_tagger(batch_size: int = 64, vocab: int = 2000, embedding: int = 64,
                hidden: int = 128, n_tags: int = 20, min_length: int = 5, max_length: int = 50,
                bidirectional: bool = True) -> TaggerWorkload:
    """The ``lstm-tagger`` workload (defaults: the classifier's batch and lengths, a BiLSTM of
    2 x 128).  Example above."""
    kind = "BiLSTM" if bidirectional else "LSTM"
    return TaggerWorkload(
        "lstm-tagger", f"{kind} tagger: embedding {embedding}, Recurrence(LSTM({hidden})) "
        f"{'both ways ' if bidirectional else ''}-> Dense({n_tags}) per step, per-step cross "
        f"entropy; batch {batch_size} of sequences of lengths {min_length}-{max_length}, "
        f"momentum SGD 0.01/0.9; twin: nn.LSTM on packed sequences",
        batch_size, vocab, embedding, hidden, n_tags, min_length, max_length,
        bidirectional=bidirectional)
