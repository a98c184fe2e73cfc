"""A DCGAN of the 8x8 digits, in the style of nnabla-examples' DCGAN: a generator of
deconvolutions with batch normalisation, a convolutional discriminator, two Adam solvers over
the two parameter scopes, and the generator's output cut from the discriminator's graph
with ``unlinked`` (the older name of ``get_unlinked_variable``); generated digits are written
as image tiles.

    python dcgan.py [--max-iter 3000] [--monitor-path tmp.monitor.dcgan]
"""

import argparse
import os
import sys

import numpy as np
import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S
from nnabla.ext_utils import get_extension_context
from nnabla.logger import logger
from nnabla.monitor import Monitor, MonitorImageTile, MonitorSeries, MonitorTimeElapsed

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from digits_data import data_iterator_digits, load_digits  # noqa: E402 (shared helper)


def get_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--context", "-c", default="cpu")
    p.add_argument("--batch-size", "-b", type=int, default=64)
    p.add_argument("--learning-rate", "-l", type=float, default=2e-4)
    p.add_argument("--latent", "-z", type=int, default=16)
    p.add_argument("--max-iter", "-i", type=int, default=3000)
    p.add_argument("--val-interval", "-v", type=int, default=250)
    p.add_argument("--train-limit", type=int, default=None, help="use only the first N images")
    p.add_argument("--seed", type=int, default=313)
    p.add_argument("--monitor-path", "-m", default="tmp.monitor.dcgan")
    return p.parse_args()


def generator(z, maps=64, test=False):
    """Images ``(B, 1, 8, 8)`` in [0, 1] from noise ``(B, latent)``."""
    with nn.parameter_scope("gen"):
        with nn.parameter_scope("project"):
            h = F.reshape(PF.affine(z, maps * 2 * 2), (z.shape[0], maps, 2, 2))
            h = F.relu(PF.batch_normalization(h, batch_stat=not test))
        with nn.parameter_scope("deconv1"):                    # 2x2 -> 4x4
            h = PF.deconvolution(h, maps // 2, (4, 4), pad=(1, 1), stride=(2, 2))
            h = F.relu(PF.batch_normalization(h, batch_stat=not test))
        with nn.parameter_scope("deconv2"):                    # 4x4 -> 8x8
            h = PF.deconvolution(h, 1, (4, 4), pad=(1, 1), stride=(2, 2))
    return F.sigmoid(h)


def discriminator(x, maps=32):
    """The logit that ``x`` is a real digit, ``(B, 1)``."""
    with nn.parameter_scope("dis"):
        with nn.parameter_scope("conv1"):                      # 8x8 -> 4x4
            h = F.leaky_relu(PF.convolution(x, maps, (4, 4), pad=(1, 1), stride=(2, 2)), 0.2)
        with nn.parameter_scope("conv2"):                      # 4x4 -> 2x2
            h = PF.convolution(h, maps * 2, (4, 4), pad=(1, 1), stride=(2, 2))
            h = F.leaky_relu(PF.batch_normalization(h), 0.2)
        with nn.parameter_scope("classifier"):
            return PF.affine(h, 1)


def main():
    args = get_args()
    nn.set_default_context(get_extension_context(args.context))
    np.random.seed(args.seed)
    nn.seed(args.seed)

    z = nn.Variable((args.batch_size, args.latent))
    fake = generator(z)
    fake.persistent = True
    pred_fake = discriminator(fake)
    loss_gen = F.mean(F.sigmoid_cross_entropy(pred_fake, F.constant(1, pred_fake.shape)))
    fake_dis = fake.unlinked(need_grad=True)
    pred_fake_dis = discriminator(fake_dis)
    loss_dis = F.mean(F.sigmoid_cross_entropy(pred_fake_dis, F.constant(0, pred_fake.shape)))
    real = nn.Variable((args.batch_size, 1, 8, 8))
    pred_real = discriminator(real)
    loss_dis += F.mean(F.sigmoid_cross_entropy(pred_real, F.constant(1, pred_real.shape)))
    ztest = nn.Variable((256, args.latent))
    test_images = generator(ztest, test=True)

    solver_gen = S.Adam(args.learning_rate, beta1=0.5)
    solver_dis = S.Adam(args.learning_rate, beta1=0.5)
    with nn.parameter_scope("gen"):
        solver_gen.set_parameters(nn.get_parameters())
    with nn.parameter_scope("dis"):
        solver_dis.set_parameters(nn.get_parameters())

    monitor = Monitor(args.monitor_path)
    monitor_loss_gen = MonitorSeries("Generator loss", monitor, interval=50)
    monitor_loss_dis = MonitorSeries("Discriminator loss", monitor, interval=50)
    monitor_distance = MonitorSeries("Mean image distance", monitor, interval=1)
    monitor_time = MonitorTimeElapsed("Training time", monitor, interval=500)
    monitor_fake = MonitorImageTile("Fake images", monitor, interval=1, num_images=64)

    images, _ = load_digits()
    mean_real = images.mean(axis=0)
    ztest.d = np.random.randn(*ztest.shape)

    def mean_image_distance():
        """How far the generator's mean image is from the data's (RMS over the pixels)."""
        test_images.forward(clear_buffer=True)
        return float(np.sqrt(((test_images.d.mean(axis=0) - mean_real) ** 2).mean()))

    monitor_distance.add(0, mean_image_distance())
    data = data_iterator_digits(args.batch_size, train=True, rng=np.random.RandomState(
        args.seed), limit=args.train_limit)
    for i in range(args.max_iter):
        # generator step
        z.d = np.random.randn(*z.shape)
        solver_gen.zero_grad()
        loss_gen.forward(clear_no_need_grad=True)
        loss_gen.backward(clear_buffer=True)
        solver_gen.update()
        # discriminator step (the generator's output, unlinked)
        fake.forward()
        real.d, _ = data.next()
        solver_dis.zero_grad()
        loss_dis.forward(clear_no_need_grad=True)
        loss_dis.backward(clear_buffer=True)
        solver_dis.update()
        monitor_loss_gen.add(i, loss_gen.d.copy())
        monitor_loss_dis.add(i, loss_dis.d.copy())
        monitor_time.add(i)
        if (i + 1) % args.val_interval == 0 or i + 1 == args.max_iter:
            monitor_distance.add(i + 1, mean_image_distance())
    monitor_fake.add(args.max_iter, test_images.d[:64])
    nn.save_parameters(os.path.join(args.monitor_path, "params_%06d.h5" % args.max_iter))
    logger.info("final generator loss %.3f, discriminator loss %.3f" % (float(loss_gen.d),
                                                                         float(loss_dis.d)))


if __name__ == "__main__":
    main()
