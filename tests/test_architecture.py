"""The package's shape, read from its source with ``ast`` (imports inside functions included).

Three rules from docs/architecture.md ("Package layers"):

1. **No cycles**: no module imports (directly or through others) a module that imports it.
2. **Imports point down** the layer table (:data:`LAYERS`, copied from the table).
3. **No private names across packages**: a package imports another's public names only — no
   module or name starting with ``_`` (dunders such as ``__all__`` are public).  The leaf
   modules ``stadyn._errors``, ``_random``, ``_fileutil``, ``_logging``, ``_extras``,
   ``_version``, ``_tensorfile``, ``_memory`` and ``_proto_schemas`` (the protobuf messages of
   NNabla's and CNTK's files) are shared by all.

Violations that other parts of issue 17 remove are listed in :data:`ALLOWED`, each with the part
that removes it; the list only shrinks: an entry whose violation is gone fails the test too.
:data:`PERMANENT` holds the exceptions the architecture makes on purpose.  The same file runs
``ruff`` over the package, the tests, examples, tools and benchmarks when it is installed
(the ``test`` extra has it).
"""

from __future__ import annotations

import ast
import collections
import functools
import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SRC = os.path.join(ROOT, "src")
PACKAGE = os.path.join(SRC, "stadyn")

# The layer table of docs/architecture.md ("Package layers"), top to bottom: a package may
# import the packages below it.  Two rows the table leaves implicit: the root package
# (``import stadyn as sd``, the public face) sits below the command line and the benchmarks,
# which use it, and above everything it re-exports; the facade modules at the root belong to
# the package they present (``stadyn.parametric_functions`` is ``parametric``'s face,
# ``stadyn.functions`` is the ``functions (F)`` row).
LAYERS = [
    "cli", "bench", "stadyn", "compat.cntk", "compat.nnabla_ext", "compat.nnabla", "brainscript",
    "models", "distributed", "train", "inspect", "serialize", "layers", "compile", "learners",
    "schedules", "solvers", "amp", "parametric", "functions", "ops", "graph", "io", "leaf",
]
FACADES = {"stadyn.__main__": "cli", "stadyn.functions": "functions",
           "stadyn.sequence": "functions", "stadyn.cntk_semantics": "functions",
           "stadyn.parametric_functions": "parametric", "stadyn.initializer": "parametric",
           "stadyn.amp": "amp", "stadyn.compat": "compat.cntk"}
LEAF_MODULES = {"stadyn._errors", "stadyn._random", "stadyn._fileutil", "stadyn._logging",
                "stadyn._extras", "stadyn._version", "stadyn._tensorfile", "stadyn._memory",
                "stadyn._mt19937", "stadyn._cpp_normal", "stadyn._gf2",
                "stadyn._libstdcxx_random", "stadyn._proto_schemas"}

# Exceptions the architecture makes on purpose (docs/architecture.md says why).
PERMANENT = {
    ("up", "stadyn.ops._distributed", "stadyn.distributed._collectives"):
        "the collective op sync_batch_normalization calls the collectives, lazily inside its "
        "body: the one place the op catalog reaches up (architecture.md, Distributed)",
    ("private", "stadyn.ops._distributed", "stadyn.distributed._collectives"):
        "the same import: the collectives are distributed's internals, which the op drives",
    ("runner", "stadyn.graph._variable", "Variable.forward"):
        "Variable.forward reaches the runner through one import inside the method, as NNabla's "
        "Variable calls into its engine (architecture.md, One graph, two modes)",
    ("runner", "stadyn.graph._variable", "Variable.backward"):
        "Variable.backward reaches the runner the same way",
}

# Violations other parts of issue 17 remove; each must still exist (the list only shrinks).
ALLOWED: dict[tuple, str] = {
    # kind, importer, imported module (or, for a cycle, its modules): the part that removes it.
    # Empty: issue 17 removed every violation it listed.
}


@dataclass(frozen=True)
class Import:
    """One imported module (and the names taken from it) at one place in the package."""

    importer: str
    target: str
    names: tuple[str, ...]
    lazy: bool
    function: str          # the enclosing function's qualified name ("" at module level)
    line: int


def _modules() -> dict[str, str]:
    """Every module of the package: dotted name -> path."""
    found = {}
    for folder, dirs, files in os.walk(PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                parts = os.path.relpath(path, SRC)[:-3].split(os.sep)
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                found[".".join(parts)] = path
    return found


MODULES = _modules()


class _Collector(ast.NodeVisitor):
    """The imports of one module, with the function each lazy one sits in."""

    def __init__(self, module: str, is_package: bool):
        self.module, self.is_package = module, is_package
        self.scope: list[str] = []
        self.found: list[Import] = []

    def _nested(self, node) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _nested

    def _function(self) -> str:
        return ".".join(self.scope)

    def _add(self, target: str, names: tuple[str, ...], node) -> None:
        self.found.append(Import(self.module, target, names, bool(self.scope), self._function(),
                                 node.lineno))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == "stadyn" or alias.name.startswith("stadyn."):
                self._add(alias.name, (), node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.module.split(".")
            if not self.is_package:
                base = base[:-1]
            base = base[:len(base) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        elif node.module == "stadyn" or (node.module or "").startswith("stadyn."):
            source = node.module
        else:
            return
        names = []
        for alias in node.names:
            if f"{source}.{alias.name}" in MODULES:        # a submodule: an import of its own
                self._add(f"{source}.{alias.name}", (), node)
            else:
                names.append(alias.name)
        if names:
            self._add(source, tuple(names), node)


@functools.cache
def imports() -> list[Import]:
    """Every import in the package (read once, when a test first asks: not at collection,
    which every pytest-xdist worker does whether or not it runs these tests)."""
    found = []
    for module, path in MODULES.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        collector = _Collector(module, path.endswith("__init__.py"))
        collector.visit(tree)
        found += collector.found
    return found



def unit(module: str) -> str:
    """The row of :data:`LAYERS` a module belongs to."""
    if module in LEAF_MODULES:
        return "leaf"
    if module in FACADES:
        return FACADES[module]
    for facade, row in FACADES.items():      # a facade that is a package: its modules too
        if module.startswith(facade + "."):
            return row
    parts = module.split(".")
    if len(parts) == 1:
        return "stadyn"
    if parts[1] == "compat" and len(parts) > 2:
        return f"compat.{parts[2]}"
    return parts[1]


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_part(imp: Import) -> list[str]:
    """What ``imp`` takes that is private to the target's package."""
    target_unit = unit(imp.target)
    depth = len(target_unit.split(".")) + 1 if target_unit not in ("stadyn", "leaf") else 1
    modules = [p for p in imp.target.split(".")[depth:] if _is_private(p)]
    if imp.target in LEAF_MODULES:
        modules = []
    return modules + [n for n in imp.names if _is_private(n)]


def _cycles(edges: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(tuple(sorted(component)))
    return found


def _runner_exception(imp: Import) -> tuple | None:
    key = ("runner", imp.importer, imp.function)
    return key if key in PERMANENT and imp.lazy else None


@functools.cache
def violations() -> dict[tuple, str]:
    """Every violation of the three rules: key -> what it is (with where)."""
    found: dict[tuple, str] = {}
    taken: dict[tuple, dict[str, None]] = collections.defaultdict(dict)
    edges: dict[str, set[str]] = collections.defaultdict(set)
    for imp in imports():
        where = f"{imp.importer}:{imp.line}" + (f" (in {imp.function})" if imp.lazy else "")
        if _runner_exception(imp) is None and imp.target in MODULES:
            edges[imp.importer].add(imp.target)
        a, b = unit(imp.importer), unit(imp.target)
        if a == b:
            continue
        if b != "leaf" and LAYERS.index(b) <= LAYERS.index(a):
            found.setdefault(("up", imp.importer, imp.target),
                             f"{where} imports {imp.target} ({a} -> {b}: up the layer table)")
        private = _private_part(imp)
        if private:
            key = ("private", imp.importer, imp.target)
            found.setdefault(key, f"{where} takes private {imp.target}")
            taken[key].update(dict.fromkeys(private))
    for key, names in taken.items():
        found[key] += ": " + ", ".join(names)
    for component in _cycles(edges):
        found[("cycle",) + component] = "import cycle: " + " -> ".join(component)
    return found



def test_the_walk_sees_the_package_and_lazy_imports():
    assert {"stadyn.graph._variable", "stadyn.graph._runner",
            "stadyn.compile._step"} <= set(MODULES)
    lazy = [i for i in imports() if i.lazy and i.importer == "stadyn.graph._variable"]
    assert {(i.function, i.target) for i in lazy} == {
        ("Variable.forward", "stadyn.graph._runner"), ("Variable.backward", "stadyn.graph._runner")}
    assert unit("stadyn.compat.cntk._function") == "compat.cntk"
    assert unit("stadyn._errors") == "leaf" and unit("stadyn.parametric_functions") == "parametric"


def test_the_layer_table_is_the_documented_one():
    """Every package of the table is in docs/architecture.md's table, in the same order."""
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
        text = f.read()
    table = text.split("## Package layers")[1].split("```")[1]
    rows = [line.split()[0].replace("/", ".") for line in table.strip().splitlines()]
    documented = [r for r in rows if r in LAYERS]
    assert documented == [r for r in LAYERS if r in documented]
    assert set(LAYERS) - set(documented) == {"stadyn", "leaf"}
    assert {p for p in (unit(m) for m in MODULES)} <= set(LAYERS)


@pytest.mark.parametrize("kind", ["cycle", "up", "private"])
def test_no_violations_but_the_listed_ones(kind):
    new = {k: v for k, v in violations().items()
           if k[0] == kind and k not in ALLOWED and k not in PERMANENT}
    assert not new, "\n".join(sorted(new.values()))


def test_permanent_exceptions_are_exactly_where_the_architecture_puts_them():
    runner = {("runner", i.importer, i.function) for i in imports() if i.lazy
              and i.target == "stadyn.graph._runner" and i.importer == "stadyn.graph._variable"}
    assert runner == {k for k in PERMANENT if k[0] == "runner"}
    for key in PERMANENT:
        if key[0] != "runner":
            assert key in violations(), f"permanent exception no longer needed: {key}"
    distributed = [i for i in imports() if i.importer == "stadyn.ops._distributed"
                   and unit(i.target) == "distributed"]
    assert distributed and all(i.lazy for i in distributed)


def test_the_allow_list_only_shrinks():
    gone = sorted(k for k in ALLOWED if k not in violations())
    assert not gone, ("fixed: remove these from ALLOWED in tests/test_architecture.py:\n"
                      + "\n".join(map(str, gone)))
    for key, reason in ALLOWED.items():
        assert reason.startswith("issue 17: "), key


def test_the_graph_and_compile_packages_keep_their_line_budget():
    for folder in ("graph", "compile"):
        for name in os.listdir(os.path.join(PACKAGE, folder)):
            if name.endswith(".py"):
                with open(os.path.join(PACKAGE, folder, name), encoding="utf-8") as f:
                    n = sum(1 for _ in f)
                assert n <= 600, f"{folder}/{name}: {n} lines (split it by concern)"


#: Source files still over :data:`MAX_LINES`, each with the part of issue 17 that splits it; like
#: :data:`ALLOWED`, the list only shrinks.
LONG_FILES: dict[str, str] = {}   # files over the limit a part of issue 17 is splitting (none now)
MAX_LINES = 700


def _line_counts() -> dict[str, int]:
    counts = {}
    for path in MODULES.values():
        with open(path, encoding="utf-8") as f:
            counts[os.path.relpath(path, PACKAGE).replace(os.sep, "/")] = sum(1 for _ in f)
    return counts


def test_no_source_file_is_over_700_lines():
    """A file past ~600 lines usually holds two concerns (docs/architecture.md); over 700 is a
    file to split, not to grow."""
    counts = _line_counts()
    long = {name: n for name, n in counts.items() if n > MAX_LINES and name not in LONG_FILES}
    assert not long, f"split by concern: {long}"
    split = sorted(name for name in LONG_FILES if counts.get(name, 0) <= MAX_LINES)
    assert not split, f"split: remove these from LONG_FILES in tests/test_architecture.py: {split}"


def _ruff() -> list[str] | None:
    """How to run ruff: this Python's module, else one on PATH, else None."""
    if importlib.util.find_spec("ruff") is not None:
        return [sys.executable, "-m", "ruff"]
    found = shutil.which("ruff")
    return [found] if found else None


def test_ruff_is_clean():
    """``ruff check`` of the package, the tests, the examples, the tools and the benchmarks
    with the rules of pyproject.toml ([tool.ruff])."""
    command = _ruff()
    if command is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]' installs it)")
    result = subprocess.run(command + ["check", "--no-cache", "src", "tests", "examples",
                                       "tools", "benchmarks"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
