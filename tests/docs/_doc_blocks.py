"""The ```python blocks of the README and docs/*.md, and a runner for them.

A block runs as a reader would run it: in a fresh namespace, with a fresh parameter registry and
the default context, in an empty working folder, as ``__main__``.  HTML comments on the lines
right above a block's fence change that, and say why in the Markdown source::

    <!-- doc-test: skip (needs a CUDA GPU) -->          not run; the reason is required
    <!-- doc-test: continue -->                         runs on in the previous block's namespace
    <!-- doc-test: setup cifar10 -->                    first makes the files the block reads
    <!-- doc-test: replace "epochs=80" with "epochs=2" (CI runs it at a tiny size) -->
    <!-- doc-test: file digits.cntk -->                on any block: its text is written to that
                                                        file before the blocks after it run

Setups (each writes into the working folder):

* ``cifar10``: ``CIFAR-10/`` as ``stadyn data cifar10`` writes it (train/, test/, train_map.txt,
  test_map.txt, CIFAR-10_mean.xml) from a small generated CIFAR-shaped archive (16 images per
  batch file: 80 training, 16 test images of ten learnable colours).
* ``brainscript``: CNTK's example configs ``ConvNet_CIFAR10_DataAug.cntk``, ``ConvNet_MNIST.cntk``
  and ``01_OneHidden.cntk`` (tests/fixtures/brainscript/).
* ``legacy``: ``ConvNet_CIFAR10_DataAug_0.dnn``, the seed's CIFAR ConvNet as CNTK 2.7 saved it
  (tests/fixtures/legacy/cntk_convnet_cifar10.dnn), and ``deep_cnn.nnp``, NNabla's tutorial
  deep CNN as NNabla 1.39 saved it (tests/fixtures/legacy/nnabla_deep_cnn.nnp).

Run as a script (``python _doc_blocks.py BLOCKS.json``) it runs the blocks listed in the JSON
file and stops at the first that fails, naming its file and line.  ``python _doc_blocks.py
--serve`` imports Stadyn (which the runner imports before a page's first block) once and then
runs each page (``_doc_blocks.py BLOCKS.json``) in a process forked from it
(``tests/fork_server.py``): a page costs no interpreter start and no import of Stadyn.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")

_MARKER = re.compile(r"^<!--\s*doc-test:\s*(.*?)\s*-->\s*$")
_REPLACE = re.compile(r'^replace "(?P<old>[^"]+)" with "(?P<new>[^"]*)" \((?P<why>[^)]+)\)$')
_SKIP = re.compile(r"^skip \((?P<why>[^)]+)\)$")
_SETUP = re.compile(r"^setup (?P<name>[\w-]+)$")
_FILE = re.compile(r"^file (?P<name>[\w.-]+)$")


class MarkerError(ValueError):
    """A doc-test comment that does not parse, or does not fit its block."""


@dataclasses.dataclass
class Block:
    path: str                       # relative to the repository root
    line: int                       # the line of the opening fence (1-based)
    lang: str
    code: str
    skip: str | None = None         # the reason
    cont: bool = False
    setups: list = dataclasses.field(default_factory=list)
    replace: list = dataclasses.field(default_factory=list)     # [(old, new, why)]
    file: str | None = None         # write the block's text to this file

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def source(self) -> str:
        """The code to run: replacements applied, padded so line numbers match the file."""
        code = self.code
        for old, new, _ in self.replace:
            code = code.replace(old, new)
        return "\n" * self.line + code


def read_blocks(path: str) -> list[Block]:
    """Every fenced block of a Markdown file, with its markers; a marker that does not parse or
    sits above something other than a fence is a MarkerError."""
    lines = open(os.path.join(ROOT, path), encoding="utf-8").read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if not fence:
            if _MARKER.match(lines[i]) and not (i + 1 < len(lines) and (
                    _MARKER.match(lines[i + 1]) or lines[i + 1].startswith("```"))):
                raise MarkerError(f"{path}:{i + 1}: a doc-test marker must sit right above a "
                                  "code fence")
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        block = Block(path, i + 1, fence.group(1), "\n".join(lines[i + 1:end]) + "\n")
        j = i - 1
        while j >= 0 and _MARKER.match(lines[j]):
            _apply_marker(block, _MARKER.match(lines[j]).group(1), j + 1)
            j -= 1
        blocks.append(block)
        i = end + 1
    return blocks


def _apply_marker(block: Block, text: str, line: int) -> None:
    where = f"{block.path}:{line}"
    if text == "continue":
        block.cont = True
    elif m := _SKIP.match(text):
        block.skip = m.group("why")
    elif m := _FILE.match(text):
        block.file = m.group("name")
    elif m := _SETUP.match(text):
        if m.group("name") not in SETUPS:
            raise MarkerError(f"{where}: no setup {m.group('name')!r}; known: {sorted(SETUPS)}")
        block.setups.insert(0, m.group("name"))
    elif m := _REPLACE.match(text):
        if m.group("old") not in block.code:
            raise MarkerError(f"{where}: {m.group('old')!r} is not in the block below it")
        block.replace.insert(0, (m.group("old"), m.group("new"), m.group("why")))
    else:
        raise MarkerError(f"{where}: unknown doc-test marker {text!r} (skip (reason), continue, "
                          "setup NAME, replace \"old\" with \"new\" (reason), file NAME)")


# --------------------------------------------------------------------------- setups
def _setup_cifar10() -> None:
    sys.path.insert(0, os.path.join(ROOT, "tests", "compat"))
    from test_cntk_cifar_script import _synthetic_cifar_archive

    from stadyn.io import convert_cifar10
    _synthetic_cifar_archive("cifar-10-python.tar.gz", per_batch=16)
    convert_cifar10("cifar-10-python.tar.gz", "CIFAR-10", ctf=False, progress=False)


def _setup_brainscript() -> None:
    for name in ("ConvNet_CIFAR10_DataAug.cntk", "ConvNet_MNIST.cntk", "01_OneHidden.cntk"):
        shutil.copy(os.path.join(FIXTURES, "brainscript", name), name)


def _setup_legacy() -> None:
    """The seed's CIFAR ConvNet as CNTK 2.7 saved it, under the seed script's file name, and
    NNabla's tutorial deep CNN as NNabla 1.39 saved it."""
    shutil.copy(os.path.join(FIXTURES, "legacy", "cntk_convnet_cifar10.dnn"),
                "ConvNet_CIFAR10_DataAug_0.dnn")
    shutil.copy(os.path.join(FIXTURES, "legacy", "nnabla_deep_cnn.nnp"), "deep_cnn.nnp")


SETUPS = {"cifar10": _setup_cifar10, "brainscript": _setup_brainscript, "legacy": _setup_legacy}


# --------------------------------------------------------------------------- runner
def _fresh_state() -> None:
    import stadyn as sd
    sd.clear_parameters()
    sd.set_default_context(sd.Context())
    sd.set_auto_forward(False)
    sd.set_training(True)


def run(blocks: list[Block]) -> int:
    namespace = None
    done = set()
    for block in blocks:
        if block.file is not None:
            with open(block.file, "w", encoding="utf-8") as f:
                f.write(block.code)
            continue
        if block.skip is not None:
            continue
        for name in block.setups:
            if name not in done:
                SETUPS[name]()
                done.add(name)
        if namespace is None or not block.cont:
            _fresh_state()
            namespace = {"__name__": "__main__", "__file__": os.path.abspath("block.py")}
        print(f"--- running {block.where}", flush=True)
        try:
            exec(compile(block.source(), block.path, "exec"), namespace)
        except BaseException:
            print(f"--- {block.where}: the block failed", flush=True)
            traceback.print_exc()
            return 1
    return 0


def _run_file(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        items = json.load(f)
    return run([Block(**item) for item in items])


def _serve() -> None:
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, tests)
    from fork_server import serve
    sys.path.remove(tests)                  # (the pages' blocks see the script's path alone)

    import stadyn  # noqa: F401 - imported once, before the forks (as _fresh_state would)
    serve(lambda argv: _run_file(argv[1]))


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        _serve()
    else:
        sys.exit(_run_file(sys.argv[1]))
