"""Stream definitions (what a deserializer should produce) and stream information (what it does)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np

__all__ = ["StreamDef", "StreamDefs", "StreamInformation", "Record"]


class Record(dict):
    """A dict whose items are also attributes: ``streams.features`` is ``streams['features']``.

    Example:
        >>> r = Record(features=1)
        >>> r.features, r['features']
        (1, 1)
    """

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"no stream or item named {name!r}; have {sorted(self)}") from None

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self))


def _as_shape(shape: int | Sequence[int] | None) -> tuple[int, ...] | None:
    if shape is None:
        return None
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


@dataclass(frozen=True)
class StreamDef:
    """How one stream of a deserializer is defined (CNTK's ``cntk.io.StreamDef``).

    Args:
        field: the name of the field in the data: ``'image'`` or ``'label'`` for an
            :class:`ImageDeserializer` or :class:`RecordIODeserializer`, the input name after ``|``
            in a CTF file, the key of an array for a :class:`NumpyDeserializer`.
        shape: the sample shape (an int is a vector length). For a label stream, the number of
            classes of the one-hot vector.
        is_sparse: the CTF input is written as ``index:value`` pairs.
        transforms: image transforms applied in order (``stadyn.io.transforms``).
        defines_mb_size: accepted for CNTK compatibility; the minibatch size always counts the
            longest stream of a sequence.
        context: ``(left, right)`` neighbour frames an :class:`HTKFeatureDeserializer` stream
            appends to each frame (``shape`` is then the dimension of one frame in the file).
        scp: the script file (or list of them) of an :class:`HTKFeatureDeserializer` stream.
        mlf: the master label file (or list of them) of an :class:`HTKMLFDeserializer` stream;
            giving it makes the stream sparse, as in CNTK.
        broadcast: an HTK stream whose utterances are one frame each (i-vectors) is repeated
            over the whole sequence of the first deserializer.
        max_sequence_length: taken as CNTK 2.7's and, as there, read by no deserializer (its
            HTK reader skips the utterances longer than its ``maxSequenceSize``:
            ``HTKFeatureDeserializer(max_sequence_size=n)``).

    Example:
        >>> StreamDef(field='label', shape=10).shape
        (10,)
    """

    field: str | None = None
    shape: tuple[int, ...] | int | None = None
    is_sparse: bool = False
    transforms: tuple = ()
    context: tuple[int, int] | None = None
    scp: str | tuple[str, ...] | None = None
    mlf: str | tuple[str, ...] | None = None
    broadcast: bool | None = None
    defines_mb_size: bool = False
    max_sequence_length: int = 65535

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", _as_shape(self.shape))
        object.__setattr__(self, "transforms", tuple(self.transforms or ()))
        if self.context is not None:
            context = tuple(int(c) for c in self.context)
            if len(context) != 2 or min(context) < 0:
                raise ValueError(f"context must be (left, right) frame counts >= 0, got "
                                 f"{self.context!r}")
            object.__setattr__(self, "context", context)
        for name in ("scp", "mlf"):
            value = getattr(self, name)
            if isinstance(value, (list, tuple)):
                object.__setattr__(self, name, tuple(str(v) for v in value))
        if self.mlf is not None:
            object.__setattr__(self, "is_sparse", True)


def StreamDefs(**streams: StreamDef) -> Record:
    """Name the streams of a deserializer: ``StreamDefs(features=StreamDef(...), labels=...)``.

    Example:
        >>> defs = StreamDefs(labels=StreamDef(field='label', shape=10))
        >>> defs.labels.field
        'label'
    """
    for name, definition in streams.items():
        if not isinstance(definition, StreamDef):
            raise TypeError(f"stream {name!r}: expected a StreamDef, got "
                            f"{type(definition).__name__}")
    return Record(streams)


@dataclass(frozen=True, eq=False)
class StreamInformation:
    """What a :class:`MinibatchSource` delivers for one stream (CNTK's ``StreamInformation``).

    Two infos are equal when their name and stream id are equal, so the infos of a training
    source can key the minibatches of a test source with the same streams (as the CNTK CIFAR-10
    example does).

    Attributes:
        name: the stream name given in :func:`StreamDefs`.
        stream_id: position of the stream in its source.
        shape: sample shape; ``None`` when it varies (images without a ``scale`` transform).
        dtype: NumPy dtype of the delivered arrays.
        is_sparse: the stream was defined sparse (it is still delivered dense).
        is_sequence: samples are sequences: data is (N, T, ...) plus a mask.
    """

    name: str
    stream_id: int
    shape: tuple[int, ...] | None
    dtype: np.dtype = field(default=np.dtype(np.float32))
    is_sparse: bool = False
    is_sequence: bool = False
    defines_mb_size: bool = False

    @property
    def storage_format(self) -> str:
        return "sparse" if self.is_sparse else "dense"

    @property
    def m_name(self) -> str:  # CNTK 2.0 beta spelling
        return self.name

    @property
    def sample_shape(self) -> tuple[int, ...] | None:
        """CNTK 2.7's name for :attr:`shape`."""
        return self.shape

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StreamInformation):
            return NotImplemented
        return (self.name, self.stream_id) == (other.name, other.stream_id)

    def __hash__(self) -> int:
        return hash(("StreamInformation", self.name, self.stream_id))

    def __repr__(self) -> str:
        return (f"StreamInformation(name={self.name!r}, shape={self.shape}, "
                f"dtype={np.dtype(self.dtype).name}, {self.storage_format})")


def iter_stream_defs(streams: dict[str, StreamDef] | None) -> Iterator[tuple[str, StreamDef]]:
    for name, definition in (streams or {}).items():
        if not isinstance(definition, StreamDef):
            raise TypeError(f"stream {name!r}: expected a StreamDef, got "
                            f"{type(definition).__name__}")
        yield name, definition
