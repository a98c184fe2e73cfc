"""The hostile-input corpus: small files, one per attack, that every loader must refuse with a
``StadynError`` naming the file, within a time and a memory bound, leaving no file behind.

Helpers (``tests/hostile/_hostile.py``, importable from every test module here):

- ``run_bounded(loader, *args, timeout=30, memory=1 GiB)`` runs ``loader(*args)`` in a child
  process with an address-space limit (``RLIMIT_AS``, set in the child) and a time limit (the
  parent kills it) and returns an :class:`Outcome` (``returned`` / ``raised`` / ``hung`` /
  ``died``);
- ``check_refused(loader, *args, names=[...], watch=folder)`` asserts a ``StadynError`` whose
  message names each of ``names`` and that nothing new appeared under ``watch``.

Fixtures: ``corpus`` (a copy of the committed files, so that a loader that writes beside its
input writes into ``tmp_path``), ``fifo`` (a named pipe nobody writes to), ``bounded`` and
``refused`` (the two helpers). FIFOs and symbolic-link cycles are made at test time; see
README.md for the committed files.
"""

from __future__ import annotations

import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))     # _hostile, also for the child processes

from _hostile import check_refused, run_bounded  # noqa: E402

CORPUS = os.path.join(os.path.dirname(__file__), "io")


@pytest.fixture
def corpus(tmp_path):
    """A copy of the committed io corpus (tests/hostile/io) in ``tmp_path / "corpus"``."""
    return shutil.copytree(CORPUS, tmp_path / "corpus")


@pytest.fixture
def fifo(tmp_path):
    """A FIFO (named pipe) with no writer: opening it for reading blocks forever."""
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


@pytest.fixture
def bounded():
    """:func:`_hostile.run_bounded`."""
    return run_bounded


@pytest.fixture
def refused():
    """:func:`_hostile.check_refused`."""
    return check_refused
