"""Random and mangled input to the CTF, map-file and RecordIO parsers: only DataError comes out.

10,200 cases in all (3 parsers x 2 strategies x 1,700), derandomized so CI sees the same cases.
"""

from __future__ import annotations

import io
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stadyn._errors import DataError
from stadyn.io import CTFDeserializer, RecordIOReader, RecordIOWriter, StreamDef, StreamDefs
from stadyn.io._map_file import parse_map_bytes
from stadyn.io._recordio import parse_idx_text, unpack_image_record

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
