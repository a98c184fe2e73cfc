"""Summary line of the ONNX node-case tests (``test_onnx_node_cases.py``).

Each per-op test stores its counts in pytest's cache; this hook adds them up at the end of a run
that collected ``tests/serialize`` in the main process (a plain run, or ``pytest tests/serialize
-n 2``).
"""

from __future__ import annotations


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
