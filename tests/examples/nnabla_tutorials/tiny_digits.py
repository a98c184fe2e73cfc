"""The ``tiny_digits`` helper NNabla's tutorials import (``tutorial/tiny_digits.py`` there),
without its plot: scikit-learn's 8x8 digits as an NNabla data iterator of ``(1, 8, 8)`` images
and ``(1,)`` int32 labels.  Runs on either framework (``import nnabla``)."""

import numpy as np
from nnabla.utils.data_iterator import data_iterator_simple
from sklearn.datasets import load_digits

__all__ = ["load_digits", "data_iterator_tiny_digits", "plot_stats"]


def plot_stats(digits):
    print("Num images:", digits.images.shape[0])
    print("Image shape:", digits.images.shape[1:])
    print("Labels:", digits.target[:10])


def data_iterator_tiny_digits(digits, batch_size=64, shuffle=False, rng=None):
    def load_func(index):
        return digits.images[index][None], np.array([digits.target[index]], np.int32)
    return data_iterator_simple(load_func, digits.target.shape[0], batch_size, shuffle, rng,
                                with_file_cache=False)
