"""LMSequenceDeserializer and word-class files: values by hand and errors that name the file
and line (the reader is checked on CNTK's Penn Treebank files in
tests/brainscript/test_bs_legacy_readers.py)."""

from __future__ import annotations

import numpy as np
import pytest

from stadyn import io
from stadyn._errors import DataError


def test_class_output_rows_by_hand(tmp_path):
    (tmp_path / "v.txt").write_text("0 9 </s> 0\n1 5 a 0\n2 3 b 1\n3 1 c 1\n4 1 d 2\n")
    (tmp_path / "t.txt").write_text("</s> d a c </s>\n")
    classes = io.read_word_classes(tmp_path / "v.txt")
    d = io.LMSequenceDeserializer(tmp_path / "t.txt", classes.ids, "w", 5, "y", output="class",
                                  classes=classes)
    # next words d, a, c, </s>: (word, class, first id of the class, one past its last)
    assert d.read(0)["y"].tolist() == [[4, 2, 4, 5], [1, 0, 0, 2], [3, 1, 2, 4], [0, 0, 0, 2]]
    assert d.read(0)["w"].argmax(-1).tolist() == [0, 4, 1, 3]
    # no output stream: every word is an input
    d = io.LMSequenceDeserializer(tmp_path / "t.txt", classes.ids, "w", 5, None, output="none")
    assert d.sequence_lengths().tolist() == [5] and list(d.stream_specs()) == ["w"]
    mb = io.MinibatchSource(d, randomize=False).next_minibatch(5)
    np.testing.assert_array_equal(mb["w"].data[0].argmax(-1), [0, 4, 1, 3, 0])


@pytest.mark.parametrize("text, words, line", [
    ("0 1 a 0\n1 1 b\n", "expected 4 fields", 2),
    ("0 1 a 0\nx 1 b 0\n", "with numbers", 2),
    ("0 1 a -1\n", "negative", 1),
    ("\n\n", "holds no words", None),
])
def test_bad_word_class_files_name_the_line(tmp_path, text, words, line):
    (tmp_path / "v.txt").write_text(text)
    with pytest.raises(DataError, match=words) as info:
        io.read_word_classes(tmp_path / "v.txt")
    assert info.value.line == line and info.value.path.endswith("v.txt")


def test_classes_out_of_order_and_bad_text(tmp_path):
    (tmp_path / "v.txt").write_text("0 1 a 1\n1 1 b 0\n")
    (tmp_path / "t.txt").write_text("a b a\n")
    classes = io.read_word_classes(tmp_path / "v.txt")
    with pytest.raises(DataError, match="numbered together"):
        io.LMSequenceDeserializer(tmp_path / "t.txt", classes.ids, "w", 2, "y", output="class",
                                  classes=classes)
    (tmp_path / "t.txt").write_text("a b\n\n")
    with pytest.raises(DataError, match="no sentence of 3 or more words"):
        io.LMSequenceDeserializer(tmp_path / "t.txt", classes.ids, "w", 2, "y")
    with pytest.raises(ValueError, match="input_dim 1 is too small"):
        io.LMSequenceDeserializer(tmp_path / "t.txt", classes.ids, "w", 1, "y")
