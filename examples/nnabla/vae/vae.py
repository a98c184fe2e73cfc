"""A variational autoencoder of the 8x8 digits, in the style of nnabla-examples' VAE: an MLP
encoder to a Gaussian posterior, the reparameterisation trick with ``F.randn``, a Bernoulli
decoder (``F.sigmoid_cross_entropy``) of the binarised images and the analytic KL term;
reconstructions and samples are written as image tiles.

    python vae.py [--max-iter 3000] [--monitor-path tmp.monitor.vae]
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
from digits_data import data_iterator_digits  # noqa: E402 (the gallery's shared helper)


def get_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--context", "-c", default="cpu")
    p.add_argument("--batch-size", "-b", type=int, default=100)
    p.add_argument("--learning-rate", "-l", type=float, default=3e-3)
    p.add_argument("--latent", "-z", type=int, default=8)
    p.add_argument("--max-iter", "-i", type=int, default=3000)
    p.add_argument("--val-interval", "-v", type=int, default=250)
    p.add_argument("--train-limit", type=int, default=None, help="use only the first N images")
    p.add_argument("--seed", type=int, default=313)
    p.add_argument("--monitor-path", "-m", default="tmp.monitor.vae")
    return p.parse_args()


def encoder(x, latent):
    """``(mu, logvar)`` of the posterior, each ``(B, latent)``."""
    with nn.parameter_scope("enc"):
        h = F.elu(PF.affine(x, 128, name="fc1"))
        h = F.elu(PF.affine(h, 64, name="fc2"))
        mu = PF.affine(h, latent, name="mu")
        logvar = PF.affine(h, latent, name="logvar")
    return mu, logvar


def decoder(z):
    """Logits of the 64 pixels, ``(B, 1, 8, 8)``."""
    with nn.parameter_scope("dec"):
        h = F.elu(PF.affine(z, 64, name="fc1"))
        h = F.elu(PF.affine(h, 128, name="fc2"))
        return F.reshape(PF.affine(h, 64, name="out"), (z.shape[0], 1, 8, 8))


def vae(x, latent):
    """The negative ELBO per image (a scalar) and the reconstruction's logits."""
    mu, logvar = encoder(x, latent)
    eps = F.randn(shape=mu.shape)
    z = mu + F.exp(logvar * 0.5) * eps
    logits = decoder(z)
    rec = F.sum(F.sigmoid_cross_entropy(logits, x), axis=(1, 2, 3))
    kl = -0.5 * F.sum(1.0 + logvar - mu ** 2 - F.exp(logvar), axis=1)
    return F.mean(rec + kl), F.mean(rec), logits


def main():
    args = get_args()
    nn.set_default_context(get_extension_context(args.context))
    np.random.seed(args.seed)
    nn.seed(args.seed)

    x = nn.Variable((args.batch_size, 1, 8, 8))
    loss, rec, logits = vae(x, args.latent)
    vx = nn.Variable((args.batch_size, 1, 8, 8))
    vloss, vrec, vlogits = vae(vx, args.latent)
    z = nn.Variable((64, args.latent))
    samples = F.sigmoid(decoder(z))

    solver = S.Adam(args.learning_rate)
    solver.set_parameters(nn.get_parameters())

    monitor = Monitor(args.monitor_path)
    monitor_loss = MonitorSeries("Training loss", monitor, interval=50)
    monitor_rec = MonitorSeries("Training reconstruction", monitor, interval=50)
    monitor_vloss = MonitorSeries("Validation loss", monitor, interval=1)
    monitor_time = MonitorTimeElapsed("Training time", monitor, interval=500)
    monitor_recon = MonitorImageTile("Reconstructions", monitor, interval=1, num_images=64)
    monitor_samples = MonitorImageTile("Samples", monitor, interval=1, num_images=64)

    rng = np.random.RandomState(args.seed)
    data = data_iterator_digits(args.batch_size, train=True, rng=rng, limit=args.train_limit)
    vdata = data_iterator_digits(args.batch_size, train=False, shuffle=False)
    for i in range(args.max_iter):
        images, _ = data.next()
        x.d = images > 0.5                       # binary pixels for the Bernoulli decoder
        solver.zero_grad()
        nn.forward_all([loss, rec], clear_no_need_grad=True)
        loss.backward(clear_buffer=True)
        solver.update()
        monitor_loss.add(i, loss.d.copy())
        monitor_rec.add(i, rec.d.copy())
        monitor_time.add(i)
        if (i + 1) % args.val_interval == 0 or i + 1 == args.max_iter:
            images, _ = vdata.next()
            vx.d = images > 0.5
            vloss.forward(clear_buffer=True)
            monitor_vloss.add(i + 1, vloss.d.copy())
    vlogits.forward()
    monitor_recon.add(args.max_iter, 1.0 / (1.0 + np.exp(-vlogits.d[:64])))
    z.d = np.random.randn(*z.shape)
    samples.forward()
    monitor_samples.add(args.max_iter, samples.d)
    nn.save_parameters(os.path.join(args.monitor_path, "params_%06d.h5" % args.max_iter))
    logger.info("final training loss %.3f, validation loss %.3f" % (float(loss.d),
                                                                    float(vloss.d)))


if __name__ == "__main__":
    main()
