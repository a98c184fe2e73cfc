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


@cntk_case(names=["cntk.io.MinibatchSource.next_minibatch", "cntk.Function.eval",
                  "cntk.ops.functions.Function.find_by_name", "cntk.combine"],
           note="07_Deconvolution_Visualizer.py evaluates its loaded model (input (1, 28, 28)) "
                "on a CTF reader's 784-value stream: output_nodes.eval(mb[features_si]).  CNTK "
                "2.7 expands a reader's flattened sample to the input's shape when the sizes "
                "agree (Source/CNTKv2LibraryDll/Utils.cpp:600-623, the reader's packed Values "
                "only); Stadyn's Trainer did, its Function.eval raised 'a minibatch of shape "
                "(1, 1, 784) does not fit an input of per-sample shape (1, 28, 28)'")
def reader_stream_evaluated_on_an_input_of_its_size(C, r):
    r.touch("cntk.io.MinibatchSource.next_minibatch")
    r.touch("cntk.Function.eval")
    r.touch("cntk.ops.functions.Function.find_by_name")
    data = r.randn(5, 12).astype(np.float32)
    with r.tempdir() as folder:
        path = folder + "/data.ctf"
        with open(path, "w") as f:
            for row in data:
                f.write("|features %s\n" % " ".join("%.6f" % v for v in row))
        source = C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
            features=C.io.StreamDef(field="features", shape=12))), randomize=False,
            max_sweeps=1)
        x = C.input_variable((3, 2, 2), name="image")
        w = C.constant(r.randn(3, 2, 2).astype(np.float32))
        z = C.reduce_sum(C.element_times(x, w, name="scaled"), axis=(1, 2))
        both = C.combine([z.find_by_name("scaled").owner, z])
        features = source["features"]
        first = source.next_minibatch(2)
        one = z.eval(first[features])                        # the only input: the data alone
        rest = source.next_minibatch(3)
        outs = both.eval({x: rest[features]})
        return {"one": one, "scaled": [v for k, v in outs.items() if k.name == "scaled"][0],
                "sums": [v for k, v in outs.items() if k.name != "scaled"][0]}
