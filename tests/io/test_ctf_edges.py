"""CTF edge inputs (a sparse index given twice in a sample, comment-only and blank lines,
lines without an id inside a sequence, CRLF, no newline at the end, empty samples, an input
given twice on a line, an id alone on a line, lone CRs, ids in a file without them) against
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


# Where Stadyn stops and CNTK 2.7 reads on (maxErrors 5): an input given twice on a line of a
# file whose sequences are all one line.  CNTK counts the error, then delivers that line as a
# sequence of two samples; Stadyn delivers such a file as one sample a line, so it stops with
# this reason (CNTK stops too with maxErrors 0)
_STADYN_STOPS = {
    "input_twice_on_a_line_without_ids": "'x' appears twice on one line; CNTK 2.7 counts",
    "dense_input_twice_on_a_line_without_ids": "'y' appears twice on one line; CNTK 2.7 counts",
    "input_twice_in_sequences_of_one_line": "'x' appears twice on one line; CNTK 2.7 counts",
    # CR-only line ends: CNTK reads the file as one line, with every input given many times
    "cr_only_line_ends": "'x' appears twice on one line \\(the line holds carriage returns",
    "cr_only_line_ends_without_ids":
        "'x' appears twice on one line \\(the line holds carriage returns",
}


@pytest.mark.parametrize("case", sorted(_REFS["cases"]))
def test_ctf_edges_as_cntk_27(case):
    text = _REFS["cases"][case]
    for max_errors, expected in _REFS["refs"][case].items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if case in _STADYN_STOPS:
                with pytest.raises(DataError, match=_STADYN_STOPS[case]):
                    _read(text, int(max_errors))
                continue
            if "error" in expected:
                with pytest.raises(DataError, match="data.ctf"):
                    _read(text, int(max_errors))
                continue
            got = _read(text, int(max_errors))
        for name in ("x", "y", "xw"):
            assert len(got[name]) == len(expected[name]), (case, max_errors, name, got[name])
            for g, e in zip(got[name], expected[name]):
                np.testing.assert_allclose(np.asarray(g, np.float32), np.asarray(e, np.float32),
                                           rtol=1e-6, err_msg=f"{case} {max_errors} {name}")
