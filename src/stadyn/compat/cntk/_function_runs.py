"""A CNTK Function's runs: feeding its arguments, ``eval``, ``forward``/``backward``,
``grad``, and ``train``/``test`` (:class:`FunctionRuns`, mixed into
:class:`~stadyn.compat.cntk.Function`), and what a Function keeps from one run to the next
(:class:`RunState`): its recurrences' carried states (CNTK 2.7 carries them from every run, so
that a False sequence-begin flag goes on from the previous one; see :mod:`._sequence_begin`)
and whether its graph may run (:mod:`._run_checks`).

CNTK keeps that state per Function.  Here a Function holds it from its first run on, and a
Function over the same outputs (``trainer.model``, a Function wrapped again) shares it while
one that ran is alive; ``combine`` makes a Function of its own (``C.combine([z])`` starts with
no previous run even where ``z`` has one, as in CNTK 2.7), whose :class:`RunState` no other
Function shares.  Nothing else holds the state, so it goes with the Functions: the values a
run keeps lead back to the graph's outputs (each root of a run refers to its plan, which
refers to every root), which a registry holding the state would keep alive for ever.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import torch

from ... import io as _io
from ..._errors import EmptySequenceError
from ...graph import (FeedUndo, Variable, forward_all, graph_version, topological_nodes,
                      training)
from ...train import feed, fits_sample, stack_samples
from . import _graph as G
from ._adapt import unwrap
from ._assign import apply_assignments, assign_outputs, pending_assignments
from ._checked_mode import CheckedLatch
from ._fed_data import (refuse_data_type, refuse_fed_layouts_that_differ, unbatched,
                        unbatched_sample)
from ._deferred_runs import not_provided, typeless_data, unbound_placeholders
from ._forward_state import (ForwardState, as_values, check_differentiable, kept_buffers,
                             put_back, restore_values)
from ._late import late
from ._requested_outputs import RequestedOutputs
from ._run_checks import RunnableCheck
from ._seeds import rewind_streams
from ._sparse_gradients import held_sparse
from ._sparse_operands import refuse_dense_feed
from ._sequence_begin import (SequenceBegins, carrying, refuse_unpacking, split_flags,
                              truncated_layout)
from ._values import output_value, root_gradient, sequence_starts
from ._worker_sums import refuse_empty_sequences, refuse_no_rows

__all__ = ["FunctionRuns", "RunState", "refuse_function_keys"]


class RunState:
    """What a Function keeps from one run to the next: its recurrences' states
    (:class:`SequenceBegins`, made at its first run), whether its graph may run and whether
    its runs are checked for NaN (CNTK's checked mode, read at its first run)."""

    __slots__ = ("begins", "runnable", "checked", "required", "runs", "requested",
                 "__weakref__")

    def __init__(self):
        self.begins: SequenceBegins | None = None
        self.runnable = RunnableCheck()
        self.checked = CheckedLatch()
        # the arguments each set of requested outputs needs (by their ids), with the graph
        # version they were found at: found once, again only after a rewire
        self.required: dict = {}
        # the runs made so far: a forward's kept state is good for the backward while no
        # later run has replaced the values it kept
        self.runs = 0
        # the outputs its runs may request (CNTK 2.7 compiles the graph for those of its
        # first training-phase run)
        self.requested = RequestedOutputs()

    def recurrences(self, roots: list[Variable]) -> SequenceBegins | None:
        """The recurrences of the graph of the Function's outputs ``roots`` whose states its
        runs carry, or None for a graph without recurrences."""
        if self.begins is None:
            self.begins = SequenceBegins(roots, whole_sequences=True)
        return self.begins if self.begins.carries or self.begins.whole or \
            self.begins.looked_up else None


# the RunStates of Functions other than combines, held by those Functions: per first output,
# then per every output's id
_SHARED: "weakref.WeakKeyDictionary[Variable, weakref.WeakValueDictionary]" = \
    weakref.WeakKeyDictionary()


class FunctionRuns:
    """``Function``'s runs (mixed into it; it gives ``_roots``, ``arguments``, ``outputs``,
    ``output`` and the ``_runs`` slot: its :class:`RunState`, None until its first run but for
    a combine's)."""

    __slots__ = ()

    def _run_state(self) -> RunState:
        state = self._runs
        if state is None:       # the first run: that of a Function over the same outputs
            roots = self._roots()
            shared = _SHARED.get(roots[0])
            if shared is None:
                shared = _SHARED[roots[0]] = weakref.WeakValueDictionary()
            key = tuple(map(id, roots))
            state = shared.get(key)
            if state is None:
                state = shared[key] = RunState()
            self._runs = state
        return state

    def _bind(self, arguments: Any, method: str, given: set,
              undo: "FeedUndo | None" = None) -> list[bool] | None:
        """Feed ``arguments`` (the ids of the Variables fed added to ``given``; each input
        kept by ``undo`` before it is fed); returns the sequence-begin flags given with them,
        or None.  Data for a placeholder left in the graph is CNTK 2.7's RuntimeError (it has
        no data type)."""
        if arguments is None or isinstance(arguments, (dict, list)) and not arguments:
            if self.arguments:      # (CNTK 2.7's words)
                raise ValueError(f"function expects {len(self.arguments)} arguments")
            return None
        arguments, flags = split_flags(arguments)
        if not isinstance(arguments, dict):
            args = self.arguments
            if len(args) != 1:      # (CNTK 2.7's words)
                raise ValueError(f"non-dict argument ({type(arguments).__name__}) is not "
                                 "supported for nodes with more than one input")
            arguments = {args[0]: arguments}
        by_name = None      # the arguments by name, looked up (a walk of the graph) if asked
        fed: list = []      # (input, the Variable fed), in the order given
        for key, value in arguments.items():
            target = key
            if isinstance(key, str):
                if by_name is None:
                    by_name = {}
                    for a in self.arguments:
                        by_name.setdefault(a.name, []).append(a)
                named = by_name.get(key, [])
                if len(named) != 1:     # (CNTK 2.7's words)
                    raise ValueError(
                        f'node name "{key}" is not unique' if named else
                        f'variable with name "{key}" does not exist in the network. '
                        f'Available variable names: {", ".join(dict.fromkeys(by_name))}')
                target = named[0]
            if G.kind_of(unwrap(target)) == "placeholder" and G.typed_placeholder(unwrap(target)):
                raise unbound_placeholders(list(self.placeholders))     # (a block's inside)
            if G.kind_of(unwrap(target)) == "placeholder":
                raise typeless_data(self.root_function.op_name, method, [target])
            given.add(id(unwrap(target)))
            if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], list):
                value, flags = value[0], [bool(f) for f in value[1]]    # (data, sequence starts)
            elif flags is None and sequence_starts(value) is not None:
                flags = sequence_starts(value)      # (Value.create's seq_starts)
            refuse_data_type(value, target)         # (CNTK 2.7's ValueErrors, warnings)
            refuse_dense_feed(unwrap(target), value)
            value = _dense(value)
            if unwrap(target).sequence_lengths is not None and (
                    isinstance(value, list) or getattr(value, "lengths", None) is not None):
                if isinstance(value, list):
                    refuse_empty_sequences(target, value, "Function.eval or forward")
                if undo is not None:
                    undo.keep(unwrap(target), in_place=False)   # (sequences: a new buffer)
                feed(unwrap(target), value, repr(target))    # one array per sequence
                fed.append((target, unwrap(target)))
                continue
            if isinstance(value, list) and value and not isinstance(value[0], (int, float)):
                value = stack_samples(unwrap(target), value)
            var = unwrap(target)
            from_reader = isinstance(value, _io.MinibatchData)
            if hasattr(value, "asarray") and not isinstance(value, np.ndarray):
                value = value.asarray()
            arr = np.asarray(value, dtype=np.dtype(var.dtype)) if not isinstance(
                value, torch.Tensor) else value
            if from_reader and G.BATCH(var) and var.sequence_lengths is None:
                arr = _reader_sample_as_input(arr, var)
            if G.BATCH(var) and arr.ndim == var.ndim + 1 and arr.shape[1] == 1 and \
                    fits_sample(var, tuple(arr.shape[2:])):     # (any length on a free one)
                arr = arr.reshape((arr.shape[0],) + tuple(arr.shape[2:]))   # (N, 1, ...) data
            if var.sequence_lengths is not None and arr.ndim == var.ndim - 2 and \
                    fits_sample(var, tuple(arr.shape), lead=2):
                arr = arr[None]     # one step of one sequence (CNTK 2.7 reads it so)
            if var.sequence_lengths is not None and arr.ndim == var.ndim - 1:
                arr = arr[None]     # one sequence's steps (CNTK 2.7 reads an array so)
            if G.BATCH(var) and fits_sample(var, tuple(arr.shape)):
                arr = arr[None]     # one sample, of the input's very shape (CNTK reads it so)
            if G.BATCH(var) and isinstance(arr, np.ndarray) and arr.ndim == var.ndim:
                refuse_no_rows({target: arr}, "Function.eval or forward")
            if unbatched(target):
                arr = unbatched_sample(repr(target), tuple(target.shape), arr)   # (at feed)
            if undo is not None:        # (data of its very shape: written in place)
                undo.keep(var, in_place=tuple(arr.shape) == tuple(var.shape))
            feed(var, arr, repr(target))    # (refusals name it as CNTK shows it)
            fed.append((target, var))
        try:                # (CNTK 2.7's ValueError, before running)
            refuse_fed_layouts_that_differ(fed)
        except ValueError:  # (named in the order of the Function's arguments, as CNTK's)
            order = {id(unwrap(a)): i for i, a in enumerate(self.arguments)}
            refuse_fed_layouts_that_differ(sorted(fed, key=lambda kv: order.get(id(kv[1]), 0)))
            raise
        return flags

    def eval(self, arguments: Any = None, outputs=None, device=None, as_numpy: bool = True):
        """The outputs' values for ``arguments`` (``{input: data}``, or the data of the only
        input) in the inference phase: one array, or ``{output: array}`` for several.

        Example:
            >>> import numpy as np, stadyn.compat.cntk as C
            >>> x = C.input_variable(2)
            >>> C.sigmoid(x).eval(np.zeros((1, 2), np.float32)).tolist()
            [[0.5, 0.5]]
        """
        wanted = self.outputs if outputs is None else list(outputs)
        _, values = self.forward(arguments, wanted, device=device, as_numpy=as_numpy)
        return values[wanted[0]] if len(wanted) == 1 else values

    def forward(self, arguments: Any, outputs=None, keep_for_backward=None, device=None,
                as_numpy: bool = True):
        """CNTK's ``forward``: ``(state, {output: value})``.  With ``keep_for_backward`` the
        graph runs in the training phase and ``state`` is what :meth:`backward` takes; without,
        in the inference phase and ``state`` is None.

        Example:
            >>> import numpy as np, stadyn.compat.cntk as C
            >>> x = C.input_variable(2, needs_gradient=True)
            >>> f = C.sigmoid(x)
            >>> state, out = f.forward({x: np.zeros((1, 2), np.float32)}, [f.output], {f.output})
            >>> out[f.output].tolist()
            [[0.5, 0.5]]
            >>> f.backward(state, {f.output: np.ones((1, 2), np.float32)}, {x})[x].tolist()
            [[0.25, 0.25]]
        """
        keep = bool(keep_for_backward)
        wanted = self.outputs if outputs is None else list(outputs)
        # a run refused before it runs leaves its inputs as they were (CNTK's inputs hold
        # nothing between runs; its refusals come before any data is in the graph)
        undo = FeedUndo()
        try:
            roots, flags, begins, computed, assigns, layout = self._prepare(
                arguments, outputs, wanted, keep, undo)
        except BaseException:
            undo.undo()
            raise
        state = self._run_state()
        state.runs += 1         # (from here on the graph holds this run's values)
        with carrying(begins), state.checked.run(keep):
            if keep:
                with training(True):
                    forward_all(roots, clear_no_need_grad=True)
            else:
                with training(False), torch.no_grad():
                    forward_all(roots, clear_buffer=True)
        _refuse_computed_empty(computed)
        if layout is not None and any(unwrap(o).sequence_lengths is not None for o in wanted):
            refuse_unpacking(layout)        # (after the run, whose states go on, as CNTK's)
        values = {o: output_value(unwrap(o)) for o in wanted}
        if not as_numpy:
            values = as_values(values, held_sparse(values))
        pending = pending_assignments(assigns)
        if not keep:
            apply_assignments(pending)      # training: after the backward
        kept = kept_buffers(roots) if keep else None
        return (ForwardState(self, pending, flags, state.runs, kept) if keep else None), values

    def _prepare(self, arguments: Any, outputs, wanted: list, keep: bool,
                 undo: "FeedUndo") -> tuple:
        """:meth:`forward`'s feeding of ``arguments`` and its checks before running:
        ``(roots, flags, recurrences, computed lengths, assignments, truncated layout)``."""
        given: set = set()
        data = arguments[0] if isinstance(arguments, tuple) else arguments
        refuse_function_keys(data)
        self._refuse_unfed_root(arguments)
        requested = self._run_state().requested
        rebuilt = keep and requested.compiled is None and self._run_state().runs > 0
        requested.check(self, wanted, keep)
        if rebuilt:     # (CNTK 2.7 builds the network again for the first training run)
            rewind_streams(self._roots())
        flags = self._bind(arguments, "forward" if keep else "eval", given, undo)
        state = self._run_state()
        self._refuse_missing(state, None if outputs is None else wanted, given)
        roots = self._roots()
        begins = state.recurrences(roots)
        roots += [unwrap(o) for o in wanted]                  # (forward_all drops repeats)
        computed = [v.sequence_lengths for v in list(roots)      # computed lengths (a slice)
                    if v.sequence_lengths is not None and v.sequence_lengths.parent is not None]
        roots += computed
        assigns = assign_outputs(roots)
        roots += assigns
        state.runnable(roots)
        # a truncated source's minibatch: its pieces go on in their slots (CNTK 2.7)
        layout = truncated_layout(arguments) if flags is None else None
        if begins is not None:      # the recurrences go on from the last run where flags say
            begins.begin(flags if layout is None else list(layout.begins),
                         "Function.forward" if keep else "Function.eval", layout)
            roots += begins.wanted()
        return roots, flags, begins, computed, assigns, layout

    def _refuse_unfed_root(self, arguments: Any) -> None:
        """CNTK 2.7's ValueError for a run of a root function (an op, a block: ``z.root_
        function``, what ``find_by_name`` finds) given no value for one of its arguments,
        before the data given is checked: ``No value specified for input Variable``, the
        first such argument, rather than a composite's ``Values for N required arguments``.
        Its arguments are its own inputs, outputs of other functions among them: a step's
        block found in a recurrence (``find_by_name(z, 'lstm')`` of a
        ``Recurrence(LSTM(3, name='lstm'))``) reads its PastValues, which only the loop
        computes."""
        if self._view not in ("op", "block") or self._recurrence_root():
            return
        data = arguments[0] if isinstance(arguments, tuple) else arguments
        if not isinstance(data, dict) or not data or any(isinstance(k, str) for k in data):
            return      # (none, one value, names: _bind's refusals and look-ups)
        fed = {id(unwrap(k)) for k in data}
        for a in self.arguments:
            if id(unwrap(a)) not in fed:
                raise ValueError(f"No value specified for input Variable '{a!r}' of "
                                 f"Function '{self!r}'.")

    def _refuse_missing(self, state: RunState, wanted: "list | None", given: set) -> None:
        """CNTK 2.7's ValueError where an argument the ``wanted`` outputs (None: all) depend
        on was given no data (the ids of those given: ``given``); the arguments of each set
        of outputs are found once per graph version (:class:`RunState`'s ``required``)."""
        key = None if wanted is None else tuple(id(unwrap(o)) for o in wanted)
        version = graph_version()
        found = state.required.get(key)
        if found is None or found[0] != version:
            found = state.required[key] = (version, [id(unwrap(a)) for a in
                                                     over_arguments(self, wanted)])
        if len(given) < len(found[1]) or not given.issuperset(found[1]):
            ids = [i for i in found[1] if i not in given]
            left = [a for a in over_arguments(self, wanted) if id(unwrap(a)) in ids]
            raise not_provided(left, self.outputs if wanted is None else wanted)

    def backward(self, state, root_gradients: dict, variables, as_numpy: bool = True) -> dict:
        """CNTK's ``backward``: the gradients w.r.t. ``variables`` (inputs made with
        ``needs_gradient=True``, or parameters) of ``sum(output * root_gradient)`` over the
        given outputs, after a :meth:`forward` that kept state.  Parameters' own gradients are
        left as they were."""
        if state is None:
            raise ValueError("backward: the forward() before it kept no intermediate results "
                             "(set keep_for_backward to the outputs in root_gradients)")
        check_differentiable(variables, "backward")
        if state.run != state.function._run_state().runs:       # (CNTK 2.7's words)
            raise RuntimeError(
                f"Function '{self}' Backward: The specified backprop state specified cannot "
                "be used for backpropagation as the Function's internal state was modified by "
                "subsequent Forward calls to the function. This is not a user error but a "
                "shortcoming of the current implementation where multiple independent backprop "
                "states are not simultaneously supported.")
        refuse_function_keys(root_gradients)
        roots = [unwrap(root) for root in root_gradients]
        leaves = [v for v in _leaves_of(roots) if v.need_grad]
        saved = [(v, v.grad) for v in leaves]
        for v in leaves:
            v.grad = None
        checked = state.function._run_state().checked.again()
        swapped = put_back(state.kept, self)   # another Function's later run over its nodes
        try:
            with checked:
                for root, seed in root_gradients.items():
                    unwrap(root).backward(root_gradient(unwrap(root), seed))
            out = {}
            for v in variables:
                var = unwrap(v)
                out[v] = output_value(var, var.g if var.grad is not None else
                                np.zeros(var.shape, np.float32))     # per sequence, too
            apply_assignments(state.assignments)
            return out if as_numpy else as_values(out, held_sparse(out, roots))
        finally:
            for v, g in saved:
                v.grad = g
            restore_values(swapped)           # the later run's values again

    def grad(self, at: Any, wrt=None, outputs=None, device=None, as_numpy: bool = True,
             grad_root=None):
        """The gradient of the sum of this Function's values w.r.t. ``wrt`` (default: the
        arguments made with ``needs_gradient=True``; a ValueError when there are none, or when
        ``wrt`` is empty): one array for one ``wrt``, else a dict; with ``outputs``,
        ``(gradients, values)``.

        Example:
            >>> import numpy as np, stadyn.compat.cntk as C
            >>> x = C.input_variable(1, needs_gradient=True)
            >>> C.sqrt(x).grad({x: np.array([[1.0], [4.0]], np.float32)}).ravel().tolist()
            [0.5, 0.25]
        """
        if wrt is None:
            wrt = [a for a in self.arguments if a.needs_gradient]
            if not wrt:
                raise ValueError(f"None of the Function '{self}' arguments have "
                                 "'needs_gradient == True'")
        wrt = list(wrt)
        if not wrt:
            raise ValueError(f"Function '{self}' Backward: List of inputs to compute gradients "
                             "for, must not be empty.")
        check_differentiable(wrt, "grad")
        root = self.output if grad_root is None else grad_root
        state, values = self.forward(at, [root] + list(outputs or []), {root})
        if state.flags is not None and not all(state.flags):
            raise ValueError(
                f"Function.grad: sequence-begin flags {state.flags} continue sequences from "
                "the previous run, and CNTK 2.7 refuses to differentiate such a run with grad "
                "(the layout of the gradient it seeds is incompatible with the one computed "
                "during the forward call); begin every sequence, or call forward and backward")
        ones = values[root]
        ones = [np.ones_like(o) for o in ones] if isinstance(ones, list) else np.ones_like(ones)
        grads = self.backward(state, {root: ones}, wrt, as_numpy)
        grads = grads[wrt[0]] if len(wrt) == 1 else grads
        if not outputs:
            return grads
        values = {o: values[o] for o in outputs}
        if not as_numpy:            # (CNTK 2.7's Value objects, as forward's and backward's)
            values = as_values(values)
        return grads, (next(iter(values.values())) if len(values) == 1 else values)

    def train(self, minibatch_source, *args, **kwargs):
        """CNTK's ``Function.train``: a Trainer on this criterion (loss, or ``(loss, metric)``)
        run by a training session over a reader or a tuple of arrays; ``callbacks``: progress
        writers and configs.  Returns ``epoch_summaries``, ``updates`` (, ``test_summary``);
        the arguments and an example: ``stadyn.compat.cntk._function_training.train_function``."""
        return late("train_function")(self, minibatch_source, *args, **kwargs)

    def test(self, minibatch_source, minibatch_size: int = 32, streams=None,
             model_inputs_to_streams=None, callbacks=None):
        """The average of this criterion Function (a metric, or ``(loss, metric)`` combined)
        over one sweep of ``minibatch_source``: a ``TestSummary`` with ``metric`` and
        ``samples``."""
        return late("evaluate_function")(self, minibatch_source, minibatch_size, streams,
                                 model_inputs_to_streams, callbacks)


def over_arguments(function, wanted: "list | None") -> tuple:
    """The arguments of ``function``'s outputs ``wanted`` (None, or its own outputs in order:
    all of them)."""
    if wanted is None:
        return function.arguments
    outs = [unwrap(o) for o in wanted]
    roots = function._roots()
    if len(roots) == len(outs) and all(a is b for a, b in zip(roots, outs)):
        return function.arguments
    return type(function)(outs[0], outs).arguments


def _leaves_of(roots: list[Variable]) -> list[Variable]:
    """The leaves the roots depend on, each once."""
    seen: dict[int, Variable] = {id(r): r for r in roots if r.parent is None}
    for node in topological_nodes(roots):
        for v in node.inputs:
            if v.parent is None:
                seen.setdefault(id(v), v)
    return list(seen.values())


def refuse_function_keys(mapping: Any) -> None:
    """CNTK 2.7's TypeError for a Function where a run's map wants a Variable as its key
    (``f.eval({C.combine([x]): data})``, ``backward``'s root gradients keyed by ``f``):
    ``sanitize_var_map`` takes Variables only, a Function of one output too (CNTK 2.7 takes
    Functions for the outputs wanted and the gradients' ``variables``, which this leaves;
    ``Trainer.train_minibatch`` / ``test_minibatch`` refuse such keys so too).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x = C.input_variable(3)
        >>> refuse_function_keys({C.combine([x]): None})
        Traceback (most recent call last):
          ...
        TypeError: Variable expected, but got "<class 'cntk.ops.functions.Function'>"
    """
    if not isinstance(mapping, dict):
        return
    function = late("Function")
    for key in mapping:
        if isinstance(key, function):
            raise TypeError("Variable expected, but got \"<class 'cntk.ops.functions."
                            "Function'>\"")


def _refuse_computed_empty(lengths: list) -> None:
    """CNTK 2.7's RuntimeError for an output sequence that a run left no step (a
    ``sequence.slice`` past a sequence's length: ``slice(x, 1, -1)`` of 2 steps)."""
    for v in lengths:
        n = v.data
        if n.numel() and bool((n < 1).any()):
            empty = int(torch.nonzero(n < 1)[0, 0])
            raise EmptySequenceError(
                f"AddSequence: Sequences must be a least one frame long. (sequence {empty} "
                f"of the minibatch has no step after {v.parent.spec.name})")


def _reader_sample_as_input(arr, var):
    """A reader's minibatch (``(N, *stream shape)`` or ``(N, 1, *stream shape)``) whose samples
    have as many values as ``var``'s but another shape, as ``(N, *var's sample shape)``: CNTK
    2.7 expands a reader's flattened sample to the input's shape (Utils.cpp:600-623, packed
    Values of the reader only), so a 784-value stream feeds a ``(1, 28, 28)`` input in
    ``Function.eval`` as in training (07_Deconvolution_Visualizer.py)."""
    sample = tuple(var.shape[1:])
    if not sample or arr.ndim < 2 or tuple(arr.shape[1:]) == sample:
        return arr
    rest = tuple(arr.shape[2:]) if arr.ndim >= 3 and arr.shape[1] == 1 else tuple(arr.shape[1:])
    if int(np.prod(rest)) == int(np.prod(sample)):
        return arr.reshape((arr.shape[0],) + sample)
    return arr


def _is_scipy_sparse(value) -> bool:
    return hasattr(value, "toarray") and hasattr(value, "nnz")


def _dense(value):
    """A SciPy sparse matrix (or a list of them, one per sequence) fed as CNTK 2.7 takes it:
    its dense rows."""
    if _is_scipy_sparse(value):
        return value.toarray()
    if isinstance(value, list) and any(_is_scipy_sparse(v) for v in value):
        return [v.toarray() if _is_scipy_sparse(v) else v for v in value]
    return value
