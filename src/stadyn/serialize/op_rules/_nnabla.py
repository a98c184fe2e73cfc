"""The ``nnp_import`` helper: most catalog ops are one NNabla function each, with the same
attributes under the same names, so one line declares the mapping.

``nnabla(F.convolution, "Convolution", base_axis=int, pad=tuple, ...)`` maps the NNabla
function type ``Convolution`` onto ``F.convolution``: the fields of its ``<type>_param`` message
with their kinds (``int``, ``float``, ``bool``, ``str``, ``tuple`` for a ``Shape``, ``list`` for a
repeated int64 field) become the op's keyword arguments of the same name, unless ``names`` says
otherwise (NNabla's ``keep_dims`` is the catalog's ``keepdims``) or ``convert(node, fields)``
rewrites them (NNabla's ``axes`` list is the catalog's ``axis`` tuple).  NNabla writes proto3
text, which leaves out fields equal to zero, so an absent field reads as that zero
(:meth:`~stadyn.serialize._legacy_api.LegacyNode.field`), not as the catalog's default.

The same declaration writes the op back (``.nnp`` export, :mod:`stadyn.serialize._nnp_export`):
the op's attributes under the field names, unless ``export(emitter, inputs, attrs)`` returns
the fields itself (NNabla's values for the catalog's ``None`` defaults: ``axis=None`` is the
last axis, ``stride=None`` the kernel).  An attribute left ``None`` without ``export`` cannot
be written (NNabla would read the absent field as zero).

``draws=True`` marks a random function: its op is given ``rule="nnabla"`` (NNabla 1.39's CPU
numbers) when the file is loaded with ``draws="nnabla"`` (:attr:`LegacyNode.draws`), as
compat.nnabla's loaders load it, and draws torch's numbers otherwise.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

__all__ = ["nnabla", "last_axis_export", "last_axis", "all_axes", "spatial", "reshaped_nnp"]

_KINDS = (int, float, bool, str, tuple, list)


class NnablaDeclaration:
    """One ``nnabla(...)`` declaration: the NNabla type, its fields and their catalog names;
    :meth:`export` is the op's ``nnp_export`` rule."""

    def __init__(self, type_name: str, fields: dict, renamed: dict,
                 export: Callable[..., dict] | None, broadcast: bool = False,
                 defaults: Mapping[str, Any] | None = None):
        self.type = type_name
        self.fields = fields
        self.renamed = renamed
        self._export = export
        self.broadcast = broadcast
        self.defaults = dict(defaults or {})

    def export(self, e, inputs, attrs) -> None:
        """Write the op as one NNabla function of this type."""
        if self._export is not None:
            values = self._export(e, inputs, attrs)
        else:
            values = {}
            for f in self.fields:
                value = attrs.get(self.renamed.get(f, f))
                if value is None and f in self.defaults:
                    default = self.defaults[f]
                    value = default(e, inputs, attrs) if callable(default) else default
                if value is None:
                    e.unsupported(f"{self.renamed.get(f, f)}=None has no NNabla value")
                values[f] = value
        params = {}
        for f, kind in self.fields.items():
            if f not in values:
                continue
            value = values[f]
            if kind is tuple:
                params[f] = tuple(int(v) for v in value)
            elif kind is list:
                params[f] = list(value)
            else:
                params[f] = kind(value)
        inputs = [i for i in inputs if i is not None]
        if self.broadcast:
            inputs = e.same_rank(inputs)
        e.function(self.type, inputs, params)


def nnabla(op: Callable[..., Any], type: str, *, names: Mapping[str, str] | None = None,
           convert: Callable[..., dict] | None = None, export: Callable[..., dict] | None = None,
           broadcast: bool = False, defaults: Mapping[str, Any] | None = None,
           draws: bool = False, **fields: type) -> dict[str, Callable[..., Any]]:
    """The ``nnp_import`` mapping ``{type: build}`` calling ``op`` on the function's inputs with
    its parameter fields (see the module docstring).  ``broadcast``: NNabla's function
    broadcasts only between inputs of the same rank, so the export reshapes a lower-rank input
    to it first (NumPy's rule: leading axes of size 1).  ``defaults``: the value NNabla gives a
    field whose catalog attribute is ``None`` (``{"axis": 0}``), or a function
    ``(emitter, inputs, attrs)`` computing it (``last_axis``, ``spatial(1)``).  ``draws``: a
    random function, given ``rule="nnabla"`` where the node's ``draws`` is ``"nnabla"``.

    Example:
        >>> import stadyn.functions as F
        >>> sorted(nnabla(F.softmax, "Softmax", axis=int))
        ['Softmax']
    """
    bad = [k for k, kind in fields.items() if kind not in _KINDS]
    if bad:
        raise TypeError(f"NNabla function {type}: field kinds are "
                        f"{[k.__name__ for k in _KINDS]}; check {bad}")
    renamed = dict(names or {})

    def build(node):
        values = {f: node.field(f, kind) for f, kind in fields.items()}
        if convert is not None:
            kwargs = convert(node, values)
        else:
            kwargs = {renamed.get(f, f): v for f, v in values.items()}
        if draws and getattr(node, "draws", "torch") == "nnabla":
            kwargs["rule"] = "nnabla"
        return op(*[node.var(i) for i in range(node.n_inputs)], **kwargs)
    build.__name__ = f"{type}_nnp"
    build.nnabla_declaration = NnablaDeclaration(type, fields, renamed, export, broadcast,
                                                 defaults)
    return {type: build}


def shape_or_none(value: tuple) -> tuple | None:
    """An NNabla ``Shape`` field as a catalog argument: the empty shape (absent) is ``None``.

    Example:
        >>> shape_or_none(()), shape_or_none((1, 1))
        (None, (1, 1))
    """
    return tuple(value) if value else None


def last_axis_export(e, inputs, attrs) -> dict:
    """The fields of an op whose ``axis=None`` is NNabla's default, the last axis
    (``Softmax``, ``SoftmaxCrossEntropy``...)."""
    axis = attrs["axis"]
    ndim = len(e.shape(inputs[0]))
    return {"axis": ndim - 1 if axis is None else int(axis) % ndim}


def last_axis(e, inputs, attrs) -> int:
    """NNabla's default of an ``axis`` the catalog leaves ``None``: the first input's last."""
    return len(e.shape(inputs[0])) - 1


def spatial(value: int):
    """NNabla's default of a convolution's ``pad`` (0), ``stride`` or ``dilation`` (1) the
    catalog leaves ``None``: ``value`` on each spatial axis of ``x`` (those after
    ``base_axis``)."""
    def default(e, inputs, attrs) -> tuple:
        return (value,) * (len(e.shape(inputs[0])) - int(attrs.get("base_axis", 1)) - 1)
    return default


def all_axes(e, inputs, attrs) -> list:
    """NNabla's default of an ``axes`` the catalog leaves ``None``: every axis of the first
    input."""
    return list(range(len(e.shape(inputs[0]))))


def reshaped_nnp(type_name: str, nnabla_shape: Callable[..., tuple],
                 params: Callable[[dict], dict] = lambda attrs: {}) -> Callable[..., None]:
    """The ``nnp_export`` rule of an op whose NNabla function gives another shape than the
    catalog op (``nnabla_shape(input_shape, attrs)``): the function, then a ``Reshape`` to the
    catalog's shape where the two differ, so NNabla and the import compute the same graph."""
    def export(e, inputs, attrs):
        want = tuple(e.shape(e.outputs[0]))
        theirs = tuple(int(d) for d in nnabla_shape(tuple(e.shape(inputs[0])), attrs))
        if want == theirs:
            e.function(type_name, inputs, params(attrs))
            return
        middle = e.variable(f"{type_name}_output", theirs)
        e.function(type_name, inputs, params(attrs), [middle])
        e.function("Reshape", [middle], {"shape": want})
    return export
