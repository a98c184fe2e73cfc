"""Process CPU time of building compat.cntk graphs of element-wise ops, and of walking graphs
of ops waiting on placeholders (``_deferred``), best of several builds:

    PYTHONPATH=src python benchmarks/cntk_deferred_build.py

``chain``: 200 element-wise ops (``plus``/``element_times``) on an input of a known shape, and
on a placeholder with an inferred axis (each op checks its operands as it is called and shows
CNTK's inferred shape while it waits; each number operand is a Constant made at the call, and
the chain again over one Constant made beforehand tells what those cost); ``parts_of``: the
waiting parts of a diamond of n levels (``plus(element_times(h, 2), h)``, over a placeholder
with an inferred axis); ``leaves``: the
placeholders and arguments of a diamond ``plus(relu(h), h)`` over a placeholder of no shape.
To compare two trees, run it with each tree's ``src`` on ``PYTHONPATH`` (one after the other,
twice, on a shared machine).
"""

from __future__ import annotations

import sys
import time

import stadyn.compat.cntk as C
from stadyn.compat.cntk._deferred import parts_of


def best(fn, runs: int = 15) -> float:
    """The least process CPU time of ``runs`` calls of ``fn``, in ms."""
    times = []
    for _ in range(runs):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return 1e3 * min(times)


def chain(x, scale=0.5):
    h = x
    for k in range(200):
        h = C.plus(h, x) if k % 2 else C.element_times(h, scale)
    return h


def diamond(levels: int, inferred: bool):
    p = C.placeholder((C.InferredDimension, 3)) if inferred else C.placeholder(name="p")
    h = p
    for _ in range(levels):
        h = C.plus(C.element_times(h, 2.0), h) if inferred else C.plus(C.relu(h), h)
    return h


def main() -> None:
    sys.setrecursionlimit(100000)
    print("chain of 200, known shapes   %7.1f ms" % best(lambda: chain(C.input_variable(3))))
    print("chain of 200, inferred axis  %7.1f ms" % best(
        lambda: chain(C.placeholder((C.InferredDimension, 3)))))
    scale = C.Constant(0.5)         # (no Constant made per number operand)
    print("  the same, one Constant      %7.1f ms" % best(
        lambda: chain(C.placeholder((C.InferredDimension, 3)), scale)))
    for levels in (250, 1000):
        graph = diamond(levels, True)
        print("parts_of, diamond of %4d    %7.1f ms" % (levels, best(lambda: parts_of(graph), 3)))
    for levels in (10, 14):
        graph = diamond(levels, False)
        print("leaves, diamond of %2d        %7.1f ms" % (levels, best(
            lambda: (graph.placeholders, graph.arguments), 3)))


if __name__ == "__main__":
    main()
