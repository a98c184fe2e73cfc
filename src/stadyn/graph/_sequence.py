"""The sequence axis: padded values with per-sequence lengths that travel with them.

A Variable with a sequence axis holds a minibatch of sequences *padded* to the longest one,
batch axis first and the sequence (time) axis second: ``(B, T, *sample)``.  Its
``sequence_lengths`` is a second Variable, an int64 vector ``(B,)`` of the sequences' lengths;
step ``t`` of sequence ``b`` is real when ``t < lengths[b]`` and padding otherwise.  The lengths
are an ordinary graph leaf (an input of every op that reads the sequence axis), so both modes
and the static lowering see them as data; a padded step's value is unspecified and every
sequence op (``stadyn.sequence``) masks it out of sums, maxima, softmaxes, gradients and
recurrences.

How an op's outputs relate to the sequence axis is part of the op's declaration
(``OpSpec.sequence``, applied by :func:`propagate`): by default an output whose first two axes
are its input's (element-wise ops, ``affine`` over the sample axes, ...) keeps the input's
sequence axis; reductions over the steps drop it, the sequence ops name the lengths of their
outputs, and ops whose answer depends on the call (``transpose``, ``sum``, ``affine``'s
``base_axis``) declare a rule.

Example:
    >>> import numpy as np
    >>> from stadyn.graph import sequence_input, set_sequences, sequences_of
    >>> x = sequence_input((2,))
    >>> set_sequences(x, [np.ones((3, 2)), np.zeros((1, 2))])
    >>> x.shape, x.sequence_lengths.d.tolist()
    ((2, 3, 2), [3, 1])
    >>> [s.shape for s in sequences_of(x)]
    [(3, 2), (1, 2)]
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .._errors import ShapeError
from ._padding import pad_sequences
from ._variable import Variable
from ._identity_keys import IdentitySet

__all__ = ["sequence_input", "set_sequences", "sequences_of", "pad_sequences", "is_lengths",
           "propagate", "new_lengths", "set_sequence_axis"]

# The Variables that hold some sequence axis's lengths (graph leaves a caller does not feed
# directly: setting the data Variable from a list of sequences fills them).
_LENGTHS: "IdentitySet[Variable]" = IdentitySet()


def new_lengths(lengths: Any = (1,)) -> Variable:
    """A leaf holding sequence lengths (int64), known as such to :func:`is_lengths`."""
    v = Variable.from_numpy_array(np.asarray(lengths, dtype=np.int64))
    _LENGTHS.add(v)
    return v


def is_lengths(v: Variable) -> bool:
    """Whether ``v`` is a leaf holding a sequence axis's lengths (fed with its sequences)."""
    return v in _LENGTHS


def sequence_input(shape: Sequence[int], need_grad: bool = False,
                   dtype: Any = np.float32) -> Variable:
    """A leaf with a sequence axis: ``(1, 1, *shape)`` until sequences are fed.

    Example:
        >>> from stadyn.graph import sequence_input
        >>> sequence_input((3,)).shape
        (1, 1, 3)
    """
    shape = tuple(int(s) for s in shape)
    v = Variable((1, 1) + shape, need_grad=need_grad, dtype=dtype)
    v._seq = new_lengths()
    return v


def set_sequences(v: Variable, sequences: Sequence[Any]) -> None:
    """Feed a list of sequences of different lengths to a sequence input ``v`` (padded; its
    lengths updated).  A sequence that is a 1-d array for a scalar-step input is fine.

    Example:
        >>> import numpy as np
        >>> from stadyn.graph import sequence_input, set_sequences
        >>> x = sequence_input(())
        >>> set_sequences(x, [np.arange(2.0), np.arange(3.0)])
        >>> x.d.tolist()
        [[0.0, 1.0, 0.0], [0.0, 1.0, 2.0]]
    """
    if v._seq is None:
        raise ShapeError(f"Variable {v.graph_name or ''} has no sequence axis; make it with "
                         "sd.sequence.input_variable to feed it sequences")
    v._set_sequences(sequences)


def sequences_of(v: Variable) -> list[np.ndarray]:
    """The sequences a Variable with a sequence axis holds, each cut to its length (copies)."""
    if v._seq is None:
        raise ShapeError("sequences_of: the Variable has no sequence axis")
    data, lengths = v.d, v._seq.d
    return [data[b, :int(n)].copy() for b, n in enumerate(lengths)]


def set_sequence_axis(v: Variable, lengths: Variable | None) -> Variable:
    """Give ``v`` (axis 1 after the batch axis) the sequence axis whose lengths are
    ``lengths`` (None: no sequence axis); returns ``v``.

    Example:
        >>> import stadyn as sd
        >>> from stadyn.graph import new_lengths, set_sequence_axis
        >>> v = set_sequence_axis(sd.Variable((1, 4, 2)), new_lengths([4]))
        >>> v.sequence_lengths.d.tolist()
        [4]
    """
    v._seq = lengths
    return v


def _axis_of(spec, form: str, args: tuple, kwargs: dict, outputs: Sequence[Variable]
             ) -> Variable | None:
    """The lengths an ``of:``/``lengths:`` form names for one call."""
    kind, _, ref = form.partition(":")
    if kind == "lengths" and ref.startswith("output"):
        k = int(ref[6:])
        return outputs[k] if k < len(outputs) else None
    inputs, _ = spec.split_arguments(args, kwargs)
    if ref.isdigit():
        v = inputs[int(ref)] if int(ref) < len(inputs) else None
    else:
        v = inputs[[n.lstrip("*") for n in spec.inputs].index(ref)]
    if not isinstance(v, Variable):
        return None
    return v if kind == "lengths" else v._seq


def _kept_axis(out: Variable, inputs: Sequence[Variable]) -> Variable | None:
    """The sequence axis ``out`` keeps (the ``"keep"`` form): that of the first input with
    one whose (batch, padded length) axes are ``out``'s.  An input whose leading axes only
    broadcast to ``out``'s (1 where ``out``'s differ: data an earlier run fed, of fewer
    sequences or steps than the inputs beside it) is passed over for a later one, so that
    a graph built between runs does not lose the axis its next run gives every input."""
    lead = tuple(out._shape[:2])
    for v in inputs:
        if v._seq is None:
            continue
        own = tuple(v._shape[:2])
        if own == lead:
            return v._seq
        if len(own) != len(lead) or any(a != b and a != 1 for a, b in zip(own, lead)):
            return None
    return None


def propagate(spec, args: tuple, kwargs: dict, inputs: Sequence[Variable],
              outputs: Sequence[Variable]) -> None:
    """Give one op call's ``outputs`` the sequence axes its declaration (``spec.sequence``)
    says.  ``apply`` calls it when an input has a sequence axis or the op names lengths.

    The forms (one for every output, or a tuple with one per output):

    * ``"keep"`` (the default): the output keeps the sequence axis of the first input that has
      one when its first two axes are that input's (batch, padded length) -- right for ops
      whose output's leading axes are their input's whenever the shapes say so: element-wise
      ops, ``affine`` over the sample axes, a reshape that keeps the two leading axes (an
      input whose leading axes only broadcast to the output's is passed over for the next
      one with a sequence axis: :func:`_kept_axis`);
    * ``"drop"``: no sequence axis (a reduction over the steps, a time-major recurrent op);
    * ``"of:NAME"``: the sequence axis of the input ``NAME`` (a position for a variadic op),
      whatever the shapes;
    * ``"lengths:NAME"``: a sequence whose lengths are the input ``NAME`` itself (the sequence
      ops, which take lengths as an input); ``"lengths:outputK"``: whose lengths are the op's
      output ``K`` (an op that makes new lengths, ``sequence_slice``);
    * a callable ``rule(attrs, inputs) -> form or tuple of forms``, given the call's attributes
      and its inputs in declaration order: for ops whose answer depends on the call (a
      ``transpose`` that moves axis 1, a reduction over axis 1, ``affine`` with
      ``base_axis=1``).  It runs only when an input has a sequence axis.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> x = sd.sequence.input_variable(1)          # (1, 1, 1) until fed
        >>> F.tanh(x).sequence_lengths is x.sequence_lengths
        True
        >>> F.sum(x, axis=1).sequence_lengths is None   # (1, 1): the shape alone would keep it
        True
    """
    rule = spec.sequence
    if callable(rule):
        rule = rule(spec.attributes(args, kwargs), spec.split_arguments(args, kwargs)[0])
    forms = rule if isinstance(rule, tuple) else (rule,) * len(outputs)
    for out, form in zip(outputs, forms):
        if form == "keep":
            out._seq = _kept_axis(out, inputs)
        elif form == "drop":
            out._seq = None
        else:
            out._seq = _axis_of(spec, form, args, kwargs, outputs)
