"""Write the CNTK 2.7 references of test_bs_norm_rnnstack.py's layer normalisation
(tests/fixtures/brainscript/layer_norm_cntk27.json).

CNTK.core.bs's ``LayerNormalizationLayer {initScale, initBias}`` has one scalar gain and one
scalar bias and no epsilon; CNTK 2.7's Python ``layers.LayerNormalization`` has a scale and a
bias per element and adds ``epsilon`` to the standard deviation.  With ``epsilon = 0`` and the
per-element parameters all starting at the same value the two compute the same function, and
the scalar gain's (bias's) gradient is the sum of the per-element ones: that is what this
records, for ``loss = sum (y .* r)`` over a minibatch of 3 samples of shape ``[5]`` and
``[4 x 2]`` (Python ``(2, 4)``), with a fixed random ``r``.

    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \
        tests/brainscript/refgen_bs_layer_norm.py

Parses under Python 3.6.
"""

import json
import os

import numpy as np

import cntk as C

OUT = os.path.join(os.path.dirname(__file__), "..", "fixtures", "brainscript",
                   "layer_norm_cntk27.json")
SCALE, BIAS = 1.5, -0.25


def case(shape, seed):
    rng = np.random.RandomState(seed)
    x_value = rng.uniform(-2.0, 2.0, (3,) + shape).astype(np.float32)
    r_value = rng.uniform(-1.0, 1.0, (3,) + shape).astype(np.float32)
    x = C.input_variable(shape, needs_gradient=True)
    r = C.input_variable(shape)
    y = C.layers.LayerNormalization(initial_scale=SCALE, initial_bias=BIAS, epsilon=0)(x)
    loss = C.reduce_sum(y * r, axis=C.Axis.all_static_axes())
    scale, bias = (next(p for p in loss.parameters if p.name == n) for n in ("scale", "bias"))
    grads = loss.grad({x: x_value, r: r_value}, wrt=[x, scale, bias])
    return {"x": x_value.tolist(), "r": r_value.tolist(),
            "y": np.asarray(y.eval({x: x_value})).tolist(),
            "grad_x": np.asarray(grads[x]).tolist(),
            "grad_gain": float(np.sum(grads[scale])), "grad_bias": float(np.sum(grads[bias]))}


def main():
    refs = {"scale": SCALE, "bias": BIAS, "vector": case((5,), 1), "matrix": case((2, 4), 2)}
    with open(OUT, "w") as f:
        json.dump(refs, f)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
