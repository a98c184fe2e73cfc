"""A/B: the digits CNN's training step (batch 16, Adam) with ATen's fused batch norm against
NNabla's order of operations (``ops/_kernels.py: batch_norm_nnabla``, what Stadyn runs), in one
process, interleaved rounds, static and dynamic modes.

    PYTHONPATH=src python benchmarks/batch_norm_ab.py [--threads 1] [--rounds 12]
"""

import argparse
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as TF

import stadyn as sd
import stadyn.functions as F
import stadyn.solvers as S
from stadyn.models import digits_cnn
from stadyn.ops import _nn

NEW = _nn._bn_core


def aten_core(x, beta, gamma, mean, variance, decay_rate, eps, batch_stat):
    """The kernel Stadyn used before: ATen's fused ``x * scale + shift``."""
    flat = [None if t is None else t.reshape(-1) for t in (mean, variance, gamma, beta)]
    return TF.batch_norm(x, *flat, bool(batch_stat), 1.0 - decay_rate, eps)


def make_step(core, dynamic, xb, tb):
    _nn._bn_core = core
    reg = sd.ParameterRegistry()
    with sd.parameter_registry(reg):
        sd.seed(0)
        x, t = sd.Variable.from_numpy_array(xb), sd.Variable.from_numpy_array(tb)
        with sd.auto_forward(dynamic):
            loss = F.mean(F.softmax_cross_entropy(digits_cnn(x), t))
        solver = S.Adam(1e-3)
        solver.set_parameters(sd.get_parameters())

    def step():
        nonlocal loss
        _nn._bn_core = core
        with sd.parameter_registry(reg):
            if dynamic:
                with sd.auto_forward():
                    loss = F.mean(F.softmax_cross_entropy(digits_cnn(x), t))
            else:
                loss.forward()
            solver.zero_grad()
            loss.backward()
            solver.update()
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=12)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rs = np.random.RandomState(0)
    xb, tb = rs.rand(16, 1, 8, 8).astype(np.float32), rs.randint(0, 10, (16, 1))
    for dynamic in (False, True):
        steps = {"aten": make_step(aten_core, dynamic, xb, tb),
                 "nnabla": make_step(NEW, dynamic, xb, tb)}
        times = {k: [] for k in steps}
        for step in steps.values():
            for _ in range(3):
                step()
        for _ in range(args.rounds):
            for k, step in steps.items():
                t0 = time.perf_counter()
                for _ in range(3):
                    step()
                times[k].append((time.perf_counter() - t0) / 3 * 1e3)
        mode = "dynamic" if dynamic else "static"
        for k, ts in times.items():
            print(f"{mode:8s} {k:7s} median {statistics.median(ts):7.1f} ms/step")
        ratio = statistics.median(b / a for a, b in zip(times["aten"], times["nnabla"]))
        print(f"{mode:8s} nnabla/aten (median of per-round ratios) {ratio:.3f}")
    _nn._bn_core = NEW


if __name__ == "__main__":
    main()
