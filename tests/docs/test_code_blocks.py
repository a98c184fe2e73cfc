"""Every ```python block of README.md and docs/*.md runs (at a tiny size), and the shell blocks
name commands, make targets and modules that exist.

How a block is run and how the Markdown marks a block that cannot run here (with the reason in
the source) is in ``_doc_blocks.py``.  Blocks of one page run in one process, each in a fresh
namespace unless marked ``continue``; the page's process is forked from one that imported
Stadyn (``_doc_blocks.py --serve``), as the runner imports it before a page's first block.
"""

from __future__ import annotations

import dataclasses
import glob
import importlib.machinery
import importlib.util
import json
import os
import re
import shlex
import shutil
import sys

import pytest

import stadyn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _doc_blocks import ROOT, MarkerError, read_blocks  # noqa: E402
from fork_server import ForkServer  # noqa: E402

PAGES = ["README.md"] + sorted(os.path.relpath(p, ROOT)
                               for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
PYTHON_PAGES = [p for p in PAGES if any(b.lang == "python" for b in read_blocks(p))]
RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_doc_blocks.py")


def test_the_pages_have_python_blocks():
    assert "README.md" in PYTHON_PAGES and len(PYTHON_PAGES) >= 8


@pytest.fixture(scope="module")
def page_server(tmp_path_factory):
    """``_doc_blocks.py --serve``: each page's process forked from one that imported Stadyn
    (before, each page started an interpreter and imported Stadyn: ~1-2 s of CPU a page)."""
    # the stadyn this test imported comes first (a relative PYTHONPATH would not survive cwd)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(stadyn.__file__))]
        + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    server = ForkServer([sys.executable, RUNNER, "--serve"],
                        tmp_path_factory.mktemp("page_server"), env)
    yield server
    server.close()


@pytest.mark.parametrize("page", PYTHON_PAGES)
def test_python_blocks_run(page, tmp_path, page_server):
    blocks = [b for b in read_blocks(page) if b.lang == "python" or b.file]
    spec = tmp_path / "blocks.json"
    spec.write_text(json.dumps([dataclasses.asdict(b) for b in blocks]))
    work = tmp_path / "work"
    work.mkdir()
    status, stdout, stderr = page_server.run([RUNNER, spec], work, tmp_path / "logs", 600)
    if status != 0 and shutil.which("dot") is None and "GraphvizMissing" in stderr:
        pytest.skip(f"{page} draws graphs, which needs Graphviz's 'dot' program (not installed "
                    "here; .ci/run installs it with apt-get where it can)")
    assert status == 0, (stdout + stderr)[-6000:]
    ran = stdout.count("--- running ")
    assert ran == sum(b.skip is None and b.file is None for b in blocks), stdout


def test_markers_parse_and_fit_their_blocks():
    for page in PAGES:
        for block in read_blocks(page):              # raises MarkerError on a bad marker
            if block.file is not None:
                assert not (block.skip or block.cont or block.setups or block.replace), \
                    f"{block.where}: a file block is written, not run"
            elif block.skip is not None or block.cont or block.setups or block.replace:
                assert block.lang == "python", \
                    f"{block.where}: doc-test marker on a non-python block"
            if block.skip is not None:
                assert len(block.skip.split()) >= 2, f"{block.where}: give the reason to skip"


def test_a_bad_marker_is_an_error(tmp_path, monkeypatch):
    import _doc_blocks
    monkeypatch.setattr(_doc_blocks, "ROOT", str(tmp_path))
    for text in ('<!-- doc-test: skip -->\n```python\npass\n```\n',
                 '<!-- doc-test: replace "absent" with "x" (why) -->\n```python\npass\n```\n',
                 '<!-- doc-test: setup nothing-like-it -->\n```python\npass\n```\n',
                 '<!-- doc-test: continue -->\n\ntext\n'):
        (tmp_path / "page.md").write_text(text)
        with pytest.raises(MarkerError):
            read_blocks("page.md")


def _shell_lines():
    for page in PAGES:
        for block in read_blocks(page):
            if block.lang not in ("sh", "bash", "console", "shell"):
                continue
            # a line ending in a backslash continues on the next, as in the shell
            code = re.sub(r"\\\n\s*", " ", block.code)
            for n, line in enumerate(code.splitlines(), block.line + 1):
                line = line.split(" #")[0].strip()
                line = re.sub(r"^([A-Z_]+=\S+\s+)+", "", line)        # VAR=value prefixes
                if line and not line.startswith("#"):
                    yield f"{page}:{n}", shlex.split(line)


def test_shell_blocks_name_real_commands_targets_and_modules():
    from stadyn.cli import build_parser
    makefile = open(os.path.join(ROOT, "Makefile"), encoding="utf-8").read()
    checked = 0
    for where, argv in _shell_lines():
        if argv[0] == "make":
            for target in argv[1:]:
                if "=" not in target:
                    assert re.search(rf"^{re.escape(target)}:", makefile, re.M), \
                        f"{where}: no make target {target!r}"
        elif argv[0] == "stadyn":
            try:
                build_parser().parse_args(argv[1:])
            except SystemExit as exc:
                pytest.fail(f"{where}: `{' '.join(argv)}` does not parse (exit {exc.code})")
        elif argv[:2] == ["python", "-m"]:
            # a top-level module is looked for on sys.path only: setuptools' meta-path finder,
            # asked for "pip", turns its own distutils off for the whole process, and a later
            # `import setuptools` (inductor's, compiling a step) then fails in this worker
            name = argv[2]
            spec = (importlib.util.find_spec(name) if "." in name
                    else importlib.machinery.PathFinder.find_spec(name))
            assert spec is not None, f"{where}: no module {name}"
        else:
            continue
        checked += 1
    assert checked >= 5
