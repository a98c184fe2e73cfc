"""A/B of a static plan's layout on the bench workloads: CPU time per training step, interleaved.

    PYTHONPATH=src python benchmarks/layout_ab.py cifar:static,cifar:nchw-static,cifar:torch-eager \
        --rounds 5 --threads 1 --steps 2

Each spec is ``workload:mode``: a Stadyn mode of ``stadyn bench`` (``static``, ``static-bf16``,
``compiled``, ...), the same with the layout planning switched off (``nchw-static``: every plan
stays NCHW) or without its batch-norm/average-pooling exclusion (``cl-static``), the same
without the plans' fused and in-place ReLU and reshaped-product buffers (``base-static``: the
plans of ``c9caf47``), or a PyTorch twin (``torch-eager``, ``torch-eager-cl``, ...).  Prints the
median wall time, process CPU time and count of minor page faults per step.  On a machine
shared with other jobs the CPU time of a one-thread run moves far less than the wall time (a
descheduled process does not accumulate it), which is why the layout rule was measured this
way (docs/performance.md).
"""

import argparse
import resource
import statistics
import time

import torch

import stadyn.compile._step as compiled_step
import stadyn.graph._layout as layout
import stadyn.graph._passes as passes
import stadyn.graph._plan as plan
from stadyn.bench import WORKLOADS


def _nchw(*_):
    return frozenset()


def _no_reuse(gm):
    return 0


def _whole_products_only(gm, leaves):
    """``write_products_into_buffers`` as it was: a product behind a reshape is left alone."""
    saved = passes._product_behind_view
    passes._product_behind_view = lambda n: n
    try:
        return _write_products(gm, leaves)
    finally:
        passes._product_behind_view = saved


_write_products = plan.write_products_into_buffers


def build(spec: str):
    name, mode = spec.split(":")
    w = WORKLOADS[name]
    if mode.startswith("torch-"):
        return w.torch_case(mode[len("torch-"):]).step
    if mode.startswith("nchw-"):
        saved = plan.plan_layout, compiled_step.plan_layout
        plan.plan_layout = compiled_step.plan_layout = _nchw
        try:
            return w.stadyn_case(mode[len("nchw-"):]).step
        finally:
            plan.plan_layout, compiled_step.plan_layout = saved
    if mode.startswith("base-"):
        saved = plan.reuse_dead_inputs, plan.fuse_convolution_relu, plan.write_products_into_buffers
        plan.reuse_dead_inputs = plan.fuse_convolution_relu = _no_reuse
        plan.write_products_into_buffers = _whole_products_only
        try:
            return w.stadyn_case(mode[len("base-"):]).step
        finally:
            (plan.reuse_dead_inputs, plan.fuse_convolution_relu,
             plan.write_products_into_buffers) = saved
    if mode.startswith("cl-"):
        saved = layout._KEEP_NCHW
        layout._KEEP_NCHW = frozenset()
        try:
            return w.stadyn_case(mode[len("cl-"):]).step
        finally:
            layout._KEEP_NCHW = saved
    return w.stadyn_case(mode).step


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("specs")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=2, help="steps per case per round")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    cases = {s: build(s) for s in a.specs.split(",")}
    for step in cases.values():
        step()
        step()
    wall = {s: [] for s in cases}
    cpu = {s: [] for s in cases}
    faults = {s: [] for s in cases}
    for _ in range(a.rounds):
        for s, step in cases.items():
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(a.steps):
                step()
            wall[s].append((time.perf_counter() - t0) / a.steps)
            cpu[s].append((time.process_time() - c0) / a.steps)
            faults[s].append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / a.steps)
    for s in cases:
        print(f"{s:30s} wall {1e3 * statistics.median(wall[s]):8.1f} ms   "
              f"cpu {1e3 * statistics.median(cpu[s]):8.1f} ms   "
              f"page faults {statistics.median(faults[s]):8.0f}")


if __name__ == "__main__":
    main()
