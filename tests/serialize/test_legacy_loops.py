"""CNTK 2.7-written recurrent models (graph loops through PastValue / FutureValue, sequence
inputs, CNTK's sequence ops) loaded by ``sd.load`` against the outputs CNTK computed
(``tests/fixtures/legacy/make_cntk_recurrent_more.py``), and loops that cannot run as a
recurrence refused with one error naming the file and the loop's functions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import stadyn as sd
from stadyn import ModelFileError
from stadyn.serialize import UnsupportedModelError, read_legacy_model
from stadyn.serialize._legacy_load import legacy_model_info, load_cntk

LEGACY = Path(__file__).resolve().parents[1] / "fixtures" / "legacy"
REFS = LEGACY / "cntk_rec_outputs.npz"

# case -> recurrences the loaded network holds (one per CNTK graph loop)
CASES = {"lstm_peep_stab": 1, "bidir": 3, "offsets": 1, "classifier": 1, "seq_ops": 1,
         "recurrence_from": 1}


def _load(case, dynamic):
    path = LEGACY / f"cntk_rec_{case}.model"
    if dynamic:
        with sd.auto_forward():
            return sd.load(path)
    return sd.load(path)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("case", list(CASES))
def test_cntk_recurrent_models_give_cntks_outputs(case, dynamic):
    ref = np.load(REFS)
    x, lengths, want = ref[f"{case}/x"], ref[f"{case}/lengths"], ref[f"{case}/y"]
    net = _load(case, dynamic)
    assert net.info().op_counts["recurrence"] == CASES[case]
    others = {k.split("/")[1]: ref[k] for k in ref.files if k.startswith(case + "/")
              and k.count("/") == 1 and k.split("/")[1] not in ("x", "lengths", "y")}
    assert list(net.inputs) == ["x"] + list(others)
    assert net.inputs["x"].sequence_lengths is not None
    # the sequences in CNTK's order, then others: each run has its own lengths and batch size
    # (a static run of new sizes traces again: two sizes there)
    for rows in ([0, 1, 2], [1]) if dynamic else ([0, 1, 2], [2, 0]):
        feed = {k: v[rows] for k, v in others.items()}
        (y,) = net(x=[x[b, :lengths[b]] for b in rows], **feed).values()
        expected = want[rows]
        if expected.ndim == 3:                  # a sequence output, padded with zeros
            expected = expected[:, :max(lengths[rows])]
        assert y.shape == expected.shape
        np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["bidir", "offsets"])
def test_gradients_through_the_loops_are_cntks(case):
    # d sum(outputs) / d parameter, CNTK's Function.grad: through forward and backward loops,
    # a Fold, and a 2-step delay's learnable initial state (offsets' Parameter of shape (3,))
    import stadyn.functions as F
    ref = np.load(REFS)
    net = sd.load(LEGACY / f"cntk_rec_{case}.model")
    net.inputs["x"].d = [ref[f"{case}/x"][b, :n] for b, n in enumerate(ref[f"{case}/lengths"])]
    (y,) = net.outputs.values()
    loss = F.sum(y)
    loss.forward()
    params = net.parameters
    for p in params.values():
        p.grad = None
    loss.backward()
    wanted = [k for k in ref.files if k.startswith(f"{case}/grad/")]
    assert len(wanted) == len([p for p in params.values() if p.need_grad])
    for k in wanted:
        np.testing.assert_allclose(np.asarray(params[k.split("/")[-1]].grad), ref[k],
                                   rtol=1e-5, atol=1e-6, err_msg=k)


def test_a_loaded_cntk_recurrent_model_saves_as_a_stadyn_model_file(tmp_path):
    ref = np.load(REFS)
    net = sd.load(LEGACY / "cntk_rec_bidir.model")
    path = tmp_path / "bidir.stadyn"
    sd.save(path, dict(net.outputs), dict(net.inputs))
    (y,) = sd.load(path)(x=[ref["bidir/x"][b, :n]
                            for b, n in enumerate(ref["bidir/lengths"])]).values()
    np.testing.assert_allclose(y, ref["bidir/y"], rtol=1e-5, atol=1e-6)


def test_a_cntk_recurrent_model_loads_in_the_cntk_api():
    import stadyn.compat.cntk as C
    ref = np.load(REFS)
    model = C.load_model(str(LEGACY / "cntk_rec_offsets.model"))
    (arg,) = model.arguments
    assert arg.name == "x"
    seqs = [ref["offsets/x"][b, :n] for b, n in enumerate(ref["offsets/lengths"])]
    out = model.eval({arg: seqs})
    assert [len(o) for o in out] == [3, 1, 5]
    for b, o in enumerate(out):
        np.testing.assert_allclose(o, ref["offsets/y"][b, :len(o)], rtol=1e-5, atol=1e-6)


def test_a_cntk_recurrent_model_keeps_cntks_names_in_the_cntk_api():
    import stadyn.compat.cntk as C
    model = C.load_model(str(LEGACY / "cntk_recurrent.model"))
    assert model.find_by_name("out").op_name == "Dense"       # the Dense block after the loops
    assert model.find_by_name("lstm").op_name == "NoOp"       # Recurrence(..., name="lstm")
    assert model.find_by_name("gru").shape == (2,)


def test_a_sparse_sequence_input_is_fed_dense_rows():
    # the tutorial's word input is sparse in CNTK (fed CSR matrices); it loads as a dense one
    model = read_legacy_model(LEGACY / "cntk_rec_classifier.model")
    (name,) = model.networks["main"].inputs
    assert model.networks["main"].variables[name].meta["is_sparse"] is True
    net = sd.load(LEGACY / "cntk_rec_classifier.model")
    assert net.inputs["x"].shape[2:] == (10,)


def test_info_shows_the_sequence_axes():
    info = legacy_model_info(LEGACY / "cntk_rec_offsets.model")
    assert info.inputs["x"][0] == ("batch", "sequence", 3)
    (out,) = info.outputs.values()
    assert out[0] == ("batch", "sequence", 3)
    info = legacy_model_info(LEGACY / "cntk_rec_classifier.model")
    assert list(info.outputs.values())[0][0] == ("batch", 3)


# ---------------------------------------------------------------------------------------------
# Loops that cannot run as a recurrence: one error naming the file and the functions
# ---------------------------------------------------------------------------------------------
def _function(model, name):
    return next(f for f in model.networks["main"].all_functions() if f.name == name)


def _forget(model, name):
    nets = [model.networks["main"]] + [f.body for f in model.networks["main"].all_functions()
                                       if f.body is not None]
    for net in nets:
        net.variables.pop(name, None)


def _retype(model, name, new):
    _function(model, name).type = new


def _set(model, name, **attrs):
    _function(model, name).attrs.update(attrs)


def _reshape(model, name, shape):
    for net in [model.networks["main"]] + [f.body for f in model.networks["main"]
                                           .all_functions() if f.body is not None]:
        if name in net.variables:
            net.variables[name].shape = shape


def _init_inside(model, name):
    f = _function(model, name)
    f.inputs = (f.inputs[0], "Plus1355_Output_0")


# In cntk_recurrent.model the LSTM's loop runs through PastValue1338 (h) and PastValue1341
# (c), which delay the LSTM block's outputs Block1403_Output_0 and _1.  The file records the
# shapes of the loop's values as the placeholders CNTK saves for them: the block's outputs (h,
# c), its arguments (Placeholder1634, _1635: the delayed h, c) and Plus1355_Output_0 (W x + b).
_LSTM_STATE_SHAPES = ["Block1403_Output_0", "Block1403_Output_1", "Placeholder1634",
                      "Placeholder1635", "Plus1355_Output_0"]


@pytest.mark.parametrize("forget", [["Block1403_Output_0"], _LSTM_STATE_SHAPES[:3]],
                         ids=["h", "h-c-delayed-h"])
def test_a_loop_state_of_no_recorded_shape_gets_the_shape_cntk_infers(forget):
    # CNTK 2.7 infers a shape the file lacks at load (UnfoldFrom's ReconcileDynamicAxis:
    # test_cntk_layer_models); so does the importer, from the loop's other values
    ref = np.load(LEGACY / "cntk_recurrent_outputs.npz")
    model = read_legacy_model(LEGACY / "cntk_recurrent.model")
    for name in forget:
        _forget(model, name)
    (y,) = load_cntk(model)(x=[ref["x"][b, :n] for b, n in enumerate(ref["lengths"])]).values()
    np.testing.assert_allclose(y, ref["y"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("damage, error, message", [
    (lambda m: (_retype(m, "PastValue1338", "NoOp"), _retype(m, "PastValue1341", "NoOp")),
     UnsupportedModelError, "no PastValue or FutureValue closes it (an algebraic loop)"),
    (lambda m: _retype(m, "PastValue1338", "FutureValue"), UnsupportedModelError,
     "it runs through PastValue and FutureValue ('PastValue1341' (PastValue), "
     "'PastValue1338' (FutureValue))"),
    (lambda m: _set(m, "PastValue1338", offset=0), ModelFileError,
     "'PastValue1338' (PastValue) has the offset 0"),
    (lambda m: [_forget(m, n) for n in _LSTM_STATE_SHAPES], ModelFileError,
     "the file does not record the shape of 'Plus1378_Output_0', which 'PastValue1341' "
     "(PastValue) delays, and it cannot be inferred (it reads 'PastValue1338' (PastValue), "
     "whose shape is not known)"),
    (lambda m: _reshape(m, "Block1403_Output_0", (5,)), UnsupportedModelError,
     "function 'Times1353' (Times): cannot be mapped: times of (1, 5) by (4, 16) with "
     "outputRank 1 (inferInputRankToMap -1) (in one step of the loop through "),
    (lambda m: _init_inside(m, "PastValue1338"), UnsupportedModelError,
     "'PastValue1338' (PastValue) takes its initial state from inside the loop"),
], ids=["algebraic", "both-directions", "offset-0", "no-shape", "wrong-shape", "init-inside"])
def test_a_loop_that_cannot_run_is_one_error_naming_the_file_and_its_functions(damage, error,
                                                                               message):
    model = read_legacy_model(LEGACY / "cntk_recurrent.model")
    damage(model)
    with pytest.raises(error) as info:
        load_cntk(model)
    text = str(info.value)
    assert text.startswith(f"{model.path}: "), text
    # (the loop's functions are listed in the flattened network's order, which is not the
    # point: that the error names the file, the loop by its functions and the reason is)
    listed = text.split("the loop through ", 1)[1].split(" and 11 more")[0]
    assert "'PastValue1341' (" in listed and message in text, text


def test_a_sequence_op_inside_a_loop_is_refused_by_name():
    # the LSTM's cell update reading a whole-sequence reduction: no step can compute it
    model = read_legacy_model(LEGACY / "cntk_recurrent.model")
    _retype(model, "Plus1378", "Sequence::Softmax")
    with pytest.raises(UnsupportedModelError, match=r"cntk_recurrent\.model: network 'main': "
                       r"the loop through .*'Plus1378' \(Sequence::Softmax\) inside the loop: "
                       "sequence operations cannot run one step at a time"):
        load_cntk(model)
