"""The ``write`` action over ``readerType = "HTKDeserializers"`` and
``"CNTKTextFormatReader"``, readers that read ``frameMode`` whatever the action: how cntk.exe
packs what it writes.  cntk.exe is not runnable here; the expectations are read off its C++
(cited at each test) and computed with NumPy from the values written into the data files."""

from __future__ import annotations

import io as pyio
import re

import numpy as np
import pytest

from stadyn import io
from stadyn._errors import ConfigError
from stadyn.brainscript import run

#: 4 utterances of 5 frames: u<i> is frames 5i..5i+4 of FRAMES
FRAMES = np.arange(40, dtype=np.float32).reshape(20, 2)


def _utterance_files(tmp_path, monkeypatch) -> str:
    """Write the 4 utterances (``FRAMES``), their script file, labels and state list into
    ``tmp_path`` (the working folder from now on); return the ``readerType =
    "HTKDeserializers"`` block (readMethod = "none") that reads them, with ``MORE`` where
    settings go."""
    monkeypatch.chdir(tmp_path)
    io.write_htk_features("f.htk", FRAMES)
    (tmp_path / "f.scp").write_text("".join(f"u{i}=f.htk[{5 * i},{5 * i + 4}]\n"
                                            for i in range(4)))
    (tmp_path / "s.txt").write_text("a\nb\nc\n")
    (tmp_path / "l.mlf").write_text("#!MLF!#\n" + "".join(
        f'"u{i}.lab"\n0 500000 {"abc"[i % 3]}\n.\n' for i in range(4)))
    reader = ('reader = [ readerType = "HTKDeserializers" ; readMethod = "none" MORE\n'
              '  features = [ dim = 2 ; scpFile = "f.scp" ; type = "real" ]\n'
              '  labels = [ mlfFile = "l.mlf" ; labelMappingFile = "s.txt" ; labelDim = 3\n'
              '             labelType = "category" ] ]')
    return reader


def _write_config(tmp_path, reader: str, write: str, write_reader: str,
                  past: bool = False) -> str:
    """Write ``w.cntk``: a train command (``reader`` with no settings added: frame mode) and a
    write command ``out`` (minibatchSize = 4, then ``write``; its reader ``write_reader``) of
    ``o = 2 * features``, and of ``p = PastValue (0, features, defaultHiddenActivation = -1)``
    too where ``past``; return its path."""
    nodes = "o:p" if past else "o"
    past_line = ("\n        p = PastValue (0, features, defaultHiddenActivation = -1)"
                 if past else "")
    config = tmp_path / "w.cntk"
    config.write_text(f"""command = train:out
deviceId = -1 ; traceLevel = 1 ; modelPath = "{tmp_path}/m.dnn"
train = [ action = "train"
    BrainScriptNetworkBuilder = [
        features = Input {{2}} ; labels = Input {{3}}
        W = ParameterTensor {{(3:2)}} ; z = W * features ; o = 2 * features{past_line}
        ce = CrossEntropyWithSoftmax (labels, z)
        criterionNodes = (ce) ; outputNodes = ({nodes}) ]
    SGD = [ epochSize = 0 ; maxEpochs = 1 ; minibatchSize = 4 ; learningRatesPerSample = 0.1 ]
    {reader.replace("MORE", "")} ]
out = [ action = "write" ; outputPath = "{tmp_path}/w" ; outputNodeNames = ({nodes})
    minibatchSize = 4{write}
    {write_reader} ]
""")
    return str(config)


def _config(tmp_path, monkeypatch, write_reader: str = "", fmt: str = "",
            command: str = "") -> str:
    """A train command (frame mode) and a write command ``out`` of ``o = 2 * features`` and
    ``p = PastValue (0, features, defaultHiddenActivation = -1)``, minibatchSize = 4, whose
    ``readerType = "HTKDeserializers"`` (readMethod = "none") reads the 4 utterances with
    ``write_reader`` added; ``fmt``: its format block's settings, ``command``: the write
    command's other settings."""
    reader = _utterance_files(tmp_path, monkeypatch)
    return _write_config(tmp_path, reader,
                         f' {command}\n    format = [ sequenceEpilogue = "]\\n" {fmt} ]',
                         reader.replace("MORE", write_reader), past=True)


def _lines(path) -> list[str]:
    return path.read_text().splitlines()


def _row(values) -> str:
    return " ".join(f"{float(v):f}" for v in values)


@pytest.mark.parametrize("frame_mode", ["", "; frameMode = true"])
def test_htkdeserializers_write_in_frame_mode_writes_each_frame_as_a_sequence(
        tmp_path, monkeypatch, frame_mode):
    # readerType = "HTKDeserializers" reads frameMode (default true) for every action, write
    # too (HTKMLFReader.cpp:72-89; CompositeDataReader's "for writing we always use sequence
    # mode", CompositeDataReader.cpp:65-68, is not its): its HTKDeserializer makes each frame
    # a sequence (HTKDeserializer.cpp:285-311) and the FramePacker packs minibatchSize = 4 of
    # them a minibatch, a layout of 4 sequences of 1 step (FramePacker.cpp:18-30,
    # Sequences.h:419-434).  So 5 minibatches of 4; the writer writes each frame as a sequence
    # (ComputationNode.cpp:842-901): "<%x>" is "<2 1>" at every frame; and PastValue sees each
    # frame begin its sequence: the default -1 at every frame.  Until rmC39 Stadyn wrote whole
    # utterances (4 minibatches of 5, "<2 5>" a line of 5 frames, PastValue the frame before):
    # SILENT.
    config = _config(tmp_path, monkeypatch, frame_mode, '; sequencePrologue = "<%x>"')
    log = pyio.StringIO()
    run(config, out=log)
    assert re.findall(r"Minibatch\[(\d+)\]: ActualMBSize = (\d+)", log.getvalue()) == \
        [(str(k), "4") for k in range(5)]
    assert _lines(tmp_path / "w.o") == [f"<2 1>{_row(2 * f)}]" for f in FRAMES]
    assert _lines(tmp_path / "w.p") == [f"<2 1>{_row([-1, -1])}]"] * 20


def test_htkdeserializers_write_in_sequence_mode_writes_whole_utterances(tmp_path, monkeypatch):
    # frameMode = false: its SequencePacker (HTKMLFReader.cpp:84-89, 166-168) packs whole
    # utterances, the first of 5 frames over minibatchSize 4 alone (4 minibatches of 5), each
    # written as one sequence: "<2 5>" and its 5 frames, PastValue -1 at each utterance's first
    # frame and the frame before elsewhere (as before rmC39)
    config = _config(tmp_path, monkeypatch, "; frameMode = false", '; sequencePrologue = "<%x>"')
    log = pyio.StringIO()
    run(config, out=log)
    assert re.findall(r"ActualMBSize = (\d+)", log.getvalue()) == ["5"] * 4
    o, p = [], []
    for u in range(4):
        frames = FRAMES[5 * u:5 * u + 5]
        past = np.concatenate([[[-1, -1]], frames[:-1]])
        o.append("<2 5>" + "\n".join(_row(2 * f) for f in frames) + "]")
        p.append("<2 5>" + "\n".join(_row(f) for f in past) + "]")
    assert (tmp_path / "w.o").read_text() == "\n".join(o) + "\n"
    assert (tmp_path / "w.p").read_text() == "\n".join(p) + "\n"


@pytest.mark.parametrize("frame_mode", ["", "; frameMode = false"])
def test_htkdeserializers_write_percent_d_is_the_index_in_the_minibatch(
        tmp_path, monkeypatch, frame_mode):
    # readerType = "HTKDeserializers" packs with the reader library's packers (no older
    # reader's own layout): a sequence's id is its index in its minibatch (FramePacker:
    # Sequences.h:428-433; SequencePacker.cpp:20-27), "%d" in sequencePrologue
    # (ComputationNode.cpp:877-883).  Frame mode: 0 1 2 3 in each of the 5 minibatches;
    # sequence mode: one utterance a minibatch, 0 each.  Until rmC39 Stadyn refused "%d" as
    # an older reader's ("not supported yet").
    config = _config(tmp_path, monkeypatch, frame_mode, '; sequencePrologue = "%d:"')
    run(config, out=pyio.StringIO())
    ids = [line.split(":")[0] for line in _lines(tmp_path / "w.o") if ":" in line]
    assert ids == (["0", "1", "2", "3"] * 5 if not frame_mode else ["0"] * 4)


def test_htkdeserializers_write_sequence_key_is_cntks_error(tmp_path, monkeypatch):
    # readerType = "HTKDeserializers" is read through a reader shim (its Exports.cpp,
    # HTKMLFReaderShim) whose packers have no corpus (HTKMLFReader.cpp:166-175): the
    # minibatch's key function raises "Sequence Id mapping is not available for old style
    # configurations. Please use deserializers." (PackerBase.cpp:140-147), which the writer
    # calls for "%k" under writeSequenceKey = true (SimpleOutputWriter.h:244,
    # ComputationNode.cpp:890-896).  Until rmC39 Stadyn wrote "%k" as is.
    config = _config(tmp_path, monkeypatch, fmt='; sequencePrologue = "%k "',
                     command="; writeSequenceKey = true")
    with pytest.raises(ConfigError, match="gives no keys"):
        run(config, out=pyio.StringIO())
    assert not (tmp_path / "w.o").exists()


@pytest.mark.parametrize("frame_mode", ["", "; frameMode = true"])
def test_text_format_reader_write_keeps_frame_mode(tmp_path, monkeypatch, frame_mode):
    # readerType = "CNTKTextFormatReader" reads frameMode whatever the action
    # (TextConfigHelper.cpp:129, CNTKTextFormatReader.cpp:57-67; DoWriteOutput only turns
    # randomization off, EvalActions.cpp:224-225): frameMode = true packs with the FramePacker,
    # whose sequence of 2 steps is its RuntimeError "Detected a non-frame sequence of size 2 in
    # frame mode." (FramePacker.cpp:20-25; CNTK 2.7's MinibatchSource(CTFDeserializer(...),
    # frame_mode=True) raises it on this file).  Without it the sequences are written whole.
    # Until rmC39 Stadyn dropped frameMode and wrote the sequences.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.ctf").write_text("0 |x 1 2 |y 1 0\n0 |x 3 4 |y 1 0\n1 |x 5 6 |y 0 1\n")
    reader = ('reader = [ readerType = "CNTKTextFormatReader" ; file = "t.ctf" ; '
              'randomize = false MORE\n'
              '    input = [ x = [ dim = 2 ; format = "dense" ] ; '
              'y = [ dim = 2 ; format = "dense" ] ] ]')
    config = tmp_path / "w.cntk"
    config.write_text(f"""command = train:out
deviceId = -1 ; traceLevel = 1 ; modelPath = "{tmp_path}/m.dnn"
train = [ action = "train"
    BrainScriptNetworkBuilder = [
        x = Input {{2}} ; y = Input {{2}}
        W = ParameterTensor {{(2:2)}} ; z = W * x ; o = 2 * x
        ce = CrossEntropyWithSoftmax (y, z)
        criterionNodes = (ce) ; outputNodes = (o) ]
    SGD = [ epochSize = 0 ; maxEpochs = 1 ; minibatchSize = 4 ; learningRatesPerSample = 0.1 ]
    {reader.replace("MORE", "")} ]
out = [ action = "write" ; outputPath = "{tmp_path}/w" ; outputNodeNames = (o)
    minibatchSize = 4 ; format = [ sequencePrologue = "<%x>" ]
    {reader.replace("MORE", frame_mode)} ]
""")
    if frame_mode:
        with pytest.raises(RuntimeError, match="non-frame sequence of size 2 in frame mode"):
            run(str(config), out=pyio.StringIO())
        return
    run(str(config), out=pyio.StringIO())
    assert _lines(tmp_path / "w.o") == ["<2 2>2.000000 4.000000", "6.000000 8.000000",
                                        "<2 1>10.000000 12.000000"]


def _htk_write_config(tmp_path, monkeypatch, method: str = '"none"') -> str:
    """A train command (frame mode) and a write command of ``o = 2 * features`` whose
    ``readerType = "HTKDeserializers"`` reads 4 utterances of 5 frames (``u<i>``: frames
    5i..5i+4 of ``arange(40)`` in rows of 2) with frameMode = false ; truncated = true ;
    truncationLength = 2, minibatchSize = 4: 2 slots of 2 frames (its ``readMethod``:
    ``method``)."""
    reader = _utterance_files(tmp_path, monkeypatch)
    return _write_config(
        tmp_path, reader, "",
        reader.replace("MORE", "; frameMode = false ; truncated = true ; truncationLength = 2")
        .replace('"none"', method))


def test_htkdeserializers_truncated_write_packs_pieces_and_fails_where_one_goes_on(
        tmp_path, monkeypatch):
    # readerType = "HTKDeserializers" packs truncated pieces for every action, a write command's
    # too (HTKMLFReader.cpp:72-86 reads no action; CompositeDataReader's write exception,
    # CompositeDataReader.cpp:41, 65-68, is not its): 2 slots of 2 frames (HTKMLFReader.cpp:
    # 179-199).  Minibatch 0 holds the first 2 frames of u0 and of u1, both beginning their
    # utterance: written as 2 sequences (ComputationNode.cpp:841-870), ActualMBSize = 4.  In
    # minibatch 1 both pieces go on (tBegin = -2, TruncatedBpttPacker.cpp:290-293), and the
    # writer's GetColumnIndex(seq, 0) reads time -2: cntk.exe's LogicError (Sequences.h:522-524)
    # after minibatch 0 was written.  Until bs39 Stadyn wrote the 4 whole utterances: SILENT.
    config = _htk_write_config(tmp_path, monkeypatch)
    log = pyio.StringIO()
    with pytest.raises(ConfigError, match="not included in current minibatch"):
        run(config, out=log)
    assert re.findall(r"Minibatch\[(\d+)\]: ActualMBSize = (\d+)", log.getvalue()) == \
        [("0", "4")]
    values = [[float(v) for v in line.split()]
              for line in (tmp_path / "w.o").read_text().splitlines() if line.strip()]
    assert values == (2 * np.concatenate([FRAMES[0:2], FRAMES[5:7]])).tolist()


@pytest.mark.parametrize("method", ['"blockRandomize"', '"None"', ""])
def test_htkdeserializers_write_command_needs_readmethod_none(tmp_path, monkeypatch, method):
    # HTKDeserializers' ConfigHelper::GetRandomizer (ConfigHelper.cpp:210-219): a write
    # action's reader whose readMethod is not "none" as written (its default blockRandomize
    # too) is cntk.exe's InvalidArgument "'readMethod' must be 'none' for write action", when
    # DoWriteOutput makes its reader (EvalActions.cpp:227), before the model is read.  Until
    # bs39 Stadyn wrote the data in file order.
    config = _htk_write_config(tmp_path, monkeypatch, method or '"none"')
    if not method:          # (not set: the default)
        with open(config) as f:
            head, tail = f.read().split("out = [", 1)
        with open(config, "w") as f:
            f.write(head + "out = [" + tail.replace(' ; readMethod = "none"', ""))
    log = pyio.StringIO()
    with pytest.raises(ConfigError, match="'readMethod' must be 'none' for write action"):
        run(config, out=log)
    assert not (tmp_path / "w.o").exists()
