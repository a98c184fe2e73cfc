"""Whether a BrainScript network's Inputs are sequences is decided by the reader's data too:
cntk.exe gives every Input the network's MBLayout (``ComputationNetwork::ResetMBLayouts``,
ComputationNetworkEvaluation.cpp:626-633) and copies the reader's layout into it
(ReaderShim.cpp:318-327), so a network that uses no sequence function still reads a CTF file of
multi-line sequences (or HTK utterances) step by step.  Before bsseq Stadyn decided from the
network text alone and refused them ("'features' delivered samples of shape (4, 4); the input
needs (4,)").  Values hand-computed (W = 0.1 everywhere) or NumPy's, counts from the data."""

from __future__ import annotations

import io
import math
import re

import numpy as np
import pytest

import stadyn as sd
from stadyn import io as sio
from stadyn.brainscript import StadynLibrary, build_network, parse_config, reader_config, run
from stadyn.brainscript._readers import sequence_streams

LENGTHS = [3, 4, 5, 3, 4, 5]          # minibatches of 8 frames pack them as 3+4, 5+3, 4, 5
PACKED = [7, 8, 4, 5]

# no sequence function, no BS name: before bsseq its Inputs held one frame a sample
NETWORK = """{
    features = Input {4} ; labels = Input {3}
    W = ParameterTensor {(3:4), initValue = 0.1}
    z = W * features
    ce  = SumElements (ReduceLogSum (z) - TransposeTimes (labels, z), tag='criterion')
    acc = SumElements (TransposeTimes (labels, Hardmax (z)), tag='evaluation')
    out = Pass (z, tag='output')
}"""

READER = """reader = { readerType = "CNTKTextFormatReader" ; file = "DATA" ; randomize = false
        input = { features = { dim = 4 ; format = "dense" } ;
                  labels = { dim = 3 ; format = "dense" } } }"""


def _data(tmp_path, lengths=LENGTHS):
    rng = np.random.default_rng(0)
    labels, frames, lines = [], [], []
    for s, n in enumerate(lengths):
        ids = rng.integers(3, size=n)
        labels.append(ids)
        for label in ids:
            x = np.round(rng.standard_normal(4), 3)
            frames.append(x)
            y = " ".join("1" if i == label else "0" for i in range(3))
            lines.append(f"{s} |features {' '.join(f'{v:.3f}' for v in x)} |labels {y}")
    path = tmp_path / "data.txt"
    path.write_text("\n".join(lines) + "\n")
    return path, labels, np.array(frames)


def _run(tmp_path, network, data, commands="train", extra=""):
    reader = READER.replace("DATA", str(data))
    text = (f"command = {commands}\ntraceLevel = 1\nmodelPath = \"{tmp_path}/m.dnn\"\n"
            f"train = {{\n    action = \"train\"\n    BrainScriptNetworkBuilder = {network}\n"
            "    SGD = { epochSize = 0 ; maxEpochs = 1 ; minibatchSize = 8\n"
            "            learningRatesPerMB = 0.5 ; numMBsToShowResult = 1 }\n"
            f"    {reader}\n}}\n{extra}")
    config = tmp_path / "run.cntk"
    config.write_text(text)
    log = io.StringIO()
    run(str(config), [], out=log)
    return log.getvalue()


def _minibatches(log):
    return [(float(ce), int(n), float(acc), int(m)) for ce, n, acc, m in re.findall(
        r"Minibatch\[.*?\]: ce = (\S+) \* (\d+); acc = (\S+) \* (\d+)", log)]


def test_a_network_of_no_sequence_function_trains_on_ctf_sequences(tmp_path):
    data, labels, _ = _data(tmp_path)
    got = _minibatches(_run(tmp_path, NETWORK, data))
    # minibatches of whole sequences (8 frames at most), each frame counted
    assert [n for _, n, _, _ in got] == [m for *_, m in got] == PACKED
    # W = 0.1: every class scores alike, ReduceLogSum (z) - z_label = log 3 a frame, and
    # Hardmax picks class 0
    np.testing.assert_allclose(got[0][0], math.log(3), rtol=1e-6)
    frames = np.concatenate(labels)[:PACKED[0]]
    np.testing.assert_allclose(got[0][2], np.mean(frames == 0), rtol=1e-6)
    # the same network made one of sequences by its text (a delay no criterion uses) trains
    # alike, minibatch for minibatch
    delayed = NETWORK.replace("z = W * features", "z = W * features ; zPrev = PastValue (3, z)")
    (tmp_path / "m.dnn").unlink()
    expected = _minibatches(_run(tmp_path, delayed, data))
    np.testing.assert_allclose(np.array(got), np.array(expected), rtol=1e-5)


def test_a_write_command_writes_each_ctf_sequence_of_a_plain_network(tmp_path):
    # the write command's own reader decides: its Inputs read sequences, written one step a
    # row and one sequence after another (sequenceEpilogue after each)
    data, _, frames = _data(tmp_path, [2, 3])
    reader = READER.replace("DATA", str(data))
    write = (f"out = {{\n    action = \"write\"\n    outputPath = \"{tmp_path}/w\"\n"
             f"    outputNodeNames = (out)\n    format = {{ sequenceEpilogue = \"\\n--\\n\" }}\n"
             f"    {reader}\n}}\n")
    _run(tmp_path, NETWORK, data, "train:out", write)
    W = sd.load(f"{tmp_path}/m.dnn").parameters["W"].d      # (Stadyn's (4, 3): CNTK's [3 x 4])
    rows = frames @ np.asarray(W).reshape(4, 3)
    text = (tmp_path / "w.out").read_text()
    blocks = text.split("\n--\n")
    assert blocks[-1] == "" and len(blocks) == 3
    written = [np.array([[float(v) for v in line.split()] for line in b.split("\n")])
               for b in blocks[:2]]
    assert [len(w) for w in written] == [2, 3]
    np.testing.assert_allclose(np.concatenate(written), rows, atol=1e-6)


def test_one_line_sequences_and_frame_mode_leave_the_inputs_samples(tmp_path):
    # a file of one-line sequences delivers no sequences: the Inputs stay one sample each
    data, _, _ = _data(tmp_path, [1, 1, 1])
    reader = reader_config(parse_config(READER.replace("DATA", str(data)))["reader"])
    assert sequence_streams(reader) == frozenset()
    data, _, _ = _data(tmp_path)
    reader = reader_config(parse_config(READER.replace("DATA", str(data)))["reader"])
    assert sequence_streams(reader) == {"features", "labels"}
    # a stream given on a sequence's first line only delivers one step a sequence (bs28:
    # before, every stream of a file of several-line sequences counted)
    (tmp_path / "first.txt").write_text("0 |features 1 2 3 4 |labels 1 0 0\n0 |features 5 6 7 8\n")
    first = reader_config(parse_config(READER.replace("DATA", str(tmp_path / "first.txt")))[
        "reader"])
    assert sequence_streams(first) == {"features"}
    framed = reader_config(parse_config(READER.replace("DATA", str(data)).replace(
        "randomize = false", "randomize = false ; frameMode = true"))["reader"])
    assert sequence_streams(framed) == frozenset()
    # a reader that cannot be opened decides nothing (the command reading it says why)
    missing = reader_config(parse_config(READER.replace("DATA", str(tmp_path / "no.txt")))[
        "reader"])
    assert sequence_streams(missing) == frozenset()


def _htk(tmp_path, frame_mode):
    sio.write_htk_features(tmp_path / "f.htk", np.arange(20, dtype=np.float32).reshape(10, 2))
    (tmp_path / "f.scp").write_text("u1=.../f.htk[0,3]\nu2=.../f.htk[4,9]\n")
    (tmp_path / "s.txt").write_text("a\nb\nc\n")
    (tmp_path / "l.mlf").write_text('#!MLF!#\n"*/u1.lab"\n0 200000 b\n200000 400000 c\n.\n'
                                    '"*/u2.lab"\n0 6 a\n.\n')
    return reader_config(parse_config(f"""reader = {{
        randomize = false ; frameMode = {frame_mode}
        deserializers = ({{ type = "HTKFeatureDeserializer" ; module = "HTKDeserializers"
            input = {{ features = {{ dim = 2 ; scpFile = "{tmp_path / 'f.scp'}" }} }}
        }} : {{ type = "HTKMLFDeserializer" ; module = "HTKDeserializers"
            input = {{ labels = {{ labelDim = 3 ; mlfFile = "{tmp_path / 'l.mlf'}"
                                  labelMappingFile = "{tmp_path / 's.txt'}" }} }} }})
    }}""", "speech.cntk")["reader"])


def test_htk_utterances_make_their_inputs_sequences(tmp_path):
    streams = sequence_streams(_htk(tmp_path, "false"))
    assert streams == {"features", "labels"}
    assert sequence_streams(_htk(tmp_path, "true")) == frozenset()
    text = "{ features = Input {2} ; labels = Input {3} ; z = labels .* 2 ; y = features + 1 }"
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(text, StadynLibrary(sequence_inputs=streams))
        plain = build_network(text, StadynLibrary())
    assert net.nodes["features"].shape == (1, 1, 2) and \
        net.nodes["features"].sequence_lengths is not None
    assert net.nodes["labels"].sequence_lengths is not None
    assert plain.nodes["features"].shape == (1, 2)
    # the utterances' frames (u1: 4, u2: 6), step by step
    utterances = [np.arange(8.0).reshape(4, 2), np.arange(8.0, 20.0).reshape(6, 2)]
    net.nodes["features"].d = utterances
    net.nodes["y"].forward()
    got = sd.sequence.unpack_value(net.nodes["y"])
    for g, u in zip(got, utterances):
        np.testing.assert_allclose(g, u + 1)


def test_a_declared_axis_keeps_the_network_deciding(tmp_path):
    # where the network declares a DynamicAxis, its text says which Inputs are sequences (a
    # label per sequence on the default axis), whatever the other streams' sequences; an
    # Input of the default axis whose own stream delivers several steps is one of sequences
    # (bs28: cntk.exe links it to the network's layout, ComputationNetworkEvaluation.cpp:
    # 628-632; test_bs_fed_sequences.py)
    text = ("{ t = DynamicAxis{} ; features = Input {4, dynamicAxis = t} ; labels = Input {3}"
            " ; last = BS.Sequences.Last (features) }")
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network(text, StadynLibrary(sequence_inputs={"features"}))
        fed = build_network(text, StadynLibrary(sequence_inputs={"features", "labels"}))
    assert net.nodes["features"].sequence_lengths is not None
    assert net.nodes["labels"].sequence_lengths is None and net.nodes["labels"].shape == (1, 3)
    assert fed.nodes["labels"].sequence_lengths is not None


def test_a_node_of_no_minibatch_axis_is_written_as_one_sequence_of_its_columns(tmp_path):
    # cntk.exe writes a node without MBLayout (a parameter, a criterion summed over the
    # minibatch) as one sequence of its columns (ComputationNode.cpp:818-823), its first
    # dimension the rows (ComputationNode.h:1704-1711): W [3 x 4] is 4 steps of 3 values,
    # %x "3 4 4"; SumElements' [1] one step, "1 1".  Before bsseq W was 4 one-step
    # sequences ("3 1|w0" ...).  One-line sequences: the Inputs are samples.
    data, _, _ = _data(tmp_path, [1, 1, 1])
    reader = READER.replace("DATA", str(data))
    write = (f"out = {{\n    action = \"write\"\n    outputPath = \"{tmp_path}/w\"\n"
             f"    outputNodeNames = (W : ce : out)\n    minibatchSize = 8\n"
             f"    format = {{ sequencePrologue = \"%x|\" ; sequenceEpilogue = \"\\n--\\n\" }}\n"
             f"    {reader}\n}}\n")
    _run(tmp_path, NETWORK, data, "train:out", write)
    W = np.asarray(sd.load(f"{tmp_path}/m.dnn").parameters["W"].d).reshape(4, 3)
    text = (tmp_path / "w.W").read_text()
    rows = "\n".join(" ".join(f"{v:f}" for v in row) for row in W)
    assert text == f"3 4 4|{rows}\n--\n"
    ce = (tmp_path / "w.ce").read_text()
    assert re.fullmatch(r"1 1\|\d+\.\d{6}\n--\n", ce), ce
    # a per-sample node of the same minibatch: one sequence of one step a sample
    assert (tmp_path / "w.out").read_text().count("3 1|") == 3


def test_one_step_labels_beside_multi_step_features_are_refused_as_cntk_exe(tmp_path):
    # no DynamicAxis: cntk.exe links every Input to the network's one layout, named '*'
    # (ComputationNetworkEvaluation.cpp:626-629, ComputationNode.cpp:280), and its reader
    # refuses two inputs whose data lay out differently (ReaderShim.cpp:318-335, the inputs in
    # the order of its map: by name).  Features of 3, 4, 2, 3 steps beside labels of one step a
    # sequence: before mendB33 the labels stayed samples and were broadcast over the steps.
    rng = np.random.default_rng(1)
    features, labels = [], []
    for s, n in enumerate([3, 4, 2, 3]):
        labels.append(f"{s} |labels {' '.join('1' if i == s % 3 else '0' for i in range(3))}")
        features += [f"{s} |features {' '.join(f'{v:.3f}' for v in rng.standard_normal(4))}"
                     for _ in range(n)]
    (tmp_path / "f.txt").write_text("\n".join(features) + "\n")
    (tmp_path / "l.txt").write_text("\n".join(labels) + "\n")
    network = NETWORK.replace("TransposeTimes (labels, z)", "ReduceSum (labels .* z)")
    reader = f"""reader = {{ randomize = false
  deserializers = ({{ type = "CNTKTextFormatDeserializer" ; file = "{tmp_path}/f.txt"
                      input = {{ features = {{ dim = 4 ; format = "dense" }} }} }} :
                   {{ type = "CNTKTextFormatDeserializer" ; file = "{tmp_path}/l.txt"
                      input = {{ labels = {{ dim = 3 ; format = "dense" }} }} }}) }}"""
    text = (f"command = train\nmodelPath = \"{tmp_path}/m.dnn\"\n"
            f"train = {{\n    action = \"train\"\n    BrainScriptNetworkBuilder = {network}\n"
            "    SGD = { epochSize = 0 ; maxEpochs = 1 ; minibatchSize = 8\n"
            "            learningRatesPerMB = 0.5 }\n"
            f"    {reader}\n}}\n")
    config = tmp_path / "run.cntk"
    config.write_text(text)
    try:
        run(str(config), [], out=io.StringIO())
    except sd.ConfigError as exc:
        message = str(exc)
    else:
        raise AssertionError("trained on sequences of different lengths")
    assert message.startswith(f"{config}:")
    assert ("Dynamic axis layout '*' is shared between inputs 'features' and 'labels', but "
            "layouts generated from the input data are incompatible on this axis. Are you "
            "using different sequence lengths? Did you consider adding a DynamicAxis() to the "
            "Input nodes? (command 'train')") in message


def test_a_command_opens_its_reader_once(tmp_path, monkeypatch):
    # the deserializers opened (indexed) to see the data's sequences are the source's: before
    # mendB33 each reader block was opened twice, by sequence_streams and by make_source (a
    # 59 MB CTF file: 8.0 s for both, 3.6-4.5 s once).  A train and a write command: two opens
    from stadyn.brainscript import _deserializer_builders
    opened = []
    real = _deserializer_builders.open_deserializers

    def counted(reader):
        opened.append(reader)
        return real(reader)
    monkeypatch.setattr(_deserializer_builders, "open_deserializers", counted)
    data, _, frames = _data(tmp_path, [2, 3])
    reader = READER.replace("DATA", str(data))
    write = (f"out = {{\n    action = \"write\"\n    outputPath = \"{tmp_path}/w\"\n"
             f"    outputNodeNames = (out)\n    {reader}\n}}\n")
    log = _run(tmp_path, NETWORK, data, "train:out", write)
    assert len(opened) == 2, len(opened)
    assert [m[1] for m in _minibatches(log)] == [5]
    W = np.asarray(sd.load(f"{tmp_path}/m.dnn").parameters["W"].d).reshape(4, 3)
    written = np.loadtxt(tmp_path / "w.out")
    np.testing.assert_allclose(written, frames @ W, atol=1e-6)


def test_a_write_command_reads_sequences_whatever_frame_mode_says(tmp_path):
    # cntk.exe's deserializer reader packs whole sequences when the action is write
    # (CompositeDataReader.cpp:41, 65-68): frameMode = true is ignored and each CTF sequence is
    # written as one (the %x prologue "3 <steps>").  Before mendB33 each frame was a sequence
    # of one step ("3 1|" five times).  (A deserializers list: readerType =
    # "CNTKTextFormatReader" reads no action and keeps frameMode, since rmC39 as cntk.exe:
    # test_bs_write_packing.py)
    data, _, frames = _data(tmp_path, [2, 3])
    framed = ('reader = { randomize = false ; frameMode = true\n'
              '    deserializers = ({ type = "CNTKTextFormatDeserializer" ; '
              'module = "CNTKTextFormatReader" ; file = "DATA"\n' +
              READER.split("\n", 1)[1].rstrip()[:-1] + '}) }')
    write = (f"out = {{\n    action = \"write\"\n    outputPath = \"{tmp_path}/w\"\n"
             f"    outputNodeNames = (out)\n    minibatchSize = 8\n"
             f"    format = {{ sequencePrologue = \"%x|\" ; sequenceEpilogue = \"\\n--\\n\" }}\n"
             f"    {framed.replace('DATA', str(data))}\n}}\n")
    _run(tmp_path, NETWORK, data, "train:out", write)
    W = np.asarray(sd.load(f"{tmp_path}/m.dnn").parameters["W"].d).reshape(4, 3)
    rows = [" ".join(f"{v:f}" for v in row) for row in frames @ W]
    text = (tmp_path / "w.out").read_text()
    assert text == (f"3 2|{rows[0]}\n{rows[1]}\n--\n"
                    f"3 3|{rows[2]}\n{rows[3]}\n{rows[4]}\n--\n"), text


def test_a_write_command_of_an_htkmlfreader_reads_one_utterance_a_minibatch(tmp_path):
    # the older HTKMLFReader writes each utterance whole, one a minibatch, whatever frameMode
    # (its default: true), nbruttsineachrecurrentiter and randomize say (HTKMLFReader.cpp:90-93,
    # PrepareForWriting; 1630-1631: one parallel sequence of the utterance's frames).  Before
    # mendB33 the write command read frames (the reader's frame mode).
    from stadyn.brainscript._blocks import run_config
    from stadyn.brainscript._readers import make_source
    sio.write_htk_features(tmp_path / "f.htk", np.arange(20, dtype=np.float32).reshape(10, 2))
    (tmp_path / "f.scp").write_text("u1=.../f.htk[0,3]\nu2=.../f.htk[4,9]\n")
    (tmp_path / "s.txt").write_text("a\nb\nc\n")
    (tmp_path / "l.mlf").write_text('#!MLF!#\n"*/u1.lab"\n0 200000 b\n200000 400000 c\n.\n'
                                    '"*/u2.lab"\n0 600000 a\n.\n')
    config = run_config(parse_config(f"""command = out
    out = [ action = "write" ; outputPath = "w" ; modelPath = "m.dnn"
        reader = [ readerType = "HTKMLFReader" ; randomize = "auto"
            features = [ dim = 2 ; scpFile = "{tmp_path / 'f.scp'}" ]
            labels = [ mlfFile = "{tmp_path / 'l.mlf'}" ; labelDim = 3
                       labelMappingFile = "{tmp_path / 's.txt'}" ] ] ]"""))
    source = make_source(config.commands[0].reader, max_sweeps=1)
    read = []
    while True:
        mb = source.next_minibatch(256)
        if not mb:
            break
        read.append((mb["features"].num_sequences, [int(n) for n in mb["features"].lengths]))
        read.append(mb["features"].data[0].tolist())
    source.close()
    frames = np.arange(20.0).reshape(10, 2)
    assert read == [(1, [4]), frames[:4].tolist(), (1, [6]), frames[4:].tolist()]


def test_a_write_command_writes_a_criterion_as_its_minibatch_sum(tmp_path):
    # CrossEntropyWithSoftmax, ClassificationError and SquareError validate with
    # ValidateBinaryReduce (ComputationNode.cpp:470-491: no MBLayout, a scalar), so cntk.exe
    # writes one value a minibatch, the sum over its samples, as one sequence of one step
    # (ComputationNode.cpp:818-823): "1 1|<sum>".  Before mendB33 Stadyn wrote a value a step.
    # NumPy's sums over the 2 + 3 frames (one minibatch of 8)
    network = NETWORK.replace(
        "ce  = SumElements (ReduceLogSum (z) - TransposeTimes (labels, z), tag='criterion')",
        "ce = CrossEntropyWithSoftmax (labels, z, tag='criterion')").replace(
        "acc = SumElements (TransposeTimes (labels, Hardmax (z)), tag='evaluation')",
        "acc = ErrorPrediction (labels, z, tag='evaluation') ; sq = SquareError (labels, z)")
    data, labels, frames = _data(tmp_path, [2, 3])
    write = (f"out = {{\n    action = \"write\"\n    outputPath = \"{tmp_path}/w\"\n"
             f"    outputNodeNames = (ce : acc : sq)\n    minibatchSize = 8\n"
             f"    format = {{ sequencePrologue = \"%x|\" ; sequenceEpilogue = \"\\n--\\n\" }}\n"
             f"    {READER.replace('DATA', str(data))}\n}}\n")
    _run(tmp_path, network, data, "train:out", write)
    W = np.asarray(sd.load(f"{tmp_path}/m.dnn").parameters["W"].d).reshape(4, 3)
    z = frames @ W
    y = np.eye(3)[np.concatenate(labels)]
    ce = np.sum(np.log(np.exp(z).sum(axis=1)) - (y * z).sum(axis=1))
    errors = np.sum(np.argmax(z, axis=1) != np.argmax(y, axis=1))
    sq = np.sum((y - z) ** 2)
    for name, expected in (("ce", ce), ("acc", errors), ("sq", sq)):
        text = (tmp_path / f"w.{name}").read_text()
        match = re.fullmatch(r"1 1\|(\S+)\n--\n", text)
        assert match, (name, text)
        assert abs(float(match.group(1)) - expected) < 2e-6, (name, text, expected)


def test_a_parameter_written_across_keeps_cntk_exe_row_index(tmp_path):
    # transpose = false: a node of no MBLayout is indexed by its whole sample layout
    # (ComputationNode.cpp:1027-1032; W [3 x 4]: its 3 rows are [0,0] [1,0] [2,0], each of 4
    # values; written once a minibatch: one here).  Before mendB33 the rows had no index.
    data, _, _ = _data(tmp_path, [1, 1, 1])
    write = (f"out = {{\n    action = \"write\"\n    outputPath = \"{tmp_path}/w\"\n"
             f"    outputNodeNames = (W : out)\n    format = {{ transpose = false }}\n"
             f"    {READER.replace('DATA', str(data))}\n}}\n")
    _run(tmp_path, NETWORK, data, "train:out", write)
    W = np.asarray(sd.load(f"{tmp_path}/m.dnn").parameters["W"].d).reshape(4, 3)
    rows = [f"[{i},0]\t" + " ".join(f"{v:f}" for v in W[:, i]) for i in range(3)]
    assert (tmp_path / "w.W").read_text() == "\n".join(rows) + "\n"


def test_a_write_command_of_parameters_only_is_refused(tmp_path):
    # cntk.exe's write loop is its reader's, asked for the streams of the Inputs the written
    # nodes read (SimpleOutputWriter.h:155, 195, 215, 233); with none (W alone)
    # ReaderShim::GetMinibatch reads the first of no inputs (ReaderShim.cpp:260): nothing
    # defined to match (after opening w.W and writing its prologue, SimpleOutputWriter.h:210,
    # 224; Stadyn refuses before opening it).  Before bs28 Stadyn wrote an empty w.W and
    # 'Total Samples Evaluated = 0', silently; beside a node of the data W is written once a
    # minibatch (above)
    data, _, _ = _data(tmp_path, [1, 1, 1])
    reader = READER.replace("DATA", str(data))
    write = (f"out = {{\n    action = \"write\"\n    outputPath = \"{tmp_path}/w\"\n"
             f"    outputNodeNames = (W)\n    {reader}\n}}\n")
    try:
        _run(tmp_path, NETWORK, data, "train:out", write)
    except sd.ConfigError as exc:
        message = str(exc)
    else:
        raise AssertionError("wrote a parameter with no minibatch")
    assert message.startswith(f"{tmp_path / 'run.cntk'}:")
    assert "command 'out' (action write): the nodes written (W) read no Input" in message
    assert "undefined: ReaderShim.cpp:260, after opening the output files" in message
    assert "no file is written" in message
    assert not (tmp_path / "w.W").exists()


def test_a_write_format_shows_each_sequences_index_in_its_minibatch(tmp_path):
    # %d in sequencePrologue and sampleSeparator: the sequence's id in the minibatch's layout
    # (ComputationNode.cpp:872-887), which cntk.exe's sequence packer numbers from 0 in each
    # minibatch (SequencePacker.cpp:19-27); a node of no MBLayout is one sequence of id 0
    # (ComputationNode.cpp:818-823); in sequenceEpilogue it is written as is.  Minibatches of 4
    # samples hold the sequences of 2, then 3 and 1 steps.  At 40a7d422 %d was refused.
    data, _, frames = _data(tmp_path, [2, 3, 1])
    write = (f"out = {{\n    action = \"write\"\n    outputPath = \"{tmp_path}/w\"\n"
             f"    outputNodeNames = (W : out)\n    minibatchSize = 4\n"
             f"    format = {{ sequencePrologue = \"%d:%x|\" ; sampleSeparator = \";%d;\"\n"
             f"               sequenceEpilogue = \"|%d\\n\" }}\n"
             f"    {READER.replace('DATA', str(data))}\n}}\n")
    _run(tmp_path, NETWORK, data, "train:out", write)
    W = np.asarray(sd.load(f"{tmp_path}/m.dnn").parameters["W"].d).reshape(4, 3)
    rows = [" ".join(f"{v:f}" for v in row) for row in frames @ W]
    text = (tmp_path / "w.out").read_text()
    assert text == (f"0:3 2|{rows[0]};0;{rows[1]}|%d\n"
                    f"0:3 3|{rows[2]};0;{rows[3]};0;{rows[4]}|%d\n"
                    f"1:3 1|{rows[5]}|%d\n"), text
    weights = (tmp_path / "w.W").read_text().splitlines()
    assert len(weights) == 2 and all(w.startswith("0:3 4 4|") for w in weights), weights
    assert weights[0].count(";0;") == 3


def test_a_write_format_of_an_older_readers_sequence_ids_is_refused():
    # an HTKMLFReader's or LMSequenceReader's ids count the sequences of the whole process
    # (NEW_SEQUENCE_ID, Sequences.h:356-361): not followed
    from stadyn import ConfigError
    from stadyn.brainscript._blocks import ReaderConfig
    from stadyn.brainscript._write import write_format
    record = parse_config('W = { format = { sequencePrologue = "%d|" } }')["W"]
    assert write_format(record, ReaderConfig()).sequence_prologue == "%d|"
    with pytest.raises(ConfigError, match=r"%d .* in format.sequencePrologue is not supported "
                                          "yet with an older reader"):
        write_format(record, ReaderConfig(reader_type="HTKMLFReader"))
