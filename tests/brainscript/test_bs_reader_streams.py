"""A reader block's streams against the data and the job: a CTF input the file does not give
(a tag spelled otherwise than the block's name or ``alias``) is one error naming the data file
and line, the input and the reader block, as cntk.exe's TextParser::LoadSequence refuses it
("Input ('x') is empty in sequence ... Malformed input file. Bailing out."), never an empty
sequence trained on as zeros."""

from __future__ import annotations

import pytest

from stadyn._errors import ConfigError, DataError
from stadyn.brainscript import parse_config, reader_config
from stadyn.brainscript._readers import make_source

# sequences (ids in column 1): the labels on a sequence's first line only, as CNTK's examples
_SEQUENCES = "0 |feats 1 2 |y 0 1\n0 |feats 3 4\n1 |feats 5 6 |y 1 0\n"


def _reader(path, streams: str):
    return reader_config(parse_config(
        f'reader = {{ readerType = "CNTKTextFormatReader" ; file = "{path}"\n'
        f'    randomize = false\n    input = {{ {streams} }} }}', "job.cntk")["reader"])


@pytest.mark.parametrize("streams, named", [
    ("features = { dim = 2 ; format = \"dense\" } ; y = { dim = 2 ; format = \"dense\" }",
     "'features'"),
    ("features = { dim = 2 ; alias = \"f\" ; format = \"dense\" } ; "
     "y = { dim = 2 ; format = \"dense\" }",
     "'f' (stream 'features')"),
])
def test_a_ctf_input_the_file_does_not_give_is_an_error(tmp_path, streams, named):
    data = tmp_path / "seq.txt"
    data.write_text(_SEQUENCES)
    with pytest.raises(DataError) as info:
        make_source(_reader(data, streams)).next_minibatch(4)
    e = info.value
    assert (e.path, e.line) == (str(data), 1)
    assert f"input {named} is empty in sequence '0'" in e.reason
    assert "reader block at job.cntk:1" in e.reason


def test_the_right_names_and_an_alias_read_the_file(tmp_path):
    data = tmp_path / "seq.txt"
    data.write_text(_SEQUENCES)
    mb = make_source(_reader(data, "x = { dim = 2 ; alias = \"feats\" ; format = \"dense\" } ; "
                                   "y = { dim = 2 ; format = \"dense\" }")).next_minibatch(4)
    assert mb["x"].data[0].tolist() == [[1, 2], [3, 4]]
    assert mb["x"].data[1][:1].tolist() == [[5, 6]]


@pytest.mark.parametrize("kind", ["reader", "list"])
def test_an_input_without_format_is_cntk_exes_error(tmp_path, kind):
    # TextConfigHelper.cpp:63-67: an input's own block must give "dim" and "format" (for a
    # CNTKTextFormatReader and a CNTKTextFormatDeserializer alike); at 2477301f Stadyn read it
    # as dense
    data = tmp_path / "seq.txt"
    data.write_text(_SEQUENCES)
    streams = "x = { dim = 2 ; format = \"dense\" } ; y = { dim = 2 }"
    reader = _reader(data, streams) if kind == "reader" else reader_config(parse_config(
        f'reader = {{ randomize = false ; deserializers = ({{ type = "CNTKTextFormatDeserializer"'
        f' ; file = "{data}" ; input = {{ {streams} }} }}) }}', "job.cntk")["reader"])
    with pytest.raises(ConfigError, match="stream 'y' needs a 'format'.*\"dim\" and \"format\""):
        make_source(reader)
