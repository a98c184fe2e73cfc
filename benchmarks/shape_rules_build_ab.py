"""A/B in one run: a 200-op static graph's build, shape rules vs meta inference.

    PYTHONPATH=src python benchmarks/shape_rules_build_ab.py [--rounds 7] [--ops 200]

``ops/_shape_rules.py`` infers an element-wise op's or a reduction's outputs by running its
implementation on empty CPU probes instead of on ``meta`` tensors.  This script builds the same
static graph of ``--ops`` ops (element-wise ops of one and two inputs, Python numbers, 0-d
means, reductions; shapes cycling over several, so one build asks the shape cache for many
keys) in one process, the two modes taking turns each round:

* ``rule``: as Stadyn builds;
* ``meta``: every op's ``rule`` set to None, so ``OpSpec.infer`` runs the implementation on
  meta tensors (as before the rules).

Each mode is timed ``cold`` (every op's shape cache, ``OpSpec.inferred``, emptied before the
build: each call infers) and ``warm`` (the cache as the previous build left it: the rule is
not asked).  Process CPU seconds per op (``time.process_time``), medians over the rounds, on one
torch thread; ``torch._dynamo`` is imported by a meta build before timing, so the import is not
counted.  Both modes must find the same shapes and dtypes (checked).  Then one uncached
``OpSpec.infer`` call per op of :data:`CALLS`, the modes taking turns: microseconds per call.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import stadyn as sd
import stadyn.functions as F
from stadyn.ops import CATALOG

SHAPES = [(8, 16), (4, 1, 16), (1,), (32,), (2, 3, 5)]


def build(n_ops: int) -> list:
    """The graph's outputs: ``n_ops`` ops over Variables of :data:`SHAPES`."""
    outs = []
    k = 0
    while len(outs) < n_ops:
        shape = SHAPES[k % len(SHAPES)]
        x = sd.Variable(shape, need_grad=True)
        y = F.relu(x * 0.5 - 1.0)                       # mul_scalar, add_scalar, relu
        z = F.tanh(F.mul2(y, x)) + F.exp(x)             # mul2, tanh, exp, add2
        m = F.mean(z, axis=-1, keepdims=True)           # reduce
        s = F.sum(z)                                    # reduce to 0-d
        outs += [y, z, m, F.sub2(z, m), s * 2.0, F.greater_scalar(s, 0.0),
                 F.where(F.greater(x, y), x, y), F.sigmoid(s)]
        k += 1
    return outs[:n_ops]


def _meta(shape, dtype=torch.float32):
    return torch.empty(shape, dtype=dtype, device="meta").requires_grad_(dtype.is_floating_point)


#: single calls timed on their own: (op, meta args, kwargs)
CALLS = [("relu", [(8, 16)], {}), ("mul_scalar", [(8, 16)], {"val": 0.5}),
         ("add2", [(4, 1, 16), (16,)], {}), ("mul2", [(), (8, 16)], {}),
         ("where", [(8, 16), (8, 16), (8, 16)], {}), ("sum", [(8, 16)], {"axis": -1}),
         ("mean", [(2, 3, 5)], {"axis": (0, 2), "keepdims": True})]


def _per_call(rounds: int, mode) -> dict:
    out: dict = {}
    for _ in range(rounds):
        for m in ("rule", "meta"):
            mode(m)
            for name, shapes, kwargs in CALLS:
                spec, args = CATALOG[name], [_meta(s) for s in shapes]
                start = time.perf_counter()
                for _ in range(200):
                    spec.infer(args, kwargs)
                out.setdefault((name, m), []).append((time.perf_counter() - start) / 200)
    mode("rule")
    return out


def _time(n_ops: int, cold: bool) -> tuple[float, list]:
    if cold:
        for spec in CATALOG.values():
            spec.inferred.clear()
    start = time.process_time()
    outs = build(n_ops)
    spent = time.process_time() - start
    return spent / n_ops, [(tuple(o.shape), o.dtype) for o in outs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--ops", type=int, default=200)
    opts = parser.parse_args()
    torch.set_num_threads(1)
    rules = {name: spec.rule for name, spec in CATALOG.items() if spec.rule is not None}

    def mode(name: str) -> None:
        for op_name, rule in rules.items():
            CATALOG[op_name].rule = rule if name == "rule" else None
    times: dict = {(m, c): [] for m in ("rule", "meta") for c in ("cold", "warm")}
    found = {}
    for m in ("meta", "rule"):                          # imports and warm-up, untimed
        mode(m)
        _time(opts.ops, True)
    for _ in range(opts.rounds):
        for m in ("rule", "meta"):
            mode(m)
            for c in ("cold", "warm"):
                spent, shapes = _time(opts.ops, c == "cold")
                times[m, c].append(spent)
                found.setdefault(m, shapes)
    mode("rule")
    assert found["rule"] == found["meta"], "the two modes found different shapes or dtypes"
    print(f"{opts.ops} ops, {opts.rounds} rounds, CPU us per op (median)")
    print(f"{'mode':>6} {'cold':>9} {'warm':>9}")
    for m in ("rule", "meta"):
        print(f"{m:>6} {1e6 * statistics.median(times[m, 'cold']):9.1f} "
              f"{1e6 * statistics.median(times[m, 'warm']):9.1f}")
    calls = _per_call(opts.rounds, mode)
    print(f"one uncached OpSpec.infer call, us (median)\n{'op':>11} {'rule':>7} {'meta':>7}")
    for name, _, _ in CALLS:
        print(f"{name:>11} {1e6 * statistics.median(calls[name, 'rule']):7.1f} "
              f"{1e6 * statistics.median(calls[name, 'meta']):7.1f}")


if __name__ == "__main__":
    main()
