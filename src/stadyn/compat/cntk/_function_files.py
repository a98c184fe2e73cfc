"""A CNTK ``Function``'s files: ``save`` (CNTK's format, or ONNX), ``restore`` of its
parameters, ``Function.load``/``load_model`` (a file saved untyped waits for its operands, as
CNTK 2.7's does) and the user functions' deserialisation callbacks; mixed into
:class:`._function.Function`, which builds on what is read here through :mod:`._late`.
"""

from __future__ import annotations

from typing import Any

from ...parametric import ParameterRegistry
from . import _graph as G
from ._adapt import wrap
from ._function_runs import RunState
from ._late import late
from ._model_file import ModelFormat
from ._loaded_untyped import FileGraph
from ._model_load import (load_roots, model_path, restore_values, untyped_arguments,
                          untyped_file_parameters, untyped_placeholder_order,
                          untyped_shown_op)
from ._model_save import save_roots
from ._waiting_function import waiting_function

__all__ = ["FunctionFiles", "load_model"]


class FunctionFiles:
    """What a :class:`~._function.Function` writes and reads (its ``_roots``, ``arguments``,
    ``parameters`` and ``_combine`` are the Function's).

    Example:
        >>> import os, tempfile, numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(2, name="x")
        >>> z = C.layers.Dense(3, name="d")(x)
        >>> path = os.path.join(tempfile.mkdtemp(), "z.model")
        >>> z.save(path)
        >>> z.W.value = np.zeros((2, 3), np.float32)
        >>> z.restore(path)
        >>> bool((z.W.value == C.load_model(path).W.value).all())
        True
    """

    __slots__ = ()

    def save(self, filename, format=ModelFormat.CNTKv2,
             use_external_files_to_store_parameters: bool = False) -> None:
        """Save the graph of the outputs (a Stadyn model file keeping CNTK's names; ONNX with
        ``ModelFormat.ONNX``)."""
        save_roots(self._roots(), self.arguments, filename, format, self._combine())

    save_model = save  # the 2017 betas' name

    def restore(self, filename) -> None:
        """Set this Function's parameters and constants to those saved in ``filename`` (by a
        Function of the same architecture), in the order of their inputs, as CNTK 2.7."""
        loaded = load_model(filename)
        restore_values(list(self.inputs), list(loaded.inputs), str(self), str(loaded))

    #: op name (``module.class``) -> ``callback(inputs, name, state)``: what rebuilds a
    #: saved user function of that op name instead of its class's ``deserialize``
    _udf_callback_map: dict = {}

    @classmethod
    def register_udf_deserialize_callback(cls, op_name: str, callback) -> None:
        """Rebuild the saved user functions of ``op_name`` (``module.class`` of their
        ``UserFunction`` subclass) with ``callback(inputs, name, state)`` when a model is
        loaded, instead of importing the module and calling the class's ``deserialize``; once
        per op name (a second raises ``ValueError``, as CNTK 2.7).

        Example:
            >>> import stadyn.compat.cntk as C
            >>> C.Function.register_udf_deserialize_callback(
            ...     "doc_example.Twice", lambda inputs, name, state: None)
            >>> "doc_example.Twice" in C.Function._udf_callback_map
            True
        """
        # (the map the class it is called on reads, as ops/functions._rebuilt reads
        # Function's: the split into this mixin wrote FunctionFiles' own)
        if op_name in cls._udf_callback_map:
            raise ValueError(f"A callback for the UserFunction with op name {op_name} has "
                             "already been registered.")
        cls._udf_callback_map[op_name] = callback

    @staticmethod
    def load(model, device=None, format=ModelFormat.CNTKv2) -> Any:
        """The Function saved in ``model`` (a file name, or the file's bytes)."""
        return load_model(model, device, format)


def load_model(model, device=None, format=ModelFormat.CNTKv2) -> Any:
    """Load a Function saved by :meth:`Function.save` (a file name, or the file's bytes).

    Example:
        >>> import os, tempfile, numpy as np, stadyn.compat.cntk as C
        >>> x = C.input_variable(2, name="x")
        >>> z = C.layers.Dense(3, name="d")(x)
        >>> path = os.path.join(tempfile.mkdtemp(), "z.model")
        >>> z.save(path)
        >>> m = C.load_model(path)
        >>> m.arguments[0].name, m.find_by_name("d").shape
        ('x', (3,))
    """
    with model_path(model) as path:         # (bytes written to a file once)
        names, decoded = untyped_arguments(path, format)
        if not names:
            return _loaded(path, format, decoded=decoded)
    # a Function saved untyped: it waits for operands, as it did when saved; each application
    # decodes the file anew (their types are written into the decoded file), its parameters
    # those of the first (CNTK 2.7's applications share the loaded Function's parameters)
    registry = ParameterRegistry()
    waiting = waiting_function(names, lambda *values: _loaded(model, format, names, values,
                                                              registry=registry),
                               untyped_shown_op(decoded))
    # (its parameters listed before it is applied, as CNTK 2.7 lists the file's)
    waiting._parameters = tuple(wrap(v) for v in untyped_file_parameters(decoded, registry))
    # (its placeholders in the order CNTK 2.7's walk of the stored operands meets them)
    waiting.__dict__["_placeholder_order"] = untyped_placeholder_order(decoded)
    # (its graph as the file holds it, shown until it is given types: root_function, ...)
    waiting.__dict__["_loaded_graph"] = FileGraph(decoded, waiting._placeholders,
                                                  waiting._parameters)
    return waiting


def _loaded(model, format, names=(), values=(), decoded=None, registry=None) -> Any:
    """The Function saved in ``model``; ``names`` of its untyped arguments: it applied to
    ``values``, their types given to those arguments (CNTK infers them so); ``decoded``: the
    file as read already (of no untyped arguments); ``registry``: where its parameters are
    kept from one application to the next."""
    given = dict(zip(names, values))
    roots, combine, uid = load_roots(model, format, given, decoded, registry)
    if given:
        loaded = _loaded_function(roots, combine, uid)
        return loaded(*[given[a.name] for a in loaded.arguments])
    return _loaded_function(roots, combine, uid)


def _loaded_function(roots, combine, uid) -> Any:
    if combine is None and (len(roots) == 1 or G.function_outputs(roots) is not None):
        return late("Function")(roots[0], roots if len(roots) > 1 else None, runs=RunState())
    loaded = late("combine_outputs")(roots, combine or "")
    if uid:
        loaded._combine().uid = uid         # the file's (CNTK's) uid of its root
    return loaded
