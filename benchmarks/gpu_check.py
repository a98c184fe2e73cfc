"""The GPU check of issue 4, as one prepared script for the device machine.

1. NNabla's static-vs-dynamic tutorial for 30 epochs on CUDA (the tutorial's setting): static,
   static with the whole step compiled and replayed from a CUDA graph, and dynamic.
2. CNTK's CIFAR-10 ConvNet's training throughput (batch 64, synthetic 3x32x32 data, momentum
   SGD) in samples/s: Stadyn dynamic, static, the step program in a CUDA graph (uncompiled and
   compiled), and the hand-written PyTorch eager twin.

Run from the repository root with the source on the path::

    PYTHONPATH=src python benchmarks/gpu_check.py [--out DIR] [--epochs 30] [--quick]

Every figure is also written to ``DIR/gpu_check.json`` as soon as it is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import traceback

import numpy as np
import torch

import stadyn as sd
import stadyn.functions as F
import stadyn.solvers as S
from stadyn.bench import WORKLOADS
from stadyn.cli.demo import run_demo


def _save(report: dict, out: str) -> None:
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "gpu_check.json"), "w") as f:
        json.dump(report, f, indent=2)


def seed2(report: dict, out: str, epochs: int) -> None:
    lines: list[str] = []

    def log(line):
        print(line, flush=True)
        lines.append(line)
    results = run_demo(epochs=epochs, out=out, log=log, device="cuda",
                       modes=("static", "compiled", "dynamic"))
    report["seed2"] = [{"mode": r.mode, "epochs": epochs, "wall_s": r.wall,
                        "first_iter_ms": r.first_ms, "ms_per_iter": r.ms_per_iter,
                        "final_epoch_loss": r.epoch_losses[-1] if r.epoch_losses else None,
                        "held_out_accuracy": r.accuracy} for r in results]
    report["seed2_log"] = lines[-8:]


def _throughput(step, sync, iterations: int) -> float:
    for _ in range(5):
        step()
    sync()
    start = time.perf_counter()
    for _ in range(iterations):
        step()
    sync()
    return iterations * 64 / (time.perf_counter() - start)


def static_step(loss, solver):
    """One training step of a static graph with NNabla's buffer flags, as a callable."""
    def step():
        loss.forward(clear_no_need_grad=True)
        solver.zero_grad()
        loss.backward(clear_buffer=True)
        solver.update()
    return step


def seed1_throughput(report: dict, iterations: int) -> None:
    w = WORKLOADS["cifar"]
    xb, tb = w.batch(0)
    sync = torch.cuda.synchronize
    rows = {}
    ctx = sd.context("cuda")
    for mode in ("dynamic", "static", "program+cuda-graph", "compiled+cuda-graph"):
        with sd.context_scope(ctx), sd.parameter_registry(sd.ParameterRegistry()):
            sd.seed(0)
            model = w.make_model()
            x, t = sd.Variable(xb.shape), sd.Variable(tb.shape)
            x.d, t.d = xb, tb
            solver = S.Momentum(lr=0.01, momentum=0.9)
            if mode == "dynamic":
                model(x)
                solver.set_parameters(sd.get_parameters())

                def step():
                    with sd.auto_forward():
                        loss = F.mean(F.softmax_cross_entropy(model(x), t))
                    solver.zero_grad()
                    loss.backward(clear_buffer=True)
                    solver.update()
            else:
                loss = F.mean(F.softmax_cross_entropy(model(x), t))
                solver.set_parameters(sd.get_parameters())
                if mode == "static":
                    step = static_step(loss, solver)
                else:
                    step = sd.compile_step(loss, solver, compile=mode.startswith("compiled"))
            start = time.perf_counter()
            rows[f"stadyn-{mode}"] = _throughput(step, sync, iterations)
            print(f"CIFAR-10 ConvNet {mode}: {rows[f'stadyn-{mode}']:.0f} samples/s "
                  f"({time.perf_counter() - start:.0f} s incl. warm-up)", flush=True)
    twin = w.twin(w.initial_parameters(0)).cuda()
    opt = w.torch_optimizer(list(twin.parameters()))
    x = torch.from_numpy(xb).cuda()
    t = torch.from_numpy(tb[:, 0]).long().cuda()

    def torch_step():
        out = torch.nn.functional.cross_entropy(twin(x), t)
        opt.zero_grad(set_to_none=True)
        out.backward()
        opt.step()
    rows["torch-eager"] = _throughput(torch_step, sync, iterations)
    print(f"CIFAR-10 ConvNet torch eager: {rows['torch-eager']:.0f} samples/s", flush=True)
    report["seed1_samples_per_s"] = rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=os.environ.get("OUT", "runs/gpu"))
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="1 epoch, 50 iterations")
    args = parser.parse_args()
    if args.quick:
        args.epochs, args.iterations = 1, 50
    report = {"torch": torch.__version__, "cuda": torch.cuda.is_available(),
              "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
    print(report, flush=True)
    for part in (lambda: seed1_throughput(report, args.iterations),
                 lambda: seed2(report, args.out, args.epochs)):
        try:
            part()
        except Exception:          # keep what was measured; say what failed
            report.setdefault("errors", []).append(traceback.format_exc())
            print(traceback.format_exc(), flush=True)
        _save(report, args.out)
    print(json.dumps({k: v for k, v in report.items() if k != "seed2_log"}, indent=1))


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    main()
