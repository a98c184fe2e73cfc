"""Write the CNTK 2.7 references of test_bs_core_nodes.py's ``CosDistanceWithNegativeSamples``
and raw ``BatchNormalization`` (tests/fixtures/brainscript/core_nodes_cntk27.json): CNTK 2.7's
``C.cosine_distance_with_negative_samples`` is the same ComputationNetworkLib node
(CosDistanceWithNegativeSamplesNode, LinearAlgebraNodes.h:1612), value and gradients (of the
sum of the outputs); ``C.batch_normalization`` is BatchNormalizationNode: two training
forwards of 3 and 2 samples (the running statistics and count after each) and an inference
forward, for normalization time constants 0 (this minibatch's statistics alone), 5 and -1
(corpus-level averages).

    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \
        tests/brainscript/refgen_bs_core_nodes.py

The inputs are a minibatch of 5 samples of BrainScript ``[4]`` (Python ``(4,)``) and two
sequences of 3 steps of ``[3]``; the BrainScript of each case is in the test.  Parses under
Python 3.6.
"""

import json
import os

import numpy as np

import cntk as C

OUT = os.path.join(os.path.dirname(__file__), "..", "fixtures", "brainscript",
                   "core_nodes_cntk27.json")


def _case(x, y, shift, count, sequences):
    make = C.sequence.input_variable if sequences else C.input_variable
    xv = make(x[0].shape[-1], needs_gradient=True)
    yv = make(x[0].shape[-1], needs_gradient=True)
    out = C.cosine_distance_with_negative_samples(xv, yv, shift, count)
    grads, value = out.grad({xv: x, yv: y}, wrt=[xv, yv], outputs=[out])

    def listed(v):
        return [np.asarray(s, np.float64).tolist() for s in v] if sequences else \
            np.asarray(v, np.float64).tolist()
    return {"x": listed(x), "y": listed(y), "shift": shift, "count": count,
            "value": listed(value), "grad_x": listed(grads[xv]), "grad_y": listed(grads[yv])}


def _batch_norm(x, time_constant):
    scale = np.array([1.5, 0.5, 2.0, 1.0], np.float32)
    bias = np.array([0.25, -1.0, 0.0, 0.5], np.float32)
    mean = C.constant(np.array([0.5, 0.0, -0.5, 1.0], np.float32))
    var = C.constant(np.array([2.0, 1.0, 0.5, 4.0], np.float32))
    count = C.constant(np.zeros((), np.float32))
    v = C.input_variable(4)
    out = C.batch_normalization(v, C.parameter(init=scale), C.parameter(init=bias), mean, var,
                                spatial=False, normalization_time_constant=time_constant,
                                epsilon=1e-5, running_count=count)
    steps = []
    for half in (x[:3], x[3:]):
        # a forward that keeps state for a backward runs in training mode
        value = out.forward({v: half}, keep_for_backward={out.output})[1][out.output]
        steps.append({"x": half.tolist(), "value": np.asarray(value, np.float64).tolist(),
                      "mean": np.asarray(mean.value, np.float64).tolist(),
                      "var": np.asarray(var.value, np.float64).tolist(),
                      "count": float(count.value)})
    test = out.eval({v: x})
    return {"scale": scale.tolist(), "bias": bias.tolist(), "time_constant": time_constant,
            "training": steps, "inference": np.asarray(test, np.float64).tolist()}


def main():
    rng = np.random.RandomState(16)
    x = rng.uniform(-1, 1, (5, 4)).astype(np.float32)
    y = rng.uniform(-1, 1, (5, 4)).astype(np.float32)
    sx = [rng.uniform(-1, 1, (3, 3)).astype(np.float32) for _ in range(2)]
    sy = [rng.uniform(-1, 1, (3, 3)).astype(np.float32) for _ in range(2)]
    refs = {"cos_neg_1_2": _case(x, y, 1, 2, False),
            "cos_neg_2_3": _case(x, y, 2, 3, False),
            "cos_neg_sequences": _case(sx, sy, 1, 2, True),
            "batch_norm_replace": _batch_norm(x, 0), "batch_norm_5": _batch_norm(x, 5),
            "batch_norm_corpus": _batch_norm(x, -1)}
    # shift 0 and no negatives (LinearAlgebraNodes.h:1790-1793 accepts both)
    refs["cos_neg_0_2"] = _case(x, y, 0, 2, False)
    refs["cos_neg_1_0"] = _case(x, y, 1, 0, False)
    # sequences of three lengths: CNTK packs them into parallel streams
    rx = [rng.uniform(-1, 1, (n, 3)).astype(np.float32) for n in (3, 1, 2)]
    ry = [rng.uniform(-1, 1, (n, 3)).astype(np.float32) for n in (3, 1, 2)]
    refs["cos_neg_ragged_1_2"] = _case(rx, ry, 1, 2, True)
    rx = [rng.uniform(-1, 1, (n, 3)).astype(np.float32) for n in (4, 1, 1, 2)]
    ry = [rng.uniform(-1, 1, (n, 3)).astype(np.float32) for n in (4, 1, 1, 2)]
    refs["cos_neg_ragged_2_3"] = _case(rx, ry, 2, 3, True)
    with open(OUT, "w") as f:
        json.dump(refs, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
