"""Cost of NNabla's gradient-order arrangements (``graph/_ordered_sums.py``: three or more
readers' parts in NNabla's order, parts added onto a ``.g`` not zeroed;
``graph/_written_leaves.py``: leaves written between a dynamic forward and its backward) in
whole training steps, alternating in one process (nngrad44):

* ``A``: both patched out (null contexts at every call site: the dynamic backward, the eager
  plan, a static plan's joint trace);
* ``B``: as Stadyn runs them.

Steps (batch 64, ``S.Adam``, ``zero_grad`` / ``forward`` / ``backward(clear_buffer=True)`` /
``update``): NNabla's tutorial CNN on 1x28x28 images (``PF.convolution`` 16 and 32 5x5 with
``F.max_pooling`` and ``F.relu``, ``PF.affine`` 50 and 10) and an MLP (784-256-256-10,
``F.tanh``), each static (a plan traced under its own side: the template cache cleared between
the two builds) and dynamic.

    PYTHONPATH=src python benchmarks/nnabla_ordered_sums_step_ab.py [--rounds 7] [--steps 15]
        [--threads 1]

Prints the median time of a step for A and B (ms) and B/A, and the time the two take by
themselves for one dynamic backward of each model (entering and leaving their contexts over
its nodes, nothing arranged: no value in these models has three readers), in microseconds.
"""

import argparse
import contextlib
import statistics

import numpy as np
import torch

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
import stadyn.compat.nnabla.parametric_functions as PF
import stadyn.compat.nnabla.solvers as S
from stadyn.graph import _autograd_backward, _eager_plan, _plan, _plan_reuse, topological_nodes
from stadyn.graph._ordered_sums import ordered_sums
from stadyn.graph._shared_values import value_holder
from stadyn.graph._written_leaves import written_leaves

from nnabla_half_elementwise_ab import _median_ms

_SITES = [(_autograd_backward, "ordered_sums"), (_autograd_backward, "written_leaves"),
          (_eager_plan, "ordered_sums"), (_plan, "ordered_sums")]


@contextlib.contextmanager
def _nothing(*_, **__):
    yield {}


@contextlib.contextmanager
def _side(a: bool):
    kept = [getattr(m, n) for m, n in _SITES]
    try:
        if a:
            for m, n in _SITES:
                setattr(m, n, _nothing)
        yield
    finally:
        for (m, n), f in zip(_SITES, kept):
            setattr(m, n, f)


def _cnn(x):
    h = F.relu(F.max_pooling(PF.convolution(x, 16, (5, 5), name="c1"), (2, 2)))
    h = F.relu(F.max_pooling(PF.convolution(h, 32, (5, 5), name="c2"), (2, 2)))
    return PF.affine(F.relu(PF.affine(h, 50, name="f1")), 10, name="f2")


def _mlp(x):
    h = F.tanh(PF.affine(x, 256, name="l1"))
    h = F.tanh(PF.affine(h, 256, name="l2"))
    return PF.affine(h, 10, name="l3")


def _model(net, dynamic, scope):
    rs = np.random.RandomState(0)
    shape = (64, 1, 28, 28) if net is _cnn else (64, 784)
    with nn.parameter_scope(scope):
        x = nn.Variable.from_numpy_array(rs.randn(*shape).astype(np.float32))
        t = nn.Variable.from_numpy_array(rs.randint(0, 10, (64, 1)))
        solver = S.Adam(1e-3)

        def build():
            return F.mean(F.softmax_cross_entropy(net(x), t))
        loss = None if dynamic else build()
        solver.set_parameters(nn.get_parameters() if loss is not None else _params(build))

    def step():
        with nn.parameter_scope(scope):
            with nn.auto_forward(dynamic):
                y = build() if dynamic else loss
                solver.zero_grad()
                if not dynamic:
                    y.forward(clear_no_need_grad=True)
                y.backward(clear_buffer=True)
                solver.update()
    return step


def _params(build):
    with nn.auto_forward(True):
        build()
    return nn.get_parameters()


def _contexts_us(net):
    shape = (64, 1, 28, 28) if net is _cnn else (64, 784)
    rs = np.random.RandomState(0)
    with nn.parameter_scope("alone"), nn.auto_forward(True):
        x = nn.Variable.from_numpy_array(rs.randn(*shape).astype(np.float32))
        t = nn.Variable.from_numpy_array(rs.randint(0, 10, (64, 1)))
        y = F.mean(F.softmax_cross_entropy(net(x), t))
    nodes = topological_nodes([y])

    def enter():
        with ordered_sums(y.parent, nodes, lambda v: value_holder(v)._data, None, True), \
                written_leaves(nodes):
            pass
    return statistics.median(_median_ms(enter, 200) for _ in range(5)) * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for name, net in (("tutorial CNN", _cnn), ("MLP", _mlp)):
        for dynamic in (False, True):
            steps = {}
            for side in ("A", "B"):
                _plan_reuse.clear()
                with _side(side == "A"):
                    steps[side] = _model(net, dynamic, side)
                    for _ in range(3):          # (a static plan traced under its side)
                        steps[side]()
            a, b = [], []
            for _ in range(args.rounds):
                with _side(True):
                    a.append(_median_ms(steps["A"], args.steps))
                b.append(_median_ms(steps["B"], args.steps))
            ma, mb = statistics.median(a), statistics.median(b)
            print(f"{name:12s} {'dynamic' if dynamic else 'static ':7s}: A without "
                  f"{ma:7.2f} ms  B with {mb:7.2f} ms  B/A {mb / ma:5.3f}")
        print(f"{name:12s} the two contexts alone, one dynamic backward: "
              f"{_contexts_us(net):6.1f} us")


if __name__ == "__main__":
    main()
