"""``cntk.io``: minibatch sources and deserializers (Stadyn's readers), stream definitions,
``cntk.io.transforms``, CNTK's text-format helper, and the bases of sources and deserializers
written in Python (``UserMinibatchSource``, ``UserDeserializer``).

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> src = C.io.MinibatchSourceFromData(dict(x=np.arange(6, dtype=np.float32).reshape(3, 2)))
    >>> mb = src.next_minibatch(2)
    >>> mb[src.streams.x].asarray().tolist()
    [[0.0, 1.0], [2.0, 3.0]]
    >>> C.io.sequence_to_cntk_text_format(0, {"x": np.array([[1.0, 2.0]])}).split("\\t")
    ['0', '|x 1.0 2.0']
"""

from __future__ import annotations

import numpy as np

from .... import io as _io
from ....io import FULL_DATA_SWEEP, INFINITELY_REPEAT, StreamDef, StreamDefs
from .._mixins import ArrayMixin
from ._sources import MinibatchData, MinibatchSource, MinibatchSourceFromData
from ._user import StreamInformation, UserMinibatchSource
from ._user_deserializer import UserDeserializer
from .._values import Value
from .._variables import Record
from ..device import use_default_device
from ..logging import TraceLevel, get_trace_level
from . import transforms
from ._configs import deferring

# CNTK 2.7's deserializers are configurations: a bad file raises when a MinibatchSource is
# made over one (``_configs.py``)
# (the "type" and the argument in "file" of CNTK's dictionary: its HTK ones have no "file")
CTFDeserializer = deferring(_io.CTFDeserializer, "CNTKTextFormatDeserializer", "filename")
CBFDeserializer = deferring(_io.CBFDeserializer, "CNTKBinaryFormatDeserializer", "filename")
ImageDeserializer = deferring(_io.ImageDeserializer, "ImageDeserializer", "map_file")
Base64ImageDeserializer = deferring(_io.Base64ImageDeserializer, "Base64ImageDeserializer",
                                    "filename")
HTKFeatureDeserializer = deferring(_io.HTKFeatureDeserializer, "HTKFeatureDeserializer", None)
HTKMLFDeserializer = deferring(_io.HTKMLFDeserializer, "HTKMLFDeserializer", None)

# CNTK's default randomization window, in its chunks (a MinibatchSource given None uses it).
DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS = 128


class StreamConfiguration:
    """A stream of a CNTK-text-format file (the older spelling of ``StreamDef``): its ``name``,
    dimension ``dim``, ``is_sparse`` and the field ``stream_alias`` in the file."""

    def __init__(self, name: str, dim: int, is_sparse: bool = False, stream_alias: str = "",
                 defines_mb_size: bool = False):
        self.m_stream_name, self.m_dim, self.m_is_sparse = name, int(dim), bool(is_sparse)
        self.m_stream_alias = stream_alias or name
        self.m_defines_mb_size = bool(defines_mb_size)


def HTKMLFBinaryDeserializer(streams):
    """CNTK 2.7's binary MLF reader: not provided.  CNTK 2.7's own reader of that format is
    inconsistent (a sequence's length is its number of label runs, while its labels fill the
    frames of every run), so no result can be matched; write the labels as a text MLF and use
    :func:`HTKMLFDeserializer`.

    Example:
        >>> HTKMLFBinaryDeserializer({})
        Traceback (most recent call last):
        ...
        NotImplementedError: HTKMLFBinaryDeserializer (binary MLF labels) is not supported ...
    """
    raise NotImplementedError(
        "HTKMLFBinaryDeserializer (binary MLF labels) is not supported by Stadyn: CNTK 2.7's "
        "reader of that format is inconsistent (sequence lengths count label runs, not "
        "frames); write the labels as a text MLF and use HTKMLFDeserializer")


def LatticeDeserializer(lattice_index_file, streams):
    """CNTK 2.7's lattice reader (for sequence-discriminative speech training): not provided.

    Example:
        >>> LatticeDeserializer('lat.toc', {})
        Traceback (most recent call last):
        ...
        NotImplementedError: LatticeDeserializer (HTK lattice archives for ...
    """
    raise NotImplementedError(
        f"LatticeDeserializer (HTK lattice archives for sequence training, "
        f"{lattice_index_file!r}) is not supported by Stadyn; frame-level training reads "
        f"features and labels with HTKFeatureDeserializer and HTKMLFDeserializer")


def sequence_to_cntk_text_format(seq_idx: int, alias_tensor_map: dict) -> str:
    """One sequence in CNTK's text format: a line per step, ``seq_idx\t|alias v1 v2 ...`` with
    the streams that have that step side by side (each stream's rows are its steps; sparse
    streams are not supported)."""
    tensors = {alias: np.atleast_2d(np.asarray(t)) for alias, t in alias_tensor_map.items()}
    steps = max(t.shape[0] for t in tensors.values())
    lines = []
    for i in range(steps):
        fields = [f"|{alias} " + " ".join(repr(float(v)) for v in t[i].ravel())
                  for alias, t in tensors.items() if i < t.shape[0]]
        lines.append(f"{seq_idx}\t" + " ".join(fields))
    return "\n".join(lines)


__all__ = ["MinibatchSource", "MinibatchSourceFromData", "MinibatchData", "ImageDeserializer",
           "CTFDeserializer", "Base64ImageDeserializer", "CBFDeserializer",
           "HTKFeatureDeserializer", "HTKMLFDeserializer", "HTKMLFBinaryDeserializer",
           "LatticeDeserializer", "StreamDef", "StreamDefs", "StreamInformation",
           "StreamConfiguration", "FULL_DATA_SWEEP", "INFINITELY_REPEAT",
           "DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS", "Record", "ArrayMixin", "Value",
           "TraceLevel", "get_trace_level", "sequence_to_cntk_text_format",
           "use_default_device", "transforms", "UserMinibatchSource", "UserDeserializer"]
