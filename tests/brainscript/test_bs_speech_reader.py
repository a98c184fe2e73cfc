"""BrainScript reader blocks with HTKFeatureDeserializer + HTKMLFDeserializer (and
CNTKBinaryFormatDeserializer) give the minibatches of the same deserializers made in Python
(those are compared with CNTK 2.7 in tests/compat, cases cntk_io_formats.py)."""

from __future__ import annotations

import numpy as np
import pytest

from stadyn import io
from stadyn._errors import ConfigError
from stadyn.brainscript import parse_config, reader_config
from stadyn.brainscript._readers import make_source


def _files(tmp_path):
    io.write_htk_features(tmp_path / "f.htk", np.arange(20, dtype=np.float32).reshape(10, 2))
    (tmp_path / "f.scp").write_text("u1=.../f.htk[0,3]\nu2=.../f.htk[4,9]\n")
    (tmp_path / "s.txt").write_text("a\nb\nc\n")
    (tmp_path / "l.mlf").write_text('#!MLF!#\n"*/u1.lab"\n0 200000 b\n200000 400000 c\n.\n'
                                    '"*/u2.lab"\n0 6 a\n.\n')
    (tmp_path / "mlfs.txt").write_text(f"{tmp_path / 'l.mlf'}\n")


def _reader(tmp_path, extra="", context="contextWindow = 3", labels="mlfFile"):
    target = tmp_path / ("mlfs.txt" if labels == "mlfFileList" else "l.mlf")
    return reader_config(parse_config(f"""reader = {{
        randomize = false ; {extra}
        deserializers = ({{ type = "HTKFeatureDeserializer" ; module = "HTKDeserializers"
            input = {{ features = {{ dim = 2 ; {context} ; scpFile = "{tmp_path / 'f.scp'}" }} }}
        }} : {{ type = "HTKMLFDeserializer" ; module = "HTKDeserializers"
            input = {{ labels = {{ labelDim = 3 ; {labels} = "{target}"
                                  labelMappingFile = "{tmp_path / 's.txt'}" }} }} }})
    }}""", "speech.cntk")["reader"])


def _python(tmp_path, context, frame_mode=False):
    return io.MinibatchSource([
        io.HTKFeatureDeserializer(io.StreamDefs(features=io.StreamDef(
            shape=2, scp=str(tmp_path / "f.scp"), context=context))),
        io.HTKMLFDeserializer(str(tmp_path / "s.txt"), io.StreamDefs(labels=io.StreamDef(
            shape=3, mlf=str(tmp_path / "l.mlf"))))], randomize=False, frame_mode=frame_mode)


@pytest.mark.parametrize("extra, context, labels, py_context, frame_mode", [
    ("", "contextWindow = 3", "mlfFile", (1, 1), False),
    ("frameMode = true", "contextWindow = 2:0", "mlfFileList", (2, 0), True),
])
def test_htk_reader_block_equals_the_python_deserializers(tmp_path, extra, context, labels,
                                                           py_context, frame_mode):
    _files(tmp_path)
    warnings = []
    ours = make_source(_reader(tmp_path, extra, context, labels), warn=warnings.append)
    assert warnings == []
    theirs = _python(tmp_path, py_context, frame_mode)
    for _ in range(3):
        a, b = ours.next_minibatch(4), theirs.next_minibatch(4)
        for name in ("features", "labels"):
            np.testing.assert_array_equal(a[name].data, b[name].data)
            assert a[name].end_of_sweep == b[name].end_of_sweep
    assert a["features"].data.shape[-1] == 6


def test_binary_reader_block_and_errors(tmp_path):
    io.write_cbf(tmp_path / "d.cbf", {"x": [np.ones((2, 3)), np.zeros((1, 3))]})
    r = reader_config(parse_config(f"""reader = {{ randomize = false
        deserializers = ({{ type = "CNTKBinaryFormatDeserializer" ; file = "{tmp_path / 'd.cbf'}"
            input = {{ feats = {{ alias = "x" ; dim = 3 }} }} }}) }}""")["reader"])
    mb = make_source(r).next_minibatch(3)
    assert mb["feats"].lengths.tolist() == [2, 1]
    _files(tmp_path)
    with pytest.raises(ConfigError, match="contextWindow must be an odd frame count") as info:
        make_source(_reader(tmp_path, context="contextWindow = 4"))
    assert info.value.path == "speech.cntk"
    with pytest.raises(ConfigError, match="frameMode must be true or false"):
        make_source(_reader(tmp_path, extra="frameMode = maybe"))
