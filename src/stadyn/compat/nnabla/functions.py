"""``nnabla.functions`` on Stadyn (the op catalog under NNabla's names).

Each function also takes ``nn.NdArray``s, as NNabla's do: it then computes at once and gives
NdArrays back (NNabla's imperative mode, ``_ndarray.py``); with Variables it is the catalog's
``F`` function.  NNabla's functions that are compositions of catalog ops (``broadcast_to``,
``reduce_mean``, ``reduce_sum``, ``logical_*_scalar``, ``binary_error``,
``epsilon_insensitive_loss``, ``multi_head_attention``) come from ``_composed.py``.  What
NNabla 1.39 refuses that the catalog op would compute (binary functions of inputs of different
ranks, a one-input ``concatenate``, ``unique`` in the static mode, ...) is refused before the
op is called (``_refusals.py``), and integer inputs of the functions NNabla computes in float32
(arithmetic, reductions, ...) are cast to float32 (``_float_inputs.py``); the indices
``max``/``min``/``sort``/``nonzero`` give show as uint64 (``_index_dtypes.py``).

NNabla's module also holds the decorator it publishes its functions through
(``function_api``, with its source templates ``FUNCTION_API_HEADER`` and ``FUNCTION_API_BODY``:
``_context_api.py``), the helper its batch normalisation over several axes reshapes with
(``BatchNormalizationInOutAdapter``), and ``get_auto_forward`` and ``get_current_context``,
``nnabla``'s own; so does this one.

Left out: the ops that exist only for CNTK's semantics (``cntk_*``), and the ops of Stadyn's
sequence axis (category ``sequence``: ``past_value``, ``sequence_last``, ``recurrence``, ...):
NNabla has no sequence axis, and they read lengths NNabla programs do not have.  And Stadyn's
debugging probe ``trace`` (category ``debug``; ``sd.trace``) and ``store`` (category
``parameter``: how Stadyn's quantised layers write NNabla's ``W_q``), which NNabla does not have.
And the ops declared for other front ends only (``@op(..., frameworks=("cntk",))``: CNTK's
random, sampling and ranking Functions ``cntk.random.*_like``, ``random_sample``,
``lambda_rank``, ``ndcg_at_1``, CTC's ``cntk_forward_backward`` and
``cntk_edit_distance_error``; checked on NNabla 1.39: none of these names exists in
``nnabla.functions``), and Stadyn's own ops NNabla 1.39 lacks, ``take_along_axis``,
``stop_gradient``, ``cast``, ``classification_error``, ``clip_by_value_scalar``,
``cross_entropy_with_softmax``, ``flatten``, ``grad`` and ``sqrt`` (``frameworks=("stadyn",
"cntk")``; an NNabla program naming one gets NNabla's ``AttributeError``, cases
``functions_nnabla_lacks`` and ``functions_nnabla_lacks__more``).  Batch normalisation is
called with ``rule="nnabla"`` (``_rules.py``).
"""

import functools as _functools

import numpy as _np

from ... import functions as _F
from ...ops import CATALOG as _CATALOG
from ._ndarray import accepting_ndarrays as _accepting_ndarrays
from ._proto_variable import recording_proto_variables as _recording_proto_variables
from ._float_inputs import reading_floats as _reading_floats
from ._index_dtypes import giving_uint64_indices as _giving_uint64
from ._refusals import refusing_what_nnabla_refuses as _refusing
from ._refusals import NNablaRefusal as _NNablaRefusal
from ._registered_flags import honouring_registered_flags as _honouring_flags
from ._rules import with_nnabla_rule as _with_nnabla_rule
from ._half_scalars import rounding_half_scalars as _rounding_half_scalars
from ._bn_stats import adapter_axes as _adapter_axes
from ._bn_stats import with_stats_as_nodes as _with_stats_as_nodes
from ._counters import counting_in_int32 as _counting_in_int32
from ._output_arrays import writing_given_arrays as _writing_given_arrays
from ...graph import FunctionNode as _FunctionNode, Variable as _Core
from ._float_inputs import note_reads as _note_reads
from ._function import as_function as _as_function
from ._variable import as_nnabla as _as_nnabla



def _offered(names, catalog) -> list[str]:
    """The names of ``names`` (op names of ``catalog``) that NNabla's ``F`` offers."""
    return [n for n in names
            if not n.startswith("cntk_") and catalog[n].offered_by("nnabla")
            and catalog[n].category not in ("sequence", "debug", "parameter")]


def _giving_nnabla_variables(fn):
    """``fn`` giving NNabla's Variables, as every NNabla function does, also where an op's
    output would take its first input's class: of an op with no inputs (``constant``,
    ``arange``, ``rand``: ``F.constant(0, shape).reshape(...)`` works) and of one given
    Stadyn's own Variable as any of its inputs, not only the first (``F.add2(sd_var, nn_var)``
    and ``F.add2(nn_var, sd_var)`` alike).  The nodes the call made are NNabla's Functions
    (``parent.info.args``), and they mark the floating leaves they read as every NNabla node
    does (``_float_inputs.note_reads``: ``nn_var.d = ints`` keeps the graph built on it
    working, as NNabla 1.39's; case ``mixed_variable_classes`` of
    ``tests/compat/test_nnabla_mixed_classes.py``).  Applied inside ``reading_floats``, whose
    inputs read as indices stay unmarked."""
    @_functools.wraps(fn)
    def call(*args, **kwargs):
        given = [a for a in (*args, *kwargs.values()) if isinstance(a, _Core)]
        if given and all(type(a) is not _Core for a in given):
            return fn(*args, **kwargs)          # NNabla's inputs: NNabla's nodes already
        out = fn(*args, **kwargs)
        _adopt(out, given)
        return out
    return call


def _adopt(out, given: list) -> None:
    """Make the nodes between ``given`` (a call's inputs) and ``out`` (its outputs) NNabla's
    Functions, and their outputs NNabla's Variables."""
    stop = {id(v) for v in given}
    stack = [v for v in (out if isinstance(out, (list, tuple)) else (out,))
             if isinstance(v, _Core)]
    seen: set[int] = set()
    while stack:
        v = stack.pop()
        node = v.parent
        if id(v) in stop or node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if type(node) is _FunctionNode:
            _note_reads(_as_function(node), node.inputs)
            _as_nnabla(node.outputs)
        _as_nnabla(v)
        stack.extend(node.inputs)


__all__ = _offered(_F.__all__, _CATALOG)
globals().update({_n: _counting_in_int32(_n, _writing_given_arrays(_n, _recording_proto_variables(
    _accepting_ndarrays(_honouring_flags(_refusing(_n, _reading_floats(_n, _giving_nnabla_variables(
        _with_stats_as_nodes(_n, _giving_uint64(_n, _rounding_half_scalars(_n, _with_nnabla_rule(
        _n, getattr(_F, _n))))))))))))) for _n in __all__})

def _taking_n_outputs(fn):
    """NNabla 1.39's ``F.dropout(x, p=0.5, seed=-1, n_outputs=-1, outputs=None)`` on ``fn``
    (the catalog's, whose fourth parameter is Stadyn's ``output_mask``): ``F.dropout(x, 0.5,
    1, True)`` is one output there (``n_outputs=True`` is 1, ``-2`` one too), ``n_outputs=0``
    NNabla's ``RuntimeError`` at setup, and ``n_outputs=n > 1`` gives ``n`` Variables, the
    ``n - 1`` after the first 0-d zeros (checked on NNabla 1.39: its ``Dropout`` then makes
    extra 0-d outputs it never writes; here each is a ``constant`` function's output)."""
    @_functools.wraps(fn)
    def call(x, p=0.5, seed=-1, n_outputs=-1, outputs=None, **kwargs):
        if isinstance(n_outputs, (str, bytes)):       # (int() would read "2" as 2)
            raise TypeError("dropout(): n_outputs must be an integer, got "
                            f"{type(n_outputs).__name__} {n_outputs!r}")
        n = int(n_outputs)
        if n == 0:
            raise _NNablaRefusal("dropout: NNabla 1.39 refuses this call: n_outputs must not "
                                 f"be 0, got {n_outputs!r}")
        if outputs is not None:
            kwargs["outputs"] = outputs
        y = fn(x, p, seed, **kwargs)
        if n <= 1:
            return y
        extra = [_as_nnabla(_F.constant(0.0, ())) for _ in range(n - 1)]
        return (y, *extra)
    return call


dropout = _taking_n_outputs(dropout)  # noqa: F821 - set from the catalog

# NNabla's functions that are compositions of catalog ops (``_composed.py``).
from . import _composed as _composed  # noqa: E402

__all__ += [_n for _n in _composed.__all__ if _n not in __all__]  # six replace catalog ops
globals().update({_n: _writing_given_arrays(_n, _recording_proto_variables(_accepting_ndarrays(
    _honouring_flags(_refusing(_n, _reading_floats(_n, _giving_nnabla_variables(
        getattr(_composed, _n))))))))
    for _n in _composed.__all__})

# NNabla's ``functions`` module also holds (imported there) the mode and context getters.
from ...graph import get_auto_forward  # noqa: E402
from ._context import get_current_context  # noqa: E402

__all__ += ["get_auto_forward", "get_current_context"]

# Each function notes how it made its node, for the node's Function API (``f.forward(inputs,
# outputs)``: ``_function_api.py``).
from ._function_api import recording_calls as _recording_calls  # noqa: E402
from ._function import type_name as _type_name  # noqa: E402

globals().update({_n: _recording_calls(globals()[_n], _type_name(_n)) for _n in __all__
                  if _n not in ("get_auto_forward", "get_current_context")})

# The decorator NNabla publishes its functions through (``_context_api.py``).
from ._context_api import FUNCTION_API_BODY, FUNCTION_API_HEADER, function_api  # noqa: E402

__all__ += ["FUNCTION_API_HEADER", "FUNCTION_API_BODY", "function_api",
            "BatchNormalizationInOutAdapter"]


class BatchNormalizationInOutAdapter:
    """NNabla's helper for batch normalisation over several ``axes`` of an ``ndim``-D input:
    calling it moves the other (outer) axes first and flattens ``axes`` into one last axis;
    ``inv`` undoes that for an output of the same shape.  ``axes`` of one axis is refused
    (an ``AssertionError``), as in NNabla.

    Example:
        >>> import numpy as np, stadyn.compat.nnabla as nn
        >>> adapter = BatchNormalizationInOutAdapter(4, [1, 3])
        >>> x = nn.Variable.from_numpy_array(np.zeros((2, 3, 4, 5)))
        >>> y = adapter(x); y.shape, adapter.inv(y).shape
        ((2, 4, 15), (2, 3, 4, 5))
    """

    def __init__(self, ndim, axes):
        assert len(axes) != 1
        self.ndim = ndim
        self.axes = axes
        self.outer_axes, self.transpose_axes, self.inv_transpose_axes = _adapter_axes(ndim, axes)
        self.transposed_shape = None

    def __call__(self, x):
        """``x`` with the outer axes first and ``axes`` flattened into the last one."""
        transposed = transpose(x, self.transpose_axes)  # noqa: F821 - set from the catalog
        if self.transposed_shape is not None:
            assert self.transposed_shape == transposed.shape, "Wrong shape input given."
        self.transposed_shape = transposed.shape
        n_outer = len(self.outer_axes)
        inner = int(_np.prod(transposed.shape[n_outer:]))
        return reshape(transposed, list(transposed.shape[:n_outer]) + [inner])  # noqa: F821

    def inv(self, y):
        """The inverse of calling the adapter: ``y`` back in the input's layout."""
        transposed = reshape(y, self.transposed_shape)  # noqa: F821
        return transpose(transposed, self.inv_transpose_axes)  # noqa: F821
