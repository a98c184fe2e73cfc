"""CNTK Text Format: dense and sparse inputs, comments, sequences, errors."""

from __future__ import annotations

import numpy as np
import pytest

from stadyn._errors import DataError
from stadyn.io import CTFDeserializer, StreamDef, StreamDefs

STREAMS = StreamDefs(features=StreamDef(field="x", shape=3),
                     labels=StreamDef(field="y", shape=4, is_sparse=True))


def rows(ctf: CTFDeserializer, name: str) -> list:
    return [ctf.read(i)[name].tolist() for i in range(len(ctf))]


def test_dense_sparse_tabs_comments_and_unknown_inputs():
    text = (b"|x 1 2 3 |y 2:1\n"
            b"|# a comment |# with an escaped pipe\t|x\t-4.5 5e1 0.5 |y 0:0.5 3:2\n"
            b"|z 9 9 |x 7 8 9 |y\n")        # unknown input z is skipped; empty sparse y
    ctf = CTFDeserializer.from_bytes(text, STREAMS)
    assert len(ctf) == 3 and ctf.sequence_lengths() is None
    assert rows(ctf, "features") == [[1, 2, 3], [-4.5, 50, 0.5], [7, 8, 9]]
    assert rows(ctf, "labels") == [[0, 0, 1, 0], [0.5, 0, 0, 2], [0, 0, 0, 0]]
    # no sequence ids: each line's number counted from 0, CNTK's key (IndexBuilder.cpp:273)
    assert ctf.keys() == ["0", "1", "2"]


def test_file_and_bytes_agree(tmp_path):
    text = b"|x 1 2 3 |y 1:1\n|x 4 5 6 |y 2:1\n"
    (tmp_path / "a.ctf").write_bytes(text)
    from_file = CTFDeserializer(tmp_path / "a.ctf", STREAMS)
    batch = from_file.read_batch([1, 0], [None, None])
    assert batch["features"].data.tolist() == [[4, 5, 6], [1, 2, 3]]
    assert batch["labels"].data.tolist() == [[0, 0, 1, 0], [0, 1, 0, 0]]
    assert from_file.stream_specs()["labels"].is_sparse


def test_sequence_ids_group_consecutive_lines():
    text = (b"0 |x 1 1 1 |y 0:1\n"
            b"0 |x 2 2 2\n"
            b"0\t|x 3 3 3\n"
            b"5 |x 4 4 4 |y 1:1\n"
            b"7 |y 2:1\n")
    ctf = CTFDeserializer.from_bytes(text, STREAMS)
    assert len(ctf) == 3 and ctf.keys() == ["0", "5", "7"]
    assert ctf.sequence_lengths().tolist() == [3, 1, 1]
    batch = ctf.read_batch([0, 1], [None] * 2)
    x, y = batch["features"], batch["labels"]
    assert x.data.shape == (2, 3, 3) and x.lengths.tolist() == [3, 1]
    assert x.data[0, :, 0].tolist() == [1, 2, 3] and x.data[1, 1:].sum() == 0
    assert y.lengths.tolist() == [1, 1] and y.data[:, 0].tolist() == [[1, 0, 0, 0],
                                                                     [0, 1, 0, 0]]
    # CNTK 2.7 (TextParser::LoadSequence): "Input ('x') is empty in sequence ... Malformed
    # input file" -- a sequence without an input is an error, not an empty sequence
    with pytest.raises(DataError, match=r"<bytes>:5: input 'x' \(stream 'features'\) is empty "
                                        r"in sequence '7'"):
        ctf.read_batch([2], [None])


@pytest.mark.parametrize("line,words", [
    (b"|x 1 2 3 4 |y 0:1", "dense with dim 3 but has 4"),
    (b"|x 1 2 three |y 0:1", "'three' is not a number"),
    (b"|x 1 2 3 |y 4:1", "index 4 is outside 0..3"),
    (b"|x 1 2 3 |y 2", "expected index:value"),
    (b"|x 1 2 3 |y 1:one", "'one' is not a number"),
    (b"|x 1 2 3", "'y' is missing"),
    (b"|x 1 2 3 |y 1:1 |x 1 2 3", "is given twice on this line"),
    (b"| 1 2 3 |y 1:1", "followed by an input name"),
    (b"|x 1 2 3 |y 1:1 \xff", "not UTF-8"),
    (b"|x 1_0 2 3 |y 0:1", "'1_0' is not a number"),            # Python's float() takes it
    (b"|x 1 2 3 |y 0:1_0", "'1_0' is not a number"),
    (b"|x \xd9\xa1 2 3 |y 0:1", "is not a number"),              # an Arabic-Indic digit one
])
def test_malformed_lines_name_file_and_line(tmp_path, line, words):
    path = tmp_path / "bad.ctf"
    path.write_bytes(b"|x 0 0 0 |y 0:1\n" * 2 + line + b"\n|x 0 0 0 |y 0:1\n")
    ctf = CTFDeserializer(path, STREAMS)
    with pytest.raises(DataError) as err:
        ctf.read(2)
    assert (err.value.path, err.value.line) == (str(path), 3)
    assert words in str(err.value)
    assert "bad.ctf:3: " in str(err.value)


# Values and float32 bit patterns CNTK 2.7's CTFDeserializer gave for "|x <token> 7" (run on
# CNTK 2.7 with MinibatchSource(CTFDeserializer(...)).next_minibatch); CNTK's grammar is
# TextParser::TryReadRealNumber: [+-]digits[.[digits]][e[+-]digits], the exponent only after
# the digits or a fraction.
CNTK_NUMBERS = [
    ("1e5", 1203982336), ("+3", 1077936128), ("1.", 1065353216), ("1E-2", 1008981770),
    ("-1.5e+2", 3272998912), ("0.1", 1036831949), ("3.14159265358979", 1078530011),
    ("1e40", 2139095040), ("1e-50", 0), ("00012", 1094713344),
    ("123456789012345678901234567890", 1875342472),
    ("1.000000059604644775390625", 1065353216), ("2.5e-3", 992204554),
]
# Tokens CNTK 2.7 refused ("Reached the maximum number of allowed errors").
CNTK_NOT_NUMBERS = ["-.5", ".5", "1e", "1.e5", "nan", "NaN", "inf", "Inf", "-inf", "Infinity",
                    "0x10", "1x", "1,2", "1_0"]


def test_a_short_dense_sample_is_filled_with_zeros_as_cntk_does():
    # CNTK 2.7 on "|x 1 |y 0:1", "|x |y 0:1", "|y 0:1 |x 5" (dim 3) gave [1, 0, 0], [0, 0, 0],
    # [5, 0, 0] with "WARNING: A dense sample ... has a sparse suffix"; "|x 1 2 3 4" it refused
    text = b"|x 1 |y 0:1\n|x |y 0:1\n|y 0:1 |x 5\n"
    with pytest.warns(UserWarning, match=r"<bytes>:1: input 'x' is dense with dim 3 but has 1"):
        ctf = CTFDeserializer.from_bytes(text, STREAMS)
        assert rows(ctf, "features") == [[1, 0, 0], [0, 0, 0], [5, 0, 0]]


@pytest.mark.parametrize("token,bits", CNTK_NUMBERS)
def test_numbers_as_cntk_reads_them(token, bits):
    streams = StreamDefs(x=StreamDef(field="x", shape=2), y=StreamDef(field="y", shape=2,
                                                                       is_sparse=True))
    ctf = CTFDeserializer.from_bytes(f"|x {token} 7 |y 1:{token}\n".encode(), streams)
    x, y = ctf.read(0)["x"], ctf.read(0)["y"]
    assert x.view(np.uint32).tolist() == [bits, 1088421888]   # 7.0
    assert y.view(np.uint32).tolist() == [0, bits]


@pytest.mark.parametrize("token", CNTK_NOT_NUMBERS)
@pytest.mark.parametrize("sparse", [False, True])
def test_values_cntk_refuses_name_file_and_line(tmp_path, token, sparse):
    # Before, nan/inf/Infinity/.5 were read (Python's float() takes them); CNTK 2.7 stops.
    path = tmp_path / "bad.ctf"
    line = f"|x {token} 2 3 |y 0:1" if not sparse else f"|x 1 2 3 |y 0:{token}"
    path.write_text("|x 0 0 0 |y 0:1\n" + line + "\n")
    ctf = CTFDeserializer(path, STREAMS)
    with pytest.raises(DataError, match="is not a number") as err:
        ctf.read(1)
    assert (err.value.path, err.value.line) == (str(path), 2)
    assert f"value {token!r} is not a number" in str(err.value)


@pytest.mark.parametrize("text,line", [
    (b"|x 1 2 3 |y 0:1\nhello world\n|x 4 5 6 |y 1:1\n", 2),      # lines start with '|'
    (b"0 |x 1 2 3 |y 0:1\n\n1 |x 4 5 6 |y 1:1\nhello world\n", 4),  # lines with ids
])
def test_text_on_a_line_without_bar_is_an_error_when_made(tmp_path, text, line):
    path = tmp_path / "nobar.ctf"
    path.write_bytes(text)
    with pytest.raises(DataError) as err:
        CTFDeserializer(path, STREAMS)
    assert (err.value.path, err.value.line) == (str(path), line)
    assert str(err.value).startswith(f"{path}:{line}: unexpected text 'hello world'")


def test_blank_and_comment_lines_are_rows_as_cntk_counts_them():
    # CNTK 2.7's indexer makes every line after the file's leading white space a row: without
    # ids a blank or comment-only line is a sequence without inputs (an error when read); with
    # ids it is a row of the sequence before it (tests/io/test_ctf_edges.py has CNTK's values)
    ctf = CTFDeserializer.from_bytes(b"\n \n|x 1 2 3 |y 0:1\n|# note\n|x 4 5 6 |y 1:1\n",
                                     STREAMS)
    assert ctf.keys() == ["2", "3", "4"]     # (lines 3-5: CNTK's keys count from 0)
    assert [ctf.read(i)["features"].tolist() for i in (0, 2)] == [[1, 2, 3], [4, 5, 6]]
    with pytest.raises(DataError, match="<bytes>:4: input 'x' is missing from this line"):
        ctf.read(1)
    ctf = CTFDeserializer.from_bytes(b"0 |x 1 2 3 |y 0:1\n1 |x 4 5 6 |y 1:1\n\t\n", STREAMS)
    assert ctf.keys() == ["0", "1"] and ctf.sequence_lengths().tolist() == [1, 2]
    with pytest.raises(DataError, match="<bytes>:3: no input of the streams on this line"):
        ctf.read(1)
    with pytest.raises(DataError, match="<bytes>:1: input 'x' is missing from this line"):
        CTFDeserializer.from_bytes(b"|# only a comment\n\n|# another\n", STREAMS)
    # the error says why a blank line is a sample at all
    blank_last = CTFDeserializer.from_bytes(b"|x 1 2 3 |y 0:1\n \n", STREAMS)
    with pytest.raises(DataError, match="<bytes>:2: input 'x' is missing from this line: it is "
                       "blank or only a comment, and CNTK 2.7 counts every line as a sample"):
        blank_last.read(1)


def test_utf8_byte_order_mark_is_skipped(tmp_path):
    path = tmp_path / "bom.ctf"
    path.write_bytes(b"\xef\xbb\xbf0 |x 1 2 3 |y 0:1\n0 |x 4 5 6\n1 |x 7 8 9 |y 2:1\n")
    ctf = CTFDeserializer(path, STREAMS)
    assert ctf.keys() == ["0", "1"] and ctf.sequence_lengths().tolist() == [2, 1]
    assert ctf.read(0)["features"].tolist() == [[1, 2, 3], [4, 5, 6]]
    no_ids = CTFDeserializer.from_bytes(b"\xef\xbb\xbf|x 1 2 3 |y 0:1\n|x 4 5 6 |y 1:1\n",
                                        STREAMS)
    assert no_ids.keys() == ["0", "1"] and rows(no_ids, "features") == [[1, 2, 3], [4, 5, 6]]


@pytest.mark.parametrize("content", [b"", b"\n\n", b" \r\n\t\n", b"\xef\xbb\xbf"])
def test_file_without_samples_is_an_error_when_made(tmp_path, content):
    path = tmp_path / "empty.ctf"
    path.write_bytes(content)
    with pytest.raises(DataError) as err:
        CTFDeserializer(path, STREAMS)
    assert err.value.path == str(path) and str(err.value).startswith(f"{path}: no samples")
    assert "holds only white space" in str(err.value)
    with pytest.raises(DataError, match="^<bytes>: no samples"):
        CTFDeserializer.from_bytes(content, STREAMS)


def test_text_before_the_first_bar_in_a_file_without_ids():
    # a line not starting with digits continues the sequence before it (CNTK 2.7's numeric
    # ids), and its text before the '|' is the error when the sequence is read
    ctf = CTFDeserializer.from_bytes(b"0 |x 1 2 3 |y 0:1\njunk here |x 1 2 3 |y 0:1\n", STREAMS)
    assert len(ctf) == 1 and ctf.sequence_lengths().tolist() == [2]
    with pytest.raises(DataError, match=r"<bytes>:2: unexpected text 'junk here'"):
        ctf.read(0)


def test_first_sequence_is_checked_when_made_and_missing_files(tmp_path):
    # a malformed input (one maxErrors counts) in the first sequence is an error when it is
    # read, not when the deserializer is made: CNTK 2.7 sets maxErrors after that
    # (d["maxErrors"] = n, test_ctf_max_errors.py); an input missing from it fails at once
    first_bad = CTFDeserializer.from_bytes(b"|x 1 2 3 4 |y 0:1\n", STREAMS)
    with pytest.raises(DataError, match="<bytes>:1: input 'x' is dense with dim 3 but has 4"):
        first_bad.read(0)
    with pytest.raises(DataError, match="<bytes>:1: input 'y' is missing from this line"):
        CTFDeserializer.from_bytes(b"|x 1 2 3 |z 0:1\n", STREAMS)
    with pytest.raises(DataError, match="does not exist"):
        CTFDeserializer(tmp_path / "none.ctf", STREAMS)
    with pytest.raises(ValueError, match="needs a shape"):
        CTFDeserializer.from_bytes(b"", StreamDefs(x=StreamDef(field="x")))


def test_multi_dimensional_dense_shape():
    ctf = CTFDeserializer.from_bytes(b"|img " + b" ".join(b"%d" % v for v in range(12)) + b"\n",
                                     StreamDefs(img=StreamDef(shape=(3, 2, 2))))
    assert np.array_equal(ctf.read(0)["img"], np.arange(12).reshape(3, 2, 2))


@pytest.mark.parametrize("workers", [0, 1])
def test_stored_zeros_reach_the_minibatch(tmp_path, workers):
    # CNTK 2.7's reader keeps a sparse input's "3:0" as an entry (TextParser.cpp:860-861), and
    # "1:2 1:-2" too; the minibatch carries where they are (its trainer's row-sparse gradient
    # has their rows: tests/compat case sparse_37__ctf_stored_zero)
    from stadyn.io import MinibatchSource
    (tmp_path / "a.ctf").write_bytes(b"0 |x 1 2 3 |y 2:1 3:0\n"
                                     b"1 |x 4 5 6 |y 1:2 1:-2\n"
                                     b"2 |x 7 8 9 |y 0:1\n")
    src = MinibatchSource(CTFDeserializer(tmp_path / "a.ctf", STREAMS), randomize=False,
                          max_sweeps=1, num_workers=workers)
    first, second = src.next_minibatch(2), src.next_minibatch(2)
    assert first["labels"].data.tolist() == [[0, 0, 1, 0], [0, 0, 0, 0]]
    assert first["labels"].stored.tolist() == [[False, False, False, True],
                                               [False, True, False, False]]
    assert second["labels"].stored is None and first["features"].stored is None


def test_stored_zeros_of_sequences_are_padded_with_the_data():
    ctf = CTFDeserializer.from_bytes(b"0 |y 1:0\n0 |y 2:1\n1 |y 0:1\n",
                                     StreamDefs(labels=StreamDef(field="y", shape=4,
                                                                 is_sparse=True)))
    batch = ctf.read_batch([1, 0], [None, None])["labels"]
    assert batch.lengths.tolist() == [1, 2]
    assert batch.stored.tolist() == [[[False] * 4, [False] * 4],
                                     [[False, True, False, False], [False] * 4]]
    assert batch.take(0, 1).stored.shape == (1, 1, 4)
