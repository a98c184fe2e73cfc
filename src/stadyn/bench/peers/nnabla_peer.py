"""NNabla peer for ``stadyn bench --peers``: the benchmark networks in NNabla, static and dynamic.

A standalone script run by :mod:`stadyn.bench._peers` with the Python of a separate virtual
environment (NNabla 1.39's wheels exist only for Python <= 3.10).  It imports only the standard
library, numpy and NNabla, never Stadyn.

    python nnabla_peer.py --spec SPEC.npz --modes static dynamic --warmup 3 --rounds 5 \
        --per-round 4

The spec (written by the Stadyn process, ``.npz`` or ``.json``) holds the batch (``__x__``,
``__t__``), the initial parameters under Stadyn's names (NNabla's names for the digits CNN and
the MLP) and a JSON metadata string (``__meta__``: workload name, network, solver; for the CIFAR
ConvNet, which parameters are which layer's).  For each
mode the script builds the network, loads those parameters, computes the loss on the batch in
inference (batch norm on the running statistics, no dropout) -- it must equal Stadyn's first
loss, which shows the network is the same -- then times training steps with NNabla's own solver,
interleaving the modes round by round, and prints one JSON line per mode::

    {"workload": "digits-cnn", "mode": "nnabla-static", "ms": 123.4, "first_loss": 2.31,
     "version": "1.39.0", "setup_s": 0.2}

Modes: ``static`` builds the graph once and replays it (``forward(clear_no_need_grad=True)``,
``zero_grad``, ``backward(clear_buffer=True)``, ``update``); ``dynamic`` rebuilds it every step
under ``nn.auto_forward()``.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from _peer_common import run_peer

import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S

MODES = ("static", "dynamic")


# ---------------------------------------------------------------------------------------------
# Networks (the same as Stadyn's; see stadyn/bench/_workloads.py for the PyTorch twins)
# ---------------------------------------------------------------------------------------------
def digits_cnn(x, train: bool):
    """The deep CNN of NNabla's static-vs-dynamic tutorial: 12 x (conv 3x3 pad 1, batch norm,
    tanh) with 64, 10 x 128 and 512 maps, 2x2 average pooling, affine 1024 + tanh, affine 10;
    NNabla's parametric functions (so NNabla's parameter names, which Stadyn's are)."""
    def block(h, maps):
        h = PF.convolution(h, maps, (3, 3), pad=(1, 1))
        return F.tanh(PF.batch_normalization(h, batch_stat=train))

    with nn.parameter_scope("cnn"):
        with nn.parameter_scope("conv1"):
            h = block(x, 64)
        for i in range(10):
            with nn.parameter_scope(f"conv{i + 2}"):
                h = block(h, 128)
        with nn.parameter_scope("conv_last"):
            h = block(h, 512)
            h = F.average_pooling(h, (2, 2))
        with nn.parameter_scope("fc"):
            h = F.tanh(PF.affine(h, 1024))
        with nn.parameter_scope("classifier"):
            return PF.affine(h, 10)


def digits_mlp(x, train: bool):
    """MLP 64-256-256-10 with ReLU (``mlp/fc1``, ``mlp/fc2``, ``mlp/out``)."""
    with nn.parameter_scope("mlp"):
        h = x
        for i, n in enumerate((256, 256)):
            with nn.parameter_scope(f"fc{i + 1}"):
                h = F.relu(PF.affine(h, n))
        with nn.parameter_scope("out"):
            return PF.affine(h, 10)


def cifar_convnet(x, train: bool, layers: dict, pool_padding: int = 1, dropout: float = 0.5,
                  scale: float = 1.0):
    """CNTK's CIFAR-10 ConvNet: x * scale, 2 x (conv 3x3/64 pad 1 + ReLU twice, max-pool 3x3
    stride 2 with ``pool_padding``), dense 256 and 128 with ReLU and dropout (training only),
    dense 10.  ``layers`` is the spec's metadata, whose ``conv_layers`` and ``dense_layers``
    name each layer's ``[weight, bias]`` in order (Stadyn's Python layers or BrainScript's
    nodes name them differently); registered beforehand by :func:`register_parameters`."""
    params = nn.get_parameters(grad_only=False)

    def weight_bias(pair):
        w, b = (params[name] for name in pair)
        if len(b.shape) > 1:
            # Stadyn's convolution bias is (C, 1, 1), as CNTK's; NNabla's kernel wants (C,).
            b = F.reshape(b, (b.size,))
        return w, b

    def dense_weight_bias(pair):
        w, b = weight_bias(pair)
        if len(w.shape) > 2:
            # A dense layer over (C, H, W) keeps CNTK's (C, H, W, out) weight; NNabla's
            # affine reads the first axis alone as its input: (C*H*W, out).
            w = F.reshape(w, (w.size // w.shape[-1], w.shape[-1]))
        return w, b

    convs, dense = layers["conv_layers"], layers["dense_layers"]
    h = F.mul_scalar(x, scale)
    p = (pool_padding, pool_padding)
    for i, pair in enumerate(convs):
        h = F.relu(F.convolution(h, *weight_bias(pair), pad=(1, 1)))
        if i % 2 == 1:
            h = F.max_pooling(h, (3, 3), (2, 2), pad=p)
    for pair in dense[:-1]:
        h = F.relu(F.affine(h, *dense_weight_bias(pair)))
        if train:
            h = F.dropout(h, dropout)
    return F.affine(h, *dense_weight_bias(dense[-1]))


def make_network(meta: dict):
    """The network function ``f(x, train) -> logits`` named by the spec's metadata."""
    kind = meta["network"]
    if kind == "digits_cnn":
        return digits_cnn
    if kind == "digits_mlp":
        return digits_mlp
    if kind == "cifar_convnet":
        missing = [k for k in ("conv_layers", "dense_layers") if k not in meta]
        if missing:
            raise SystemExit(f"nnabla_peer: the spec's cifar_convnet lacks {missing} (which "
                             f"parameter is which layer's); write it with this Stadyn")
        return lambda x, train: cifar_convnet(x, train, meta, int(meta.get("pool_padding", 1)),
                                              float(meta.get("dropout", 0.5)),
                                              float(meta.get("input_factor", 1.0)))
    raise SystemExit(f"nnabla_peer: unknown network {kind!r} in the spec")


def make_solver(meta: dict):
    """NNabla's solver named by the spec: ``adam`` (lr, beta1, beta2, eps) or ``momentum`` (lr,
    momentum)."""
    s = meta["solver"]
    if s["name"] == "adam":
        return S.Adam(alpha=float(s["lr"]), beta1=float(s.get("beta1", 0.9)),
                      beta2=float(s.get("beta2", 0.999)), eps=float(s.get("eps", 1e-8)))
    if s["name"] == "momentum":
        return S.Momentum(lr=float(s["lr"]), momentum=float(s["momentum"]))
    raise SystemExit(f"nnabla_peer: unknown solver {s['name']!r} in the spec")


def register_parameters(params: dict[str, np.ndarray]) -> None:
    """Create every parameter in the current scope from the given arrays; batch-norm running
    statistics (``.../mean``, ``.../var``) without gradients, as NNabla's PF creates them."""
    for name, value in params.items():
        need_grad = not name.endswith(("/mean", "/var"))
        nn.parameter.get_parameter_or_create(name, value.shape, value.copy(), need_grad)


def check_parameters(params: dict[str, np.ndarray]) -> None:
    """Fail if building the network created parameters beyond the spec's (a name mismatch)."""
    made = set(nn.get_parameters(grad_only=False))
    if made != set(params):
        raise SystemExit(f"nnabla_peer: the network's parameters differ from the spec's: "
                         f"extra {sorted(made - set(params))}, "
                         f"unused {sorted(set(params) - made)}")


def loss_of(net, x, t, train: bool):
    """Mean softmax cross entropy of ``net(x)`` against integer labels ``t`` of shape (B, 1)."""
    return F.mean(F.softmax_cross_entropy(net(x, train), t))


# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------
def build_case(mode: str, meta: dict, xb: np.ndarray, tb: np.ndarray,
               params: dict[str, np.ndarray]):
    """Set up ``mode`` in its own parameter scope (``static`` and ``dynamic`` each train their
    own copy of the parameters): returns ``(step, first_loss, setup_s)``, after one step."""
    start = time.perf_counter()
    net = make_network(meta)
    x, t = nn.Variable(xb.shape), nn.Variable(tb.shape)
    x.d, t.d = xb, tb
    solver = make_solver(meta)
    with nn.parameter_scope(f"peer_{mode}"):
        register_parameters(params)
        with nn.auto_forward(False):
            test_loss = loss_of(net, x, t, train=False)
        check_parameters(params)
        test_loss.forward(clear_buffer=True)
        first = float(test_loss.d)
        solver.set_parameters(nn.get_parameters())
        if mode == "static":
            with nn.auto_forward(False):
                loss = loss_of(net, x, t, train=True)

            def step():
                loss.forward(clear_no_need_grad=True)
                solver.zero_grad()
                loss.backward(clear_buffer=True)
                solver.update()
        elif mode == "dynamic":
            def step():
                with nn.parameter_scope(f"peer_{mode}"):
                    with nn.auto_forward():
                        dyn = loss_of(net, x, t, train=True)
                    solver.zero_grad()
                    dyn.backward(clear_buffer=True)
                    solver.update()
        else:
            raise SystemExit(f"nnabla_peer: unknown mode {mode!r}; expected one of {MODES}")
    step()
    return step, first, time.perf_counter() - start


def main(argv=None) -> int:
    """Parse the command line, build and time every requested mode, print one JSON line each."""
    return run_peer("nnabla", MODES, build_case, nn.__version__, argv)


if __name__ == "__main__":
    sys.exit(main())
