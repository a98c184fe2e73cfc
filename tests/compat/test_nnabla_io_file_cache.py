"""NNabla's ``DataSourceWithFileCache`` whose constructor raises (a source whose samples differ
in length: NumPy's ``ValueError`` stacking them, case
``nnabla_user_28b.user28b_file_cache_of_own_source``) leaves nothing behind on Stadyn, and the
NNabla reference generator joins what NNabla's leaves (``refgen/gen_nnabla.py``)."""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import threading

import numpy as np
import pytest

from stadyn.compat.nnabla.utils.data_source import DataSourceWithFileCache
from stadyn.compat.nnabla.utils.data_source_implements import SimpleDataSource

HERE = os.path.dirname(os.path.abspath(__file__))


def _ragged():
    feats = np.arange(15, dtype=np.float64).reshape(5, 3)
    return SimpleDataSource(lambda i: (feats[i, :2 + i % 2],), 4)


@pytest.mark.parametrize("given_folder", [False, True])
def test_a_raising_constructor_leaves_no_thread_file_or_folder(tmp_path, monkeypatch,
                                                               given_folder):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))     # where a temporary cache goes
    folder = tmp_path / "cache"
    folder.mkdir()
    before = set(threading.enumerate())
    with pytest.raises(ValueError):
        DataSourceWithFileCache(_ragged(), cache_dir=str(folder) if given_folder else None,
                                shuffle=False)
    assert [t.name for t in threading.enumerate() if t not in before] == []
    assert sorted(os.listdir(scratch)) == [] and sorted(os.listdir(folder)) == []


def _generator():
    """``refgen/gen_nnabla.py`` loaded under a name of its own (it needs no NNabla until a
    case runs)."""
    refgen = os.path.join(HERE, "refgen")
    sys.path.insert(0, refgen)
    try:
        spec = importlib.util.spec_from_file_location("gen_nnabla_under_test",
                                                      os.path.join(refgen, "gen_nnabla.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(refgen)
    return module


def test_the_nnabla_generator_ends_the_threads_a_case_left(capsys):
    # what NNabla 1.39's DataSourceWithFileCache does when its constructor raises
    # (data_source.py:233): a ThreadPool closed but not joined, and a multiprocessing Queue
    # whose feeder thread lives while the exception's frames hold the queue (a cycle: till
    # a garbage collection, which a later case's import may run it in the middle of)
    import multiprocessing
    from contextlib import closing
    from multiprocessing.pool import ThreadPool

    gen = _generator()
    before = set(threading.enumerate())
    kept = []

    def case():
        q = multiprocessing.Queue()
        with closing(ThreadPool(processes=4)) as pool:
            pool.map(q.put, range(8))
        try:
            raise ValueError("ragged")
        except ValueError as exc:
            kept.append(exc)
            exc.self = kept                 # (the cycle)

    with gen.threads_joined(timeout=30.0):
        case()
        kept.clear()
    assert [t.name for t in threading.enumerate() if t not in before] == []
    assert "left threads" not in capsys.readouterr().err
