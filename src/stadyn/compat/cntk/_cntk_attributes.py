"""The attributes CNTK 2.7 reports for an op (``Function.attributes``) where Stadyn's op
records others: kept per output Variable, weakly, by the op that made it.

CNTK writes a static axis counted from the last (its C++ order): sample axis ``a`` (negative
ones counted from the end) is CNTK's ``-a - 1``, shown as ``('ordered', 'static', -a - 1)``.

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> table = C.constant(np.zeros((4, 3), np.float32))
    >>> C.gather(table, C.input_variable(2), axis=1).root_function.attributes
    {'axis': ('ordered', 'static', -2)}
"""

from __future__ import annotations

import weakref

from ...graph import Variable
from ...ops import RandomStream
from ...serialize import CNTK_RANDOM_DISTRIBUTIONS

__all__ = ["CNTK_ATTRIBUTES", "CNTK_ROOT_ATTRIBUTES", "file_attribute", "static_axis_attribute",
           "with_rng_state", "random_op_attributes"]

CNTK_ATTRIBUTES: "weakref.WeakKeyDictionary[Variable, dict]" = weakref.WeakKeyDictionary()
# the attributes of the op inside a block (its ``block_root``) where they are CNTK's own: a
# GatherOp's TransposeAxes has ``axis1``/``axis2``
CNTK_ROOT_ATTRIBUTES: "weakref.WeakKeyDictionary[Variable, dict]" = weakref.WeakKeyDictionary()


def static_axis_attribute(axis: int) -> tuple:
    """How CNTK 2.7 shows static axis ``axis`` (Python's order, negative from the end)."""
    return ("ordered", "static", -int(axis) - 1)


def file_attribute(value):
    """An attribute as read from a CNTK file, as CNTK 2.7 shows it: a static axis as
    ``('ordered', 'static', index)`` (the index as stored), a dynamic one as
    ``('unordered', 'dynamic', name)`` (``'ordered'`` for a sequence axis), lists item by
    item.

    Example:
        >>> from types import SimpleNamespace as Axis    # (a file's axis, as the reader gives it)
        >>> file_attribute([Axis(static_axis_idx=1, is_dynamic=False, ordered=True), 3])
        [('ordered', 'static', 1), 3]
    """
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(file_attribute(v) for v in value)
    dynamic = getattr(value, "is_dynamic", None)
    if dynamic is None:
        return value
    if dynamic:
        return ("ordered" if value.ordered else "unordered", "dynamic", value.name)
    return ("ordered", "static", int(value.static_axis_idx))


def _stream(v: Variable) -> "RandomStream | None":
    """The random stream the op computing ``v`` draws from, if it has one (a float64 draw of
    a shape of its own, drawn in float32 and cast: its draw's; an inclusion frequency of a
    row of weights, a row out: its op's)."""
    if v.parent is not None and v.parent.spec.name == "cast" and v.parent.inputs:
        v = v.parent.inputs[0]
    elif v.parent is not None and v.parent.spec.name == "reshape" and \
            v.parent.inputs[0].parent is not None and \
            v.parent.inputs[0].parent.spec.name == "random_sample_inclusion_frequency":
        v = v.parent.inputs[0]
    seed = v.parent.attrs.get("seed") if v.parent is not None else None
    return seed if isinstance(seed, RandomStream) else None


def with_rng_state(v: Variable, shown: dict) -> dict:
    """``shown`` (the attributes CNTK shows for the op computing ``v``) with its ``rngSeed``
    and ``rngOffset`` as they are now: CNTK 2.7 shows the offset where the stream stood at the
    Function's last save (``RandomStream.saved_offset``), the one it was made with until then."""
    stream = _stream(v)
    if stream is not None and "rngOffset" in shown:
        shown["rngSeed"], shown["rngOffset"] = int(stream), stream.saved_offset()
    return shown


def _drawn_shape(like: Variable) -> dict:
    """``newShape`` and ``newDataType`` (1 float, 2 double) of a draw of a shape of its own
    (``cntk.random.normal(shape)``: a file's draw "like" a constant made for it), else none."""
    made = like.parent.spec.name if like.parent is not None else None
    if made == "cast" and like.parent.inputs[0].parent is not None and \
            like.parent.inputs[0].parent.spec.name == "constant":
        made = "constant"
    if made != "constant":
        return {}
    return {"newDataType": 2 if str(like.dtype).endswith("float64") else 1,
            "newShape": tuple(like.shape)}


def random_op_attributes(v: Variable) -> "dict | None":
    """The attributes CNTK 2.7 shows for the random op computing ``v`` where the op was not
    made by the compat's own function (a loaded file's): a ``RandomDistribution``'s type,
    arguments, ``rngSeed`` and ``rngOffset``, a ``Dropout``'s rate, a ``RandomSample``'s
    ``numSamples`` and ``allowDuplicates``, with their ``rngSeed`` and ``rngOffset``; None for
    any other op.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.Variable((2, 3))
        >>> random_op_attributes(F.rand_like(x, -1.0, 1.0, seed=RandomStream(5, offset=12)))
        {'randomDistributionArgs': [-1.0, 1.0], 'randomDistributionType': 'uniform', \
'rngOffset': 12, 'rngSeed': 5}
    """
    stream = _stream(v)
    if stream is None:
        return None
    attrs = v.parent.attrs
    name = v.parent.spec.name
    if name in CNTK_RANDOM_DISTRIBUTIONS:
        kind, keys = CNTK_RANDOM_DISTRIBUTIONS[name]
        shown = {"randomDistributionArgs": [float(attrs[k]) for k in keys],
                 "randomDistributionType": kind, "rngOffset": stream.saved_offset(),
                 "rngSeed": int(stream)}
        return {**_drawn_shape(v.parent.inputs[0]), **shown}
    if name == "dropout":
        return {"dropoutRate": float(attrs["p"]), "rngOffset": stream.saved_offset(),
                "rngSeed": int(stream)}
    if name == "random_sample":
        return {"allowDuplicates": bool(attrs["allow_duplicates"]),
                "numSamples": int(attrs["num_samples"]), "rngOffset": stream.saved_offset(),
                "rngSeed": int(stream)}
    return None
