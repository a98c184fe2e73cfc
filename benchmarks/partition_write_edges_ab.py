"""A/B in one run: what following in-place writes costs a static plan's forward/backward split
(``graph/_partition.py``, ``_write_edges``), against the split that followed data edges only
(as it was at 4ca7ecba, which lost the gradient a kernel's backward wrote through views).

    PYTHONPATH=src python benchmarks/partition_write_edges_ab.py [--layers 400] [--rounds 5]

Traces the joint program of a residual tanh stack (``layers`` steps: about 12 ATen nodes a
step) and splits it with the write edges turned off and on, the two taking turns each round;
reports the median over rounds in milliseconds by process CPU time, and the time of
``_write_edges`` alone.  The results hold for the machine it runs on.
"""

import argparse
import gc
import statistics
import time

import torch
from torch.fx.experimental.proxy_tensor import make_fx

import stadyn.graph._partition as P


def _joint(layers):
    def joint(x, w, g):
        h = x
        for _ in range(layers):
            h = torch.tanh(h @ w) + h
        y = h.sum()
        dw, = torch.autograd.grad(y, w, g)
        return y, dw
    return joint


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    gm = make_fx(_joint(args.layers))(torch.ones(4, 8), torch.ones(8, 8, requires_grad=True),
                                      torch.tensor(1.0))
    real = P._write_edges
    times = {"data edges only (4ca7ecba)": [], "with write edges": [], "_write_edges alone": []}
    turns = [("data edges only (4ca7ecba)", lambda graph: {}), ("with write edges", real)]
    gc.disable()        # (as a plan's build runs: graph/_tracing.py collector_paused)
    for k in range(args.rounds):
        for label, edges in turns[::1 if k % 2 else -1]:
            P._write_edges = edges
            start = time.process_time()
            P.partition(gm, 2, 1)
            times[label].append(time.process_time() - start)
        P._write_edges = real
        start = time.process_time()
        real(gm.graph)
        times["_write_edges alone"].append(time.process_time() - start)
    print(f"{len(gm.graph.nodes)} nodes, median of {args.rounds} rounds:")
    for label, ts in times.items():
        print(f"  {label}: {statistics.median(ts) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
