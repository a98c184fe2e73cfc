"""The ``cifar-cntk`` workload: CNTK's CIFAR-10 ConvNet driven through :mod:`stadyn.compat.cntk`
exactly as the CNTK seed script (tests/fixtures/seeds/cntk_cifar10_dataaug.py) drives it.

The network is built with the script's calls (``input_variable``, ``element_times`` by the
1/256 constant, ``default_options(activation=relu, pad=True)``, ``Sequential`` of
``LayerStack`` layers, ``cross_entropy_with_softmax`` and ``classification_error``), trained with
``momentum_sgd`` on the script's per-sample learning-rate schedule, momentum time constants and
L2 weight, through ``Trainer.train_minibatch({input: images, label: one-hot})`` — the script's
whole per-minibatch path, metric included.  The synthetic minibatch is fed as NumPy arrays, as
a reader gives them.
"""

from __future__ import annotations

import time

import numpy as np

from .._random import seed as seed_all
from ..graph import context, context_scope, training
from ..parametric import ParameterRegistry, parameter_registry
from ._runner import Case

__all__ = ["cntk_cifar_case", "cntk_cifar_parameters", "CNTK_MODES", "CNTK_TWIN_LR",
           "CNTK_TWIN_WEIGHT_DECAY"]

#: The Stadyn modes the CNTK-driven workload runs in (a CNTK graph is static: no dynamic mode).
CNTK_MODES = ("static", "compiled", "static-bf16", "compiled-bf16")
# The script's first epochs: 0.0015625 per sample (x 64 samples, on a mean loss: 0.1), momentum
# time constant 0 (no momentum), L2 0.002 per sample (on a mean loss: weight decay 0.002).
_LR_PER_SAMPLE = [0.0015625] * 20 + [0.00046875] * 20 + [0.00015625] * 20 + [0.000046875] * 10 \
    + [0.000015625]
_MOMENTUM_TIME_CONSTANT = [0] * 20 + [600] * 20 + [1200]
_L2 = 0.002
_EPOCH_SIZE = 50000
#: The hand-written PyTorch equivalent of the script's first-epoch update on a mean loss.
CNTK_TWIN_LR = 0.0015625 * 64
CNTK_TWIN_WEIGHT_DECAY = _L2


def _network():
    """The seed script's network, loss and metric (its own calls)."""
    from ..compat import cntk
    input_var = cntk.ops.input_variable((3, 32, 32))
    label_var = cntk.ops.input_variable((10))
    scaled_input = cntk.ops.element_times(cntk.ops.constant(0.00390625), input_var)
    with cntk.layers.default_options(activation=cntk.ops.relu, pad=True):
        z = cntk.models.Sequential([
            cntk.models.LayerStack(2, lambda: [
                cntk.layers.Convolution((3, 3), 64),
                cntk.layers.Convolution((3, 3), 64),
                cntk.layers.MaxPooling((3, 3), (2, 2))
            ]),
            cntk.models.LayerStack(2, lambda i: [
                cntk.layers.Dense([256, 128][i]),
                cntk.layers.Dropout(0.5)
            ]),
            cntk.layers.Dense(10, activation=None)
        ])(scaled_input)
    ce = cntk.ops.cross_entropy_with_softmax(z, label_var)
    pe = cntk.ops.classification_error(z, label_var)
    return input_var, label_var, z, ce, pe


def cntk_cifar_parameters(seed: int = 0) -> dict:
    """The initial parameters of the script's network built after ``seed`` (the twin's).

    Example:
        >>> params = cntk_cifar_parameters()
        >>> len(params), sum(p.numel() for p in params.values())
        (14, 1195594)
    """
    registry = ParameterRegistry()
    seed_all(seed)
    with parameter_registry(registry):
        _network()
    return {k: v.data.detach().clone() for k, v in registry.items()}


def cntk_cifar_case(mode: str, batch: tuple[np.ndarray, np.ndarray], seed: int = 0) -> Case:
    """A timed case: one ``trainer.train_minibatch`` of the script per step, in ``mode``
    (:data:`CNTK_MODES`; ``compiled`` is ``Trainer(..., compile=True)``); ``batch`` is the
    images and their class ids.

    Example:
        >>> rng = np.random.RandomState(0)
        >>> batch = (rng.uniform(0, 255, (4, 3, 32, 32)).astype(np.float32),
        ...          rng.randint(0, 10, (4, 1)))
        >>> case = cntk_cifar_case("static", batch)
        >>> case.mode, bool(abs(case.first_loss - np.log(10)) < 0.2)   # untrained: ~ln 10
        ('stadyn-static', True)
    """
    if mode not in CNTK_MODES:
        raise ValueError(f"the cifar-cntk workload runs in {', '.join(CNTK_MODES)}, not "
                         f"{mode!r} (a CNTK graph is static)")
    from ..compat import cntk
    start = time.perf_counter()
    ctx = context("cpu", dtype="bfloat16" if mode.endswith("bf16") else "float32")
    xb, tb = batch
    labels = np.eye(10, dtype=np.float32)[tb[:, 0]]
    registry = ParameterRegistry()
    seed_all(seed)
    with parameter_registry(registry), context_scope(ctx):
        input_var, label_var, z, ce, pe = _network()
        lr_schedule = cntk.learning_rate_schedule(_LR_PER_SAMPLE, unit=cntk.learner.UnitType.sample,
                                                  epoch_size=_EPOCH_SIZE)
        mm_schedule = cntk.learner.momentum_as_time_constant_schedule(_MOMENTUM_TIME_CONSTANT,
                                                                      epoch_size=_EPOCH_SIZE)
        learner = cntk.learner.momentum_sgd(z.parameters, lr_schedule, mm_schedule,
                                            l2_regularization_weight=_L2)
        trainer = cntk.Trainer(z, ce, pe, learner, compile=mode.startswith("compiled"))
        with training(False):
            first = float(np.mean(ce.eval({input_var: xb, label_var: labels})))

    def step():
        with context_scope(ctx):
            trainer.train_minibatch({input_var: xb, label_var: labels})
    step.trainer = trainer          # for inspection
    step()
    return Case("cifar-cntk", f"stadyn-{mode}", step, time.perf_counter() - start, first)
