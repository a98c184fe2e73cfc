"""A loaded CNTK v2 file's parameters listed in CNTK 2.7's order (rmD37): its walk of the
file's graph from the root function, each function's operands as stored (``Parameters()``
filters ``Inputs(false)``: CNTKLibrary.h:3367, 3612-3616).  Checked against what CNTK 2.7's
``load_model(...).parameters`` lists of every file a fixture's ``parameters.json`` records
(written by CNTK 2.7 with the fixture's own script).
"""

from __future__ import annotations

import glob
import json
import os

import pytest

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")


def _listed():
    found = []
    for listing in sorted(glob.glob(os.path.join(FIXTURES, "*", "parameters.json"))):
        folder = os.path.dirname(listing)
        with open(listing) as f:
            for name, shown in sorted(json.load(f).items()):
                path = os.path.join(folder, name)
                if name.endswith(".model") and isinstance(shown, list) and os.path.exists(path):
                    found.append((f"{os.path.basename(folder)}/{name}", path, shown))
    return found


LISTED = _listed()


def test_the_listings_cover_the_files_of_several_cells():
    names = [key for key, _, _ in LISTED]
    assert len(names) >= 80
    assert "cntk_recurrence_write/cntk_user_two_stab.model" in names


@pytest.mark.parametrize("key, path, shown", LISTED, ids=[key for key, _, _ in LISTED])
def test_a_loaded_files_parameters_are_listed_as_cntk_lists_them(key, path, shown):
    # on cdddde34 five of them differed (the same parameters): cntk_user_gru_stab_dense.model
    # [alpha, W, b, b, W, H, H1] (CNTK 2.7: [W, b, b, W, H, alpha, H1]), cntk_user_two_stab
    # and stadyn_user_two_stab [b, W, H, alpha, W, H, alpha, b, H1] (CNTK 2.7: [b, W, H, alpha,
    # H1, W, H, alpha, b]), cntk_step_dense37's two_dense files [W, b, W, b, W, H, H1, b]
    # (CNTK 2.7: [W, b, W, b, b, W, H, H1])
    assert [[p.name, list(p.shape)] for p in C.load_model(path).parameters] == shown
