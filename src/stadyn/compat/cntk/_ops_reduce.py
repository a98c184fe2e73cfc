"""CNTK's reductions and ops along an axis: ``reduce_*``, ``argmax``/``argmin``,
``softmax``/``log_softmax``/``hardmax``, ``top_k``.

``axis=None`` (or ``Axis.all_static_axes()``) reduces every axis of a sample to one number;
an int (or a tuple) keeps the reduced axes with size 1 unless ``keepdims=False`` (which,
as in CNTK 2.7, takes axes given by number only: a ValueError for the others, None too);
``Axis.default_batch_axis()`` reduces over the samples of a minibatch (together with static
axes when given in a list with them: ``(Axis.default_batch_axis(), 1)`` keeps axis 1 with size
1 and drops the batch axis), ``Axis.all_axes()`` over everything (of sequences, their steps,
not the padding).

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> x = C.input_variable((2, 3))
    >>> data = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    >>> C.reduce_sum(x).eval(data).tolist(), C.reduce_max(x, axis=1).eval(data).tolist()
    ([15.0], [[[2.0], [5.0]]])
    >>> C.argmax(x, axis=0).eval(data).tolist()
    [[[1.0, 1.0, 1.0]]]
"""

from __future__ import annotations

import math
import re

from ... import cntk_semantics as S
from ... import functions as F
from ...graph import Variable
from . import _graph as G
from ._deferrable import defer_module
from ._sparse_operands import refuse_sparse_operands
from ._adapt import (batched, lead_axes, named, one_op, operand, refuse_several_outputs,
                     swig_count, reshape_samples, sample_axes, sample_axis, sample_shape, wrap)
from ._axis import Axis
from ._axis_arguments import takes_axes
from ._one_sample import one_sample_values
from ._run_checks import refuse_when_run
from ._cntk_attributes import CNTK_ATTRIBUTES, CNTK_ROOT_ATTRIBUTES, static_axis_attribute
from ._seq_axes import free_shown, free_steps

__all__ = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
           "reduce_log_sum_exp", "reduce_l1", "reduce_l2", "reduce_sum_square", "argmax",
           "argmin", "softmax", "log_softmax", "hardmax", "top_k"]


def _axes(x, axis) -> tuple[list[int], str]:
    """The Stadyn axes ``axis`` stands for, and what kind of reduction it is: ``sample`` (all
    of a sample's axes), ``some`` (given axes), ``batch``, ``all``."""
    if axis is None or (isinstance(axis, Axis) and axis == Axis.all_static_axes()):
        return sample_axes(x), "sample"
    if isinstance(axis, Axis) and axis == Axis.all_axes():
        return list(range(len(operand(x).shape))), "all"
    if isinstance(axis, Axis) and axis.is_batch_axis:
        if not batched(x):
            raise ValueError("reduce over the batch axis of a value without one")
        return [0], "batch"
    items = axis if isinstance(axis, (list, tuple)) else [axis]
    if any(isinstance(a, Axis) and a.is_batch_axis for a in items):
        # CNTK 2.7 mixes the batch axis with static ones: the samples and those axes go
        if not batched(x):
            raise ValueError("reduce over the batch axis of a value without one")
        static = [a for a in items if not (isinstance(a, Axis) and a.is_batch_axis)]
        return [0] + _axes(x, static)[0], "batch+some"
    return [sample_axis(x, a.static_axis_index() if isinstance(a, Axis) else int(a))
            for a in items], "some"


# what a padded step of a sequence holds when a reduction over all axes reads it: nothing
_PADDING = {"ReduceSum": 0.0, "ReduceMean": 0.0, "ReduceMax": -math.inf, "ReduceMin": math.inf,
            "ReduceProd": 1.0, "ReduceLogSum": -math.inf, "ReduceL1": 0.0, "ReduceL2": 0.0,
            "ReduceSumSquare": 0.0}


_BLOCKS = ("ReduceL1", "ReduceL2", "ReduceSumSquare")


def _over_steps(op_name: str, fn, v, axes):
    """A reduction over all axes of sequences reads their steps only, as CNTK 2.7's (its
    ``reduce_mean`` divides by the real steps' values): the padded steps hold the
    reduction's neutral value."""
    padded, mask = F.sequence_unpack(v, v.sequence_lengths, padding_value=_PADDING[op_name])
    if op_name != "ReduceMean":
        return fn(padded, axes, False)
    values = F.mul_scalar(F.sum(mask), float(math.prod(v.shape[2:])))
    return F.div2(F.sum(padded, axis=axes, keepdims=False), values)


def _names_dynamic_axis(axis) -> bool:
    """Whether ``axis`` is (or lists) an axis other than a sample's static one: None (all of
    a sample's axes), ``Axis.all_static_axes()``, ``Axis.all_axes()``, the batch axis."""
    items = axis if isinstance(axis, (list, tuple)) else [axis]
    return any(a is None or (isinstance(a, Axis) and not a.is_static_axis) for a in items)


def _refuse_dropped_dynamic_axis(op_name: str, axis, keepdims) -> None:
    if not keepdims and _names_dynamic_axis(axis):
        raise ValueError(f"{op_name}: keepdims=False with the axis {axis!r} (None: all of a "
                         f"sample's axes); CNTK 2.7 drops static axes only, given by number, "
                         f"and refuses it too: 'Cannot query the static axis index for a "
                         f"non-static axis'")


def _refuse_no_axes(op_name: str, axis) -> None:
    """CNTK 2.7's RuntimeError for a reduction given an empty list (or tuple) of axes, as it
    is made (its block's inner ReduceElements, over the block's placeholder)."""
    if isinstance(axis, (list, tuple)) and not axis:
        raise RuntimeError("ReduceElements: operand Placeholder('operand', [???], [???]); Empty "
                           f"axes argument provided.\n({op_name} with axis={axis!r}: give "
                           "axis=None for all of a sample's axes, or the axes to reduce)")


def _block_root(op_name: str, kind: str, keepdims) -> str:
    """The op at the root of CNTK 2.7's block of the reduction ``op_name`` over axes of
    ``kind``: ``ReduceElements`` over all of a sample's axes, ``MultiAxisReduce`` (itself a
    block) along given ones, ``Reshape`` where they are dropped; ``ReduceL2``'s is ``Sqrt``."""
    if op_name == "ReduceL2":
        return "Sqrt"
    if op_name in _BLOCKS or kind not in ("some", "batch+some"):
        return "ReduceElements"
    return "MultiAxisReduce" if keepdims else "Reshape"


# CNTK 2.7's reductionOpName of each reduction
_CNTK_KIND = {"ReduceSum": "Sum", "ReduceMean": "Mean", "ReduceMax": "Max", "ReduceMin": "Min",
              "ReduceProd": "Prod", "ReduceLogSum": "LogSum"}


def _show_attributes(out, op_name: str, axis, keepdims: bool, shape: tuple) -> None:
    """CNTK 2.7's attributes of a reduction along given axes (``root_function.attributes``)
    and of its block's root (``block_root.attributes``): ``axisVec`` (the axes as given, in
    CNTK's order), ``reductionKeepDimensions``, ``reductionOpName`` (not for ``ReduceL1``,
    ``ReduceL2``, ``ReduceSumSquare``, whose root is a ``Sum``); a ``Reshape`` root (axes
    dropped) shows its own, a ``MultiAxisReduce`` or ``Sqrt`` root none."""
    items = axis if isinstance(axis, (list, tuple)) else [axis]
    axes = [static_axis_attribute(a.static_axis_index() if isinstance(a, Axis) else int(a))
            for a in items]
    shown = {"axisVec": axes, "reductionKeepDimensions": keepdims}
    if op_name in _CNTK_KIND:
        shown["reductionOpName"] = _CNTK_KIND[op_name]
    CNTK_ATTRIBUTES[out] = shown
    if op_name in ("ReduceL1", "ReduceSumSquare"):
        CNTK_ROOT_ATTRIBUTES[out] = {**shown, "reductionOpName": "Sum"}
    elif op_name in _CNTK_KIND and not keepdims:
        CNTK_ROOT_ATTRIBUTES[out] = {"beginAxis": static_axis_attribute(-1),
                                     "endAxis": ("ordered", "static", len(shape)),
                                     "newShape": tuple(int(d) for d in out.shape[
                                         len(out.shape) - len(shape) + len(axes):])}
    else:
        CNTK_ROOT_ATTRIBUTES[out] = {}


def _reducer(op_name: str, fn):
    swig = re.sub(r"(?<!^)(?=[A-Z])", "_", op_name).lower()    # (ReduceLogSum: reduce_log_sum)

    def reduce(x, axis=None, keepdims: bool = True, name: str = ""):
        refuse_several_outputs(x, swig)
        _refuse_no_axes(op_name, axis)
        _refuse_dropped_dynamic_axis(op_name, axis, keepdims)
        axes, kind = _axes(x, axis)
        v = operand(x)
        if kind == "some":
            out = fn(v, axes, bool(keepdims))
        elif kind == "batch+some":
            out = fn(v, axes, True)
            out = F.reshape(out, tuple(out.shape[1:]))
        elif kind == "all" and getattr(v, "sequence_lengths", None) is not None:
            out = _over_steps(op_name, fn, v, axes)
        else:
            out = fn(v, axes, False)
        if kind in ("batch", "all", "batch+some"):
            G.BATCH.unmark(out)
        # CNTK 2.7 makes a block of each reduction (its output is Block<n>_Output_0): ReduceL1,
        # ReduceL2 and ReduceSumSquare by these names, the others ReduceElements, around the
        # op its root_function.block_root shows
        shown = op_name if op_name in _BLOCKS else "ReduceElements"
        made = named(wrap(one_op(out, v)), name, shown)
        G.mark_outputs([made.variable], shown, block=True)
        G.mark_block(made.variable, shown, name, [v], _block_root(op_name, kind, keepdims))
        if kind == "some":
            _show_attributes(made.variable, op_name, axis, bool(keepdims), sample_shape(x))
        return made
    reduce.__doc__ = (f"``{op_name}`` over ``axis`` (see the module docstring).")
    reduce.op_name = op_name
    reduce.makes_block = True       # CNTK 2.7's ReduceFunctionAsBlock (_printed.makes_block)
    return takes_axes(axis="axes")(reduce)


def _sum_square(v, axes, keep):
    return F.sum(F.mul2(v, v), axis=axes, keepdims=keep)


def _log_sum_exp(v, axes, keep):
    m = F.stop_gradient(F.max(v, axis=axes, keepdims=True))
    s = F.log(F.sum(F.exp(F.sub2(v, m)), axis=axes, keepdims=keep))
    return F.add2(s, m if keep else F.stop_gradient(F.max(v, axis=axes, keepdims=False)))


reduce_sum = _reducer("ReduceSum", lambda v, a, k: F.sum(v, axis=a, keepdims=k))
reduce_mean = _reducer("ReduceMean", lambda v, a, k: F.mean(v, axis=a, keepdims=k))
def _extreme(f):
    """``F.max``/``F.min`` over the axes ``a``; over none (a sample of shape ``()``), each
    value itself as CNTK 2.7's (``F``'s empty axis list reduces the batch axis too)."""
    return lambda v, a, k: f(v, axis=a, keepdims=k, rule="cntk") if a else F.identity(v)


reduce_max = _reducer("ReduceMax", _extreme(F.max))
reduce_min = _reducer("ReduceMin", _extreme(F.min))
reduce_prod = _reducer("ReduceProd", lambda v, a, k: F.prod(v, axis=a, keepdims=k))
reduce_log_sum_exp = _reducer("ReduceLogSum", _log_sum_exp)
reduce_l1 = _reducer("ReduceL1", lambda v, a, k: F.sum(F.abs(v), axis=a, keepdims=k))
reduce_l2 = _reducer("ReduceL2", lambda v, a, k: F.sqrt(_sum_square(v, a, k)))
reduce_sum_square = _reducer("ReduceSumSquare", _sum_square)
for _f, _n in ((reduce_sum, "reduce_sum"), (reduce_mean, "reduce_mean"),
               (reduce_max, "reduce_max"), (reduce_min, "reduce_min"),
               (reduce_prod, "reduce_prod"), (reduce_log_sum_exp, "reduce_log_sum_exp"),
               (reduce_l1, "reduce_l1"), (reduce_l2, "reduce_l2"),
               (reduce_sum_square, "reduce_sum_square")):
    _f.__name__ = _f.__qualname__ = _n


def _all_static(axis) -> bool:
    """Whether ``axis`` is ``Axis.all_static_axes()``."""
    return isinstance(axis, Axis) and axis == Axis.all_static_axes()


def _dynamic(axis) -> bool:
    """Whether ``axis`` is an Axis other than a static one (the batch axis, all axes, all of
    a sample's axes)."""
    return isinstance(axis, Axis) and not axis.is_static_axis


# CNTK 2.7's argmax and argmin along a dynamic axis (the batch axis, all axes) build (of the
# shape its ReduceElements infers) and refuse at their first run: the node has no neutral
# value for an index (ReduceElementsNode::NeutralValue)
_ARG_REFUSED = ("ReduceElementsNode::NeutralValue: Invalid operation code; allowed are: "
                "'opSum', 'opMax', 'opMin', 'opElementwiseProduct', 'opLogSum'.")


def _arg_along_dynamic_axis(x, axis, op_name: str):
    """CNTK 2.7's ``argmax``/``argmin`` along the batch axis (a sample's shape) or all axes
    (one number): built, refused when run (:data:`_ARG_REFUSED`); over a sequence along the
    batch axis refused as made (its RuntimeError)."""
    v = operand(x)
    if axis.is_batch_axis and lead_axes(x) == 2:
        raise RuntimeError(f"ReduceElements: operand {x!r}; Reduction along the batch axis on "
                           "input sequence is currently unsupported.")
    out = F.mul_scalar(F.stop_gradient(v), 0.0)      # (of the shape; never computed)
    if not axis.is_batch_axis:
        out = F.sum(out)
        G.BATCH.unmark(out)
    made = named(wrap(one_op(out, v)), "", "ReduceElements")
    refuse_when_run(made.variable, f"{_ARG_REFUSED}\n({op_name.lower()} along {axis!r}: CNTK "
                    "2.7 builds it and refuses to run it)", ValueError)
    return made


def _arg(fn, op_name: str):
    def arg(x, axis=None, name: str = ""):
        refuse_several_outputs(x, op_name.lower())
        v = operand(x)
        if _dynamic(axis) and not _all_static(axis):
            return named(_arg_along_dynamic_axis(x, axis, op_name), name, "ReduceElements")
        if axis is None or _all_static(axis):     # (all of a sample's axes: its flat index)
            flat = reshape_samples(v, lead_axes(x), (math.prod(sample_shape(x)),))
            out = fn(flat, axis=flat.ndim - 1, keepdims=False, only_index=True, rule="cntk")
        else:
            static = axis.static_axis_index() if isinstance(axis, Axis) else axis
            out = fn(v, axis=sample_axis(x, int(static)), keepdims=True, only_index=True,
                     rule="cntk")
        # the index as a float of the operand's precision (CNTK 2.7: float64 of float64)
        dtype = "float64" if str(v.dtype) == "float64" else "float32"
        return named(wrap(one_op(F.cast(out, dtype), v)), name, "ReduceElements")
    return takes_axes(axis="axis")(arg)


argmax = _arg(F.max, "Argmax")
argmax.__name__ = argmax.__qualname__ = "argmax"
argmax.__doc__ = "The index of the largest value along ``axis`` (of the flattened sample " \
    "when None), as a float."
argmin = _arg(F.min, "Argmin")
argmin.__name__ = argmin.__qualname__ = "argmin"
argmin.__doc__ = "The index of the smallest value along ``axis``, as a float."


def _along(fn, x, axis):
    if axis is not None:
        a = axis.static_axis_index() if isinstance(axis, Axis) else int(axis)
        return fn(operand(x), axis=sample_axis(x, a))
    v = operand(x)
    if lead_axes(x) == 1 and free_steps(v) == {1}:
        # sequence.unpack's steps first (CNTK's free dimension): flattened with the sample's
        # other axes whatever their number when run, and back
        flat = F.reshape_trailing(v, (-1,), base_axis=1)
        return F.reshape_trailing(fn(flat, axis=1), (-1,) + tuple(v.shape[2:]), base_axis=1)
    return S.over_sample(fn, v, batched(x), sequence=lead_axes(x) == 2)


def _rows(x) -> bool:
    """Whether CNTK 2.7's softmax and hardmax with no axis work on each row of ``x`` (along
    its last axis): an operand of more than one axis and no dynamic axes (an input made with
    ``dynamic_axes=[]``, a constant), which CNTK holds as a matrix of its rows; of a sample
    with the batch axis, they take the whole sample."""
    v = operand(x)
    return isinstance(v, Variable) and v.ndim > 1 and one_sample_values([v])


@takes_axes(axis="axis")
def softmax(x, axis=None, name: str = ""):
    """Softmax along the per-sample ``axis`` (None or ``Axis.all_static_axes()``: over all of
    a sample's axes at once; over the last axis of an operand with no dynamic axes, as CNTK
    2.7)."""
    refuse_several_outputs(x, "softmax")
    if _all_static(axis):
        axis = None
    if axis is None and _rows(x):
        return named(wrap(F.softmax(operand(x), axis=operand(x).ndim - 1)), name, "Softmax")
    return named(wrap(_along(F.softmax, x, axis)), name, "Softmax")


@takes_axes(axis="axis")
def log_softmax(x, axis=None, name: str = ""):
    """Log-softmax along the per-sample ``axis`` (None: along the sample's last axis, as CNTK
    2.7 computes it, unlike ``softmax``, which takes all of the sample's axes then; the batch
    axis: over the samples of the minibatch)."""
    refuse_several_outputs(x, "log_softmax")
    if isinstance(axis, Axis) and axis.is_batch_axis and lead_axes(x):
        return named(_log_softmax_along_batch(x), name, "LogSoftmax")
    return named(wrap(_along(F.log_softmax, x, -1 if axis is None else axis)), name,
                 "LogSoftmax")


def _log_softmax_along_batch(x):
    """CNTK 2.7's ``log_softmax`` along the batch axis: each element over the samples of the
    minibatch (its block's ``x - reduce_log_sum_exp(x, batch axis)``); over a sequence refused
    as made, its ReduceElements' RuntimeError (the block's placeholder named)."""
    if lead_axes(x) == 2:
        shape = " x ".join(str(d) for d in sample_shape(x))
        raise RuntimeError(f"ReduceElements: operand Placeholder('Placeholder', [#, *], "
                           f"[{shape}]); Reduction along the batch axis on input sequence is "
                           f"currently unsupported.\n(log_softmax of {x!r})")
    v = operand(x)
    return wrap(one_op(F.log_softmax(v, axis=0), v))


def hardmax(x, name: str = ""):
    """1.0 at the (first) largest value of each sample, 0.0 elsewhere (no gradient); of each
    row of an operand with no dynamic axes, as CNTK 2.7."""
    refuse_several_outputs(x, "hardmax")
    v = operand(x)
    free = free_steps(v)
    if not _rows(x) and any(a >= lead_axes(x) for a in free):
        out = _hardmax_of_free_lengths(v, lead_axes(x), free)
    else:
        out = S.hardmax(v, v.ndim - 1, v.shape[-1:]) if _rows(x) else \
            S.hardmax(v, lead_axes(x), sample_shape(x))
    return named(wrap(one_op(out, x)), name, "Hardmax")


def _hardmax_of_free_lengths(v: Variable, lead: int, free: frozenset) -> Variable:
    """CNTK's ``Hardmax`` of samples with a free dimension (its length each run's): the
    graph holds no length of it (the sample flattened and restored with that axis inferred,
    the one-hot positions counted along the run's values); two free axes are refused."""
    sample = [-1 if a in free else int(v.shape[a]) for a in range(lead, v.ndim)]
    if sample.count(-1) > 1:
        shown = free_shown(v.shape, free)[lead:]
        raise ValueError(f"hardmax: the sample {shown} has two free dimensions (-3); Stadyn's "
                         "compat takes one")
    flat = F.reshape_trailing(F.stop_gradient(v), (-1,), base_axis=lead)
    first = F.max(flat, axis=lead, keepdims=True, only_index=True, rule="cntk")
    dtype = str(v.dtype)         # (CNTK 2.7's Hardmax keeps float16 and float64)
    counted = "float64" if dtype == "float64" else "float32"    # (float16 counts to 2048)
    positions = F.cumsum(F.cast(S.constant_like(flat, 1.0), counted), axis=lead, exclusive=True)
    hot = F.cast(F.equal(positions, F.cast(first, counted)), dtype)
    return F.reshape_trailing(hot, tuple(sample), base_axis=lead)


@takes_axes(axis="axis", whole="TopK operation only supports a single static axis.")
def top_k(x, k: int, axis=-1, name: str = ""):
    """The ``k`` largest values along ``axis`` and their indices (as floats): a Function with
    two outputs, ``top_k(x, k).outputs`` (values, indices)."""
    from ._function import Function
    refuse_several_outputs(x, "top_k")
    _k_checked({"k": k, "axis": axis})
    a = axis.static_axis_index() if isinstance(axis, Axis) else int(axis)
    v = operand(x)
    ax, last = sample_axis(x, a), v.ndim - 1
    perm = list(range(v.ndim))
    perm[ax], perm[last] = last, ax                 # the axis last and back (its own inverse)
    moved = v if ax == last else F.transpose(v, tuple(perm))
    values, indices = F.top_k_data(moved, int(k), base_axis=last, with_index=True,
                                   ties="cntk")     # CNTK's positions among equal values
    inner = [indices]
    if ax != last:
        inner += [moved, values]
        values, indices = F.transpose(values, tuple(perm)), F.transpose(indices, tuple(perm))
        inner.append(indices)
    G.INNER_OPS.update(inner)
    indices = F.cast(indices, "float32")
    values.name = name or None
    indices.name = name + "_TopKIndexMask" if name else None     # CNTK 2.7's name of it
    # one function, as CNTK's (TopK5_Output_0, _1; another axis: a block, Block9_Output_0, _1)
    G.mark_outputs([values, indices], "TopK", block=ax != last)
    return Function(values, [values, indices])


# CNTK 2.7 refuses these when run on a sparse input (a tensor operation on sparse data)
refuse_sparse_operands(globals(), __all__)

def _keepdims_checked(op_name: str):
    """The ``as_called`` hook of the reduction ``op_name``: an empty axis list, and
    ``keepdims=False`` over a dynamic axis, refused as it is called, as CNTK 2.7 does, of a
    placeholder without a shape too (not when the shape arrives)."""
    def as_called(arguments: dict) -> None:
        _refuse_no_axes(op_name, arguments["axis"])
        _refuse_dropped_dynamic_axis(op_name, arguments["axis"], arguments["keepdims"])
    return as_called


def _k_checked(arguments: dict) -> None:
    """``top_k``'s ``k`` as CNTK 2.7's SWIG takes it, as it is called (of a waiting operand
    too; its ``axis``: ``takes_axes``)."""
    swig_count(arguments["k"], "top_k")


def _softmax_axis_checked(arguments: dict) -> None:
    """``softmax``'s ``axis`` as CNTK 2.7's C++ takes it, as it is called (of a waiting
    operand too; Function.cpp:1261-1270): a dynamic axis other than all of a sample's is its
    RuntimeError (LogicError); all of a sample's axes of an operand shown of rank 1 (a
    placeholder without a shape too) its ValueError (it asks that Axis for its index)."""
    axis = arguments["axis"]
    if _dynamic(axis) and not _all_static(axis):
        raise RuntimeError(f"Softmax: support only static axes.\n(softmax along {axis!r})")
    if _all_static(axis) and len(tuple(getattr(arguments["x"], "shape", ()))) == 1:
        raise ValueError("Cannot query the static axis index for a non-static axis\n(softmax "
                         "along Axis.all_static_axes() of an operand of rank 1: CNTK 2.7 "
                         "refuses it)")


def _log_softmax_axis_checked(arguments: dict) -> None:
    """``log_softmax``'s ``axis`` as CNTK 2.7 takes it, as it is called: all axes or all of
    a sample's axes its RuntimeError."""
    axis = arguments["axis"]
    if _dynamic(axis) and not axis.is_batch_axis:
        raise RuntimeError("Softmax: only batch and static axes are supported.\n(log_softmax "
                           f"along {axis!r})")


# ops on placeholders without a shape (or on layers) wait for their shapes
defer_module(globals(), __all__, as_called={
    **{n: _keepdims_checked(globals()[n].op_name) for n in __all__
       if getattr(globals()[n], "makes_block", False)},     # (the reductions)
    "top_k": _k_checked,      # (its k checked as called)
    "softmax": _softmax_axis_checked, "log_softmax": _log_softmax_axis_checked})
