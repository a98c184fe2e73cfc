"""OpenCV XML mean files, read the way CNTK's mean transform read them.

The file holds ``Channel``, ``Row``, ``Col`` and a matrix ``MeanImg`` (``rows`` x ``cols`` values of
type ``dt``). CNTK reshaped the matrix to ``Row`` rows of ``Col`` pixels of ``Channel`` interleaved
channels: the values are H x W x C, channels in the decoder's BGR order. The writer here writes
exactly that layout, so a file it writes subtracts what it says.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET

import numpy as np

from .._errors import DataError
from ._files import atomic_write, read_data_file

__all__ = ["read_mean_file", "write_mean_file"]

_DT = re.compile(r"^\s*(\d*)\s*([ucwsifd])\s*$")
_DT_TYPES = {"u": np.uint8, "c": np.int8, "w": np.uint16, "s": np.int16, "i": np.int32,
             "f": np.float32, "d": np.float64}


def _int_child(root: ET.Element, tag: str, path: str) -> int:
    node = root.find(tag)
    if node is None or node.text is None:
        raise DataError(f"mean file has no <{tag}> element", path)
    try:
        value = int(node.text.strip())
    except ValueError:
        raise DataError(f"<{tag}> is not an integer: {node.text.strip()[:40]!r}", path) from None
    if value <= 0:
        raise DataError(f"<{tag}> must be positive, got {value}", path)
    return value


def read_mean_file(path: str | os.PathLike) -> np.ndarray:
    """Read a CNTK/OpenCV XML mean file as an (H, W, C) float32 array (BGR channels).

    Example:
        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), 'mean.xml')
        >>> write_mean_file(p, np.arange(12, dtype=np.float32).reshape(2, 2, 3))
        >>> read_mean_file(p)[1, 0].tolist()
        [6.0, 7.0, 8.0]
    """
    path = os.fspath(path)
    data = read_data_file(path, "mean file")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        line = exc.position[0] if getattr(exc, "position", None) else None
        raise DataError(f"mean file is not well-formed XML: {exc}", path, line=line) from None
    except ValueError as exc:
        raise DataError(f"cannot read mean file: {exc}", path) from None
    channels = _int_child(root, "Channel", path)
    rows = _int_child(root, "Row", path)
    cols = _int_child(root, "Col", path)
    matrix = root.find("MeanImg")
    if matrix is None:
        raise DataError("mean file has no <MeanImg> matrix", path)
    m_rows = _int_child(matrix, "rows", path)
    m_cols = _int_child(matrix, "cols", path)
    dt_node = matrix.find("dt")
    dt = _DT.match(dt_node.text or "") if dt_node is not None else None
    if dt is None:
        raise DataError("<MeanImg> needs a <dt> such as 'f' or '3f'", path)
    m_channels = int(dt.group(1) or 1)
    data_node = matrix.find("data")
    if data_node is None:
        raise DataError("<MeanImg> has no <data>", path)
    try:
        values = np.array((data_node.text or "").split(), dtype=np.float64)
    except ValueError as exc:
        raise DataError(f"<MeanImg> data holds a value that is not a number: {exc}", path) from None
    expected = m_rows * m_cols * m_channels
    if values.size != expected:
        raise DataError(f"<MeanImg> declares {m_rows}x{m_cols}x{m_channels} = {expected} values "
                        f"but holds {values.size}", path)
    if channels * rows * cols != expected:
        raise DataError(f"Channel*Row*Col = {channels}*{rows}*{cols} does not match the "
                        f"{expected} values of <MeanImg>", path)
    values = values.astype(_DT_TYPES[dt.group(2)]).astype(np.float32)
    return values.reshape(rows, cols, channels)


def write_mean_file(path: str | os.PathLike, mean: np.ndarray) -> None:
    """Write an (H, W, C) mean image (BGR for C = 3) as an OpenCV XML file CNTK can read.

    The values are written H x W x C interleaved, the layout :func:`read_mean_file` (and CNTK)
    interpret. A 2-D array is one channel.
    """
    mean = np.asarray(mean, dtype=np.float32)
    if mean.ndim == 2:
        mean = mean[:, :, None]
    if mean.ndim != 3 or min(mean.shape) == 0:
        raise ValueError(f"mean must be (H, W, C), got shape {mean.shape}")
    rows, cols, channels = mean.shape
    values = " ".join(f"{v:.7g}" for v in mean.reshape(-1).tolist())
    text = (
        '<?xml version="1.0" ?>\n'
        "<opencv_storage>\n"
        f"  <Channel>{channels}</Channel>\n"
        f"  <Row>{rows}</Row>\n"
        f"  <Col>{cols}</Col>\n"
        '  <MeanImg type_id="opencv-matrix">\n'
        "    <rows>1</rows>\n"
        f"    <cols>{rows * cols * channels}</cols>\n"
        "    <dt>f</dt>\n"
        f"    <data>{values}</data>\n"
        "  </MeanImg>\n"
        "</opencv_storage>\n"
    )
    atomic_write(path, text)
