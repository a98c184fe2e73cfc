"""How much of the real CNTK 2.7 / NNabla 1.39 public API ``stadyn.compat`` has.

    PYTHONPATH=src python benchmarks/compat_coverage.py [cntk|nnabla] [--missing]

The real frameworks' names come from ``tests/compat/refs/names_<framework>.json`` (written by
``tests/compat/refgen/list_names.py`` under the real framework; see tests/compat/README.md).
For each module it prints how many of them ``stadyn.compat`` has (the name resolves under
``stadyn.compat.<module>``) and how many of those a harness case covers against the real
framework (``tests/compat/compat_cases``), then the totals.  ``--missing`` lists the absent
names per module.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
COMPAT_TESTS = os.path.join(HERE, "..", "tests", "compat")
sys.path.insert(0, COMPAT_TESTS)
sys.path.insert(0, os.path.dirname(COMPAT_TESTS))   # tests/: state_guard

import compat_support as S  # noqa: E402


def coverage(framework: str) -> list[tuple[str, int, list[str], list[str]]]:
    """Per module: ``(module, number of real names, names Stadyn has, names a case covers)``."""
    with open(os.path.join(COMPAT_TESTS, "refs", f"names_{framework}.json")) as f:
        real = json.load(f)["modules"]
    declared = {n for c in S.cases(framework).values() for n in c.names}
    # S.same(a, d) for some declared d: a is declared, or resolves to the object a declared
    # name resolves to (one compared by identity).  Each name is resolved once (the objects
    # stay referenced here, so no id is reused).
    objects = [S.resolve(framework, d) for d in declared]
    declared_ids = {id(o) for o in objects if o is not S._MISSING and S._by_identity(o)}
    rows = []
    for module, names in real.items():
        found = {n: S.resolve(framework, f"{module}.{n}") for n in names}
        have = [n for n in names if found[n] is not S._MISSING]
        tested = [n for n in have if f"{module}.{n}" in declared
                  or (S._by_identity(found[n]) and id(found[n]) in declared_ids)]
        rows.append((module, len(names), have, tested))
    return rows


def report(framework: str, missing: bool) -> None:
    rows = coverage(framework)
    width = max(len(r[0]) for r in rows)
    print(f"{framework}: public names of the real framework that stadyn.compat has")
    print(f"  {'module':<{width}}  {'names':>5}  {'has':>5}  {'tested':>6}")
    for module, total, have, tested in rows:
        print(f"  {module:<{width}}  {total:5d}  {len(have):5d}  {len(tested):6d}")
        if missing:
            with open(os.path.join(COMPAT_TESTS, "refs", f"names_{framework}.json")) as f:
                names = json.load(f)["modules"][module]
            absent = [n for n in names if n not in have]
            if absent:
                print(f"    missing: {', '.join(absent)}")
    total = sum(r[1] for r in rows)
    have = sum(len(r[2]) for r in rows)
    tested = sum(len(r[3]) for r in rows)
    print(f"  {'total':<{width}}  {total:5d}  {have:5d}  {tested:6d}   "
          f"({100.0 * have / total:.1f}% present, {100.0 * tested / total:.1f}% tested)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("framework", nargs="?", choices=["cntk", "nnabla"],
                        help="one framework (default: both)")
    parser.add_argument("--missing", action="store_true", help="list the absent names")
    args = parser.parse_args(argv)
    for framework in [args.framework] if args.framework else ["cntk", "nnabla"]:
        report(framework, args.missing)
    return 0


if __name__ == "__main__":
    sys.exit(main())
