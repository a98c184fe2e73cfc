"""``stadyn.load``: one entry point for every model file Stadyn runs -- its own model files
(:mod:`._model`) and NNabla's and CNTK's (:mod:`._legacy_load`), told apart by their contents
(and, for NNabla and CNTK files, their suffixes)."""

from __future__ import annotations

import os
from typing import Any

from ..parametric import ParameterRegistry
from ._legacy_load import is_legacy_model_file, legacy_model_info, load_legacy
from ._model import load as load_model_file
from ._model import model_info as stadyn_model_info
from ._network import ModelInfo, Network

__all__ = ["load", "model_info"]


def load(path: str | os.PathLike, registry: ParameterRegistry | None = None,
         batch_size: int | None = None, **options: Any) -> Network:
    """Load a model file as a runnable :class:`Network`: a Stadyn model file
    (:func:`stadyn.serialize._model.load`; ``options``: ``max_bytes``), or an NNabla ``.nnp`` /
    ``.nntxt`` (:func:`stadyn.load_nnp`; ``options``: ``executor``, ``network``) or CNTK 2
    ``.model`` / ``.dnn`` file (:func:`stadyn.serialize.load_cntk`).

    Example:
        >>> import os, tempfile, numpy as np, stadyn as sd, stadyn.functions as F
        >>> folder = tempfile.mkdtemp()
        >>> x = sd.Variable((1, 2))
        >>> sd.save(os.path.join(folder, "m.stadyn"), {"y": F.relu(x)}, {"x": x})
        >>> sd.load(os.path.join(folder, "m.stadyn"))(x=np.array([[-1.0, 1.0]]))["y"]
        array([[0., 1.]], dtype=float32)
        >>> with open(os.path.join(folder, "n.nntxt"), "w") as f:
        ...     _ = f.write('network { name: "n" batch_size: 1 '
        ...                 'variable { name: "x" type: "Buffer" shape { dim: -1 dim: 2 } } '
        ...                 'variable { name: "y" type: "Buffer" shape { dim: -1 dim: 2 } } '
        ...                 'function { name: "r" type: "ReLU" input: "x" output: "y" } }')
        >>> sd.load(os.path.join(folder, "n.nntxt"))(x=np.array([[-1.0, 1.0]]))["y"]
        array([[0., 1.]], dtype=float32)
    """
    if is_legacy_model_file(path):
        return load_legacy(path, registry=registry, batch_size=batch_size, **options)
    return load_model_file(path, registry=registry, batch_size=batch_size, **options)


def model_info(path: str | os.PathLike) -> ModelInfo:
    """Inputs, outputs, op counts and parameter count of a model file -- Stadyn's, ONNX,
    NNabla's or CNTK's (their own op names) -- read without building the graph.

    Example:
        >>> import os, tempfile, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable((4, 3))
        >>> path = os.path.join(tempfile.mkdtemp(), "m.stadyn")
        >>> sd.save(path, F.relu(F.tanh(x)), x)
        >>> dict(model_info(path).op_counts)
        {'tanh': 1, 'relu': 1}
    """
    if is_legacy_model_file(path):
        return legacy_model_info(path)
    return stadyn_model_info(path)
