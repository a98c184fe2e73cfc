"""How much of the public nnabla-examples repository's ``F.*`` / ``PF.*`` calls Stadyn covers.

Counts, over every Python file of github.com/sony/nnabla-examples that imports
``nnabla.functions`` or ``nnabla.parametric_functions`` under an alias (``import
nnabla.functions as F``, ``from nnabla import parametric_functions as PF``), the call sites
``alias.name(...)`` per function name (parsed with :mod:`ast`; a file Python 3 cannot parse is
counted with a regular expression instead).  The count is stored beside this script
(``nnabla_examples_callsites.json``), so the coverage figure is reproducible without the
repository; ``--count MIRROR`` recounts it from a git checkout or bare mirror (read with
``git ls-tree`` / ``git show``, nothing is copied).

Then it reports which counted names ``stadyn.compat.nnabla.functions`` /
``.parametric_functions`` have, as the share of call sites covered, and lists the missing
names by call-site count::

    PYTHONPATH=src python benchmarks/nnabla_examples_callsites.py            # stored count
    PYTHONPATH=src python benchmarks/nnabla_examples_callsites.py --count /path/to/repo.git

``--min PERCENT`` makes the script exit 1 when the ``F`` coverage is below that share.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COUNT_FILE = HERE / "nnabla_examples_callsites.json"
MODULES = {"nnabla.functions": "F", "nnabla.parametric_functions": "PF"}


def _aliases(tree: ast.AST) -> dict[str, str]:
    """``{alias: "F" | "PF"}`` for the imports of the two modules in one parsed file."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in MODULES and a.asname:
                    out[a.asname] = MODULES[a.name]
        elif isinstance(node, ast.ImportFrom) and node.module == "nnabla":
            for a in node.names:
                full = "nnabla." + a.name
                if full in MODULES:
                    out[a.asname or a.name] = MODULES[full]
    return out


_IMPORT_RE = re.compile(r"import\s+nnabla\.(parametric_functions|functions)\s+as\s+(\w+)"
                        r"|from\s+nnabla\s+import\s+(parametric_functions|functions)"
                        r"(?:\s+as\s+(\w+))?")


def count_source(text: str) -> collections.Counter:
    """Call sites per ``"F.name"`` / ``"PF.name"`` in one file's source."""
    counts: collections.Counter = collections.Counter()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        tree = None
    if tree is not None:
        aliases = _aliases(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in aliases):
                counts[f"{aliases[node.func.value.id]}.{node.func.attr}"] += 1
        return counts
    aliases = {}
    for m in _IMPORT_RE.finditer(text):
        mod = m.group(1) or m.group(3)
        alias = m.group(2) or m.group(4) or mod
        aliases[alias] = "PF" if mod == "parametric_functions" else "F"
    for alias, kind in aliases.items():
        for m in re.finditer(rf"(?<![\w.]){re.escape(alias)}\.(\w+)\s*\(", text):
            counts[f"{kind}.{m.group(1)}"] += 1
    return counts


def count_repository(git_dir: str) -> dict:
    """Count every ``*.py`` file at ``HEAD`` of the git repository ``git_dir``."""
    def git(*args):
        return subprocess.run(["git", "--git-dir", git_dir, *args], check=True,
                              capture_output=True).stdout
    if (Path(git_dir) / ".git").exists():
        git_dir = str(Path(git_dir) / ".git")
    commit = git("rev-parse", "HEAD").decode().strip()
    files = [f for f in git("ls-tree", "-r", "--name-only", "HEAD").decode().splitlines()
             if f.endswith(".py")]
    total: collections.Counter = collections.Counter()
    for f in files:
        total += count_source(git("show", f"HEAD:{f}").decode("utf-8", "replace"))
    return {"repository": "https://github.com/sony/nnabla-examples", "commit": commit,
            "python_files": len(files),
            "counting": "ast Call nodes alias.name(...) where alias is bound to "
                        "nnabla.functions (F) or nnabla.parametric_functions (PF)",
            "calls": dict(sorted(total.items(), key=lambda kv: (-kv[1], kv[0])))}


def coverage(calls: dict[str, int]) -> dict[str, dict]:
    """Per kind (``F``, ``PF``): call sites, covered call sites, names, missing names."""
    import stadyn.compat.nnabla.functions as F
    import stadyn.compat.nnabla.parametric_functions as PF
    modules = {"F": F, "PF": PF}
    out = {}
    for kind, module in modules.items():
        mine = {k.split(".", 1)[1]: n for k, n in calls.items() if k.split(".", 1)[0] == kind}
        have = {name for name in mine if name in module.__all__}
        missing = sorted(set(mine) - have, key=lambda name: (-mine[name], name))
        total = sum(mine.values())
        covered = sum(mine[name] for name in have)
        out[kind] = {"calls": total, "covered": covered, "names": len(mine),
                     "names_present": len(have), "missing": [(m, mine[m]) for m in missing]}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", metavar="GIT_DIR",
                        help="recount from this nnabla-examples checkout or mirror and store it")
    parser.add_argument("--min", type=float, default=None,
                        help="exit 1 when F's call-site coverage is below this percentage")
    args = parser.parse_args(argv)
    if args.count:
        data = count_repository(args.count)
        COUNT_FILE.write_text(json.dumps(data, indent=1) + "\n")
    data = json.loads(COUNT_FILE.read_text())
    print(f"nnabla-examples @ {data['commit'][:12]}: {data['python_files']} Python files")
    result = coverage(data["calls"])
    for kind, r in result.items():
        share = 100.0 * r["covered"] / max(r["calls"], 1)
        print(f"{kind}: {r['covered']}/{r['calls']} call sites covered ({share:.1f}%), "
              f"{r['names_present']}/{r['names']} names")
        if r["missing"]:
            print("  missing: " + ", ".join(f"{n} {c}" for n, c in r["missing"]))
    f_share = 100.0 * result["F"]["covered"] / max(result["F"]["calls"], 1)
    return 1 if args.min is not None and f_share < args.min else 0


if __name__ == "__main__":
    sys.exit(main())
