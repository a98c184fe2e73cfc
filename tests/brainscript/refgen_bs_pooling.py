"""Write the CNTK 2.7 references of test_bs_pooling.py (tests/fixtures/brainscript/pooling.json):
BrainScript's ``Pooling``, ``MaxUnpooling``, ``ROIPooling`` and raw ``Convolution`` nodes on
auto-padding CNTK makes asymmetric (even windows, strides of 2 or more) or negative before the
first window (strides of 3 or more), ``ceilOutDim`` and explicit pads (``MaxUnpooling`` too),
computed by the CNTK 2.7 Python ops that are the same ComputationNetworkLib nodes.

    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \
        tests/brainscript/refgen_bs_pooling.py

Python's shapes are BrainScript's dimensions reversed (BrainScript ``Input {5:4:3}`` is Python
``(3, 4, 5)``); the inputs are a minibatch of two samples; the BrainScript of each case is in
the test.  Parses under Python 3.6.
"""

import json
import os

import numpy as np

import cntk as C

OUT = os.path.join(os.path.dirname(__file__), "..", "fixtures", "brainscript", "pooling.json")


def data(shape, seed):
    rng = np.random.RandomState(seed)
    return rng.uniform(-1.0, 1.0, shape).astype(np.float32)


def pool(x_value, kind, window, strides, include_pad=False, pads=(False, True, True),
         ceil=False):
    """``Pooling (x, kind, window, stride = strides, includePad = include_pad, ceilOutDim =
    ceil)`` (autoPadding ``pads``, by default true on the window's axes, false on the channel
    axis); ``window``/``strides``/``pads`` in Python's order."""
    x = C.input_variable(x_value.shape[1:])
    y = C.pooling(x, C.MAX_POOLING if kind == "max" else C.AVG_POOLING, window, strides,
                  auto_padding=list(pads), ceil_out_dim=ceil, include_pad=include_pad)
    return y.eval({x: x_value})


def main():
    refs = {}
    cases = {   # name: (input shape in Python's order, seed, kind, window, strides)
        "max_even": ((2, 3, 4, 5), 1, "max", (2, 2), (1, 1)),
        "avg_stride2": ((2, 3, 5, 6), 2, "average", (3, 3), (2, 2)),
        "max_stride3": ((2, 2, 8, 9), 3, "max", (2, 2), (3, 3)),
        "avg_stride5": ((2, 1, 10, 10), 4, "average", (3, 3), (5, 5)),
    }
    for name, (shape, seed, kind, window, strides) in cases.items():
        x = data(shape, seed)
        refs[name + "_x"] = x.tolist()
        refs[name] = pool(x, kind, window, strides).tolist()
        if kind == "average":       # includePad = true: the padding counts, as zeros
            refs[name + "_inc"] = pool(x, kind, window, strides, True).tolist()
    # NDL's Pooling with autoPadding = {true, false, false}: the width padded, not the height
    refs["avg_stride2_mixed"] = pool(np.asarray(refs["avg_stride2_x"], np.float32), "average",
                                     (3, 3), (2, 2), pads=(False, False, True)).tolist()

    # ceilOutDim = true: the last window hangs over the end (no padding, then auto-padding on
    # the width only: CNTK 2.7's CPU engine reads past the sample where auto-padded windows
    # hang over the height, so no reference is taken there)
    x = data((2, 3, 6, 7), 10)
    refs["ceil_x"] = x.tolist()
    for kind, inc, key in (("max", False, "ceil_max"), ("average", False, "ceil_avg"),
                           ("average", True, "ceil_avg_inc")):
        refs[key] = pool(x, kind, (3, 3), (2, 2), inc, pads=(False, False, False),
                         ceil=True).tolist()
    x = data((2, 2, 5, 6), 11)
    refs["ceil_auto_x"] = x.tolist()
    refs["ceil_auto_avg"] = pool(x, "average", (3, 3), (2, 2), pads=(False, False, True),
                                 ceil=True).tolist()

    # explicit lowerPad = (1:0), upperPad = (0:1) (BrainScript's order: width, height) with a
    # window (3:2) every (2:1): CNTK's Python API has no explicit pads, so the reference is its
    # pad op followed by unpadded pooling (a max over a very negative padding; an average
    # without the padding: window sums over the zero-padded input / over padded ones)
    x = data((2, 3, 5, 6), 12)
    refs["pads_x"] = x.tolist()
    pattern = [(0, 0), (0, 1), (1, 0)]
    v = C.input_variable(x.shape[1:])

    def padded(value):
        return C.pad(v, pattern, constant_value=value)

    def avg(operand):
        return C.pooling(operand, C.AVG_POOLING, (2, 3), (1, 2), auto_padding=[False])
    refs["pads_max"] = C.pooling(padded(-1e30), C.MAX_POOLING, (2, 3), (1, 2),
                                 auto_padding=[False]).eval({v: x}).tolist()
    refs["pads_avg_inc"] = avg(padded(0)).eval({v: x}).tolist()
    ones = C.pad(v * 0 + 1, pattern)
    refs["pads_avg"] = (avg(padded(0)) / avg(ones)).eval({v: x}).tolist()

    # raw Convolution, kernel 2 x 2 over 3 channels, 2 maps, stride 3: lower pad -1
    img = data((2, 3, 9, 9), 5)
    w = data((2, 3, 2, 2), 6)                            # ParameterTensor {(2:2:3:2)}
    x = C.input_variable(img.shape[1:])
    y = C.convolution(C.constant(w), x, (3, 3), auto_padding=[False, True, True])
    refs.update(conv_x=img.tolist(), conv_w=w.tolist(), conv_stride3=y.eval({x: img}).tolist())

    # raw Convolution with a [2 x 9] Parameter (Python (9, 2)), kernel 3 x 3 x 1, 2 maps:
    # CNTK's engines read the weight's values kernel after kernel whatever its shape, so
    # map m's kernel is the values m * 9 ... m * 9 + 8 in memory order -- not the Parameter's
    # row m.  CNTK 2.7's Python convolution refuses a rank-2 map, so the reference is its
    # convolution with those values as a (2, 1, 3, 3) kernel
    img = data((2, 1, 3, 3), 13)
    w = data((9, 2), 14)                                 # Parameter (2, 9)
    x = C.input_variable(img.shape[1:])
    y = C.convolution(C.constant(w.reshape(2, 1, 3, 3)), x, (1, 1),
                      auto_padding=[False, True, True])
    refs.update(conv_matrix_x=img.tolist(), conv_matrix_w=w.tolist(),
                conv_matrix=y.eval({x: img}).tolist())

    # raw Convolution with explicit lowerPad = (1:0:0), upperPad = (1:1:0) (BrainScript's order:
    # width, height, channels), kernel (3:2:3) every (2:1:3), 2 maps: CNTK's Python API has no
    # explicit pads, so the reference is its pad op (zeros) followed by an unpadded convolution
    img = data((2, 3, 6, 5), 15)
    w = data((2, 3, 2, 3), 16)                           # ParameterTensor {(3:2:3:2)}
    x = C.input_variable(img.shape[1:])
    y = C.convolution(C.constant(w), C.pad(x, [(0, 0), (0, 1), (1, 1)]), (3, 1, 2),
                      auto_padding=[False])
    refs.update(conv_pads_x=img.tolist(), conv_pads_w=w.tolist(),
                conv_pads=y.eval({x: img}).tolist())

    # MaxUnpooling of a 2 x 2, stride 2 pooling of a 5 x 5 image: padded after only
    img = data((2, 2, 5, 5), 7)
    vals = data((2, 2, 3, 3), 8)
    x = C.input_variable(img.shape[1:])
    v = C.input_variable(vals.shape[1:])
    y = C.unpooling(v, x, C.MAX_UNPOOLING, (2, 2), (2, 2), auto_padding=[False, True, True])
    refs.update(unpool_x=img.tolist(), unpool_v=vals.tolist(),
                unpool=y.eval({x: img, v: vals}).tolist())

    # MaxUnpooling of overlapping windows: 2 x 2 every 1 (where two windows share a maximum,
    # the last one's value), on the same two images
    v = C.input_variable((2, 4, 4))
    x = C.input_variable(img.shape[1:])
    vals = data((2, 2, 4, 4), 18)
    y = C.unpooling(v, x, C.MAX_UNPOOLING, (2, 2), (1, 1), auto_padding=[False])
    refs.update(unpool_overlap_v=vals.tolist(), unpool_overlap=y.eval({x: img, v: vals}).tolist())

    # MaxUnpooling with explicit lowerPad = (1:0), upperPad = (0:1) and the overlapping windows
    # (3:2) every (2:1) of pads_max, on its input: CNTK's Python unpooling has no explicit
    # pads, so the reference is its pad op (a very negative padding, never a maximum), an
    # unpadded unpooling and a slice back to the input's shape
    x_value = np.asarray(refs["pads_x"], np.float32)
    vals = data((2, 3, 5, 3), 17)
    x = C.input_variable(x_value.shape[1:])
    v = C.input_variable(vals.shape[1:])
    y = C.unpooling(v, C.pad(x, pattern, constant_value=-1e30), C.MAX_UNPOOLING, (2, 3), (1, 2),
                    auto_padding=[False])
    y = C.slice(y, [1, 2], [0, 1], [5, 7])
    refs.update(unpool_pads_v=vals.tolist(), unpool_pads=y.eval({x: x_value, v: vals}).tolist())

    # ROIPooling (fm, rois, (3:2), spatialScale = 0.5): 3 regions on 8 x 6 maps of 2 channels
    fm = data((2, 2, 6, 8), 9)
    rois = np.array([[[0, 0, 15, 11], [2, 3, 9, 8], [5, 1, 6, 10]],
                     [[4, 2, 13, 5], [0, 0, 1, 1], [8, 6, 15, 11]]], np.float32)
    f = C.input_variable(fm.shape[1:])
    r = C.input_variable(rois.shape[1:])
    y = C.roipooling(f, r, C.MAX_POOLING, (2, 3), 0.5)
    refs.update(roi_fm=fm.tolist(), roi_rois=rois.tolist(),
                roi=y.eval({f: fm, r: rois}).tolist())

    with open(OUT, "w") as f_out:
        json.dump({k: np.round(np.asarray(v, np.float64), 7).tolist() for k, v in refs.items()},
                  f_out)
        f_out.write("\n")


if __name__ == "__main__":
    main()
