"""Among equal values, the native ``top_k_data`` takes the lowest index first (a stable sort's
first k), against NumPy's stable ``argsort``; ``torch.topk`` leaves the order of ties to its
kernel and gave ``[[2, 4], [1, 2]]`` for the first two rows below and k = 2.

What NNabla 1.39 and CNTK 2.7 give on ties (the same on the first two rows; with more ties each
its own order) is compared with their outputs in the compat cases
``tests/compat/compat_cases/nnabla_top_k_ties.py`` and ``cntk_top_k_ties.py``.
"""

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F

DATA = np.array([[0, 1, 9, 2, 2], [3, 3, 3, 1, 0], [2, 7, 2, 7, 2], [4, 4, 4, 4, 4]],
                np.float32)


def _numpy_top_k(data, k, largest):
    key = -data if largest else data
    index = np.argsort(key, axis=-1, kind="stable")[:, :k]
    return np.take_along_axis(data, index, axis=-1), index


@pytest.mark.parametrize("largest", [True, False], ids=["largest", "smallest"])
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_native_top_k_data_takes_the_lowest_index_among_ties(k, largest):
    with sd.auto_forward():
        values, index = F.top_k_data(sd.Variable.from_numpy_array(DATA), k, largest=largest,
                                     with_index=True)
    want_values, want_index = _numpy_top_k(DATA, k, largest)
    assert index.d.tolist() == want_index.tolist()
    assert values.d.tolist() == want_values.tolist()
