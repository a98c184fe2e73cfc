"""``sd.show``: a picture of a network -- SVG, PNG, DOT or an interactive HTML page -- and the
loader that turns a model file into something to draw."""

from __future__ import annotations

import os
import pathlib
from typing import Any

from .._errors import ModelFileError, StadynError
from .._fileutil import atomic_write
from ..serialize import LegacyModel, import_onnx, is_model_file, load, read_legacy_model
from ._dot import DIRECTIONS, layout, to_dot
from ._html import page
from ._view import GraphView, view_of

__all__ = ["show", "graph_view", "load_for_inspection", "PICTURE_EXTENSIONS"]

PICTURE_EXTENSIONS = {".svg": "svg", ".png": "png", ".dot": "dot", ".gv": "dot",
                      ".html": "html", ".htm": "html"}
_NNABLA_EXTENSIONS = (".nnp", ".nntxt", ".prototxt", ".protobuf")


def load_for_inspection(path: str | os.PathLike) -> Any:
    """A model file ready to be drawn or summarised: a Stadyn model file or an ONNX model as a
    :class:`stadyn.serialize.Network`, an NNabla ``.nnp``/``.nntxt`` or CNTK ``.model``/``.dnn``
    file (any other suffix but ``.onnx``) as the decoded :class:`stadyn.serialize.LegacyModel`.
    Errors are the loaders' own (:class:`stadyn.ModelFileError` naming the file).

    Example:
        >>> import os, tempfile, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable((2, 3))
        >>> path = os.path.join(tempfile.mkdtemp(), "m.stadyn")
        >>> sd.save(path, {"y": F.relu(x)}, {"x": x})
        >>> list(load_for_inspection(path).outputs)
        ['y']
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ModelFileError(f"{path}: no such file")
    ext = os.path.splitext(path)[1].lower()
    if ext in _NNABLA_EXTENSIONS:
        return read_legacy_model(path)
    if is_model_file(path):
        return load(path)
    if ext == ".onnx":
        return import_onnx(path)
    return read_legacy_model(path)     # CNTK's .model/.dnn, told by their first bytes


def graph_view(what: Any, inputs: Any = None, network: str | None = None) -> GraphView:
    """The :class:`GraphView` of ``what``: Variables (one, a list or a dict), a
    :class:`stadyn.serialize.Network`, a :class:`stadyn.serialize.LegacyModel` (its network
    called ``network``; by default the first) or the path of a model file.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> v = graph_view(F.tanh(sd.Variable((2, 3))))
        >>> [b.label for b in v.boxes.values()]
        ['x', 'tanh', 'y']
    """
    if isinstance(what, (str, os.PathLike)):
        title = os.path.basename(os.fspath(what))
        what = load_for_inspection(what)
        if not hasattr(what, "networks"):
            return view_of(what, inputs, title=title)
    if isinstance(what, LegacyModel):
        from ._legacy_view import legacy_view
        return legacy_view(what, network)
    return view_of(what, inputs)


def show(what: Any, path: str | os.PathLike, *, inputs: Any = None, depth: int | None = None,
         title: str | None = None, network: str | None = None, direction: str = "TB") -> None:
    """Draw the graph of ``what`` into ``path``; the extension picks the format: ``.svg``,
    ``.png``, ``.dot``/``.gv`` (Graphviz source) or ``.html``/``.htm`` (a self-contained page in
    which scopes open and close on a click).

    ``what`` is one or more output Variables (a Variable, a list or a dict of them), a
    :class:`stadyn.serialize.Network` (from :func:`stadyn.load` or :func:`stadyn.import_onnx`),
    a decoded NNabla/CNTK model (:func:`stadyn.serialize.read_legacy_model`; ``network`` picks
    one of its networks) or a model file's path.  Ops are boxes with their name, the attributes
    not at their defaults and the parameters they use (shape and size); edges carry shapes and
    dtypes; parameter scopes are nested frames.  ``depth`` closes the frames deeper than that
    many levels (in the page: the first view; by default pictures show everything open and the
    page opens a scope while it is alone on its level).  ``inputs`` names the input Variables
    (by default each unnamed leaf is one).  ``direction`` ``"LR"`` lays the graph out left to
    right instead of top down (long chains fit a page better).  Laying out needs Graphviz's
    ``dot`` program (``apt-get install graphviz``): without it every format but DOT raises
    :class:`stadyn.inspect.GraphvizMissing`.  The file is written atomically.

    Example:
        >>> import os, tempfile, stadyn as sd, stadyn.functions as F
        >>> path = os.path.join(tempfile.mkdtemp(), "net.dot")
        >>> sd.show(F.relu(sd.Variable((2, 3))), path)
        >>> "relu" in open(path, encoding="utf-8").read()
        True
    """
    out = os.fspath(path)
    ext = os.path.splitext(out)[1].lower()
    fmt = PICTURE_EXTENSIONS.get(ext)
    if fmt is None:
        raise StadynError(f"{out}: cannot tell the picture format from {ext or 'no extension'!r}; "
                          f"use one of {', '.join(sorted(PICTURE_EXTENSIONS))}")
    if depth is not None and (not isinstance(depth, int) or depth < 0):
        raise StadynError(f"depth must be a whole number >= 0, got {depth!r}")
    if direction not in DIRECTIONS:
        raise StadynError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    view = graph_view(what, inputs, network)
    if title is not None:
        view.title = title
    if fmt == "html":
        data = page(view, depth, direction).encode("utf-8")
    else:
        expanded = None
        if depth is not None:
            expanded = {s.path for s in view.root.walk() if 0 < s.depth <= depth}
        source = to_dot(view, expanded, direction=direction).source
        data = source.encode("utf-8") if fmt == "dot" else layout(source, fmt)
    atomic_write(out, lambda tmp: pathlib.Path(tmp).write_bytes(data))
