"""NNabla 1.39's functions compute in float32: its CPU functions are built for ``float``, read
every input array as float32 and write float32, so ``F.add2`` of two int32 Variables, or
``F.sum`` / ``F.max`` / ``F.relu`` / ``F.cumsum`` of one, gives float32 values (checked on
NNabla 1.39, case ``nnabla_fidelity_3.integer_inputs__float32``).  Stadyn's catalog ops compute in
their inputs' dtype (``add2`` of int32 is int32, ``sum`` of int32 is int64, as torch's), so
here the integer inputs of NNabla's arithmetic, mathematical, activation, comparison and
reduction functions are cast to float32 first (a ``cast`` node before the function: its
``parent.inputs`` show the cast values).

The same holds for the functions that move or pick values (``transpose``, ``slice``,
``concatenate``, ``stack``, ``tile``, ``pad``, ``broadcast``, ``flip``, ``split``, the
poolings, ``gather``, ``sort``, ...): NNabla 1.39 gives float32 values for int32 inputs
(checked on NNabla 1.39, case ``nnabla_fidelity_4.integer_data__float32``), so their data
inputs are cast too; an input read as indices (``gather``'s ``indices``, ``embed``'s ids,
``bool_fill``'s mask, ...) is left alone.  Likewise the convolutions, the normalizations
(their input ``x``; running statistics as given), ``batch_det`` / ``batch_inv``, the error
losses and the cross entropies' ``x`` (case ``integer_nn_inputs__float32``).  ``reshape`` and
``identity`` keep the dtype (in NNabla their output shares the input's array); ``mod2``
computes in its first input's dtype, its second cast to that (``_in_first_dtype``, case
``mod2__first_input_dtype``).

The arrays a function writes are float32 afterwards too: ``F.assign(dst, src)`` of int32
Variables gives float32 and leaves ``dst`` float32 (``dst.d.dtype``), and
``F.batch_normalization`` with int32 running statistics writes them as float32 (checked on
NNabla 1.39, case ``nnabla_fidelity_5.integer_written_arrays__float32``).  Here such an
integer leaf (``_WRITTEN``) is made float32, its values kept, when the function is called
(NNabla changes it at the forward that writes it).

Functions that read an input as indices (``embed``, ``one_hot``, ``gather``, a loss's
target, ...) are left alone, as are the indices functions give back (``max(...,
only_index=True)``, ``sort``'s: int64 in Stadyn, uint64 in NNabla).

An integer array assigned to a leaf (``t.d = labels``) makes NNabla's array of its type, and
Stadyn's Variable takes it too (``_variable.py``) -- unless a graph already reads the leaf as
float data: NNabla's function casts at each forward, but the graph Stadyn built then holds no
cast, so such a leaf stays floating (the values written into it; ``read_as_float``) while
that graph lives.  Every node of an NNabla graph marks the floating leaves it reads where it is
made (``note_reads``, called by ``_function.Function``: ``F`` functions, operators,
``x[...]``, ``x.reshape``, parametric functions alike; a view such as
``get_unlinked_variable()`` marks the leaf it views), but for the inputs the function being
called reads as indices (``_INDEX_INPUTS`` and the other inputs of ``_DATA_INPUTS``'
functions), so a label read only by a loss's target takes the integer type whenever it is
written.  Once no node reading it is left, ``v.d = ints`` gives the leaf their type again, as
NNabla's: at ``del y`` for a graph never run; a graph that ran holds its plan and the plan its
roots, so it goes at the next garbage collection (``gc.collect()``), where NNabla's goes at once.

Example:
    >>> import numpy as np, stadyn as sd
    >>> import stadyn.compat.nnabla.functions as F
    >>> with sd.auto_forward():
    ...     y = F.sum(sd.Variable.from_numpy_array(np.array([1, 2, 3], np.int32)))
    >>> y.d.dtype, float(y.d)
    (dtype('float32'), 6.0)
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from typing import Any, Callable

import numpy as np
import torch

from ... import functions as _F
from ...graph import Variable as _Variable, value_holder
from ...ops import CATALOG as _CATALOG
from ...graph import IdentitySet

__all__ = ["FLOAT_CATEGORIES", "reading_floats", "as_float32", "read_as_float", "note_reads"]

# The catalog's categories whose NNabla functions take data (no indices) in every input.
FLOAT_CATEGORIES = ("activation", "arithmetic", "math", "reduction", "logical")
_ALSO = ("cumsum", "cumprod", "tensor_normalization", "broadcast_to")
# Functions moving or picking values, with the inputs NNabla 1.39 reads as float32 data
# (``None``: all of them); the others of these functions are indices or masks.
_DATA_INPUTS: dict[str, tuple[str, ...] | None] = {
    **{n: None for n in ("transpose", "slice", "concatenate", "stack", "tile", "pad",
                         "broadcast", "flip", "split", "interpolate", "unpooling", "shift",
                         "matrix_diag", "matrix_diag_part", "trilu", "meshgrid", "sort",
                         "top_k_data", "searchsorted", "clip_grad_by_value", "prune",
                         "random_flip", "random_shift", "random_crop", "max_pooling",
                         "average_pooling", "sum_pooling", "affine", "flatten",
                         "convolution", "deconvolution", "depthwise_convolution",
                         "depthwise_deconvolution", "global_average_pooling",
                         "layer_normalization", "group_normalization",
                         "instance_normalization", "weight_standardization",
                         "norm_normalization", "batch_det", "batch_inv", "batch_logdet",
                         "squared_error", "absolute_error", "huber_loss", "unique")},
    # the running statistics are written (``_WRITTEN``); the targets stay as given
    "batch_normalization": ("x", "beta", "gamma"),
    "fused_batch_normalization": ("x", "beta", "gamma", "z"), "assign": ("src",),
    "mean_subtraction": ("x",), "softmax_cross_entropy": ("x",),
    "categorical_cross_entropy": ("x",),
    "gather": ("x",), "gather_nd": ("data",), "embed": ("w",), "scatter_nd": ("data",),
    "scatter_add": ("x0", "x1"), "bool_gather": ("input",), "bool_fill": ("data",),
    "pack_padded_sequence": ("padded_sequence",),
}

# The inputs a function writes: an integer leaf given there is made float32 (NNabla 1.39
# writes float32 into it), values kept.  (``mean_subtraction``'s counter ``t`` is not one: its
# op casts it to int32 at each run that updates, as NNabla's does.)
_WRITTEN: dict[str, tuple[str, ...]] = {
    "assign": ("dst",), "batch_normalization": ("mean", "variance"),
    "fused_batch_normalization": ("mean", "variance"), "mean_subtraction": ("mean",),
}


# The inputs read as indices of the functions neither float-reading nor in ``_DATA_INPUTS``.
_INDEX_INPUTS: dict[str, tuple[str, ...]] = {
    "one_hot": ("x",), "top_n_error": ("target",), "sigmoid_cross_entropy": ("target",),
}

# The floating leaves the nodes of a graph read as data (see the module docstring), by ``id``
# of the Variable holding the value (a view's, ``get_unlinked_variable``'s, is the viewed
# one's): a weak reference to it, which removes the entry with it, and a weak set of the
# nodes reading it, so that the mark goes with the graph (NNabla casts at each forward: once
# no graph reads the leaf, ``v.d = ints`` gives it the ints' type).
_READ_AS_FLOAT: dict[int, tuple] = {}
# The ``id``s of the Variables the function being called reads as indices: the nodes it
# builds do not mark them (a label given to a loss's target takes the integer type).
_AS_INDICES: set[int] = set()


def _forget(ref: "weakref.ref[Any]", key: int) -> None:
    entry = _READ_AS_FLOAT.get(key)
    if entry is not None and entry[0] is ref:
        del _READ_AS_FLOAT[key]


def note_reads(node: Any, inputs: Any) -> None:
    """Mark the floating leaves among ``inputs`` (those of the graph node ``node`` being made)
    as read as float data while ``node`` lives (:func:`read_as_float`), but those the NNabla
    function being called reads as indices.  Called where every node of an NNabla graph is
    made (``_function.Function``), so no path (an operator, ``x[...]``, ``x.reshape``, a
    parametric function, a view) skips it.

    Example:
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> x = nn.Variable((2, 3))
        >>> y = F.relu(x[:, 1:])            # the slice's node marks x
        >>> read_as_float(x)
        True
    """
    for v in inputs:
        if v.parent is not None:
            continue
        v = value_holder(v)                 # a view marks the viewed leaf
        key = id(v)
        if key in _AS_INDICES or not v.torch_dtype.is_floating_point:
            continue
        entry = _READ_AS_FLOAT.get(key)
        if entry is None or entry[0]() is not v:
            entry = _READ_AS_FLOAT[key] = (
                weakref.ref(v, lambda ref, key=key: _forget(ref, key)), IdentitySet())
        entry[1].add(node)


def read_as_float(v: Any) -> bool:
    """Whether a graph node still alive reads the leaf ``v`` as float data, given to it while
    ``v`` was floating (so that graph reads it as such, with no cast).

    Example:
        >>> import gc
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> x, t = nn.Variable((2, 3)), nn.Variable((2, 1))
        >>> y = F.softmax_cross_entropy(x, t)
        >>> read_as_float(x), read_as_float(t)
        (True, False)
        >>> del y; _ = gc.collect()
        >>> read_as_float(x)
        False
    """
    entry = _READ_AS_FLOAT.get(id(v))
    return entry is not None and entry[0]() is v and bool(entry[1])


@contextlib.contextmanager
def _as_indices(variables: list):
    """While the function runs, the nodes it makes leave ``variables`` unmarked (they are
    read as indices)."""
    added = {id(h) for h in (value_holder(v) for v in variables if isinstance(v, _Variable))
             if id(h) not in _AS_INDICES}
    _AS_INDICES.update(added)
    try:
        yield
    finally:
        _AS_INDICES.difference_update(added)


def _integer(v: Any) -> bool:
    if not isinstance(v, _Variable):
        return False
    dtype = v.dtype             # (a torch dtype where NumPy has none: read as not integer)
    return isinstance(dtype, np.dtype) and dtype.kind in "iu"


def as_float32(v: Any) -> Any:
    """``v`` cast to float32 when it is a Variable of integers; else ``v``.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> as_float32(sd.Variable.from_numpy_array(np.ones(2, np.int32))).dtype
        dtype('float32')
    """
    if _integer(v):
        return _F.cast(v, "float32")
    return v


def reading_floats(name: str, fn: Callable) -> Callable:
    """``fn`` (NNabla's function ``name``) with its integer Variable inputs cast to float32
    first, where NNabla's function reads its inputs as float32 (see the module docstring; only
    the data inputs of the functions that also take indices, such as ``embed``'s table), and
    ``mod2``'s second input cast to its first's dtype; for the others, the nodes they make leave
    the inputs they read as indices unmarked (:func:`note_reads`); ``fn`` itself for a
    function with no inputs read as indices.

    Example:
        >>> import stadyn.functions as sdF
        >>> reading_floats("add2", sdF.add2) is sdF.add2, reading_floats("arange", \\
        ...     sdF.arange) is sdF.arange
        (False, True)
    """
    spec = _CATALOG.get(name)
    if name == "mod2":
        return _in_first_dtype(fn)
    if name in _DATA_INPUTS and spec is not None and _DATA_INPUTS[name] is not None:
        return _reading_floats_in(fn, spec, _DATA_INPUTS[name])
    if (name not in _ALSO and name not in _DATA_INPUTS
            and (spec is None or spec.category not in FLOAT_CATEGORIES)):
        return _noting_leaves(fn, spec, _INDEX_INPUTS.get(name, ()))

    @functools.wraps(fn)
    def call(*args, **kwargs):
        args = tuple(as_float32(a) for a in args)
        kwargs = {k: as_float32(v) for k, v in kwargs.items()}
        return fn(*args, **kwargs)
    return call


def _noting_leaves(fn: Callable, spec: Any, indices: tuple[str, ...]) -> Callable:
    """``fn`` (a function keeping its inputs' dtype, or reading some as indices): the nodes
    it makes mark the floating leaves they read (:func:`note_reads`) but those given at
    ``indices``."""
    if not indices or spec is None:
        return fn
    skipped = [spec.inputs.index(n) for n in indices]

    @functools.wraps(fn)
    def call(*args, **kwargs):
        with _as_indices([a for i, a in enumerate(args) if i in skipped]
                         + [v for k, v in kwargs.items() if k in indices]):
            return fn(*args, **kwargs)
    return call


def _reading_floats_in(fn: Callable, spec: Any, names: tuple[str, ...]) -> Callable:
    """``fn`` with its integer Variable inputs named ``names`` (given by position or by
    name) cast to float32 first; its inputs written (``_WRITTEN``) made float32; its other
    inputs (indices, masks) as given, left unmarked by the nodes it makes."""
    positions = [spec.inputs.index(n) for n in names]
    written = _WRITTEN.get(spec.name, ())
    written_at = [spec.inputs.index(n) for n in written]

    @functools.wraps(fn)
    def call(*args, **kwargs):
        for v in [a for i, a in enumerate(args) if i in written_at] + \
                [v for k, v in kwargs.items() if k in written]:
            _make_float32(v)
        indices = ([a for i, a in enumerate(args) if i not in positions and i not in written_at]
                   + [v for k, v in kwargs.items() if k not in names and k not in written])
        args = tuple(as_float32(a) if i in positions else a for i, a in enumerate(args))
        kwargs = {k: as_float32(v) if k in names else v for k, v in kwargs.items()}
        if not indices:
            return fn(*args, **kwargs)
        with _as_indices(indices):
            return fn(*args, **kwargs)
    return call


def _make_float32(v: Any) -> None:
    """An integer leaf Variable ``v`` holds float32 from now on (the same values)."""
    if _integer(v) and v.parent is None:
        _Variable.data.fset(v, _Variable.data.fget(v).detach().to(torch.float32))


def _in_first_dtype(fn: Callable) -> Callable:
    """NNabla 1.39's ``mod2``: computed in its first input's dtype, the second read (cast)
    as that dtype (``Mod2::forward_impl`` switches on ``inputs[0]``'s dtype): an int32
    ``x0`` with a float ``x1`` truncates ``x1`` and gives int32 (Python's ``%`` sign rule
    unless ``fmod=True``); a float ``x0`` with an int32 ``x1`` gives float (C's ``fmod``)."""
    @functools.wraps(fn)
    def call(x0, x1, *args, **kwargs):
        if (isinstance(x0, _Variable) and isinstance(x1, _Variable)
                and np.dtype(x0.dtype) != np.dtype(x1.dtype)):
            x1 = _F.cast(x1, np.dtype(x0.dtype).name)
        return fn(x0, x1, *args, **kwargs)
    return call
