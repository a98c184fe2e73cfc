"""CNTK's CTC training (``forward_backward`` over ``labels_to_graph``) and its metric
``edit_distance_error``, as CNTK's speech examples use them::

    criterion = C.forward_backward(C.labels_to_graph(labels), z, blankTokenId=blank,
                                   delayConstraint=3)
    error = C.edit_distance_error(z, labels, squashInputs=True, tokensToIgnore=[blank])

``labels`` is a sequence of CNTK's frame labels: one-hot rows whose hot value is 2 at the frame
where a token starts and 1 where it continues; ``z`` the unnormalised network output, on the
same sequence axis.  Both criteria are one number for the minibatch (no batch or sequence
axis), as CNTK 2.7's; they are the catalog ops ``F.cntk_forward_backward`` and
``F.cntk_edit_distance_error`` (``stadyn/ops/_ctc.py`` says what they compute).

Example:
    >>> import numpy as np, stadyn.compat.cntk as C
    >>> labels, z = C.sequence.input_variable(3), C.sequence.input_variable(3)
    >>> ctc = C.forward_backward(C.labels_to_graph(labels), z, blankTokenId=2)
    >>> frames = np.array([[2, 0, 0], [1, 0, 0], [0, 2, 0]], np.float32)   # tokens 0, 1
    >>> float(ctc.eval({labels: [frames], z: [np.zeros((3, 3), np.float32)]})).__round__(4)
    1.6864
"""

from __future__ import annotations

from ... import functions as F
from . import _graph as G
from ._adapt import batched, float_arrays, lead_axes, named, operand, sample_shape, wrap

__all__ = ["labels_to_graph", "forward_backward", "edit_distance_error"]


def _sequence(x, op: str, role: str):
    v = operand(x)
    lengths = getattr(v, "sequence_lengths", None)
    if lengths is None or not batched(x):
        raise ValueError(f"{op}: {role} must be a sequence (C.sequence.input_variable or a "
                         f"value computed from one), got shape {tuple(v.shape)}")
    return v, lengths


@float_arrays("labels")
def labels_to_graph(labels, name: str = ""):
    """The label graph of a sequence of CNTK's frame labels, for :func:`forward_backward`: in
    CNTK 2.7 the labels themselves (its value is the input's, on the same sequence axis; of
    samples without a sequence axis, the samples).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> labels = C.sequence.input_variable(5)
        >>> C.labels_to_graph(labels).shape
        (5,)
    """
    if batched(labels) and lead_axes(labels) == 1:
        v = operand(labels)     # CNTK 2.7 takes samples too (each one step): the same values
    else:
        v, _ = _sequence(labels, "labels_to_graph", "labels")
    return named(wrap(F.identity(v)), name, "LabelsToGraph")


@float_arrays("graph", "features")
def forward_backward(graph, features, blankTokenId: int, delayConstraint: int = -1,
                     name: str = ""):
    """CNTK's CTC criterion: ``-log p(labels | softmax(features))`` summed over the
    minibatch's sequences, one number.  ``graph`` is :func:`labels_to_graph` of the frame
    labels; ``features`` the unnormalised network output (it gets the gradient
    ``softmax(features) - occupancy``); ``blankTokenId`` the blank's class;
    ``delayConstraint`` (-1: none) limits how many frames after a token's boundary it may be
    emitted (CNTK's rule, kept exactly: see ``stadyn/ops/_ctc.py``).

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> labels = C.sequence.input_variable(3)
        >>> z = C.sequence.input_variable(3, needs_gradient=True)
        >>> ctc = C.forward_backward(C.labels_to_graph(labels), z, blankTokenId=2)
        >>> frames = np.array([[2, 0, 0], [0, 2, 0]], np.float32)
        >>> g = ctc.grad({labels: [frames], z: [np.zeros((2, 3), np.float32)]}, wrt=[z])
        >>> np.round(g[0], 3)     # softmax(z) - the occupancy (frame 0: token 0, then 1)
        array([[-0.667,  0.333,  0.333],
               [ 0.333, -0.667,  0.333]], dtype=float32)
    """
    g, _ = _sequence(graph, "forward_backward", "the label graph")
    z, lengths = _sequence(features, "forward_backward", "the network output")
    if tuple(sample_shape(graph)) != tuple(sample_shape(features)):
        raise ValueError(f"forward_backward: the label graph has shape "
                         f"{tuple(sample_shape(graph))} and the network output "
                         f"{tuple(sample_shape(features))}; they need one shape (one row per "
                         "class)")
    out = F.cntk_forward_backward(g, z, lengths, blank_token_id=int(blankTokenId),
                                  delay_constraint=int(delayConstraint))
    G.BATCH.unmark(out)
    return named(wrap(out), name, "ForwardBackward")


@float_arrays("input_a", "input_b")
def edit_distance_error(input_a, input_b, subPen: float = 1, delPen: float = 1,
                        insPen: float = 1, squashInputs: bool = False, tokensToIgnore=(),
                        name: str = ""):
    """CNTK 2.7's edit distance error between the argmax classes of two sequences (one number
    for the minibatch): the edits from ``input_b`` (CNTK 2.7 takes the second input as the
    reference) to ``input_a`` on the path of least penalty (``subPen``, ``delPen``,
    ``insPen``), each counted 1, times the frames over the reference's tokens.
    ``squashInputs`` merges runs of one class; ``tokensToIgnore`` drops classes (the CTC
    blank).  Without a sequence axis each sample is a sequence of one frame.  No gradient.

    Example:
        >>> import numpy as np, stadyn.compat.cntk as C
        >>> a, b = C.input_variable(2), C.input_variable(2)
        >>> e = C.edit_distance_error(a, b, 0, 1, 1, True, [1])
        >>> float(e.eval({a: [[1, 3], [2, 0]], b: [[2, 0], [2, 0]]}))
        1.0
    """
    va, vb = operand(input_a), operand(input_b)
    la, lb = (getattr(v, "sequence_lengths", None) for v in (va, vb))
    if (la is None) != (lb is None):
        raise ValueError("edit_distance_error: both inputs need a sequence axis, or neither")
    if tuple(sample_shape(input_a)) != tuple(sample_shape(input_b)):
        raise ValueError(f"edit_distance_error: the inputs have shapes "
                         f"{tuple(sample_shape(input_a))} and {tuple(sample_shape(input_b))}; "
                         "they need one shape")
    out = F.cntk_edit_distance_error(va, vb, la, sub_pen=float(subPen), del_pen=float(delPen),
                                     ins_pen=float(insPen), squash_inputs=bool(squashInputs),
                                     tokens_to_ignore=tuple(int(t) for t in tokensToIgnore))
    if batched(input_a):
        G.BATCH.unmark(out)
    return named(wrap(out), name, "EditDistanceError")
