"""Summary line of the ONNX node-case tests (``test_onnx_node_cases.py``), and the fixture
``real_v1_file``: the real ``cntk.exe`` model files, which this project does not commit.

Each per-op test stores its counts in pytest's cache; the hook adds them up at the end of a run
that collected ``tests/serialize`` in the main process (a plain run, or ``pytest tests/serialize
-n 2``).
"""

from __future__ import annotations

import os
import subprocess

import pytest


def pytest_terminal_summary(terminalreporter, config):
    cache = getattr(config, "cache", None)
    stats = terminalreporter.stats
    ran = [r for r in stats.get("passed", []) + stats.get("failed", [])
           if "test_onnx_node_cases[" in getattr(r, "nodeid", "")]
    if cache is None or not ran:
        return
    totals = {"cases": 0, "pass": 0, "bound": 0, "unsupported": 0, "known_failures": 0}
    ops = 0
    for report in ran:
        op = report.nodeid.rsplit("[", 1)[-1].rstrip("]")
        summary = cache.get(f"stadyn/onnx-node-cases/{op}", None)
        if summary:
            ops += 1
            for key in totals:
                totals[key] += summary.get(key, 0)
    if ops:
        terminalreporter.write_sep("-", "ONNX node test cases (onnx.backend.test.case.node)")
        terminalreporter.write_line(
            f"{totals['pass']} of {totals['cases']} cases pass for {ops} mapped ONNX op types "
            f"({totals['bound']} with build-time inputs bound as constants); "
            f"{totals['unsupported']} refused by a mapping with a reason, "
            f"{totals['known_failures']} known failures")


REAL_DIR = os.environ.get("STADYN_CNTK_V1_DIR")
CNTK_SOURCE = os.environ.get("STADYN_CNTK_SOURCE", "/work/.mirror/yaochengji+CNTK/repo")
#: where make_cntk_v1_real.py's file names (``<folder>__<file>``) are in CNTK's repository
REAL_FOLDERS = {"ComputationNetwork": "Tests/UnitTests/BrainScriptTests/Data/ComputationNetwork",
                "Models": "Tests/UnitTests/NetworkTests/Models"}


@pytest.fixture(scope="module")
def real_v1_file(tmp_path_factory):
    """The path of one of the cntk.exe files make_cntk_v1_real.py names: in
    ``$STADYN_CNTK_V1_DIR``, else copied out of the copy of CNTK at ``$STADYN_CNTK_SOURCE`` (a
    checkout, or a bare git repository whose HEAD is read); skips without either."""
    copies = tmp_path_factory.mktemp("cntk_v1_real")

    def find(name: str) -> str:
        if REAL_DIR:
            return os.path.join(REAL_DIR, name)
        folder, _, file = name.partition("__")
        in_cntk = f"{REAL_FOLDERS[folder]}/{file}"
        if os.path.isfile(os.path.join(CNTK_SOURCE, in_cntk)):
            return os.path.join(CNTK_SOURCE, in_cntk)
        if not os.path.isdir(CNTK_SOURCE):
            pytest.skip(f"the cntk.exe v1 files: set STADYN_CNTK_V1_DIR to a folder holding them "
                        f"(make_cntk_v1_real.py), or STADYN_CNTK_SOURCE to a copy of CNTK (none "
                        f"at {CNTK_SOURCE})")
        got = subprocess.run(["git", "--git-dir", CNTK_SOURCE, "show", f"HEAD:{in_cntk}"],
                             capture_output=True)
        if got.returncode:
            pytest.skip(f"{in_cntk} is not in the copy of CNTK at {CNTK_SOURCE}")
        path = copies / name
        path.write_bytes(got.stdout)
        return str(path)
    return find
