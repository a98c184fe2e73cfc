"""``tests/peers.py``: every test finds the real frameworks there, and ``STADYN_NO_PEERS=1``
hides them all, so a machine that has them can run what CI (which has none) runs."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))
PEER_PATHS = ("CNTK_PYTHON", "CNTK_LIBS", "NNABLA_PYTHON")


def _peer_paths(**env) -> dict:
    """``tests/peers.py``'s paths in a fresh interpreter with ``env`` added (or removed: None)."""
    full = {k: v for k, v in os.environ.items() if k not in env}
    full.update({k: v for k, v in env.items() if v is not None})
    full["PYTHONPATH"] = TESTS
    out = subprocess.run([sys.executable, "-c", "import json, peers; print(json.dumps("
                          f"{{n: getattr(peers, n) for n in {PEER_PATHS!r}}}))"],
                         env=full, capture_output=True, text=True, check=True, cwd=TESTS)
    return json.loads(out.stdout)


def test_no_peers_hides_every_peer_even_one_an_environment_variable_names():
    shown = _peer_paths(STADYN_NO_PEERS="0", STADYN_CNTK_PYTHON=sys.executable,
                        STADYN_NNABLA_PYTHON=None, STADYN_CNTK_LIBS=None, CNTK_PYTHON=None)
    assert shown == {"CNTK_PYTHON": sys.executable, "CNTK_LIBS": "/work/peers/cntk27/shimlib",
                     "NNABLA_PYTHON": "/work/peers/nnabla/bin/python"}
    hidden = _peer_paths(STADYN_NO_PEERS="1", STADYN_CNTK_PYTHON=sys.executable)
    assert hidden["CNTK_PYTHON"] == "/nonexistent/STADYN_NO_PEERS" + sys.executable
    for name in PEER_PATHS:
        assert hidden[name].startswith("/nonexistent/STADYN_NO_PEERS/")
        assert not os.path.exists(hidden[name])


def _strings_naming_the_peers(path: str) -> list[int]:
    """Lines of the string constants in ``path`` (docstrings aside) that name ``/work/peers``."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if "/work/peers" not in text:
        return []
    tree = ast.parse(text, path)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                       ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)}
    return sorted(node.lineno for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and "/work/peers" in node.value and id(node) not in docstrings)


def test_only_peers_py_names_where_the_peers_are():
    """A test that wrote a peer's path itself would run that peer under ``STADYN_NO_PEERS``
    (the reference-making scripts under ``fixtures/`` are run by hand, by the peers; this
    module names the defaults to check them)."""
    found = {}
    for folder, dirs, files in os.walk(TESTS):
        dirs[:] = [d for d in dirs if d not in ("fixtures", "__pycache__")]
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith(".py") and name not in ("peers.py", "test_peers.py"):
                lines = _strings_naming_the_peers(path)
                if lines:
                    found[os.path.relpath(path, TESTS)] = lines
    assert found == {}
