"""Random and mangled input to the CTF, map-file and RecordIO parsers: only DataError comes out;
valid input generated from the formats' grammar: the readers return exactly what it holds.

10,200 malformed cases in all (3 parsers x 2 strategies x 1,700) and 150 valid ones per format
(``$STADYN_FUZZ_EXAMPLES`` for more), derandomized so CI sees the same cases.
"""

from __future__ import annotations

import io
import os
import struct

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stadyn._errors import DataError
from stadyn.io import CTFDeserializer, RecordIOReader, RecordIOWriter, StreamDef, StreamDefs
from stadyn.io._map_file import parse_map_bytes
from stadyn.io._recordio_images import unpack_image_record
from stadyn.io._recordio_index import parse_idx_text

CASES = 1700
FUZZ = settings(max_examples=CASES, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))

CTF_STREAMS = StreamDefs(x=StreamDef(field="x", shape=2),
                         y=StreamDef(field="y", shape=3, is_sparse=True))
CTF_TOKENS = [b"|x", b"|y", b"|#", b"|", b" ", b"\t", b"\n", b"\r\n", b"1", b"-2.5", b"3e4",
              b"0:1", b"2:0.5", b"7:1", b":", b"1e999", b"nan", b"abc", b"0 ", b"12 ", b"\xff",
              b"#", b"."]
MAP_TOKENS = [b"a.png", b"\t", b"\n", b"\r", b"3", b"-1", b"...", b"/", b"\\", b"z.zip@",
              b"@/m.png", b"key", b" ", b"x", b"\xc3\xa9", b"\xff", b"007", b"\t\t"]
MAGIC = b"\x0a\x23\xd7\xce"


def tokens(alphabet: list[bytes]) -> st.SearchStrategy[bytes]:
    return st.lists(st.sampled_from(alphabet), max_size=40).map(b"".join)


def parse_ctf(data: bytes) -> None:
    try:
        ctf = CTFDeserializer.from_bytes(data, CTF_STREAMS)
        if len(ctf):
            ctf.read_batch(list(range(len(ctf))), [None] * len(ctf))
    except DataError:
        pass


def parse_map(data: bytes) -> None:
    try:
        parse_map_bytes(data, "fuzz.txt", "/maps", "/cwd")
    except DataError:
        pass


def parse_rec(data: bytes) -> None:
    try:
        for payload in RecordIOReader(io.BytesIO(data), "fuzz.rec"):
            unpack_image_record(payload, "fuzz.rec")
    except DataError:
        pass
    try:
        RecordIOReader(io.BytesIO(data), "fuzz.rec").scan_offsets()
    except DataError:
        pass
    try:
        parse_idx_text(data, "fuzz.idx")
    except DataError:
        pass


@FUZZ
@given(st.binary(max_size=200))
def test_ctf_random_bytes(data):
    parse_ctf(data)


@FUZZ
@given(tokens(CTF_TOKENS))
def test_ctf_near_valid_text(data):
    parse_ctf(data)


@FUZZ
@given(st.binary(max_size=200))
def test_map_random_bytes(data):
    parse_map(data)


@FUZZ
@given(tokens(MAP_TOKENS))
def test_map_near_valid_text(data):
    parse_map(data)


@FUZZ
@given(st.binary(max_size=200).map(lambda b: MAGIC + b if b[:1] == b"\0" else b))
def test_recordio_random_bytes(data):
    parse_rec(data)


@st.composite
def mangled_records(draw) -> bytes:
    """Valid image records, then truncated or with bytes overwritten."""
    buf = io.BytesIO()
    writer = RecordIOWriter(buf)
    for _ in range(draw(st.integers(1, 3))):
        flag = draw(st.integers(0, 3))
        head = struct.pack("<IfQQ", flag, 1.0, 0, 0) + b"\0\0\x80?" * flag
        writer.write(head + draw(st.lists(st.sampled_from([b"ab", MAGIC, b"xyz\0"]),
                                          max_size=4).map(b"".join)))
    data = bytearray(buf.getvalue())
    for _ in range(draw(st.integers(0, 3))):
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data[:draw(st.integers(0, len(data)))])


@FUZZ
@given(mangled_records())
def test_recordio_mangled_records(data):
    parse_rec(data)


# ---------------------------------------------------------------------------------------------
# Valid input generated from the format's grammar: the reader returns exactly what was written
# ---------------------------------------------------------------------------------------------
VALID = settings(max_examples=int(os.environ.get("STADYN_FUZZ_EXAMPLES") or 150),
                 deadline=None, derandomize=True, database=None,
                 suppress_health_check=list(HealthCheck))


@st.composite
def number_text(draw) -> str:
    """A float32 written in one of the forms CTF files hold."""
    value = draw(st.floats(-1e4, 1e4, width=32, allow_subnormal=False))
    form = draw(st.sampled_from(["{!r}", "{:g}", "{:.3e}", "{:.0f}", "{:+.2f}"]))
    return form.format(value)


@st.composite
def valid_ctf(draw) -> tuple[bytes, np.ndarray, np.ndarray]:
    """CTF text with a dense ``x`` (2 values) and a sparse ``y`` (dim 3) on every line, the
    fields in either order, comments (``|#``) anywhere, spaces or tabs, LF or CRLF; and the
    arrays the text denotes."""
    xs, ys, lines = [], [], []
    for _ in range(draw(st.integers(1, 6))):
        x = [draw(number_text()) for _ in range(2)]
        indices = draw(st.lists(st.integers(0, 2), min_size=1, max_size=3, unique=True))
        y = {i: draw(number_text()) for i in indices}
        sep = draw(st.sampled_from([" ", "\t", "  ", " \t"]))
        fields = [f"|x{sep}{sep.join(x)}", f"|y{sep}" + sep.join(f"{i}:{v}" for i, v in y.items())]
        if draw(st.booleans()):
            fields.reverse()
        if draw(st.booleans()):
            fields.insert(draw(st.integers(0, 2)), "|# a comment, 1 2 3")
        lines.append(sep.join(fields))
        xs.append([np.float32(float(v)) for v in x])
        row = np.zeros(3, np.float32)
        for i, v in y.items():
            row[i] = np.float32(float(v))
        ys.append(row)
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    text = eol.join(lines) + draw(st.sampled_from(["", eol]))
    return text.encode(), np.array(xs, np.float32), np.array(ys, np.float32)


@VALID
@given(valid_ctf())
def test_ctf_reads_back_exactly_what_valid_text_says(case):
    data, xs, ys = case
    ctf = CTFDeserializer.from_bytes(data, CTF_STREAMS)
    assert len(ctf) == len(xs)
    batch = ctf.read_batch(list(range(len(xs)))[::-1], [None] * len(xs))   # any order
    np.testing.assert_array_equal(batch["x"].data, xs[::-1])
    np.testing.assert_array_equal(batch["y"].data, ys[::-1])


@VALID
@given(st.lists(st.lists(st.sampled_from([b"a", b"\0", MAGIC, b"\xff" * 3, b"xyz"]),
                         max_size=6).map(b"".join), min_size=1, max_size=5))
def test_recordio_reads_back_every_record_written(payloads):
    """Payloads holding the format's magic number are split and joined again by the reader."""
    buf = io.BytesIO()
    writer = RecordIOWriter(buf)
    offsets = [writer.write(p) for p in payloads]
    data = buf.getvalue()
    assert list(RecordIOReader(io.BytesIO(data), "valid.rec")) == payloads
    assert RecordIOReader(io.BytesIO(data), "valid.rec").scan_offsets() == offsets
