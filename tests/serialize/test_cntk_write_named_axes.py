"""CNTK v2 and v1 files Stadyn writes of graphs over inputs on a named sequence axis
(``C.Axis('words')``, and ``''``, the axis CNTK 2.7 gives a cntk.exe file's inputs), as CNTK 2.7
writes them: the input's ``dynamic_axis`` an ordered axis of that name before the batch axis
(``InternalDynamicAxisNameFromDynamicAxes``, ``Source/CNTKv2LibraryDll/Utils.cpp``:522-533),
so CNTK 2.7 and Stadyn load the file with the same axes and values.  Before, the CNTK v2
writer refused such an input: ``Function.save`` wrote Stadyn's own format with a warning (CNTK
2.7 cannot read it) and ``save_as_legacy_model`` raised ``CntkWriteUnsupported``.

``tests/fixtures/cntk_named_axes/``: CNTK 2.7's files of ``network.py``'s functions, its
outputs of them loaded back (``refs.npz``) and their axes (``refs.json``; ``make_refs.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import warnings

import numpy as np
import pytest
import peers

import stadyn.compat.cntk as C
from stadyn.serialize._cntk_format import _decode_file
from fixture_network import fixture_network

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_named_axes")
network = fixture_network("cntk_named_axes")
REFS = dict(np.load(os.path.join(FIXTURES, "refs.npz")))
with open(os.path.join(FIXTURES, "refs.json")) as _f:
    AXES = json.load(_f)
CNTK_PYTHON = peers.CNTK_PYTHON
KINDS = (("v2", ""), ("v1", "_v1"))


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Stadyn's files of the functions: ``Function.save`` (no warning: a CNTK v2 file, not
    Stadyn's format) and ``save_as_legacy_model``."""
    folder = tmp_path_factory.mktemp("cntk_named_axes")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        for name, f in network.build(C).items():
            f.save(str(folder / (name + ".model")))
            C.debugging.save_as_legacy_model(f, str(folder / (name + "_v1.model")))
    return str(folder)


def _inputs(path: str) -> list:
    """A v2 file's inputs (kind 0): name, shape, dynamic axes (static index, name, ordered)."""
    with open(path, "rb") as f:
        top = _decode_file(path, f.read())
    return sorted((i.get("name") or "", i.get("shape"),
                   [(a.static_axis_idx, a.name, a.ordered) for a in i["dynamic_axis"]])
                  for i in top["inputs"] if i.get("kind") == 0)


@pytest.mark.parametrize("name", network.NAMES)
def test_the_v2_files_inputs_are_written_as_cntks(written, name):
    assert _inputs(os.path.join(written, name + ".model")) == \
        _inputs(os.path.join(FIXTURES, name + ".model"))


def _check(got_values: dict, got_axes: dict, key: str) -> None:
    assert got_axes == AXES[key], key
    for k, v in REFS.items():
        if k.startswith(key + "/"):
            np.testing.assert_allclose(got_values[k[len(key) + 1:]], v, rtol=1e-5, atol=1e-6,
                                       err_msg=k)


@pytest.mark.parametrize("kind,suffix", KINDS)
@pytest.mark.parametrize("name", network.NAMES)
def test_stadyn_loads_its_files_and_cntks_with_cntks_axes_and_values(written, name, kind,
                                                                    suffix):
    for folder in (written, FIXTURES):
        g = C.load_model(os.path.join(folder, name + suffix + ".model"))
        _check(network.evaluate(g), network.description(g), f"{name}/{kind}")


def test_stadyn_loads_a_v1_slice_on_cntks_derived_axis():
    """A v1 file's ``sequence.slice`` (``GatherPacked(PackedIndex(x, Where(c)), x)``) is on
    the axis its ``Where`` node names (``words_times_1_minus_2``), as CNTK 2.7's
    ``LoadLegacyModel`` gives it (BackCompat.cpp:191-197); before, on the input's axis
    (``words``)."""
    g = C.load_model(os.path.join(FIXTURES, "mid_v1.model"))
    _check(network.evaluate(g), network.description(g), "mid/v1")


@pytest.mark.skipif(not os.path.exists(CNTK_PYTHON), reason="CNTK 2.7's Python is not installed")
def test_cntk_loads_stadyns_files_with_the_axes_and_values_of_its_own(written, tmp_path):
    out = str(tmp_path / "cntk.npz")
    env = dict(os.environ, LD_LIBRARY_PATH=peers.CNTK_LIBS)
    subprocess.run([CNTK_PYTHON, "-W", "ignore", os.path.join(FIXTURES, "make_refs.py"),
                    written, out], check=True, env=env, cwd=FIXTURES, capture_output=True)
    values = dict(np.load(out))
    with open(out[:-len(".npz")] + ".json") as f:
        axes = json.load(f)
    assert sorted(values) == sorted(REFS) and sorted(axes) == sorted(AXES)
    for key in AXES:
        _check({k[len(key) + 1:]: v for k, v in values.items() if k.startswith(key + "/")},
               axes[key], key)


def _v1_axes(path: str) -> list:
    """A v1 file's ``DynamicAxis`` nodes and its inputs' dynamic-axis names (by the inputs'
    names, the uids being numbered apart)."""
    from stadyn.serialize._cntk_v1_format import read_cntk_v1
    net = read_cntk_v1(path).networks["main"]
    return sorted([("DynamicAxis", f.name) for f in net.functions if f.type == "DynamicAxis"] +
                  [(v.meta["v2_name"], v.meta["dynamic_axis"]) for v in net.variables.values()
                   if "dynamic_axis" in v.meta])


@pytest.mark.parametrize("name", network.NAMES)
def test_the_v1_files_axes_are_written_as_cntks(written, name):
    """CNTK 2.7 writes a ``DynamicAxis`` node for each named axis but ``''``
    (``CompositeFunction.cpp``:501-502); before, Stadyn wrote one named ``''`` too."""
    assert _v1_axes(os.path.join(written, name + "_v1.model")) == \
        _v1_axes(os.path.join(FIXTURES, name + "_v1.model"))
