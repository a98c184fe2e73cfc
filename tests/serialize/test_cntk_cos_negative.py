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
