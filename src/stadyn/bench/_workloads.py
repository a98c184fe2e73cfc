"""Benchmark workloads: each builds a Stadyn training step in a mode and a PyTorch twin.

The twin is hand-written ``torch.nn`` code of the same network, given the Stadyn model's initial
parameters and the same batch, with PyTorch's default optimizer of the same kind.  Before timing,
each case computes its loss on the batch in the inference phase (no dropout, batch norm on the
running statistics) from those initial parameters; the values must agree across cases — the twin
really is the same network.

Modes:

* ``stadyn-dynamic``  — define-by-run under ``auto_forward``, rebuilt every iteration;
* ``stadyn-static``   — built once, replayed (forward and backward programs), NNabla's calls;
* ``stadyn-compiled`` — :func:`stadyn.compile_step`: forward + backward + update in one program
  compiled by ``torch.compile``;
* ``stadyn-static-bf16`` / ``stadyn-compiled-bf16`` — the same in a ``bfloat16`` context
  (ops cast by their declared precision; fp32 master weights and solver state);
* ``torch-eager`` — the twin, eager, with PyTorch's default optimizer;
* ``torch-compile`` — the twin's model and optimizer step under ``torch.compile``;
* ``torch-eager-cl`` / ``torch-compile-cl`` — the same with the model and its input in
  channels-last memory format (``module.to(memory_format=torch.channels_last)``): what a
  PyTorch user tuning a ConvNet for the CPU writes by hand;
* ``torch-eager-bf16`` / ``torch-eager-cl-bf16`` — eager under ``torch.autocast("cpu",
  torch.bfloat16)`` (fp32 parameters and optimizer), NCHW and channels-last.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
import torch.nn as nn

from .. import functions as F
from .. import solvers as S
from .._random import seed as seed_all
from ..compile import compile_step
from ..graph import Variable, auto_forward, context, context_scope, training
from ..models import cifar_convnet_layers, digits_cnn, digits_mlp
from ..parametric import ParameterRegistry, get_parameters, parameter_registry
from ._cntk_workload import (CNTK_MODES, CNTK_TWIN_LR, CNTK_TWIN_WEIGHT_DECAY, cntk_cifar_case,
                             cntk_cifar_parameters)
from ._runner import Case

__all__ = ["Workload", "WORKLOADS", "WORKLOAD_ALIASES", "workload_name", "STADYN_MODES",
           "ALL_STADYN_MODES", "TORCH_MODES", "ALL_TORCH_MODES", "cifar_layer_names"]

STADYN_MODES = ("dynamic", "static", "compiled", "static-bf16")
TORCH_MODES = ("eager", "compile", "eager-cl", "compile-cl")
#: Every mode a Stadyn case runs in (``compiled-bf16`` is timed only when asked for).
ALL_STADYN_MODES = STADYN_MODES + ("compiled-bf16",)
#: Every mode a PyTorch twin runs in (the bf16 ones are timed only when asked for).
ALL_TORCH_MODES = TORCH_MODES + ("eager-bf16", "eager-cl-bf16")


@dataclass
class Workload:
    """A network, its batch and optimizer, buildable in every mode."""

    name: str
    description: str
    batch_size: int
    input_shape: tuple[int, ...]
    n_classes: int
    make_model: Callable[[], Callable[[Variable], Variable]]
    twin: Callable[[dict[str, torch.Tensor]], nn.Module]
    solver: Callable[[], S.Solver]
    torch_optimizer: Callable[[list[torch.nn.Parameter]], torch.optim.Optimizer]
    input_scale: float = 1.0
    #: The Stadyn modes it runs in.
    modes: tuple[str, ...] = ALL_STADYN_MODES
    #: The PyTorch twin modes it runs in.
    torch_modes: tuple[str, ...] = ALL_TORCH_MODES
    #: A workload driven through another front end builds its cases and initial parameters
    #: itself: ``(mode, batch, seed) -> Case`` and ``seed -> parameters``.
    front_end_case: Callable[..., Case] | None = None
    front_end_parameters: Callable[[int], dict[str, torch.Tensor]] | None = None
    #: Built from a BrainScript config: its untrained ``[1]`` constants (those cntk.exe makes for
    #: number operands, ``_rmse.z``, and ``Constant {}``) are not initial parameters.
    from_brainscript: bool = False

    def batch(self, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.RandomState(seed)
        x = rng.uniform(0, self.input_scale,
                        (self.batch_size,) + self.input_shape).astype(np.float32)
        t = rng.randint(0, self.n_classes, (self.batch_size, 1)).astype(np.int32)
        return x, t

    # -- Stadyn ---------------------------------------------------------------------------------
    def stadyn_case(self, mode: str, seed: int = 0) -> Case:
        if mode not in self.modes:
            raise ValueError(f"unknown Stadyn mode {mode!r} for {self.name}; expected one of "
                             f"{self.modes}")
        if self.front_end_case is not None:
            return self.front_end_case(mode, self.batch(seed), seed)
        start = time.perf_counter()
        registry = ParameterRegistry()
        seed_all(seed)
        xb, tb = self.batch(seed)
        x, t = Variable(xb.shape), Variable(tb.shape)
        x.d, t.d = xb, tb
        solver = self.solver()
        ctx = context("cpu", dtype="bfloat16" if mode.endswith("bf16") else "float32")
        model = self.make_model()
        with parameter_registry(registry), context_scope(ctx):
            loss = F.mean(F.softmax_cross_entropy(model(x), t))
            solver.set_parameters(get_parameters())
            with training(False), torch.no_grad():
                loss.forward()
            first = float(loss.d)
            if mode == "dynamic":
                def step():
                    with parameter_registry(registry):
                        with auto_forward():
                            dyn = F.mean(F.softmax_cross_entropy(model(x), t))
                        solver.set_parameters(get_parameters(), reset=False, retain_state=True)
                        solver.zero_grad()
                        dyn.backward(clear_buffer=True)
                        solver.update()
            elif mode.startswith("static"):
                def step():
                    with context_scope(ctx):
                        loss.forward(clear_no_need_grad=True)
                        solver.zero_grad()
                        loss.backward(clear_buffer=True)
                        solver.update()
            else:
                compiled = compile_step(loss, solver)

                def step():
                    with context_scope(ctx):
                        compiled()
            step()
        return Case(self.name, f"stadyn-{mode}", step, time.perf_counter() - start, first)

    def initial_parameters(self, seed: int = 0) -> dict[str, torch.Tensor]:
        """The Stadyn model's initial parameters (what every case starts from)."""
        if self.front_end_parameters is not None:
            return self.front_end_parameters(seed)
        registry = ParameterRegistry()
        seed_all(seed)
        with parameter_registry(registry):
            self.make_model()(Variable((self.batch_size,) + self.input_shape))
        # every registry item (batch-norm running statistics too: the peers look them up by
        # name) but a BrainScript network's one-element constants, (1,) or (1, 1) (its number
        # operands, Normalize's featScale: its twin has no such weights)
        return {k: v.data.detach().clone() for k, v in registry.items()
                if not (self.from_brainscript and not v.need_grad and v.data.numel() == 1)}

    # -- PyTorch --------------------------------------------------------------------------------
    def torch_case(self, mode: str, seed: int = 0) -> Case:
        if mode not in ALL_TORCH_MODES:
            raise ValueError(f"unknown PyTorch mode {mode!r}; expected one of {ALL_TORCH_MODES}")
        start = time.perf_counter()
        module = self.twin(self.initial_parameters(seed))
        xb, tb = self.batch(seed)
        x = torch.from_numpy(xb)
        t = torch.from_numpy(tb[:, 0]).long()
        if "-cl" in mode:
            module = module.to(memory_format=torch.channels_last)
            x = x.contiguous(memory_format=torch.channels_last)
        opt = self.torch_optimizer(list(module.parameters()))
        module.eval()
        with torch.no_grad():
            first = float(nn.functional.cross_entropy(module(x), t))
        module.train()
        forward, opt_step = module, opt.step
        if mode.startswith("compile"):
            forward = torch.compile(module)
            opt_step = torch.compile(opt.step)
        half = mode.endswith("bf16")

        def step():
            with torch.autocast("cpu", torch.bfloat16, enabled=half):
                loss = nn.functional.cross_entropy(forward(x), t)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt_step()
        step()
        return Case(self.name, f"torch-{mode}", step, time.perf_counter() - start, first)


# ---------------------------------------------------------------------------------------------
# Twins
# ---------------------------------------------------------------------------------------------
def _linear(w: torch.Tensor, b: torch.Tensor) -> nn.Linear:
    """An ``nn.Linear`` holding Stadyn's ``(*in, out)`` weight (transposed to ``(out, in)``)."""
    w = w.reshape(-1, w.shape[-1])
    layer = nn.Linear(w.shape[0], w.shape[1])
    with torch.no_grad():
        layer.weight.copy_(w.t())
        layer.bias.copy_(b)
    return layer


def _conv(w: torch.Tensor, b: torch.Tensor, padding: int) -> nn.Conv2d:
    conv = nn.Conv2d(w.shape[1], w.shape[0], tuple(w.shape[2:]), padding=padding)
    with torch.no_grad():
        conv.weight.copy_(w)
        conv.bias.copy_(b.reshape(-1))   # a CNTK layer's bias is (out, 1, 1)
    return conv


class _DigitsCNNTwin(nn.Module):
    """PyTorch eager twin of :func:`stadyn.models.digits_cnn`."""

    def __init__(self, params: dict[str, torch.Tensor]):
        super().__init__()
        names = ["conv1"] + [f"conv{i + 2}" for i in range(10)] + ["conv_last"]
        layers: list[nn.Module] = []
        for name in names:
            w = params[f"cnn/{name}/conv/W"]
            layers += [_conv(w, params[f"cnn/{name}/conv/b"], 1),
                       nn.BatchNorm2d(w.shape[0], eps=1e-5, momentum=0.1), nn.Tanh()]
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


def cifar_layer_names(params: dict) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The ``(weight, bias)`` names of the CIFAR ConvNet's convolutions and dense layers in
    ``params``, each list in the order made: the Python layers' names (``convolution/W``) or
    BrainScript's, named after cntk.exe's nodes (``model.arrayOfFunctions[1].W``).  A name
    ending in ``W`` is a weight, the same name ending in ``b`` its bias; a (C, 1, 1) bias makes
    it a convolution, a (C,) one a dense layer.  The twins and the peers' specs use this rule.

    Example:
        >>> import numpy as np
        >>> p = {}
        >>> for i in (1, 3, 6, 8, 11, 14, 17):
        ...     p[f"m[{i}].W"] = np.zeros(1)
        ...     p[f"m[{i}].b"] = np.zeros((4, 1, 1) if i < 10 else 4)
        >>> convs, dense = cifar_layer_names(p)
        >>> convs[1], dense[2]
        (('m[3].W', 'm[3].b'), ('m[17].W', 'm[17].b'))
    """
    weights = [k[:-1] for k in params if k.endswith(("/W", ".W"))]
    missing = [n + "b" for n in weights if n + "b" not in params]
    if missing:
        raise ValueError(f"CIFAR ConvNet parameters: no bias {missing} for their weights")
    convs = [(n + "W", n + "b") for n in weights if len(params[n + "b"].shape) == 3]
    dense = [(n + "W", n + "b") for n in weights if len(params[n + "b"].shape) == 1]
    if len(convs) != 4 or len(dense) != 3:
        raise ValueError(f"CIFAR ConvNet parameters: expected 4 convolutions and 3 dense layers, "
                         f"found {len(convs)} and {len(dense)} in {sorted(params)}")
    return convs, dense


class _CifarTwin(nn.Module):
    """Twin of CNTK's CIFAR-10 ConvNet (:func:`stadyn.models.cifar_convnet`); with
    ``pool_padding=0``, of the BrainScript ConvNet_CIFAR10_DataAug (unpadded pooling)."""

    def __init__(self, params: dict[str, torch.Tensor], pool_padding: int = 1):
        super().__init__()
        convs, dense = cifar_layer_names(params)
        c = [_conv(params[w], params[b], 1) for w, b in convs]
        p = pool_padding
        self.features = nn.Sequential(c[0], nn.ReLU(), c[1], nn.ReLU(), nn.MaxPool2d(3, 2, p),
                                      c[2], nn.ReLU(), c[3], nn.ReLU(), nn.MaxPool2d(3, 2, p),
                                      nn.Flatten())
        d = [_linear(params[w], params[b]) for w, b in dense]
        self.classifier = nn.Sequential(d[0], nn.ReLU(), nn.Dropout(0.5), d[1], nn.ReLU(),
                                        nn.Dropout(0.5), d[2])

    def forward(self, x):
        return self.classifier(self.features(x * 0.00390625))


def _cifar_model() -> Callable[[Variable], Variable]:
    """One stack of layer objects (applied again in dynamic mode, it reuses its parameters)."""
    net = cifar_convnet_layers()
    return lambda x: net(F.mul_scalar(x, 0.00390625))


_CIFAR_CNTK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests",
                           "fixtures", "brainscript", "ConvNet_CIFAR10_DataAug.cntk")


def _cifar_bs_model(pad_pooling: bool = False) -> Callable[[Variable], Variable]:
    """The network of CNTK's ConvNet_CIFAR10_DataAug.cntk (its ``model`` member), built from the
    config by Stadyn's BrainScript library on the first call (in the caller's parameter
    registry), reapplied after that; Dropout takes the config's ``dropoutRate``.

    ``pad_pooling`` adds ``pad = true`` to the config's two ``MaxPoolingLayer``s: the Python
    model's architecture (:func:`stadyn.models.cifar_convnet`: its ``default_options(pad=True)``
    pads pooling too), built from BrainScript — the like-for-like parity case against the
    ``cifar`` workload."""
    from ..brainscript import StadynLibrary, build_network, load_config, per_epoch, run_config
    cmd = run_config(load_config(os.environ.get("STADYN_CIFAR_CNTK", _CIFAR_CNTK))).commands[0]
    source = cmd.network
    if pad_pooling:
        plain = "MaxPoolingLayer {(3:3), stride = (2:2)}"
        if source.text.count(plain) != 2:
            raise ValueError(f"{source.path}: expected two '{plain}' layers to pad")
        source = type(source)(source.text.replace(plain, plain[:-1] + ", pad = true}"),
                              source.path, source.line, source.column)
    built: list = []

    def model(x: Variable) -> Variable:
        if not built:
            library = StadynLibrary(per_epoch(cmd.sgd.dropout_rate, 0))
            built.append(build_network(source, library).record["model"])
        return built[0](x)
    return model


WORKLOADS: dict[str, Workload] = {
    "digits-cnn": Workload(
        "digits-cnn", "the deep CNN of NNabla's static-vs-dynamic tutorial (12 conv+BN+tanh, 8x8 "
        "digits), batch 16, Adam 1e-3", 16, (1, 8, 8),
        10, lambda: digits_cnn, _DigitsCNNTwin, lambda: S.Adam(alpha=1e-3),
        lambda ps: torch.optim.Adam(ps, lr=1e-3), input_scale=16.0),
    "mlp": Workload(
        "mlp", "MLP 64-256-256-10 on digits, batch 16, Adam 1e-3 (overhead-bound)", 16, (1, 8, 8),
        10, lambda: digits_mlp, _MLPTwin, lambda: S.Adam(alpha=1e-3),
        lambda ps: torch.optim.Adam(ps, lr=1e-3), input_scale=16.0),
    "cifar": Workload(
        "cifar", "CNTK's CIFAR-10 ConvNet (4 conv, 3 dense, dropout), synthetic 3x32x32, batch 64, "
        "momentum SGD 0.01/0.9", 64, (3, 32, 32), 10, _cifar_model, _CifarTwin,
        lambda: S.Momentum(lr=0.01, momentum=0.9),
        lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9), input_scale=255.0),
    "cifar-bs": Workload(
        "cifar-bs", "ConvNet_CIFAR10_DataAug.cntk's network from BrainScript (unpadded pooling: "
        "949,834 parameters), synthetic 3x32x32, batch 64, momentum SGD 0.01/0.9", 64,
        (3, 32, 32), 10, _cifar_bs_model, lambda p: _CifarTwin(p, pool_padding=0),
        lambda: S.Momentum(lr=0.01, momentum=0.9),
        lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9), input_scale=255.0,
        from_brainscript=True),
    "cifar-bs-pad": Workload(
        "cifar-bs-pad", "ConvNet_CIFAR10_DataAug.cntk's network with pad = true on its pooling: "
        "the cifar workload's architecture (1,195,594 parameters) from BrainScript, synthetic "
        "3x32x32, batch 64, momentum SGD 0.01/0.9", 64, (3, 32, 32), 10,
        lambda: _cifar_bs_model(pad_pooling=True), _CifarTwin,
        lambda: S.Momentum(lr=0.01, momentum=0.9),
        lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9), input_scale=255.0,
        from_brainscript=True),
    "cifar-cntk": Workload(
        "cifar-cntk", "CNTK's CIFAR-10 ConvNet written and trained as the CNTK seed script does "
        "(stadyn.compat.cntk: Trainer.train_minibatch, momentum_sgd with per-sample rates, "
        "momentum time constants and L2, the metric), synthetic 3x32x32, batch 64; the twin: "
        f"SGD {CNTK_TWIN_LR:g}, weight decay {CNTK_TWIN_WEIGHT_DECAY:g} (the script's first "
        "epochs: no momentum)", 64, (3, 32, 32), 10, lambda: None, _CifarTwin, lambda: None,
        lambda ps: torch.optim.SGD(ps, lr=CNTK_TWIN_LR, weight_decay=CNTK_TWIN_WEIGHT_DECAY),
        input_scale=255.0, modes=CNTK_MODES, front_end_case=cntk_cifar_case,
        front_end_parameters=cntk_cifar_parameters),
}

# The sequence workload (its own interface: Stadyn's dynamic/static modes, torch eager).
from ._sequence_workload import lstm_classifier  # noqa: E402
WORKLOADS["lstm"] = lstm_classifier()  # type: ignore[assignment]
from ._tagger_workload import lstm_tagger  # noqa: E402
WORKLOADS["lstm-tagger"] = lstm_tagger()  # type: ignore[assignment]

#: Earlier names of workloads, still accepted (``stadyn bench seed2`` is ``digits-cnn``).
WORKLOAD_ALIASES: dict[str, str] = {"seed2": "digits-cnn"}


def workload_name(name: str) -> str:
    """The workload ``name`` stands for: itself, or the one it is an earlier name of.

    Example:
        >>> workload_name("seed2"), workload_name("cifar")
        ('digits-cnn', 'cifar')
    """
    return WORKLOAD_ALIASES.get(name, name)
