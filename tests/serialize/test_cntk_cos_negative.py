"""CNTK 2.7's ``CosDistanceWithNegativeSamples`` files (``C.cosine_distance_with_negative_
samples``) load and compute CNTK 2.7's numbers: ``tests/fixtures/cntk_cos_negative/`` (its
``make_models.py``, run on CNTK 2.7, wrote the files and ``refs.npz``).  Before rmA39 Stadyn
refused them (UnsupportedModelError: "CNTK functions no Stadyn op maps")."""

import os

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_cos_negative")
REFS = np.load(os.path.join(FIXTURES, "refs.npz"))


def _feed(model, arg):
    key = f"{model}/{arg.name}"
    if key in REFS:
        return REFS[key]
    return [REFS[f"{key}/{k}"] for k in range(3)]


@pytest.mark.parametrize("model", ["batch", "shift0", "sequences"])
def test_a_cntk_file_of_cosine_with_negative_samples_gives_cntks_numbers(model):
    m = C.load_model(os.path.join(FIXTURES, f"{model}.model"))
    out = m.eval({a: _feed(model, a) for a in m.arguments})
    if f"{model}/out" in REFS:
        np.testing.assert_allclose(out, REFS[f"{model}/out"], rtol=1e-5, atol=1e-6)
    else:
        assert len(out) == 3
        for k, o in enumerate(out):
            np.testing.assert_allclose(o, REFS[f"{model}/out/{k}"], rtol=1e-5, atol=1e-6)
    assert sorted(a.name for a in m.arguments) == sorted(
        {k.split("/")[1] for k in REFS if k.startswith(model + "/") and "/out" not in k})


def test_a_loaded_cosine_with_negative_samples_lists_its_shift_and_count_as_cntk():
    # CNTK 2.7 (load_model of cntk_unmapped/cos_negative_samples.model, shift 1, 2 negatives):
    # root_function.inputs uids ['Input3', 'Input4', 'Constant5', 'Constant6'], constants
    # [('', (), 1.0), ('', (), 2.0)]; before rmA39 Stadyn refused the file, and with the rule
    # alone listed the inputs ['Input3', 'Input4'] and no constants
    m = C.load_model(os.path.join(FIXTURES, "..", "cntk_unmapped", "cos_negative_samples.model"))
    assert m.root_function.op_name == "CosDistanceWithNegativeSamples"
    assert [i.uid for i in m.root_function.inputs] == ["Input3", "Input4", "Constant5",
                                                       "Constant6"]
    assert [(c.name, c.shape, float(c.value)) for c in m.constants] == [
        ("", (), 1.0), ("", (), 2.0)]


def _built(model):
    """The model ``model`` of make_models.py, built with Stadyn's compat (write_stadyn.py's)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("cos_write_stadyn",
                                                  os.path.join(FIXTURES, "write_stadyn.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.built(model)


def test_a_built_cosine_with_negative_samples_shows_cntks_inputs():
    # CNTK 2.7: plus(cosine_distance_with_negative_samples(a, b, 1, 2), 1)'s op reads
    # [Input('a'), Input('b'), Constant, Constant] (its shift 1 and count 2), and the Function's
    # constants are [1, 2, 1]; Stadyn showed three TakeAlongAxis outputs and no constants
    f = _built("batch")
    op = f.root_function.inputs[0].owner
    assert op.op_name == "CosDistanceWithNegativeSamples"
    assert [repr(i) for i in op.inputs[:2]] == ["Input('a', [#], [2 x 3])",
                                                "Input('b', [#], [2 x 3])"]
    by_uid = {c.uid: c for c in f.constants}
    assert [float(by_uid[c.uid].value) for c in op.inputs[2:]] == [1.0, 2.0]
    assert [float(c.value) for c in f.constants] == [1.0, 2.0, 1.0]


@pytest.mark.parametrize("made", ["_stadyn", "_resaved_stadyn"])
@pytest.mark.parametrize("model", ["batch", "shift0", "sequences"])
def test_cosine_with_negative_samples_is_saved_in_cntks_format(model, made, tmp_path):
    # built with the compat, or CNTK's file loaded: saved as CNTK 2.7 writes it, one
    # CosDistanceWithNegativeSamples over the two inputs and its shift and count as float32
    # scalar Constants (batch.model, decoded), no Stadyn model file and no warning (before:
    # "no CNTK v2 form for sum"); CNTK 2.7 read the files write_stadyn.py wrote so and
    # computed its own numbers from them (read_stadyn.py: stadyn_read.npz, equal to refs.npz)
    import warnings

    from stadyn import serialize
    f = _built(model) if made == "_stadyn" else \
        C.load_model(os.path.join(FIXTURES, f"{model}.model"))
    path = str(tmp_path / "m.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        f.save(path)
    main = serialize.read_legacy_model(path).networks["main"]
    cntk = serialize.read_legacy_model(os.path.join(FIXTURES, f"{model}.model"))
    ops = [g for g in main.functions if g.type == "CosDistanceWithNegativeSamples"]
    want = [g for g in cntk.networks["main"].functions
            if g.type == "CosDistanceWithNegativeSamples"]
    assert len(ops) == 1 and [main.variables[u].kind for u in ops[0].inputs] == \
        [cntk.networks["main"].variables[u].kind for u in want[0].inputs]
    values = serialize.read_legacy_model(path).parameters
    assert [(values[u].value.dtype, float(values[u].value)) for u in ops[0].inputs[2:]] == \
        [(cntk.parameters[u].value.dtype, float(cntk.parameters[u].value))
         for u in want[0].inputs[2:]]
    read = np.load(os.path.join(FIXTURES, "stadyn_read.npz"))
    for key in (k for k in read.files if k.startswith(f"{model}{made}/")):
        np.testing.assert_array_equal(read[key], REFS[model + key[len(model + made):]])
    m = C.load_model(path)
    out = m.eval({a: _feed(model, a) for a in m.arguments})
    for k, o in enumerate(out if isinstance(out, list) else [out]):
        ref = REFS[f"{model}/out/{k}"] if isinstance(out, list) else REFS[f"{model}/out"]
        np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-6)
