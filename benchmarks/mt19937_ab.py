"""What CNTK-style parameter creation costs in ``stadyn._mt19937``: this tree's engine against
the one of a git revision (default ``224c14bd``, before ``_advance_64`` took its operands as
preallocated arrays and seeding was kept per seed), A/B interleaved in one process.

    PYTHONPATH=src python benchmarks/mt19937_ab.py [--base REV] [--rounds 7]

Prints us of CPU time per call (``time.process_time``, the best of ``--rounds`` interleaved
rounds: on a shared machine wall-clock time counts the other processes' turns too)
of ``_advance_64`` for several block counts, of seeding, and of drawing whole parameters as
``CNTKInitializer`` does (``uniform_floats`` / ``normal_floats`` of a new seed each call, as
CNTK's seed counter gives them, and of one seed, as ``set_fixed_random_seed`` does), and checks
that both give the same numbers.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from stadyn import _cpp_normal
from stadyn import _mt19937 as new


def _base_module(rev: str):
    """``src/stadyn/_mt19937.py`` of ``rev``, imported as a module of the stadyn package."""
    root = Path(__file__).resolve().parents[1]
    text = subprocess.run(["git", "show", f"{rev}:src/stadyn/_mt19937.py"], cwd=root,
                          check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "_mt19937_base.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("stadyn._mt19937_base", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _normal(m):
    """``normal_floats`` of a module: in ``_mt19937`` up to 5831a09b, in ``_cpp_normal`` since."""
    return getattr(m, "normal_floats", _cpp_normal.normal_floats)


def _best_us(fn, calls: int, rounds: int, other) -> tuple[float, float]:
    """The best us per call of ``fn`` and of ``other`` over interleaved rounds."""
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for k, f in enumerate((fn, other)):
            start = time.process_time()
            for _ in range(calls):
                f()
            best[k] = min(best[k], (time.process_time() - start) / calls * 1e6)
    return best[1], best[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="224c14bd")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    old = _base_module(args.base)
    seed_args = (6364136223846793005, 62, 64, np.uint64)
    state = new._seeded(1, 312, *seed_args)
    for blocks in (0, 1, 2, 5, 313, 700):
        assert np.array_equal(old._advance_64(state, blocks), new._advance_64(state, blocks))
    for count in (1, 100, 5000):
        assert np.array_equal(old.uniform_floats(7, count, 0.1), new.uniform_floats(7, count, 0.1))
        assert np.array_equal(_normal(old)(7, count, 0.1), _normal(new)(7, count, 0.1))
    print(f"base {args.base}; us of CPU time per call, best of {args.rounds} interleaved rounds")
    print(f"{'what':<44} {'base':>10} {'this tree':>10} {'ratio':>6}")

    def row(what, make, calls):
        a, b = _best_us(make(new), calls, args.rounds, make(old))
        print(f"{what:<44} {a:>10.1f} {b:>10.1f} {a / b:>6.2f}")

    for blocks in (1, 4, 32, 320):
        row(f"_advance_64, {blocks} blocks", lambda m, b=blocks: (lambda: m._advance_64(state, b)),
            max(3, 600 // blocks))
    counter = itertools.count(1000)
    row("_seeded, a new seed", lambda m: (lambda: m._seeded(next(counter), 312, *seed_args)), 200)
    row("_seeded, one seed", lambda m: (lambda: m._seeded(5, 312, *seed_args)), 200)
    for shape in ((10,), (200, 10), (784, 200)):
        count, calls = int(np.prod(shape)), max(3, 200_000 // int(np.prod(shape)) // 4)
        row(f"uniform_floats {shape}, a new seed",
            lambda m, c=count: (lambda: m.uniform_floats(next(counter), c, 0.1)), calls)
        row(f"uniform_floats {shape}, one seed",
            lambda m, c=count: (lambda: m.uniform_floats(1, c, 0.1)), calls)
    row("normal_floats (200, 10), a new seed",
        lambda m: (lambda: _normal(m)(next(counter), 2000, 0.1)), 50)


if __name__ == "__main__":
    main()
