"""The 8x8 digits data set bundled with scikit-learn (1,797 images, values 0-16; no download).

Samples are ``(image[None], [label])``: a ``(1, 8, 8)`` float32 image and an int32 label of shape
``(1,)``, so batches are ``(B, 1, 8, 8)`` and ``(B, 1)`` as in NNabla's tutorial.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._data_iterator import DataIterator
from ._data_source import SimpleDataSource

__all__ = ["DigitsData", "load_digits_source", "data_iterator_digits", "split_indices"]


@dataclass(frozen=True)
class DigitsData:
    """Images ``(N, 8, 8)`` float32 and integer targets ``(N,)``."""

    images: np.ndarray
    target: np.ndarray

    def __len__(self) -> int:
        return int(self.target.shape[0])

    def subset(self, indices: np.ndarray) -> "DigitsData":
        return DigitsData(self.images[indices], self.target[indices])


def load_digits_source() -> DigitsData:
    """The whole digits set from scikit-learn's bundled copy."""
    from .._extras import require
    d = require("sklearn.datasets", "demo", "the digits data set").load_digits()
    return DigitsData(d.images.astype(np.float32), d.target.astype(np.int32))


def split_indices(n: int, test_ratio: float = 0.2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A seeded ``(train, test)`` split of ``range(n)`` with ``round(n * test_ratio)`` held out.

    Example:
        >>> from stadyn.io import split_indices
        >>> tr, te = split_indices(10, 0.2)
        >>> len(tr), len(te), sorted(set(tr) | set(te)) == list(range(10))
        (8, 2, True)
    """
    order = np.random.RandomState(seed).permutation(n)
    k = int(round(n * test_ratio))
    return np.sort(order[k:]), np.sort(order[:k])


def data_iterator_digits(digits: DigitsData | None = None, batch_size: int = 16,
                         shuffle: bool = True, rng: np.random.RandomState | None = None,
                         **kwargs) -> DataIterator:
    """Batches ``(B, 1, 8, 8)`` images and ``(B, 1)`` int32 labels of the digits set.

    Example:
        >>> from stadyn.io import data_iterator_digits
        >>> x, t = data_iterator_digits(batch_size=16, use_thread=False).next()
        >>> x.shape, t.shape, t.dtype
        ((16, 1, 8, 8), (16, 1), dtype('int32'))
    """
    digits = digits if digits is not None else load_digits_source()
    images = np.asarray(digits.images, dtype=np.float32)
    target = np.asarray(digits.target, dtype=np.int32)

    def load(i: int):
        return images[i][None], np.array([target[i]], dtype=np.int32)
    source = SimpleDataSource(load, len(target), variables=("x", "y"))
    return DataIterator(source, batch_size, rng, shuffle=shuffle, **kwargs)
