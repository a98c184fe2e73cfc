"""Which malformed CTF inputs a randomized source counts against ``maxErrors`` with worker
processes, and in which order: those of the chunks CNTK 2.7 loads, in its load order (the
window's shuffled order, ``BlockRandomizer::LoadDataChunks``), though each worker parses the
chunks it owns.  Held to the CNTK 2.7 reference of case ``io44__ctf_max_errors_randomized``
(the file and readings of that case)."""

import json
import os
import sys
import warnings

import numpy as np
import pytest

from stadyn.io import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs
from stadyn._errors import DataError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "compat"))
from compat_cases.cntk_io_44 import MAX_ERRORS_RUNS, lines_named, max_errors_file  # noqa: E402

REFS = os.path.join(os.path.dirname(__file__), os.pardir, "compat", "refs", "cntk")


def _cntk(key: str):
    with np.load(os.path.join(REFS, "io44__ctf_max_errors_randomized.npz"),
                 allow_pickle=True) as refs:
        return json.loads(str(refs["json." + key]))


def _read(path, max_errors, workers, **kw):
    d = CTFDeserializer(str(path), StreamDefs(x=StreamDef(field="x", shape=1),
                                              y=StreamDef(field="y", shape=1)),
                        max_errors=max_errors)
    d["chunkSizeInBytes"] = 200
    samples, written = [], []
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        # ('fork': no worker imports Stadyn again, and no OpenCV pool ran in these reads)
        with MinibatchSource(d, max_sweeps=1, randomize=True, num_workers=workers,
                             start_method="fork", **kw) as src:
            for _ in range(12):
                try:
                    mb = src.next_minibatch(8)
                except DataError as err:
                    assert isinstance(err, RuntimeError)
                    samples.append("RuntimeError")
                    written.append(str(err))
                    break
                if not mb:
                    break
                samples.append(mb["x"].num_samples)
    return {"samples": samples, "lines": lines_named(path.read_text(),
                                                      [str(w.message) for w in warned]
                                                      + written)}


@pytest.mark.parametrize("run", [r[0] for r in MAX_ERRORS_RUNS])
def test_workers_count_malformed_inputs_in_cntk_load_order(tmp_path, run):
    # before: each job's inputs counted as its worker's answer was taken (worker 0's
    # chunks, then worker 1's), so seed 0 with maxErrors 1 named line 8 then raised at line
    # 30 where CNTK 2.7 warns about line 30 and raises at line 8
    path = tmp_path / "w.ctf"
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        max_errors_file()
    finally:
        os.chdir(cwd)
    _, max_errors, kw = next(r for r in MAX_ERRORS_RUNS if r[0] == run)
    assert _read(path, max_errors, 2, **kw) == _cntk(run)
