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
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

__all__ = ["nnabla"]

_KINDS = (int, float, bool, str, tuple, list)


def nnabla(op: Callable[..., Any], type: str, *, names: Mapping[str, str] | None = None,
           convert: Callable[..., dict] | None = None,
           **fields: type) -> dict[str, Callable[..., Any]]:
    """The ``nnp_import`` mapping ``{type: build}`` calling ``op`` on the function's inputs with
    its parameter fields (see the module docstring).

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
        return op(*[node.var(i) for i in range(node.n_inputs)], **kwargs)
    build.__name__ = f"{type}_nnp"
    return {type: build}


def shape_or_none(value: tuple) -> tuple | None:
    """An NNabla ``Shape`` field as a catalog argument: the empty shape (absent) is ``None``.

    Example:
        >>> shape_or_none(()), shape_or_none((1, 1))
        (None, (1, 1))
    """
    return tuple(value) if value else None
