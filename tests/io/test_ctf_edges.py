"""CTF edge inputs (a sparse index given twice in a sample, comment-only and blank lines,
lines without an id inside a sequence, CRLF, no newline at the end, empty samples, an input
given twice on a line (also in files of one-line sequences), an id alone on a line, lone and
CR-only line ends, ids in a file without them, ids that are not numbers) against
what CNTK 2.7's CTFDeserializer gave for the same files, with maxErrors 0 and 5
(tests/fixtures/ctf_edges/make_refs.py wrote refs.json)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from stadyn import io
from stadyn._errors import DataError

_REFS = json.loads((Path(__file__).parents[1] / "fixtures" / "ctf_edges" /
                    "refs.json").read_text())
_W = np.array([[1], [11], [21], [31], [41]], dtype=np.float32)


def _read(text: str, max_errors: int) -> dict[str, list]:
    d = io.CTFDeserializer.from_bytes(text.encode(), io.StreamDefs(
        x=io.StreamDef(field="x", shape=5, is_sparse=True), y=io.StreamDef(field="y", shape=1)),
        "data.ctf", max_errors=max_errors)
    source = io.MinibatchSource(d, randomize=False, max_sweeps=1)
    out: dict[str, list] = {"x": [], "y": [], "xw": []}
    while mb := source.next_minibatch(1000):
        for name in ("x", "y"):
            b = mb[name]
            lengths = b.lengths if b.lengths is not None else np.ones(len(b.data), np.int64)
            data = b.data if b.lengths is not None else b.data[:, None]
            out[name] += [data[k, :n].tolist() for k, n in enumerate(lengths)]
    out["xw"] = [(np.asarray(seq, np.float32) @ _W)[:, 0].tolist() for seq in out["x"]]
    return out


@pytest.mark.parametrize("case", sorted(_REFS["cases"]))
def test_ctf_edges_as_cntk_27(case):
    text = _REFS["cases"][case]
    for max_errors, expected in _REFS["refs"][case].items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if "error" in expected:
                with pytest.raises(DataError, match="data.ctf") as stop:
                    _read(text, int(max_errors))
                if "sequence id" in expected["error"]:      # CNTK stops while indexing
                    assert "sequence id" in str(stop.value), (case, str(stop.value))
                continue
            got = _read(text, int(max_errors))
        for name in ("x", "y", "xw"):
            assert len(got[name]) == len(expected[name]), (case, max_errors, name, got[name])
            for g, e in zip(got[name], expected[name]):
                np.testing.assert_allclose(np.asarray(g, np.float32), np.asarray(e, np.float32),
                                           rtol=1e-6, err_msg=f"{case} {max_errors} {name}")


@pytest.mark.parametrize("case", sorted(_REFS["joins"]))
def test_ctf_files_joined_by_id_as_cntk_27(case):
    # a source over two CTF files pairs sequences by id; CNTK 2.7 reads ids as numbers, so
    # "00" and "0" are one key (Stadyn compared their text, and dropped both)
    first, second = _REFS["joins"][case]["files"]
    a = io.CTFDeserializer.from_bytes(first.encode(), io.StreamDefs(
        x=io.StreamDef(field="x", shape=1)), "a.ctf")
    b = io.CTFDeserializer.from_bytes(second.encode(), io.StreamDefs(
        y=io.StreamDef(field="y", shape=1)), "b.ctf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # the sequences the second file lacks
        source = io.MinibatchSource([a, b], randomize=False, max_sweeps=1)
    got: dict[str, list] = {"x": [], "y": []}
    while mb := source.next_minibatch(1000):
        for name in got:
            batch = mb[name]
            if batch.lengths is None:
                got[name] += [[float(v)] for v in batch.data.ravel()]
            else:
                got[name] += [batch.data[k, :n].ravel().tolist()
                              for k, n in enumerate(batch.lengths)]
    assert got == _REFS["joins"][case]["read"]
