"""A loaded model's functions written with the attributes their file gave them, as CNTK 2.7
writes a model it loaded again (``C.load_model(path).save(other)``: the function keeps the
attribute dictionary it was read with, ``PrimitiveFunction::Serialize``).

The CNTK v2 writer computes each function's attributes from Stadyn's op; for the ops below,
where the caller gives the attributes of the file the value was read from (a CNTK v2 file's,
or what CNTK 2.7 makes of a cntk.exe node: :mod:`._cntk_v1_attributes`) and the function
written is the file's op, the file's attributes are written instead -- the same computation,
in the file's own form: a cntk.exe convolution's strides and automatic padding over the
channel axis too (``(32, 2, 2)``, ``[False, True, True]``; Stadyn computes ``(1, 2, 2)`` and
explicit pads), its pooling window over three axes, its ``Times``' ``inferInputRankToMap``,
a batch normalisation's ``useCuDNNEngine``; an ``EyeLikeOp``'s ``OutputSparse`` (the compat
gives it for what ``eye_like`` made too: ``sparse_output``).

Example:
    >>> from stadyn.serialize import _cntk_write_proto as P
    >>> written = as_loaded("Times", {"outputRank": P.size_t(1),
    ...                               "inferInputRankToMap": P.integer(-1)},
    ...                     {"outputRank": 1, "inferInputRankToMap": 0})
    >>> written["inferInputRankToMap"]
    Value(kind='int', value=0)
"""

from __future__ import annotations

from . import _cntk_write_proto as P

__all__ = ["LOADED_OPS", "as_loaded"]

_SHAPE, _FLAGS = "shape", "flags"
# each attribute's CNTK type (PrimitiveFunction's), by op
_KINDS = {
    "Convolution": {"strides": _SHAPE, "kernelShape": _SHAPE, "lowerPad": _SHAPE,
                    "upperPad": _SHAPE, "dilation": _SHAPE, "outputShape": _SHAPE,
                    "autoPadding": _FLAGS, "sharing": _FLAGS, "transpose": P.boolean,
                    "maxTempMemSizeInSamples": P.size_t, "groups": P.size_t,
                    "sequential": P.boolean},
    "Pooling": {"strides": _SHAPE, "poolingWindowShape": _SHAPE, "lowerPad": _SHAPE,
                "upperPad": _SHAPE, "autoPadding": _FLAGS, "poolingType": P.size_t,
                "ceilOutDim": P.boolean, "includePad": P.boolean},
    "BatchNormalization": {"spatial": P.boolean, "normalizationTimeConstant": P.double,
                           "blendTimeConstant": P.double, "epsilon": P.double,
                           "useCuDNNEngine": P.boolean, "disableRegularization": P.boolean},
    "Times": {"outputRank": P.size_t, "inferInputRankToMap": P.integer},
    # (the caller's record of how eye_like showed its value: sparse_output, CNTK's OutputSparse)
    "EyeLikeOp": {"OutputSparse": P.boolean},
}
#: the ops written with the attributes of the file they were loaded from
LOADED_OPS = frozenset(_KINDS)


def _value(kind, value):
    if kind == _SHAPE:
        return P.shape(tuple(int(d) for d in value))
    if kind == _FLAGS:          # (Python's order; stored reversed, as shapes are)
        return P.vector([P.boolean(bool(b)) for b in list(value)[::-1]])
    return kind(value)


def as_loaded(op: str, attributes: dict, loaded: dict) -> dict:
    """``attributes`` (what the writer computed for a function ``op``) as the file gave them,
    ``loaded`` (the file's attributes, CNTK's names, values as CNTK's Python shows them): the
    file's set of attributes, each of the file's value; the computed ones where the file
    gives an attribute Stadyn does not know the type of."""
    kinds = _KINDS[op]
    if any(k not in kinds for k in loaded):
        return attributes
    return {k: _value(kinds[k], v) for k, v in sorted(loaded.items())}
