"""LeNet (NNabla's MNIST classification example) in static mode through stadyn.compat.nnabla:
the plan's layout rule against a forced-NCHW plan, interleaved, wall and CPU time per step.

    PYTHONPATH=src python benchmarks/lenet_layout_ab.py --batch 64 --threads 2 --width 16 \\
        --in-channels 1 --depth 0 [--old-rule | --min-in-channels 1]

``--in-channels 3`` feeds colour images, ``--depth N`` adds N 3x3 convolutions after the first,
``--old-rule`` is the rule before 2026-12-02 (a grayscale net's convolutions after the first ran
channels-last), ``--min-in-channels 1`` runs every convolution channels-last, the first too.
Figures: docs/performance.md, "Channels-last on grayscale input".
"""

import argparse
import statistics
import time

import numpy as np
import torch

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
import stadyn.compat.nnabla.parametric_functions as PF
import stadyn.compat.nnabla.solvers as S
import stadyn.compile._step as compiled_step
import stadyn.graph._layout as layout
import stadyn.graph._plan as plan


def lenet(x, width: int, depth: int):
    h = F.relu(F.max_pooling(PF.convolution(x, width, (5, 5), name="conv1"), (2, 2)))
    for i in range(depth):
        h = F.relu(PF.convolution(h, width, (3, 3), pad=(1, 1), name=f"extra{i}"))
    h = F.relu(F.max_pooling(PF.convolution(h, width, (5, 5), name="conv2"), (2, 2)))
    return PF.affine(F.relu(PF.affine(h, 50, name="fc3")), 10, name="fc4")


def build(a, scope: str, nchw: bool):
    """One Adam training step of LeNet, its plan built (under a forced NCHW layout or not)."""
    rng = np.random.RandomState(0)
    with nn.parameter_scope(scope):
        x = nn.Variable((a.batch, a.in_channels, 28, 28))
        t = nn.Variable((a.batch, 1))
        loss = F.mean(F.softmax_cross_entropy(lenet(x, a.width, a.depth), t))
        solver = S.Adam(1e-3)
        solver.set_parameters(nn.get_parameters())
    x.d = rng.rand(*x.shape)
    t.d = rng.randint(0, 10, t.shape)

    def step():
        loss.forward(clear_no_need_grad=True)
        solver.zero_grad()
        loss.backward(clear_buffer=True)
        solver.update()

    saved = plan.plan_layout, compiled_step.plan_layout
    if nchw:
        plan.plan_layout = compiled_step.plan_layout = lambda *_: frozenset()
    try:
        step()
        step()
    finally:
        plan.plan_layout, compiled_step.plan_layout = saved
    return step


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--width", type=int, default=16)
    p.add_argument("--in-channels", type=int, default=1)
    p.add_argument("--depth", type=int, default=0)
    p.add_argument("--min-in-channels", type=int, default=None)
    p.add_argument("--old-rule", action="store_true")
    p.add_argument("--rounds", type=int, default=15)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    if a.min_in_channels is not None:
        layout._MIN_IN_CHANNELS = a.min_in_channels
    if a.old_rule or a.min_in_channels is not None:
        layout._single_channel_convolution = lambda node: False
    cases = {"rule": build(a, "rule", False), "nchw": build(a, "nchw", True)}
    wall = {k: [] for k in cases}
    cpu = {k: [] for k in cases}
    for _ in range(a.rounds):
        for k, step in cases.items():
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(5):
                step()
            wall[k].append((time.perf_counter() - t0) / 5)
            cpu[k].append((time.process_time() - c0) / 5)
    for k in cases:
        print(f"batch {a.batch} width {a.width} in {a.in_channels} depth {a.depth} {k:5s} "
              f"wall {1e3 * statistics.median(wall[k]):7.2f} ms  "
              f"cpu {1e3 * statistics.median(cpu[k]):7.2f} ms")


if __name__ == "__main__":
    main()
