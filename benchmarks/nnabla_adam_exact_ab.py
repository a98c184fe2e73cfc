"""Wall time of one NNabla ``Adam`` update over the digits CNN's 10.4 M parameters: NNabla
1.39's float32 arithmetic bit for bit (``fused=False``, the default since nnhalf39: ``B``)
against torch's fused Adam kernel (``fused=True``, the default before: ``A``), A and B
alternating in one process.

    PYTHONPATH=src python benchmarks/nnabla_adam_exact_ab.py [--steps 10] [--rounds 5]

Prints the median time of one update in ms for each, and the largest difference between the
two paths' parameters after the first round (a few units in the last place).
"""

import argparse
import statistics
import time

import numpy as np

import stadyn as sd
import stadyn.solvers as S

SHAPES = [(32, 1, 5, 5), (32,), (64, 32, 5, 5), (64,), (3136, 3136), (3136,), (3136, 10), (10,)]


def _solver(fused: bool, rs: np.random.RandomState):
    params = {"p%d" % i: sd.Variable.from_numpy_array(rs.randn(*s).astype(np.float32),
                                                      need_grad=True)
              for i, s in enumerate(SHAPES)}
    solver = S.Adam(alpha=1e-3)
    solver.fused = fused
    solver.set_parameters(params)
    for v in params.values():
        v.g = rs.randn(*v.shape).astype(np.float32)
    return solver, params


def _time(solver, steps: int) -> float:
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        solver.update()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    fused, fused_params = _solver(True, np.random.RandomState(0))
    exact, exact_params = _solver(False, np.random.RandomState(0))
    n = sum(int(np.prod(s)) for s in SHAPES)
    print("Adam update over %.1f M float32 parameters, ms (median of %d)" % (n / 1e6, args.steps))
    a, b = [], []
    for i in range(args.rounds):
        a.append(_time(fused, args.steps))
        b.append(_time(exact, args.steps))
        if i == 0:
            diff = max(float(np.abs(fused_params[k].d - exact_params[k].d).max())
                       for k in fused_params)
            print("largest difference after %d updates: %.3g" % (args.steps, diff))
    print("A fused kernel   %.2f ms" % statistics.median(a))
    print("B NNabla float32 %.2f ms" % statistics.median(b))


if __name__ == "__main__":
    main()
