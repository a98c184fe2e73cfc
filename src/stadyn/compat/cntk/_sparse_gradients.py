"""Which parameters CNTK 2.7 gives a row-sparse gradient, and the rows a minibatch touched.

CNTK 2.7 computes the gradient of the weight ``E`` of ``times(x, E)`` (``Embedding``,
``Dense``) where ``x`` is a sparse input (``input_variable(..., is_sparse=True)``) as a
block-sparse matrix: the rows of ``E`` whose index the minibatch's data holds (a non-zero
along ``x``'s last axis).  Its learners then update only those rows, by sparse rules of their
own (:mod:`stadyn.learners._row_sparse`).  Stadyn holds sparse data dense, so its gradient is
dense; the Trainer tells its learners before each update which parameters' gradients CNTK
would hold sparse and which rows (:func:`tell_row_sparse`).  A parameter is row-sparse when
every use of it in the loss's graph is such a product's weight (a weight also used
elsewhere gets a dense gradient in CNTK 2.7, its sum being dense).

Example:
    >>> import numpy as np, scipy.sparse as sp, stadyn.compat.cntk as C
    >>> x = C.input_variable(4, is_sparse=True)
    >>> E = C.parameter((4, 2), init=1.0)
    >>> trainer = C.Trainer(C.times(x, E), C.reduce_sum(C.times(x, E)),
    ...                     [C.momentum_sgd([E], 0.1, 0.9)])
    >>> _ = trainer.train_minibatch({x: sp.csr_matrix(np.eye(4, dtype=np.float32)[[0]])})
    >>> _ = trainer.train_minibatch({x: sp.csr_matrix(np.eye(4, dtype=np.float32)[[2]])})
    >>> [round(float(v), 3) for v in E.value[:, 0]]    # step 2 leaves row 0 where it was
    [0.99, 1.0, 0.99, 1.0]
"""

from __future__ import annotations

import weakref

import numpy as np
import torch

from ...graph import Variable, data_of
from ...learners import Learner
from ._adapt import unwrap
from ._graph_records import SPARSE
from ._sparse_operands import sparse_computed

__all__ = ["row_sparse_uses", "tell_row_sparse", "note_stored_entries", "held_sparse"]

# the indices along a sparse input's last axis its last SciPy matrix (of a Trainer's
# minibatch) stored, zeros stored explicitly too: CNTK 2.7's gradient holds a block for each
_STORED: "weakref.WeakKeyDictionary[Variable, np.ndarray]" = weakref.WeakKeyDictionary()

_PRODUCTS = ("affine",)          # the op compat.cntk's times (and Dense, Embedding) builds
_PASSING = ("identity",)         # ops between a typed Function's argument and its input


def row_sparse_uses(root: Variable) -> dict[int, tuple[Variable, list[Variable]]]:
    """``{id(parameter): (parameter, [sparse inputs])}`` for the Variables of ``root``'s graph
    used only as the weight of a product with a sparse input, or with what passes one on
    unchanged (its last axis the weight's first)."""
    sparse: dict[int, tuple[Variable, list[Variable]]] = {}
    dense: set[int] = set()
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop().parent
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        inputs = list(node.inputs)
        for k, v in enumerate(inputs):
            if v is None:
                continue
            x = _sparse_source(inputs[0]) if k == 1 and node.spec.name in _PRODUCTS else None
            if x is not None and v.parent is None and len(v.shape) >= 1 \
                    and len(x.shape) >= 1 and x.shape[-1] == v.shape[0]:
                sparse.setdefault(id(v), (v, []))[1].append(x)
            else:
                dense.add(id(v))
            stack.append(v)
    return {k: use for k, use in sparse.items() if k not in dense}


def held_sparse(values: dict, roots: "list | None" = None) -> set:
    """The keys of ``values`` (outputs or variables, as a run's ``as_numpy=False`` answer is
    keyed) whose Value CNTK 2.7 holds sparse (``is_sparse``): sparse data an op computes
    (``one_hot(..., sparse_output=True)``) and, with ``roots`` (a backward's), the
    parameters whose gradient is row-sparse (:func:`row_sparse_uses`).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x = C.input_variable(1)
        >>> oh, plain = C.one_hot(x, 3, sparse_output=True), C.one_hot(x, 3)
        >>> [k is oh for k in held_sparse({oh: None, plain: None})]
        [True]
    """
    rows = set()
    for root in roots or ():
        rows |= set(row_sparse_uses(root))
    return {k for k in values if sparse_computed(unwrap(k)) or id(unwrap(k)) in rows}


def _sparse_source(x: Variable) -> "Variable | None":
    """The sparse input ``x`` is, or passes on unchanged (through ``identity`` nodes: an
    argument bound to a typed Function's input), or the sparse data an op computes
    (``one_hot(..., sparse_output=True)``); None where it is neither."""
    while not _sparse(x) and x.parent is not None and x.parent.spec.name in _PASSING:
        x = x.parent.inputs[0]
    return x if _sparse(x) else None


def _sparse(x: Variable) -> bool:
    return x in SPARSE or sparse_computed(x)


def note_stored_entries(variable: Variable, value) -> None:
    """Note the entries a Trainer's minibatch data for ``variable`` (a sparse input) stores:
    of a SciPy matrix (or a list of them, one per sequence), its column indices, explicitly
    stored zeros too, which CNTK 2.7's block-sparse gradient holds a block for (its learners
    update those rows: AdaGrad averages its multiplier over them, CPUSparseMatrix.cpp:1358-
    1395, a stored zero's 1/sqrt(1e-16) among them); of a reader's ``MinibatchData``, the
    zeros its file stored (a CTF file's ``3:0``: ``MinibatchData.stored``), as CNTK 2.7's
    reader keeps them; other data (a one-hot ``Value``) forgets them, and its non-zero values
    tell the rows.

    Example:
        >>> import numpy as np, scipy.sparse as sp, stadyn.compat.cntk as C
        >>> s = C.input_variable(4, is_sparse=True)
        >>> m = sp.csr_matrix((np.float32([0, 2]), [0, 1], [0, 2]), shape=(1, 4))
        >>> note_stored_entries(s.variable, m)
        >>> _touched([s.variable], 4).tolist()      # (s holds no data: only the stored ones)
        [0, 1]
    """
    stored = getattr(value, "stored", None)
    if isinstance(stored, np.ndarray):
        _STORED[variable] = np.flatnonzero(stored.reshape(-1, stored.shape[-1]).any(0))
        return
    parts = value if isinstance(value, list) else [value]
    if parts and all(hasattr(v, "tocsr") and hasattr(v, "nnz") for v in parts):
        _STORED[variable] = np.unique(np.concatenate(
            [np.asarray(v.tocsr().indices, np.int64) for v in parts]))
    else:
        _STORED.pop(variable, None)


def _touched(inputs: list[Variable], rows: int) -> torch.Tensor:
    """The indices along the last axis where any of ``inputs``' current data is non-zero, or
    its SciPy matrix stored an entry (:func:`note_stored_entries`)."""
    found = None
    for x in inputs:
        data = data_of(x)
        # (computed sparse data the run did not keep: every row, the dense rule; a one-hot of
        # a sequence's padding is class 0, as CNTK 2.7's gap holds an entry for it too)
        hit = (data.detach().reshape(-1, rows) != 0).any(0) if data is not None else \
            torch.full((rows,), sparse_computed(x), dtype=torch.bool)
        stored = _STORED.get(x)
        if stored is not None:
            hit = hit.clone()
            hit[torch.as_tensor(stored[stored < rows], device=hit.device)] = True
        found = hit if found is None else found | hit.to(found.device)
    return found.nonzero().reshape(-1)


def tell_row_sparse(trainer) -> None:
    """Tell ``trainer``'s learners which of their parameters have a row-sparse gradient in
    CNTK 2.7 and the rows this minibatch touched (after its forward; the uses are found once
    per Trainer)."""
    uses = trainer.__dict__.get("_row_sparse_uses")
    if uses is None:
        uses = trainer.__dict__["_row_sparse_uses"] = row_sparse_uses(
            unwrap(trainer.loss_function))
    if not uses:
        return
    for learner in trainer.parameter_learners:
        # (a learner with a step of its own, a UserLearner or universal's, reads the
        # gradients itself: dense, as it is given them)
        if not isinstance(learner, Learner) or type(learner).step is not Learner.step:
            continue
        rows = {p: _touched(uses[id(p)][1], p.shape[0])
                for p in learner.named_parameters().values() if id(p) in uses}
        if rows:
            learner.set_row_sparse_gradients(rows)
