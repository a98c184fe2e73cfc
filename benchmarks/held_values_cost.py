"""What deciding which Variables the program holds costs (``graph/_held_values.py``): the
check alone on a chain of N ops (``held_variables``: the count of references, or before it
the search of the call stack), and the median of a training step of a 10-layer MLP (64 wide,
batch 32: ``forward(clear_no_need_grad=True)``, ``backward(clear_buffer=True)``, update, the
error read from ``pred.d``), static and dynamic (the graph defined anew each step, so each
step's forward builds a plan and checks once), on CPU.

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/held_values_cost.py
    PYTHONPATH=/tmp/base/src OMP_NUM_THREADS=1 python benchmarks/held_values_cost.py  # before

Measured (nnheld against bbd61c07, a shared 2-core machine whose load varied, three runs
of each, alternating; the ranges):

    check, chain of     30 ops       300 ops       3000 ops
    count (nnheld)      16-41 us     133-448 us    1.5-3.5 ms  (0.5-1.2 us an op: its edges)
    search (bbd61c07)   28-35 us     18-80 us      9-12 us     (the stack's frames only)

    step, median        static          dynamic
    count (nnheld)      1.15-1.27 ms    3.3-8.9 ms
    search (bbd61c07)   1.20-1.23 ms    7.6-11.3 ms    (the same within this machine's noise)

A static plan counts when it is built (a build of 3,000 ops takes seconds), not each step;
counting each step instead would cost 0.5-1.2 us an op of every step, which is why a static plan
still decides at build time.
"""

import inspect
import time

import numpy as np

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
import stadyn.compat.nnabla.parametric_functions as PF
import stadyn.compat.nnabla.solvers as S
from stadyn.graph import Subgraph
from stadyn.graph import _held_values

COUNTS = "nodes" in inspect.signature(_held_values.held_variables).parameters


def check_us(n: int) -> float:
    h = nn.Variable((4, 8))
    for _ in range(n):
        h = F.tanh(h)
    nodes = Subgraph([h]).nodes
    call = (lambda: _held_values.held_variables(nodes)) if COUNTS \
        else _held_values.held_variables
    call()
    reps = max(3, 20000 // n)
    start = time.perf_counter()
    for _ in range(reps):
        call()
    return (time.perf_counter() - start) / reps * 1e6


def step_ms(dynamic: bool, steps: int = 60) -> float:
    nn.clear_parameters()
    rng = np.random.RandomState(0)
    x = nn.Variable.from_numpy_array(rng.randn(32, 64).astype(np.float32))
    t = nn.Variable.from_numpy_array(rng.randint(0, 10, (32, 1)))

    def define():
        h = x
        for i in range(10):
            h = F.relu(PF.affine(h, 64, name=f"l{i}"))
        pred = PF.affine(h, 10, name="out")
        return pred, F.mean(F.softmax_cross_entropy(pred, t))

    if not dynamic:
        pred, loss = define()
    solver, times = None, []
    for _ in range(steps):
        start = time.perf_counter()
        if dynamic:
            with nn.auto_forward():
                pred, loss = define()
        if solver is None:
            solver = S.Sgd(0.01)
            solver.set_parameters(nn.get_parameters())
        solver.zero_grad()
        loss.forward(clear_no_need_grad=True)
        loss.backward(clear_buffer=True)
        solver.update()
        float((pred.d.argmax(1) != t.d.ravel()).mean())
        times.append(time.perf_counter() - start)
    return float(np.median(times[10:])) * 1e3


if __name__ == "__main__":
    print("held_variables:", "count of references" if COUNTS else "stack search")
    for n in (30, 300, 3000):
        print(f"check, chain of {n} ops: {check_us(n):9.1f} us")
    print(f"step static  (median): {step_ms(False):.3f} ms")
    print(f"step dynamic (median): {step_ms(True):.3f} ms")
