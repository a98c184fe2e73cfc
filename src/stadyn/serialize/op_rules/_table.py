"""The table of op rules: one :class:`OpRules` record per op, keyed by the op's spec object.

A record's fields after ``spec`` are its *columns*, one per file format and direction; each holds
the op's rule for that format or :class:`Unmapped` with the one-line reason the op has none.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ...graph import OpSpec

__all__ = ["OpRules", "Unmapped", "register_rules", "rules_for"]


@dataclass(frozen=True)
class Unmapped:
    """An op's deliberate absence from one column of :class:`OpRules`, with the reason.

    Example:
        >>> Unmapped("ONNX has no op for it").reason
        'ONNX has no op for it'
    """

    reason: str

    def __post_init__(self):
        if not isinstance(self.reason, str) or not self.reason.strip() or "\n" in self.reason:
            raise ValueError(f"an Unmapped column needs a one-line reason, got {self.reason!r}")


@dataclass(frozen=True, eq=False)
class OpRules:
    """How one op is written to and read from each file format.

    Attributes:
        spec: the op's declaration (:class:`stadyn.graph.OpSpec`), the record's key.
        onnx_export: ``export(emitter, inputs, attrs) -> output name(s)``: emits the op's ONNX
            nodes through an :class:`stadyn.serialize.Emitter`; ``inputs`` are the ONNX names of
            the node's inputs (``""`` for an absent optional one), ``attrs`` every attribute
            with defaults filled in.  The first line of its docstring says what the op exports
            as (``docs/model-files.md``'s table).
        onnx_import: ``{onnx_op_type: build}``; ``build(node)`` receives an
            :class:`stadyn.serialize.ImportedNode` and returns the output Variable(s), built
            from ``F`` functions.
        nnp_import: ``{nnabla_function_type: build}``; ``build(node)`` receives a
            :class:`stadyn.serialize.LegacyNode` for one function of a decoded NNabla network
            (its ``<type>_param`` fields in ``node.attrs``) and returns the output Variable(s).
        nnp_export: ``export(emitter, inputs, attrs)``: writes the op as NNabla functions
            through an ``NnpEmitter`` (:mod:`stadyn.serialize._nnp_export`); ``inputs`` are the
            NNabla variable names of the node's inputs (``None`` for an absent optional one).
            Left ``None``, the inverse of an ``nnp_import`` declared with ``nnabla(...)`` is
            used.
        cntk_import: ``{cntk_op_name: build}`` for CNTK 2 model files: the op names CNTK's
            Python API reports (``Times``, ``Pooling``, ``ReLU``...; a block is expanded into its
            body, so layers need no rule), ``build(node)`` as for ``nnp_import``, with the
            attributes as CNTK's Python API shows them and ``node.batched(i)`` telling which
            inputs carry the batch axis.
        cntk_v1_import: ``{node_type: build}`` for CNTK v1 (BrainScript ``cntk.exe``) model files:
            their node types (``RectifiedLinear``, ``Times``...) with the fields the node stores
            (``stadyn/serialize/_cntk_v1_format.py``), mostly CNTK 2's rule after renaming them.
        model_export: ``export(writer, attrs) -> JSON attrs`` for Stadyn model files, for an op
            whose attributes are not all plain values: returns every attribute as JSON, using
            the writer's ``value(v)`` for plain values and ``graph(leaves, nodes, outputs)``
            for a graph of its own (a recurrence's step).  Left ``None``, the attributes are
            stored as plain values (``docs/model-files.md``).
        model_import: ``build(reader, attrs, inputs) -> attrs``: the inverse of
            ``model_export``: the attribute values to call the op with, from the stored JSON
            and the node's input Variables (``reader.value``, ``reader.graph``,
            ``reader.fail(message)``).

    A column of :meth:`required_columns` left ``None`` is undeclared: the completeness test
    (``tests/serialize/test_op_rules.py``) names the op and the column.  The import columns of
    NNabla and CNTK files are *partial* by design: they map another framework's op types onto
    the catalog, and most catalog ops have no counterpart there, so ``None`` means "no function
    of that format becomes this op" (a file using an op type no rule maps is refused naming the
    function and its type; ``docs/model-files.md`` lists the mapped types).

    Example:
        >>> import stadyn.functions as F
        >>> from stadyn.serialize import rules_for
        >>> sorted(rules_for(F.relu).onnx_import)
        ['Relu']
    """

    spec: OpSpec
    onnx_export: Callable[..., Any] | Unmapped | None = None
    onnx_import: Mapping[str, Callable[..., Any]] | Unmapped | None = None
    nnp_import: Mapping[str, Callable[..., Any]] | Unmapped | None = None
    nnp_export: Callable[..., Any] | Unmapped | None = None
    cntk_import: Mapping[str, Callable[..., Any]] | Unmapped | None = None
    cntk_v1_import: Mapping[str, Callable[..., Any]] | Unmapped | None = None
    model_export: Callable[..., Any] | Unmapped | None = None
    model_import: Callable[..., Any] | Unmapped | None = None

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        """The format columns, in order (every field but ``spec``)."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.name != "spec")

    @classmethod
    def required_columns(cls) -> tuple[str, ...]:
        """The columns every op fills with a rule or a reason (ONNX's, both directions)."""
        return tuple(c for c in cls.columns() if c.startswith("onnx_"))

    def __post_init__(self):
        for column in self.columns():
            value = getattr(self, column)
            if value is None or isinstance(value, Unmapped):
                continue
            if isinstance(value, Mapping):
                bad = [k for k, v in value.items() if not isinstance(k, str) or not callable(v)]
                if bad or not value:
                    raise TypeError(f"op {self.spec.name!r}: {column} maps names to rules, got "
                                    f"{dict(value)!r}")
                object.__setattr__(self, column, dict(value))
            elif not callable(value):
                raise TypeError(f"op {self.spec.name!r}: {column} is a rule (a function) or "
                                f"Unmapped(reason), got {value!r}")


_RULES: dict[OpSpec, OpRules] = {}


def _spec_of(op: Any) -> OpSpec:
    spec = op if isinstance(op, OpSpec) else getattr(op, "spec", None)
    if not isinstance(spec, OpSpec):
        raise TypeError(f"rules are registered against an op (an F function or its spec), got "
                        f"{op!r}")
    return spec


def register_rules(op: Any, **columns: Any) -> OpRules:
    """Register the file-format rules of ``op`` (an ``F`` function or its :class:`OpSpec`):
    one keyword per column of :class:`OpRules`, each a rule or :class:`Unmapped`.  An op's rules
    are registered once, all columns together.

    Example (an op declared outside the catalog, as a user's own op may be):

        >>> import stadyn as sd
        >>> from stadyn.graph import OpSpec, apply
        >>> from stadyn.serialize import Unmapped, register_rules, to_onnx_model
        >>> negate = OpSpec.from_function(lambda x: -x, 1, name="negate")
        >>> def negate_onnx(g, inputs, attrs):
        ...     '''Neg'''
        ...     return g.op("Neg", [inputs[0]])
        >>> _ = register_rules(negate, onnx_export=negate_onnx,
        ...                    onnx_import=Unmapped("ONNX's Neg imports as mul_scalar"))
        >>> [n.op_type for n in to_onnx_model(apply(negate, (sd.Variable((2,)),), {})).graph.node]
        ['Neg']
    """
    spec = _spec_of(op)
    if spec in _RULES:
        raise ValueError(f"op {spec.name!r}: its rules are registered twice")
    record = OpRules(spec, **columns)
    _RULES[spec] = record
    return record


def kept_in_model_files(op: Any) -> bool:
    """Whether Stadyn's model file holds ``op`` (an ``F`` function or its :class:`OpSpec`): an
    op not declared unstorable, or one that is (a CNTK user function, which runs Python) that
    its own ``model_export`` and ``model_import`` rules store and read back (its module, class
    and state).

    Example:
        >>> import stadyn.functions as F
        >>> kept_in_model_files(F.relu), kept_in_model_files(F.cntk_user_function)
        (True, True)
    """
    spec = _spec_of(op)
    if not spec.unstorable:
        return True
    rules = _RULES.get(spec)
    return rules is not None and callable(rules.model_export) and callable(rules.model_import)


def rules_for(op: Any) -> OpRules | None:
    """The rules registered for ``op`` (an ``F`` function or its :class:`OpSpec`), or None.

    Example:
        >>> import stadyn.functions as F
        >>> rules_for(F.convolution).onnx_export.__doc__
        'Conv'
    """
    return _RULES.get(_spec_of(op))
