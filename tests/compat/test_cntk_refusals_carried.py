"""A loaded function CNTK 2.7 refuses when run stays refused in the Function's copies: applied
to new inputs or cloned, the copy is made and each ``eval`` raises the original's error
(CNTK 2.7's, in ``tests/fixtures/cntk_refusals_carried/refs.json``, written by ``make_refs.py``
there, which this test runs on Stadyn's compat).  Before, the copies ran
(``compat/cntk/_clone.rebuild`` kept no refusal of a run)."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

import stadyn.compat.cntk as C

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_refusals_carried")
_spec = importlib.util.spec_from_file_location("cntk_refusals_carried_make_refs",
                                               os.path.join(HERE, "make_refs.py"))
MAKE = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(MAKE)
with open(os.path.join(HERE, "refs.json")) as _f:
    CNTK = json.load(_f)


@pytest.mark.parametrize("path", MAKE.FILES)
def test_a_loaded_function_refused_at_run_is_refused_in_its_applications_and_clones(path):
    got = MAKE.run(C)[path]
    want = CNTK[path]
    assert sorted(got) == sorted(want)
    for key, said in want.items():
        # (Stadyn's message adds the function and file it came from)
        assert got[key].startswith(said), (key, got[key], said)
