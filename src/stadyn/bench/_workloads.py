"""Benchmark workloads: each builds a Stadyn training step in a mode and a PyTorch twin.

The twin is hand-written ``torch.nn`` code of the same network, given the Stadyn model's initial
parameters (so the first losses agree: the twin really is the same network) and the same batch,
with PyTorch's default optimizer of the same kind.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
import torch.nn as nn

from .. import functions as F
from .. import solvers as S
from .._random import seed as seed_all
from ..graph import Variable, auto_forward
from ..models import digits_cnn, digits_mlp
from ..parametric import ParameterRegistry, get_parameters, parameter_registry
from ._runner import Case

__all__ = ["Workload", "WORKLOADS", "STADYN_MODES", "TORCH_MODES"]

STADYN_MODES = ("dynamic", "static")
TORCH_MODES = ("eager",)


@dataclass
class Workload:
    """A network, its batch and optimizer, buildable in every mode."""

    name: str
    description: str
    batch_size: int
    input_shape: tuple[int, ...]
    n_classes: int
    model: Callable[[Variable], Variable]
    twin: Callable[[dict[str, torch.Tensor]], nn.Module]
    solver: Callable[[], S.Solver]
    torch_optimizer: Callable[[list[torch.nn.Parameter]], torch.optim.Optimizer]

    def batch(self, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.RandomState(seed)
        x = rng.uniform(0, 1, (self.batch_size,) + self.input_shape).astype(np.float32)
        t = rng.randint(0, self.n_classes, (self.batch_size, 1)).astype(np.int32)
        return x, t

    # -- Stadyn ---------------------------------------------------------------------------------
    def stadyn_case(self, mode: str, seed: int = 0) -> Case:
        start = time.perf_counter()
        registry = ParameterRegistry()
        seed_all(seed)
        xb, tb = self.batch(seed)
        x = Variable(xb.shape)
        t = Variable(tb.shape)
        x.d, t.d = xb, tb
        solver = self.solver()
        with parameter_registry(registry):
            if mode == "dynamic":
                def step():
                    with parameter_registry(registry):
                        with auto_forward():
                            loss = F.mean(F.softmax_cross_entropy(self.model(x), t))
                        solver.set_parameters(get_parameters(), reset=False, retain_state=True)
                    solver.zero_grad()
                    loss.backward(clear_buffer=True)
                    solver.update()
                    return loss
                loss = step()
            elif mode == "static":
                loss = F.mean(F.softmax_cross_entropy(self.model(x), t))
                solver.set_parameters(get_parameters())

                def step():
                    loss.forward(clear_no_need_grad=True)
                    solver.zero_grad()
                    loss.backward(clear_buffer=True)
                    solver.update()
                    return loss
                step()
            else:
                raise ValueError(f"unknown Stadyn mode {mode!r}; expected one of {STADYN_MODES}")
        return Case(self.name, f"stadyn-{mode}", step, time.perf_counter() - start,
                    float(loss.d))

    def initial_parameters(self, seed: int = 0) -> dict[str, torch.Tensor]:
        """The Stadyn model's initial parameters (what every case starts from)."""
        registry = ParameterRegistry()
        seed_all(seed)
        with parameter_registry(registry):
            self.model(Variable((self.batch_size,) + self.input_shape))
        return {k: v.data.detach().clone() for k, v in registry.items()}

    # -- PyTorch --------------------------------------------------------------------------------
    def torch_case(self, mode: str, seed: int = 0) -> Case:
        start = time.perf_counter()
        module = self.twin(self.initial_parameters(seed))
        module.train()
        opt = self.torch_optimizer(list(module.parameters()))
        xb, tb = self.batch(seed)
        x = torch.from_numpy(xb)
        t = torch.from_numpy(tb[:, 0]).long()
        if mode != "eager":
            raise ValueError(f"unknown PyTorch mode {mode!r}; expected one of {TORCH_MODES}")

        def step():
            loss = nn.functional.cross_entropy(module(x), t)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        # The first loss, before any update, must equal Stadyn's: the twin is the same network.
        with torch.no_grad():
            first = float(nn.functional.cross_entropy(module(x), t))
        module.train()
        return Case(self.name, f"torch-{mode}", step, time.perf_counter() - start, first)


# ---------------------------------------------------------------------------------------------
# Twins
# ---------------------------------------------------------------------------------------------
class _DigitsCNNTwin(nn.Module):
    """PyTorch eager twin of :func:`stadyn.models.digits_cnn`."""

    def __init__(self, params: dict[str, torch.Tensor]):
        super().__init__()
        names = ["conv1"] + [f"conv{i + 2}" for i in range(10)] + ["conv_last"]
        layers: list[nn.Module] = []
        for name in names:
            w = params[f"cnn/{name}/conv/W"]
            conv = nn.Conv2d(w.shape[1], w.shape[0], 3, padding=1)
            bn = nn.BatchNorm2d(w.shape[0], eps=1e-5, momentum=0.1)
            with torch.no_grad():
                conv.weight.copy_(w)
                conv.bias.copy_(params[f"cnn/{name}/conv/b"])
            layers += [conv, bn, nn.Tanh()]
        self.features = nn.Sequential(*layers, nn.AvgPool2d(2), nn.Flatten())
        self.fc = _linear(params["cnn/fc/affine/W"], params["cnn/fc/affine/b"])
        self.classifier = _linear(params["cnn/classifier/affine/W"],
                                  params["cnn/classifier/affine/b"])

    def forward(self, x):
        return self.classifier(torch.tanh(self.fc(self.features(x))))


class _MLPTwin(nn.Module):
    def __init__(self, params: dict[str, torch.Tensor]):
        super().__init__()
        self.fc1 = _linear(params["mlp/fc1/affine/W"], params["mlp/fc1/affine/b"])
        self.fc2 = _linear(params["mlp/fc2/affine/W"], params["mlp/fc2/affine/b"])
        self.out = _linear(params["mlp/out/affine/W"], params["mlp/out/affine/b"])

    def forward(self, x):
        h = torch.relu(self.fc1(x.flatten(1)))
        return self.out(torch.relu(self.fc2(h)))


def _linear(w: torch.Tensor, b: torch.Tensor) -> nn.Linear:
    """An ``nn.Linear`` holding Stadyn's ``(in, out)`` weight (transposed to ``(out, in)``)."""
    layer = nn.Linear(w.shape[0], w.shape[1])
    with torch.no_grad():
        layer.weight.copy_(w.t())
        layer.bias.copy_(b)
    return layer


WORKLOADS: dict[str, Workload] = {
    "seed2": Workload(
        "seed2", "seed-2 CNN (12 conv+BN+tanh, 8x8 digits), batch 16, Adam 1e-3", 16, (1, 8, 8),
        10, digits_cnn, _DigitsCNNTwin, lambda: S.Adam(alpha=1e-3),
        lambda ps: torch.optim.Adam(ps, lr=1e-3)),
    "mlp": Workload(
        "mlp", "MLP 64-256-256-10 on digits, batch 16, Adam 1e-3 (overhead-bound)", 16, (1, 8, 8),
        10, digits_mlp, _MLPTwin, lambda: S.Adam(alpha=1e-3),
        lambda ps: torch.optim.Adam(ps, lr=1e-3)),
}
