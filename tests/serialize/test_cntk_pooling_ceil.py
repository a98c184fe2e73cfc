"""CNTK 2.7's model files of ``Pooling`` with ``ceilOutDim`` read with CNTK's geometry
(``cntk_semantics.window_edges``, shared with ``C.pooling``): with auto-padding the windows
CNTK adds by rounding up (before: one fewer output per axis, CNTK's auto-padding without
``ceilOutDim``).  ``tests/fixtures/cntk_pooling_ceil/``: CNTK 2.7's files and its outputs on
them (``make_refs.py``)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_pooling_ceil")
REFS = dict(np.load(os.path.join(FIXTURES, "refs.npz")))


@pytest.mark.parametrize("name", ["avg_auto", "max_auto", "max_plain"])
def test_ceil_out_dim_pooling_file_computes_cntks_values(name):
    g = C.load_model(os.path.join(FIXTURES, name + ".model"))
    got = g.eval({g.arguments[0]: REFS["x"]})
    np.testing.assert_allclose(got, REFS[name], rtol=1e-6, atol=1e-6)


def _padded_pooling(kind: str, rows: int):
    """A pooling of windows of 3 every 1 over a ``(rows, 5)`` map padded by 1 on each side:
    max pooling of a ``-inf`` pad, or the compat's average of the values inside (the sums of
    the zero-padded map by those of its zero-padded ``x ** 0``)."""
    import stadyn as sd
    import stadyn.functions as F
    x = sd.Variable((1, 1, rows, 5))
    if kind == "max":
        return x, F.max_pooling(F.pad(x, (1, 1, 1, 1), "constant", float("-inf")), (3, 3),
                                (1, 1))
    total = F.average_pooling(F.pad(x, (1, 1, 1, 1), "constant", 0.0), (3, 3), (1, 1))
    ones = F.stop_gradient(F.pow_scalar(x, 0.0))
    count = F.average_pooling(F.pad(ones, (1, 1, 1, 1), "constant", 0.0), (3, 3), (1, 1))
    return x, F.div2(total, count)


@pytest.mark.parametrize("kind", ["max", "mean"])
def test_a_window_longer_than_the_input_is_not_written_as_automatic_padding(kind, tmp_path):
    # CNTK 2.7 refuses a Pooling whose window is longer than its input on an axis when it
    # loads the file ('Convolution operation requires that kernel dim 3 <= input dim 2', as
    # C.pooling refuses it): the padding is not folded into automatic padding, so the writer
    # has no form for the graph (its pad).  Before (a9dd4ed5), the max pooling's fold raised
    # a ShapeError out of the writer and the average's wrote the file CNTK 2.7 refuses
    from stadyn.serialize import CntkWriteUnsupported, save_cntk_v2
    x, y = _padded_pooling(kind, 4)
    save_cntk_v2(str(tmp_path / "fits.model"), [y], {"x": x})   # (CNTK's automatic padding)
    x, y = _padded_pooling(kind, 2)
    with pytest.raises(CntkWriteUnsupported, match="no CNTK v2 form for pad"):
        save_cntk_v2(str(tmp_path / "long.model"), [y], {"x": x})
