"""Process CPU time of building compat.cntk graphs on a placeholder of a shape (and no
sequence axis), best of several builds:

    PYTHONPATH=src python benchmarks/cntk_shaped_placeholder.py

Such a placeholder waits for its binding, as one with an inferred axis does (its dynamic axes
are not known before: CNTK 2.7 binds it to a batch or a sequence), so the ops on it are built
when it is bound.  ``chain``: 200 element-wise ops (``plus``/``element_times``) on
``placeholder((3,))``: built, built and bound by ``replace_placeholders``, and evaluated once;
then the same chain reading every op's ``shape`` as it is made, and a chain of 30 ``times`` by
a (3, 3) parameter reading every shape (each one probed on stand-in inputs).  To compare two
trees, run it with each tree's ``src`` on ``PYTHONPATH`` (one after the other, twice, on a
shared machine).
"""

from __future__ import annotations

import sys
import time

import numpy as np

import stadyn.compat.cntk as C


def best(fn, runs: int = 7) -> float:
    """The least process CPU time of ``runs`` calls of ``fn``, in ms."""
    times = []
    for _ in range(runs):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return 1e3 * min(times)


def chain(x, shapes: bool = False):
    h = x
    for k in range(200):
        h = C.plus(h, x) if k % 2 else C.element_times(h, 0.5)
        if shapes:
            h.shape
    return h


def bound(evaluate: bool):
    p = C.placeholder((3,))
    x = C.input_variable(3)
    f = chain(p).replace_placeholders({p: x})
    if evaluate:
        f.eval({x: np.ones((2, 3), np.float32)})


def times_chain():
    h = C.placeholder((3,))
    for _ in range(30):
        h = C.times(h, C.parameter((3, 3), init=0.1))
        h.shape


def main() -> None:
    sys.setrecursionlimit(100000)
    print("chain of 200: built           %7.1f ms" % best(lambda: chain(C.placeholder((3,)))))
    print("  built and bound             %7.1f ms" % best(lambda: bound(False)))
    print("  built, bound, evaluated     %7.1f ms" % best(lambda: bound(True)))
    print("  each op's shape read        %7.1f ms" % best(
        lambda: chain(C.placeholder((3,)), True)))
    print("chain of 30 times, shapes     %7.1f ms" % best(times_chain, 3))


if __name__ == "__main__":
    main()
