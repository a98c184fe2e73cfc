"""MXNet peer for ``stadyn bench --peers``: the benchmark networks in MXNet Gluon, imperative and
hybridized.

A standalone script run by :mod:`stadyn.bench._peers` with the Python of a separate virtual
environment (MXNet 1.9.1 needs numpy < 1.24, which Stadyn's environment cannot have).  It imports
only the standard library, numpy and MXNet, never Stadyn.

    python mxnet_peer.py --spec SPEC.npz --modes imperative hybridized --warmup 3 --rounds 5 \
        --per-round 4

The spec (written by the Stadyn process, ``.npz`` or ``.json``) holds the batch (``__x__``,
``__t__``), the initial parameters under Stadyn's names and a JSON metadata string
(``__meta__``: workload name, network, solver).  For each mode the script builds the network as
Gluon blocks, loads those parameters (affine weights transposed from Stadyn's ``(in, out)``),
computes the loss on the batch in inference (batch norm on the running statistics, no dropout)
-- it must equal Stadyn's first loss, which shows the network is the same -- then times training
steps with a Gluon ``Trainer`` (``adam`` or ``sgd`` with momentum), interleaving the modes round
by round, and prints one JSON line per mode::

    {"workload": "digits-cnn", "mode": "mxnet-hybridized", "ms": 12.3, "first_loss": 2.31,
     "version": "1.9.1", "setup_s": 0.4}

Modes: ``imperative`` runs the blocks eagerly under ``autograd.record``; ``hybridized`` is the
same network after ``hybridize(static_alloc=True, static_shape=True)`` (the loss included).
Every step ends with ``mx.nd.waitall()``: MXNet's engine is asynchronous, so without it a step
would be timed before its work is done.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from _peer_common import run_peer

import mxnet as mx
from mxnet import autograd, gluon
from mxnet.gluon import nn

MODES = ("imperative", "hybridized")


# ---------------------------------------------------------------------------------------------
# Networks: each returns the block and its bindings [(Stadyn name, Gluon Parameter, transform)]
# ---------------------------------------------------------------------------------------------
def _same(a: np.ndarray) -> np.ndarray:
    return a


def _flat(a: np.ndarray) -> np.ndarray:
    """Batch-norm statistics and CNTK-layer biases: Stadyn's (1, C, 1, 1) or (C, 1, 1) to
    Gluon's (C,)."""
    return a.reshape(-1)


def _transposed(a: np.ndarray) -> np.ndarray:
    """Affine weights: Stadyn's (*in, out) to Gluon's Dense (out, in) (Gluon flattens its
    input in the same C, H, W order)."""
    return np.ascontiguousarray(a.reshape(-1, a.shape[-1]).T)


def _conv(net, bindings, w_name: str, b_name: str, w: np.ndarray, padding: int = 1) -> None:
    """Add a Conv2D shaped like the weight ``w`` (out, in, kh, kw) and bind the spec's
    ``w_name`` and ``b_name`` to its weight and bias."""
    conv = nn.Conv2D(w.shape[0], w.shape[2:], padding=padding, in_channels=w.shape[1])
    net.add(conv)
    bindings += [(w_name, conv.weight, _same), (b_name, conv.bias, _flat)]


def _dense(net, bindings, w_name: str, b_name: str, w: np.ndarray, activation=None) -> None:
    """Add a Dense (flattening its input) shaped like the weight ``w`` (*in, out) and bind the
    spec's ``w_name`` and ``b_name`` to its weight and bias."""
    dense = nn.Dense(w.shape[-1], activation=activation, in_units=int(np.prod(w.shape[:-1])))
    net.add(dense)
    bindings += [(w_name, dense.weight, _transposed), (b_name, dense.bias, _same)]


def digits_cnn(params: dict[str, np.ndarray], meta: dict):
    """The deep CNN of NNabla's static-vs-dynamic tutorial: 12 x (conv 3x3 pad 1, batch norm
    (momentum 0.9, eps 1e-5), tanh) with 64, 10 x 128 and 512 maps, 2x2 average pooling, dense
    1024 + tanh, dense 10."""
    net, bindings = nn.HybridSequential(), []
    for name in ["conv1"] + [f"conv{i + 2}" for i in range(10)] + ["conv_last"]:
        w = params[f"cnn/{name}/conv/W"]
        _conv(net, bindings, f"cnn/{name}/conv/W", f"cnn/{name}/conv/b", w)
        bn = nn.BatchNorm(axis=1, momentum=0.9, epsilon=1e-5, in_channels=w.shape[0])
        net.add(bn, nn.Activation("tanh"))
        bindings += [(f"cnn/{name}/bn/gamma", bn.gamma, _flat),
                     (f"cnn/{name}/bn/beta", bn.beta, _flat),
                     (f"cnn/{name}/bn/mean", bn.running_mean, _flat),
                     (f"cnn/{name}/bn/var", bn.running_var, _flat)]
    net.add(nn.AvgPool2D(2))
    for name, activation in (("cnn/fc/affine", "tanh"), ("cnn/classifier/affine", None)):
        _dense(net, bindings, f"{name}/W", f"{name}/b", params[f"{name}/W"], activation)
    return net, bindings


def digits_mlp(params: dict[str, np.ndarray], meta: dict):
    """MLP 64-256-256-10 with ReLU."""
    net, bindings = nn.HybridSequential(), []
    for name, activation in (("mlp/fc1/affine", "relu"), ("mlp/fc2/affine", "relu"),
                             ("mlp/out/affine", None)):
        _dense(net, bindings, f"{name}/W", f"{name}/b", params[f"{name}/W"], activation)
    return net, bindings


def cifar_convnet(params: dict[str, np.ndarray], meta: dict):
    """CNTK's CIFAR-10 ConvNet: x * scale, 2 x (conv 3x3/64 pad 1 + ReLU twice, max-pool 3x3
    stride 2 with the spec's ``pool_padding``), dense 256 and 128 with ReLU and dropout, dense
    10; the spec's ``conv_layers`` and ``dense_layers`` name each layer's ``[weight, bias]`` in
    order (Stadyn's Python layers or BrainScript's nodes name them differently)."""
    missing = [k for k in ("conv_layers", "dense_layers") if k not in meta]
    if missing:
        raise SystemExit(f"mxnet_peer: the spec's cifar_convnet lacks {missing} (which "
                         f"parameter is which layer's); write it with this Stadyn")
    scale = float(meta.get("input_factor", 1.0))
    pad = int(meta.get("pool_padding", 1))
    rate = float(meta.get("dropout", 0.5))
    net, bindings = nn.HybridSequential(), []
    net.add(nn.HybridLambda(lambda F, x: x * scale))
    for i, (w, b) in enumerate(meta["conv_layers"]):
        _conv(net, bindings, w, b, params[w])
        net.add(nn.Activation("relu"))
        if i % 2 == 1:
            net.add(nn.MaxPool2D(pool_size=3, strides=2, padding=pad))
    dense = meta["dense_layers"]
    for w, b in dense[:-1]:
        _dense(net, bindings, w, b, params[w], "relu")
        net.add(nn.Dropout(rate))
    w, b = dense[-1]
    _dense(net, bindings, w, b, params[w])
    return net, bindings


NETWORKS = {"digits_cnn": digits_cnn, "digits_mlp": digits_mlp, "cifar_convnet": cifar_convnet}


class TrainLoss(gluon.HybridBlock):
    """``net`` followed by the mean softmax cross entropy against integer labels, one block (so
    hybridizing it compiles the loss too)."""

    def __init__(self, net, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.net = net
            self.ce = gluon.loss.SoftmaxCrossEntropyLoss()

    def hybrid_forward(self, F, x, t):
        return F.mean(self.ce(self.net(x), t))


def build_net(meta: dict, params: dict[str, np.ndarray]):
    """The loss block for the spec's network with the spec's parameters loaded; fails if a
    Gluon parameter is left unbound or a spec parameter unused."""
    if meta["network"] not in NETWORKS:
        raise SystemExit(f"mxnet_peer: unknown network {meta['network']!r} in the spec")
    net, bindings = NETWORKS[meta["network"]](params, meta)
    block = TrainLoss(net)
    block.initialize(mx.init.Zero(), ctx=mx.cpu())
    bound = {id(p) for _, p, _ in bindings}
    unbound = [p.name for p in block.collect_params().values() if id(p) not in bound]
    unused = sorted(set(params) - {n for n, _, _ in bindings})
    if unbound or unused:
        raise SystemExit(f"mxnet_peer: parameters do not match the spec: unbound {unbound}, "
                         f"unused {unused}")
    for name, param, transform in bindings:
        value = transform(params[name])
        if tuple(param.shape) != value.shape:
            raise SystemExit(f"mxnet_peer: {name}: spec shape {value.shape}, "
                             f"Gluon shape {tuple(param.shape)}")
        param.set_data(mx.nd.array(value, dtype=np.float32))
    return block


def make_trainer(meta: dict, block) -> gluon.Trainer:
    """Gluon's Trainer with the spec's solver: ``adam`` (lr, beta1, beta2, eps: MXNet's Adam is
    NNabla's form, the bias correction folded into the step size) or ``momentum`` (SGD: lr,
    momentum).  The loss is already a batch mean, so steps use ``batch_size=1``."""
    s = meta["solver"]
    if s["name"] == "adam":
        return gluon.Trainer(block.collect_params(), "adam",
                             {"learning_rate": float(s["lr"]), "beta1": float(s.get("beta1", 0.9)),
                              "beta2": float(s.get("beta2", 0.999)),
                              "epsilon": float(s.get("eps", 1e-8))})
    if s["name"] == "momentum":
        return gluon.Trainer(block.collect_params(), "sgd",
                             {"learning_rate": float(s["lr"]), "momentum": float(s["momentum"])})
    raise SystemExit(f"mxnet_peer: unknown solver {s['name']!r} in the spec")


# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------
def build_case(mode: str, meta: dict, xb: np.ndarray, tb: np.ndarray,
               params: dict[str, np.ndarray]):
    """Set up ``mode`` with its own copy of the network: returns ``(step, first_loss,
    setup_s)``, after one step."""
    if mode not in MODES:
        raise SystemExit(f"mxnet_peer: unknown mode {mode!r}; expected one of {MODES}")
    start = time.perf_counter()
    block = build_net(meta, params)
    if mode == "hybridized":
        block.hybridize(static_alloc=True, static_shape=True)
    x = mx.nd.array(xb, dtype=np.float32)
    t = mx.nd.array(tb.reshape(-1), dtype=np.float32)
    first = float(block(x, t).asnumpy())   # outside autograd.record: inference mode
    trainer = make_trainer(meta, block)

    def step():
        # Gluon's grad_req="write" overwrites the gradients in each backward: no zero_grad.
        with autograd.record():
            loss = block(x, t)
        loss.backward()
        trainer.step(1)
        mx.nd.waitall()
    step()
    return step, first, time.perf_counter() - start


def main(argv=None) -> int:
    """Parse the command line, build and time every requested mode, print one JSON line each."""
    return run_peer("mxnet", MODES, build_case, mx.__version__, argv)


if __name__ == "__main__":
    sys.exit(main())
