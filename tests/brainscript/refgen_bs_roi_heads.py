"""Write the CNTK 2.7 references of test_bs_roi_heads.py (tests/fixtures/brainscript/
roi_heads.json): what Fast R-CNN's BrainScript (Examples/Image/Detection/FastRCNN/BrainScript/
fastrcnn.cntk) does after its ``ROIPooling``, computed by the CNTK 2.7 Python ops that are the
same ComputationNetworkLib nodes: ``CrossEntropyWithSoftmax (labels, z, axis = 1)`` and
``ClassificationError (labels, z, axis = 1)``, which CNTK.core.bs composes of
``ReduceLogSum``/``ReduceSum`` (and ``ReduceMax``, ``==``, ``!=``, ``>=``, ``ReduceMean``)
along that 1-based axis.  (The legacy ``Times`` the test checks too has no Python form: CNTK
2.7's Python API refuses it; its reference is NumPy's.)

    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \
        tests/brainscript/refgen_bs_roi_heads.py

Python's shapes are BrainScript's dimensions reversed; the inputs are a minibatch of two
samples.  Parses under Python 3.6.
"""

import json
import os

import numpy as np

import cntk as C

OUT = os.path.join(os.path.dirname(__file__), "..", "fixtures", "brainscript", "roi_heads.json")


def data(shape, seed):
    rng = np.random.RandomState(seed)
    return rng.uniform(-1.0, 1.0, shape).astype(np.float32)


def main():
    refs = {}
    # the criteria along axis 1 of [4 x 3] (4 classes, 3 regions): Python (3, 4), axis -1
    z = data((2, 3, 4), 3)
    z[1, 2] = [0.5, 0.5, -1.0, 0.0]                # a tie: both maxima count as predictions
    labels = np.zeros((2, 3, 4), np.float32)
    for s, r, c in ((0, 0, 1), (0, 1, 3), (0, 2, 0), (1, 0, 2), (1, 1, 1), (1, 2, 0)):
        labels[s, r, c] = 1.0
    labels[0, 1] = np.eye(4, dtype=np.float32)[int(np.argmax(z[0, 1]))]   # one right
    zv, lv = C.input_variable(z.shape[1:]), C.input_variable(z.shape[1:])
    ce = C.reduce_log_sum_exp(zv, axis=-1) - C.reduce_sum(lv * zv, axis=-1)
    ax_max = C.reduce_max(zv, axis=-1)
    wrong = C.not_equal(lv, C.equal(zv, ax_max))
    err = C.reduce_mean(C.greater_equal(C.reduce_sum(wrong, axis=-1), 1.0),
                        axis=C.Axis.all_static_axes())
    feed = {zv: z, lv: labels}
    refs.update(z=z.tolist(), labels=labels.tolist(), ce=ce.eval(feed).tolist(),
                errs=err.eval(feed).tolist())

    with open(OUT, "w") as f_out:
        json.dump({k: np.round(np.asarray(v, np.float64), 7).tolist() for k, v in refs.items()},
                  f_out)
        f_out.write("\n")


if __name__ == "__main__":
    main()
