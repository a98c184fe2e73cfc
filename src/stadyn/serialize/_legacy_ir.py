"""The decoded form of another framework's model file: what the NNabla (``.nnp``, ``.nntxt``) and
CNTK (v2 ``.model``/``.dnn``, v1 BrainScript ``.dnn``) readers give back, before any mapping onto
Stadyn ops.

It is deliberately small and framework-neutral:

* :class:`LegacyModel` -- the file: its format, the networks, the parameters (NumPy arrays by
  name or uid) and everything else the file holds (``extras``: NNabla's executors, optimizers,
  datasets, monitors and configs; CNTK's model version);
* :class:`LegacyNetwork` -- one graph: functions in an order where every input is computed
  before it is used, variables by name, the graph's inputs and outputs;
* :class:`LegacyFunction` -- one node: the format's own op type name (``"Convolution"`` in every
  one of them, ``"BatchNormalization"``, NNabla's ``"Affine"``, CNTK v1's ``"RectifiedLinear"``
  ...), inputs and outputs by variable name, attributes as plain Python values, and for a CNTK
  block (a layer) the network inside it;
* :class:`LegacyVariable` -- a leaf or an intermediate value with its shape in NumPy (row-major)
  order; ``-1`` marks NNabla's batch placeholder and CNTK's inferred/free dimensions.

See ``docs/model-files.md`` for what each reader puts where.  Every reader raises
:class:`stadyn.ModelFileError` naming the file and the problem, and checks every size a file
declares against the bytes that are really there before allocating anything.
"""

from __future__ import annotations

import os
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from .._errors import ModelFileError

__all__ = ["LegacyModel", "LegacyNetwork", "LegacyFunction", "LegacyVariable",
           "LegacyParameter", "LegacyOrigin", "read_limited", "sort_functions"]

MAX_FILE_BYTES = 1 << 34       # 16 GiB: no legacy model file is read past this
MAX_TEXT_BYTES = 1 << 30       # 1 GiB of protobuf text (an .nntxt with parameters inline)
MAX_NAME_CHARS = 1 << 16       # a node, variable or parameter name
MAX_RANK = 64                  # dimensions of one tensor


@dataclass
class LegacyVariable:
    """A value of a network: ``kind`` is ``"input"``, ``"parameter"``, ``"constant"``,
    ``"buffer"`` (an NNabla intermediate), ``"output"`` (a function's result) or
    ``"placeholder"`` (a CNTK block's argument); ``shape`` is in NumPy order (``None`` when the
    file does not record it); ``meta`` holds format details (CNTK's name and dynamic axes,
    NNabla's ``repeat_id`` and initializer ...).

    Example:
        >>> from stadyn.serialize import LegacyVariable
        >>> LegacyVariable("x", "input", (-1, 3, 32, 32)).shape[1:]
        (3, 32, 32)
    """

    name: str
    kind: str
    shape: tuple[int, ...] | None
    dtype: str = "float32"
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class LegacyFunction:
    """One node: ``type`` is the format's op type name, ``inputs``/``outputs`` name variables,
    ``attrs`` holds the op's attributes as plain values (tuples for shapes), ``meta`` what the
    format records beside them (CNTK's op id and the function's own name, NNabla's loop ids).
    ``body`` is the network inside a CNTK block function (a layer).

    Example:
        >>> from stadyn.serialize import LegacyFunction
        >>> f = LegacyFunction("pool", "MaxPooling", ("x",), ("y",), {"kernel": (2, 2)})
        >>> f.type, f.attrs["kernel"], f.body is None
        ('MaxPooling', (2, 2), True)
    """

    name: str
    type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    body: "LegacyNetwork | None" = None
    meta: dict[str, Any] = field(default_factory=dict)

    def file_attributes(self) -> tuple:
        """The attributes the file gives the function, ``(name, value)`` pairs by name (not
        what the reader adds: a block read as one function's ``body`` and ``file_inputs``).

        Example:
            >>> from stadyn.serialize import LegacyFunction
            >>> LegacyFunction("e", "EyeLikeOp", ("v",), ("y",),
            ...                {"OutputSparse": False}).file_attributes()
            (('OutputSparse', False),)
        """
        return tuple(sorted((k, v) for k, v in self.attrs.items()
                            if k not in ("body", "file_inputs")))


@dataclass
class LegacyParameter:
    """A stored array: ``name`` as the framework shows it (CNTK parameter names repeat, so CNTK
    v2 keys its parameters by uid), ``value`` in NumPy order, ``need_grad`` false for running
    statistics and constants.

    Example:
        >>> import numpy as np
        >>> from stadyn.serialize import LegacyParameter
        >>> p = LegacyParameter("bn/mean", np.zeros(4, np.float32), need_grad=False)
        >>> p.value.shape, p.need_grad, p.kind
        ((4,), False, 'parameter')
    """

    name: str
    value: np.ndarray
    need_grad: bool = True
    kind: str = "parameter"


@dataclass
class LegacyNetwork:
    """A graph: ``functions`` in execution order, ``variables`` by name, ``inputs``/``outputs``
    the names a caller feeds and reads.

    Example:
        >>> from stadyn.serialize import LegacyFunction, LegacyNetwork
        >>> body = LegacyNetwork("dense", [LegacyFunction("t", "Times", ("W", "p"), ("t0",))])
        >>> block = LegacyFunction("b", "Dense", ("W", "x"), ("y",), body=body)
        >>> net = LegacyNetwork("main", [block])
        >>> [f.type for f in net.all_functions()], dict(net.op_counts())
        (['Dense', 'Times'], {'Dense': 1, 'Times': 1})
    """

    name: str
    functions: list[LegacyFunction] = field(default_factory=list)
    variables: "OrderedDict[str, LegacyVariable]" = field(default_factory=OrderedDict)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    batch_size: int | None = None
    attrs: dict[str, Any] = field(default_factory=dict)

    def all_functions(self) -> Iterable[LegacyFunction]:
        """Every function, those inside blocks too (a block before its body)."""
        for f in self.functions:
            yield f
            if f.body is not None:
                yield from f.body.all_functions()

    def op_counts(self) -> Counter:
        """How many functions of each type (blocks' bodies included)."""
        return Counter(f.type for f in self.all_functions())


@dataclass(frozen=True)
class LegacyOrigin:
    """Where a Variable of a network built from a legacy file comes from: ``kind`` is
    ``"input"``, ``"parameter"``, ``"constant"``, ``"function"`` (the ``output``-th output of a
    primitive function) or ``"block"`` (a CNTK layer applied to ``arguments``, the Variables it
    was given); ``uid`` is the file's id (CNTK's ``Plus12``, ``Parameter4``), ``name`` the name
    the framework shows ('' for none), ``op_name`` the function's op type (CNTK's ``Plus``, a
    block's layer kind ``Dense``); ``sequence_axis`` the name of a sequence input's axis when
    it is not CNTK's default one (``C.Axis('inputAxis')``; ``''`` the axis of that name CNTK
    2.7 gives a ``cntk.exe`` file's input; None: the default one, or none); ``operands`` the
    Variables CNTK shows as a function's inputs, in its order, where the op that made the
    Variable reads them otherwise (a function inside a loop, which the loop's recurrence
    computes: what it reads from outside the loop; empty: the op's own inputs);
    ``attributes`` a block's own attributes as ``(name, value)`` pairs (CNTK's
    ``LocalResponseNormalization``'s ``depthRadius``, ``alpha``, ...), and a CNTK v2 file's
    function's (``EyeLikeOp``'s ``OutputSparse``), as the file stores them (None: a file that
    gives none, a legacy one's function).

    Example:
        >>> from stadyn.serialize import LegacyOrigin
        >>> o = LegacyOrigin("function", "ReLU79", "act", "ReLU")
        >>> o.kind, o.name, o.output, o.arguments
        ('function', 'act', 0, ())
    """

    kind: str
    uid: str
    name: str = ""
    op_name: str = ""
    output: int = 0
    arguments: tuple = ()
    sequence_axis: "str | None" = None
    operands: tuple = ()
    attributes: "tuple | None" = None


@dataclass
class LegacyModel:
    """A decoded model file.

    Example:
        >>> import numpy as np
        >>> from stadyn.serialize._legacy_ir import *
        >>> net = LegacyNetwork("main", [LegacyFunction("f", "Tanh", ("x",), ("y",))])
        >>> m = LegacyModel("nnp", "m.nnp", {"main": net},
        ...                 OrderedDict(w=LegacyParameter("w", np.zeros((2, 3), np.float32))))
        >>> m.op_counts(), m.parameter_count()
        (Counter({'Tanh': 1}), 6)
    """

    format: str
    path: str
    networks: "OrderedDict[str, LegacyNetwork]"
    parameters: "OrderedDict[str, LegacyParameter]" = field(default_factory=OrderedDict)
    extras: dict[str, Any] = field(default_factory=dict)

    def op_counts(self) -> Counter:
        """Function types counted over every network."""
        total: Counter = Counter()
        for net in self.networks.values():
            total.update(net.op_counts())
        return total

    def parameter_count(self) -> int:
        """Elements in all parameters and constants."""
        return sum(int(p.value.size) for p in self.parameters.values())


def fail(path: str, message: str) -> ModelFileError:
    """The error every reader raises: ``ModelFileError("<path>: <message>")``."""
    return ModelFileError(f"{path}: {message}")


def read_limited(path: str | os.PathLike, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of ``path``, refusing a missing file, a folder or one larger than ``limit``."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise fail(path, "is a folder, not a model file")
    try:
        size = os.path.getsize(path)
        if size > limit:
            raise fail(path, f"is {size} bytes; files over {limit} bytes are not read")
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise fail(path, "no such model file") from None
    except OSError as exc:
        raise fail(path, f"cannot read the file ({exc.strerror or exc})") from None


def sort_functions(functions: list[LegacyFunction], available: Iterable[str], path: str,
                   where: str, cycle_breakers: Iterable[str] = ()) -> list[LegacyFunction]:
    """``functions`` in an order where each input is available before use (the file's order
    where it already is one); ``available`` names the leaves, ``cycle_breakers`` values that
    count as available only where the functions left read each other in a cycle (CNTK's
    placeholders standing for a function's output).  A cycle, or an input nothing produces,
    is a :class:`ModelFileError` naming the function."""
    breakers = set(cycle_breakers)
    ready = set(available) - breakers
    pending = list(functions)
    out: list[LegacyFunction] = []
    while pending:
        rest = []
        for f in pending:
            if all(i in ready for i in f.inputs):
                out.append(f)
                ready.update(f.outputs)
            else:
                rest.append(f)
        waiting = {i for f in rest for i in f.inputs if i in breakers and i not in ready}
        if len(rest) == len(pending) and waiting:
            ready.update(waiting)
        elif len(rest) == len(pending):
            f = rest[0]
            missing = sorted(i for i in f.inputs if i not in ready)
            produced = {o for g in rest for o in g.outputs}
            why = ("in a cycle" if all(m in produced for m in missing)
                   else "reads a variable nothing produces")
            raise fail(path, f"{where}: function {f.name!r} ({f.type}) {why}: "
                             f"{', '.join(map(repr, missing[:4]))}")
        pending = rest
    return out
