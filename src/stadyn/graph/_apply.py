"""One op call: the node it creates and, in dynamic mode, the op run at once.

:func:`apply` is the hot path of every ``F`` function.  In dynamic mode it runs the op's
implementation on the inputs' tensors (torch's autograd records it); in static mode it runs the
op's shape inference on ``meta`` tensors.  Either way it records one :class:`FunctionNode`.  The
errors an op call can give (arguments the declaration does not take, inputs the op rejects) are
built here, only once a call has failed.
"""

from __future__ import annotations

import weakref
from typing import Callable, Iterable, Sequence

import numpy as np
import torch

from .._errors import (EmptySequenceError, OpArgumentError, ShapeError, StadynError,
                       UnrunnableError)
from ._context import get_current_context
from ._deferred_layout import settled
from ._labels import _active as _labelling
from ._labels import op_label
from ._location import format_location, user_location
from ._mode import _no_grad_now, is_auto_forward
from ._numerics import _depth as _checking
from ._numerics import check_outputs, probe_inputs
from ._own_streams import seeded_arguments
from ._precision import cast_for_node, HalfCopies, note_cast_leaves
from ._scope import current_scope
from ._sequence import propagate
from ._shape_cache import key as shape_key
from ._shape_cache import store as store_shapes
from ._static_boundary import boundary_value
from ._subgraph import run_tensor
from ._written_leaves import note_read_leaves
from ._tensors import data_of
from ._variable import Variable
from ._versions import _marks

_HALF = (torch.float16, torch.bfloat16)

__all__ = ["apply", "argument_error", "op_error", "passes_through", "raised_by_user_code",
           "run_before"]

# op spec -> the callables :func:`run_before` registered, called before each dynamic run
_BEFORE_RUN: dict = {}


def run_before(spec, hook) -> "Callable[[], None]":
    """Call ``hook(node)`` before each dynamic-mode run of ``spec``'s op, its node made and its
    inputs not yet read (a front end keeping what the run overwrites: compat.nnabla keeps the
    ``u`` a spectral norm starts from, as NNabla's function does for its backward).  Returns a
    function that removes the hook again.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> from stadyn.graph import run_before
        >>> seen = []
        >>> remove = run_before(F.exp.spec, lambda node: seen.append(node.spec.name))
        >>> x = sd.Variable.from_numpy_array(np.zeros(2))
        >>> with sd.auto_forward():
        ...     _ = F.exp(x)
        >>> remove()
        >>> with sd.auto_forward():
        ...     _ = F.exp(x)
        >>> seen
        ['exp']
    """
    hooks = _BEFORE_RUN.setdefault(spec, [])
    hooks.append(hook)

    def remove() -> None:
        if hook in hooks:
            hooks.remove(hook)
        if not hooks and _BEFORE_RUN.get(spec) is hooks:
            del _BEFORE_RUN[spec]
    return remove


_Tensor = torch.Tensor

# What a static build tries when an op rejects its inputs' shapes, before it reports the error:
# ``_free_axes.conform_for_op`` (above this module; installed by the package).
_conform: list = [None]


def _describe_inputs(inputs: Iterable[Variable], shapes: Sequence[tuple] | None) -> str:
    parts = []
    for k, v in enumerate(inputs):
        label = v.graph_name or (v.parent.spec.name if v.parent is not None else "input")
        parts.append(f"{label} {tuple(v.shape) if shapes is None else shapes[k]}")
    return ", ".join(parts)


def argument_error(spec, args: tuple, kwargs: dict) -> OpArgumentError | None:
    """Why an op call's arguments do not fit the op's declaration, if they do not: an argument
    the signature does not take (or lacks), or an array or tensor given for an input.  Checked
    only once a call has failed, so the hot path pays nothing."""
    try:
        bound = spec.signature.bind(*args, **kwargs)
    except TypeError as exc:
        return OpArgumentError(f"{spec.name}: {exc}")
    for name in spec.inputs:
        name = name.lstrip("*")
        values = bound.arguments.get(name)
        for value in (values if spec.variadic and isinstance(values, tuple) else (values,)):
            if isinstance(value, (np.ndarray, torch.Tensor)):
                kind = f"{type(value).__module__}.{type(value).__name__}"
                return OpArgumentError(f"{spec.name}: input '{name}' is a {kind}; ops take "
                                       f"Variables (sd.Variable.from_numpy_array(...))")
    return None


# Failures that say nothing about an op's inputs (a module that does not import, memory running
# out, a recursion too deep): they reach the user as they are, not as a ShapeError on the op.
NOT_ABOUT_INPUTS = (ImportError, MemoryError, torch.OutOfMemoryError, RecursionError)
_RAISED_BY_USER_CODE = "_stadyn_raised_by_user_code"


def raised_by_user_code(exc: BaseException) -> BaseException:
    """Mark ``exc`` as raised by user code an op ran (a CNTK user function's ``forward``): it
    reaches the caller as it is, the user's type, message and line, not as a ShapeError.

    Example:
        >>> from stadyn.graph import raised_by_user_code
        >>> exc = raised_by_user_code(KeyError("step"))
        >>> type(exc).__name__, passes_through(exc)
        ('KeyError', True)
    """
    setattr(exc, _RAISED_BY_USER_CODE, True)
    return exc


def passes_through(exc: BaseException) -> bool:
    """Whether an op's failure reaches the user as it is: one of :data:`NOT_ABOUT_INPUTS`, or
    one :func:`raised_by_user_code` marked.

    Example:
        >>> passes_through(MemoryError()), passes_through(raised_by_user_code(KeyError("k")))
        (True, True)
        >>> passes_through(ValueError("shapes"))
        False
    """
    return isinstance(exc, NOT_ABOUT_INPUTS) or getattr(exc, _RAISED_BY_USER_CODE, False)


def op_error(spec, inputs: Sequence[Variable], scope: str, exc: BaseException,
             shapes: Sequence[tuple] | None = None,
             location: tuple[str, int] | None = None) -> StadynError:
    """The error raised when an op rejects its inputs: names op, scope, the user's line that
    created the node (``location``) and input shapes (the inputs' own, or ``shapes`` where they
    are being re-inferred).  A ``ShapeError``; an ``EmptySequenceError`` (a sequence the op
    left no step: CNTK's RuntimeError) stays one; an ``UnrunnableError`` too, in its own
    words (they name the node that cannot run), the scope and the user's line after them."""
    where = f" in scope '{scope}'" if scope else ""
    said = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    line = format_location(location)
    if isinstance(exc, UnrunnableError):
        # (its words name the node that cannot run, as the framework it follows says them:
        # the op that raised them, a stand-in computation, is not the user's)
        notes = [f"in scope '{scope}'"] * bool(scope) + [f"created at {line}"] * bool(line)
        return UnrunnableError(said + (f" ({', '.join(notes)})" if notes else ""))
    msg = f"{spec.name}{where}: cannot apply to inputs [{_describe_inputs(inputs, shapes)}]: " \
        f"{said}"
    if line:
        msg += f" (created at {line})"
    kept = (EmptySequenceError, UnrunnableError)
    return type(exc)(msg) if isinstance(exc, kept) else ShapeError(msg)


def _meta(v: Variable) -> torch.Tensor:
    t = torch.empty(v._dims(), dtype=v._dtype, device="meta")
    if v._need_grad and v._dtype.is_floating_point:
        t.requires_grad_(True)
    return t


def _value(v: Variable):
    """The tensor an op computes with in the dynamic mode: a view's (``unlinked``, a fixed
    parameter) is its source's value, cut from the source's history; a view that needs a
    gradient reaches its source's gradient (NNabla shares the arrays; ``run_tensor``); an
    output set ``need_grad=False`` gives its value without gradient (its own keeps its history:
    a backward cuts it there)."""
    if v._alias is not None:
        if v._need_grad and torch.is_grad_enabled():
            return run_tensor(v)
        return data_of(v._alias).detach()
    t = settled(v)
    return t.detach() if v._stops_grad and t is not None else t


def _eager_value(v: Variable):
    """:func:`_value` for an op run in the dynamic mode: a buffer a backward's ``clear_buffer``
    freed reads as the zeros its ``.d`` shows (NNabla's op reads the freed memory, whatever it
    holds: nnabla-examples' VQ-VAE draws its reconstructions from an output so cleared)."""
    t = _value(v)
    if t is None:
        t = Variable.data.fget(v)
    # a static graph's output: a stand-in carrying its gradient back (_static_boundary.py);
    # a leaf's or a dynamic op's value (nearly every argument) returned without a call
    if t.requires_grad or (node := v.parent) is None or node.ran_under is not None:
        return t
    return boundary_value(v, t)


def _held_copies(args: tuple, targs: list, kwargs: dict, tkw: dict) -> HalfCopies:
    """The half copies a dynamic op reads its input Variables' tensors through: each
    Variable's own (``Variable._half_copy``), shared by every op made on it
    (:class:`~stadyn.graph._precision.HalfCopies`)."""
    owners = {id(t): a for a, t in zip(args, targs) if isinstance(a, Variable)}
    if kwargs:
        owners.update((id(tkw[k]), v) for k, v in kwargs.items() if isinstance(v, Variable))
    return HalfCopies(owners)


def infer_from_values(spec, args: tuple, kwargs: dict):
    """The output meta tensors of an op whose shape depends on its inputs' values
    (``spec.value_shape``), found by running it on the values its input Variables hold."""
    need = any(isinstance(a, Variable) and a._need_grad for a in (*args, *kwargs.values()))
    targs = [a._data.detach() if isinstance(a, Variable) else a for a in args]
    tkw = {k: (v._data.detach() if isinstance(v, Variable) else v) for k, v in kwargs.items()}
    with torch.no_grad():
        out = spec.impl(*targs, **tkw)
    outs = (out,) if isinstance(out, _Tensor) else tuple(out)
    metas = tuple(torch.empty(o.shape, dtype=o.dtype, device="meta").requires_grad_(
        need and o.is_floating_point()) for o in outs)
    return metas[0] if isinstance(out, _Tensor) else metas


def apply(spec, args: tuple, kwargs: dict):
    """Create the node for one op call and, in dynamic mode, run it.  The hot path of ``F``.

    Example:
        >>> import numpy as np, stadyn as sd
        >>> from stadyn.graph import apply
        >>> from stadyn.ops import get_spec
        >>> x = sd.Variable.from_numpy_array(np.array([-1.0, 2.0]))
        >>> y = apply(get_spec("relu"), (x,), {})
        >>> y.parent.spec.name, y.shape
        ('relu', (2,))
    """
    if _no_grad_now() and is_auto_forward() and torch.is_grad_enabled():
        with torch.no_grad():     # ``no_grad``: no dynamic op output needs a gradient
            return apply(spec, args, kwargs)
    inputs = [a for a in args if isinstance(a, Variable)]
    if kwargs:
        inputs.extend(v for v in kwargs.values() if isinstance(v, Variable))
    scope = current_scope()
    cls = inputs[0]._op_output_class if inputs else Variable
    node = cls._node_class(spec, args, kwargs, tuple(inputs), scope, user_location())
    if is_auto_forward():
        node.ran_under = _marks[0]     # a backward checks the marks set since (_grad_marks.py)
        hooks = _BEFORE_RUN.get(spec)
        if hooks:
            for hook in hooks:
                hook(node)
        targs = [_eager_value(a) if isinstance(a, Variable) else a for a in args]
        tkw = ({k: (_eager_value(v) if isinstance(v, Variable) else v) for k, v in kwargs.items()}
               if kwargs else kwargs)
        if node.state is not None:
            tkw = {**tkw, "state": node.state}
        if "seed" in spec.attrs:    # the node's generator: a static run after it draws on
            targs, tkw = seeded_arguments(node, targs, tkw,
                                          tuple(tuple(v.shape) for v in inputs))
        current = get_current_context().half_dtype
        bound = node.context          # (NNabla's cpu:half: one half copy per Variable)
        copies = (_held_copies(args, targs, kwargs, tkw)
                  if bound is not None and bound.half_dtype is not None else None)
        cast, ckw = cast_for_node(node, current, targs, tkw, copies)
        if torch.is_grad_enabled():     # (a write since: the backward reads the new value)
            note_read_leaves(node, args, targs, kwargs, tkw)
            if cast is not targs:
                note_cast_leaves(node, args, targs, cast, kwargs, tkw, ckw)
        targs, tkw = cast, ckw
        checking = _checking[0] and torch.is_grad_enabled()
        if checking:
            targs, tkw = probe_inputs(node, targs, args, tkw, kwargs)
        try:
            if _labelling[0]:
                with torch.profiler.record_function(op_label(spec.name, scope)):
                    out = spec.impl(*targs, **tkw)
            else:
                out = spec.impl(*targs, **tkw)
        except Exception as exc:
            if passes_through(exc):
                raise
            if any(_value(v) is None for v in inputs):
                raise StadynError(f"{spec.name}: an input's buffer was cleared (run forward or "
                                  "do not clear it)") from exc
            raise (argument_error(spec, args, kwargs)
                   or op_error(spec, inputs, scope, exc, location=node.location)) from exc
        if _checking[0]:
            check_outputs(node, out)
        if isinstance(out, _Tensor):
            if any(out is t for t in targs):   # an output must not be an input's own tensor
                out = out.view_as(out)
            v = cls._from_node(node, 0, out.shape, out.dtype, out.requires_grad, out)
            node._outputs = (weakref.ref(v),)
            if spec.sets_sequence_axis or _has_sequence_axis(inputs):
                propagate(spec, args, kwargs, inputs, (v,))
            return v
        outs = tuple(cls._from_node(node, i, o.shape, o.dtype, o.requires_grad, o)
                     for i, o in enumerate(out))
    else:
        single, found = _infer_static(spec, args, kwargs, inputs, scope, node)
        if single:
            shape, dtype, need = found[0]
            v = cls._from_node(node, 0, shape, dtype, need, None)
            node._outputs = (weakref.ref(v),)
            if spec.sets_sequence_axis or _has_sequence_axis(inputs):
                propagate(spec, args, kwargs, inputs, (v,))
            return v
        outs = tuple(cls._from_node(node, i, shape, dtype, need, None)
                     for i, (shape, dtype, need) in enumerate(found))
    node._outputs = tuple(weakref.ref(v) for v in outs)
    if spec.sets_sequence_axis or _has_sequence_axis(inputs):
        propagate(spec, args, kwargs, inputs, outs)
    return outs


def _infer_static(spec, args: tuple, kwargs: dict, inputs: list, scope: str, node):
    """The outputs of one op call in a static build: ``(single, ((shape, dtype, need_grad),
    ...))``, ``single`` when the op returns one tensor; from the op's shape cache where the
    call has a key
    (:mod:`~stadyn.graph._shape_cache`), else from inference on meta tensors (or, for an op
    whose shape depends on values, on the inputs' values)."""
    by_values = spec.value_shape and all(v._data is not None for v in inputs)
    cast = not by_values and _reads_half_as_float(node, inputs)
    k = None if (by_values or cast) else shape_key(args, kwargs)
    if k is not None:
        found = spec.inferred.get(k)
        if found is not None:
            return found
    margs = [_meta(a) if isinstance(a, Variable) else a for a in args]
    mkw = ({k: (_meta(v) if isinstance(v, Variable) else v) for k, v in kwargs.items()}
           if kwargs else kwargs)
    if cast:
        margs, mkw = cast_for_node(node, None, margs, mkw)
    try:
        out = infer_from_values(spec, args, kwargs) if by_values else spec.infer(margs, mkw)
    except Exception as exc:
        if passes_through(exc):
            raise
        out = _infer_conformed(spec, args, kwargs, inputs)
        if out is None and by_values:   # values the op refuses (an input's placeholder, not
            out = _provisional(spec, margs, mkw)       # yet the data): the run will tell
        if out is None:
            raise (argument_error(spec, args, kwargs)
                   or op_error(spec, inputs, scope, exc, location=node.location)) from exc
        k = None                        # inputs were conformed: not this call's key
    # A shape rule does not run autograd: its outputs need a gradient if an input does.
    ruled = spec.shape is not None and any(v._need_grad for v in inputs)
    single = isinstance(out, _Tensor)
    found = single, tuple((tuple(o.shape), o.dtype,
                           o.requires_grad or (ruled and o.is_floating_point()))
                          for o in ((out,) if single else out))
    if k is not None:
        store_shapes(spec, k, found)
    return found


def _provisional(spec, margs: list, mkw: dict):
    """The provisional shape of an op whose shape depends on values (its shape rule on meta
    tensors), or None if that fails too."""
    try:
        return spec.infer(margs, mkw)
    except Exception:  # noqa: BLE001 - the error on the values is the one reported
        return None


def _infer_conformed(spec, args: tuple, kwargs: dict, inputs: list):
    """The op's shape inference once more after inputs never fed took the batch of those that
    were, or lengths on their free dimensions that the op takes (:mod:`~stadyn.graph._free_axes`,
    ``conform_for_op``); None if nothing changed or it fails again."""
    conform = _conform[0]
    if conform is None or not inputs:
        return None

    def infer():        # (on the inputs' shapes as they stand now)
        margs = [_meta(a) if isinstance(a, Variable) else a for a in args]
        mkw = ({k: (_meta(v) if isinstance(v, Variable) else v) for k, v in kwargs.items()}
               if kwargs else kwargs)
        return spec.infer(margs, mkw)
    return conform(inputs, infer)


def _reads_half_as_float(node, inputs: list) -> bool:
    """Whether ``node`` (bound to a float context: an NNabla function) reads a half input as
    float32 (:func:`~stadyn.graph._precision.cast_for_node`): its shapes and dtypes are then
    inferred on its inputs cast so, not cached (the cache's key holds no context).  So a static
    convolution of float16 pictures with float32 parameters builds, and a function of a
    float16 Variable is float32 before it runs too, as NNabla 1.39's (cases
    ``nnabla_user_37.user37_float16_images_in_a_float_net``,
    ``nnabla_review_mends_37.half_input__float32_before_forward``)."""
    bound = node.context
    if bound is None or bound.half_dtype is not None:
        return False
    for v in inputs:
        if v._dtype in _HALF:
            return True
    return False


def _has_sequence_axis(inputs: list) -> bool:
    for v in inputs:
        if v._seq is not None:
            return True
    return False
