"""What keeping a PF call's initializer arrays of another dtype than float32 costs
(``compat/nnabla/_kept_dtypes.py``, ``keeping_initializer_arrays``): microseconds per
``PF.affine(x, 4, w_init=<float64 array>)`` in a registry holding N other parameters, with the
parameters already there (a dynamic-mode training loop calling the PF again each step) and
made anew by each call; the wrapper as of c4441c04 (walking the registry twice a call), this
tree's, and none, interleaved in one process (the old module read with ``git show``).

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/nnabla_kept_initializers_ab.py 1000

Measured (nnio35, a shared 2-core machine; the best of 3x7 repeats of 200 calls):

    N=0     params exist: c4441c04 152.9, nnio35 125.3, unwrapped 125.6 us/call
    N=1000  params exist: c4441c04 716.1, nnio35 109.2, unwrapped  84.6 us/call
    N=1000  made anew:    c4441c04 1577,  nnio35 287.9, unwrapped 354.8 us/call
"""

import importlib.util
import os
import subprocess
import sys
import timeit

import numpy as np

import stadyn as sd
import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.parametric_functions as PF

BASE = "c4441c04"


def _old_module():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    src = subprocess.run(["git", "-C", root, "show",
                          f"{BASE}:src/stadyn/compat/nnabla/_kept_dtypes.py"],
                         capture_output=True, text=True, check=True).stdout
    spec = importlib.util.spec_from_loader(f"stadyn.compat.nnabla._kept_dtypes_{BASE}", None)
    old = importlib.util.module_from_spec(spec)
    old.__package__ = "stadyn.compat.nnabla"
    exec(compile(src, f"_kept_dtypes@{BASE}.py", "exec"), old.__dict__)
    return old


def _per_call(fn, n_other, fresh, reps=200):
    x = nn.Variable((2, 3))
    w = np.full((3, 4), 0.1)
    with sd.parameter_registry(sd.ParameterRegistry()):
        for i in range(n_other):
            sd.get_parameter_or_create(f"pre/p{i}", (2,))
        k = [0]

        def once():
            k[0] += 1
            fn(x, 4, w_init=w, name=f"fc{k[0]}" if fresh else "fc")
        return min(timeit.repeat(once, number=reps, repeat=7)) / reps * 1e6


def main(n_other):
    raw = PF.affine.__wrapped__
    fns = {BASE: _old_module().keeping_initializer_arrays(raw), "this tree": PF.affine,
           "unwrapped": raw}
    for fresh in (False, True):
        res = {k: [] for k in fns}
        for _ in range(3):
            for k, fn in fns.items():
                res[k].append(_per_call(fn, n_other, fresh))
        print(f"N={n_other} {'made anew' if fresh else 'params exist'}: "
              + ", ".join(f"{k} {min(v):.1f}" for k, v in res.items()) + " us/call")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
