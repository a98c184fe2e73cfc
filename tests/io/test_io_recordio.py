"""MXNet RecordIO: framing byte for byte, indexes, image records, the RecordIODeserializer."""

from __future__ import annotations

import io
import struct

import cv2
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stadyn._errors import DataError
from stadyn.io import (IndexedRecordIO, IRHeader, ListEntry, RecordIODeserializer, RecordIOReader,
                       RecordIOWriter, StreamDef, StreamDefs, pack_image, pack_image_record,
                       read_idx_file, read_list_file, unpack_image, unpack_image_record,
                       write_list_file)
from stadyn.io import transforms as T
from stadyn.io._tools import dump_rec

MAGIC = b"\x0a\x23\xd7\xce"  # 0xCED7230A little-endian


def by_the_rules(payload: bytes) -> bytes:
    """The writer's output, spelled out: scan aligned words, split at each magic, pad to 4."""
    def part(cflag: int, data: bytes) -> bytes:
        pad = (4 - len(data) % 4) % 4
        return MAGIC + struct.pack("<I", (cflag << 29) | len(data)) + data + b"\0" * pad

    out, start, parts = b"", 0, 0
    for i in range(0, len(payload) - len(payload) % 4, 4):
        if payload[i:i + 4] == MAGIC:
            out += part(1 if parts == 0 else 2, payload[start:i])
            parts += 1
            start = i + 4
    return out + part(3 if parts else 0, payload[start:])


PAYLOADS = [
    b"", b"a", b"abcd", b"abcdefg",
    MAGIC,                                  # only the magic: empty first and last parts
    MAGIC + b"tail",                        # magic at offset 0
    b"head" + MAGIC + b"tail!",             # aligned magic at offset 4
    b"x" + MAGIC + b"yyy",                  # unaligned (1): not split
    b"xy" + MAGIC + b"zz",                  # unaligned (2)
    b"xyz" + MAGIC,                         # unaligned (3)
    MAGIC + MAGIC + b"12345678" + MAGIC,    # back to back, and at the very end
    b"abcdefgh" + MAGIC + b"\x01",          # aligned, 1 byte after
]


def test_worked_example_bytes():
    assert by_the_rules(b"abcde").hex(" ") == \
        "0a 23 d7 ce 05 00 00 00 61 62 63 64 65 00 00 00"
    assert by_the_rules(b"").hex(" ") == "0a 23 d7 ce 00 00 00 00"
    # 'head' MAGIC 'tail!' -> first part 'head' (cflag 1), last part 'tail!' (cflag 3)
    assert by_the_rules(b"head" + MAGIC + b"tail!").hex(" ") == (
        "0a 23 d7 ce 04 00 00 20 68 65 61 64 "
        "0a 23 d7 ce 05 00 00 60 74 61 69 6c 21 00 00 00")


@pytest.mark.parametrize("payload", PAYLOADS)
def test_writer_is_byte_identical_to_the_rules_and_reads_back(payload):
    buf = io.BytesIO()
    with RecordIOWriter(buf) as w:
        w.write(payload)
        w.write(b"next")
    assert buf.getvalue() == by_the_rules(payload) + by_the_rules(b"next")
    assert list(RecordIOReader(io.BytesIO(buf.getvalue()))) == [payload, b"next"]


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.binary(max_size=9), st.just(MAGIC)), max_size=8).map(b"".join))
def test_round_trip_property(payload):
    framed = by_the_rules(payload)
    buf = io.BytesIO()
    RecordIOWriter(buf).write(payload)
    assert buf.getvalue() == framed and len(framed) % 4 == 0
    assert RecordIOReader(io.BytesIO(framed)).read() == payload


def test_file_writer_is_atomic_and_idx_offsets(tmp_path):
    rec, idx = tmp_path / "a.rec", tmp_path / "a.idx"
    payloads = [b"p" * k for k in (0, 5, 8, 13)] + [b"ab" + MAGIC + MAGIC]
    with pytest.raises(RuntimeError):
        with IndexedRecordIO(idx, rec, "w") as w:
            w.write_idx(0, b"x")
            raise RuntimeError("interrupted")
    assert not rec.exists() and not idx.exists() and list(tmp_path.iterdir()) == []
    with IndexedRecordIO(idx, rec, "w") as w:
        for k, p in enumerate(payloads):
            w.write_idx(k * 10, p)
    expected, offset = [], 0
    for k, p in enumerate(payloads):
        expected.append((k * 10, offset))
        offset += len(by_the_rules(p))
    assert read_idx_file(idx) == expected
    assert idx.read_text() == "".join(f"{k}\t{o}\n" for k, o in expected)
    r = IndexedRecordIO(idx, rec, "r")
    assert r.keys == [0, 10, 20, 30, 40]
    assert [r.read_idx(k) for k in (40, 0, 20)] == [payloads[4], payloads[0], payloads[2]]
    r.close()


def test_seek_to_next_record_skips_middle_parts(tmp_path):
    payloads = [b"one", b"abcd" + MAGIC + b"efgh" + MAGIC + b"ij", MAGIC * 3, b"", b"last!"]
    buf = io.BytesIO()
    w = RecordIOWriter(buf)
    starts = [w.write(p) for p in payloads]
    data = buf.getvalue()
    reader = RecordIOReader(io.BytesIO(data))
    for offset in range(len(data) + 1):
        want = next((s for s in starts if s >= offset), len(data))
        assert reader.seek_to_next_record(offset) == want, offset
        if want < len(data):
            assert reader.read() == payloads[starts.index(want)]


@pytest.mark.parametrize("cut,words", [(3, "ends inside a record header"),
                                       (12, "truncated: a part of 13 bytes")])
def test_truncated_and_corrupt_files_name_the_record(tmp_path, cut, words):
    path = tmp_path / "t.rec"
    path.write_bytes(by_the_rules(b"first") + by_the_rules(b"second-record"))
    full = path.read_bytes()
    path.write_bytes(full[:len(by_the_rules(b"first")) + cut])
    reader = RecordIOReader(path)
    assert reader.read() == b"first"
    with pytest.raises(DataError) as err:
        reader.read()
    assert (err.value.path, err.value.record) == (str(path), 1) and words in str(err.value)
    assert "t.rec (record 1)" in str(err.value)
    with pytest.raises(DataError, match="record 1"):
        RecordIODeserializer(path)
    path.write_bytes(full[:16] + b"XXXX" + full[20:])  # the second record's magic
    with pytest.raises(DataError, match=r"record 1\).*bad magic 0x58585858"):
        list(RecordIOReader(path))


def test_split_record_interrupted_is_an_error():
    first_part = by_the_rules(b"abcd" + MAGIC + b"x")[:16]  # cflag-1 part only
    with pytest.raises(DataError, match="cut short by a new record"):
        list(RecordIOReader(io.BytesIO(first_part + by_the_rules(b"next"))))


# ----------------------------------------------------------------------------- IRHeader


def test_image_record_headers_single_and_multi_label():
    single = pack_image_record(IRHeader(0, 3.0, 7, 0), b"IMG")
    assert single == struct.pack("<IfQQ", 0, 3.0, 7, 0) + b"IMG"
    multi = pack_image_record(IRHeader(99, [1.5, 2, 3], 8, 1), b"IMG")
    assert multi == struct.pack("<IfQQ", 3, 0.0, 8, 1) + struct.pack("<3f", 1.5, 2, 3) + b"IMG"
    header, data = unpack_image_record(multi)
    assert (header.flag, header.label.tolist(), header.id, header.id2, data) == \
        (3, [1.5, 2, 3], 8, 1, b"IMG")
    with pytest.raises(DataError, match="shorter than its 24-byte header"):
        unpack_image_record(b"short")
    with pytest.raises(DataError, match="holds 5 labels"):
        unpack_image_record(struct.pack("<IfQQ", 5, 0, 0, 0) + b"abc")


def _write_rec(tmp_path, records):
    rec, idx = tmp_path / "im.rec", tmp_path / "im.idx"
    with IndexedRecordIO(idx, rec, "w") as w:
        for k, payload in enumerate(records):
            w.write_idx(k, payload)
    return rec, idx


def test_record_deserializer_png_and_jpeg_single_labels(tmp_path):
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (6, 5, 3), dtype=np.uint8) for _ in range(3)]
    smooth = np.full((16, 16, 3), (10, 120, 240), np.uint8)
    records = [pack_image(IRHeader(0, float(k), k, 0), img, img_fmt=".png")
               for k, img in enumerate(images)]
    records.append(pack_image(IRHeader(0, 1.0, 3, 0), smooth, quality=95, img_fmt=".jpg"))
    rec, idx = _write_rec(tmp_path, records)
    defs = StreamDefs(features=StreamDef(field="image"), labels=StreamDef(field="label", shape=3))
    for des in (RecordIODeserializer(rec, idx, defs), RecordIODeserializer(rec, None, defs)):
        assert len(des) == 4
        for k in range(3):
            sample = des.read(k)
            assert np.array_equal(sample["features"], images[k].transpose(2, 0, 1))  # BGR
            assert sample["labels"].tolist() == np.eye(3)[k].tolist()
        jpeg = des.read(3)["features"]
        assert np.abs(jpeg - smooth.transpose(2, 0, 1)).max() <= 3
    rgb = RecordIODeserializer(rec, idx, defs, channel_order="rgb").read(0)["features"]
    assert np.array_equal(rgb, images[0][:, :, ::-1].transpose(2, 0, 1))


def test_record_deserializer_multi_labels_and_errors(tmp_path):
    img = np.zeros((4, 4, 3), np.uint8)
    records = [pack_image(IRHeader(0, [0.5, 1, 2], k, 0), img, img_fmt=".png") for k in range(2)]
    records.append(pack_image(IRHeader(0, [1, 2], 2, 0), img, img_fmt=".png"))
    records.append(pack_image_record(IRHeader(0, 1.0, 3, 0), b"not an image"))
    rec, idx = _write_rec(tmp_path, records)
    des = RecordIODeserializer(rec, idx)  # default streams: raw labels of the first record
    assert des.read(1)["labels"].tolist() == [0.5, 1, 2]
    with pytest.raises(DataError) as err:
        des.read(2)
    assert (err.value.record, err.value.path) == (2, str(rec))
    assert "holds 2 labels" in str(err.value)
    with pytest.raises(DataError, match=r"\(record 3\): image: not an image"):
        des.read(3)
    one_hot = RecordIODeserializer(rec, idx, StreamDefs(labels=StreamDef(field="label", shape=1)))
    assert one_hot.read(3)["labels"].tolist() == [1.0]
    bad = _write_rec(tmp_path, [pack_image(IRHeader(0, 7.0, 0, 0), img, img_fmt=".png")])
    with pytest.raises(DataError, match="label 7 is not a class index of 0..2"):
        RecordIODeserializer(*bad, StreamDefs(y=StreamDef(field="label", shape=3))).read(0)


def test_wrong_idx_offset_names_the_idx_line_not_the_rec(tmp_path):
    img = np.zeros((4, 4, 3), np.uint8)
    payloads = [pack_image(IRHeader(0, float(k), k, 0), img, img_fmt=".png") for k in range(2)]
    payloads.append(b"abcd" + MAGIC + b"efgh")          # two parts: the second is at +12
    rec, _ = _write_rec(tmp_path, payloads)
    starts = [o for _, o in read_idx_file(tmp_path / "im.idx")]
    size = rec.stat().st_size
    cases = [(starts[1] + 8, "bad magic"),               # into the middle of record 1
             (starts[2] + 12, "the middle of a multi-part record (cflag 3)"),
             (size + 40, f"the file has {size} bytes")]  # past the end
    for offset, words in cases:
        idx = tmp_path / "bad.idx"
        idx.write_text(f"0\t{starts[0]}\n\n7\t{offset}\n")  # a blank line: the entry is line 3
        for read in (lambda: IndexedRecordIO(idx, rec).read_idx(7),
                     lambda: RecordIODeserializer(rec, idx).read(1),
                     lambda: dump_rec(rec, tmp_path / "dump", idx, progress=False)):
            with pytest.raises(DataError) as err:
                read()
            assert (err.value.path, err.value.line) == (str(idx), 3), offset
            message = str(err.value)
            assert message.startswith(f"{idx}:3: offset {offset} (key 7) points at no record")
            assert f"of {rec} (" in message and words in message
    # a record that starts where the index says but is damaged is still the .rec's fault
    (tmp_path / "good.idx").write_text("".join(f"{k}\t{o}\n" for k, o in enumerate(starts)))
    rec.write_bytes(rec.read_bytes()[:starts[1] + 12])
    with pytest.raises(DataError, match=r"im.rec \(record 1\): truncated"):
        IndexedRecordIO(tmp_path / "good.idx", rec).read_idx(1)


def test_empty_rec_or_idx_is_an_error_when_made(tmp_path):
    rec, idx = _write_rec(tmp_path, [pack_image_record(IRHeader(0, 0.0, 0, 0), b"x")])
    empty_rec, empty_idx = tmp_path / "empty.rec", tmp_path / "empty.idx"
    empty_rec.write_bytes(b"")
    empty_idx.write_text("\n")
    with pytest.raises(DataError) as err:
        RecordIODeserializer(empty_rec)
    assert err.value.path == str(empty_rec) and f"{empty_rec}: no samples" in str(err.value)
    with pytest.raises(DataError) as err:
        RecordIODeserializer(rec, empty_idx, StreamDefs(y=StreamDef(field="label", shape=1)))
    assert err.value.path == str(empty_idx) and f"{empty_idx}: no samples" in str(err.value)


def test_record_deserializer_transforms(tmp_path):
    img = cv2.resize(np.arange(64, dtype=np.uint8).reshape(8, 8, 1), (8, 8))[:, :, None]
    img = np.repeat(img, 3, axis=2)
    rec, idx = _write_rec(tmp_path, [pack_image(IRHeader(0, 0.0, 0, 0), img, img_fmt=".png")])
    des = RecordIODeserializer(rec, idx, StreamDefs(
        features=StreamDef(field="image", transforms=[T.crop(side_ratio=0.5), T.scale(2, 2, 1)])))
    out = des.read(0)["features"]
    assert out.shape == (1, 2, 2)
    assert out[0].tolist() == cv2.resize(img[2:6, 2:6, 0], (2, 2)).tolist()


def test_unpack_image_and_list_files(tmp_path):
    img = np.arange(12, dtype=np.uint8).reshape(2, 2, 3)
    header, decoded = unpack_image(pack_image(IRHeader(0, 2.0, 5, 0), img, img_fmt=".png"))
    assert header == IRHeader(0, 2.0, 5, 0) and np.array_equal(decoded, img)
    entries = [ListEntry(0, (1.0,), "cat/a.jpg"), ListEntry(7, (0.5, 2.0), "b.png")]
    write_list_file(tmp_path / "x.lst", entries)
    assert (tmp_path / "x.lst").read_text() == \
        "0\t1.000000\tcat/a.jpg\n7\t0.500000\t2.000000\tb.png\n"
    assert read_list_file(tmp_path / "x.lst") == entries
    (tmp_path / "bad.lst").write_text("0\t1.0\tok.png\n1\tx.png\n")
    with pytest.raises(DataError, match=r"bad.lst:2:"):
        read_list_file(tmp_path / "bad.lst")
    (tmp_path / "bad.idx").write_text("0\t0\n1\tten\n")
    with pytest.raises(DataError, match=r"bad.idx:2:"):
        read_idx_file(tmp_path / "bad.idx")
