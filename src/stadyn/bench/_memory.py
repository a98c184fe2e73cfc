"""Memory of a static graph's training step under NNabla's buffer flags.

For the deep digits CNN of NNabla's static-vs-dynamic tutorial at a given batch size, each
configuration runs in a fresh process (so the peak resident set size is its own) and reports:

* ``held after forward``: bytes of distinct tensor storages the graph holds between ``forward``
  and ``backward`` — filled Variables and the residuals kept for the backward program;
* ``peak RSS growth``: the process's peak resident memory during three training steps, minus
  what it held before the first step (parameters, solver state and the lowered programs are in
  the baseline).

Configurations: ``forward()`` keeping every intermediate (NNabla's default),
``forward(clear_no_need_grad=True)`` (training), and inference with ``clear_buffer=True``.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys

__all__ = ["measure_memory", "CONFIGS"]

CONFIGS = ("keep-all", "clear_no_need_grad", "inference-clear_buffer")


def _held_bytes(plan) -> int:
    seen: dict[int, int] = {}
    tensors = [v._data for v in plan.fill if v._data is not None]
    tensors += [t for t in (plan.saved or ()) if hasattr(t, "untyped_storage")]
    for t in tensors:
        storage = t.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


def _child(config: str, batch: int) -> dict:
    import numpy as np
    import torch

    from .. import functions as F
    from .. import solvers as S
    from .._random import seed
    from ..graph import Variable
    from ..models import digits_cnn
    from ..parametric import ParameterRegistry, get_parameters, parameter_registry

    torch.set_num_threads(1)
    seed(0)
    with parameter_registry(ParameterRegistry()):
        x, t = Variable((batch, 1, 8, 8)), Variable((batch, 1))
        rng = np.random.RandomState(0)
        x.d = rng.rand(batch, 1, 8, 8) * 16
        t.d = rng.randint(0, 10, (batch, 1))
        y = digits_cnn(x, test=config.startswith("inference"))
        loss = F.mean(F.softmax_cross_entropy(y, t))
        solver = S.Adam()
        solver.set_parameters(get_parameters())

        def step():
            if config == "inference-clear_buffer":
                with torch.no_grad():
                    y.forward(clear_buffer=True)
                return y._plan
            loss.forward(clear_no_need_grad=(config == "clear_no_need_grad"))
            plan = loss._plan
            held[0] = max(held[0], _held_bytes(plan))
            solver.zero_grad()
            loss.backward(clear_buffer=True)
            solver.update()
            return plan

        held = [0]
        plan = step()                       # lowers the graph; allocates solver state
        if config == "inference-clear_buffer":
            held[0] = _held_bytes(plan)
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for _ in range(3):
            step()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"config": config, "batch": batch, "held_after_forward_mb": held[0] / 2 ** 20,
            "peak_rss_growth_mb": max(0, peak - base) / 1024.0}


def measure_memory(batch: int = 256, log=print) -> list[dict]:
    """Run every configuration in its own process and print a table."""
    rows = []
    for config in CONFIGS:
        out = subprocess.run([sys.executable, "-m", "stadyn.bench._memory", config, str(batch)],
                             capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    log(f"NNabla tutorial's digits CNN, batch {batch}: memory per training step (inference: "
        "forward only)")
    log(f"  {'configuration':26s} {'held after forward':>19s} {'peak RSS growth':>16s}")
    for r in rows:
        log(f"  {r['config']:26s} {r['held_after_forward_mb']:16.1f} MB "
            f"{r['peak_rss_growth_mb']:13.1f} MB")
    return rows


if __name__ == "__main__":
    print(json.dumps(_child(sys.argv[1], int(sys.argv[2]))))
