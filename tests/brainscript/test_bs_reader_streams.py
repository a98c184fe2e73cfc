"""A reader block's streams against the data and the job: a CTF input the file does not give
(a tag spelled otherwise than the block's name or ``alias``) is one error naming the data file
and line, the input and the reader block, as cntk.exe's TextParser::LoadSequence refuses it
("Input ('x') is empty in sequence ... Malformed input file. Bailing out."), never an empty
sequence trained on as zeros."""

from __future__ import annotations

import pytest

from stadyn._errors import DataError
from stadyn.brainscript import parse_config, reader_config
from stadyn.brainscript._readers import make_source

# sequences (ids in column 1): the labels on a sequence's first line only, as CNTK's examples
_SEQUENCES = "0 |feats 1 2 |y 0 1\n0 |feats 3 4\n1 |feats 5 6 |y 1 0\n"


def _reader(path, streams: str):
    return reader_config(parse_config(
        f'reader = {{ readerType = "CNTKTextFormatReader" ; file = "{path}"\n'
        f'    randomize = false\n    input = {{ {streams} }} }}', "job.cntk")["reader"])


@pytest.mark.parametrize("streams, named", [
    ("features = { dim = 2 } ; y = { dim = 2 }", "'features'"),
    ("features = { dim = 2 ; alias = \"f\" } ; y = { dim = 2 }", "'f' (stream 'features')"),
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
    mb = make_source(_reader(data, "x = { dim = 2 ; alias = \"feats\" } ; y = { dim = 2 }")) \
        .next_minibatch(4)
    assert mb["x"].data[0].tolist() == [[1, 2], [3, 4]]
    assert mb["x"].data[1][:1].tolist() == [[5, 6]]
