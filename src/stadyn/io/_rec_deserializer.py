"""RecordIODeserializer: MXNet image records (``.rec``, optional ``.idx``) as image and label
streams."""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from .._errors import DataError
from ._deserializer import Deserializer, StreamBatch, StreamSpec
from ._image import ImageReadError
from ._image_deserializer import image_streams
from ._random import SampleRandom
from ._recordio import RecordIOReader
from ._recordio_images import IRHeader, unpack_image_record
from ._recordio_index import read_idx_entries
from ._streams import StreamDef, StreamDefs

__all__ = ["RecordIODeserializer"]


class RecordIODeserializer(Deserializer):
    """Image records of an MXNet ``.rec`` file (as written by im2rec or ``stadyn data im2rec``).

    Args:
        rec: the ``.rec`` file.
        idx: its ``.idx`` file; without one the record offsets are found by reading the part
            headers once. An offset at which no record starts is a DataError naming the
            ``.idx`` line (when that record is read).
        streams: ``StreamDef(field='image', transforms=[...])`` and ``StreamDef(field='label',
            shape=k)``. Without it: ``features`` (the decoded image) and ``labels`` (the raw
            labels, as many as the first record holds).
        channel_order: 'bgr' as :class:`ImageDeserializer` (MXNet's ImageRecordIter gives 'rgb').

    Labels: a record with one label (IRHeader flag 0) gives a one-hot row when the label stream
    has ``shape > 1`` (the label must be a class index), the raw value when ``shape == 1``; a record
    with ``flag`` labels gives them as they are and needs ``shape == flag``.

    A ``.rec`` without records (or an ``.idx`` without entries) is a DataError when the
    deserializer is made.

    Example:
        >>> import os, tempfile, numpy as np
        >>> from stadyn.io import IndexedRecordIO, IRHeader, pack_image
        >>> d = tempfile.mkdtemp(); rec, idx = os.path.join(d, 'a.rec'), os.path.join(d, 'a.idx')
        >>> with IndexedRecordIO(idx, rec, 'w') as w:
        ...     image = np.zeros((4, 4, 3), np.uint8)
        ...     w.write_idx(0, pack_image(IRHeader(0, 2.0, 0, 0), image, img_fmt='.png'))
        >>> des = RecordIODeserializer(rec, idx, StreamDefs(
        ...     features=StreamDef(field='image'), labels=StreamDef(field='label', shape=3)))
        >>> des.read(0)['labels'].tolist(), des.read(0)['features'].shape
        ([0.0, 0.0, 1.0], (3, 4, 4))
    """

    def __init__(self, rec: str | os.PathLike, idx: str | os.PathLike | None = None,
                 streams: dict[str, StreamDef] | None = None, *, channel_order: str = "bgr"):
        self.path = os.path.abspath(os.fspath(rec))
        self._idx_path = None if idx is None else os.path.abspath(os.fspath(idx))
        self._idx_lines: np.ndarray | None = None
        if self._idx_path is not None:
            items = read_idx_entries(self._idx_path)
            if not items:
                raise DataError("no samples (the index file lists no records)", self._idx_path)
            self._keys = [str(k) for k, _, _ in items]
            self._offsets = np.array([o for _, o, _ in items], dtype=np.int64)
            self._idx_lines = np.array([line for _, _, line in items], dtype=np.int64)
        else:
            with RecordIOReader(self.path) as reader:
                self._offsets = np.array(reader.scan_offsets(), dtype=np.int64)
            if not len(self._offsets):
                raise DataError("no samples (the RecordIO file is empty)", self.path)
            self._keys = [str(i) for i in range(len(self._offsets))]
        self._h_reader: RecordIOReader | None = None
        if streams is None:
            header, _ = self._record(0)
            width = max(int(header.flag), 1)
            streams = StreamDefs(features=StreamDef(field="image"),
                                 labels=StreamDef(field="label", shape=width))
        self._image_stream, self._pipeline, self._label_stream, self._label_width = \
            image_streams(streams, "RecordIODeserializer", channel_order)

    def __len__(self) -> int:
        return len(self._offsets) * self._pipeline.views

    def keys(self) -> list[str]:
        views = self._pipeline.views
        return self._keys if views == 1 else [f"{k}#{v}" for k in self._keys for v in range(views)]

    def stream_specs(self) -> dict[str, StreamSpec]:
        specs = {}
        if self._image_stream is not None:
            specs[self._image_stream] = StreamSpec(self._pipeline.output_shape,
                                                   np.dtype(np.float32))
        if self._label_stream is not None:
            specs[self._label_stream] = StreamSpec((self._label_width,), np.dtype(np.float32))
        return specs

    def _record(self, record: int) -> tuple[IRHeader, bytes]:
        if self._h_reader is None:
            self._h_reader = RecordIOReader(self.path)
        index = None if self._idx_lines is None else \
            (self._idx_path, int(self._idx_lines[record]), self._keys[record])
        payload = self._h_reader.read_at(int(self._offsets[record]), record, index)
        return unpack_image_record(payload, self.path, record)

    def _label_row(self, header: IRHeader, record: int) -> np.ndarray:
        k = self._label_width
        if header.flag > 0:
            if header.flag != k:
                raise DataError(f"record holds {header.flag} labels but stream "
                                f"{self._label_stream!r} has shape {k}", self.path, record=record)
            return np.asarray(header.label, dtype=np.float32)
        if k == 1:
            return np.array([header.label], dtype=np.float32)
        label = float(header.label)
        if not label.is_integer() or not 0 <= label < k:
            raise DataError(f"label {label:g} is not a class index of 0..{k - 1} (stream "
                            f"{self._label_stream!r})", self.path, record=record)
        row = np.zeros(k, dtype=np.float32)
        row[int(label)] = 1.0
        return row

    def read_batch(self, ids: Sequence[int],
                   rngs: Sequence[SampleRandom]) -> dict[str, StreamBatch]:
        views = self._pipeline.views
        images, labels = [], []
        for k, sample in enumerate(ids):
            record = int(sample) // views
            header, data = self._record(record)
            if self._label_stream is not None:
                labels.append(self._label_row(header, record))
            if self._image_stream is not None:
                try:
                    images.append(self._pipeline.sample(data, rngs[k], int(sample) % views))
                except ImageReadError as exc:
                    raise DataError(f"image: {exc}", self.path, record=record) from None
        out = {}
        if self._image_stream is not None:
            out[self._image_stream] = StreamBatch(
                self._pipeline.finish(images, self._image_stream, self.path))
        if self._label_stream is not None:
            out[self._label_stream] = StreamBatch(np.stack(labels) if labels
                                                  else np.zeros((0, self._label_width), np.float32))
        return out
