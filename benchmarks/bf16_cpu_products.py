"""bf16 matrix products and convolutions on this CPU: ATen's bf16 kernel against fp32 and
against fp32 on upcast bf16 inputs (rounded to bf16 once), side by side, per thread count.

    OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bf16_cpu_products.py --threads 1,2

The products are those of the networks the suite trains in bf16: the NNabla tutorial's digits
CNN (batch 16: the 8192 -> 1024 affine forward and its two gradient products, a 128 -> 128 3x3
convolution on 8x8 maps, the 2x2 average pooling as a product) and CNTK's CIFAR-10 ConvNet
(batch 64: 3 -> 64 and 64 -> 64 convolutions on 32x32, 4096 -> 256 dense), plus a batched
product.  Columns, median milliseconds per call:

* ``fp32``   -- the same product on fp32 tensors (what a float32 context runs);
* ``bf16``   -- ATen's bf16 kernel on bf16 tensors (on a CPU without AVX-512 BF16/AMX or
  oneDNN's bf16 kernels: its generic fallback);
* ``upcast`` -- ``op(a.float(), b.float()).to(bfloat16)``: fp32 kernels, one rounding;
* ``stadyn`` -- what Stadyn's kernel choice runs for a bf16 product in this tree
  (``stadyn.ops._kernels``: ``linear``, ``convolution``, ``matmul`` where it exists).

``--steps`` times whole training steps of the digits CNN (``stadyn bench``'s ``digits-cnn``
workload: batch 16, Adam) instead, static and dynamic, fp32 and bf16: mean milliseconds per
step, wall and process CPU time (on a machine shared with other jobs, a one-thread run's CPU
time moves far less than its wall time).

The first lines say the CPU: ``torch.backends.cpu.get_cpu_capability()`` and oneDNN's bf16
probe.  No timing is asserted anywhere; this is a measurement to read.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as TF

from stadyn.ops import _kernels as K

BF = torch.bfloat16


def _time(fn, reps: int, budget: float) -> float:
    fn()
    times = []
    start = time.perf_counter()
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
        if time.perf_counter() - start > budget:
            break
    return statistics.median(times) * 1e3


def _conv_backward(conv, x, w, *args):
    x, w = x.detach().requires_grad_(), w.detach().requires_grad_()

    def run():
        y = conv(x, w, None, *args)
        torch.autograd.grad(y, (x, w), torch.ones_like(y))
    return run


def _stadyn_conv_backward(x, w, *args):
    x, w = x.detach().requires_grad_(), w.detach().requires_grad_()

    def run():
        y = K.convolution(TF.conv2d, x, w, None, *args)
        torch.autograd.grad(y, (x, w), torch.ones_like(y))
    return run


def _matmul(a, b):
    return K.matmul(a, b) if hasattr(K, "matmul") else torch.matmul(a, b)


def _mm(a, b):
    return K.matrix_product(a, b) if hasattr(K, "matrix_product") else torch.mm(a, b)


def cases():
    """``(name, fp32 call, bf16 call, upcast call, stadyn call)`` per product."""
    g = torch.Generator().manual_seed(0)

    def r(*shape):
        return torch.randn(*shape, generator=g)

    out = []

    def product(name, fn, stadyn, *tensors):
        half = [t.to(BF) for t in tensors]
        out.append((name, lambda: fn(*tensors), lambda: fn(*half),
                    lambda: fn(*(t.float() for t in half)).to(BF), lambda: stadyn(*half)))

    x, w, b, gy = r(16, 8192), r(8192, 1024), r(1024), r(16, 1024)
    product("digits fc addmm 16x8192 @ 8192x1024", torch.addmm, lambda b, x, w: K.linear(x, w, b),
            b, x, w)
    product("digits fc grad x: 16x1024 @ 1024x8192", lambda g, w: torch.mm(g, w.t()),
            lambda g, w: _mm(g, w.t()), gy, w)
    product("digits fc grad W: 8192x16 @ 16x1024", lambda x, g: torch.mm(x.t(), g),
            lambda x, g: _mm(x.t(), g), x, gy)
    product("digits avg-pool mm 8192x64 @ 64x16", torch.mm, _mm, r(8192, 64), r(64, 16))
    product("cifar dense addmm 64x4096 @ 4096x256", torch.addmm,
            lambda b, x, w: K.linear(x, w, b), r(256), r(64, 4096), r(4096, 256))
    product("bmm 64x64x64 @ 64x64x64", torch.bmm, _matmul, r(64, 64, 64), r(64, 64, 64))
    for name, xs, ws, args in (
            ("digits conv 128->128 3x3 on 16x8x8", (16, 128, 8, 8), (128, 128, 3, 3), (1, 1)),
            ("cifar conv 3->64 3x3 on 64x32x32", (64, 3, 32, 32), (64, 3, 3, 3), (1, 1)),
            ("cifar conv 64->64 3x3 on 64x32x32", (64, 64, 32, 32), (64, 64, 3, 3), (1, 1))):
        xt, wt = r(*xs), r(*ws)
        product(name + " fwd", lambda x, w: TF.conv2d(x, w, None, *args),
                lambda x, w: K.convolution(TF.conv2d, x, w, None, *args), xt, wt)
        xh, wh = xt.to(BF), wt.to(BF)
        out.append((name + " fwd+bwd", _conv_backward(TF.conv2d, xt, wt, *args),
                    _conv_backward(TF.conv2d, xh, wh, *args),
                    _conv_backward(lambda x, w, b, *a: TF.conv2d(x.float(), w.float(), b, *a)
                                   .to(BF), xh, wh, *args),
                    _stadyn_conv_backward(xh, wh, *args)))
    return out


def _digits_steps(n: int) -> None:
    import stadyn as sd
    import stadyn.functions as F
    from stadyn.bench import WORKLOADS

    w = WORKLOADS["digits-cnn"]
    for mode in ("static", "static-bf16", "dynamic", "dynamic-bf16"):
        if mode.startswith("static"):
            step = w.stadyn_case(mode).step
        else:           # the bench's dynamic step, in the mode's context
            ctx = sd.context("cpu", dtype="bfloat16" if mode.endswith("bf16") else "float32")
            registry, model, solver = sd.ParameterRegistry(), w.make_model(), w.solver()
            xb, tb = w.batch(0)
            x, t = sd.Variable.from_numpy_array(xb), sd.Variable.from_numpy_array(tb)
            with sd.parameter_registry(registry):
                model(x)
                solver.set_parameters(sd.get_parameters())

            def step(ctx=ctx, registry=registry, model=model, solver=solver, x=x, t=t):
                with sd.parameter_registry(registry), sd.context_scope(ctx):
                    with sd.auto_forward():
                        loss = F.mean(F.softmax_cross_entropy(model(x), t))
                    solver.zero_grad()
                    loss.backward(clear_buffer=True)
                    solver.update()
        step()
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(n):
            step()
        wall, cpu = (time.perf_counter() - wall) / n * 1e3, (time.process_time() - cpu) / n * 1e3
        print(f"digits-cnn {mode:14s} {wall:8.1f} ms/step wall {cpu:8.1f} ms/step CPU", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--budget", type=float, default=3.0,
                        help="seconds per column at most (ATen's bf16 fallback is slow)")
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    parser.add_argument("--steps", type=int, default=0,
                        help="time this many digits-CNN training steps per mode instead")
    args = parser.parse_args()
    probe = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    print(f"torch {torch.__version__}; CPU capability {torch.backends.cpu.get_cpu_capability()}; "
          f"oneDNN bf16 kernels: {probe() if probe is not None else 'unknown'}")
    if args.steps:
        for threads in (int(t) for t in args.threads.split(",")):
            torch.set_num_threads(threads)
            print(f"\n{threads} thread(s)")
            _digits_steps(args.steps)
        return
    chosen = cases()
    for threads in (int(t) for t in args.threads.split(",")):
        torch.set_num_threads(threads)
        print(f"\n{threads} thread(s); median ms per call")
        print(f"{'product':46s} {'fp32':>8s} {'bf16':>8s} {'upcast':>8s} {'stadyn':>8s} "
              f"{'bf16/fp32':>9s} {'stadyn/fp32':>11s}")
        for name, *calls in chosen:
            if args.only not in name:
                continue
            f32, b16, up, sd = (_time(c, args.reps, args.budget) for c in calls)
            print(f"{name:46s} {f32:8.2f} {b16:8.2f} {up:8.2f} {sd:8.2f} {b16 / f32:9.1f} "
                  f"{sd / f32:11.2f}", flush=True)


if __name__ == "__main__":
    main()
