"""A BrainScript HTKFeatureDeserializer's ``maxSequenceSize``: where cntk.exe reads it and its
default (no limit).  Expectations: CNTK 2.7's HTK reader library, the one cntk.exe loads
(tests/fixtures/bs_htk_max_sequence/make_refs.py -> refs.json), and the compat case
``io40r__htk_long_utterances`` (CNTK 2.7 delivers utterances of 66,000 and 70,000 frames)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from stadyn import io
from stadyn._errors import ConfigError
from stadyn.brainscript import parse_config, reader_config
from stadyn.brainscript._readers import make_source

REFS = json.loads((Path(__file__).parents[1] / "fixtures" / "bs_htk_max_sequence" /
                   "refs.json").read_text())


def _reader(tmp_path, lengths, stream="", deserializer="", outer=""):
    total = sum(lengths)
    io.write_htk_features(tmp_path / "f.htk", np.arange(total, dtype=np.float32).reshape(-1, 1))
    starts = np.cumsum([0] + lengths)
    (tmp_path / "s.scp").write_text("".join(
        f"u{u}={tmp_path / 'f.htk'}[{a},{a + n - 1}]\n"
        for u, (a, n) in enumerate(zip(starts, lengths))))
    return reader_config(parse_config(f"""reader = {{
        randomize = false ; {outer}
        deserializers = ({{ type = "HTKFeatureDeserializer" ; module = "HTKDeserializers"
            {deserializer}
            input = {{ x = {{ dim = 1 ; scpFile = "{tmp_path / 's.scp'}" ; {stream} }} }} }})
    }}""", "speech.cntk")["reader"])


def _read(reader):
    """(first value, frames) of each utterance of one sweep, one utterance a minibatch."""
    source = make_source(reader, max_sweeps=1)
    out = []
    while True:
        mb = source.next_minibatch(1)
        if not mb:
            return out
        x = np.asarray(mb["x"].data).reshape(-1)
        out.append([float(x[0]), len(x)])


@pytest.mark.parametrize("where, stream, deserializer", [
    ("default", "", ""),
    # (before bs41 Stadyn read the stream's key: [[0.0, 5], [25.0, 3]])
    ("stream", "maxSequenceSize = 10", ""),
    # (before bs41 Stadyn warned the deserializer's key unused: all three)
    ("deserializer", "", "maxSequenceSize = 10"),
])
def test_max_sequence_size_is_the_deserializer_blocks_as_cntk_reads_it(tmp_path, where, stream,
                                                                       deserializer):
    reader = _reader(tmp_path, REFS["lengths"], stream, deserializer)
    assert _read(reader) == REFS["read"][where]


def test_an_utterance_past_65535_frames_is_read_by_default(tmp_path):
    # CNTK 2.7's HTK reader skips none by default (SIZE_MAX; io40r__htk_long_utterances:
    # 70,000 frames delivered); before bs41 Stadyn's BrainScript skipped it (65,535), SILENT
    reader = _reader(tmp_path, [4, 70000, 2])
    assert _read(reader) == [[0.0, 4], [4.0, 70000], [70004.0, 2]]


def test_a_bad_max_sequence_size_is_an_error_at_the_block(tmp_path):
    reader = _reader(tmp_path, [3, 2], deserializer='maxSequenceSize = "long"')
    with pytest.raises(ConfigError, match="maxSequenceSize") as info:
        make_source(reader)
    assert "speech.cntk" in str(info.value)
