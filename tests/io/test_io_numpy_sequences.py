"""NumpyDeserializer's CNTK-typed sequences (compared with CNTK 2.7 in
``tests/compat/compat_cases/cntk_fidelity_8.py``): the errors for what it cannot read."""

import numpy as np
import pytest

from stadyn.compat.cntk.layers.typing import Sequence, Tensor
from stadyn.io import NumpyDeserializer


def test_ragged_without_a_type_says_to_give_one():
    seqs = [np.zeros((2, 3), np.float32), np.zeros((4, 3), np.float32)]
    with pytest.raises(ValueError, match=r"array 'a': its rows have different shapes .*"
                       r"Sequence\[Tensor\[\.\.\.\]\]"):
        NumpyDeserializer({"a": seqs})


def test_a_sequence_of_another_sample_shape_is_refused():
    """(CNTK 2.7 reads a (2, 4) sequence typed Sequence[Tensor[3]] without a word, as other
    values; Stadyn refuses it.)"""
    seqs = [np.zeros((2, 3), np.float32), np.zeros((2, 4), np.float32)]
    with pytest.raises(ValueError, match=r"array 'a': sequence 1 has shape \(2, 4\); the type "
                       r"says \(T, 3\)"):
        NumpyDeserializer({"a": (seqs, Sequence[Tensor[3]])})


def test_sequences_read_padded_with_lengths():
    seqs = [np.ones((2, 3), np.float32), 2 * np.ones((4, 3), np.float32)]
    des = NumpyDeserializer({"a": (seqs, Sequence[Tensor[3]])})
    assert len(des) == 2 and des.sequence_lengths().tolist() == [2, 4]
    batch = des.read_batch([1, 0], [None, None])["a"]
    assert batch.data.shape == (2, 4, 3) and batch.lengths.tolist() == [4, 2]
    np.testing.assert_array_equal(batch.data[1, 2:], 0)
