"""What keeping the values a program holds through a clearing step costs in memory
(``graph/_held_values.py``): the bytes in use at the peak of a training step and between
steps, for the NNabla idiom ``loss.forward(clear_no_need_grad=True)``,
``loss.backward(clear_buffer=True)``, ``solver.update()``, on CPU.

    PYTHONPATH=src OMP_NUM_THREADS=1 python benchmarks/held_values_memory.py [--base SRC]

``--base SRC`` runs each case a second time on another checkout's ``src`` (e.g. ``git archive
26c061c9 src | tar -x -C /tmp/base``) and prints both.  Each case runs in a fresh process.

The bytes are glibc's count of memory in use (``mallinfo2``: ``uordblks + hblkhd``), which is
where torch's CPU allocator takes tensors from: read after every ATen op of the measured step
(a ``TorchDispatchMode``) for the peak of the fourth step, and after the solver's update of the
third for between steps (measured without the dispatch mode, which keeps more alive), each
less the count before the network was defined (so both count the parameters, their gradients
and what a step leaves behind).  Cases: a 10-layer MLP (1024 wide, batch 512) and a
small CNN (3 convolutions with batch normalization and ReLU, 2 max poolings, batch 64 of
3x32x32), static and dynamic (``nn.auto_forward``, the graph defined anew each step), with the
program holding the prediction only (``pred``: nnabla-examples' habit) or every layer's output
(a list of them: the most a program can hold).

Measured with the stack search (nnmem, against 26c061c9, CPU, ``--base``; MB over the count
before the network):

    case                          peak    between steps   26c061c9 peak   between
    mlp static holds pred        144.1        115.1            144.1        115.1
    mlp static holds all         162.0        135.1            144.1        115.1
    mlp dynamic holds pred       189.1        115.0            189.1        115.0
    mlp dynamic holds all        229.1        175.0            189.1        115.0
    cnn static holds pred         68.9         29.7             68.9         29.7
    cnn static holds all          68.9         31.7             68.9         29.7
    cnn dynamic holds pred        94.4         29.7             94.4         29.7
    cnn dynamic holds all         96.4         35.7             94.4         29.7

Holding the prediction costs nothing measurable; holding every layer costs those layers'
values (the MLP's 10 ReLU outputs are 20 MB).  In dynamic mode with the graph defined anew
each step it costs 3 times that: ``loss.forward()`` of a dynamic graph runs it through a plan
cached on ``loss``, which refers back to ``loss`` (``_runner.py``), so a step's graph is freed
by Python's cyclic garbage collector, not when the program drops it, and the values it held
live until then (with ``gc.collect()`` before the count, 135.0 MB: the 20 MB).

With the count of references that replaced the search (nnheld, against bbd61c07, the same
way): every case the same to 0.1 MB (peak and between steps), but ``mlp dynamic holds all``
between steps, 155.0 MB for bbd61c07's 175.0 (one run each; what the cyclic collector has
freed by then), and the prediction read in every case.
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


def _in_use(libc) -> int:
    m = libc.mallinfo2()
    return m.uordblks + m.hblkhd


def _case(network: str, dynamic: bool, hold_all: bool) -> dict:
    import numpy as np
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    import stadyn.compat.nnabla as nn
    import stadyn.compat.nnabla.functions as F
    import stadyn.compat.nnabla.parametric_functions as PF
    import stadyn.compat.nnabla.solvers as S

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    peak = [0]

    class Sampler(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            peak[0] = max(peak[0], _in_use(libc))
            return out

    rng = np.random.RandomState(0)
    if network == "mlp":
        batch, shape = 512, (1024,)
    else:
        batch, shape = 64, (3, 32, 32)
    x = nn.Variable((batch,) + shape)
    t = nn.Variable((batch, 1))

    def define():
        layers = []
        h = x
        if network == "mlp":
            for i in range(10):
                h = F.relu(PF.affine(h, 1024, name=f"l{i}"))
                layers.append(h)
        else:
            for i, maps in enumerate((16, 32, 32)):
                h = PF.convolution(h, maps, (3, 3), pad=(1, 1), name=f"c{i}")
                h = F.relu(PF.batch_normalization(h, name=f"bn{i}"))
                if i < 2:
                    h = F.max_pooling(h, (2, 2))
                layers.append(h)
        pred = PF.affine(h, 10, name="out")
        loss = F.mean(F.softmax_cross_entropy(pred, t))
        return pred, loss, (layers if hold_all else [])

    torch.set_num_threads(1)
    start = _in_use(libc)         # before the parameters, the graph and its plans exist
    if not dynamic:
        pred, loss, layers = define()
    solver = None
    results = {}
    for step in range(4):
        x.d = rng.randn(batch, *shape)
        t.d = rng.randint(0, 10, (batch, 1))
        measured = step == 3
        peak[0] = _in_use(libc)
        mode = Sampler() if measured else None
        if mode is not None:
            mode.__enter__()
        try:
            if dynamic:
                with nn.auto_forward():
                    pred, loss, layers = define()
            if solver is None:
                solver = S.Sgd(0.01)
                solver.set_parameters(nn.get_parameters())
            solver.zero_grad()
            loss.forward(clear_no_need_grad=True)
            loss.backward(clear_buffer=True)
            solver.update()
        finally:
            if mode is not None:
                mode.__exit__(None, None, None)
        if step == 2:             # (a dispatch mode keeps more alive after the step)
            results["between_steps_MB"] = (_in_use(libc) - start) / 2**20
        if measured:
            results.update(peak_MB=(peak[0] - start) / 2**20,
                           pred_read=bool(np.asarray(pred.d).any()))
    return results


CASES = [(n, d, h) for n in ("mlp", "cnn") for d in (False, True) for h in (False, True)]


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="another checkout's src folder, run beside this one")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        network, dynamic, hold_all = json.loads(args.case)
        print(json.dumps(_case(network, dynamic, hold_all)))
        return
    here = os.path.join(os.path.dirname(HERE), "src")
    trees = [("this", here)] + ([("base", args.base)] if args.base else [])
    print(f"{'case':34s} " + " ".join(f"{name + ' peak':>11s} {name + ' between':>13s}"
                                        for name, _ in trees) + "  pred read")
    for case in CASES:
        row = []
        for _, src in trees:
            env = dict(os.environ, PYTHONPATH=src, OMP_NUM_THREADS="1")
            out = subprocess.run([sys.executable, __file__, "--case", json.dumps(case)], env=env,
                                 capture_output=True, text=True, check=True)
            row.append(json.loads(out.stdout.strip().splitlines()[-1]))
        network, dynamic, hold_all = case
        name = (f"{network} {'dynamic' if dynamic else 'static'} holds "
                f"{'all' if hold_all else 'pred'}")
        print(f"{name:34s} " + " ".join(f"{r['peak_MB']:9.1f}MB {r['between_steps_MB']:11.1f}MB"
                                        for r in row)
              + "  " + "/".join("yes" if r["pred_read"] else "zeros" for r in row))


if __name__ == "__main__":
    main(sys.argv[1:])
