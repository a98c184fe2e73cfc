"""What applying a deep chain of CNTK layers costs when their declared parameters were hashed
first (A/B in one process), and where the time of a deep build goes.

    PYTHONPATH=src python benchmarks/cntk_declared_hashes_ab.py [--layers 200] [--rounds 3]

``plain``: ``--layers`` ``Dense(4)`` layers made, then applied one after the other to an
input.  ``hashed``: the same, each layer's ``W`` and ``b`` put in a set before any is applied
(CNTK 2.7 lets a declared parameter be a dict key; Stadyn keeps each such parameter, weakly,
in ``_layers_declared._HASHED`` until its layer is applied, and every layer application scans
that list: ``adopt_applied``).  The two alternate within every round (a shared machine's load
falls on both alike); the medians of the rounds' process CPU times are printed, and those of
a ``plain`` chain of half as many layers (a cost per layer that grows with the depth shows
there).  Then one ``hashed`` build runs under cProfile, and the cumulative share of
``adopt_applied`` (the scan) and of ``_seq_axes.free_steps`` (the walk of the graph behind
every ``.shape`` read of a CNTK value) is printed: cProfile inflates functions of many small
calls, so these shares say where to look, the A/B says what it costs.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time


def _apply(C, n: int, hashed: bool) -> float:
    layers = [C.layers.Dense(4) for _ in range(n)]
    kept = set()
    if hashed:
        for layer in layers:
            kept.add(layer.W)
            kept.add(layer.b)
    h = C.input_variable(4)
    start = time.process_time()
    for layer in layers:
        h = layer(h)
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import stadyn.compat.cntk as C
    _apply(C, 20, True)                 # (warm: imports, first traces)
    half = max(1, args.layers // 2)
    runs = {("plain", args.layers): [], ("hashed", args.layers): [], ("plain", half): []}
    for _ in range(args.rounds):
        for kind, n in runs:
            runs[kind, n].append(_apply(C, n, kind == "hashed"))
    for (kind, n), got in runs.items():
        print(f"{kind:7s} {n:5d} layers applied: {statistics.median(got):.3f} s CPU "
              f"(rounds: {', '.join(f'{t:.3f}' for t in got)})")
    profile = cProfile.Profile()
    profile.enable()
    _apply(C, args.layers, True)
    profile.disable()
    stats = pstats.Stats(profile)
    total = stats.total_tt
    for fn, (_, _, _, cumulative, _) in stats.stats.items():
        if fn[2] in ("adopt_applied", "free_steps"):
            print(f"{fn[2]:14s} {cumulative:.3f} s of {total:.3f} s profiled "
                  f"({100 * cumulative / total:.0f}%)")


if __name__ == "__main__":
    main()
