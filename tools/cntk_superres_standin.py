# Stand-ins for the four pretrained super-resolution models CNTK 302A downloads (VDSR.model,
# DRNN.model, SRResNet.model, SRGAN.model), written by CNTK 2.7 itself (run it with CNTK's
# Python 3.6; tools/cntk_notebooks.py does):
#
#     python cntk_superres_standin.py OUT_FOLDER [--size 16] [--vgg-size 48] [--seed 302]
#
# Each is built as CNTK 302B builds the model it trains, at a cut size: an input "real_X" of
# (3, size, size) pixels, divided by 255, into the network, the network's output saved (302B
# saves its Trainer's model, the same Function).  VDSR: 3 convolutions of 8 channels with ReLU
# and one of 3 (302B: 18 of 64), no bias, a residual image out.  DRNN: a convolution of 16 with
# ReLU, then 2 recursive pairs of convolution and BatchNormalization (302B: 9 pairs of 128) added
# to it, a convolution of 3.  SRResNet and SRGAN (the same structure, two draws): a 9x9
# convolution of 16 and param_relu, 2 residual blocks (302B: 16 of 64), a convolution and
# batch normalisation added to the first, ConvolutionTranspose2D of stride 2 to (2 size, 2 size),
# param_relu and a convolution of 3.  Each is trained 3 minibatches of 4 random pictures with
# 302B's loss and learner so its batch-normalisation statistics are a trained model's, not the
# initial ones: the models have the right structure, not trained weights.  Beside them, for
# CNTK 302B, VGG19_ImageNet_Caffe.model: a VGG19 cut likewise, of (3, vgg-size, vgg-size)
# inputs (48: CNTK wants its last block's 3x3 kernels within the 3x3 map left by 4 poolings).
from __future__ import print_function

import argparse
import os

import numpy as np
import cntk as C


def vdsr(h0):
    with C.layers.default_options(init=C.he_normal(), activation=C.relu, bias=False):
        return C.layers.Sequential([
            C.layers.For(range(3), lambda: C.layers.Convolution((3, 3), 8, pad=True)),
            C.layers.Convolution((3, 3), 3, activation=None, pad=True)])(h0)


def drnn_block(inp, filters):
    c1 = C.layers.Convolution((3, 3), filters, init=C.he_normal(), pad=True, bias=False)(inp)
    return C.layers.BatchNormalization(map_rank=1)(c1)


def drnn(h0):
    with C.layers.default_options(init=C.he_normal(), activation=C.relu, bias=False):
        h1 = C.layers.Convolution((3, 3), 16, pad=True)(h0)
        h4 = h1
        for _ in range(2):
            h4 = h1 + drnn_block(drnn_block(h4, 16), 16)
        return C.layers.Convolution((3, 3), 3, activation=None, pad=True)(h4)


def resblock(inp, filters):
    c1 = C.layers.Convolution((3, 3), filters, init=C.he_normal(), pad=True, bias=False)(inp)
    c1 = C.layers.BatchNormalization(map_rank=1)(c1)
    c1 = C.param_relu(C.Parameter(c1.shape, init=C.he_normal()), c1)
    c2 = C.layers.Convolution((3, 3), filters, init=C.he_normal(), pad=True, bias=False)(c1)
    return inp + C.layers.BatchNormalization(map_rank=1)(c2)


def srresnet(size):
    def net(h0):
        with C.layers.default_options(init=C.he_normal(), bias=False):
            h1 = C.layers.Convolution((9, 9), 16, pad=True)(h0)
            h1 = C.param_relu(C.Parameter(h1.shape, init=C.he_normal()), h1)
            h2 = resblock(resblock(h1, 16), 16)
            h3 = C.layers.Convolution((3, 3), 16, activation=None, pad=True)(h2)
            h4 = h1 + C.layers.BatchNormalization(map_rank=1)(h3)
            h5 = C.layers.ConvolutionTranspose2D((3, 3), 16, pad=True, strides=(2, 2),
                                                 output_shape=(2 * size, 2 * size))(h4)
            h5 = C.param_relu(C.Parameter(h5.shape, init=C.he_normal()), h5)
            return C.layers.Convolution((3, 3), 3, pad=True)(h5)
    return net


VGG19_BLOCKS = ((2, 8), (2, 16), (4, 16), (4, 32), (4, 32))   # VGG19: 64 ... 512 channels


def vgg19(size, rs):
    """A VGG19 laid out as CNTK's Caffe-converted one that 302B reads its 'relu5_4' from: an
    input 'data' of (3, size, size), convolutions conv<b>_<i> with a bias and ReLUs relu<b>_<i>,
    max pooling pool<b> after each block, fc6/relu6, fc7/relu7, fc8 and the softmax 'prob';
    widths cut (VGG19_BLOCKS, dense 32, 32, 10), random He-scaled weights."""
    h = C.input_variable((3, size, size), name="data")
    for b, (count, width) in enumerate(VGG19_BLOCKS, 1):
        for i in range(1, count + 1):
            fan_in = h.shape[0] * 9
            w = C.parameter(init=rs.normal(0, np.sqrt(2.0 / fan_in), (width, h.shape[0], 3, 3))
                            .astype(np.float32), name="conv%d_%d.W" % (b, i))
            bias = C.parameter(init=rs.normal(0, 0.01, (width, 1, 1)).astype(np.float32),
                               name="conv%d_%d.b" % (b, i))
            h = C.plus(C.convolution(w, h, auto_padding=[False, True, True]), bias,
                       name="conv%d_%d" % (b, i))
            h = C.relu(h, name="relu%d_%d" % (b, i))
        h = C.pooling(h, C.MAX_POOLING, (2, 2), (2, 2), name="pool%d" % b)
    for name, units, act in (("6", 32, True), ("7", 32, True), ("8", 10, False)):
        fan_in = int(np.prod(h.shape))
        w = C.parameter(init=rs.normal(0, np.sqrt(2.0 / fan_in), h.shape + (units,))
                        .astype(np.float32), name="fc%s.W" % name)
        h = C.plus(C.times(h, w), C.parameter(init=np.zeros(units, np.float32)),
                   name="fc" + name)
        if act:
            h = C.relu(h, name="relu" + name)
    return C.softmax(h, name="prob")


def build(net, size, upscale, rs):
    real_x = C.input_variable((3, size, size), name="real_X")
    real_y = C.input_variable((3, size * upscale, size * upscale), name="real_Y")
    gen = net(real_x / 255)
    if upscale == 1:          # 302B's VDSR/DRNN loss: the residual image
        loss = size * size * C.reduce_mean(C.square(real_y / 255 - real_x / 255 - gen)) / 2.0
    else:
        loss = C.reduce_mean(C.square(real_y / 255 - gen))
    learner = C.adam(loss.parameters, lr=C.learning_parameter_schedule(0.001),
                     momentum=C.momentum_schedule(0.9), gradient_clipping_threshold_per_sample=1.0)
    trainer = C.Trainer(gen, (loss, None), learner)
    for _ in range(3):
        hr = rs.uniform(0, 255, (4, 3, size * upscale, size * upscale)).astype(np.float32)
        lr = hr[:, :, ::upscale, ::upscale].copy()
        trainer.train_minibatch({real_x: lr, real_y: hr})
    return gen


def main():
    p = argparse.ArgumentParser(description="CNTK 302A's pretrained models, cut")
    p.add_argument("out")
    p.add_argument("--size", type=int, default=16)
    p.add_argument("--seed", type=int, default=302)
    p.add_argument("--vgg-size", type=int, default=48)     # its 5th block's 3x3 needs 3x3
    args = p.parse_args()
    C.cntk_py.set_fixed_random_seed(args.seed)
    rs = np.random.RandomState(args.seed)
    if not os.path.isdir(args.out):
        os.makedirs(args.out)
    for name, net, upscale in (("VDSR", vdsr, 1), ("DRNN", drnn, 1),
                               ("SRResNet", srresnet(args.size), 2),
                               ("SRGAN", srresnet(args.size), 2)):
        build(net, args.size, upscale, rs).save(os.path.join(args.out, name + ".model"))
        print("wrote", name)
    vgg19(args.vgg_size, rs).save(os.path.join(args.out, "VGG19_ImageNet_Caffe.model"))


if __name__ == "__main__":
    main()
