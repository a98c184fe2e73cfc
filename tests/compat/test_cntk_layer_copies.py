"""``copy.copy`` of a CNTK layer not applied yet makes its output first (so that the copy
shares its uid, as CNTK 2.7's does: ``layers__copy_keeps_uid``); an error making that output is
the caller's to see, not taken for "a layer of several outputs" and dropped."""

import copy

import pytest

import stadyn.compat.cntk as C
from stadyn.compat.cntk import _layers_function


def test_a_copy_of_a_layer_of_two_outputs_shares_its_uid():
    lstm = C.layers.LSTM(3)
    assert copy.copy(lstm).uid == lstm.uid


def test_an_attribute_error_making_the_output_is_not_swallowed(monkeypatch):
    def broken(*args, **kwargs):
        raise AttributeError("a mistake inside Stadyn")

    monkeypatch.setattr(_layers_function, "Deferred", broken)
    with pytest.raises(AttributeError, match="a mistake inside Stadyn"):
        copy.copy(C.layers.Dense(2))
