"""What running the ImageNet family of CNTK's own ``Examples/`` programs on Stadyn found
(tests/examples/cntk_examples_more.py: AlexNet, VGG16, VGG19; docs/cntk-examples.md), each
compared with CNTK 2.7."""

import numpy as np

from compat_harness import cntk_case


def _refusal(make):
    """What making a Function did: its output shape, or the kind and first line of the error."""
    try:
        return {"shape": list(make().shape)}
    except Exception as exc:  # noqa: BLE001 - the error is the result
        return {"value_error": isinstance(exc, ValueError),
                "first_line": str(exc).split("\n")[0]}


@cntk_case(names=["cntk.layers.Convolution", "cntk.layers.MaxPooling", "cntk.ops.convolution",
                  "cntk.ops.pooling", "cntk.ops.convolution_transpose",
                  "cntk.Function.replace_placeholders"],
           note="VGG16_ImageNet_Distributed.py cut to 32x32 pictures: its fifth block's 3x3 "
                "convolutions over a 2x2 input.  CNTK 2.7 refuses a convolution or pooling "
                "window longer than its input on any axis, padded or not (ConvolveGeometry::"
                "ComputeOutputShape, Source/Math/ConvolveGeometry.h:447), when the Function "
                "is made or its placeholder replaced; Stadyn padded the input and went on")
def window_longer_than_its_input_is_refused(C, r):
    r.touch("cntk.Function.replace_placeholders")
    x = C.input_variable((4, 2, 2))
    x5 = C.input_variable((4, 5, 2))
    out = {
        "conv_layer_padded": _refusal(lambda: C.layers.Convolution((3, 3), 8, pad=True)(x)),
        "conv_layer_one_axis": _refusal(lambda: C.layers.Convolution((3, 3), 8, pad=True)(x5)),
        "conv_op": _refusal(lambda: C.convolution(C.parameter((8, 4, 3, 3)), x)),
        "conv_op_3x1": _refusal(lambda: C.convolution(C.parameter((8, 4, 3, 1)), x)),
        "conv_op_fits": _refusal(lambda: C.convolution(C.parameter((8, 4, 2, 2)), x,
                                                       auto_padding=[False])),
        "max_pooling_layer": _refusal(lambda: C.layers.MaxPooling((3, 3), pad=True)(x)),
        "pooling_op": _refusal(lambda: C.pooling(x, C.MAX_POOLING, (3, 3),
                                                 auto_padding=[True])),
        "avg_pooling_fits": _refusal(lambda: C.pooling(x, C.AVG_POOLING, (2, 2))),
        # (a transposed convolution grows its input: CNTK 2.7 takes a 3x3 over 2x2)
        "conv_transpose": _refusal(lambda: C.convolution_transpose(C.parameter((4, 8, 3, 3)),
                                                                   x)),
    }
    p = C.placeholder()
    z = C.layers.Convolution((3, 3), 8, pad=True)(p)
    out["placeholder_replaced"] = _refusal(lambda: z.replace_placeholders({p: x}))
    # a window as long as its input is taken
    y = C.layers.Convolution((3, 3), 2, pad=True, init=0.5)(C.input_variable((1, 3, 3)))
    out["fits_value"] = y.eval({y.arguments[0]: np.ones((1, 1, 3, 3), np.float32)})
    return out
