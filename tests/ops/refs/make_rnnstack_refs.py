"""Make ``rnnstack_cntk27.npz``: CNTK 2.7's own numbers for ``optimized_rnnstack``.

CNTK 2.7 refuses to run ``optimized_rnnstack`` on a CPU ("RNNForward -> Feature Not
Implemented"); it builds the op (and infers the weight's shape, ``(count / H, H)``), and its own
``cntk.misc.optimized_rnnstack_converter.convert_optimized_rnnstack`` turns the stack into its
layers' ``Recurrence(LSTM/RNNStep)`` with the flat weights split as cuDNN lays them out.  This
script sets the flat weights, converts, and records the outputs and the input gradient (of
the sum of the outputs) on ragged sequences of lengths 3, 1, 5.  GRU is left out: the
converter has no GRU (CNTK's note: cuDNN's GRU is not CNTK's).

Regenerate (CNTK 2.7 on Python 3.6, see tests/compat/README.md):
    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \\
        tests/ops/refs/make_rnnstack_refs.py
"""

import os

import numpy as np
import cntk as C
from cntk.misc.optimized_rnnstack_converter import convert_optimized_rnnstack

LENGTHS = (3, 1, 5)
CASES = [("lstm", 1, False), ("lstm", 2, True), ("rnnTanh", 2, False), ("rnnReLU", 1, True)]
INPUT, HIDDEN = 3, 4


def main():
    rng = np.random.RandomState(21)
    out = {"lengths": np.array(LENGTHS)}
    seqs = [rng.standard_normal((n, INPUT)).astype(np.float32) for n in LENGTHS]
    padded = np.zeros((len(LENGTHS), max(LENGTHS), INPUT), np.float32)
    for b, s in enumerate(seqs):
        padded[b, :len(s)] = s
    out["x"] = padded
    for k, (op, layers, bidirectional) in enumerate(CASES):
        x = C.sequence.input_variable(INPUT, needs_gradient=True)
        w = C.parameter((C.InferredDimension, INPUT))
        f = C.optimized_rnnstack(x, w, HIDDEN, layers, bidirectional=bidirectional,
                                 recurrent_op=op)
        w.value = (rng.standard_normal(w.shape) * 0.4).astype(np.float32)
        g = convert_optimized_rnnstack(f)
        arg = g.arguments[0]
        y = g.eval({arg: seqs})
        grad = g.grad({arg: seqs}, wrt=[arg])
        width = y[0].shape[-1]
        ys = np.zeros((len(LENGTHS), max(LENGTHS), width), np.float32)
        gs = np.zeros_like(padded)
        for b, n in enumerate(LENGTHS):
            ys[b, :n] = y[b]
            gs[b, :n] = grad[b]
        out[f"{k}_weights"] = w.value
        out[f"{k}_y"] = ys
        out[f"{k}_grad_x"] = gs
        out[f"{k}_weight_shape"] = np.array(w.shape)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rnnstack_cntk27.npz")
    np.savez_compressed(path, **out)
    print("wrote", path)


if __name__ == "__main__":
    main()
