"""One entry point for the legacy model files: NNabla's ``.nnp``/``.nntxt``/``.protobuf`` and
CNTK's v2 and v1 model files, told apart by suffix and, where the suffix does not say
(``.model``, ``.dnn``, or none), by their first bytes."""

from __future__ import annotations

import os

from ._cntk_format import is_cntk_v2_file, read_cntk
from ._cntk_v1_format import is_cntk_v1_file, read_cntk_v1
from ._legacy_ir import LegacyModel, fail, read_limited
from ._nnp_format import read_nnp

__all__ = ["read_legacy_model"]


def read_legacy_model(path: str | os.PathLike) -> LegacyModel:
    """Decode an NNabla or CNTK model file into :class:`LegacyModel` (networks with the
    format's own op names, parameters as NumPy arrays), without NNabla or CNTK.

    Example:
        >>> import os, tempfile
        >>> from stadyn.serialize import read_legacy_model
        >>> path = os.path.join(tempfile.mkdtemp(), "tiny.nntxt")
        >>> with open(path, "w") as f:
        ...     _ = f.write('network { name: "n" variable { name: "x" type: "Buffer" } '
        ...                 'variable { name: "y" type: "Buffer" } '
        ...                 'function { name: "f" type: "ReLU" input: "x" output: "y" } }')
        >>> m = read_legacy_model(path)
        >>> m.format, dict(m.op_counts())
        ('nnp', {'ReLU': 1})
    """
    path = os.fspath(path)
    if path.lower().endswith((".nnp", ".nntxt", ".prototxt", ".protobuf")):
        return read_nnp(path)
    if not os.path.isfile(path):
        read_limited(path)                      # the missing-file / folder error
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError as exc:
        raise fail(path, f"cannot read the file ({exc.strerror or exc})") from None
    if is_cntk_v1_file(head):
        return read_cntk_v1(path)
    if head.startswith(b"PK"):
        return read_nnp(path, kind=".nnp")      # an .nnp under another name
    if is_cntk_v2_file(head):
        return read_cntk(path)
    raise fail(path, "not an NNabla or CNTK model file this reader knows (neither a zip, nor "
                     "CNTK's v1 or v2 model format)")

