"""The minibatch data a CNTK ``Trainer`` is given, as its native Trainer takes it: arrays,
sequences and a reader's ``MinibatchData`` or ``Value`` of the inputs' shapes, the data CNTK
2.7 refuses refused (:mod:`._fed_data`, :mod:`._sparse_operands`), and the sequences and
truncated slots of a minibatch its sequence-begin flags are read against."""

from __future__ import annotations

import math

import numpy as np

from ... import io as _io
from ..._errors import ShapeError
from ._adapt import unwrap
from ._fed_data import refuse_data_type, unbatched_sample
from ._sequence_begin import truncated_layout
from ._graph_records import SPARSE
from ._sparse_gradients import note_stored_entries
from ._sparse_operands import refuse_dense_feed
from ._values import Value

__all__ = ["laid_out_as_fed", "plain_minibatch", "sequence_count", "truncated_flags",
           "truncated_slots"]


def plain_minibatch(arguments, uncounted: "frozenset | None"):
    """Minibatch data as the native Trainer feeds it: ``(N, *shape)`` arrays, and sequences
    with their lengths.  A reader's stream of the input's size but another shape takes the
    input's shape, as in CNTK (a 784-value stream feeds an input of shape ``(1, 28, 28)``);
    so does a reader stream's ``.data`` (a ``Value`` of one-step sequences, ``(N, 1,
    *shape)``) fed to an input without a sequence axis, as CNTK 2.7 takes it.  Dense data
    for a sparse input and data of a type CNTK does not convert are refused, as CNTK 2.7
    refuses them (:mod:`._fed_data`; sequences of different layouts: ``Trainer._feed``);
    with ``uncounted`` (the ids of the Trainer's inputs without dynamic axes,
    ``Trainer._uncounted``), data of another shape for such an input too."""
    for k, v in (arguments.items() if isinstance(arguments, dict) else ()):
        refuse_data_type(v, k)
        refuse_dense_feed(unwrap(k), v)
        if not isinstance(k, str) and unwrap(k) in SPARSE:    # (the entries its data stores)
            note_stored_entries(unwrap(k), v)
    if isinstance(arguments, dict):
        arguments = {k: laid_out_as_fed(k, v) if _laid_out(k, v) else v
                     for k, v in arguments.items()}
    if uncounted and isinstance(arguments, dict):
        arguments = {k: unbatched_sample(repr(k), tuple(k.shape), np.asarray(v))
                     if not isinstance(k, str) and id(unwrap(k)) in uncounted
                     and not isinstance(v, (_io.MinibatchData, Value)) else v
                     for k, v in arguments.items()}     # (as CNTK 2.7, refused at feed)
    if not isinstance(arguments, dict) or not any(
            isinstance(v, (_io.MinibatchData, Value)) for v in arguments.values()):
        return arguments
    plain = {}
    for k, v in arguments.items():
        if isinstance(v, _io.MinibatchData) and getattr(v, "lengths", None) is None:
            v = _as_input_shape(k, np.asarray(v))         # (sequences keep their lengths)
        elif isinstance(v, Value) and v.lengths is None and not _on_sequences(k):
            v = _as_input_shape(k, v.asarray())
        plain[k] = v
    return plain


def _is_scipy_sparse(value) -> bool:
    return hasattr(value, "toarray") and hasattr(value, "nnz")


def _sparse_data(value) -> bool:
    """Whether ``value`` is a SciPy sparse matrix, a list of them, or a sparse ``Value`` of
    one array (``Value(batch=csr)``: no sequences' lengths)."""
    if isinstance(value, list):
        return bool(value) and all(_is_scipy_sparse(v) for v in value)
    if isinstance(value, Value):        # (Value.create's of samples has their axes)
        return value.is_sparse and value.lengths is None and len(value.shape) == 2
    return _is_scipy_sparse(value)


def _laid_out(var, value) -> bool:
    """Whether ``value`` fed to ``var`` (an input with a batch axis) is data CNTK 2.7's
    ``Value.create`` lays out by its own rule (:func:`laid_out_as_fed`): sparse data, one
    NumPy array, a dense ``Value`` of one array (``Value(batch=...)``) for a sequence input,
    a list of arrays for an input without a sequence axis."""
    if isinstance(var, str) or not getattr(var, "dynamic_axes", ()):
        return False
    if _sparse_data(value):
        return True
    if isinstance(value, Value):        # (without a sequence axis: plain_minibatch's own)
        return value.lengths is None and not value.is_sparse and _on_sequences(var)
    if isinstance(value, list):
        return not _on_sequences(var) and bool(value) and all(
            type(v) is np.ndarray for v in value)
    return type(value) is np.ndarray


def laid_out_as_fed(var, value):
    """Data for the input ``var`` (:func:`_laid_out`) as CNTK 2.7's ``Value.create`` lays it
    out (core.py:413-440: a single array or matrix is one ``NDArrayView`` whose leading axes
    are the dynamic ones, Utils.cpp's ``GetNumTimeStepsAndSequences``; a list's entries are
    sequences), dense, in the form the native Trainer takes: one array of exactly the
    sample's shape is one sample (a sequence of one step); one of ``(steps, *sample)`` fed
    to a sequence input is one sequence (not ``steps`` sequences of one step); a list entry
    fed to an input without a sequence axis is a sequence that must have one step (of the
    sample's shape, or ``(1, *sample)``), else CNTK 2.7's ValueError.  Other data is left
    for the Trainer to take or refuse in CNTK's words.

    Example:
        >>> import numpy as np, scipy.sparse as sp, stadyn.compat.cntk as C
        >>> rows = [sp.csr_matrix(np.eye(5, dtype=np.float32)[[k]]) for k in (0, 3)]
        >>> laid_out_as_fed(C.input_variable(5, is_sparse=True), rows).shape
        (2, 5)
        >>> [a.shape for a in laid_out_as_fed(C.sequence.input_variable(5, is_sparse=True),
        ...                                   sp.vstack(rows))]
        [(2, 5)]
        >>> [a.shape for a in laid_out_as_fed(C.sequence.input_variable(5), np.ones((2, 5)))]
        [(2, 5)]
    """
    sample = tuple(getattr(var, "shape", ()) or ())
    sparse = _sparse_data(value)
    if isinstance(value, list):
        if _on_sequences(var):
            return value
        steps = [np.asarray(v.toarray()) if sparse else v for v in value]
        if all(a.shape == sample for a in steps):
            return np.stack(steps)
        if all(a.shape[1:] == sample for a in steps) and (sparse or len(sample) == 1):
            if all(len(a) == 1 for a in steps):
                return np.stack([a[0] for a in steps])
            longest = max(len(a) for a in steps)
            raise ShapeError(
                f"The dimension size ({longest}) of the axis ({len(sample)}) of the Value ('["
                f"{len(steps)} x {longest} x {' x '.join(map(str, sample))}]') must be 1, "
                "because this axis is not specified as a dynamic axis of the Variable "
                f"('{var!r}').\nEach array of a list is a sequence, and this input has no "
                "sequence axis: give one array, a row a sample")
        if not sparse:
            return value                # (the native Trainer's refusal, in CNTK's words)
        wrong = next((k for k, a in enumerate(steps) if a.shape != sample), None)
        if wrong is not None and len(sample) > 1:
            shown = [" x ".join(map(str, s)) for s in (steps[wrong].shape, sample)]
            raise ShapeError(f"Value::Create: The shape '[{shown[0]}]' of sequence #{wrong} is "
                             f"not compatible with the sample shape '[{shown[1]}]'.")
        return steps
    if isinstance(value, Value):
        array = value.asarray()
    else:
        array = np.asarray(value.toarray()) if sparse else value
    if tuple(array.shape) == sample:            # (CNTK: no batch axis, one sample)
        return [array[None]] if _on_sequences(var) else array[None]
    if _on_sequences(var) and tuple(array.shape[1:]) == sample:
        return [array]                          # (CNTK: no batch axis, one sequence)
    return array


def _on_sequences(var) -> bool:
    """Whether the input ``var`` has a sequence axis besides the batch axis."""
    return len(getattr(var, "dynamic_axes", ()) or ()) > 1


def _as_input_shape(var, data):
    """``data`` (``(N, *stream shape)``) as ``(N, *var.shape)`` where the sizes agree; data of
    exactly the sample's shape is one sample, as CNTK 2.7 takes a ``Value`` without a batch
    axis (CNTK's object-detection examples' ``MinibatchData(Value(batch=image))``)."""
    shape = tuple(getattr(var, "shape", ()) or ())
    if shape and tuple(data.shape) == shape and not _on_sequences(var):
        return data.reshape((1,) + shape)
    if (shape and tuple(data.shape[1:]) != shape
            and math.prod(data.shape[1:]) == math.prod(shape)):
        return data.reshape((data.shape[0],) + shape)
    return data


def sequence_count(arguments) -> int | None:
    """The sequences of a minibatch: a list's entries, a reader's ``num_sequences``, an
    array's first axis (of the first input that has one)."""
    for value in arguments.values():
        if isinstance(value, (list, tuple)):
            return len(value)
        if getattr(value, "num_sequences", None) is not None:
            return int(value.num_sequences)
        if hasattr(value, "shape") and len(value.shape):
            return int(value.shape[0])
    return None


def truncated_slots(arguments):
    """The slots of a minibatch a ``MinibatchSource`` with ``truncation_length`` packed, in a
    dict of inputs' data, or None."""
    return truncated_layout(arguments) if isinstance(arguments, dict) else None


def truncated_flags(arguments, flags):
    """CNTK's sequence-begin flags of a truncated minibatch (a sequence that goes on from its
    slot's previous minibatch: False), else ``flags``."""
    layout = truncated_slots(arguments) if flags is None else None
    return flags if layout is None else list(layout.begins)
