"""A siamese network for metric learning on the 8x8 digits, in the style of nnabla-examples'
siamese feature embedding: one CNN embeds both images of a pair (shared parameters), a
contrastive loss pulls pairs of the same digit together and pushes others at least a margin
apart; the embedding is judged by nearest-neighbour classification of held-out digits.

    python siamese.py [--max-iter 2000] [--monitor-path tmp.monitor.siamese]
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
from nnabla.monitor import Monitor, MonitorSeries, MonitorTimeElapsed

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from digits_data import N_TRAIN, data_iterator_digits, load_digits  # noqa: E402


def get_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--context", "-c", default="cpu")
    p.add_argument("--batch-size", "-b", type=int, default=64)
    p.add_argument("--learning-rate", "-l", type=float, default=1e-3)
    p.add_argument("--embedding", "-e", type=int, default=16)
    p.add_argument("--margin", type=float, default=1.0)
    p.add_argument("--max-iter", "-i", type=int, default=2000)
    p.add_argument("--val-interval", "-v", type=int, default=250)
    p.add_argument("--train-limit", type=int, default=None, help="use only the first N images")
    p.add_argument("--seed", type=int, default=313)
    p.add_argument("--monitor-path", "-m", default="tmp.monitor.siamese")
    return p.parse_args()


def embed(x, dims):
    """The embedding ``(B, dims)`` of images ``(B, 1, 8, 8)``; one parameter set for both."""
    with nn.parameter_scope("embed"):
        with nn.parameter_scope("conv1"):
            h = F.max_pooling(F.relu(PF.convolution(x, 16, (3, 3), pad=(1, 1))), (2, 2))
        with nn.parameter_scope("conv2"):
            h = F.max_pooling(F.relu(PF.convolution(h, 32, (3, 3), pad=(1, 1))), (2, 2))
        with nn.parameter_scope("fc"):
            return PF.affine(h, dims)


def contrastive_loss(e0, e1, same, margin):
    """``same * d^2 + (1 - same) * max(margin - d, 0)^2``, ``d`` the Euclidean distance."""
    d = (F.sum(F.squared_error(e0, e1), axis=1, keepdims=True) + 1e-6) ** 0.5
    apart = F.maximum_scalar(margin - d, 0.0)
    return F.mean(same * d ** 2 + (1 - same) * apart ** 2)


def nearest_neighbour_accuracy(embedding, images, labels):
    """Accuracy on the held-out digits of the label of the nearest training digit."""
    x = nn.Variable((len(images),) + images.shape[1:])
    e = embedding(x)
    x.d = images
    e.forward(clear_buffer=True)
    feats = e.d.copy()
    train, test = feats[:N_TRAIN], feats[N_TRAIN:]
    d = ((test[:, None, :] - train[None, :, :]) ** 2).sum(axis=2)
    predicted = labels[:N_TRAIN, 0][d.argmin(axis=1)]
    return float((predicted == labels[N_TRAIN:, 0]).mean())


def main():
    args = get_args()
    nn.set_default_context(get_extension_context(args.context))
    np.random.seed(args.seed)
    nn.seed(args.seed)

    x0 = nn.Variable((args.batch_size, 1, 8, 8))
    x1 = nn.Variable((args.batch_size, 1, 8, 8))
    same = nn.Variable((args.batch_size, 1))
    loss = contrastive_loss(embed(x0, args.embedding), embed(x1, args.embedding), same,
                            args.margin)
    solver = S.Adam(args.learning_rate)
    solver.set_parameters(nn.get_parameters())

    monitor = Monitor(args.monitor_path)
    monitor_loss = MonitorSeries("Training loss", monitor, interval=50)
    monitor_acc = MonitorSeries("Nearest neighbour accuracy", monitor, interval=1)
    monitor_time = MonitorTimeElapsed("Training time", monitor, interval=500)

    # two iterators over the training digits in different orders give the pairs
    data0 = data_iterator_digits(args.batch_size, rng=np.random.RandomState(args.seed),
                                 limit=args.train_limit)
    data1 = data_iterator_digits(args.batch_size, rng=np.random.RandomState(args.seed + 1),
                                 limit=args.train_limit)
    images, labels = load_digits()
    for i in range(args.max_iter):
        x0.d, l0 = data0.next()
        x1.d, l1 = data1.next()
        same.d = (l0 == l1)
        solver.zero_grad()
        loss.forward(clear_no_need_grad=True)
        loss.backward(clear_buffer=True)
        solver.update()
        monitor_loss.add(i, loss.d.copy())
        monitor_time.add(i)
        if (i + 1) % args.val_interval == 0 or i + 1 == args.max_iter:
            accuracy = nearest_neighbour_accuracy(lambda v: embed(v, args.embedding), images,
                                                  labels)
            monitor_acc.add(i + 1, accuracy)
    nn.save_parameters(os.path.join(args.monitor_path, "params_%06d.h5" % args.max_iter))
    logger.info("final training loss %.4f, nearest neighbour accuracy %.4f" % (
        float(loss.d), accuracy))


if __name__ == "__main__":
    main()
