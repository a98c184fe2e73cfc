"""What recording each op's creation line costs in dynamic mode (docs/performance.md).

Times the bench's MLP workload (digits MLP 64-256-256-10, batch 16, Adam: the overhead-bound
one) and the smallest op (``F.relu`` of a 4x4 array) in dynamic mode, with node locations
recorded (Stadyn's behaviour) and with the recording replaced by a function returning None,
alternating the two in one process round by round so machine load hits both alike.

    python benchmarks/node_locations.py [--rounds 7] [--steps 50]

Prints ms per step (median over rounds) and the ratio on / off.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import stadyn as sd
import stadyn.functions as F
import stadyn.graph._apply as apply_module   # the benchmark swaps the recording out
import stadyn.solvers as S
from stadyn.models import digits_mlp


def _mlp_steps(steps: int) -> float:
    rng = np.random.default_rng(0)
    x = sd.Variable.from_numpy_array(rng.random((16, 1, 8, 8), np.float32))
    t = sd.Variable.from_numpy_array(rng.integers(0, 10, (16, 1)))
    with sd.parameter_registry(sd.ParameterRegistry()), sd.auto_forward():
        loss = F.mean(F.softmax_cross_entropy(digits_mlp(x), t))
        solver = S.Adam(alpha=1e-3)
        solver.set_parameters(sd.get_parameters())
        start = time.perf_counter()
        for _ in range(steps):
            loss = F.mean(F.softmax_cross_entropy(digits_mlp(x), t))
            solver.zero_grad()
            loss.backward()
            solver.update()
        return (time.perf_counter() - start) / steps * 1e3


def _relu_calls(calls: int) -> float:
    x = sd.Variable.from_numpy_array(np.ones((4, 4), np.float32))
    with sd.auto_forward():
        start = time.perf_counter()
        for _ in range(calls):
            F.relu(x)
        return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    recording = apply_module.user_location
    results = {("mlp", True): [], ("mlp", False): [], ("relu", True): [], ("relu", False): []}
    for _ in range(args.rounds):
        for on in (True, False):
            apply_module.user_location = recording if on else (lambda: None)
            results[("mlp", on)].append(_mlp_steps(args.steps))
            results[("relu", on)].append(_relu_calls(args.steps * 100))
    apply_module.user_location = recording
    for name, unit in (("mlp", "ms/step"), ("relu", "us/call")):
        on = statistics.median(results[(name, True)])
        off = statistics.median(results[(name, False)])
        print(f"{name:5s} locations on {on:8.3f} {unit}, off {off:8.3f} {unit}, "
              f"on/off {on / off:.3f}")


if __name__ == "__main__":
    main()
