"""Per-tensor cost of the exact CPU solver blocks, before and after a change, in one process:
``A`` the blocks modules (``solvers/_scalars.py``, ``_float32_blocks.py``, ``_cntk_cpu.py``,
``_float32_kernels.py``) as they were at ``--before`` (read with ``git show`` into a temporary
package and patched in where the learners and solvers call them), ``B`` the working tree's.
The rest of Stadyn is the working tree's on both sides, the rounds alternate A and B, and the
parameters A and B leave must be bit for bit equal (the change is about cost, not arithmetic).

    PYTHONPATH=src python benchmarks/solver_blocks_overhead_ab.py [--before 0e8cf60c] \
        [--threads 1] [--rounds 9] [--steps 5] [--sizes ConvNet 200x1K 1M] [--only Lamb]

Cases: CNTK's ``sgd``, ``momentum_sgd`` and ``adam`` learners with L2 off and on
(``learner.update``, the gradient copy included), NNabla's ``Sgd``, ``Momentum``, ``Adam`` and
``Lamb`` solvers with ``weight_decay`` (``solver.update``; Lamb's is fused into it), over CNTK's
CIFAR ConvNet (1.2 M values in 14 tensors), 200 tensors of 1000 values and one of 1 M.  Prints
the median process CPU time of one update in ms and B/A.
"""

import argparse
import importlib
import inspect
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

import stadyn as sd
import stadyn.learners as L
import stadyn.solvers as S
import stadyn.solvers._functional_nnabla as functional_nnabla
import stadyn.solvers._solver as solver_base
import stadyn.solvers._solver_nnabla as solver_nnabla
from cntk_learner_exact_ab import SIZES
from nnabla_adam_exact_ab import timed_rounds
from stadyn.solvers import functional as Fn

ROOT = Path(__file__).resolve().parent.parent
MODULES = ["_scalars", "_float32_blocks", "_cntk_cpu", "_float32_kernels"]
LEARNERS = {"sgd": lambda p, **kw: L.sgd(p, 0.01, **kw),
            "momentum_sgd": lambda p, **kw: L.momentum_sgd(p, 0.01, 0.9, **kw),
            "adam": lambda p, **kw: L.adam(p, 0.01, 0.9, **kw)}
SOLVERS = {"Sgd": dict(lr=1e-3), "Momentum": dict(lr=1e-3), "Adam": dict(alpha=1e-3),
           "Lamb": dict(eta=1e-3)}


def _before(rev: str, tmp: str) -> dict:
    """The blocks modules at ``rev`` as the package ``blocks_before`` in ``tmp``."""
    pkg = Path(tmp) / "blocks_before"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name in MODULES:
        text = subprocess.run(["git", "show", "%s:src/stadyn/solvers/%s.py" % (rev, name)],
                              cwd=ROOT, check=True, capture_output=True, text=True).stdout
        (pkg / (name + ".py")).write_text(text)
    sys.path.insert(0, tmp)
    return {name: importlib.import_module("blocks_before." + name) for name in MODULES}


def _taking_known(before):
    """``before`` called with the keyword arguments it takes (a solver of the working tree may
    pass one it did not: Lamb's kept ``r``, which it then makes afresh, as it did)."""
    known = inspect.signature(before).parameters

    def call(*args, **kwargs):
        return before(*args, **{k: v for k, v in kwargs.items() if k in known})
    return call


def _patches(modules: dict) -> list:
    """``(module, attribute, before's function)`` for every call site of the blocks."""
    out = []
    for target in (Fn, solver_base, solver_nnabla, functional_nnabla):
        for attr in dir(target):
            if not attr.endswith(("_cntk", "_blocks")):
                continue
            for name in ("_cntk_cpu", "_float32_kernels", "_float32_blocks"):
                now = getattr(importlib.import_module("stadyn.solvers." + name), attr, None)
                if callable(now) and getattr(target, attr) is now and \
                        hasattr(modules[name], attr):
                    out.append((target, attr, _taking_known(getattr(modules[name], attr))))
    return out


class Swapped:
    """While in it, the call sites of ``patches`` call before's functions."""

    def __init__(self, patches):
        self.patches = patches

    def __enter__(self):
        self.saved = [(t, a, getattr(t, a)) for t, a, _ in self.patches]
        for t, a, f in self.patches:
            setattr(t, a, f)

    def __exit__(self, *exc):
        for t, a, f in self.saved:
            setattr(t, a, f)


def _params(shapes, seed=0):
    rs = np.random.RandomState(seed)
    ps = [sd.Variable.from_numpy_array(rs.randn(*s).astype(np.float32), need_grad=True)
          for s in shapes]
    for p in ps:
        p.grad = torch.from_numpy((rs.randn(*p.shape) * 0.1).astype(np.float32))
    return ps


def _cases(sizes):
    for name, make in LEARNERS.items():
        for l2 in (0.0, 1e-4):
            for size in sizes:
                def build(make=make, l2=l2, shapes=SIZES[size]):
                    ps = _params(shapes)
                    learner = make(ps, l2_regularization_weight=l2)
                    return ps, lambda: learner.update(32)
                yield "cntk %s l2=%g" % (name, l2), size, build
    for name, kwargs in SOLVERS.items():
        for size in sizes:
            def build(name=name, kwargs=kwargs, shapes=SIZES[size]):
                ps = _params(shapes)
                solver = getattr(S, name)(**kwargs)
                solver.set_parameters({"p%d" % i: p for i, p in enumerate(ps)})

                def step():
                    solver.weight_decay(1e-4)
                    solver.update()
                return ps, step
            yield "nnabla %s+wd" % name, size, build


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="0e8cf60c")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--sizes", nargs="*", default=["ConvNet", "200x1K", "1M"])
    ap.add_argument("--only", default="", help="the cases whose label holds this text")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        swapped = Swapped(_patches(_before(args.before, tmp)))
        print("one update, ms CPU (median of %d rounds of %d), A: blocks at %s, B: working "
              "tree; torch %s, %d thread(s)" % (args.rounds, args.steps, args.before,
                                                torch.__version__, torch.get_num_threads()))
        for label, size, build in _cases(args.sizes):
            if args.only not in label:
                continue
            states = {k: build() for k in "AB"}

            def update(kind, state):
                if kind == "A":
                    with swapped:
                        state[1]()
                else:
                    state[1]()
            cpu, _ = timed_rounds(states, update, args.rounds, args.steps)
            same = all(torch.equal(a.data, b.data)
                       for a, b in zip(states["A"][0], states["B"][0]))
            print("%-24s %-8s A %7.2f  B %7.2f  B/A %.2f  %s"
                  % (label, size, cpu["A"], cpu["B"], cpu["B"] / cpu["A"],
                     "bit-identical" if same else "DIFFERENT"))


if __name__ == "__main__":
    main()
