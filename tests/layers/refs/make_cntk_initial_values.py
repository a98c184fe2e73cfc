"""Make ``cntk27_initial_values.npz``: the initial values CNTK 2.7 gives the parameters of a
few layers built one after the other in a fresh process (``test_cntk_initial_values.py``
builds the same on Stadyn and compares them bit for bit).  Run with CNTK 2.7's Python::

    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \\
        tests/layers/refs/make_cntk_initial_values.py

The build itself is ``build`` below, shared with the test (it parses under Python 3.6).
"""

import os
import sys

import numpy as np


def build(C):
    """Layers and parameters in a fixed order; returns {name: initial value}.  Auto-selected
    seeds are taken in this order (CNTK numbers them 0, 1, 2, ... from the start of the
    process), so the order is part of what is compared; at the end CNTK's fixed random seed
    is set (every auto-selected seed is then the fixed one)."""
    out = {}
    x = C.input_variable(3)
    d1 = C.layers.Dense(4)
    d2 = C.layers.Dense(2, activation=C.relu)
    d2(d1(x))
    out["dense1.W"], out["dense1.b"] = d1.W.value, d1.b.value
    out["dense2.W"] = d2.W.value
    first, last = C.layers.Dense(5), C.layers.Dense(2)
    C.layers.Sequential([first, C.layers.Dropout(0.5), last])(x)
    out["mlp0.W"], out["mlp2.W"] = first.W.value, last.W.value
    conv = C.layers.Convolution((3, 3), 4, pad=True)
    conv(C.input_variable((2, 5, 5)))
    out["conv.W"] = conv.W.value
    deconv = C.layers.ConvolutionTranspose((2, 2), 3)
    deconv(C.input_variable((2, 4, 4)))
    out["deconv.W"] = deconv.W.value
    emb = C.layers.Embedding(3)
    emb(C.input_variable(6))
    out["embedding.E"] = emb.E.value
    for name, step in [("lstm", C.layers.LSTM(3)), ("gru", C.layers.GRU(2)),
                       ("rnn", C.layers.RNNStep(2))]:
        C.layers.Recurrence(step)(C.sequence.input_variable(4))
        for p in sorted(step.parameters, key=lambda p: p.name):
            out["%s.%s" % (name, p.name)] = p.value
    for name, step in [("lstm_peep", C.layers.LSTM(3, use_peepholes=True)),
                       ("lstm_proj", C.layers.LSTM(3, cell_shape=4,
                                                   enable_self_stabilization=True))]:
        C.layers.Recurrence(step)(C.sequence.input_variable(2))
        for p in sorted(step.parameters, key=lambda p: p.name):
            out["%s.%s" % (name, p.name)] = p.value
    normal = C.layers.Dense(2, init=C.he_normal())      # takes a seed (values: not compared)
    constant = C.layers.Dense(2, init=0.25)             # takes none
    after = C.layers.Dense(2)
    after(constant(normal(x)))
    out["dense_constant.W"], out["dense_after_normal.W"] = constant.W.value, after.W.value
    out["parameter_glorot"] = C.parameter((3, 2), init=C.glorot_uniform()).value
    out["parameter_uniform_seed"] = C.parameter((5,), init=C.uniform(0.3, seed=11)).value
    out["parameter_xavier_seed"] = C.parameter((4, 3), init=C.xavier(seed=12)).value
    out["parameter_he_uniform"] = C.parameter((4, 3), init=C.he_uniform()).value
    out["parameter_glorot_scaled"] = C.parameter((2, 2, 3),
                                                 init=C.glorot_uniform(scale=2.0)).value
    out["after_all"] = C.parameter((3,), init=C.uniform(1.0)).value
    C.cntk_py.set_fixed_random_seed(1)      # from here every auto-selected seed is 1
    fixed_a, fixed_b = C.layers.Dense(4), C.layers.Dense(4)
    fixed_b(fixed_a(x))
    out["fixed_a.W"], out["fixed_b.W"] = fixed_a.W.value, fixed_b.W.value
    out["fixed_parameter"] = C.parameter((2,), init=C.glorot_uniform()).value
    return {k: np.asarray(v, np.float32) for k, v in out.items()}


if __name__ == "__main__":
    import cntk as C
    values = build(C)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cntk27_initial_values.npz")
    np.savez(path, **values)
    print("wrote %d arrays to %s" % (len(values), path), file=sys.stderr)
