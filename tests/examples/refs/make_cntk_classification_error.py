"""Writes cntk_classification_error.json: CNTK 2.7's ``classification_error`` on equal outputs
(ties) and on soft (not one-hot) targets, the cases the gallery's programs met (an all-zero
model in CNTK 101, the autoencoder of CNTK 105 scoring pixels against pixels).

Run with CNTK 2.7 (Python 3.6):
    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \\
        make_cntk_classification_error.py
"""
import json
import os

import numpy as np
import cntk as C

EYE4 = np.eye(4).tolist()
CASES = [
    # equal outputs, one-hot targets (topN 1 and 2)
    {"z": [[0, 0, 0, 0]] * 3 + [[1, 1, 0, 0]] * 2 + [[0, 1, 1, 1]] * 3 + [[2, 1, 1, 0]] * 3,
     "t": [EYE4[i] for i in (0, 1, 3, 0, 1, 1, 2, 3, 0, 1, 2)], "topN": [1, 2]},
    # soft targets (several classes at the maximum, fractions)
    {"z": [[0.1, 0.9, 0], [0.9, 0.1, 0], [0, 0.1, 0.9], [0.1, 0.9, 0], [0.1, 0.9, 0],
           [0.9, 0.1, 0], [0.1, 0.9, 0], [0.1, 0.9, 0], [0.1, 0.2, 0.3], [0.9, 0.2, 0.3],
           [0.1, 0.2, 0.9]],
     "t": [[1, 1, 0], [1, 1, 0], [1, 1, 0], [0.5, 0.4, 0.1], [0.4, 0.5, 0.1], [0.4, 0.5, 0.1],
           [0.4, 0.5, 0.6], [0.4, 0.4, 0.1], [0.4, 0.5, 0.1], [1, 0, 1], [1, 0, 1]],
     "topN": [1]},
]


def main():
    out = []
    for case in CASES:
        zs = np.array(case["z"], np.float32)
        ts = np.array(case["t"], np.float32)
        z = C.input_variable(zs.shape[1])
        t = C.input_variable(ts.shape[1])
        for k in case["topN"]:
            err = C.classification_error(z, t, topN=k)
            # one sample at a time: with topN > 1 CNTK sums over the minibatch
            values = [float(np.asarray(err.eval({z: zs[i:i + 1], t: ts[i:i + 1]})).ravel()[0])
                      for i in range(len(zs))]
            out.append({"z": case["z"], "t": case["t"], "topN": k, "error": values})
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "cntk_classification_error.json")
    with open(path, "w") as f:
        json.dump({"cntk": C.__version__, "cases": out}, f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()
