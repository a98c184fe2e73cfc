"""Throughput of data-parallel training of the NNabla tutorial's deep digits CNN (the scaling
note in docs/distributed.md).

Run alone (one process) or under the launcher::

    OMP_NUM_THREADS=1 python -m stadyn.bench._data_parallel
    OMP_NUM_THREADS=1 python -m stadyn.distributed.run --nproc 2 -m stadyn.bench._data_parallel

Each worker trains :func:`stadyn.models.digits_cnn` (static graph, mean loss, NNabla Adam;
``--sync-bn``: with ``batch_norm="sync"``) on its own batch of ``--local-batch`` synthetic 8x8
images, with ``all_reduce_gradients(average=True)`` after each backward.  Rank 0 prints one JSON line: median milliseconds per step, of which the gradient
all-reduce, and global samples per second.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import torch

__all__: list[str] = []


def _synchronize_device(device: str) -> None:
    if device != "cpu":
        torch.cuda.synchronize()


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m stadyn.bench._data_parallel")
    parser.add_argument("--local-batch", type=int, default=16)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--sync-bn", action="store_true")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--device", default="cpu", help="cpu or cuda (GPU: LOCAL_RANK's)")
    args = parser.parse_args(argv)

    import stadyn as sd
    import stadyn.distributed as dist
    import stadyn.functions as F
    import stadyn.solvers as S
    from stadyn.models import digits_cnn

    if args.threads:
        torch.set_num_threads(args.threads)
    dist.init()
    if args.device != "cpu":
        sd.set_default_context(sd.context(args.device, dist.local_rank(), fallback=False))
    rng = np.random.RandomState(dist.rank())
    with sd.parameter_registry(sd.ParameterRegistry()):
        x = sd.Variable((args.local_batch, 1, 8, 8))
        t = sd.Variable((args.local_batch, 1), dtype=np.int32)
        y = digits_cnn(x, batch_norm="sync" if args.sync_bn else "local")
        loss = F.mean(F.softmax_cross_entropy(y, t))
        params = sd.get_parameters()
        solver = S.Adam(alpha=1e-3)
        solver.set_parameters(params)
        dp = dist.DataParallel(params)
        dp.broadcast_parameters(sd.get_parameters(grad_only=False))
        steps, reduces = [], []
        for i in range(args.warmup + args.iterations):
            x.d = rng.rand(args.local_batch, 1, 8, 8) * 16
            t.d = rng.randint(0, 10, (args.local_batch, 1))
            dp.barrier()
            _synchronize_device(args.device)
            start = time.perf_counter()
            with sd.training(True):
                loss.forward(clear_no_need_grad=True)
            solver.zero_grad()
            loss.backward(clear_buffer=True)
            _synchronize_device(args.device)
            backward_done = time.perf_counter()
            dp.all_reduce_gradients(params, average=True)
            _synchronize_device(args.device)
            reduced = time.perf_counter()
            solver.update()
            _synchronize_device(args.device)
            end = time.perf_counter()
            if i >= args.warmup:
                steps.append(end - start)
                reduces.append(reduced - backward_done)
    step = statistics.median(steps)
    result = {"workers": dp.size, "device": args.device, "threads_per_worker": torch.get_num_threads(),
              "local_batch": args.local_batch, "sync_bn": args.sync_bn,
              "ms_per_step": round(step * 1e3, 1),
              "ms_all_reduce_after_backward": round(statistics.median(reduces) * 1e3, 1),
              "samples_per_s": round(dp.size * args.local_batch / step, 1),
              "steps": args.warmup + args.iterations,
              "buckets_started_during_backward": dp.overlapped_buckets}
    if dist.is_main():
        print(json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main()
