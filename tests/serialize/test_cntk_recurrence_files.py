"""CNTK 2.7 model files holding recurrences (``Recurrence(LSTM)``, ``GRU`` going backwards,
``Fold``, stacked recurrences, an ``Embedding`` + LSTM tagger, a ``PastValue`` loop closed with
``replace_placeholders``, ``sequence.reduce_max`` of a recurrence; and ``tanh`` of a sequence)
load in Stadyn showing what CNTK 2.7 shows of them -- ``inputs``, ``arguments``,
``parameters``, ``outputs`` and the root function's inputs, in order, with CNTK's names, uids
and shapes -- and computing CNTK 2.7's outputs on the committed sequences.

``tests/fixtures/cntk_model_recurrence/*.model``, ``views.json`` and ``outputs.npz`` were
written by the real CNTK 2.7 (``make_models.py`` there).
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_model_recurrence")
with open(os.path.join(FIXTURES, "views.json")) as _f:
    VIEWS = json.load(_f)
DATA = np.load(os.path.join(FIXTURES, "outputs.npz"))
SEQS = [DATA[f"x_{k}"] for k in range(3)]


def _shown(vs):
    return [[v.name, v.uid, list(v.shape)] for v in vs]


@pytest.fixture(scope="module", params=sorted(VIEWS))
def loaded(request):
    return request.param, C.load_model(os.path.join(FIXTURES, request.param + ".model"))


def test_a_loaded_recurrence_shows_cntks_view(loaded):
    # before (a7dbedc3), lstm_dense: inputs began with the LSTM's H (H, Constant, b, W, W, b,
    # x) and the root Dense showed 7 inputs (the loop's parameters, then the recurrence's output
    # as 'Recurrence1_Output_0'); CNTK 2.7 shows W, b and the LSTM block's output
    name, f = loaded
    want = VIEWS[name]
    # (the constants inside sequence.last's Sequence::Slice block were left out here until
    # cntkwrite5: Stadyn read that block as one op and showed none of them; it shows the file's
    # now, as CNTK 2.7 does)
    assert want["sequence_block_constants"] is not None
    assert f.root_function.op_name == want["root_op"]
    for what in ("inputs", "arguments", "parameters", "outputs"):
        assert _shown(getattr(f, what)) == want[what], what
    if name != "past_value_loop":
        assert _shown(f.root_function.inputs) == want["root_inputs"]


def test_a_function_inside_a_loop_shows_what_it_reads_from_outside_the_loop():
    # CNTK 2.7 shows the loop's Tanh reading the Plus inside the loop (Plus5871_Output_0);
    # the loop runs as one recurrence here, so the Tanh shows what the loop reads from outside
    # in CNTK's order: the Dense's output, the PastValue's initial state, then the 0.5
    f = C.load_model(os.path.join(FIXTURES, "past_value_loop.model"))
    inputs = {v[1]: v for v in VIEWS["past_value_loop"]["inputs"]}
    plus = VIEWS["past_value_loop"]["root_inputs"]
    assert len(plus) == 1 and plus[0][1].startswith("Plus")
    got = _shown(f.root_function.inputs)
    assert [v[0] for v in got] == ["proj", "", ""]
    assert [v[1] for v in got[1:]] == [u for u in inputs if u.startswith("Constant")]
    assert got[0][1].startswith("Block") and got[0][2] == [3]
    # before: the padded output showed itself, its own op's output, as its input
    assert got[0][1] != f.outputs[0].uid


def test_a_loaded_recurrence_computes_cntks_outputs(loaded):
    name, f = loaded
    got = f.eval({f.arguments[0]: SEQS})
    if isinstance(got, list):
        out = np.zeros((len(got), max(len(s) for s in got)) + np.asarray(got[0]).shape[1:],
                       np.float32)
        for k, s in enumerate(got):
            out[k, :len(s)] = s
    else:
        out = np.asarray(got)
    np.testing.assert_allclose(out, DATA[name], rtol=1e-5, atol=1e-6)


def test_an_lstm_tagger_saved_as_a_cntk_file_loads_back_as_it_was(tmp_path):
    # before (a7dbedc3): written as a Stadyn model file with a warning (the writer refused
    # LSTM recurrences while the reader showed them otherwise than CNTK); now CNTK's format
    # (CNTK 2.7 loads it with Stadyn's outputs: tests/serialize/test_cntk_model_write.py,
    # network 'sequences'), and Stadyn reads it back with the same view and outputs
    import warnings
    x = C.sequence.input_variable(3, name="x")
    f = C.layers.Sequential([C.layers.Embedding(4), C.layers.Recurrence(C.layers.LSTM(5)),
                             C.layers.Dense(2)])(x)
    path = str(tmp_path / "tagger.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f.save(path)
    with open(path, "rb") as fh:
        assert not fh.read(2) == b"PK"              # not a Stadyn (zip) model file
    g = C.load_model(path)
    for what in ("inputs", "arguments", "parameters"):
        assert [(v.name, v.shape) for v in getattr(g, what)] == \
            [(v.name, v.shape) for v in getattr(f, what)], what
    assert g.root_function.op_name == "Dense" and len(g.root_function.inputs) == 3
    assert g.root_function.inputs[2].owner.op_name == "LSTM"
    want = f.eval({f.arguments[0]: SEQS})
    got = g.eval({g.arguments[0]: SEQS})
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
