# A small stand-in for the pretrained AlexNet_ImageNet_Caffe.model that CNTK's object-detection
# examples (Examples/Image/Detection: Fast R-CNN, Faster R-CNN) download, written by CNTK 2.7
# itself (run it with CNTK's Python 3.6):
#
#     python cntk_alexnet_standin.py OUT.model [--seed 1]
#
# Its nodes are named as the ones utils/configs/AlexNet_config.py reads: the input 'data'
# (3, 224, 224), 'relu5' the last convolution's ReLU with a total stride of 16 (the config's
# FEATURE_STRIDE), 'pool5' (16, 6, 6) (ROI_DIM 6: the detectors put ROI pooling of 6x6 in its
# place), and the fully connected 'fc6' -> 'relu6' -> 'drop6' -> 'fc7' -> 'relu7' -> 'drop7'
# (the config's LAST_HIDDEN_NODE_NAME) -> 'fc8' -> 'z'.  Shrunk: 8/16/16 filters (AlexNet:
# 96/256/384/384/256), three convolutions (AlexNet: five), fully connected layers of 64 (of
# 4096: the examples' prediction heads take 4096 inputs, which the driver cuts to 64), and the
# dropout rate 0 (AlexNet: 0.5), so a run draws no masks and prints the same numbers on every
# framework.  The weights are random (a fixed seed): a model of the right shape, not a
# trained one.
from __future__ import print_function

import argparse

import numpy as np
import cntk as C


def conv(x, channels, size, stride, name, rs):
    w = C.parameter((channels, x.shape[0], size, size), name=name + ".W",
                    init=rs.normal(0, np.sqrt(2.0 / (x.shape[0] * size * size)),
                                   (channels, x.shape[0], size, size)).astype(np.float32))
    b = C.parameter((channels, 1, 1), name=name + ".b",
                    init=rs.uniform(0, 0.1, (channels, 1, 1)).astype(np.float32))
    convolved = C.convolution(w, x, strides=(1, stride, stride), auto_padding=[False, True, True])
    return C.plus(convolved, b, name=name)


def dense(x, n, name, rs):
    fan_in = int(np.prod(x.shape))
    w = C.parameter(x.shape + (n,), name=name + ".W",
                    init=rs.normal(0, np.sqrt(2.0 / fan_in), x.shape + (n,)).astype(np.float32))
    b = C.parameter((n,), name=name + ".b", init=rs.uniform(0, 0.1, n).astype(np.float32))
    return C.plus(C.times(x, w), b, name=name)


def main():
    p = argparse.ArgumentParser(description="a small AlexNet with the detection configs' names")
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--hidden", type=int, default=64)
    args = p.parse_args()
    rs = np.random.RandomState(args.seed)
    data = C.input_variable((3, 224, 224), name="data")
    h = C.relu(conv(data, 8, 5, 4, "conv1", rs), name="relu1")                # 56 x 56
    h = C.pooling(h, C.MAX_POOLING, (3, 3), strides=(2, 2), auto_padding=[False, True, True],
                  name="pool1")                                               # 28 x 28
    h = C.relu(conv(h, 16, 3, 1, "conv2", rs), name="relu2")
    h = C.pooling(h, C.MAX_POOLING, (3, 3), strides=(2, 2), auto_padding=[False, True, True],
                  name="pool2")                                               # 14 x 14
    h = C.relu(conv(h, 16, 3, 1, "conv5", rs), name="relu5")                  # stride 16
    h = C.pooling(h, C.MAX_POOLING, (3, 3), strides=(2, 2), name="pool5")     # 6 x 6
    h = C.dropout(C.relu(dense(h, args.hidden, "fc6", rs), name="relu6"), 0.0, name="drop6")
    h = C.dropout(C.relu(dense(h, args.hidden, "fc7", rs), name="relu7"), 0.0, name="drop7")
    z = C.alias(dense(h, 1000, "fc8", rs), name="z")
    assert z.find_by_name("pool5").shape == (16, 6, 6), z.find_by_name("pool5").shape
    z.save(args.out)
    print("wrote %s: %d parameters" % (args.out, sum(q.value.size for q in z.parameters)))


if __name__ == "__main__":
    main()
