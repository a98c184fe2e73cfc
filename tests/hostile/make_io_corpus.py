"""Write the committed io corpus of tests/hostile/io (see README.md there): small files that each
carry one attack on a reader. Run it from the repository root to re-create them:

    python tests/hostile/make_io_corpus.py

The archives hold gigabytes of zeros compressed with bzip2 (a few kB each); making them takes
about a minute. Everything else is built byte by byte here.
"""

from __future__ import annotations

import io
import os
import pickle
import struct
import sys
import tarfile
import zipfile
import zlib

import cv2
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "io")
CHUNK = 1 << 24


class Zeros(io.RawIOBase):
    """``size`` zero bytes, read in pieces (nothing that size is ever held in memory)."""

    def __init__(self, size: int):
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def write(name: str, data: bytes) -> None:
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
    print(f"{name}: {len(data)} bytes")


def png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def zip_bomb(name: str, size: int) -> None:
    """One bzip2 member of ``size`` zero bytes."""
    path = os.path.join(OUT, name)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_BZIP2, compresslevel=9) as zf:
        with zf.open("zeros.png", "w", force_zip64=True) as member:
            zeros = bytes(CHUNK)
            for _ in range(size // CHUNK):
                member.write(zeros)
            member.write(bytes(size % CHUNK))
    print(f"{name}: {os.path.getsize(path)} bytes, member of {size} bytes")


def tar_bomb(name: str, members: list[tuple[str, int]]) -> None:
    path = os.path.join(OUT, name)
    with tarfile.open(path, "w:bz2", compresslevel=9) as tar:
        for member, size in members:
            info = tarfile.TarInfo(member)
            info.size = size
            tar.addfile(info, io.BufferedReader(Zeros(size), CHUNK))
    print(f"{name}: {os.path.getsize(path)} bytes, members {members}")


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    good = cv2.imencode(".png", np.full((64, 64, 3), 200, np.uint8))[1].tobytes()
    write("good.png", good)

    # a PNG header declaring 20000 x 20000 RGB pixels (1.2 GB decoded) over a few bytes of data
    ihdr = struct.pack(">IIBBBBB", 20000, 20000, 8, 2, 0, 0, 0)
    write("huge_header.png", b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr)
          + png_chunk(b"IDAT", zlib.compress(bytes(64))) + png_chunk(b"IEND", b""))
    write("huge_png_map.txt", b".../good.png\t0\n.../huge_header.png\t1\n")

    # a JPEG whose frame header declares 60000 x 60000 pixels
    jpeg = bytearray(cv2.imencode(".jpg", np.full((16, 16, 3), 90, np.uint8))[1].tobytes())
    sof = jpeg.index(b"\xff\xc0")
    jpeg[sof + 5:sof + 9] = struct.pack(">HH", 60000, 60000)
    write("huge_header.jpg", bytes(jpeg))
    write("huge_jpg_map.txt", b".../huge_header.jpg\t0\n")

    # a JPEG cut in half with its end-of-image marker put back: libjpeg fills the rest with gray
    rng = np.random.default_rng(0)
    image = cv2.GaussianBlur(rng.integers(0, 256, (64, 64, 3)).astype(np.uint8), (5, 5), 0)
    whole = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes()
    write("truncated_eoi.jpg", whole[:len(whole) // 2] + b"\xff\xd9")
    write("truncated_map.txt", b".../good.png\t0\n.../truncated_eoi.jpg\t1\n")

    # a NUL byte inside a map-file path
    write("nul_path_map.txt", b".../good.png\t0\n.../go\x00od.png\t1\n")

    # RecordIO: an index offset no file can have, a part header declaring 512 MB in 16 bytes
    payload = struct.pack("<IfQQ", 0, 0.0, 0, 0) + good
    record = struct.pack("<II", 0xCED7230A, len(payload)) + payload
    write("one.rec", record + bytes(-len(record) % 4))
    write("huge_offset.idx", b"0\t9223372036854775808\n")
    write("huge_length.rec", struct.pack("<II", 0xCED7230A, (1 << 29) - 1) + bytes(8))
    write("huge_index.lst", b"18446744073709551616\t0.000000\tgood.png\n")

    # an XML mean file whose entities expand to a billion bytes
    entities = "".join(f'<!ENTITY e{k} "{f"&e{k - 1};" * 10}">' for k in range(1, 9))
    write("laughs_mean.xml", (f'<?xml version="1.0"?><!DOCTYPE m [<!ENTITY e0 "laughs">'
                              f'{entities}]><opencv_storage><Channel>&e8;</Channel>'
                              f'</opencv_storage>').encode())

    # a CIFAR-10 batch pickle of 250 bytes: nine levels of one list shared ten times, which
    # NumPy would walk (10**9 leaves, half a minute) and then allocate as 1 GB
    nested: object = 0
    for _ in range(9):
        nested = [nested] * 10
    dag = pickle.dumps({"data": nested, "labels": [0]}, protocol=2)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=9) as tar:
        info = tarfile.TarInfo("cifar-10-batches-py/data_batch_1")
        info.size = len(dag)
        tar.addfile(info, io.BytesIO(dag))
    write("cifar_dag.tar.gz", buffer.getvalue())

    if "--small" in sys.argv:
        return
    zip_bomb("bzip2_bomb.zip", 2_300_000_000)
    write("bzip2_bomb_map.txt", b".../bzip2_bomb.zip@/zeros.png\t0\n")
    tar_bomb("cifar_bomb.tar.bz2", [("cifar-10-batches-py/data_batch_1", 1_280_000_000)])
    tar_bomb("cifar_long.tar.bz2", [("cifar-10-batches-py/readme.html", 1_500_000_000)])


if __name__ == "__main__":
    main()
