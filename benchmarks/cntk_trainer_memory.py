"""What a compat.cntk ``Trainer`` step keeps in memory: the bytes in use at the peak of a
``train_minibatch`` of a small MLP (``Sequential`` of ``Dense`` layers with ReLU, a softmax
cross-entropy loss and a classification error, SGD), and how many intermediates of the step
keep their values after it (the Trainer's backward clears the values no one holds:
``graph/_held_values.py``), on CPU.

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/cntk_trainer_memory.py [--base SRC]

``--base SRC`` runs the case a second time on another checkout's ``src`` (``git archive
a9dd4ed5 src | tar -x -C /tmp/base``) and prints both; each run is a fresh process.  The bytes
are glibc's count of memory in use (``mallinfo2``: ``uordblks + hblkhd``, where torch's CPU
allocator takes tensors from), read after every ATen op of the fourth step (a
``TorchDispatchMode``), less the count before the network was defined.  A walk of the graph
(``C.logging.graph.depth_first_search``, what printing or ``find_by_name`` does) is made
before training, as a program that looks at its model does.

Measured (cntkview2 against a9dd4ed5, CPU, 6 Dense layers of 1024 with ReLU and one of 10,
batch 256, ``--base``; MB over the count before the network):

                         peak    after the step
    a9dd4ed5             99.4        91.0
    cntkview2            94.5        85.0      (5 hidden values of 1 MB, and the last's)

The same without the walk (``--no-walk``: the Trainer's own look at the graph makes the
Dense blocks' ``Times`` views): 99.4 / 91.0 -> 94.4 / 84.9.  Before, each ``Times`` view
(``compat/cntk/_graph_views.shown_product``) took the Dense's input as held by the program
and the Trainer's clearing backward kept it; the view's inputs are Stadyn's own now
(``graph.shown_only``).
"""

import argparse
import ctypes
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                               "usmblks", "fsmblks", "uordblks", "fordblks",
                                               "keepcost")]


def _case(layers: int, width: int, batch: int, walk: bool) -> dict:
    import numpy as np
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    import stadyn.compat.cntk as C

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2

    def in_use() -> int:
        m = libc.mallinfo2()
        return m.uordblks + m.hblkhd

    peak = [0]

    class Sampler(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            peak[0] = max(peak[0], in_use())
            return out

    torch.set_num_threads(1)
    rng = np.random.RandomState(0)
    start = in_use()
    x = C.input_variable(width)
    y = C.input_variable(10)
    z = C.layers.Sequential([C.layers.Dense(width, activation=C.relu) for _ in range(layers)]
                            + [C.layers.Dense(10)])(x)
    loss = C.cross_entropy_with_softmax(z, y)
    err = C.classification_error(z, y)
    walked = len(C.logging.graph.depth_first_search(z, lambda n: True, depth=-1)) if walk else 0
    trainer = C.Trainer(z, (loss, err), [C.sgd(z.parameters, C.learning_parameter_schedule(0.01))])
    results = {"walked nodes": walked}
    for step in range(4):
        data = {x: rng.randn(batch, width).astype(np.float32),
                y: np.eye(10, dtype=np.float32)[rng.randint(0, 10, batch)]}
        peak[0] = in_use()
        if step == 3:
            with Sampler():
                trainer.train_minibatch(data)
            results["peak_MB"] = (peak[0] - start) / 2**20
        else:
            trainer.train_minibatch(data)
    results["after_MB"] = (in_use() - start) / 2**20
    return results


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="another checkout's src folder, run beside this one")
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--no-walk", action="store_true", help="no walk before training")
    parser.add_argument("--case", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        print(json.dumps(_case(args.layers, args.width, args.batch, not args.no_walk)))
        return
    here = os.path.join(os.path.dirname(HERE), "src")
    shape = [f"--layers={args.layers}", f"--width={args.width}", f"--batch={args.batch}"] + \
        (["--no-walk"] if args.no_walk else [])
    for name, src in [("this", here)] + ([("base", args.base)] if args.base else []):
        env = dict(os.environ, PYTHONPATH=src, OMP_NUM_THREADS="1")
        out = subprocess.run([sys.executable, __file__, "--case", *shape], env=env,
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{name:5s} peak {r['peak_MB']:8.1f} MB   after the step {r['after_MB']:8.1f} MB"
              f"   (walk: {r['walked nodes']} nodes)")


if __name__ == "__main__":
    main(sys.argv[1:])
