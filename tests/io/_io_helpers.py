"""Test helpers: image writing, and deserializers that misbehave on purpose (worker processes
import them from here, so they live in a module of their own)."""

from __future__ import annotations

import io
import os
import pickle
import tarfile
import time

import cv2
import numpy as np

from stadyn.io import ChunkedDeserializer, NumpyDeserializer, StreamSpec


def write_image(path: str, image: np.ndarray) -> str:
    """Write an (H, W, C) BGR uint8 image (format from the extension); returns the path."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    assert cv2.imwrite(path, image)
    return path


def fake_cifar(path, per_batch: int = 2) -> dict:
    """A cifar-10-python.tar.gz with ``per_batch`` random images per batch; returns the batches
    ({name: (data, labels)})."""
    rng = np.random.default_rng(3)
    batches = {}
    with tarfile.open(path, "w:gz") as tar:
        for name in [f"data_batch_{k}" for k in range(1, 6)] + ["test_batch"]:
            data = rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8)
            labels = rng.integers(0, 10, per_batch).tolist()
            batches[name] = (data, labels)
            raw = pickle.dumps({"data": data, "labels": labels, "batch_label": name})
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    return batches


class DyingDeserializer(NumpyDeserializer):
    """Kills its process (as a crash would) when asked for sample ``die_at``."""

    def __init__(self, n: int, die_at: int):
        super().__init__({"x": np.arange(n, dtype=np.float32)[:, None]})
        self.die_at = die_at
        self.parent_pid = os.getpid()

    def read_batch(self, ids, rngs):
        if self.die_at in set(int(i) for i in ids) and os.getpid() != self.parent_pid:
            os._exit(3)
        return super().read_batch(ids, rngs)


class RaisingDeserializer(NumpyDeserializer):
    """Raises a plain ZeroDivisionError for sample ``bad``."""

    def __init__(self, n: int, bad: int):
        super().__init__({"x": np.arange(n, dtype=np.float32)[:, None]})
        self.bad = bad

    def read_batch(self, ids, rngs):
        if self.bad in set(int(i) for i in ids):
            return 1 // 0
        return super().read_batch(ids, rngs)


class SlowDeserializer(NumpyDeserializer):
    """Sleeps ``seconds`` per batch."""

    def __init__(self, n: int, seconds: float):
        super().__init__({"x": np.arange(n, dtype=np.float32)[:, None]})
        self.seconds = seconds

    def read_batch(self, ids, rngs):
        time.sleep(self.seconds)
        return super().read_batch(ids, rngs)


class ListChunks(ChunkedDeserializer):
    """A :class:`ChunkedDeserializer` over a list of chunks, counting ``get_chunk`` calls;
    ``streams`` maps a name to its row shape (float32, dense)."""

    def __init__(self, chunks: list, streams: dict, sparse: tuple = ()):
        self.chunks, self.streams, self.sparse = chunks, streams, tuple(sparse)
        self.reads: list[int] = []

    def declared_streams(self):
        return {name: StreamSpec(tuple(shape), np.dtype(np.float32), name in self.sparse)
                for name, shape in self.streams.items()}

    def num_chunks(self):
        return len(self.chunks)

    def get_chunk(self, chunk_id):
        self.reads.append(chunk_id)
        return self.chunks[chunk_id]
