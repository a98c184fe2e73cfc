"""``with sd.context(...):`` as the README writes it, and the bare call that changes nothing."""

import warnings

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F


def test_with_context_runs_ops_in_its_precision_and_restores_the_previous_one():
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    w = np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2)
    with sd.auto_forward():
        with sd.context("cpu", dtype="bfloat16") as ctx:
            assert sd.get_current_context() is ctx
            y = F.affine(sd.Variable.from_numpy_array(x), sd.Variable.from_numpy_array(w))
        z = F.affine(sd.Variable.from_numpy_array(x), sd.Variable.from_numpy_array(w))
    assert sd.get_current_context() == sd.Context()
    # inside the block the product ran on bf16-rounded inputs, after it in fp32
    bf16 = lambda a: torch.from_numpy(a).bfloat16().double().numpy()
    assert y.data.dtype == torch.bfloat16
    np.testing.assert_allclose(y.d.astype(np.float64), bf16(x) @ bf16(w), rtol=1e-2)
    assert z.data.dtype == torch.float32
    np.testing.assert_allclose(z.d, x.astype(np.float64) @ w, rtol=1e-6)


def test_nested_blocks_restore_each_outer_context_even_after_an_error():
    outer, inner = sd.context("cpu", dtype="bfloat16"), sd.context("cpu", dtype="float32")
    with outer:
        with pytest.raises(ZeroDivisionError):
            with inner:
                assert sd.get_current_context() is inner
                1 / 0
        assert sd.get_current_context() is outer
        with outer:                                  # the same context entered twice
            assert sd.get_current_context() is outer
        assert sd.get_current_context() is outer
    assert sd.get_current_context() == sd.Context()


def test_a_bare_context_call_warns_and_changes_nothing():
    with pytest.warns(UserWarning, match=r"with sd\.context\(\.\.\.\)"):
        sd.context("cpu", dtype="bfloat16")
    assert sd.get_current_context().dtype == "float32"


def test_a_context_that_is_kept_or_used_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ctx = sd.context("cpu", dtype="bfloat16")
        with sd.context("cpu", dtype="bfloat16"):
            pass
        sd.set_default_context(sd.context("cpu"))
        assert [sd.context("cpu")][0] == ctx.__class__()
        assert ctx.dtype == "bfloat16"
