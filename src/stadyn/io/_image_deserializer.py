"""ImageDeserializer: images named by a map file (or a folder of class folders) plus labels."""

from __future__ import annotations

import copy

import os
import warnings
from typing import Sequence

import numpy as np

from .._errors import DataError
from ._deserializer import INVALID_ROWS, Deserializer, StreamBatch, StreamSpec, stack_samples
from ._image import ImageReadError, ZipArchives, decode_image, read_file_bytes, require_cv2
from ._map_file import MapTable, read_map_table, scan_image_folder
from ._random import SampleRandom
from ._reader_errors import reader_errors
from ._settings import DictSettings
from ._streams import Record, StreamDef, StreamDefs, iter_stream_defs
from ._transforms import (Crop, Mean, Scale, Transform, color, crop, mean, pipeline_channels,
                          pipeline_output_shape, scale)

__all__ = ["ImageDeserializer", "ImagePipeline", "image_streams", "one_hot"]


def one_hot(labels: np.ndarray, num_classes: int) -> np.ndarray:
    """(N,) integer labels -> (N, num_classes) float32 one-hot rows."""
    out = np.zeros((len(labels), num_classes), dtype=np.float32)
    out[np.arange(len(labels)), labels] = 1.0
    return out


class ImagePipeline:
    """Decode, per-sample transforms, then one batched step to float32 (N, C, H, W).

    Trailing mean transforms are applied to the whole batch at once, fused with the conversion
    to float32 and the transpose to channel-first (the values are those of a per-image
    subtraction).
    """

    def __init__(self, transforms: Sequence[Transform], channel_order: str = "bgr",
                 as_cntk: bool = False):
        order = str(channel_order).lower()
        if order not in ("bgr", "rgb"):
            raise ValueError(f"channel_order must be 'bgr' (CNTK) or 'rgb', got {channel_order!r}")
        self.rgb = order == "rgb"
        self.transforms = [t for t in transforms if t is not None]
        for t in self.transforms:
            if not isinstance(t, Transform):
                raise TypeError(f"not an image transform: {t!r} (use stadyn.io.transforms)")
        cut = len(self.transforms)
        while cut > 0 and isinstance(self.transforms[cut - 1], Mean):
            cut -= 1
        self._per_sample = self.transforms[:cut]
        self._means: list[Mean] = self.transforms[cut:]
        # CNTK 2.7's reader (``as_cntk``) decodes every image in colour, scales without
        # converting channels (Scale.apply_as_cntk) and reads each image once: multiview10
        # gives view 0 (the top-left corner).  Other readers convert, and give 10 views.
        self.as_cntk = bool(as_cntk)
        self.channels = 3 if self.as_cntk else pipeline_channels(self.transforms)
        self.views = 10 if not self.as_cntk and any(
            isinstance(t, Crop) and t.crop_type == "multiview10" for t in self.transforms) else 1
        hwc = pipeline_output_shape(self.transforms)
        self.output_shape = None if hwc is None else (hwc[2], hwc[0], hwc[1])
        self._offsets: dict[tuple[int, ...], np.ndarray | None] = {}

    def sample(self, data: bytes, rng: SampleRandom, view: int) -> np.ndarray:
        """Decode one image and run the per-sample transforms; errors are ImageReadError."""
        image = decode_image(data, self.channels)
        try:
            for t in self._per_sample:
                if self.as_cntk and isinstance(t, Scale):
                    image = t.apply_as_cntk(image, rng, view)
                else:
                    image = t.apply(image, rng, view)
        except require_cv2().error as exc:
            raise ImageReadError(f"{type(t).__name__} failed on a {image.shape} image: "
                                 f"{str(exc).strip().splitlines()[-1]}") from None
        return image

    def _offset(self, shape_hwc: tuple[int, ...]) -> np.ndarray | None:
        """The summed means (channel-first, output channel order) for images of this shape."""
        if shape_hwc not in self._offsets:
            total = None
            for m in self._means:
                if m.matches(shape_hwc):
                    total = m.mean if total is None else total + m.mean
            if total is not None:
                total = total.transpose(2, 0, 1)
                total = np.ascontiguousarray(total[::-1] if self.rgb else total)
            self._offsets[shape_hwc] = total
        return self._offsets[shape_hwc]

    def finish(self, images: Sequence[np.ndarray], stream: str, path: str,
               where: Sequence[str] = ()) -> np.ndarray:
        """Stack (H, W, C) images into float32 (N, C, H, W), output channel order."""
        batch = stack_samples(images, stream, path, where)
        nchw = batch.transpose(0, 3, 1, 2)
        if self.rgb:
            nchw = nchw[:, ::-1]
        offset = self._offset(batch.shape[1:])
        if offset is None:
            return np.ascontiguousarray(nchw, dtype=np.float32)
        # transpose the (small) 8-bit batch first: contiguous float arithmetic is faster
        out = np.empty(nchw.shape, dtype=np.float32)
        np.subtract(np.ascontiguousarray(nchw), offset, out=out)
        return out


def _streams_by_field(streams: dict[str, StreamDef], fields: tuple[str, ...],
                      owner: str) -> dict[str, tuple[str, StreamDef]]:
    """field -> (stream name, definition); one stream per field."""
    found: dict[str, tuple[str, StreamDef]] = {}
    for name, definition in iter_stream_defs(streams):
        fld = (definition.field or name).lower()
        if fld not in fields:
            raise ValueError(f"{owner}: stream {name!r} has field {definition.field!r}; "
                             f"the fields are {', '.join(repr(f) for f in fields)}")
        if fld in found:
            raise ValueError(f"{owner}: two streams read field {fld!r}")
        found[fld] = (name, definition)
    return found


def image_streams(streams: dict[str, StreamDef], owner: str, channel_order: str,
                  as_cntk: bool = False) -> tuple[str | None, ImagePipeline, str | None, int]:
    """(image stream name, its pipeline, label stream name, label width) of a definition."""
    by_field = _streams_by_field(streams, ("image", "label"), owner)
    image_name, image_def = by_field.get("image", (None, StreamDef()))
    pipeline = ImagePipeline(image_def.transforms, channel_order, as_cntk)
    label_name, width = None, 0
    if "label" in by_field:
        label_name, definition = by_field["label"]
        if definition.shape is None or len(definition.shape) != 1 or definition.shape[0] < 1:
            raise ValueError(f"{owner}: label stream {label_name!r} needs shape (the number of "
                             f"classes, or of labels)")
        width = definition.shape[0]
    return image_name, pipeline, label_name, width


class ImageDeserializer(DictSettings, Deserializer):
    """Images and labels from a CNTK map file, an image folder of class sub-folders.

    Args:
        map_file: a map file (``path<TAB>label`` or ``key<TAB>path<TAB>label`` lines, see
            :func:`stadyn.io.read_map_file`) or a folder whose sub-folders are the classes.
        streams: ``StreamDefs(name=StreamDef(field='image', transforms=[...]),
            name2=StreamDef(field='label', shape=num_classes))``. Without it: ``features`` and
            ``labels`` with as many classes as the largest label + 1.
        channel_order: 'bgr' (CNTK's, OpenCV's decode order) or 'rgb'.

    Images come out float32 (C, H, W), labels float32 one-hot of width ``shape``. A label outside
    ``0..shape-1`` is an error naming the map line, and a map file without lines one naming the
    file, when the deserializer is made; a missing or corrupt image is an error naming the map
    line when that sample is read. Zip archives are opened once per process and kept
    open.

    Example:
        >>> import os, tempfile, numpy as np
        >>> from stadyn.io import StreamDef, StreamDefs, encode_image, transforms as T
        >>> d = tempfile.mkdtemp()
        >>> png = encode_image(np.full((6, 8, 3), 9, np.uint8))
        >>> _ = open(os.path.join(d, 'a.png'), 'wb').write(png)
        >>> _ = open(os.path.join(d, 'map.txt'), 'w').write('.../a.png\\t2\\n')
        >>> des = ImageDeserializer(os.path.join(d, 'map.txt'), StreamDefs(
        ...     features=StreamDef(field='image', transforms=[T.scale(4, 4, 3)]),
        ...     labels=StreamDef(field='label', shape=3)))
        >>> sample = des.read(0)
        >>> sample['features'].shape, sample['labels'].tolist()
        ((3, 4, 4), [0.0, 0.0, 1.0])
    """

    #: Whether an image that cannot be read or decoded is left out (with a warning) rather
    #: than an error: its rows are marked in the batch's ``INVALID_ROWS``, which a source that
    #: counts them removes (CNTK 2.7's base64 image reader through its ``MinibatchSource``,
    #: ``max_errors``).  Set on the copy ``leaving_out_invalid`` gives a source made with
    #: ``max_invalid_sequences``, never on the user's deserializer.
    skips_undecodable: bool = False

    @reader_errors
    def __init__(self, map_file: str | os.PathLike, streams: dict[str, StreamDef] | None = None,
                 *, channel_order: str = "bgr"):
        self._given_file = os.fspath(map_file)
        self.path = os.path.abspath(self._given_file)
        if os.path.isdir(self.path):
            self._table, self.class_names = scan_image_folder(self.path)
            self._from_folder = True
        else:
            self._table: MapTable = read_map_table(self.path)
            self.class_names = None
            self._from_folder = False
            if not len(self._table):
                raise DataError("no samples (the map file is empty or holds only blank lines)",
                                self.path)
        if streams is None:
            top = int(self._table.labels.max(initial=-1)) + 1
            streams = StreamDefs(features=StreamDef(field="image"),
                                 labels=StreamDef(field="label", shape=max(top, 1)))
        self._channel_order = channel_order
        self._configure(streams)
        self._h_zips: ZipArchives | None = None

    # CNTK 2.7's configuration keys (``d[key] = value``, ``_settings.py``)
    cntk_type = "ImageDeserializer"
    applied_keys = {"grayscale": "_set_grayscale"}
    refused_keys = {"multiViewCrop": "give the image stream a crop of crop_type='multiview10'"}

    def _set_grayscale(self, value) -> None:
        """``d["grayscale"] = True``: decode every image to one channel (luma), as CNTK
        2.7's image readers then do (``ImageDeserializerBase.cpp:72``)."""
        pipeline = copy.copy(self._pipeline)   # (a source's copy keeps the one it was made
        pipeline.channels = 1 if value else 3   # with: CNTK 2.7 reads a later key nowhere)
        self._pipeline = pipeline

    def _configure(self, streams: dict[str, StreamDef]) -> None:
        self._image_stream, self._pipeline, self._label_stream, self._num_classes = \
            image_streams(streams, "ImageDeserializer", self._channel_order, as_cntk=True)
        self._defs = Record(streams)
        if self._label_stream is not None:
            self._check_labels()

    # -- CNTK 2.0-beta static helpers: ImageDeserializer.crop(...), .scale(...), ...
    crop = staticmethod(crop)
    scale = staticmethod(scale)
    mean = staticmethod(mean)
    color = staticmethod(color)

    def _check_labels(self, start: int = 0, stop: int | None = None) -> None:
        """Refuse a label outside the label stream's classes among entries start..stop."""
        bad = np.flatnonzero(self._table.labels[start:stop] >= self._num_classes)
        if bad.size:
            i = start + int(bad[0])
            raise DataError(f"label {int(self._table.labels[i])} is outside the "
                            f"{self._num_classes} classes (0..{self._num_classes - 1}) of stream "
                            f"{self._label_stream!r}", *self._where(i))

    def _where(self, entry: int) -> tuple[str, int | None]:
        if self._from_folder:
            return self._table.paths[entry], None
        return self.path, int(self._table.lines[entry])

    def __len__(self) -> int:
        return len(self._table) * self._pipeline.views

    def chunk_sizes(self) -> np.ndarray:
        """CNTK 2.7 makes each image a chunk (its views are the chunk's sequences)."""
        return np.full(len(self._table), self._pipeline.views, dtype=np.int64)

    def stream_specs(self) -> dict[str, StreamSpec]:
        specs = {}
        if self._image_stream is not None:
            specs[self._image_stream] = StreamSpec(self._pipeline.output_shape,
                                                   np.dtype(np.float32))
        if self._label_stream is not None:
            specs[self._label_stream] = StreamSpec((self._num_classes,), np.dtype(np.float32),
                                                   is_sparse=True)
        return specs

    def keys(self) -> list[str]:
        views = self._pipeline.views
        base = [k if k is not None else str(i) for i, k in enumerate(self._table.keys)]
        return base if views == 1 else [f"{k}#{v}" for k in base for v in range(views)]

    @property
    def labels(self) -> np.ndarray:
        """The label of every map line (int64)."""
        return self._table.labels

    def _read_bytes(self, entry: int) -> bytes:
        member = self._table.members[entry]
        if member is None:
            return read_file_bytes(self._table.paths[entry])
        if self._h_zips is None:
            self._h_zips = ZipArchives()
        return self._h_zips.read(self._table.paths[entry], member)

    @reader_errors
    def read_batch(self, ids: Sequence[int],
                   rngs: Sequence[SampleRandom]) -> dict[str, StreamBatch]:
        views = self._pipeline.views
        entries = np.asarray(ids, dtype=np.int64) // views
        out: dict[str, StreamBatch] = {}
        if self._image_stream is not None:
            images, invalid = [], np.zeros(len(entries), dtype=bool)
            for k, entry in enumerate(entries.tolist()):
                try:
                    data = self._read_bytes(entry)
                    images.append(self._pipeline.sample(data, rngs[k], int(ids[k]) % views))
                except ImageReadError as exc:
                    path, line = self._where(entry)
                    message = f"image {self._table.entry(entry).location!r}: {exc}"
                    if not self.skips_undecodable:
                        raise DataError(message, path, line) from None
                    warnings.warn(str(DataError(message + "; the sequence is left out of its "
                                                "minibatch", path, line)), stacklevel=3)
                    invalid[k] = True
            valid = entries[~invalid].tolist()
            where = [self._describe(e) for e in valid] if len(
                {im.shape for im in images}) > 1 else ()
            stacked = self._pipeline.finish(images, self._image_stream, self.path, where) \
                if images else np.zeros((0,) + (self.stream_specs()[self._image_stream].shape
                                                or (0,)), np.float32)
            if invalid.any():       # (rows of zeros the source removes, INVALID_ROWS)
                full = np.zeros((len(entries),) + stacked.shape[1:], np.float32)
                full[~invalid] = stacked
                stacked = full
                out[INVALID_ROWS] = StreamBatch(invalid)
            out[self._image_stream] = StreamBatch(stacked)
        if self._label_stream is not None:
            out[self._label_stream] = StreamBatch(
                one_hot(self._table.labels[entries], self._num_classes))
        return out

    def _describe(self, entry: int) -> str:
        path, line = self._where(entry)
        return path if line is None else f"line {line}"

    # -- CNTK 2.0 spelling: ImageDeserializer(map_file).map_features(...).map_labels(...)
    def map_features(self, name: str, transforms: Sequence[Transform] = ()) -> "ImageDeserializer":
        """Define the image stream (replacing any other): CNTK 2.0's ``map_features``."""
        return self._redefine(name, StreamDef(field="image", transforms=transforms))

    def map_labels(self, name: str, num_classes: int) -> "ImageDeserializer":
        """Define the label stream (replacing any other): CNTK 2.0's ``map_labels``."""
        return self._redefine(name, StreamDef(field="label", shape=num_classes))

    def _redefine(self, name: str, definition: StreamDef) -> "ImageDeserializer":
        streams = Record({n: d for n, d in self._defs.items()
                          if (d.field or n).lower() != definition.field and n != name})
        streams[name] = definition
        self._configure(streams)
        return self
