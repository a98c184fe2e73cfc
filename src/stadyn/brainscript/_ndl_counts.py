"""The counts an NDL network takes from its run, as cntk.exe keeps them per process: the
random seeds of its parameters (``NDLNodeEvaluatorImpl::Evaluate``'s ``static int
randomSeed``, from 1) and the ``unnamed<n>`` numbers of nodes made inside an argument (from 0),
kept on the root record of the run's config, so they go on through all its NDL networks."""

from __future__ import annotations

import contextlib
from typing import Iterator

from ._config import ConfigRecord

__all__ = ["seed_count", "name_count", "ndl_seeds_kept"]


def seed_count(record: ConfigRecord, key: str = "_ndl_seed_count", first: int = 1) -> list[int]:
    """The run's NDL seed count (or another count of the run: the ``unnamed<n>`` names'), kept
    on the root record of the config ``record`` is in."""
    root = record
    while root.parent is not None:
        root = root.parent
    return root.__dict__.setdefault(key, [first])


def name_count(record: ConfigRecord) -> list[int]:
    """The run's count of cntk.exe's ``unnamed<n>`` names (:func:`seed_count`'s way)."""
    return seed_count(record, "_ndl_name_count", 0)


@contextlib.contextmanager
def ndl_seeds_kept(record: ConfigRecord) -> Iterator[None]:
    """Around a network built where cntk.exe reads a model file instead (a test, eval or write
    command, a resumed checkpoint): the NDL networks it builds take no seeds of the run (nor
    ``unnamed<n>`` numbers: cntk.exe parses no NDL there)."""
    counts = (seed_count(record), name_count(record))
    kept = [c[0] for c in counts]
    try:
        yield
    finally:
        for c, k in zip(counts, kept):
            c[0] = k
