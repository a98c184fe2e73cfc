"""A label stream of cntk.exe's readers given ``mlfFile`` and ``labelDim`` but no
``labelMappingFile`` (TIMIT_TrainMultiTask's ``regions``): cntk.exe then reads each MLF line as
exactly four columns ``start end name id`` whose ``id`` is the class id (HTKMLFReader.cpp:222
passes an empty state list, htkfeatio.h:876-884 ``htkmlfentry::parse``; the HTKDeserializers'
MLFDeserializer.cpp:377 with MLFUtils.cpp:86-93 the same), another column count an error.
The expected labels are the files' fourth columns, read by hand."""

from __future__ import annotations

import numpy as np
import pytest

from stadyn import io
from stadyn._errors import DataError
from stadyn.brainscript import parse_config, reader_config
from stadyn.brainscript._readers import make_source

_READERS = {
    "HTKMLFReader": (
        'r = [ readerType = "HTKMLFReader" ; readMethod = "none" ; frameMode = true\n'
        '  features = [ dim = 2 ; scpFile = "f.scp" ; type = "real" ]\n'
        '  labels = [ mlfFile = "l.mlf" ; labelMappingFile = "s.txt" ; labelDim = 2\n'
        '             labelType = "category" ]\n'
        '  regions = [ mlfFile = "r.mlf" ; labelDim = 8 ; labelType = "category" ] ]'),
    "HTKDeserializers": (
        'r = [ randomize = false ; frameMode = true\n'
        '  deserializers = ([ type = "HTKFeatureDeserializer" ; module = "HTKDeserializers"\n'
        '      input = [ features = [ dim = 2 ; scpFile = "f.scp" ] ] ]\n'
        '    : [ type = "HTKMLFDeserializer" ; module = "HTKDeserializers"\n'
        '      input = [ labels = [ mlfFile = "l.mlf" ; labelMappingFile = "s.txt"\n'
        '                           labelDim = 2 ] ] ]\n'
        '    : [ type = "HTKMLFDeserializer" ; module = "HTKDeserializers"\n'
        '      input = [ regions = [ mlfFile = "r.mlf" ; labelDim = 8 ] ] ]) ]'),
}


def _files(tmp_path, regions):
    io.write_htk_features(tmp_path / "f.htk", np.arange(16, dtype=np.float32).reshape(8, 2))
    (tmp_path / "f.scp").write_text("u0=f.htk[0,4]\nu1=f.htk[5,7]\n")
    (tmp_path / "s.txt").write_text("a\nb\n")
    (tmp_path / "l.mlf").write_text('#!MLF!#\n"u0.lab"\n0 500000 a\n.\n"u1.lab"\n0 300000 b\n.\n')
    (tmp_path / "r.mlf").write_text(regions)


@pytest.mark.parametrize("reader", sorted(_READERS))
def test_a_label_stream_without_a_state_list_reads_class_ids(tmp_path, monkeypatch, reader):
    # before: ConfigError "stream 'regions' needs 'labelDim', 'mlfFile' (or 'mlfFileList') and
    # 'labelMappingFile'" (the config survey's TIMIT_TrainMultiTask_ndl_deprecated)
    monkeypatch.chdir(tmp_path)
    _files(tmp_path, '#!MLF!#\n"u0.lab"\n0 200000 dr7 7\n200000 500000 dr2 2\n.\n'
                     '"u1.lab"\n0 300000 dr0 0\n.\n')
    source = make_source(reader_config(parse_config(_READERS[reader])["r"]), max_sweeps=1)
    mb = source.next_minibatch(8)
    regions = mb["regions"].data.reshape(8, 8)
    # the 4th columns: u0 frames 0-1 class 7, 2-4 class 2; u1 frames 0-2 class 0
    assert regions.argmax(1).tolist() == [7, 7, 2, 2, 2, 0, 0, 0]
    assert regions.sum(1).tolist() == [1.0] * 8
    assert mb["labels"].data.reshape(8, 2).argmax(1).tolist() == [0] * 5 + [1] * 3


@pytest.mark.parametrize("line, message", [("0 500000 dr7", "expected 4 columns"),
                                           ("0 500000 dr7 7 x", "expected 4 columns"),
                                           ("0 500000 dr7 seven", "cannot read the class id")])
def test_another_column_count_is_an_error_naming_the_line(tmp_path, monkeypatch, line, message):
    # cntk.exe: "htkmlfentry: currently we only support 4-column format" (a RuntimeError)
    monkeypatch.chdir(tmp_path)
    _files(tmp_path, f'#!MLF!#\n"u0.lab"\n{line}\n.\n"u1.lab"\n0 300000 dr0 0\n.\n')
    with pytest.raises(DataError, match=message) as err:
        make_source(reader_config(parse_config(_READERS["HTKMLFReader"])["r"]), max_sweeps=1)
    assert isinstance(err.value, RuntimeError) and err.value.line == 3
    assert str(err.value.path).endswith("r.mlf")


def test_the_python_deserializer_still_needs_a_state_list(tmp_path):
    # what from_class_ids reads is cntk.exe's BrainScript reading only: CNTK 2.7's Python
    # HTKMLFDeserializer refuses an empty label mapping file (a ValueError), and so does
    # Stadyn's constructor still
    _files(tmp_path, '#!MLF!#\n"u0.lab"\n0 500000 dr7 7\n.\n')
    with pytest.raises(ValueError, match="label mapping file"):
        io.HTKMLFDeserializer("", io.StreamDefs(y=io.StreamDef(shape=8,
                                                               mlf=str(tmp_path / "r.mlf"))))
