"""Write the CNTK 2.7 references of test_bs_core_names.py's LogPlus and WeightedLogistic
(tests/fixtures/brainscript/core_names_cntk27.json): each computed by the CNTK 2.7 Python op that
is the same ComputationNetworkLib node (``C.log_add_exp``: LogPlusNode;
``C.weighted_binary_cross_entropy``: LogisticNode with its weight input), value and gradients.

    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \
        tests/brainscript/refgen_bs_core_names.py

The inputs are a minibatch of samples of BrainScript ``[4]`` (Python ``(4,)``) and ``[1]``, and
for ``weighted_logistic_sequences`` two sequences of ``[1]`` of lengths 2 and 3; the
BrainScript of each case is in the test.  Parses under Python 3.6.
"""

import json
import os

import numpy as np

import cntk as C

OUT = os.path.join(os.path.dirname(__file__), "..", "fixtures", "brainscript",
                   "core_names_cntk27.json")


def main():
    # LogPlus: ordinary values, a large gap (the log1p of a tiny exp), equal values, CNTK's
    # log of 0 (-85.1) beside 0
    a = np.array([[0.5, -1.0, 30.0, -85.1], [2.0, 2.0, -20.0, 0.0]], np.float32)
    b = np.array([[1.5, 3.0, -30.0, 0.0], [2.0, -0.5, 10.0, -85.1]], np.float32)
    xa, xb = C.input_variable(4, needs_gradient=True), C.input_variable(4, needs_gradient=True)
    lp = C.log_add_exp(xa, xb)
    grads, value = lp.grad({xa: a, xb: b}, wrt=[xa, xb], outputs=[lp])
    # WeightedLogistic (label, probability, instanceWeight): one [1] output and label a sample
    p = np.array([[0.25], [0.5], [0.875], [0.125]], np.float32)
    y = np.array([[1.0], [0.0], [1.0], [0.0]], np.float32)
    w = np.array([[3.0], [1.0], [0.5], [2.0]], np.float32)
    xp = C.input_variable(1, needs_gradient=True)
    xy, xw = C.input_variable(1), C.input_variable(1)
    wl = C.weighted_binary_cross_entropy(xp, xy, xw)
    wl_grad, wl_value = wl.grad({xp: p, xy: y, xw: w}, wrt=[xp], outputs=[wl])
    # the same over sequences of unequal lengths (2 and 3): CNTK packs them in two streams of
    # three steps, and N counts every column, the gap too (LogisticNode's ones.GetNumCols())
    sp = [np.array([[0.25], [0.5]], np.float32), np.array([[0.875], [0.125], [0.75]], np.float32)]
    sy = [np.array([[1.0], [0.0]], np.float32), np.array([[1.0], [0.0], [1.0]], np.float32)]
    sw = [np.array([[3.0], [1.0]], np.float32), np.array([[0.5], [2.0], [1.0]], np.float32)]
    qp = C.sequence.input_variable(1, needs_gradient=True)
    qy, qw = C.sequence.input_variable(1), C.sequence.input_variable(1)
    swl = C.weighted_binary_cross_entropy(qp, qy, qw)
    swl_grad, swl_value = swl.grad({qp: sp, qy: sy, qw: sw}, wrt=[qp], outputs=[swl])
    refs = {
        "log_plus": {"a": a.tolist(), "b": b.tolist(),
                     "value": np.asarray(value, np.float64).tolist(),
                     "grad_a": np.asarray(grads[xa], np.float64).tolist(),
                     "grad_b": np.asarray(grads[xb], np.float64).tolist()},
        "weighted_logistic": {"p": p.tolist(), "y": y.tolist(), "w": w.tolist(),
                              "value": np.asarray(wl_value, np.float64).tolist(),
                              "grad_p": np.asarray(wl_grad, np.float64).tolist()},
        "weighted_logistic_sequences": {
            "p": [v.tolist() for v in sp], "y": [v.tolist() for v in sy],
            "w": [v.tolist() for v in sw],
            "value": np.asarray(swl_value, np.float64).reshape(-1).tolist(),
            "grad_p": [np.asarray(g, np.float64).tolist() for g in swl_grad]},
    }
    with open(OUT, "w") as f:
        json.dump(refs, f, indent=1)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
