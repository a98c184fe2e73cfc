"""A/B in one run: what ``graph/_apply._eager_value`` costs per Variable argument of a dynamic
op, as it was at 1154ef55 (no static-boundary check), as merged at f79ada94 (a call into
``_static_boundary.boundary_value`` for every op output without autograd history) and as it is
now (that call only for a static graph's output: a dynamic op's value returns at once).

    python benchmarks/eager_value_ab.py [--calls 5000] [--rounds 25]

Arguments timed: a dynamic op's output that needs no gradient, one that does, and a leaf; the
three versions take turns each round; reports the fastest round, in microseconds per call.
The results hold for the machine it runs on: rerun all in the same run to compare.
"""

import argparse
import timeit

import numpy as np

import stadyn as sd
from stadyn.graph import _apply
from stadyn.graph._apply import _value
from stadyn.graph._static_boundary import boundary_value
from stadyn.graph._variable import Variable


def before(v):
    """``_eager_value`` at 1154ef55."""
    t = _value(v)
    return Variable.data.fget(v) if t is None else t


def merged(v):
    """``_eager_value`` at f79ada94."""
    t = _value(v)
    if t is None:
        t = Variable.data.fget(v)
    return t if t.requires_grad or v.parent is None else boundary_value(v, t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=25)
    args = ap.parse_args()
    with sd.auto_forward():
        a = sd.Variable.from_numpy_array(np.ones(4))
        b = a * 2.0
        c = sd.Variable.from_numpy_array(np.ones(4), need_grad=True) * 2.0
    versions = {"1154ef55": before, "f79ada94": merged, "now": _apply._eager_value}
    for name, v in (("dynamic output, no grad", b), ("dynamic output, grad", c), ("leaf", a)):
        times: dict = {k: [] for k in versions}
        for _ in range(args.rounds):
            for k, f in versions.items():
                times[k].append(timeit.timeit(lambda: f(v), number=args.calls) / args.calls)
        print(f"{name:24s}", "  ".join(f"{k} {min(t) * 1e6:.3f} us" for k, t in times.items()))


if __name__ == "__main__":
    main()
