"""Where a training step of the tutorial's digits CNN goes on the CPU, and how fast its
convolutions run against the CPU's product rate.

Prints the step's process CPU time (``stadyn bench``'s ``digits-cnn`` case, a mode given by
``--mode``: ``static``, ``dynamic``, ``torch-eager`` ...), the ``torch.profiler`` table of a
few steps grouped by op and input shape, then the two convolution shapes of the network timed
alone (batch 16, 8x8, 3x3, pad 1; forward, and forward + both gradients) with oneDNN, with ATen's
own kernel (``torch.backends.mkldnn`` off, restored after), channels-last, and as unfold + one
product, beside a 1024^3 ``sgemm`` for the CPU's product rate.

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/digits_cnn_profile.py --mode static
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as Fn


def cpu_ms(fn, n: int = 10) -> float:
    for _ in range(2):
        fn()
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n * 1e3


def profile_step(mode: str, steps: int) -> None:
    from torch.profiler import ProfilerActivity, profile

    from stadyn.bench import WORKLOADS
    w = WORKLOADS["digits-cnn"]
    case = w.torch_case(mode[len("torch-"):]) if mode.startswith("torch-") else w.stadyn_case(mode)
    print(f"digits-cnn {mode}: {cpu_ms(case.step):.1f} ms of CPU per step")
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(steps):
            case.step()
    print(prof.key_averages(group_by_input_shape=True).table(
        sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=40,
        max_shapes_column_width=60))


def convolutions() -> None:
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    ms = cpu_ms(lambda: a @ b)
    print(f"sgemm 1024^3: {ms:.2f} ms, {2 * 1024 ** 3 / ms / 1e6:.0f} GFLOP/s")
    for cin, cout in ((128, 128), (128, 512)):
        gflop = 16 * 64 * cin * cout * 9 * 2 / 1e9
        x = torch.randn(16, cin, 8, 8, requires_grad=True)
        w = torch.randn(cout, cin, 3, 3, requires_grad=True)
        bias = torch.randn(cout, requires_grad=True)
        g = torch.randn(16, cout, 8, 8)
        xc = x.detach().to(memory_format=torch.channels_last).requires_grad_()
        wc = w.detach().to(memory_format=torch.channels_last).requires_grad_()
        gc = g.to(memory_format=torch.channels_last)

        def unfold(x=x, w=w, bias=bias, cin=cin, cout=cout):
            cols = Fn.unfold(x, 3, padding=1).permute(1, 0, 2).reshape(cin * 9, 16 * 64)
            y = (w.view(cout, -1) @ cols).view(cout, 16, 8, 8).permute(1, 0, 2, 3)
            return y + bias.view(1, -1, 1, 1)

        kinds = {"oneDNN": (lambda: Fn.conv2d(x, w, bias, padding=1), x, w, g, True),
                 "ATen (mkldnn off)": (lambda: Fn.conv2d(x, w, bias, padding=1), x, w, g, False),
                 "channels-last": (lambda: Fn.conv2d(xc, wc, bias, padding=1), xc, wc, gc, True),
                 "unfold + one mm": (unfold, x, w, g, True)}
        for name, (fwd, xi, wi, gi, mkldnn) in kinds.items():
            with torch.backends.mkldnn.flags(enabled=mkldnn):
                f = cpu_ms(fwd)
                fb = cpu_ms(lambda: torch.autograd.grad(fwd(), (xi, wi, bias), gi))
            print(f"{cin}->{cout} {name:18s} forward {f:6.2f} ms ({gflop / f * 1e3:4.0f} GFLOP/s)"
                  f"  forward+backward {fb:6.2f} ms ({3 * gflop / fb * 1e3:4.0f} GFLOP/s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", default="static")
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    profile_step(args.mode, args.steps)
    convolutions()


if __name__ == "__main__":
    main()
