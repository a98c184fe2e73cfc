"""Stadyn's ``stadyn.compat.cntk`` against numbers the real CNTK 2.7 produced.

Each case (``compat_cases/cntk_*.py``) runs here on the compat layer and is compared with the
reference file the same case wrote under the real CNTK (``refs/cntk/<case>.npz``, made by
``refgen/gen_cntk.py``).  See README.md.
"""

import os

import pytest

import compat_harness as H
import compat_support as S

FRAMEWORK = "cntk"


@pytest.mark.parametrize("case", S.params(FRAMEWORK))
def test_case(case):
    S.check(case)


@pytest.mark.parametrize("case,key", S.known_params(FRAMEWORK))
def test_known_difference(case, key):
    S.check_known(case, key)


def test_every_public_name_has_a_case():
    """Every public name of stadyn.compat.cntk (see compat_support) is listed by a case."""
    _, problems = S.surface(FRAMEWORK)
    missing = S.uncovered(FRAMEWORK)
    assert not problems, problems
    assert not missing, f"{len(missing)} public names without a case: {missing}"


def test_every_case_has_its_reference_and_no_reference_is_stale():
    cases = S.cases(FRAMEWORK)
    wanted = {c.name for c in cases.values() if c.expected is None}
    present = {f[:-4] for f in os.listdir(os.path.join(H.REFS, FRAMEWORK)) if f.endswith(".npz")}
    assert not wanted - present, f"cases without a reference (run gen_cntk.py --only NAME): " \
                                 f"{sorted(wanted - present)}"
    assert not present - wanted, f"references without a case: {sorted(present - wanted)}"


def test_references_match_a_fresh_run_of_the_real_framework(tmp_path):
    S.check_refs_current(FRAMEWORK, str(tmp_path))
