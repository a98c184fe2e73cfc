"""``sequence_window_lengths`` (SequentialConvolution's output lengths) refuses what CNTK 2.7
refuses -- a minibatch whose longest sequence is shorter than the kernel (ValueError), a
sequence left no step beside longer ones (RuntimeError) -- run at once and inside a traced
static graph that earlier minibatches built (the check is part of the program there)."""

import warnings

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
from stadyn._errors import EmptySequenceError, ShapeError


def _lengths(values):
    return sd.Variable.from_numpy_array(np.array(values, np.int64))


@pytest.mark.parametrize("values, pad, error, said", [
    ([2], False, ShapeError, "kernel dim 3 <= input dim 2."),
    ([2, 2], True, ShapeError, "kernel dim 3 <= input dim 2."),
    ([4, 2], False, EmptySequenceError, "The first entry of a Value mask"),
])
def test_refused_as_cntk_at_once(values, pad, error, said):
    with sd.auto_forward(), pytest.raises(error, match=said):
        F.sequence_window_lengths(_lengths(values), kernel=3, span=3, pad=pad)


def test_computed_where_cntk_computes():
    with sd.auto_forward():
        assert F.sequence_window_lengths(_lengths([4, 2]), kernel=3, span=3,
                                         pad=True).d.tolist() == [4, 2]
        assert F.sequence_window_lengths(_lengths([4, 3]), kernel=3, span=3).d.tolist() == [2, 1]


def test_refused_by_a_traced_program():
    n = sd.Variable((2,), dtype=np.int64)
    out = F.sequence_window_lengths(n, kernel=3, span=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (the graph traces: no eager fallback)
        for good in ([4, 3], [5, 4]):
            n.d = np.array(good)
            out.forward()
        assert out.d.tolist() == [3, 2]
    n.d = np.array([4, 2])
    with pytest.raises(EmptySequenceError, match="Value mask"):
        out.forward()
    n.d = np.array([2, 1])
    with pytest.raises(ShapeError, match="kernel dim 3 <= input dim 2"):
        out.forward()
