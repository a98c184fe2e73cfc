"""What the first op of a static graph imports, and what that costs a fresh process.

    PYTHONPATH=src python benchmarks/definition_imports.py [--rounds 3] [--tree A B ...]

Building a static graph infers each op's output shape by running its implementation on
``meta`` tensors (``graph/_apply.py``).  Most of torch's meta kernels are Python reference
implementations wrapped by ``torch._disable_dynamo``, which imports ``torch._dynamo`` (and with
it sympy, ``torch._inductor``'s config, ``torch.distributed``, ``torch.onnx``) the first time
one runs; a static plan's trace needs it anyway (``FakeTensorMode()`` imports
``torch._dynamo.config``).  Each round runs fresh processes on one thread, per tree (its
``src`` first on ``PYTHONPATH``), that note the process CPU seconds (``time.process_time``)

* ``import``: after ``import stadyn.compat.cntk``;
* ``define``: after a CNTK-style classifier is defined (two Dense layers, cross entropy);
* ``first step``: after its first ``train_minibatch`` (the plan's build);

whether ``torch._dynamo`` was loaded at each mark, and the innermost frames of Stadyn and of torch
on the stack when it was imported; and three floors: ``import torch``,
``import torch, torch._dynamo`` and ``import torch`` then ``FakeTensorMode()`` (what a plan's
trace makes first).  Medians over the rounds are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_PROBE = r"""
import json, sys, time, traceback
first = []
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch._dynamo" and not first:
            stack = traceback.extract_stack()[:-1]
            first.extend([next((f"{f.filename.split('/src/')[-1]}:{f.lineno} {f.name}"
                                for f in reversed(stack) if "/stadyn/" in f.filename), None),
                          next((f"{f.filename.split('site-packages/')[-1]}:{f.lineno} {f.name}"
                                for f in reversed(stack)
                                if "site-packages/torch/" in f.filename), None)])
        return None
sys.meta_path.insert(0, Watch())
marks = {}
def mark(key):
    marks[key] = [round(time.process_time(), 3), "torch._dynamo" in sys.modules]
import numpy as np
import stadyn.compat.cntk as C
mark("import")
x, y = C.input_variable(20), C.input_variable(3)
z = C.layers.Sequential([C.layers.Dense(16, activation=C.relu), C.layers.Dense(3)])(x)
loss, error = C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)
mark("define")
learner = C.sgd(z.parameters, C.learning_rate_schedule(0.1, C.UnitType.minibatch))
trainer = C.Trainer(z, (loss, error), [learner])
rng = np.random.RandomState(0)
trainer.train_minibatch({x: rng.randn(8, 20).astype(np.float32),
                         y: np.eye(3, dtype=np.float32)[rng.randint(0, 3, 8)]})
mark("first step")
marks["first import of torch._dynamo"] = first
print(json.dumps(marks))
"""

_FLOOR = "import json, time; {}; print(json.dumps(round(time.process_time(), 3)))"
_FAKE = ("import torch; from torch._subclasses.fake_tensor import FakeTensorMode; "
         "FakeTensorMode()")


def _child(tree: str | None, code: str):
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (os.path.join(tree, "src"), os.environ.get("PYTHONPATH", "")) if p)
    proc = subprocess.run([sys.executable, "-W", "ignore", "-c", code], env=env,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", nargs="+", default=[ROOT])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    floors = {"import torch": [], "import torch, torch._dynamo": [],
              "import torch; FakeTensorMode()": []}
    runs: dict[str, list] = {t: [] for t in args.tree}
    for k in range(args.rounds):
        for code in floors:
            floors[code].append(_child(None, _FLOOR.format(
                _FAKE if "FakeTensorMode" in code else code)))
        for t in (args.tree if k % 2 == 0 else args.tree[::-1]):
            runs[t].append(_child(t, _PROBE))
            sys.stderr.write(f"round {k + 1}: {t}: {json.dumps(runs[t][-1])}\n")
    print(f"process CPU s, 1 thread, median of {args.rounds} rounds")
    for code, values in floors.items():
        print(f"  {code:40s} {statistics.median(values):6.2f}")
    for t in args.tree:
        print(f"{t}: first import of torch._dynamo from "
              f"{runs[t][-1]['first import of torch._dynamo']}")
        for key in ("import", "define", "first step"):
            cpu = statistics.median(r[key][0] for r in runs[t])
            print(f"  {key:40s} {cpu:6.2f}   torch._dynamo loaded: {runs[t][-1][key][1]}")


if __name__ == "__main__":
    main()
