"""The order ``make test`` runs the test modules in: each module's tests together, the modules
longest first, by the seconds ``make durations`` stored in ``tests/durations.json`` (a module
the file does not know yet: first if ``LONG_TESTS`` names one of its tests, else by its number
of tests).  ``xdist_schedule.ModuleQueue`` hands the modules out in this order, one at a time,
so every module runs on one worker (its module fixtures built once) and the last modules to
start are the shortest (both workers end together).

Example::

    seconds = load_durations()                  # {"tests/x/test_y.py": 12.5, ...}
    order = module_order([item.nodeid for item in items], seconds, [False] * len(items))
"""

from __future__ import annotations

import json
import os


def module_of(nodeid: str) -> str:
    """The test module a node id belongs to (``tests/x/test_y.py::test_z[1]`` ->
    ``tests/x/test_y.py``)."""
    return nodeid.split("::", 1)[0]


#: Where ``make durations`` keeps each test module's seconds (setup, call and teardown of its
#: tests, from a ``STADYN_NO_PEERS=1`` run: what CI runs).
DURATIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "durations.json")


def load_durations(path: str = DURATIONS) -> dict[str, float]:
    """``{module node id: seconds}`` from ``path`` (empty when there is none)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


def store_durations(seconds: dict[str, float], path: str = DURATIONS) -> None:
    """Write ``seconds`` into ``path``, keeping the modules it does not name (a run of part of
    the suite updates that part)."""
    kept = load_durations(path)
    kept.update(seconds)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({m: round(s, 2) for m, s in sorted(kept.items())}, f, indent=0)
        f.write("\n")


def module_order(nodeids: list[str], seconds: dict[str, float], long: list[bool]) -> list[int]:
    """The order to run ``nodeids`` in (their indices): each module's tests together, its long
    ones (``long[i]``) first, and the modules longest first -- ``seconds[module]``, or for a
    module ``seconds`` does not know, first if it has a long test, else its number of tests
    times the mean seconds a test of the known modules takes.  Python's sort is stable: ties
    keep the collection's order.

    >>> module_order(["a.py::t", "b.py::t0", "b.py::t1", "c.py::t"], {"a.py": 1.0, "b.py": 5.0},
    ...              [False, False, True, False])
    [2, 1, 0, 3]
    """
    tests: dict[str, list[int]] = {}
    for index, nodeid in enumerate(nodeids):
        tests.setdefault(module_of(nodeid), []).append(index)
    known = [m for m in tests if m in seconds]
    per_test = (sum(seconds[m] for m in known) / max(1, sum(len(tests[m]) for m in known)))

    def estimate(module: str) -> float:
        if module in seconds:
            return seconds[module]
        if any(long[i] for i in tests[module]):
            return float("inf")
        return per_test * len(tests[module])

    order = []
    for module in sorted(tests, key=estimate, reverse=True):
        order.extend(sorted(tests[module], key=lambda i: not long[i]))
    return order
