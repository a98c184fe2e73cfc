# A small stand-in for the pretrained ResNet_18.model CNTK 301 downloads, written by CNTK 2.7
# itself (run it with CNTK's Python 3.6; tools/cntk_notebooks.py does):
#
#     python cntk_resnet_standin.py OUT.model [--size 32] [--seed 1]
#
# Its structure is ResNet-18's, shrunk: a convolution, batch normalisation and ReLU stem, max
# pooling, two stages of two residual blocks (8 then 16 channels, the second stage entered by a
# strided block with a projection shortcut), global average pooling and a 1000-class Dense;
# the criteria ce, errs and top5Errs on an input 'labels'; the saved Function is
# combine([ce, errs, top5Errs, z]) as in the downloaded model.  Its nodes are named the way that
# model's are (the output z, its input z.x the pooled features of shape (16, 1, 1), each block's
# nodes P.b.x._.x.c convolution, P.b.x._ normalisation, P.b.x ReLU, P.b.x.c, P.b, P.p the sum
# with the shortcut, P.r its ReLU, a projection P.s.x.c and P.s), and its input 'features' of
# shape (3, size, size): CNTK 301 looks up 'features' and 'z.x'.  Batch normalisation's running
# statistics are set as a trained model's would be (random, variance near 1, a count of 5000).
# The weights are random (He-normal, a fixed seed): it is a model of the right shape, not a
# trained one.
from __future__ import print_function

import argparse

import numpy as np
import cntk as C


def conv(x, channels, prefix, rs, stride=1, size=3):
    w = C.parameter((channels, x.shape[0], size, size),
                    init=rs.normal(0, np.sqrt(2.0 / (x.shape[0] * size * size)),
                                   (channels, x.shape[0], size, size)).astype(np.float32))
    return C.convolution(w, x, strides=(1, stride, stride), auto_padding=[False, True, True],
                         name=prefix + ".x.c")


def bn(x, name, rs):
    c = x.shape[0]
    scale = C.parameter((c,), init=rs.uniform(0.8, 1.2, c).astype(np.float32))
    bias = C.parameter((c,), init=rs.normal(0, 0.1, c).astype(np.float32))
    mean = C.constant(rs.normal(0, 0.2, c).astype(np.float32))
    var = C.constant(rs.uniform(0.7, 1.5, c).astype(np.float32))
    return C.batch_normalization(x, scale, bias, mean, var, spatial=True,
                                 running_count=C.constant(5000.0), name=name)


def block(x, channels, prefix, rs, stride=1):
    h = C.relu(bn(conv(x, channels, prefix + ".b.x._", rs, stride), prefix + ".b.x._", rs),
               name=prefix + ".b.x")
    h = bn(conv(h, channels, prefix + ".b", rs), prefix + ".b", rs)
    shortcut = x
    if stride != 1 or channels != x.shape[0]:
        shortcut = bn(conv(x, channels, prefix + ".s", rs, stride, size=1), prefix + ".s", rs)
    return C.relu(C.plus(h, shortcut, name=prefix + ".p"), name=prefix + ".r")


def main():
    p = argparse.ArgumentParser(description="a small ResNet with CNTK 301's node names")
    p.add_argument("out")
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    rs = np.random.RandomState(args.seed)
    features = C.input_variable((3, args.size, args.size), name="features")
    labels = C.input_variable(1000, name="labels")
    stem = "z" + ".x" * 7
    h = C.relu(bn(conv(features, 8, stem + "._", rs), stem + "._", rs), name=stem)
    h = C.pooling(h, C.MAX_POOLING, (3, 3), strides=(2, 2), auto_padding=[False, True, True],
                  name="z" + ".x" * 6)
    for depth, channels, stride in ((5, 8, 1), (4, 8, 1), (3, 16, 2), (2, 16, 1)):
        h = block(h, channels, "z" + ".x" * depth, rs, stride)
    pooled = C.pooling(h, C.AVG_POOLING, (h.shape[1], h.shape[2]), name="z.x")
    w = C.parameter((16, 1, 1, 1000), init=rs.normal(0, 0.05, (16, 1, 1, 1000)).astype(
        np.float32))
    b = C.parameter((1000,), init=0.0)
    z = C.plus(C.times(pooled, w, name="z.PlusArgs[0]"), b, name="z")
    ce = C.cross_entropy_with_softmax(z, labels, name="ce")
    errs = C.classification_error(z, labels, name="errs")
    top5 = C.classification_error(z, labels, topN=5, name="top5Errs")
    C.combine([ce, errs, top5, z]).save(args.out)
    print("wrote %s: %d parameters" % (args.out, sum(q.value.size for q in z.parameters)))


if __name__ == "__main__":
    main()
