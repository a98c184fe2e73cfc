"""CNTK v2 files Stadyn writes with the ops its writer wrote as Stadyn's own format (with the
warning "no CNTK v2 form for selu: the writer has no rule for this op", a file CNTK 2.7 cannot
read) until cntkwrite5: ``SELU``, ``LeakyReLU``, ``PReLU``, ``HardSigmoid`` (the blocks CNTK 2.7
builds), ``StraightThrough``, ``LogPlus``, ``Pad`` (constant, reflect, symmetric), ``Gather``,
the ``ReduceL1``, ``ReduceL2``, ``ReduceSumSquare`` blocks and ``RandomDistribution``
(``cntk.random``'s draws: ``*_like`` and of a shape).

``tests/fixtures/cntk_write_forms/``: CNTK 2.7's ``cntk_more.model``, ``cntk_random.model`` and
``cntk_norms.model`` with its outputs of them (``cntk_more.npz``, ``make_cntk_more.py``); CNTK
2.7's outputs and listing of the files Stadyn wrote (``make_forms.py``: ``again_*``, CNTK's
file loaded and saved again; ``built_*``, the network built in the compat,
``forms_network.py``)."""

from __future__ import annotations

import json
import os
import sys
import warnings

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_write_forms")
sys.path.insert(0, FIXTURES)
import make_forms  # noqa: E402

ON_STADYNS = dict(np.load(os.path.join(FIXTURES, "cntk_outputs.npz")))
with open(os.path.join(FIXTURES, "written.json")) as _f:
    WRITTEN = json.load(_f)

CNTK_MORE = dict(np.load(os.path.join(FIXTURES, "cntk_more.npz")))
FEEDS = {"xs": CNTK_MORE["xs"], "idx": CNTK_MORE["idx"], "big": np.zeros((2, 1000), np.float32)}
MORE = ["selu", "leaky_relu", "param_relu", "hard_sigmoid", "straight_through", "log_add_exp",
        "pad_constant", "pad_reflect", "pad_symmetric", "gather"]
NORMS = ["reduce_l1", "reduce_l2", "reduce_sum_square", "reduce_l2_axes"]
RANDOM = sorted(f"{k}_{form}" for k in make_forms.forms_network.RANDOM
                for form in ("like", "shaped"))


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("cntk_write_more_forms"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)     # each is a CNTK v2 file
        make_forms.save_both(C, folder)
    return folder


@pytest.mark.parametrize("name", make_forms.RANDOM_FILES)
def test_the_written_random_file_is_the_one_cntk_read(written, name):
    assert make_forms.decoded(os.path.join(written, name + ".model")) == WRITTEN[name]["file"]


@pytest.mark.parametrize("name", ["again_more", "built_more"])
def test_cntk_computes_on_stadyns_file_what_it_computes_on_its_own(name):
    # the blocks and primitives as CNTK 2.7 writes them, and CNTK's values on Stadyn's file
    # equal to its values on its own (the compat's network: the same network as CNTK's)
    listed = WRITTEN[name]["cntk"]
    assert [o[0] for o in listed["outputs"]] == MORE
    assert [f[0] for f in listed["functions"][:11]] == [
        "Combine", "SELU", "LeakyReLU", "PReLU", "HardSigmoid", "StraightThrough", "LogPlus",
        "Pad", "Pad", "Pad", "Gather"]
    for out in MORE:
        np.testing.assert_array_equal(ON_STADYNS[f"{name}/{out}"], CNTK_MORE["more/" + out],
                                      err_msg=out)


def test_cntk_computes_the_norms_on_stadyns_file_as_on_its_own():
    # the ReduceL1 / ReduceL2 / ReduceSumSquare blocks (around CNTK's ReduceElements blocks,
    # and the ReduceSumSquare block inside ReduceL2) with the attributes CNTK 2.7 writes
    listed = WRITTEN["built_norms"]["cntk"]
    assert [o[0] for o in listed["outputs"]] == NORMS
    assert [f[0] for f in listed["functions"][:5]] == [
        "Combine", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceL2"]
    own = make_forms.decoded(os.path.join(FIXTURES, "cntk_norms.model"))

    def attributes(decoded):
        return sorted(json.dumps(f["attributes"], sort_keys=True)
                      for f in decoded["primitive_functions"])
    assert attributes(WRITTEN["built_norms"]["file"]) == attributes(own)
    for out in NORMS:
        np.testing.assert_allclose(ON_STADYNS["built_norms/" + out], CNTK_MORE["norms/" + out],
                                   rtol=1e-6, err_msg=out)


def _random_attributes(path: str) -> dict:
    """The RandomDistribution functions' attributes of a model file, decoded, by name."""
    functions = make_forms.decoded(path)["primitive_functions"]
    return {f["name"]: f["attributes"] for f in functions if f["op"] == 76}


@pytest.mark.parametrize("name", make_forms.RANDOM_FILES)
def test_cntk_draws_on_stadyns_file_what_it_draws_on_its_own(name):
    # RandomDistribution with CNTK's attributes -- type, arguments, rngSeed, rngOffset, and
    # newShape / newDataType for a draw of a shape (no input) -- as in CNTK 2.7's own file; so
    # CNTK 2.7 draws the very values it draws on its own file
    own = _random_attributes(os.path.join(FIXTURES, "cntk_random.model"))
    written_attributes = {f["name"]: f["attributes"]
                          for f in WRITTEN[name]["file"]["primitive_functions"]
                          if f["op"] == 76}
    assert written_attributes == own and sorted(own) == RANDOM
    listed = dict((n, a) for n, a in WRITTEN[name]["cntk"]["random"])
    assert sorted(listed) == RANDOM
    assert listed["normal_shaped"] == {"newDataType": 1, "newShape": [20, 50],
                                       "randomDistributionArgs": [1.0, 2.0],
                                       "randomDistributionType": "normal", "rngOffset": 0,
                                       "rngSeed": 15}
    for out in RANDOM:
        np.testing.assert_array_equal(ON_STADYNS[f"{name}/{out}"], CNTK_MORE["random/" + out],
                                      err_msg=out)


def _check_moments(out: str, got: np.ndarray) -> None:
    kind = out.rpartition("_")[0]
    _, args, _ = make_forms.forms_network.RANDOM[kind]
    want_shape = (2, 1000) if out.endswith("_like") else (20, 50)
    assert got.shape == want_shape and got.dtype == np.float32, out
    if kind == "normal":
        mean, std = args
    elif kind == "uniform":
        mean, std = (args[0] + args[1]) / 2, (args[1] - args[0]) / 12 ** 0.5
        assert got.min() >= args[0] and got.max() < args[1]
    elif kind == "gumbel":
        mean, std = args[0] + 0.5772156649 * args[1], args[1] * np.pi / 6 ** 0.5
    else:
        mean, std = args[0], (args[0] * (1 - args[0])) ** 0.5
        assert set(np.unique(got).tolist()) <= {0.0, 1.0}
    # within 5 standard errors of the distribution's mean and 15% of its deviation
    assert abs(got.mean() - mean) < 5 * std / got.size ** 0.5, out
    assert abs(got.std() - std) < 0.15 * std, out


@pytest.mark.parametrize("name", make_forms.RANDOM_FILES)
def test_stadyn_reads_its_random_file_as_the_same_draws(written, name):
    # Stadyn's own generator: other values than CNTK's, the same distributions, shapes, types
    m = C.load_model(os.path.join(written, name + ".model"))
    got = m.eval({a: FEEDS[a.name] for a in m.arguments})
    assert sorted(o.name for o in m.outputs) == RANDOM
    for o in m.outputs:
        _check_moments(o.name, np.asarray(got[o]))
        _check_moments(o.name, CNTK_MORE["random/" + o.name])      # (CNTK's own, alike)


def test_stadyn_reads_cntks_file_with_cntks_outputs():
    # CNTK 2.7's own file: StraightThrough and the symmetric Pad are read now (before: "CNTK
    # functions no Stadyn op maps: StraightThrough", "paddingMode 2 ... refused")
    m = C.load_model(os.path.join(FIXTURES, "cntk_more.model"))
    got = m.eval({a: FEEDS[a.name] for a in m.arguments})
    for o in m.outputs:
        np.testing.assert_allclose(got[o], CNTK_MORE["more/" + o.name], rtol=1e-6, atol=1e-6,
                                   err_msg=o.name)


@pytest.mark.parametrize("kind", ["more", "norms"])
def test_the_compat_network_computes_what_cntk_computes(kind):
    f = getattr(make_forms.forms_network, "build_" + kind)(C)
    got = f.eval({a: FEEDS[a.name] for a in f.arguments})
    for o in f.outputs:
        np.testing.assert_allclose(got[o], CNTK_MORE[f"{kind}/{o.name}"], rtol=1e-6, atol=1e-6,
                                   err_msg=o.name)


def test_an_unseeded_draw_is_not_written_as_cntks(tmp_path):
    # a catalog draw without a seed (-1: a fresh one each run) has no CNTK rngSeed
    import stadyn as sd
    import stadyn.functions as F
    from stadyn.serialize import CntkWriteUnsupported, save_cntk_v2
    x = sd.Variable((1, 3))
    with pytest.raises(CntkWriteUnsupported, match="an unseeded draw"):
        save_cntk_v2(str(tmp_path / "r.model"), [F.randn_like(x)], {"x": x})
    assert not os.path.exists(tmp_path / "r.model")
