"""Row-sparse gradients: CNTK 2.7's learners on a gradient only some rows of which are stored.

CNTK 2.7 computes the gradient of a weight multiplied by a sparse input (``times(x, E)``,
``Embedding``, ``Dense`` of an ``is_sparse=True`` input) as a block-sparse matrix holding the
rows of ``E`` the minibatch's data touched, and its learners then run sparse kernels
(``Source/Math/Matrix.cpp`` and ``CPUSparseMatrix.cpp``) that differ from the dense ones:

* momentum SGD (``Matrix.cpp:1676-1689``, ``CPUSparseMatrix.cpp:1323-1353``) keeps the
  momentum without the learning rate and decays only the touched rows:
  ``s[r] = m s[r] + u g[r]; w[r] -= lr s[r]`` (with ``m = 0``: ``w -= lr g``, ``s`` kept);
* Nesterov (``Matrix.cpp:1726-1745``): ``s[r] = m s[r] + u g[r]``; ``w -= m s`` over every
  row (the learning rate not applied); ``w[r] -= u lr g[r]``; with ``m = 0`` nothing moves;
* AdaGrad (``CPUSparseMatrix.cpp:1385-1410``) averages its multiplier over the touched rows'
  elements only;
* SGD and AdaDelta (whose sparse kernel applies the skipped rows' decay lazily,
  ``CPUSparseMatrix.cpp:1426-1470``) move as the dense rule does;
* Adam, FSAdaGrad and RMSProp have no CPU sparse kernel in CNTK 2.7 (``Matrix.cpp:1822,
  1859, 1880``: ``Feature Not Implemented``), but its GPU build has (``GPUSparseMatrix.cu``'s
  ``FSAdagrad``, ``Adam``, ``RmsProp``, lines 1601-1745 of the mirror's HEAD, launching
  ``_fsadagrad4BlockSparseCol``, ``_adam4BlockSparseCol``, ``_rmsprop4BlockSparseCol`` of
  ``GPUMatrixCUDAKernels.cuh``): they run over every element
  of the parameter, reading 0 for the rows the gradient does not hold, which is the dense
  rule; Stadyn runs them so (on every device), as programs written for CNTK's GPUs
  (``LanguageUnderstanding.py``) train there;
* adamax has no CPU sparse kernel either, and the GPU one divides by an accumulator still 0
  on the rows never touched (``_adam4BlockSparseCol`` has no epsilon for adamax), writing NaN
  into them: Stadyn refuses it with the CPU build's words;
* L2 regularisation: the CPU build refuses it (``ScaleAndAdd`` of the dense parameter into
  the sparse gradient, ``Matrix.cpp:5403``); the GPU build makes the gradient dense there
  (the GPU-sparse branch of ``Matrix::ScaleAndAdd(alpha, a, c)``: ``CopyToDenseMatrix``) and
  the dense rule follows: Stadyn does as the GPU build.

Clipping, L1, noise and the mean gradient of the compatible mode act as on a dense gradient.
Who knows that a gradient is row-sparse (the CNTK compat Trainer) tells the learner before its
update: :meth:`RowSparseUpdates.set_row_sparse_gradients`.
"""

from __future__ import annotations

from typing import Any, Mapping

import torch

from .._errors import ParameterError
from ..graph import Variable, data_of

__all__ = ["RowSparseUpdates", "SparseGradientError"]


class SparseGradientError(RuntimeError):
    """A learner Stadyn does not run on a row-sparse gradient (adamax), in CNTK 2.7's words
    (its RuntimeError)."""


def _refusal(learner: str, name: str, shape: tuple, rule: tuple[str, int, str]) -> str:
    function, line, why = rule
    return (f"Inside File: Source/Math/Matrix.cpp  Line: {line}  Function: {function}  -> "
            f"Feature Not Implemented.\n{learner}: the gradient of parameter {name} (shape "
            f"{shape}) is row-sparse (the weight of a product with a sparse input), and CNTK "
            f"2.7 {why} (CNTK 2.7's CPU words above)")


class RowSparseUpdates:
    """The row-sparse part of :class:`~stadyn.learners.Learner`: which parameters' next
    gradient is row-sparse and which rows it holds, and CNTK 2.7's sparse rules.

    A learner class names its sparse rule in ``_sparse_rule``: ``"dense"`` (the dense rule
    gives CNTK's numbers), ``"momentum"``, ``"nesterov"``, ``"adagrad"``, or a
    ``(kernel, line of Matrix.cpp, why)`` triple for a learner Stadyn refuses as CNTK 2.7
    does (:meth:`_sparse_rule_now` may pick by the learner's options)."""

    _sparse_rule: Any = "dense"
    _pending_rows: "dict[int, torch.Tensor] | None" = None

    def set_row_sparse_gradients(self, rows: "Mapping[Variable, Any]") -> None:
        """Tell the learner that the gradients of its next update are row-sparse for the
        parameters in ``rows``, each holding the rows (indices along the parameter's first
        axis) given: CNTK 2.7's gradient of the weight of a product with a sparse input.
        The next :meth:`update` then applies CNTK 2.7's sparse rule to them (see
        :mod:`stadyn.learners._row_sparse`) and forgets the rows.

        Example:
            >>> import numpy as np, torch, stadyn as sd
            >>> from stadyn.learners import momentum_sgd
            >>> E = sd.Variable.from_numpy_array(np.zeros((3, 1)), need_grad=True)
            >>> learner = momentum_sgd([E], 0.5, 0.5, unit_gain=False)
            >>> learner.set_row_sparse_gradients({E: [0, 1]})
            >>> E.grad = torch.tensor([[1.0], [1.0], [0.0]]); _ = learner.update(1)
            >>> learner.set_row_sparse_gradients({E: [1, 2]})    # row 0 not touched
            >>> E.grad = torch.tensor([[0.0], [1.0], [1.0]]); _ = learner.update(1)
            >>> E.d.ravel().tolist()        # s = m s + g, w -= lr s on the rows touched
            [-0.5, -1.25, -0.5]
        """
        index = {id(p): k for k, p in enumerate(self._params)}
        pending = {}
        for var, given in rows.items():
            k = index.get(id(var))
            if k is None:
                raise ParameterError(f"{self.name}.set_row_sparse_gradients: {var!r} is not one "
                                     "of its parameters")
            n = data_of(var).shape[0] if data_of(var).dim() else 0
            r = torch.as_tensor(given, dtype=torch.long).reshape(-1)
            if r.numel() and (int(r.min()) < 0 or int(r.max()) >= n):
                raise ParameterError(f"{self.name}.set_row_sparse_gradients: rows "
                                     f"{r.tolist()} of parameter {self._names[k]} are outside "
                                     f"its {n} rows")
            pending[k] = torch.unique(r).to(data_of(var).device)
        self._pending_rows = pending or None

    def _take_rows(self) -> "dict[int, torch.Tensor] | None":
        rows, self._pending_rows = self._pending_rows, None
        return rows

    def _sparse_rule_now(self) -> Any:
        """The learner's sparse rule for its options: L2 makes CNTK 2.7's GPU build add the
        dense parameter into the gradient, dense after it (``Matrix::ScaleAndAdd``'s GPU-sparse
        branch), so the dense rule follows."""
        return "dense" if self.l2_regularization_weight > 0 else self._sparse_rule

    def _apply_row_sparse(self, params: list[torch.Tensor], grads: list[torch.Tensor],
                          states: dict[str, list[torch.Tensor]], scalars: Mapping[str, Any],
                          rows: "dict[int, torch.Tensor]", sample_count: int) -> None:
        """:meth:`apply_step` with the parameters ``rows`` names updated by CNTK 2.7's sparse
        rule, the others by the dense one; or the refusal (:class:`SparseGradientError`) of a
        learner Stadyn runs on no sparse gradient (adamax)."""
        rule = self._sparse_rule_now()
        if isinstance(rule, tuple):
            # CNTK 2.7 updates the parameters one by one, after beginning the update (adam's
            # count, ...): those before the first row-sparse one are updated, then it raises
            k = min(rows)
            if k:
                self.apply_step(params[:k], grads[:k], {n: s[:k] for n, s in states.items()},
                                scalars)
            self.count_refused_update(sample_count)
            raise SparseGradientError(_refusal(self.name, self._names[k],
                                               tuple(data_of(self._params[k]).shape), rule))
        if rule == "dense":
            return self.apply_step(params, grads, states, scalars)
        # apply_step's order: clipping (no L2: see _sparse_rule_now) -> the rule -> noise -> L1
        self._before_rule(params, grads, scalars)
        dense = [k for k in range(len(params)) if k not in rows]
        if dense:
            self._apply([params[k] for k in dense], [grads[k] for k in dense],
                        {n: [s[k] for k in dense] for n, s in states.items()}, scalars,
                        self.foreach)
        for k, r in rows.items():
            self._pick_rows(rule, params[k], grads[k], {n: s[k] for n, s in states.items()},
                            scalars, r)
        self._after_rule(params, scalars)

    def _pick_rows(self, rule: str, w: torch.Tensor, g: torch.Tensor,
                   state: dict[str, torch.Tensor], scalars: Mapping[str, Any],
                   r: torch.Tensor) -> None:
        lr = float(scalars["lr"])
        if rule == "adagrad":
            v = state["v"]
            gr = g.index_select(0, r)
            acc = v.index_select(0, r).addcmul_(gr, gr)
            v.index_copy_(0, r, acc)
            a = acc.add(1e-16).sqrt_()
            multiplier = a.reciprocal().mean() if self.need_ave_multiplier and a.numel() \
                else torch.ones((), dtype=a.dtype, device=a.device)
            w.index_add_(0, r, gr.div_(a), alpha=-lr / float(multiplier))
            return
        m = float(scalars["momentum"])
        if m == 0:
            if rule == "momentum":
                w.index_add_(0, r, g.index_select(0, r), alpha=-lr)
            return                  # (CNTK's sparse Nesterov does nothing without momentum)
        u = 1.0 - m if self.unit_gain else 1.0
        s = state["v"]
        gr = g.index_select(0, r)
        smoothed = s.index_select(0, r).mul_(m).add_(gr, alpha=u)
        s.index_copy_(0, r, smoothed)
        if rule == "momentum":
            w.index_add_(0, r, smoothed, alpha=-lr)
        else:
            w.add_(s, alpha=-m)
            w.index_add_(0, r, gr, alpha=-u * lr)
