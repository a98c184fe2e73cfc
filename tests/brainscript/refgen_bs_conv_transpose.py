"""Write the CNTK 2.7 references of test_bs_conv_transpose.py
(tests/fixtures/brainscript/conv_transpose.json): BrainScript's raw ``ConvolutionTranspose``
node (CNTK.core.bs:624: a ``Convolution`` node with ``transpose = true``) computed by CNTK 2.7's
Python ``convolution_transpose``, the same ConvolutionNode.

    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \
        tests/brainscript/refgen_bs_conv_transpose.py

Python's shapes are BrainScript's dimensions reversed (the weight ``[3:3:2:4]``, filter 3 x 3,
2 output maps, 4 input channels, is Python ``(4, 2, 3, 3)``); the inputs are a minibatch of two
samples; the BrainScript of each case is in the test.  Parses under Python 3.6.
"""

import json
import os

import numpy as np

import cntk as C

OUT = os.path.join(os.path.dirname(__file__), "..", "fixtures", "brainscript",
                   "conv_transpose.json")


def data(shape, seed):
    rng = np.random.RandomState(seed)
    return rng.uniform(-1.0, 1.0, shape).astype(np.float32)


# name -> (input shape (C, H, W), weight shape (in, out, kH, kW), strides (H, W),
#          auto-padding (H, W), output shape (C, H, W) or None), Python's order
CASES = {
    "padded": ((4, 5, 6), (4, 2, 3, 3), (1, 1), (True, True), None),
    "strided": ((3, 4, 5), (3, 2, 3, 3), (2, 2), (True, True), None),
    "unpadded": ((3, 4, 5), (3, 2, 2, 3), (2, 1), (False, False), None),
    "mixed": ((2, 4, 4), (2, 3, 3, 2), (2, 3), (False, True), None),
    "output_shape": ((3, 4, 5), (3, 2, 3, 3), (2, 2), (True, True), (2, 8, 10)),
}


def main():
    out = {}
    for k, (name, (xs, ws, strides, pads, shape)) in enumerate(sorted(CASES.items())):
        x_value, w_value = data((2,) + xs, 10 + k), data(ws, 20 + k)
        x = C.input_variable(xs)
        w = C.constant(w_value)
        kwargs = {} if shape is None else {"output_shape": shape}
        y = C.convolution_transpose(w, x, strides=strides, auto_padding=[False] + list(pads),
                                    **kwargs)
        out[name] = {"x": x_value.tolist(), "w": w_value.tolist(),
                     "y": np.asarray(y.eval({x: x_value})).tolist()}
    with open(OUT, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
