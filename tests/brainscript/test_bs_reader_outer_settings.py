"""Reader settings given in a block around the reader (a ``train`` block, the top of the file):
cntk.exe reads ``frameMode``, ``maxErrors``, ``randomizationSeed`` and ``keepDataInMemory``
with ``config(key, default)``, which looks in the parent blocks where the reader block has no
such key (Source/Common/Include/Config.h:971-989): CompositeDataReader.cpp:58 (frameMode), 112
(maxErrors), ReaderUtil.h:17-19 (randomizationSeed), TextConfigHelper.cpp:125, 128, 129
(a text deserializer's maxErrors, keepDataInMemory, frameMode; its block first, then the
reader's and those around it).  At 2d7f4600 Stadyn read them from the reader block only.

The values read are checked elsewhere against CNTK 2.7: maxErrors' skipped inputs in
tests/io/test_ctf_max_errors.py (the same file and numbers as here), a seed's order in
tests/io (``randomization_seed``); here the enclosing block's setting must give what the
reader block's own gives.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stadyn._errors import ConfigError, DataError
from stadyn.brainscript import parse_config, reader_config
from stadyn.brainscript._reader_blocks import written_reader
from stadyn.brainscript._readers import make_source, sequence_streams

_MAX_ERRORS = json.loads((Path(__file__).parents[1] / "fixtures" / "ctf_max_errors" /
                          "refs.json").read_text())
_SEQUENCES = "0 |x 1 2 |y 1\n0 |x 3 4 |y 2\n1 |x 5 6 |y 3\n"


def _block(path, kind: str, inner: str = "", own: str = "") -> str:
    """A reader block of settings ``inner``; ``own``: a deserializer block's."""
    if kind == "reader":
        return (f'reader = [ readerType = "CNTKTextFormatReader" ; file = "{path}" ; {inner}\n'
                '    input = [ x = [ dim = 2 ; format = "dense" ]\n'
                '              y = [ dim = 1 ; format = "dense" ] ] ]')
    return (f'reader = [ {inner}\n    deserializers = ({{ type = "CNTKTextFormatDeserializer" ; '
            f'file = "{path}" ; {own}\n'
            '    input = { x = { dim = 2 ; format = "dense" }\n'
            '              y = { dim = 1 ; format = "dense" } } }) ]')


def _reader(path, kind: str, outer: str, inner: str = "", own: str = ""):
    text = f"train = [ {outer}\n  {_block(path, kind, inner, own)} ]"
    return reader_config(parse_config(text, "job.cntk")["train"]["reader"])


@pytest.mark.parametrize("kind", ["reader", "list"])
def test_max_errors_around_the_reader_skips_as_the_blocks_own(tmp_path, kind):
    path = tmp_path / "d.ctf"
    path.write_text(_MAX_ERRORS["cases"]["bad_value_in_a_sequence"])
    expected = _MAX_ERRORS["refs"]["bad_value_in_a_sequence"]["1"]    # CNTK 2.7, maxErrors = 1
    with pytest.warns(UserWarning, match="skipped"):
        mb = make_source(_reader(path, kind, "randomize = false ; maxErrors = 1"),
                         max_sweeps=1).next_minibatch(100)
    assert mb["x"].lengths.tolist() == [len(s) for s in expected["x"]] == [2, 1]
    assert mb["y"].lengths.tolist() == [len(s) for s in expected["y"]] == [3, 1]
    # none around it: CNTK's default 0, the bad value an error
    with pytest.raises(DataError, match="'abc' is not a number"):
        make_source(_reader(path, kind, "randomize = false"), max_sweeps=1).next_minibatch(100)


def test_a_deserializer_blocks_own_max_errors_comes_first(tmp_path):
    # TextConfigHelper.cpp:125 reads the deserializer's block first: its 0 stands
    path = tmp_path / "d.ctf"
    path.write_text(_MAX_ERRORS["cases"]["bad_value_in_a_sequence"])
    reader = _reader(path, "list", "randomize = false ; maxErrors = 1", own="maxErrors = 0")
    with pytest.raises(DataError, match="'abc' is not a number"):
        make_source(reader, max_sweeps=1).next_minibatch(100)


@pytest.mark.parametrize("kind", ["reader", "list"])
def test_frame_mode_around_the_reader_refuses_a_sequence_of_two_lines(tmp_path, kind):
    path = tmp_path / "s.ctf"
    path.write_text(_SEQUENCES)
    framed = _reader(path, kind, "randomize = false ; frameMode = true")
    # cntk.exe packs a text reader's sequences whole in frame mode, and its FramePacker
    # refuses one of two samples (CNTKTextFormatReader.cpp:57-59, CompositeDataReader.cpp:
    # 69-72, FramePacker.cpp:20-25; CNTK 2.7's Python MinibatchSource(frame_mode=True) the
    # same: case cntk_io_38 frame_mode__ctf_sequences)
    with pytest.raises(RuntimeError, match="non-frame sequence of size 2") as info:
        make_source(framed, max_sweeps=1).next_minibatch(100)
    assert info.value.path == str(path) and info.value.line == 1
    assert sequence_streams(framed) == frozenset()
    # none anywhere: sequences
    mb = make_source(_reader(path, kind, "randomize = false"), max_sweeps=1).next_minibatch(100)
    assert mb["x"].lengths.tolist() == [2, 1]
    # a readerType block's own false comes first
    own = _reader(path, "reader", "randomize = false ; frameMode = true", "frameMode = false")
    assert make_source(own, max_sweeps=1).next_minibatch(100)["x"].lengths.tolist() == [2, 1]
    # a write command's deserializers list reads sequences whatever frameMode says
    # (CompositeDataReader.cpp:65-68); readerType = "CNTKTextFormatReader" reads no action and
    # keeps it (TextConfigHelper.cpp:129, CNTKTextFormatReader.cpp:57-67: until rmC39 Stadyn
    # read sequences there too)
    if kind == "list":
        mb = make_source(written_reader(framed), max_sweeps=1).next_minibatch(100)
        assert mb["x"].lengths.tolist() == [2, 1]
    else:
        with pytest.raises(RuntimeError, match="non-frame sequence of size 2"):
            make_source(written_reader(framed), max_sweeps=1).next_minibatch(100)


@pytest.mark.parametrize("kind", ["reader", "list"])
def test_randomization_seed_around_the_reader_is_the_blocks_own(tmp_path, kind):
    path = tmp_path / "n.ctf"
    path.write_text("".join(f"|x {k} {k} |y {k}\n" for k in range(40)))

    def order(reader):
        source = make_source(reader, max_sweeps=1)
        return [int(v) for v in source.next_minibatch(40)["y"].data.reshape(-1)]
    window = "randomizationWindow = 4 ; sampleBasedRandomizationWindow = true"
    chunks = "chunkSizeInBytes = 30"
    own = order(_reader(path, kind, chunks, f"{window} ; randomizationSeed = 5"))
    around = order(_reader(path, kind, f"{chunks} ; randomizationSeed = 5", window))
    seed_0 = order(_reader(path, kind, chunks, window))
    assert around == own and own != seed_0 and sorted(own) == list(range(40))


def test_keep_data_in_memory_around_the_reader_is_read(tmp_path):
    # (no effect on what Stadyn reads: the value, and a bad one refused, are the block's)
    assert _reader("t.ctf", "reader", "keepDataInMemory = true").keep_data_in_memory
    assert not _reader("t.ctf", "reader", "keepDataInMemory = true",
                       "keepDataInMemory = false").keep_data_in_memory


@pytest.mark.parametrize("kind", ["reader", "list"])
def test_the_data_file_around_the_reader_is_read(tmp_path, kind):
    # TextConfigHelper.cpp:123 reads config(L"file"), which looks in the parent blocks (a
    # deserializer block's parent is the reader's): at 2d7f4600 a ConfigError ('file' missing)
    path = tmp_path / "s.ctf"
    path.write_text(_SEQUENCES)
    block = _block("X", kind).replace('file = "X" ; ', "")
    reader = reader_config(parse_config(f'train = [ file = "{path}" ; randomize = false\n'
                                        f'  {block} ]', "job.cntk")["train"]["reader"])
    mb = make_source(reader, max_sweeps=1).next_minibatch(100)
    assert mb["x"].lengths.tolist() == [2, 1] and mb["y"].data[:, 0, 0].tolist() == [1, 3]


@pytest.mark.parametrize("where", ["inner", "outer"])
def test_truncated_in_a_deserializers_list_is_read_from_the_blocks_around_it(tmp_path, where):
    # cntk.exe's CompositeDataReader reads config(L"truncated", false) and
    # config(L"truncationLength", 0) from the reader block or a block around it
    # (CompositeDataReader.cpp:57-81): frameMode with it is its LogicError, no truncationLength
    # its InvalidArgument, and otherwise its truncated BPTT packer (a train command's:
    # test_bs_truncated_list.py; at 2477301f the setting was ignored, at 1154ef55 refused)
    path = tmp_path / "d.ctf"
    path.write_text(_SEQUENCES)

    def opened(settings, pieces=False):
        outer, inner = (settings, "") if where == "outer" else ("", settings)
        return make_source(_reader(path, "list", outer, inner), max_sweeps=1, pieces=pieces)

    packed = opened("truncated = true ; truncationLength = 2", pieces=True)
    assert packed.truncation_length == 2
    packed.start_epoch(0, packed.sweep_size, 2)
    assert packed.next_minibatch(2)["x"].lengths.tolist() == [2]
    assert packed.next_minibatch(2)["x"].lengths.tolist() == [1] and packed.layout.begins == [True]
    with pytest.raises(ConfigError, match="frameMode and truncated BPTT are mutually exclusive"):
        opened("truncated = true ; frameMode = true")
    with pytest.raises(ConfigError, match="Truncation length cannot be 0"):
        opened("truncated = true")
    with pytest.raises(ConfigError, match="Truncation length cannot be 0"):
        opened("truncated = true ; truncationLength = 0")
    # false, read other than by a train command (whole sequences: the values the pieces give
    # with the state carried), a CNTKTextFormatReader's (its packers do not read it) and a
    # write command's reader (packed in sequences, CompositeDataReader.cpp:66-68): read whole
    assert opened("truncated = false").next_minibatch(100)["x"].lengths.tolist() == [2, 1]
    assert opened("truncated = true ; truncationLength = 2").next_minibatch(100)[
        "x"].lengths.tolist() == [2, 1]
    text = make_source(_reader(path, "reader", "truncated = true"), max_sweeps=1, pieces=True)
    assert text.next_minibatch(100)["x"].lengths.tolist() == [2, 1]
    written = written_reader(_reader(path, "list", "truncated = true ; truncationLength = 2"))
    assert make_source(written, max_sweeps=1).next_minibatch(100)["x"].lengths.tolist() == [2, 1]
