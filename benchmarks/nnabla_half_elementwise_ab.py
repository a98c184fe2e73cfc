"""Cost of NNabla 1.39's ``Half`` expressions of element-wise functions
(``ops/_half_elementwise.py``), alternating in one process on the kernels alone:

* half: forward + backward of ``tanh``, ``sigmoid``, ``pow_scalar`` and ``div2`` on float16
  CPU tensors of ``--size`` elements, ``A`` the op's torch implementation and autograd
  formula (what Stadyn computed before nnhalf41, and what its own float16 graphs compute
  since rmnnhalf41: its unwrapped ``impl``), ``B`` the wrapped implementation called with
  ``half_formula=True`` as a node of NNabla's ``cpu:half`` calls it (NNabla's expressions,
  every ``Half`` step rounded);
* float32: one call of the wrapped and of the unwrapped implementation on a float32 tensor of
  8 elements (the wrapper's test of ``half_formula``, all it adds outside NNabla's
  ``cpu:half``);
* a bias added to a (16, 16, 28, 28) float16 input, forward + backward: ``A`` torch's
  (the bias gradient summed in float, rounded once), ``B`` NNabla's fold of 12,544 float
  gradients per channel, rounded after each addition;
* that fold alone (``_fold_impl``) on the bias's (12544, 16) gradients: ``A`` the row-by-row
  NumPy loop Stadyn ran before nnhalf42, ``B`` the fold now (float16 values, ``add2``'s: one
  ``add.accumulate``; float values, ``mul2``'s ``dy * x``: a row at a time into kept
  buffers), checked bit for bit against ``A``.

    PYTHONPATH=src python benchmarks/nnabla_half_elementwise_ab.py [--size 262144]
        [--rounds 7] [--threads 1]

Prints the median wall time of each (ms for the half runs, us for the float32 calls).
"""

import argparse
import statistics
import time

import numpy as np
import torch

from stadyn.ops import CATALOG
from stadyn.ops._half_elementwise import _fold_impl

OPS = {"tanh": (1, {}), "sigmoid": (1, {}), "pow_scalar": (1, {"val": 1.69921875}),
       "div2": (2, {})}


def _inputs(n_inputs, size, dtype):
    g = torch.Generator().manual_seed(0)
    return [(torch.rand(size, generator=g) * 2 + 0.1).to(dtype).requires_grad_()
            for _ in range(n_inputs)]


def _step(fn, xs, attrs, dy):
    y = fn(*xs, **attrs)
    torch.autograd.backward(y, dy)


def _median_ms(fn, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=1 << 18)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for name, (n, attrs) in OPS.items():
        wrapped = CATALOG[name].impl
        plain = wrapped.__wrapped__
        xs = _inputs(n, args.size, torch.float16)
        dy = torch.ones(args.size, dtype=torch.float16)
        a, b = [], []
        for _ in range(args.rounds):
            a.append(_median_ms(lambda: _step(plain, xs, attrs, dy), 5))
            b.append(_median_ms(lambda: _step(wrapped, xs, {**attrs, "half_formula": True},
                                              dy), 5))
        small = _inputs(n, 8, torch.float32)
        fas, fbs = [], []
        with torch.no_grad():        # 1000 calls: the median time in ms is us per call
            for _ in range(args.rounds):
                fas.append(_median_ms(lambda: [plain(*small, **attrs) for _ in range(1000)], 3))
                fbs.append(_median_ms(lambda: [wrapped(*small, **attrs) for _ in range(1000)],
                                      3))
        fa, fb = statistics.median(fas), statistics.median(fbs)
        print(f"{name:11s} float16 fwd+bwd of {args.size}: A torch {statistics.median(a):7.2f} ms"
              f"  B NNabla Half {statistics.median(b):7.2f} ms | float32 call of 8: "
              f"A {fa:5.2f} us  B {fb:5.2f} us")
    bias_add(args.rounds)
    fold(args.rounds)


def _loop_fold(cols):
    """The fold as Stadyn computed it before nnhalf42 (a row at a time, fresh arrays)."""
    a = cols.detach().contiguous().numpy()
    acc = np.zeros(a.shape[1], np.float16)
    with np.errstate(over="ignore"):
        for row in a:
            acc = (acc.astype(np.float32) + row).astype(np.float16)
    return torch.from_numpy(acc)


def fold(rounds):
    g = torch.Generator().manual_seed(1)
    half = torch.randn(12544, 16, generator=g).half().float()
    product = half * torch.randn(12544, 16, generator=g).half().float()
    for name, cols in (("add2's float16", half), ("mul2's float", product)):
        assert torch.equal(_fold_impl(cols).view(torch.int16),
                           _loop_fold(cols).view(torch.int16))
        a, b = [], []
        for _ in range(rounds):
            a.append(_median_ms(lambda: _loop_fold(cols), 3))
            b.append(_median_ms(lambda: _fold_impl(cols), 3))
        print(f"fold of (12544, 16) {name:14s} values: A loop {statistics.median(a):7.2f} ms"
              f"  B now {statistics.median(b):7.2f} ms (same bits)")


def bias_add(rounds):
    wrapped = CATALOG["add2"].impl
    plain = wrapped.__wrapped__
    x, = _inputs(1, 16 * 16 * 28 * 28, torch.float16)
    x = x.detach().reshape(16, 16, 28, 28).requires_grad_()
    b = torch.zeros(1, 16, 1, 1, dtype=torch.float16, requires_grad=True)
    dy = torch.ones(16, 16, 28, 28, dtype=torch.float16)
    a, c = [], []
    for _ in range(rounds):
        a.append(_median_ms(lambda: _step(plain, [x, b], {}, dy), 3))
        c.append(_median_ms(lambda: _step(wrapped, [x, b], {"half_formula": True}, dy), 3))
    print(f"add2 bias   float16 fwd+bwd of (16, 16, 28, 28) + (1, 16, 1, 1): A torch "
          f"{statistics.median(a):7.2f} ms  B NNabla fold {statistics.median(c):7.2f} ms")


if __name__ == "__main__":
    main()
