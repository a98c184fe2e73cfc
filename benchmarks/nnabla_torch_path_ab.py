"""Cost of NNabla's solvers on their torch path (the path of CUDA, non-contiguous and compiled
tensors; here: float32 CPU parameters laid out column-major), before and after a change:
``A`` is ``src/`` as it was at ``--before`` (``git archive`` into a temporary directory), ``B``
the working tree's.  Each round runs one child process per side, alternating A and B; a child
times ``solver.update()`` (the gradient copy excluded) over the digits CNN's shapes (83K values
in 8 tensors) and prints the median ms; the table gives each side's smallest median and B/A.

    PYTHONPATH=src python benchmarks/nnabla_torch_path_ab.py [--before 5136b170] \
        [--threads 1] [--rounds 3] [--solvers Lamb AdaBelief ...]
"""

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHAPES = [(16, 1, 5, 5), (16,), (32, 16, 5, 5), (32,), (128, 512), (128,), (10, 128), (10,)]
SOLVERS = ["Sgd", "Momentum", "Nesterov", "Adagrad", "RMSprop", "Adadelta", "Adamax", "Lion",
           "AdaBelief", "AdaBound", "AMSBound", "Lamb", "Lars", "SgdW", "RMSpropGraves", "Adam",
           "AdamW", "AMSGRAD"]


def child(names: list, threads: int) -> dict:
    """Median ms of one update per solver (run with the side's ``src`` on ``PYTHONPATH``)."""
    import numpy as np
    import torch

    import stadyn as sd
    import stadyn.solvers as S

    torch.set_num_threads(threads)

    def column_major(a):
        if a.ndim < 2:
            wide = np.zeros(2 * a.size, np.float32)
            wide[::2] = a
            return torch.from_numpy(wide)[::2]
        back = tuple(reversed(range(a.ndim)))
        return torch.from_numpy(np.ascontiguousarray(a.transpose(back))).permute(back)

    rs = np.random.RandomState(0)
    out = {}
    for name in names:
        params = {}
        for i, shape in enumerate(SHAPES):
            v = sd.Variable.from_numpy_array(np.zeros(shape, np.float32), need_grad=True)
            v.data = column_major(rs.randn(*shape).astype(np.float32))
            params[f"p{i}"] = v
        solver = getattr(S, name)()
        solver.set_parameters(params)
        grads = {k: column_major((rs.randn(*v.shape) * 0.01).astype(np.float32))
                 for k, v in params.items()}
        times = []
        for _ in range(25):
            for k, v in params.items():
                v.grad = grads[k].clone()
            start = time.perf_counter()
            solver.update()
            times.append(time.perf_counter() - start)
        out[name] = float(np.median(times[5:])) * 1e3
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="5136b170")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--solvers", nargs="*", default=SOLVERS)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child), args.threads)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "archive", args.before, "src"], cwd=ROOT, check=True,
                                 capture_output=True).stdout
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        sides = {"A": str(Path(tmp) / "src"), "B": str(ROOT / "src")}
        results: dict = {k: [] for k in sides}
        for _ in range(args.rounds):
            for side, src in sides.items():
                env = dict(os.environ, PYTHONPATH=src)
                run = subprocess.run([sys.executable, __file__, "--threads", str(args.threads),
                                      "--child", json.dumps(args.solvers)],
                                     env=env, check=True, capture_output=True, text=True)
                results[side].append(json.loads(run.stdout.strip().splitlines()[-1]))
    print(f"{'solver':<14} {'A ms':>8} {'B ms':>8} {'B/A':>6}   (A: {args.before}, B: tree)")
    for name in args.solvers:
        a = min(r[name] for r in results["A"])
        b = min(r[name] for r in results["B"])
        print(f"{name:<14} {a:8.3f} {b:8.3f} {b / a:6.2f}")


if __name__ == "__main__":
    main()
