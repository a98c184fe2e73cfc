"""Write the CNTK 2.7 references of test_bs_tensor_nodes.py (tests/fixtures/brainscript/
tensor_nodes.json): each BrainScript node's output, computed by the CNTK 2.7 Python op that is
the same ComputationNetworkLib node.

    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \
        tests/brainscript/refgen_bs_tensor_nodes.py

Python's shapes are CNTK's BrainScript dimensions reversed: BrainScript ``[5:4:3]`` is Python
``(3, 4, 5)``, BrainScript axis 1 is Python's last axis.  The inputs are a minibatch of two
samples; the BrainScript of each case is in the test.  Parses under Python 3.6.
"""

import json
import os

import numpy as np

import cntk as C

OUT = os.path.join(os.path.dirname(__file__), "..", "fixtures", "brainscript",
                   "tensor_nodes.json")


def data(shape, seed):
    rng = np.random.RandomState(seed)
    return rng.uniform(-1.0, 1.0, shape).astype(np.float32)


def run(fn, x_value, shape):
    x = C.input_variable(shape)
    return np.asarray(fn(x).eval({x: x_value}), dtype=np.float64)


def lrn(x, k=1.0, n=1, alpha=0.5, beta=0.75):
    """The Local Response Normalization of CNTK's AlexNet/ConvNetLRN configs, in Python ops:
    a 3-D convolution over (C, H, W) with a (2n+1, 1, 1) kernel of alpha / (2n+1)."""
    x2 = C.element_times(x, x)
    x2s = C.reshape(x2, (1,) + x.shape)                  # SplitDimension (x2, 3, 1)
    w = C.constant(alpha / (2 * n + 1), (1, 1, 2 * n + 1, 1, 1))
    y = C.convolution(w, x2s, strides=1, auto_padding=[True])
    b = C.reshape(y, x.shape)                            # FlattenDimensions (y, 3, 2)
    den = C.exp(beta * C.log(k + b))
    return C.element_times(x, C.reciprocal(den))


def main():
    x = data((2, 3, 4, 5), 1)                 # BrainScript Input {5:4:3}
    ties = np.zeros((2, 3, 4, 5), np.float32)
    ties[0, 1, 2, 3] = ties[0, 2, 0, 0] = 2.0     # two maxima: CNTK keeps the first
    ties[1] = x[1]
    v = data((2, 7), 2)                       # Input {7}
    u = data((2, 7), 3)
    e = data((2, 7), 4)                       # Parameter (7, 2): Python shape (2, 7)
    img = data((2, 3, 4, 4), 5)               # Input {4:4:3}
    w_conv = data((2, 3, 3, 3), 6)            # ParameterTensor {(3:3:3:2)}
    w_deconv = data((3, 2, 3, 3), 7)          # ConvolutionTransposeLayer {2, (3:3), 3}.W
    refs = {
        "x": x.tolist(), "ties": ties.tolist(), "v": v.tolist(), "u": u.tolist(),
        "E": e.tolist(), "img": img.tolist(), "w_conv": w_conv.tolist(),
        "w_deconv": w_deconv.tolist(),
        "lrn": run(lrn, x, (3, 4, 5)).tolist(),
        "flatten": run(lambda t: C.reshape(t, (12,), 0, 2), x, (3, 4, 5)).tolist(),
        "split": run(lambda t: C.reshape(t, (2, 2), 1, 2), x, (3, 4, 5)).tolist(),
        "row_slice": run(lambda t: C.slice(t, 2, 1, 3), x, (3, 4, 5)).tolist(),
        "slice_from_end": run(lambda t: C.slice(t, 1, -3, 0), x, (3, 4, 5)).tolist(),
        "transpose": run(lambda t: C.swapaxes(t, 1, 2), x, (3, 4, 5)).tolist(),
        "transpose_vector": run(lambda t: C.swapaxes(C.reshape(t, (1, 7)), 0, 1),
                                v, (7,)).tolist(),
        "hardmax": run(C.hardmax, ties, (3, 4, 5)).tolist(),
        "sum_elements": run(lambda t: C.reduce_sum(t, axis=C.Axis.all_axes()), x,
                            (3, 4, 5)).tolist(),
    }
    a, b = C.input_variable(7), C.input_variable(7)
    refs["transpose_times_data"] = np.asarray(
        C.times_transpose(a, b).eval({a: v, b: u}), dtype=np.float64).tolist()
    refs["transpose_times_param"] = run(lambda t: C.times_transpose(t, C.constant(e)), v,
                                        (7,)).tolist()
    refs["convolution"] = run(lambda t: C.convolution(C.constant(w_conv), t, strides=(1, 2),
                                                      auto_padding=[False, False, True]),
                              img, (3, 4, 4)).tolist()
    refs["deconvolution"] = run(
        lambda t: C.convolution_transpose(C.constant(w_deconv), t, strides=(2, 2),
                                          auto_padding=[False, True, True]),
        img, (3, 4, 4)).tolist()
    for kind, name in ((C.MAX_POOLING, "max_pooling"), (C.AVG_POOLING, "average_pooling")):
        # MaxPooling (x, 2, 3, 2, 1): a window 2 wide, 3 high, every 2 columns and each row
        refs[name] = run(lambda t: C.pooling(t, kind, (3, 2), strides=(1, 2),
                                             auto_padding=[False]), img, (3, 4, 4)).tolist()
    # MaxUnpoolingLayer {(2:2), stride = (2:2)} (MaxPoolingLayer {(2:2), stride = (2:2)} (x), x)
    refs["max_unpooling"] = run(
        lambda t: C.unpooling(C.pooling(t, C.MAX_POOLING, (2, 2), strides=(2, 2)), t,
                              C.MAX_UNPOOLING, (2, 2), strides=(2, 2)), img, (3, 4, 4)).tolist()
    with open(OUT, "w") as f:
        json.dump(refs, f)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
