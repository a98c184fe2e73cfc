"""``%k`` in a write command's format: with ``writeSequenceKey = true`` (the command's, or a
block's around it: EvalActions.cpp:259) cntk.exe replaces it in ``sequencePrologue`` and
``sampleSeparator`` by the sequence's key in its data (ComputationNode.cpp:839-840, 890-896;
the key function of its reader's minibatch, PackerBase.cpp:150-165: a CTF sequence id,
IndexBuilder.cpp:320; a node of no MBLayout is one sequence of id 0, ComputationNode.cpp:
818-823, the key of the minibatch's sequence 0); elsewhere, or without ``writeSequenceKey``
(no key function: SimpleOutputWriter.h:244), it is written as is.  Values NumPy's, keys from
the file.  At 2d7f4600 Stadyn refused ``%k``.  With ``readerType = "CNTKTextFormatReader"`` (or
``"ImageReader"``) the packer has no corpus and the key function raises (CNTKTextFormatReader.cpp:
57-67, SequencePacker.h:17-23, PackerBase.cpp:140-147, ReaderShim.cpp:296, 414): cntk.exe's
error, which Stadyn gives as a ConfigError (at 2477301f it wrote the line numbers' keys)."""

from __future__ import annotations

import numpy as np
import pytest

import stadyn as sd
from stadyn import ConfigError
from stadyn.brainscript import parse_config
from stadyn.brainscript._blocks import ReaderConfig
from stadyn.brainscript._write import write_format
from test_bs_data_sequences import NETWORK, READER, _run

# the same file read by a deserializers list (CompositeDataReader: keys from its corpus)
DESERIALIZERS = """reader = { randomize = false
        deserializers = ({ type = "CNTKTextFormatDeserializer" ; module = "CNTKTextFormatReader"
            file = "DATA" ; input = { features = { dim = 4 ; format = "dense" }
                                      labels = { dim = 3 ; format = "dense" } } }) }"""
IDS = [7, 3, 12]            # the file's sequence ids, in file order, of 2, 3 and 1 lines


def _data(tmp_path):
    rng = np.random.default_rng(1)
    lines, frames = [], []
    for seq, n in zip(IDS, [2, 3, 1]):
        for _ in range(n):
            x = np.round(rng.standard_normal(4), 3)
            frames.append(x)
            lines.append(f"{seq} |features {' '.join(f'{v:.3f}' for v in x)} |labels 0 1 0")
    path = tmp_path / "data.txt"
    path.write_text("\n".join(lines) + "\n")
    return path, np.array(frames)


def _written(tmp_path, setting, reader=DESERIALIZERS):
    data, frames = _data(tmp_path)
    write = (f"out = {{\n    action = \"write\"\n    outputPath = \"{tmp_path}/w\"\n"
             f"    outputNodeNames = (W : out)\n    minibatchSize = 4\n    {setting}\n"
             f"    format = {{ sequencePrologue = \"%k:%d|\" ; sampleSeparator = \";%k;\"\n"
             f"               sequenceEpilogue = \"|%k\\n\" }}\n"
             f"    {reader.replace('DATA', str(data))}\n}}\n")
    _run(tmp_path, NETWORK, data, "train:out", write)
    W = np.asarray(sd.load(f"{tmp_path}/m.dnn").parameters["W"].d).reshape(4, 3)
    rows = [" ".join(f"{v:f}" for v in row) for row in frames @ W]
    return (tmp_path / "w.out").read_text(), (tmp_path / "w.W").read_text(), rows


def test_k_is_each_sequences_key_with_write_sequence_key(tmp_path):
    # minibatches of 4 samples: sequence 7 (2 steps), then 3 (3 steps) and 12 (1 step)
    out, weights, rows = _written(tmp_path, "writeSequenceKey = true")
    assert out == (f"7:0|{rows[0]};7;{rows[1]}|%k\n"
                   f"3:0|{rows[2]};3;{rows[3]};3;{rows[4]}|%k\n"
                   f"12:1|{rows[5]}|%k\n"), out
    # W (no MBLayout): one sequence a minibatch, the key of its sequence 0
    lines = weights.splitlines()
    assert [w.split("|")[0] for w in lines] == ["7:0", "3:0"], weights
    assert lines[0].count(";7;") == 3 and lines[1].count(";3;") == 3


def test_k_is_written_as_is_without_write_sequence_key(tmp_path):
    out, _, rows = _written(tmp_path, "")
    assert out.startswith(f"%k:0|{rows[0]};%k;{rows[1]}|%k\n"), out


def test_k_with_a_cntk_text_format_reader_is_cntk_exes_error(tmp_path):
    with pytest.raises(ConfigError, match="Sequence Id mapping is not available"):
        _written(tmp_path, "writeSequenceKey = true", READER)
    # without writeSequenceKey the key function is not called: written as is
    out, _, rows = _written(tmp_path, "", READER)
    assert out.startswith(f"%k:0|{rows[0]};%k;{rows[1]}|%k\n"), out


def test_write_sequence_key_around_the_command_and_an_older_readers_k():
    text = ('writeSequenceKey = true\nW = { format = { sequencePrologue = "%k|" } }')
    record = parse_config(text)["W"]
    assert write_format(record, ReaderConfig()).sequence_keys
    assert not write_format(parse_config('W = { format = { } }')["W"]).sequence_keys
    # an HTKMLFReader's minibatches carry no keys: %k written as is (no longer refused)
    older = write_format(record, ReaderConfig(reader_type="HTKMLFReader"))
    assert not older.sequence_keys and older.sequence_prologue == "%k|"
    # a CNTKTextFormatReader's or ImageReader's key function raises; %k in sequenceEpilogue is
    # not replaced, so not refused
    for kind in ("CNTKTextFormatReader", "ImageReader"):
        with pytest.raises(ConfigError, match="needs a reader of deserializers"):
            write_format(record, ReaderConfig(reader_type=kind))
    epilogue_k = parse_config('writeSequenceKey = true\nW = { format = { sequenceEpilogue = '
                              '"%k" } }')["W"]
    assert write_format(epilogue_k, ReaderConfig(reader_type="ImageReader")).sequence_epilogue \
        == "%k"
    # its %d is refused only where cntk.exe replaces it (ComputationNode.cpp:837-838): in
    # sequenceEpilogue written as is (at 2d7f4600 refused there too)
    epilogue = parse_config('W = { format = { sequenceEpilogue = "%d" } }')["W"]
    assert write_format(epilogue, ReaderConfig(reader_type="HTKMLFReader")).sequence_epilogue \
        == "%d"
