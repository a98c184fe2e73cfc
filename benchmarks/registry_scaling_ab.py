"""A/B in one run: build costs that grew with the graph's size (the parameter registry's claims
and renames, compat.cntk's free axes over a ``FreeDimension`` input) and the registry's memory
over many CNTK builds, in two trees, with CNTK 2.7's and NNabla 1.39's times beside where the
same program runs there.

    PYTHONPATH=src python benchmarks/registry_scaling_ab.py [--before fbfcd828] [--rounds 1]
        [--splice 1000 3000] [--free 1000] [--free-dense 400] [--affine 2000]
        [--builds 10000] [--cntk /work/peers/cntk27/venv36/bin/python
        --cntk-lib /work/peers/cntk27/shimlib] [--nnabla /work/peers/nnabla/bin/python]

Each round runs one fresh process per tree and probe, the trees taking turns (``--before``:
that commit's ``src``, unpacked with ``git archive``; ``now``: this checkout's ``src``), on one
torch thread.  Probes (process CPU seconds, ``time.process_time``):

* ``splice_N``: ``stadyn.brainscript.build_network`` of ``{ z = Splice (array[1..N] (i =>
  ParameterTensor {(1)})) }`` (Stadyn only: cntk.exe is not here); digest: the registry's
  names in order and the values.
* ``free_tanh_N`` / ``free_dense_N``: a compat.cntk chain of ``C.tanh(h) + 1`` (N times) or
  ``C.layers.Dense(4, input_rank=1)`` over ``C.input_variable((C.FreeDimension, 4))`` and its
  ``.shape`` (CNTK 2.7 runs the same); digest: the shape and the parameters' shapes.
* ``affine_N``: NNabla's ``PF.affine(h, 4)`` chain of N layers, each under
  ``parameter_scope("net")/("block<i//10>")/("layer<i>")`` (NNabla 1.39 runs the same);
  digest: ``get_parameters()``'s names in order.
* ``builds_N``: N builds of ``C.layers.Dense(4)(C.input_variable(4))``, each dropped, under
  ``tracemalloc``: the CPU seconds and the Python memory still held after them (MB) --
  what the process-wide weak parameter registry keeps of dead models (Stadyn only).

A digest must be the same in both trees (CNTK's and NNabla's differ: their own values).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (Python 3.6: CNTK 2.7 runs it too; NNabla's Python runs the affine probe)
_PROBE = r"""
import gc, hashlib, json, sys, time
probe, n, which = sys.argv[1], int(sys.argv[2]), sys.argv[3]
try:
    import torch
    torch.set_num_threads(1)
except ImportError:
    pass


def digest(x):
    return hashlib.sha1(json.dumps(x).encode()).hexdigest()[:12]


out = {}
if probe == "splice":
    import numpy as np
    import stadyn as sd
    from stadyn.brainscript import StadynLibrary, build_network
    text = "{ z = Splice (array[1..%d] (i => ParameterTensor {(1)})) ; outputNodes = (z) }"
    with sd.parameter_registry(sd.ParameterRegistry()):
        build_network(text % 3, StadynLibrary())
    reg = sd.ParameterRegistry()
    with sd.parameter_registry(reg):
        start = time.process_time()
        build_network(text % n, StadynLibrary())
        out["seconds"] = time.process_time() - start
    out["digest"] = digest([[k, np.asarray(v.d).round(6).tolist()] for k, v in reg.items()])
elif probe in ("free_tanh", "free_dense"):
    if which == "cntk":
        import cntk as C
    else:
        import stadyn.compat.cntk as C
    C.cntk_py.set_fixed_random_seed(1)

    def chain(k):
        h = C.input_variable((C.FreeDimension, 4))
        for _ in range(k):
            h = C.layers.Dense(4, input_rank=1)(h) if probe == "free_dense" else C.tanh(h) + 1
        return h
    chain(3).shape
    start = time.process_time()
    h = chain(n)
    shape = h.shape
    out["seconds"] = time.process_time() - start
    out["digest"] = digest([list(shape), sorted(list(p.shape) for p in h.parameters)])
elif probe == "affine":
    if which == "nnabla":
        import nnabla as nn
        import nnabla.parametric_functions as PF
    else:
        import stadyn.compat.nnabla as nn
        import stadyn.compat.nnabla.parametric_functions as PF

    def build(k):
        nn.clear_parameters()
        h = nn.Variable((2, 4))
        with nn.parameter_scope("net"):
            for i in range(k):
                with nn.parameter_scope("block%d" % (i // 10)):
                    with nn.parameter_scope("layer%d" % i):
                        h = PF.affine(h, 4)
        return h
    build(3)
    start = time.process_time()
    h = build(n)
    out["seconds"] = time.process_time() - start
    out["digest"] = digest([list(h.shape), list(nn.get_parameters())])
elif probe == "builds":
    import tracemalloc
    import stadyn.compat.cntk as C

    def once():
        return C.layers.Dense(4)(C.input_variable(4))
    for _ in range(50):
        once()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    start = time.process_time()
    for _ in range(n):
        once()
    gc.collect()
    out["seconds"] = time.process_time() - start
    out["held_mb"] = (tracemalloc.get_traced_memory()[0] - before) / 1e6
    out["digest"] = digest(list(once().shape))
print(json.dumps(out))
"""


def _run(python: list, env: dict, probe: str, n: int, which: str) -> dict:
    proc = subprocess.run([*python, "-c", _PROBE, probe, str(n), which], env=env,
                          capture_output=True, text=True, timeout=3600)
    if proc.returncode:
        raise RuntimeError(f"{which} {probe} {n}: the probe failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="fbfcd828", help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--splice", type=int, nargs="*", default=[1000, 3000])
    parser.add_argument("--free", type=int, nargs="*", default=[1000])
    parser.add_argument("--free-dense", type=int, nargs="*", default=[400])
    parser.add_argument("--affine", type=int, nargs="*", default=[2000])
    parser.add_argument("--builds", type=int, nargs="*", default=[10000])
    parser.add_argument("--cntk", default=None, help="a Python with CNTK 2.7 to time too")
    parser.add_argument("--cntk-lib", default=None, help="LD_LIBRARY_PATH for --cntk")
    parser.add_argument("--nnabla", default=None, help="a Python with NNabla 1.39 to time too")
    opts = parser.parse_args()
    threads = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    probes = [("splice", n, ()) for n in opts.splice] + \
        [("free_tanh", n, ("cntk",)) for n in opts.free] + \
        [("free_dense", n, ("cntk",)) for n in opts.free_dense] + \
        [("affine", n, ("nnabla",)) for n in opts.affine] + \
        [("builds", n, ()) for n in opts.builds]
    peers = {"cntk": (opts.cntk, opts.cntk_lib), "nnabla": (opts.nnabla, None)}
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", ROOT, "archive", opts.before, "src"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        trees = {opts.before: os.path.join(tmp, "src"), "now": os.path.join(ROOT, "src")}
        rows = []
        for probe, n, others in probes:
            runs: dict[str, list] = {name: [] for name in trees}
            for _ in range(opts.rounds):
                for name, src in trees.items():
                    env = dict(os.environ, PYTHONPATH=src, **threads)
                    runs[name].append(_run([sys.executable], env, probe, n, "stadyn"))
                for peer in others:
                    python, lib = peers[peer]
                    if python is None:
                        continue
                    env = dict(os.environ, **threads)
                    env.pop("PYTHONPATH", None)
                    if lib:
                        env["LD_LIBRARY_PATH"] = lib
                    runs.setdefault(peer, []).append(
                        _run([python, "-W", "ignore"], env, probe, n, peer))
            rows.append((f"{probe}_{n}", runs))
    names = [opts.before, "now", "cntk", "nnabla"]
    print(f"{'probe':>16} " + " ".join(f"{k:>22}" for k in names) + "   (CPU s, medians)")
    for label, runs in rows:
        cells = []
        for name in names:
            results = runs.get(name)
            if not results:
                cells.append(f"{'-':>22}")
                continue
            cell = f"{statistics.median(r['seconds'] for r in results):.3f}"
            if "held_mb" in results[0]:
                cell += f" {statistics.median(r['held_mb'] for r in results):.2f}MB"
            cells.append(f"{cell + ' ' + results[0]['digest'][:6]:>22}")
        same = len({r["digest"] for name in trees for r in runs[name]}) == 1
        print(f"{label:>16} " + " ".join(cells) + ("" if same else "   DIGESTS DIFFER"))


if __name__ == "__main__":
    main()
