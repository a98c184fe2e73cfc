"""Semantic segmentation of generated shapes, in the style of nnabla-examples' encoder-decoder
segmentation networks: 16x16 noisy images holding rectangles (class 1) and discs (class 2) on
a background (class 0); a convolutional encoder with max pooling, a decoder that upsamples with
``F.interpolate`` and ``PF.deconvolution`` and concatenates the encoder's features (skip
connections), and a per-pixel softmax cross entropy; judged by pixel accuracy and mean IoU on
held-out images.

    python segmentation.py [--max-iter 1500] [--monitor-path tmp.monitor.segmentation]
"""

import argparse
import os

import numpy as np
import nnabla as nn
import nnabla.functions as F
import nnabla.parametric_functions as PF
import nnabla.solvers as S
from nnabla.ext_utils import get_extension_context
from nnabla.logger import logger
from nnabla.monitor import Monitor, MonitorImageTile, MonitorSeries, MonitorTimeElapsed
from nnabla.utils.data_iterator import data_iterator_simple

SIZE, CLASSES = 16, 3


def get_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--context", "-c", default="cpu")
    p.add_argument("--batch-size", "-b", type=int, default=32)
    p.add_argument("--learning-rate", "-l", type=float, default=2e-3)
    p.add_argument("--max-iter", "-i", type=int, default=1500)
    p.add_argument("--val-interval", "-v", type=int, default=250)
    p.add_argument("--num-train", type=int, default=2000)
    p.add_argument("--num-val", type=int, default=256)
    p.add_argument("--seed", type=int, default=313)
    p.add_argument("--monitor-path", "-m", default="tmp.monitor.segmentation")
    return p.parse_args()


def make_shapes(n, rng):
    """``n`` images ``(n, 1, 16, 16)`` and their label maps ``(n, 1, 16, 16)`` int32."""
    images = np.zeros((n, 1, SIZE, SIZE), np.float32)
    labels = np.zeros((n, 1, SIZE, SIZE), np.int32)
    yy, xx = np.mgrid[:SIZE, :SIZE]
    for i in range(n):
        for cls in rng.permutation([1, 2])[:rng.randint(1, 3)]:
            cy, cx = rng.randint(3, SIZE - 3, size=2)
            if cls == 1:
                hh, hw = rng.randint(2, 5, size=2)
                mask = (abs(yy - cy) <= hh) & (abs(xx - cx) <= hw)
            else:
                mask = (yy - cy) ** 2 + (xx - cx) ** 2 <= rng.randint(2, 5) ** 2
            labels[i, 0][mask] = cls
            images[i, 0][mask] = rng.uniform(0.5, 1.0)
    images += rng.normal(0, 0.15, images.shape).astype(np.float32)
    return images, labels


def conv_block(h, maps, name, test):
    with nn.parameter_scope(name):
        h = PF.convolution(h, maps, (3, 3), pad=(1, 1), with_bias=False)
        return F.relu(PF.batch_normalization(h, batch_stat=not test))


def network(x, test=False):
    """Per-pixel class logits ``(B, 3, 16, 16)``."""
    e1 = conv_block(x, 16, "enc1", test)                               # 16x16
    e2 = conv_block(F.max_pooling(e1, (2, 2)), 32, "enc2", test)       # 8x8
    e3 = conv_block(F.max_pooling(e2, (2, 2)), 64, "enc3", test)       # 4x4
    d2 = F.interpolate(e3, scale=(2, 2), mode="linear")                # 4x4 -> 8x8
    d2 = conv_block(F.concatenate(d2, e2, axis=1), 32, "dec2", test)
    with nn.parameter_scope("up1"):                                    # 8x8 -> 16x16
        d1 = PF.deconvolution(d2, 16, (4, 4), pad=(1, 1), stride=(2, 2))
    d1 = conv_block(F.concatenate(F.relu(d1), e1, axis=1), 16, "dec1", test)
    with nn.parameter_scope("classifier"):
        return PF.convolution(d1, CLASSES, (1, 1))


def scores(pred, label):
    """Pixel accuracy and the mean over classes of intersection over union."""
    pred, label = pred.argmax(axis=1), label[:, 0]
    ious = [((pred == c) & (label == c)).sum() / max(((pred == c) | (label == c)).sum(), 1)
            for c in range(CLASSES)]
    return float((pred == label).mean()), float(np.mean(ious))


def main():
    args = get_args()
    nn.set_default_context(get_extension_context(args.context))
    np.random.seed(args.seed)
    nn.seed(args.seed)
    rng = np.random.RandomState(args.seed)
    train_images, train_labels = make_shapes(args.num_train, rng)
    val_images, val_labels = make_shapes(args.num_val, rng)

    x = nn.Variable((args.batch_size, 1, SIZE, SIZE))
    t = nn.Variable((args.batch_size, 1, SIZE, SIZE))
    loss = F.mean(F.softmax_cross_entropy(network(x), t, axis=1))
    vx = nn.Variable((args.num_val, 1, SIZE, SIZE))
    vpred = network(vx, test=True)

    solver = S.Adam(args.learning_rate)
    solver.set_parameters(nn.get_parameters())

    monitor = Monitor(args.monitor_path)
    monitor_loss = MonitorSeries("Training loss", monitor, interval=50)
    monitor_acc = MonitorSeries("Validation pixel accuracy", monitor, interval=1)
    monitor_iou = MonitorSeries("Validation mean IoU", monitor, interval=1)
    monitor_time = MonitorTimeElapsed("Training time", monitor, interval=500)
    monitor_pred = MonitorImageTile("Predictions", monitor, interval=1, num_images=16)

    data = data_iterator_simple(lambda i: (train_images[i], train_labels[i]), args.num_train,
                                args.batch_size, shuffle=True, rng=rng, with_file_cache=False)
    vx.d = val_images
    for i in range(args.max_iter):
        x.d, t.d = data.next()
        solver.zero_grad()
        loss.forward(clear_no_need_grad=True)
        loss.backward(clear_buffer=True)
        solver.update()
        monitor_loss.add(i, loss.d.copy())
        monitor_time.add(i)
        if (i + 1) % args.val_interval == 0 or i + 1 == args.max_iter:
            vpred.forward(clear_buffer=True)
            accuracy, iou = scores(vpred.d, val_labels)
            monitor_acc.add(i + 1, accuracy)
            monitor_iou.add(i + 1, iou)
    monitor_pred.add(args.max_iter, vpred.d[:16].argmax(axis=1)[:, None] / (CLASSES - 1.0))
    nn.save_parameters(os.path.join(args.monitor_path, "params_%06d.h5" % args.max_iter))
    logger.info("final training loss %.4f, pixel accuracy %.4f, mean IoU %.4f" % (
        float(loss.d), accuracy, iou))


if __name__ == "__main__":
    main()
