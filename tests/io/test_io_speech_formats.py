"""HTK features, MLF labels, the CNTK binary format and base64 images: values by hand, and one
clear error (file and line, or record) for each kind of bad file.  Their minibatches are compared
with CNTK 2.7's in tests/compat (cases in compat_cases/cntk_io_formats.py)."""

from __future__ import annotations

import base64
import os
import struct
import sys

import numpy as np
import pytest

from stadyn._errors import DataError
from stadyn.io import (Base64ImageDeserializer, CBFDeserializer, HTKFeatureDeserializer,
                       HTKMLFDeserializer, MinibatchSource, StreamDef, StreamDefs, encode_image,
                       read_htk_features, read_htk_header, write_cbf, write_htk_features)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "compat"))
from compat_cases import cntk_io_formats as cases  # noqa: E402


def _speech(tmp_path, scp_text, mlf_text=None, states="a\nb\nc\n"):
    write_htk_features(tmp_path / "f.htk", np.arange(12, dtype=np.float32).reshape(6, 2))
    (tmp_path / "f.scp").write_text(scp_text.replace("F", str(tmp_path / "f.htk")))
    (tmp_path / "s.txt").write_text(states)
    if mlf_text is not None:
        (tmp_path / "l.mlf").write_text(mlf_text)
    return str(tmp_path / "f.scp"), str(tmp_path / "l.mlf"), str(tmp_path / "s.txt")


def _features(scp, **kw):
    return HTKFeatureDeserializer(StreamDefs(x=StreamDef(shape=kw.pop("shape", 2), scp=scp,
                                                         **kw)))


def _labels(mlf, states, dim=3, **kw):
    return HTKMLFDeserializer(states, StreamDefs(y=StreamDef(shape=dim, mlf=mlf)), **kw)


def test_htk_frames_keys_and_labels_by_hand(tmp_path):
    mlf = '#!MLF!#\n"*/u1.lab"\n0 100000 b\n100000 300000 c x y\n.\n"u2.lab"\n0 1 a\n.\n'
    scp, mlf, states = _speech(tmp_path, "u2.mfc=F[4,4]\nu1=F[1,3]\n", mlf)
    feats, labels = _features(scp), _labels(mlf, states)
    assert feats.keys() == ["u2", "u1"] and feats.sequence_lengths().tolist() == [1, 3]
    assert feats.read(1)["x"].tolist() == [[2, 3], [4, 5], [6, 7]]
    assert labels.read(labels.keys().index("u1"))["y"].tolist() == [[0, 1, 0], [0, 0, 1],
                                                                     [0, 0, 1]]
    src = MinibatchSource([feats, labels], randomize=False, max_sweeps=1)
    mb = src.next_minibatch(10)
    assert mb["x"].lengths.tolist() == [1, 3] and mb["y"].data[0, 0].tolist() == [1, 0, 0]
    boundaries = _labels(mlf, states, phoneBoundaries=True)
    assert boundaries.read(boundaries.keys().index("u1"))["y"][:, 1:].tolist() == \
        [[2, 0], [0, 2], [0, 1]]


@pytest.mark.parametrize("scp, words, line", [
    ("u1=F[0,2]\nu2=F\n", "no frame range", 2),
    ("u1=F[0,x]\n", "not two integers", 1),
    ("u1=F[3,1]\n", "before the first", 1),
    ("F[0,1]\n", "expected key=path", 1),
    ("u1=F[2,9]\n", "which has 6", 1),
])
def test_bad_script_lines_name_script_and_line(tmp_path, scp, words, line):
    scp, _, _ = _speech(tmp_path, scp)
    with pytest.raises(DataError, match=words) as info:
        _features(scp).read(0)
    assert info.value.path == scp and info.value.line == line


def test_bad_htk_files_name_the_file(tmp_path):
    (tmp_path / "short.htk").write_bytes(b"\0\0\0\5")
    with pytest.raises(DataError, match="shorter than the 12-byte header") as info:
        read_htk_header(tmp_path / "short.htk")
    assert info.value.path == str(tmp_path / "short.htk")
    (tmp_path / "cut.htk").write_bytes(struct.pack(">iihh", 10, 100000, 8, 9) + b"\0" * 16)
    with pytest.raises(DataError, match="truncated: the header declares 10 frames"):
        read_htk_header(tmp_path / "cut.htk")
    (tmp_path / "vq.htk").write_bytes(struct.pack(">iihh", 1, 100000, 4, 9 | 0o40000) + b"\0" * 4)
    with pytest.raises(DataError, match="VQ"):
        read_htk_header(tmp_path / "vq.htk")
    scp, _, _ = _speech(tmp_path, "u1=F[0,5]\n")
    with pytest.raises(DataError, match="shape 4 is 2 frames of 2, which is no symmetric"):
        _features(scp, shape=4)
    with pytest.raises(DataError, match="with context"):
        _features(scp, shape=6, context=(1, 1))


def test_compressed_little_endian_file_decodes(tmp_path):
    frames = np.array([[0.5, -1.0], [0.25, 2.0], [0.0, 1.0]], np.float32)
    cases._write_htk(str(tmp_path / "c.htk"), frames, compressed=True, little_endian=True)
    header = read_htk_header(tmp_path / "c.htk")
    assert (header.frames, header.compressed, header.big_endian) == (3, True, False)
    np.testing.assert_allclose(read_htk_features(tmp_path / "c.htk"), frames, atol=1e-4)


@pytest.mark.parametrize("mlf, words, line", [
    ('#!MLF!#\n"u1.lab"\n0 2 a\n3 4 b\n.\n', "not consecutive", 4),
    ('#!MLF!#\n"u1.lab"\n1 2 a\n.\n', "must start at frame 0", 3),
    ('#!MLF!#\n"u1.lab"\n0 2 zz\n.\n', "'zz' is not in the label mapping file", 3),
    ('#!MLF!#\n"u1.lab"\n0 x a\n.\n', "cannot read the frame range", 3),
    ('#!MLF!#\nu1.lab\n0 2 a\n.\n', "quoted utterance name", 2),
    ('#!MLF!#\n"u1.lab"\n0 2\n.\n', "start end state", 3),
    ('#!MLF!#\n"u1.lab"\n0 2 a\n', "not closed", 2),
    ('#!MLF!#\n"u1.lab"\n0 2 c\n.\n', "class id 2 is outside the stream's 2 classes", 3),
    ('#!MLF!#\n"u1.lab"\n0 1e15 a\n.\n', "past 16777216 frames", 3),
])
def test_bad_mlf_lines_name_file_and_line(tmp_path, mlf, words, line):
    _, mlf_path, states = _speech(tmp_path, "u1=F[0,1]\n", mlf)
    with pytest.raises(DataError, match=words) as info:
        _labels(mlf_path, states, dim=2)
    assert info.value.path == mlf_path and info.value.line == line


def test_state_list_duplicates_and_missing_keys(tmp_path):
    scp, mlf, states = _speech(tmp_path, "u1=F[0,1]\nu2=F[2,3]\n",
                               '#!MLF!#\n"u1.lab"\n0 2 a\n.\n', states="a\nb\na\n")
    with pytest.raises(DataError, match="state 'a' appears twice") as info:
        _labels(mlf, states)
    assert info.value.line == 3
    (tmp_path / "s.txt").write_text("a\nb\n")
    with pytest.warns(UserWarning, match=r"no sequence for 1 of the 2 .*\('u2'\); they are "
                                         r"skipped"):
        source = MinibatchSource([_features(scp), _labels(mlf, states, dim=2)],
                                 randomize=False, max_sweeps=1)
    assert source.next_minibatch(2)[source.streams.x].num_sequences == 1


def test_utterance_without_mlf_label_is_skipped(tmp_path):
    # CNTK 2.7 on these files (HTKFeatureDeserializer + HTKMLFDeserializer, randomize=False,
    # next_minibatch(2) twice) gave one sequence each: u1's frames [[0, 1], [2, 3]], then u3's
    # [[8, 9], [10, 11]]; u2, without a label, is skipped (its Bundler marks it invalid, and
    # cntk.exe's HTKMLFReader skips it with "[no labels for u2]").
    scp, mlf, states = _speech(tmp_path, "u1=F[0,1]\nu2=F[2,3]\nu3=F[4,5]\n",
                               '#!MLF!#\n"u1.lab"\n0 2 a\n.\n"u3.lab"\n0 1 b\n1 2 a\n.\n',
                               states="a\nb\n")
    with pytest.warns(UserWarning, match=r"\('u2'\); they are skipped"):
        source = MinibatchSource([_features(scp), _labels(mlf, states, dim=2)],
                                 randomize=False, max_sweeps=1)
    got = []
    while True:
        mb = source.next_minibatch(2)
        if not mb:
            break
        assert mb[source.streams.x].num_sequences == 1
        got.append((np.asarray(mb[source.streams.x].asarray()).tolist(),
                    np.asarray(mb[source.streams.y].asarray()).argmax(-1).tolist()))
    assert got == [([[[0, 1], [2, 3]]], [[0, 0]]), ([[[8, 9], [10, 11]]], [[1, 0]])]
    (tmp_path / "l.mlf").write_text('#!MLF!#\n"u9.lab"\n0 2 a\n.\n')
    with pytest.raises(DataError, match="no sequence has a key that every deserializer has"), \
            pytest.warns(UserWarning):
        MinibatchSource([_features(scp), _labels(mlf, states, dim=2)])


def test_cbf_writer_is_the_layout_cntk_reads(tmp_path):
    """write_cbf's bytes equal those of the case's writer, whose files CNTK 2.7 reads (the
    cbf_sequences reference)."""
    rng = np.random.RandomState(0)
    x = [rng.randn(n, 3).astype(np.float32) for n in (1, 3, 2)]
    y = [(rng.rand(n, 5) < 0.3).astype(np.float32) * 0.5 for n in (1, 3, 2)]
    write_cbf(tmp_path / "ours.cbf", {"x": x, "y": y}, sparse=["y"], sequences_per_chunk=2)
    cases._write_cbf(str(tmp_path / "case.cbf"), [("x", False, x), ("y", True, y)], 2)
    assert (tmp_path / "ours.cbf").read_bytes() == (tmp_path / "case.cbf").read_bytes()
    des = CBFDeserializer(tmp_path / "ours.cbf", StreamDefs(labels=StreamDef(field="y")))
    assert sorted(des.stream_specs()) == ["labels", "x"] and len(des) == 3
    for i in range(3):
        np.testing.assert_array_equal(des.read(i)["x"], x[i])
        np.testing.assert_array_equal(des.read(i)["labels"], y[i])


def test_bad_cbf_files_name_the_file(tmp_path):
    path = tmp_path / "d.cbf"
    path.write_bytes(b"not a cbf file at all")
    with pytest.raises(DataError, match="no magic number") as info:
        CBFDeserializer(path)
    assert info.value.path == str(path)
    write_cbf(path, {"x": [np.ones((2, 3))]})
    data = path.read_bytes()
    path.write_bytes(data[:8] + struct.pack("<I", 2) + data[12:])
    with pytest.raises(DataError, match="CBF version 2"):
        CBFDeserializer(path)
    path.write_bytes(data[:-8] + struct.pack("<q", len(data) + 50))
    with pytest.raises(DataError, match="header offset .* is outside the file"):
        CBFDeserializer(path)
    header = struct.unpack("<q", data[-8:])[0]
    table = len(data) - 8 - 16      # the one chunk's (offset, sequences, samples)
    path.write_bytes(data[:table + 8] + struct.pack("<II", 2**31, 2) + data[table + 16:])
    with pytest.raises(DataError, match="declares 2147483648 sequences"):
        CBFDeserializer(path)
    assert header < table
    path.write_bytes(data)
    # CNTK 2.7's CBF stream definitions only rename (BinaryConfigHelper.cpp:30-50): a stream
    # naming an input the file lacks is left out and the file's x keeps its name, and a
    # declared shape gives way to the file's dimension (CNTK 2.7 by hand, a file of x of
    # dimension 1: StreamDefs(s=StreamDef(field='y', shape=1)) gives stream x of (1,),
    # StreamDefs(s=StreamDef(field='x', shape=3)) stream s of (1,); case ioerr39__declared)
    with pytest.warns(UserWarning, match="input 'z', which the file does not have"):
        d = CBFDeserializer(path, StreamDefs(z=StreamDef(shape=3)))
    assert {k: v.shape for k, v in d.stream_specs().items()} == {"x": (3,)}
    with pytest.warns(UserWarning, match="declares shape \\(4,\\), input 'x' has dimension 3"):
        d = CBFDeserializer(path, StreamDefs(s=StreamDef(field="x", shape=4)))
    assert {k: v.shape for k, v in d.stream_specs().items()} == {"s": (3,)}
    assert d.read(0)["s"].tolist() == np.ones((2, 3)).tolist()


def test_base64_images_and_bad_lines(tmp_path):
    image = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    text = base64.b64encode(encode_image(image)).decode()
    path = tmp_path / "b.txt"
    path.write_text(f"07\t2\t{text}\n\n8\t1\t{text}\n")
    des = Base64ImageDeserializer(path, StreamDefs(f=StreamDef(field="image"),
                                                   l=StreamDef(field="label", shape=3)))
    assert des.keys() == ["7", "8"] and des.labels.tolist() == [2, 1]
    sample = des.read(1)
    assert sample["f"].tolist() == image.transpose(2, 0, 1).tolist()    # BGR of a BGR-coded
    # CNTK 2.7 reads numeric sequence ids only (case io42__base64_sequence_ids symbolic_id)
    path.write_text(f"k1\t2\t{text}\n1\t{text}\n")
    with pytest.raises(DataError, match="expected a sequence id") as info:
        Base64ImageDeserializer(path)
    assert info.value.line == 1
    # without ids a line's image is all after its first tab (case io42__base64_sequence_ids
    # four_fields: CNTK 2.7 cannot decode it)
    path.write_text(f"0\t{text}\n1\t2\t3\t4\n")
    with pytest.raises(DataError, match="not valid base64") as info:
        Base64ImageDeserializer(path).read(1)
    assert info.value.line == 2
    path.write_text(f"x\t{text}\n")
    # (refused when read, as CNTK 2.7 refuses it: case io42__base64_sequence_ids word_label)
    with pytest.raises(DataError, match="label 'x' is not an integer") as info:
        Base64ImageDeserializer(path, StreamDefs(l=StreamDef(field="label", shape=2))).read(0)
    assert info.value.line == 1
    path.write_text(f"0\t{text}\n5\t{text}\n")
    # (checked when its chunk is first read, here the whole file: reading line 1 refuses
    # line 2, as CNTK 2.7 reads a chunk whole; case ioerr39__declared b64_label)
    des = Base64ImageDeserializer(path, StreamDefs(l=StreamDef(field="label", shape=2)))
    with pytest.raises(DataError, match="label 5 is outside the 2 classes") as info:
        des.read(0)
    assert info.value.line == 2
    path.write_text(f"0\t{text}\n1\t@@not base64@@\n")
    des = Base64ImageDeserializer(path, StreamDefs(f=StreamDef(field="image")))
    with pytest.raises(DataError, match="not valid base64") as info:
        des.read(1)
    assert info.value.line == 2 and info.value.path == str(path)


def test_frame_reads_equal_the_frames_of_whole_sequences(tmp_path):
    """read_steps (frame mode's direct reads) against the frames of read_batch, with context,
    phone boundaries and zero-length label ranges."""
    mlf = ('#!MLF!#\n"u1.lab"\n0 1 b\n1 1 a\n1 2 c\n.\n'
           '"u2.lab"\n0 2 a\n2 2 b\n2 4 c\n.\n')
    scp, mlf, states = _speech(tmp_path, "u1=F[0,1]\nu2=F[2,5]\n", mlf)
    for des in (_features(scp, context=(2, 1)), _labels(mlf, states, phoneBoundaries=True)):
        ids = np.array([1, 0, 1, 1, 0, 1])
        steps = np.array([3, 1, 0, 2, 0, 1])
        whole = des.read_batch(ids, [None] * 6)
        name = next(iter(whole))
        direct = des.read_steps(ids, steps, [None] * 6)[name].data
        np.testing.assert_array_equal(direct, whole[name].data[np.arange(6), steps])


def test_frame_mode_and_broadcast_by_hand(tmp_path):
    mlf = '#!MLF!#\n"u1.lab"\n0 1 b\n1 2 c\n.\n"u2.lab"\n0 3 a\n.\n'
    scp, mlf, states = _speech(tmp_path, "u1=F[0,1]\nu2=F[2,4]\n", mlf)
    src = MinibatchSource([_features(scp), _labels(mlf, states)], randomize=False,
                          max_sweeps=1, frame_mode=True)
    mb = src.next_minibatch(4)
    assert mb["x"].data.tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]] and mb["x"].lengths is None
    assert mb["y"].data.argmax(1).tolist() == [1, 2, 0, 0]
    htk = tmp_path / "f.htk"
    (tmp_path / "iv.scp").write_text(f"u2={htk}[5,5]\nu1={htk}[0,0]\n")
    ivec = HTKFeatureDeserializer(StreamDefs(iv=StreamDef(shape=2, scp=str(tmp_path / "iv.scp"),
                                                          broadcast=True)))
    mb = MinibatchSource([_features(scp), ivec], randomize=False).next_minibatch(5)
    assert mb["iv"].lengths.tolist() == [2, 3]
    assert mb["iv"].data.tolist() == [[[0, 1], [0, 1], [0, 0]], [[10, 11]] * 3]
    with pytest.raises(ValueError, match="first deserializer cannot be broadcast"):
        MinibatchSource([ivec, _features(scp)])


def test_cbf_sparse_input_too_wide_to_deliver_dense(tmp_path):
    path = tmp_path / "wide.cbf"
    write_cbf(path, {"y": [np.eye(3, dtype=np.float32)[:1]]}, sparse=["y"])
    data = bytearray(path.read_bytes())
    at = data.rindex(b"\x01\x00\x00\x00y") + 5      # name length 1, name, then type and dim
    data[at + 1:at + 5] = struct.pack("<I", 2**30)
    path.write_bytes(bytes(data))
    des = CBFDeserializer(path)
    with pytest.raises(DataError, match="too many values to deliver dense") as info:
        des.read(0)
    assert info.value.path == str(path)


def test_frame_mode_with_labels_shorter_than_the_features(tmp_path):
    mlf = '#!MLF!#\n"u1.lab"\n0 2 b\n.\n"u2.lab"\n0 2 a\n.\n'      # u2 has 3 feature frames
    scp, mlf, states = _speech(tmp_path, "u1=F[0,1]\nu2=F[2,4]\n", mlf)
    src = MinibatchSource([_features(scp), _labels(mlf, states)], randomize=False,
                          frame_mode=True)
    assert src.next_minibatch(4)["y"].data.argmax(1).tolist() == [1, 1, 0, 0]
    with pytest.raises(DataError, match="'u2' has 2 labelled frame\\(s\\); frame mode reads "
                                        "frame 2") as info:
        src.next_minibatch(1)
    assert info.value.path == mlf and info.value.line == 5


def test_an_utterance_another_streams_script_lacks_is_dropped_as_cntk_27_drops_it(tmp_path):
    # CNTK 2.7 (HTKFeatureDeserializer of streams a, b; b's script lists u3, u1 and not u2;
    # MinibatchSource(randomize=False), next_minibatch(1) until empty) delivered u1 (a: 3
    # frames of 1, b: 3 frames of 10) and u3 (5 frames of 3, of 30) and nothing of u2, without
    # a word; Stadyn drops it too, with a warning
    lines = {"a": [], "b": []}
    for k, frames in ((1, 3), (2, 4), (3, 5)):
        for stream, scale in (("a", 1), ("b", 10)):
            path = tmp_path / f"u{k}{stream}.htk"
            write_htk_features(str(path), np.full((frames, 1), k * scale, np.float32))
            lines[stream].append(f"u{k}={path}[0,{frames - 1}]\n")
    (tmp_path / "a.scp").write_text("".join(lines["a"]))
    (tmp_path / "b.scp").write_text(lines["b"][2] + lines["b"][0])
    with pytest.warns(UserWarning, match=r"1 utterance\(s\) of stream 'a' have no utterance of "
                                         r"that key in the script of stream 'b' .*first 'u2'"):
        d = HTKFeatureDeserializer(StreamDefs(a=StreamDef(shape=1, scp=str(tmp_path / "a.scp")),
                                              b=StreamDef(shape=1, scp=str(tmp_path / "b.scp"))))
    assert d.keys() == ["u1", "u3"]
    got = [d.read(i) for i in range(len(d))]
    assert [g["a"].ravel().tolist() for g in got] == [[1.0] * 3, [3.0] * 5]
    assert [g["b"].ravel().tolist() for g in got] == [[10.0] * 3, [30.0] * 5]
