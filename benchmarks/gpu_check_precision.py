"""GPU check of precision and of the static backward's buffer reuse (device machine).

1. Correctness on CUDA: a static graph's weight gradient equals the dynamic graph's, for an fp32
   affine large enough that the backward program writes its gradient with ``mm.out`` into a
   reused buffer, and for a bf16 context (the gradient leaves the program in bf16 and is
   converted into the fp32 buffer); the buffer is reused across steps.
2. Throughput (samples/s, batch 64) of CNTK's CIFAR-10 ConvNet and the NNabla tutorial's digits
   CNN (batch 16) in float32, bfloat16 and float16 contexts, static and compiled step + CUDA graph.

    PYTHONPATH=src python benchmarks/gpu_check_precision.py     # JSON on the last line
"""

from __future__ import annotations

import json
import time
import weakref

import numpy as np
import torch

import stadyn as sd
import stadyn.functions as F
import stadyn.parametric_functions as PF
from stadyn.bench import WORKLOADS

from gpu_check import static_step   # this folder is on sys.path when run as a script


def check_gradients(dtype: str) -> dict:
    rng = np.random.RandomState(0)
    ctx = sd.context("cuda", dtype=dtype)
    with sd.parameter_registry(sd.ParameterRegistry()), sd.context_scope(ctx):
        x = sd.Variable.from_numpy_array(rng.randn(8, 512).astype(np.float32))
        loss = F.sum(F.tanh(PF.affine(x, 1024)))
        w = sd.get_parameters()["affine/W"]
        loss.forward()
        loss.backward()
        static = w.grad.clone()
        w.grad = None
        with sd.auto_forward():
            dyn = F.sum(F.tanh(PF.affine(x, 1024)))
        dyn.backward()
        dynamic = w.grad.clone()
        w.grad = None
        loss.forward()
        loss.backward()
        previous = weakref.ref(w.grad)
        w.grad = None
        loss.forward()
        loss.backward()
        reused = w.grad is previous()
        ops = {str(n.target) for n in loss._plan.bw.graph.nodes if n.op == "call_function"}
    return {"dtype": dtype, "max_abs_diff": float((static - dynamic).abs().max()),
            "grad_dtype": str(static.dtype), "buffer_reused": bool(reused),
            "mm_out_in_backward": "aten.mm.out" in ops}


def throughput(workload: str, dtype: str, mode: str, iterations: int = 200) -> float:
    w = WORKLOADS[workload]
    xb, tb = w.batch(0)
    with sd.context_scope(sd.context("cuda", dtype=dtype)), \
            sd.parameter_registry(sd.ParameterRegistry()):
        sd.seed(0)
        model = w.make_model()
        x, t = sd.Variable(xb.shape), sd.Variable(tb.shape)
        x.d, t.d = xb, tb
        loss = F.mean(F.softmax_cross_entropy(model(x), t))
        solver = w.solver()
        solver.set_parameters(sd.get_parameters())
        step = static_step(loss, solver) if mode == "static" else sd.compile_step(loss, solver)
        for _ in range(10):
            step()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(iterations):
            step()
        torch.cuda.synchronize()
        return iterations * w.batch_size / (time.perf_counter() - start)


def main() -> None:
    report = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)}
    report["gradients"] = [check_gradients(d) for d in ("float32", "bfloat16")]
    print(json.dumps(report["gradients"]), flush=True)
    rows = {}
    for workload in ("cifar", "digits-cnn"):
        for dtype in ("float32", "bfloat16", "float16"):
            for mode in ("static", "compiled+cuda-graph"):
                try:
                    rows[f"{workload} {dtype} {mode}"] = round(throughput(workload, dtype, mode))
                except Exception as exc:  # noqa: BLE001 - report and go on
                    failed = f"failed: {type(exc).__name__}: {exc}"
                    rows[f"{workload} {dtype} {mode}"] = failed[:300]
                print(f"{workload} {dtype} {mode}: {rows[f'{workload} {dtype} {mode}']}",
                      flush=True)
    report["samples_per_s"] = rows
    print(json.dumps(report))


if __name__ == "__main__":
    main()
