"""The graph of a loaded CNTK v2 file saved untyped (its arguments placeholders of unknown
shape), shown as CNTK 2.7 shows it before the loaded Function is given types: its
``root_function`` (the file's root function: ``Gather``, ``Plus``, a ``Dense`` block), each
function's ``op_name``, ``name``, ``uid``, ``inputs`` (operands in Python's order: a
``Gather``'s table before its indices), ``outputs`` (``Output('Gather5_Output_0', [???],
[???])``, whose ``owner`` is the function) -- read from the decoded file, nothing computed
(a run needs the types, :mod:`._function_files` applies the file when given them).

Example:
    >>> import os, stadyn.compat.cntk as C
    >>> m = C.load_model(os.path.join("tests", "fixtures", "cntk_saved_arguments",
    ...                               "gather.model"))
    >>> m.op_name, m.root_function.op_name, [i.name for i in m.root_function.inputs]
    ('CompositeFunctionOpName', 'Gather', ['table', 'indices'])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _graph as G
from ._adapt import unwrap
from ._axis import Axis
from ._model_load import file_leaf_order
from ._printed import function_repr
from ._variables import constant, placeholder

__all__ = ["FileGraph", "FileFunction", "FileOutput"]


class FileGraph:
    """The functions and leaves of a decoded CNTK v2 file of untyped arguments (``legacy``,
    ``_model_load.untyped_arguments``'s), its leaves the loaded Function's own where it has
    them (``placeholders`` by name, ``parameters`` by uid), each made once."""

    def __init__(self, legacy, placeholders, parameters) -> None:
        self._legacy = legacy
        main = legacy.networks["main"]
        self._main = main
        self._made_by = {o: f for f in main.functions for o in f.outputs}
        self._functions: dict = {}
        self._leaves: dict = {G.uid_of(unwrap(p)): p for p in parameters}
        self._placeholders = {p.name: p for p in placeholders}

    #: what the loaded Function answers from the file before it has types
    COMPOSITE_ATTRIBUTES = frozenset({"op_name", "uid", "inputs", "owner"})

    def composite_attribute(self, name: str) -> Any:
        """The loaded composite's ``name`` (one of :data:`COMPOSITE_ATTRIBUTES`), as CNTK
        2.7's: ``op_name`` ``CompositeFunctionOpName``, ``uid`` the file's
        (``CompositeFunction6``), ``inputs`` its leaves, ``owner`` its root function."""
        if name == "op_name":
            return "CompositeFunctionOpName"
        if name == "uid":
            return self._legacy.extras.get("uid", "")
        if name == "inputs":
            return self.leaves()
        return self.root_function()

    def root_function(self) -> "FileFunction":
        """The file's root function (that of its only output where it names none)."""
        root = self._legacy.extras.get("root")
        for f in self._main.functions:
            if f.name == root:
                return self.function(f)
        return self.function(self._made_by[self._main.outputs[0]])

    def function(self, record) -> "FileFunction":
        """The :class:`FileFunction` of the file's function ``record``, made once."""
        made = self._functions.get(record.name)
        if made is None:
            made = self._functions[record.name] = FileFunction(self, record)
        return made

    def value(self, uid: str) -> Any:
        """What the file's variable ``uid`` is: a function's output, or a leaf."""
        record = self._made_by.get(uid)
        if record is not None:
            return self.function(record).outputs[list(record.outputs).index(uid)]
        leaf = self._leaves.get(uid)
        if leaf is None:
            leaf = self._leaves[uid] = self._leaf(uid)
        return leaf

    def _leaf(self, uid: str) -> Any:
        """A leaf of the file not among the loaded Function's: a constant with its value, a
        placeholder named as stored."""
        var = self._main.variables.get(uid)
        name = (var.meta.get("name") if var is not None else "") or ""
        if var is not None and var.kind == "placeholder" and name in self._placeholders:
            return self._placeholders[name]
        stored = self._legacy.parameters.get(uid)
        if stored is not None:
            leaf = constant(np.asarray(stored.value), name=name)
            G.set_uid(unwrap(leaf), uid)
            return leaf
        return placeholder(name=name)

    def leaves(self) -> tuple:
        """The leaves the loaded Function reads (its ``inputs``), in the order CNTK 2.7's
        walk meets them (``_model_load.file_leaf_order``)."""
        return tuple(self.value(uid) for uid in file_leaf_order(self._legacy))


class FileFunction:
    """A function of the file (a primitive, or a block shown by its op: ``Dense``), as CNTK
    2.7's loaded graph shows it before it has types."""

    is_composite = False

    def __init__(self, graph: FileGraph, record) -> None:
        self._graph = graph
        self._record = record
        self.outputs = tuple(FileOutput(self, uid) for uid in record.outputs)

    @property
    def op_name(self) -> str:
        return self._record.type

    @property
    def name(self) -> str:
        return self._record.meta.get("name", "") or ""

    @property
    def uid(self) -> str:
        return self._record.name

    @property
    def is_block(self) -> bool:
        return bool(self._record.meta.get("block"))

    @property
    def is_primitive(self) -> bool:
        return not self.is_block

    @property
    def root_function(self) -> "FileFunction":
        return self

    @property
    def output(self) -> "FileOutput":
        if len(self.outputs) != 1:
            raise RuntimeError(f"{self.uid} has {len(self.outputs)} outputs; take one of "
                               "outputs")
        return self.outputs[0]

    @property
    def inputs(self) -> tuple:
        """Its operands in Python's order (CNTK stores a ``Times``'s, ``TransposeTimes``'s
        and ``Gather``'s the other way round), each a leaf or another function's output."""
        from ... import serialize
        operands = list(self._record.inputs)
        alone = serialize.cntk_leaf_order([self._record], [self._record.name])
        if len(operands) == 2 and alone == operands[::-1]:
            operands.reverse()
        return tuple(self._graph.value(uid) for uid in operands)

    @property
    def arguments(self) -> tuple:
        """Its inputs but the parameters and constants."""
        return tuple(a for a in self.inputs if not (getattr(a, "is_parameter", False)
                                                    or getattr(a, "is_constant", False)))

    def __str__(self) -> str:
        """As CNTK 2.7's: ``Gather(table: Sequence[tensor], indices: Sequence[tensor]) ->
        Sequence[tensor]`` (its name first where it has one: ``d: Dense(...)``)."""
        shown = ", ".join(f"{a.name}: Sequence[tensor]" if a.name else "Sequence[tensor]"
                          for a in self.arguments)
        head = f"{self.name}: " if self.name else ""
        return f"{head}{self.op_name}({shown}) -> Sequence[tensor]"

    def __repr__(self) -> str:
        return function_repr(self.op_name, False, self.arguments, self.outputs)


class FileOutput:
    """An output of a :class:`FileFunction`: of unknown shape and dynamic axes (CNTK's
    ``[???]``), its ``owner`` the function, named as the function is."""

    is_output = True
    is_placeholder = is_input = is_parameter = is_constant = False
    is_sparse = needs_gradient = False
    shape = (-2,)

    def __init__(self, owner: FileFunction, uid: str) -> None:
        self.owner = owner
        self.uid = uid

    @property
    def name(self) -> str:
        return self.owner.name

    @property
    def dynamic_axes(self) -> tuple:
        return Axis.unknown_dynamic_axes()

    def __repr__(self) -> str:
        return f"Output('{self.name or self.uid}', [???], [???])"
