"""Digit classification with data augmentation, in the style of nnabla-examples'
image-classification programs: a small CNN with batch normalisation, trained on the 8x8 digits
with ``F.image_augmentation`` (random crop from a padded image, scale, rotation, brightness and
contrast) and ``F.random_erase`` in the training graph, validated on held-out digits.

    python classification.py [--max-iter 2000] [--monitor-path tmp.monitor.classification]
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
from digits_data import data_iterator_digits  # noqa: E402 (the gallery's shared helper)


def get_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--context", "-c", default="cpu")
    p.add_argument("--batch-size", "-b", type=int, default=64)
    p.add_argument("--learning-rate", "-l", type=float, default=1e-3)
    p.add_argument("--weight-decay", "-w", type=float, default=1e-4)
    p.add_argument("--max-iter", "-i", type=int, default=2000)
    p.add_argument("--val-interval", "-v", type=int, default=100)
    p.add_argument("--val-iter", "-j", type=int, default=5)
    p.add_argument("--train-limit", type=int, default=None, help="use only the first N images")
    p.add_argument("--seed", type=int, default=313)
    p.add_argument("--monitor-path", "-m", default="tmp.monitor.classification")
    return p.parse_args()


def augment(image):
    """The training graph's augmentation, drawn anew for every image on every forward."""
    h = F.image_augmentation(image, shape=(1, 8, 8), pad=(1, 1), min_scale=0.9, max_scale=1.1,
                             angle=0.2, aspect_ratio=1.1, brightness=0.1, contrast=1.2,
                             contrast_center=0.5)
    return F.random_erase(h, prob=0.3, area_ratios=(0.02, 0.1), replacements=(0.0, 1.0))


def cnn(image, test=False):
    """Two convolution blocks and a classifier: logits ``(B, 10)``."""
    h = image
    for i, maps in enumerate((32, 64)):
        with nn.parameter_scope("conv%d" % (i + 1)):
            h = PF.convolution(h, maps, (3, 3), pad=(1, 1), with_bias=False)
            h = F.relu(PF.batch_normalization(h, batch_stat=not test))
            h = F.max_pooling(h, (2, 2))
    with nn.parameter_scope("fc"):
        h = F.relu(PF.affine(h, 128))
    with nn.parameter_scope("classifier"):
        return PF.affine(h, 10)


def categorical_error(pred, label):
    """The fraction of rows of ``pred`` whose largest entry is not at ``label``."""
    return (pred.argmax(1) != label[:, 0]).mean()


def main():
    args = get_args()
    nn.set_default_context(get_extension_context(args.context))
    np.random.seed(args.seed)
    nn.seed(args.seed)

    # Training graph (augmented) and validation graph (the same parameters, running statistics)
    image = nn.Variable((args.batch_size, 1, 8, 8))
    label = nn.Variable((args.batch_size, 1))
    logits = cnn(augment(image))
    loss = F.mean(F.softmax_cross_entropy(logits, label))
    vimage = nn.Variable((args.batch_size, 1, 8, 8))
    vlabel = nn.Variable((args.batch_size, 1))
    verror = F.mean(F.top_n_error(cnn(vimage, test=True), vlabel))

    solver = S.Adam(args.learning_rate)
    solver.set_parameters(nn.get_parameters())

    monitor = Monitor(args.monitor_path)
    monitor_loss = MonitorSeries("Training loss", monitor, interval=10)
    monitor_err = MonitorSeries("Training error", monitor, interval=10)
    monitor_verr = MonitorSeries("Validation error", monitor, interval=1)
    monitor_time = MonitorTimeElapsed("Training time", monitor, interval=100)

    rng = np.random.RandomState(args.seed)
    data = data_iterator_digits(args.batch_size, train=True, rng=rng, limit=args.train_limit)
    vdata = data_iterator_digits(args.batch_size, train=False, shuffle=False)
    logits.persistent = True                     # kept by clear_no_need_grad for the error
    for i in range(args.max_iter):
        image.d, label.d = data.next()
        solver.zero_grad()
        loss.forward(clear_no_need_grad=True)
        loss.backward(clear_buffer=True)
        solver.weight_decay(args.weight_decay)
        solver.update()
        monitor_loss.add(i, loss.d.copy())
        monitor_err.add(i, categorical_error(logits.d, label.d))
        monitor_time.add(i)
        if (i + 1) % args.val_interval == 0 or i + 1 == args.max_iter:
            errors = []
            for _ in range(args.val_iter):
                vimage.d, vlabel.d = vdata.next()
                verror.forward(clear_buffer=True)
                errors.append(float(verror.d))
            monitor_verr.add(i + 1, np.mean(errors))
    nn.save_parameters(os.path.join(args.monitor_path, "params_%06d.h5" % args.max_iter))
    logger.info("final training loss %.4f, validation error %.4f" % (float(loss.d),
                                                                     np.mean(errors)))


if __name__ == "__main__":
    main()
