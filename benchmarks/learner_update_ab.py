"""``Learner.update``'s own cost, before and after a change, in one process: ``A`` the
``update``, ``_gradients`` and ``_scratch_for`` of ``learners/_learner.py`` as they were at
``--before`` (read with ``git show`` into a module of their own and bound to the learner, those
it has), ``B`` the working tree's; the rest is the working tree's on both sides, the rounds
alternate A and B, and the parameters both leave must be bit for bit equal.

    PYTHONPATH=src python benchmarks/learner_update_ab.py [--before 186e5b73] [--threads 1] \
        [--rounds 9] [--steps 5] [--tensors 200] [--size 1000] [--shapes ConvNet] [--solvers]

Prints the median process CPU time of one ``learner.update(1)`` in ms and B/A for CNTK's sgd,
momentum_sgd and adam, L2 off and on, over ``tensors`` parameters of ``size`` values, or with
``--shapes`` over one of ``cntk_learner_exact_ab.py``'s sets (``ConvNet``: CNTK's CIFAR-10
ConvNet, 1.2 M values in 14 tensors).  With ``--solvers`` ``A`` also runs ``--before``'s
``solvers/_cntk_cpu.py`` and ``_float32_blocks.py`` (loaded as modules of their own; the
learners' ``functional.*_cntk`` point at them during A's rounds).
"""

import argparse
import contextlib
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np
import torch

import stadyn as sd
import stadyn.learners as L
from stadyn.solvers import functional as Fn
from cntk_learner_exact_ab import SIZES

ROOT = Path(__file__).resolve().parent.parent
LEARNERS = {"sgd": lambda p, l2: L.sgd(p, 0.01, l2_regularization_weight=l2),
            "momentum_sgd": lambda p, l2: L.momentum_sgd(p, 0.01, 0.9,
                                                         l2_regularization_weight=l2),
            "adam": lambda p, l2: L.adam(p, 0.01, 0.9, l2_regularization_weight=l2)}


def _old_learner(before):
    source = subprocess.run(["git", "show", f"{before}:src/stadyn/learners/_learner.py"],
                            cwd=ROOT, check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "_learner_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("stadyn.learners._learner_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.Learner


def _old_solvers(before):
    """``before``'s ``*_cntk`` functions, over its own ``_float32_blocks``."""
    modules = {}
    for stem in ("_float32_blocks", "_cntk_cpu"):
        source = subprocess.run(["git", "show", f"{before}:src/stadyn/solvers/{stem}.py"],
                                cwd=ROOT, check=True, capture_output=True, text=True).stdout
        source = source.replace("from ._float32_blocks import",
                                "from ._float32_blocks_before import")
        path = Path(tempfile.mkdtemp()) / f"{stem}_before.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(f"stadyn.solvers.{stem}_before", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        modules[stem] = module
    return {n: getattr(modules["_cntk_cpu"], n) for n in modules["_cntk_cpu"].__all__}


@contextlib.contextmanager
def _functions(swapped):
    """``stadyn.solvers.functional``'s functions ``swapped`` (name -> function) meanwhile."""
    kept = {n: getattr(Fn, n) for n in swapped}
    for n, f in swapped.items():
        setattr(Fn, n, f)
    try:
        yield
    finally:
        for n, f in kept.items():
            setattr(Fn, n, f)


def _make(kind, name, l2, old, shapes):
    rng = np.random.default_rng(0)
    vs = [sd.Variable.from_numpy_array(rng.standard_normal(shape).astype(np.float32),
                                       need_grad=True) for shape in shapes]
    for v in vs:
        v.g = rng.standard_normal(v.shape).astype(np.float32)
    learner = LEARNERS[name](vs, l2)
    if kind == "A":
        if "_fused_l2" not in vars(old):        # (before the rules took L2 in their blocks)
            learner._fused_l2 = False
        for attr in ("update", "_gradients", "_scratch_for"):
            if attr in vars(old):
                setattr(learner, attr, types.MethodType(vars(old)[attr], learner))
    return vs, learner


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", default="186e5b73")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tensors", type=int, default=200)
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--shapes", choices=sorted(SIZES), help="a set of shapes instead")
    ap.add_argument("--solvers", action="store_true",
                    help="A also runs --before's solvers/_cntk_cpu.py and _float32_blocks.py")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    old = _old_learner(args.before)
    swapped = {"A": _old_solvers(args.before) if args.solvers else {}, "B": {}}
    for name in LEARNERS:
        for l2 in (0.0, 1e-4):
            shapes = SIZES[args.shapes] if args.shapes else [(args.size,)] * args.tensors
            states = {k: _make(k, name, l2, old, shapes) for k in "AB"}
            cpu = {k: [] for k in states}
            for _ in range(args.rounds):
                for k, (_, learner) in states.items():
                    with _functions(swapped[k]):
                        t0 = time.process_time()
                        for _ in range(args.steps):
                            learner.update(1)
                        cpu[k].append((time.process_time() - t0) / args.steps * 1e3)
            a, b = (statistics.median(cpu[k]) for k in "AB")
            assert all(x.d.tobytes() == y.d.tobytes()
                       for x, y in zip(states["A"][0], states["B"][0])), name
            print(f"{name:13s} L2 {l2:<7g} A {a:7.3f}  B {b:7.3f}  B/A {b / a:.2f}")


if __name__ == "__main__":
    main()
