"""Cost of one update of NNabla's RMSprop, Lamb, Adamax, Adadelta, Lars, Sgd, SgdW, Adagrad and
Lion two ways, alternating in one process: ``A`` the torch multi-tensor path (the
``solvers._float32_kernels`` blocks refused, as before nnsolv40), ``B`` NNabla 1.39's float32
arithmetic in cache-sized NumPy blocks (``solvers/_float32_kernels.py``, the default on CPU
since nnsolv40).  Sizes: 1 M parameters in one tensor, the digits CNN of ``stadyn demo``
(10.4 M parameters in 52 tensors, ``benchmarks/nnabla_adam_exact_ab.py``'s), and with
``--sizes`` CNTK's CIFAR ConvNet (1.2 M in 14 tensors) and 200 tensors of 1000 values
(``benchmarks/cntk_learner_exact_ab.py``'s: where the blocks' cost per tensor shows).

    PYTHONPATH=src python benchmarks/nnabla_solvers_exact_ab.py [--steps 3] [--rounds 5]
        [--solver RMSprop ...] [--sizes 1M "digits CNN" ConvNet 200x1K] [--threads 1]

Prints, per solver and size, the median process CPU time and wall time of one update in ms
(``solver.update()`` of ``stadyn.solvers``, the same call overhead on both sides) and the
largest difference between A's and B's parameters after the rounds.
"""

import argparse
import contextlib

import numpy as np
import torch

import stadyn.solvers as S
import stadyn.solvers._solver as solver_base
import stadyn.solvers._solver_nnabla as solver_nnabla
from cntk_learner_exact_ab import SIZES as CNTK_SIZES
from nnabla_adam_exact_ab import CNN, timed_rounds

SIZES = {"1M": [(1000, 1000)], "digits CNN": CNN, "ConvNet": CNTK_SIZES["ConvNet"],
         "200x1K": CNTK_SIZES["200x1K"]}
DEFAULT_SIZES = ["1M", "digits CNN"]
SOLVERS = {"RMSprop": (solver_nnabla, "rmsprop_blocks", dict(lr=1e-3)),
           "Lamb": (solver_nnabla, "lamb_blocks", dict(eta=1e-3)),
           "Adamax": (solver_nnabla, "adamax_blocks", dict(alpha=1e-3)),
           "Adadelta": (solver_nnabla, "adadelta_blocks", dict()),
           "Lars": (solver_nnabla, "lars_blocks", dict(lr=1e-3)),
           "Sgd": (solver_base, "sgd_blocks", dict(lr=1e-3)),
           "SgdW": (solver_nnabla, "sgdw_blocks", dict(lr=1e-3)),
           "Adagrad": (solver_nnabla, "adagrad_blocks", dict(lr=1e-3)),
           "Lion": (solver_nnabla, "lion_blocks", dict(lr=1e-4))}


@contextlib.contextmanager
def blocks_refused(module, name, refused):
    """While in it, ``module.name`` (a solver's blocks function) returns ``False`` where
    ``refused`` (``A``: the torch path), else it is itself (``B``)."""
    blocks = getattr(module, name)
    if refused:
        setattr(module, name, lambda *a, **k: False)
    try:
        yield
    finally:
        setattr(module, name, blocks)


def _solver(name, kwargs, shapes, seed=0):
    import stadyn as sd
    rs = np.random.RandomState(seed)
    params = {"p%d" % i: sd.Variable.from_numpy_array(rs.randn(*s).astype(np.float32),
                                                      need_grad=True)
              for i, s in enumerate(shapes)}
    for p in params.values():
        p.g = (rs.randn(*p.shape) * 0.1).astype(np.float32)
    solver = getattr(S, name)(**kwargs)
    solver.set_parameters(params)
    return solver, params


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--solver", action="append", choices=sorted(SOLVERS))
    ap.add_argument("--sizes", nargs="*", choices=sorted(SIZES), default=DEFAULT_SIZES)
    ap.add_argument("--threads", type=int, help="torch.set_num_threads (default: torch's)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print("one update, ms (median of %d rounds of %d), torch %s, %d thread(s)"
          % (args.rounds, args.steps, torch.__version__, torch.get_num_threads()))
    for name in args.solver or SOLVERS:
        module, attr, kwargs = SOLVERS[name]
        for size in args.sizes:
            shapes = SIZES[size]
            states = {k: _solver(name, kwargs, shapes) for k in "AB"}

            def update(kind, state):
                with blocks_refused(module, attr, kind == "A"):
                    state[0].update()
            cpu, wall = timed_rounds(states, update, args.rounds, args.steps)
            diff = max(float(np.abs(a.d - b.d).max()) for a, b in
                       zip(states["A"][1].values(), states["B"][1].values()))
            print("%-9s %-10s cpu A torch %7.1f  B blocks exact %7.1f | wall A %7.1f  B %7.1f"
                  " | |A-B| <= %.2g" % (name, size, cpu["A"], cpu["B"], wall["A"], wall["B"],
                                       diff))


if __name__ == "__main__":
    main()
