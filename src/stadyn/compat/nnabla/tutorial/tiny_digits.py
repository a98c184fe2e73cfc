"""The ``tiny_digits`` helper of NNabla's tutorials, on Stadyn.

``from stadyn.compat.nnabla.tutorial.tiny_digits import *`` gives ``load_digits`` (scikit-learn's
bundled 8x8 digits), ``data_iterator_tiny_digits`` and ``plot_stats``.
"""

from __future__ import annotations

import numpy as np

from ...._extras import require
from ....io import data_iterator_simple

load_digits = require("sklearn.datasets", "demo", "NNabla's tiny_digits (the digits data set)"
                      ).load_digits

__all__ = ["load_digits", "data_iterator_tiny_digits", "plot_stats"]


def data_iterator_tiny_digits(digits, batch_size: int = 64, shuffle: bool = False, rng=None):
    """Batches ``(B, 1, 8, 8)`` images and ``(B, 1)`` int32 labels of ``digits``.

    Example:
        >>> it = data_iterator_tiny_digits(load_digits(), batch_size=16, shuffle=True)
        >>> [a.shape for a in it.next()]
        [(16, 1, 8, 8), (16, 1)]
    """
    def load_func(index):
        img = digits.images[index]
        label = digits.target[index]
        return img[None], np.array([label]).astype(np.int32)
    return data_iterator_simple(load_func, digits.target.shape[0], batch_size, shuffle, rng,
                                with_file_cache=False)


def plot_stats(digits, path: str | None = None):
    """Show (or save to ``path``) the first 64 images with their labels."""
    matplotlib = require("matplotlib", "demo", "plot_stats")
    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(8, 8, figsize=(6, 6))
    for ax, img, label in zip(axes.ravel(), digits.images, digits.target):
        ax.imshow(img, cmap="gray_r")
        ax.set_title(str(label), fontsize=7)
        ax.axis("off")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
        plt.close(fig)
    return fig
