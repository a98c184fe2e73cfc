"""``nnabla.function``: ``PythonFunction``, NNabla's way to write a function in Python.

A subclass names itself (``name``), says how many outputs it has (``min_outputs``), sets their
shapes (``setup_impl``: ``outputs[i].reset_shape(shape, True)``), and computes on NumPy arrays:
``forward_impl(inputs, outputs)`` reads ``inputs[i].data.data`` (or ``.d``) and writes
``outputs[i].data.data[...]`` (or ``outputs[i].data.data = array``); ``backward_impl(inputs,
outputs, propagate_down, accum)`` reads ``outputs[i].grad`` and writes ``inputs[i].grad``
(adding to it where ``accum[i]``).  Calling an instance on Variables gives its output
Variables, static or dynamic, and gradients flow through ``backward_impl``.  nnabla-examples
write FastSpeech2's length regulator and YOLOv2's region-loss targets this way.

On Stadyn the function runs as the op :func:`stadyn.functions.python_function`: a graph holding
it runs eagerly and cannot be saved to a model file.  Its node is NNabla's: ``f.name`` is
``'Callback'``, ``f.info.type_name`` the subclass's ``name``, ``f.info.args`` empty.  The inputs
``forward_impl`` sees hold the Variables' memory (what it writes into them reaches the
Variables, as in NNabla); those ``backward_impl`` sees are copies whose ``grad`` is a leaf's
gradient as it holds it (``accum`` True: an assigning backward overwrites ``x.g``, as NNabla's;
False where it was zeroed since it was last written, as NNabla's) or else zeros (``accum``
False; Stadyn adds up what it writes); an input needing no gradient shows its Variable's own
gradient array (``c.g`` as it stands; what is written there stays), as NNabla's.  Where
functions NNabla's backward runs before this one
read the same input, ``grad`` holds what they left there, added up, with ``accum`` True, as
NNabla's: the backward waits until they have run (``defer_input``, ``run_deferred``,
``run_leaves``; graph/_reader_order.py: where the inputs needing a gradient are one Variable,
leaves alone, or an intermediate and others); positions holding one Variable share its
``grad`` (``Mul2(x, x)``), their ``accum`` NNabla's; ``outputs=[nd, ...]`` makes its outputs
hold those ``nn.NdArray``s, as NNabla's (``_output_arrays.py``).  As in NNabla 1.39, a
subclass must define ``grad_depends_output_data`` and ``grad_depends_input_data`` when an input
needs a gradient: calling it then asks the first (for every such input and every output),
``forward`` the second (for every such input and every input), and a subclass lacking one stops
there with NNabla 1.39's ``SystemError`` from ``NotImplementedError: Implement
`grad_depends_output_data`.`` (the methods' answers
only steer NNabla's buffer reuse, so Stadyn asks and does not use them).  What
``forward_impl`` or ``backward_impl`` raises reaches the user as NNabla's does: a
``SystemError`` whose ``__cause__`` it is; ``nn.grad`` through one raises NNabla's
``ValueError`` (no backward function for it: ``_grad.py``).

Example:
    >>> import numpy as np
    >>> import stadyn.compat.nnabla as nn
    >>> from stadyn.compat.nnabla.function import PythonFunction
    >>> class Square(PythonFunction):
    ...     name = "Square"
    ...     def min_outputs(self): return 1
    ...     def grad_depends_output_data(self, i, o): return False
    ...     def grad_depends_input_data(self, i, j): return True
    ...     def setup_impl(self, inputs, outputs): outputs[0].reset_shape(inputs[0].shape, True)
    ...     def forward_impl(self, inputs, outputs):
    ...         outputs[0].data.data = inputs[0].data.data ** 2
    ...     def backward_impl(self, inputs, outputs, propagate_down, accum):
    ...         inputs[0].grad.data = 2 * inputs[0].data.data * outputs[0].grad.data
    >>> x = nn.Variable.from_numpy_array(np.array([1.0, 3.0]), need_grad=True)
    >>> y = Square()(x)
    >>> y.forward(); y.backward()
    >>> y.d.tolist(), x.g.tolist()
    ([1.0, 9.0], [2.0, 6.0])
"""

from __future__ import annotations

import weakref
from typing import Any, Sequence

import numpy as np
import torch

from ... import functions as _F
from ...graph import Variable as _Core
from ._ndarray import NdArray
from ...graph import is_zeroing, raised_by_user_code
from ._variable_arrays import grad_tensor
from ._output_arrays import checked_arrays, into_given_arrays

__all__ = ["PythonFunction"]


class _Slot:
    """What a PythonFunction's methods get for an input or an output: its ``shape``, ``data``
    and ``grad`` NdArrays (``.d`` / ``.g`` their NumPy views) and ``reset_shape``."""

    def __init__(self, shape: Sequence[int], value: np.ndarray | None = None) -> None:
        self._data = NdArray(shape) if value is None else NdArray.from_numpy_array(value)
        self._grad = NdArray(shape)

    @classmethod
    def viewing(cls, value: np.ndarray) -> "_Slot":
        """A slot whose ``data`` is ``value``'s memory (an input's: what the function writes
        into it reaches the Variable, as NNabla's)."""
        slot = cls(value.shape)
        slot._data = NdArray._wrap(torch.from_numpy(value))
        return slot

    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def reset_shape(self, shape: Sequence[int], force: bool = False) -> None:
        self._data, self._grad = NdArray(shape), NdArray(shape)

    @property
    def data(self) -> NdArray:
        return self._data

    @data.setter
    def data(self, value: Any) -> None:
        self._data.data = value.data if isinstance(value, NdArray) else value

    @property
    def grad(self) -> NdArray:
        return self._grad

    @grad.setter
    def grad(self, value: Any) -> None:
        self._grad.data = value.data if isinstance(value, NdArray) else value

    @property
    def d(self) -> np.ndarray:
        return self._data.data

    @d.setter
    def d(self, value: Any) -> None:
        self._data.data = value

    @property
    def g(self) -> np.ndarray:
        return self._grad.data

    @g.setter
    def g(self, value: Any) -> None:
        self._grad.data = value


class _Adapter:
    """A PythonFunction as the ``python_function`` op calls it."""

    def __init__(self, function: "PythonFunction", n_outputs: int,
                 inputs: Sequence[Any]) -> None:
        self.function, self.n = function, n_outputs
        # of each input, when the function was called
        self.needs_grad = [bool(getattr(x, "need_grad", False)) for x in inputs]
        # every input Variable: one needing no gradient hands backward_impl its own gradient
        # array (NNabla's inputs[i].grad is the Variable's: what it holds, what is written
        # there stays)
        self.variables = [weakref.ref(x) if isinstance(x, _Core) else None for x in inputs]
        # the leaf Variables among them (their gradients accumulate: NNabla hands
        # backward_impl a leaf's own gradient array with ``accum`` True)
        self.leaves = [ref if ref is not None and x.parent is None else None
                       for ref, x in zip(self.variables, inputs)]
        # each input's first position holding the same Variable: NNabla hands those positions
        # one gradient array (``Mul2(x, x)``: ``inputs[0].g`` is ``inputs[1].g``)
        self.same = [next(j for j, y in enumerate(inputs) if y is x) for x in inputs]
        self.calling = False                   # (a dynamic graph's call runs the forward)
        # the input whose gradient a backward completes first (graph/_reader_order.py: NNabla
        # runs its readers' backward before this function's; -1: every input, all leaves),
        # and the backward kept till then
        self.deferred: int | None = None
        self.kept: tuple | None = None

    def check_grad_depends(self, method: str, n: int) -> None:
        """Ask the function's ``grad_depends_<method>_data(i, k)`` for every input ``i`` needing
        a gradient and ``k < n``, as NNabla 1.39 does when it builds a graph (``output``, of
        the outputs: whether an output's buffer may be reused) and when ``forward`` runs one
        (``input``, of the inputs: which buffers to keep); a subclass lacking the method stops
        there with NNabla 1.39's ``SystemError`` whose cause is its ``NotImplementedError``
        (:meth:`_run`; case ``nnabla_views_35.python_function_missing_methods``)."""
        for i, needed in enumerate(self.needs_grad):
            if needed:
                for k in range(n):
                    self._run(f"grad_depends_{method}_data", i, k)

    def _setup(self, inputs: list[_Slot]) -> list[_Slot]:
        outputs = [_Slot(()) for _ in range(self.n)]
        self.function.setup_impl(inputs, outputs)
        return outputs

    def output_shapes(self, shapes, dtypes):
        outputs = self._setup([_Slot(s) for s in shapes])
        return [(o.shape, torch.float32) for o in outputs]

    def forward_arrays(self, arrays):
        if not self.calling:
            self.check_grad_depends("input", len(arrays))
        inputs = [_Slot.viewing(a) for a in arrays]
        outputs = self._setup(inputs)
        self._run("forward_impl", inputs, outputs)
        values = [np.array(o.d, dtype=np.float32) for o in outputs]
        return (arrays, values), values

    def _run(self, method: str, *args: Any) -> Any:
        """Call the function's ``method`` (``forward_impl``, ``backward_impl``); what it raises
        reaches the user as NNabla 1.39's does: a ``SystemError`` (its C++ caller returns with
        the exception set) whose cause is the exception."""
        try:
            return getattr(self.function, method)(*args)
        except Exception as exc:
            raise raised_by_user_code(SystemError(
                f"{method} of PythonFunction {self.function.name!r} raised "
                f"{type(exc).__name__}: {exc} (NNabla 1.39 raises SystemError '... returned a "
                "result with an exception set' from it)")) from exc

    def defer_input(self, k: int | None) -> None:
        """Keep the next backward for later, until input ``k``'s readers that NNabla runs
        before this function have run (:meth:`run_deferred`; -1: those of every input, all
        leaves: :meth:`run_leaves`); None: run it at once again."""
        self.deferred, self.kept = k, None

    def held_gradient(self, k: int) -> tuple[np.ndarray, bool] | None:
        """What NNabla's backward starts input ``k``'s gradient from: a leaf's gradient as it
        holds it and its ``accum`` (see :meth:`_held_grad`); None for an inner Variable."""
        return self._held_grad(k)

    def run_deferred(self, partial: np.ndarray, accum: bool) -> np.ndarray | None:
        """Run the backward kept by :meth:`defer_input`, ``backward_impl`` seeing ``partial``
        in the input's ``grad`` (what the functions NNabla runs before this one left there;
        one array for every position holding the input) and ``accum``, as NNabla's (a
        position after the first holding the input: True); the gradient it leaves there (None
        where no backward was kept: this function's outputs got no gradient)."""
        k = self.deferred
        done = self.run_leaves({j: partial for j, s in enumerate(self.same) if s == k},
                               {j: accum if j == k else True
                                for j, s in enumerate(self.same) if s == k})
        return None if done is None else done[k]

    def run_leaves(self, partial: dict, accum: dict) -> dict | None:
        """Run the kept backward, ``backward_impl`` seeing ``partial[k]`` in input ``k``'s
        ``grad`` and ``accum[k]`` (positions holding one Variable share its array); the
        gradient it leaves in each of those inputs (None where no backward was kept)."""
        if self.kept is None:
            return None
        (arrays, values), grads, needed = self.kept
        self.kept = None
        inputs, outputs = self._slots(arrays, values, grads, needed)
        for k, g in partial.items():
            inputs[k].g = np.asarray(g, np.float32).copy()
        self._run("backward_impl", inputs, outputs, [bool(b) for b in needed],
                                    [bool(accum.get(k, False)) for k in range(len(needed))])
        return {k: np.array(inputs[k].g, dtype=np.float32) for k in partial}

    def _slots(self, arrays, values, grads, needed) -> tuple[list[_Slot], list[_Slot]]:
        inputs = [_Slot(a.shape, a) for a in arrays]
        for k, first in enumerate(self.same):
            ref = self.variables[k]
            v = ref() if ref is not None and not needed[k] else None
            if v is not None and first == k:
                # NNabla 1.39 hands an input needing no gradient its Variable's gradient array
                # (case nnabla_pyfunc_36.python_function__input_needing_no_gradient)
                inputs[k]._grad = NdArray._wrap(grad_tensor(v))
            inputs[k]._grad = inputs[first]._grad
        outputs = [_Slot(v.shape, v) for v in values]
        for o, g in zip(outputs, grads):
            if g is not None:
                o.g = g
        return inputs, outputs

    def backward_arrays(self, state, grads, needed):
        if self.deferred is not None:
            self.kept = (state, grads, needed)
            return [np.zeros_like(a, dtype=np.float32)
                    if b and (self.deferred < 0 or self.same[k] == self.deferred) else None
                    for k, (a, b) in enumerate(zip(state[0], needed))]
        arrays, values = state
        inputs, outputs = self._slots(arrays, values, grads, needed)
        held = [self._held_grad(k) if b else None for k, b in enumerate(needed)]
        for slot, g in zip(inputs, held):
            if g is not None:
                slot.g = g[0]
        # NNabla's accum (variable.cpp get_accum): a leaf's True unless zeroed, an inner
        # Variable's False on its first position (what this backward runs first), and True
        # on a position after the first holding the same Variable (one array shared)
        shared = [b and any(self.same[j] == self.same[k] and j != k and needed[j]
                            for j in range(len(needed))) for k, b in enumerate(needed)]
        self._run("backward_impl", inputs, outputs, [bool(b) for b in needed],
                                    [bool(b) and (self.same[k] != k or (g is not None and
                                                                      (g[1] or shared[k])))
                                     for k, (b, g) in enumerate(zip(needed, held))])
        # what the backward added to a leaf's gradient is its contribution (Stadyn adds the
        # contributions into the gradient after the backward passes the leaf), given once for
        # the positions holding one Variable
        return [None if not b else np.zeros_like(i.g) if self.same[k] != k
                else i.g.copy() if g is None else i.g - g[0]
                for k, (i, b, g) in enumerate(zip(inputs, needed, held))]

    def _held_grad(self, k: int) -> tuple[np.ndarray, bool] | None:
        """A copy of the gradient the leaf input ``k`` holds now (before this backward's
        contributions reach it) and its ``accum``: False where it was zeroed and not written
        since (``x.grad.zero()``, ``x.g = 0``, a solver's ``zero_grad``: NNabla's backward then
        writes the array instead of adding to it), else True; None for an input that is no
        leaf."""
        ref = self.leaves[k]
        leaf = ref() if ref is not None else None
        if leaf is None or not leaf.need_grad:
            return None
        g = grad_tensor(leaf)         # (zeros, ``zeroing`` after a solver's ``zero_grad``)
        return g.detach().cpu().numpy().astype(np.float32, copy=True), not is_zeroing(g)


class PythonFunction:
    """NNabla's base class of functions written in Python (see the module docstring)."""

    def __init__(self, ctx: Any = None) -> None:
        from . import get_current_context
        self._ctx = ctx if ctx else get_current_context()

    def __call__(self, *inputs: Any, n_outputs: int = -1, outputs: Any = None):
        arrays = None if outputs is None else checked_arrays(self.name, outputs)
        n = self.min_outputs() if n_outputs < 0 else int(n_outputs)
        adapter = _Adapter(self, n, inputs)
        adapter.check_grad_depends("output", n)
        adapter.calling = True
        try:
            out = _F.python_function(*inputs, function=adapter)
        finally:
            adapter.calling = False
        return out if arrays is None else into_given_arrays(self.name, out, arrays)

    @property
    def name(self) -> str:
        raise NotImplementedError("Implement `name`.")

    @property
    def ctx(self) -> Any:
        if not hasattr(self, "_ctx"):
            from . import get_current_context
            self._ctx = get_current_context()
        return self._ctx

    def min_outputs(self) -> int:
        raise NotImplementedError("Implement `min_outputs`.")

    def grad_depends_output_data(self, i: int, o: int) -> bool:
        raise NotImplementedError("Implement `grad_depends_output_data`.")

    def grad_depends_input_data(self, i: int, j: int) -> bool:
        raise NotImplementedError("Implement `grad_depends_input_data`.")

    def setup_impl(self, inputs: list, outputs: list) -> None:
        raise NotImplementedError("Implement `setup`.")

    def forward_impl(self, inputs: list, outputs: list) -> None:
        raise NotImplementedError("Implement `forward`.")

    def backward_impl(self, inputs: list, outputs: list, propagate_down: list, accum: list
                      ) -> None:
        raise NotImplementedError("Implement `backward`.")
