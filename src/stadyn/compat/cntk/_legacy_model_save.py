"""``cntk.debugging.save_as_legacy_model``: a Function saved as a CNTK v1 model file (the
format BrainScript's ``cntk.exe`` reads), as CNTK 2.7 writes it
(:func:`stadyn.serialize.save_cntk_v1`)."""

from __future__ import annotations

import os
from collections import OrderedDict

from ._model_save import cntk_writer_names, saved_graph

__all__ = ["save_as_legacy_model"]


def save_as_legacy_model(root_op, filename) -> None:
    """Save the Function ``root_op`` as a CNTK v1 model file at ``filename``, which CNTK
    2.7's ``load_model`` (and Stadyn's) reads back.  As CNTK 2.7, a Function with an input of
    free dimensions is refused (``ValueError``); so is an op that has no v1 node type
    (``top_k``, ``gather``, ``one_hot`` ...: ``CntkWriteUnsupported`` naming it).

    Example:
        >>> import os, tempfile, numpy as np, stadyn.compat.cntk as C
        >>> z = C.layers.Dense(2)(C.input_variable(3, name="x"))
        >>> path = os.path.join(tempfile.mkdtemp(), "dense.dnn")
        >>> C.debugging.save_as_legacy_model(z, path)
        >>> C.load_model(path).arguments[0].name
        'x'
    """
    from ... import serialize
    from ._function import Function
    if not isinstance(root_op, Function):
        raise TypeError("in method 'save_as_legacy_model', argument 1 of type "
                        "'CNTK::FunctionPtr const &'")
    roots = saved_graph(root_op._roots())
    arguments = root_op.arguments
    inputs = OrderedDict()
    for k, a in enumerate(arguments):
        name = a.name or f"x{k}"
        inputs[name if name not in inputs else f"{name}#{k}"] = a.variable
    serialize.save_cntk_v1(os.fspath(filename), roots, inputs, function=str(root_op),
                           **cntk_writer_names(roots, [a.name for a in arguments],
                                               root_op._combine()))
