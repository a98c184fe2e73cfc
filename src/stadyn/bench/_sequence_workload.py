"""The sequence workload of ``stadyn bench``: an LSTM classifier over a minibatch of ragged
sequences, against a PyTorch twin that runs ``nn.LSTM`` on packed sequences.

The network: word ids -> embedding (``vocab x 64``) -> ``Recurrence(LSTM(256))`` (CNTK's step
and weight layout) -> each sequence's last state -> ``Dense(classes)``; a fixed minibatch of 64
sequences of lengths 5 to 50; momentum SGD.  The twin gets the same initial parameters (CNTK's
gate blocks ``i, c, f, o`` reordered to torch's ``i, f, g, o``) and packs the minibatch with
``pack_padded_sequence``, so the two compute the same loss (checked by ``first_loss``).

It has the interface ``stadyn bench`` asks of a workload (``stadyn_case``, ``torch_case``,
``initial_parameters``, ...) and the modes ``dynamic``, ``static`` and ``eager``.

Example:
    >>> w = lstm_classifier(batch_size=4, hidden=8, embedding=4, max_length=6)
    >>> s, t = w.stadyn_case("static"), w.torch_case("eager")
    >>> abs(s.first_loss - t.first_loss) < 1e-5
    True
"""

from __future__ import annotations

import time

import numpy as np
import torch
import torch.nn as nn

from .. import functions as F
from .. import layers as L
from .. import parametric_functions as PF
from .. import sequence as Seq
from .. import solvers as S
from .._random import seed as seed_all
from ..graph import Variable, auto_forward, training
from ..parametric import ParameterRegistry, get_parameters, parameter_registry
from ._runner import Case

__all__ = ["SequenceWorkload", "lstm_classifier"]


class SequenceWorkload:
    """An LSTM classifier over ragged sequences, buildable in Stadyn's dynamic and static modes
    and as a PyTorch twin (see the module's docstring)."""

    stadyn_modes = ("dynamic", "static")
    modes = stadyn_modes
    torch_modes = ("eager",)

    def __init__(self, name: str, description: str, batch_size: int, vocab: int, embedding: int,
                 hidden: int, n_classes: int, min_length: int, max_length: int,
                 lr: float = 0.01, momentum: float = 0.9):
        self.name, self.description, self.batch_size = name, description, batch_size
        self.vocab, self.embedding, self.hidden = vocab, embedding, hidden
        self.n_classes, self.min_length, self.max_length = n_classes, min_length, max_length
        self.lr, self.momentum = lr, momentum
        self.input_shape = ()

    def batch(self, seed: int = 0) -> tuple[list[np.ndarray], np.ndarray]:
        """The sequences of word ids (int64 arrays) and the labels ``(B, 1)``."""
        rng = np.random.RandomState(seed)
        lengths = rng.randint(self.min_length, self.max_length + 1, self.batch_size)
        words = [rng.randint(0, self.vocab, n).astype(np.int64) for n in lengths]
        labels = rng.randint(0, self.n_classes, (self.batch_size, 1)).astype(np.int32)
        return words, labels

    def solver(self) -> S.Solver:
        return S.Momentum(lr=self.lr, momentum=self.momentum)

    def make_model(self):
        """The network as a function of a sequence of word ids (layers made once: applied
        again, in dynamic mode, they reuse their parameters)."""
        rnn = L.Recurrence(L.LSTM(self.hidden), name="rnn")
        out = L.Dense(self.n_classes, name="out")

        def model(words: Variable) -> Variable:
            emb = PF.embed(words, self.vocab, self.embedding, name="embed")
            return out(Seq.last(rnn(emb)))
        return model

    def loss(self, model, x: Variable, t: Variable) -> Variable:
        """The training loss of ``model`` on word ids ``x`` and labels ``t``."""
        return F.mean(F.softmax_cross_entropy(model(x), t))

    def _inputs(self, seed: int):
        words, labels = self.batch(seed)
        x = Seq.input_variable((), dtype=np.int64)
        x.d = words
        t = Variable(labels.shape)
        t.d = labels
        return x, t

    # -- Stadyn ---------------------------------------------------------------------------------
    def stadyn_case(self, mode: str, seed: int = 0) -> Case:
        if mode not in self.stadyn_modes:
            raise ValueError(f"workload {self.name} runs in Stadyn's modes "
                             f"{', '.join(self.stadyn_modes)}, not {mode!r}")
        start = time.perf_counter()
        registry = ParameterRegistry()
        seed_all(seed)
        x, t = self._inputs(seed)
        solver = self.solver()
        model = self.make_model()
        with parameter_registry(registry):
            loss = self.loss(model, x, t)
            solver.set_parameters(get_parameters())
            with training(False), torch.no_grad():
                loss.forward()
            first = float(loss.d)
        if mode == "dynamic":
            def step():
                with parameter_registry(registry):
                    with auto_forward():
                        dyn = self.loss(model, x, t)
                    solver.zero_grad()
                    dyn.backward(clear_buffer=True)
                    solver.update()
        else:
            def step():
                loss.forward(clear_no_need_grad=True)
                solver.zero_grad()
                loss.backward(clear_buffer=True)
                solver.update()
        step()
        return Case(self.name, f"stadyn-{mode}", step, time.perf_counter() - start, first)

    def initial_parameters(self, seed: int = 0) -> dict[str, torch.Tensor]:
        """The Stadyn model's initial parameters (what every case starts from)."""
        registry = ParameterRegistry()
        seed_all(seed)
        x, _ = self._inputs(seed)
        with parameter_registry(registry):
            self.make_model()(x)
        return {k: v.data.detach().clone() for k, v in registry.items()}

    # -- PyTorch --------------------------------------------------------------------------------
    def torch_case(self, mode: str, seed: int = 0) -> Case:
        if mode not in self.torch_modes:
            raise ValueError(f"workload {self.name} runs in PyTorch's modes "
                             f"{', '.join(self.torch_modes)}, not {mode!r}")
        start = time.perf_counter()
        module, twin_loss = self.torch_twin(seed)
        opt = torch.optim.SGD(module.parameters(), lr=self.lr, momentum=self.momentum)
        with torch.no_grad():
            first = float(twin_loss())

        def step():
            loss = twin_loss()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        step()
        return Case(self.name, f"torch-{mode}", step, time.perf_counter() - start, first)


    def torch_twin(self, seed: int = 0):
        """``(module, loss function)``: the PyTorch twin and its loss on the minibatch."""
        module = _LSTMTwin(self.initial_parameters(seed))
        words, labels = self.batch(seed)
        lengths = torch.tensor([len(w) for w in words])
        ids = nn.utils.rnn.pad_sequence([torch.from_numpy(w) for w in words], batch_first=True)
        t = torch.from_numpy(labels[:, 0]).long()
        return module, lambda: nn.functional.cross_entropy(module(ids, lengths), t)


def _gates_to_torch(w: torch.Tensor) -> torch.Tensor:
    """CNTK's ``(in, 4H)`` gate blocks ``i, c, f, o`` as torch's ``(4H, in)`` ``i, f, g, o``."""
    i, c, f, o = w.reshape(w.shape[0], 4, -1).unbind(1)
    return torch.cat([i, f, c, o], 1).t().contiguous()


class _LSTMTwin(nn.Module):
    """The PyTorch twin: ``nn.Embedding``, ``nn.LSTM`` over packed sequences (the last state
    of each is ``h_n``), ``nn.Linear``."""

    def __init__(self, params: dict[str, torch.Tensor]):
        super().__init__()
        emb = params["embed/embed/W"]
        w, h, b = params["rnn/lstm/W"], params["rnn/lstm/H"], params["rnn/lstm/b"]
        self.embed = nn.Embedding(emb.shape[0], emb.shape[1])
        self.lstm = nn.LSTM(w.shape[0], h.shape[0], batch_first=True)
        out_w = params["out/W"]
        self.out = nn.Linear(out_w.shape[0], out_w.shape[1])
        with torch.no_grad():
            self.embed.weight.copy_(emb)
            self.lstm.weight_ih_l0.copy_(_gates_to_torch(w))
            self.lstm.weight_hh_l0.copy_(_gates_to_torch(h))
            self.lstm.bias_ih_l0.copy_(_gates_to_torch(b[None])[:, 0])
            self.lstm.bias_hh_l0.zero_()
            self.out.weight.copy_(out_w.t())
            self.out.bias.copy_(params["out/b"])

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(ids), lengths, batch_first=True,
                                                   enforce_sorted=False)
        _, (h_n, _) = self.lstm(packed)
        return self.out(h_n[-1])


def lstm_classifier(batch_size: int = 64, vocab: int = 2000, embedding: int = 64,
                    hidden: int = 256, n_classes: int = 5, min_length: int = 5,
                    max_length: int = 50) -> SequenceWorkload:
    """The ``lstm`` workload (defaults: issue 21's sizes).  Example above."""
    return SequenceWorkload(
        "lstm", f"LSTM classifier: embedding {embedding}, Recurrence(LSTM({hidden})), last "
        f"step, Dense({n_classes}); batch {batch_size} of sequences of lengths {min_length}-"
        f"{max_length}, momentum SGD 0.01/0.9; twin: nn.LSTM on packed sequences",
        batch_size, vocab, embedding, hidden, n_classes, min_length, max_length)
