"""Mixed precision by op declaration: which inputs an op casts in a half-precision context.

In a ``bfloat16``/``float16`` context parameters stay fp32 (master weights); each op casts its
inputs according to its declared ``precision``:

* ``"half"``  — float inputs to the context's half type (matrix products, convolutions);
* ``"mixed"`` — the first input (the data) to half, the rest (fp32 parameters and running
  statistics, updated in place) unchanged (batch normalisation's mixed-type kernels);
* ``"float"`` — half inputs up to fp32 (losses, softmax, reductions: where range or accuracy
  matters); but a node bound to a half context computes in its half type where the op's
  ``computes_in_half`` rule says so (NNabla's ``F.sum``/``F.mean``, ``rule="nnabla"``: its
  CPU kernels fold in fp16);
* ``"any"``   — no cast; the op follows its inputs' types (element-wise ops); made in a half
  context by NNabla's API (a node bound to it), fp32 inputs read as half, as NNabla computes
  every function of a ``cpu:half`` context in fp16 (``_half_context_cast``).

An op declared with NNabla's ``Half`` expressions (``OpSpec.half_formula``) is told so by the
keyword ``half_formula=True`` in a node bound to a float16 context only: Stadyn's own fp16
graphs keep torch's kernels (and their cost).

The same casts run in dynamic mode and in the traced static programs, so both modes compute the
same thing.  The context is the one in effect at the run, or the one bound to an op's node when
it was made (``FunctionNode.context``: NNabla's functions, :func:`cast_for_node`).  A cast's
backward converts the gradient back, so fp32 parameters get fp32 gradients.
"""

from __future__ import annotations

import torch

from ._numpy_readers import handed_out, viewed

__all__ = ["cast_arguments", "cast_for_node", "half_of", "HalfCopies", "note_cast_leaves",
           "PRECISIONS"]

PRECISIONS = ("any", "half", "mixed", "float")
_HALF = (torch.float16, torch.bfloat16)


def _down(value, dtype, copies=None):
    if isinstance(value, torch.Tensor) and value.dtype == torch.float32:
        return value.to(dtype) if copies is None else copies.half(value, dtype)
    return value


class HalfCopies:
    """One half copy of each fp32 tensor the ops of a run read in half precision, shared by
    them all: a float32 leaf read by several functions made in NNabla's ``cpu:half`` has its
    gradients summed in float16 (NNabla 1.39 accumulates each function's ``dx`` into the
    leaf's grad array cast to ``Half``) and rounded to fp32 once, where a copy per function
    gave each gradient its own cast back and an fp32 sum (case
    ``nnabla_half_40b.half40b__shared_leaf_gradients``).

    Only nodes bound to a half context (NNabla's functions) read shared copies
    (:func:`cast_for_node`): in Stadyn's own ``bfloat16``/``float16`` contexts each op casts
    its fp32 inputs itself, so a master weight's gradients add up in fp32.
    A static run keeps its copies itself (one object per run, :func:`interpret`); a dynamic
    op finds them on the Variables it reads (``owners``: ``id(tensor) -> Variable``, whose
    ``_half_copy`` holds one), so the next op made on the same leaf reads the same copy.  A
    copy is reused only for the same tensor, unwritten since (its version and data pointer),
    of the same half type, and with the same need for a gradient (and, a dynamic one, whose
    ``.d`` NumPy may have written, with the values a cast now gives: compared only where a
    NumPy array was handed out over the tensor since the copy, or one is alive).

    Example:
        >>> copies = HalfCopies()
        >>> t = torch.ones(2, requires_grad=True)
        >>> copies.half(t, torch.float16) is copies.half(t, torch.float16)
        True
        >>> with torch.no_grad(): copies.half(t, torch.float16).requires_grad
        False
    """

    __slots__ = ("_held", "_owners")

    def __init__(self, owners: dict | None = None):
        self._held: dict = {}      # id(tensor) -> (tensor, version, pointer, dtype, grad, copy)
        self._owners = owners

    def half(self, t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """``t`` in ``dtype``: the copy made before if it is still ``t``'s value, else a new
        one, kept."""
        owner = self._owners.get(id(t)) if self._owners else None
        if owner is None:                     # a run's: nothing writes its values meanwhile
            entry = self._held.get(id(t))
            if entry is not None and self._current(entry, t, None, dtype):
                return entry[5]
            copy = t.to(dtype)
            self._held[id(t)] = (t, t._version, None, dtype, self._grad(t), copy)
            return copy
        # A dynamic Variable's: a NumPy write into its ``.d`` changes neither the version nor
        # the memory.  None can have happened where no NumPy array was handed out over the
        # tensor since the copy was made and none is alive (``handed_out``, ``viewed``):
        # the copy is reused as it is; else only where it holds the new cast's values.
        entry = getattr(owner, "_half_copy", None)
        if entry is not None and self._current(entry, t, t.data_ptr(), dtype):
            if entry[6] == handed_out(t) and not viewed(t):
                return entry[5]
            copy = t.to(dtype)
            if torch.equal(entry[5], copy):
                owner._half_copy = entry[:6] + (handed_out(t),)
                return entry[5]
        else:
            copy = t.to(dtype)
        owner._half_copy = (t, t._version, t.data_ptr(), dtype, self._grad(t), copy,
                            handed_out(t))
        return copy

    def held(self, t: torch.Tensor) -> torch.Tensor | None:
        """The copy of ``t`` a run's readers read (:meth:`half`), if one was made."""
        entry = self._held.get(id(t))
        return entry[5] if entry is not None and entry[0] is t else None

    @staticmethod
    def _grad(t: torch.Tensor) -> bool:
        return t.requires_grad and torch.is_grad_enabled()

    @classmethod
    def _current(cls, entry: tuple, t: torch.Tensor, pointer, dtype: torch.dtype) -> bool:
        """Whether ``entry`` is a copy of ``t`` as it is now (tensor, version, memory) in
        ``dtype``, with the history a copy made now would have."""
        return (entry[0] is t and entry[1] == t._version and entry[2] == pointer
                and entry[3] == dtype and entry[4] == cls._grad(t))


def _up(value):
    if isinstance(value, torch.Tensor) and value.dtype in _HALF:
        return value.float()
    return value


def half_of(node, current: torch.dtype | None) -> torch.dtype | None:
    """The half type ``node`` casts to: that of the context bound to it when it was made
    (``FunctionNode.context``: NNabla's functions), else ``current``, the context's in effect.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> node = F.relu(sd.Variable((2,))).parent
        >>> half_of(node, torch.float16)
        torch.float16
        >>> node.context = sd.context("cpu", dtype="float32"); half_of(node, torch.float16)
    """
    bound = node.context
    return current if bound is None else bound.half_dtype


def cast_for_node(node, current: torch.dtype | None, args: list, kwargs: dict,
                  copies: HalfCopies | None = None) -> tuple[list, dict]:
    """``node``'s arguments cast as it computes them: by its op's precision in a half context
    (its bound one, else ``current``); a node bound to a float context reads half inputs as
    fp32, as an NNabla function made in a float context reads its inputs' arrays as float (a
    loss made outside a ``cpu:half`` scope over an affine made inside it is fp32).  An fp32
    tensor cast to half is ``copies``' shared copy where given (:class:`HalfCopies`).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> node = F.relu(sd.Variable((2,))).parent
        >>> node.context = sd.context("cpu", dtype="float32")
        >>> cast_for_node(node, None, [torch.zeros(2, dtype=torch.float16)], {})[0][0].dtype
        torch.float32
    """
    bound = node.context
    half = current if bound is None else bound.half_dtype
    if half is not None:
        precision = node.spec.precision
        if bound is not None and precision == "any":
            precision = _half_context_cast(node)
        elif bound is not None and precision == "float":
            rule = node.spec.computes_in_half
            how = rule(node.attrs) if rule is not None else False
            if how:
                precision = how if how == "mixed" else "half"
        # (shared copies: NNabla's cpu:half only; Stadyn's own half contexts keep a cast per
        # op, whose gradients add up in fp32 at the fp32 master weight)
        args, kwargs = cast_arguments(precision, args, kwargs, half,
                                      copies if bound is not None else None)
        if bound is not None and half is torch.float16 and node.spec.half_formula:
            # NNabla's Half expressions: only in its half context, not of any fp16 tensor
            kwargs = {**kwargs, "half_formula": True}
        return args, kwargs
    # A float context bound (every NNabla function's): only a half argument is cast, and
    # there rarely is one: looked for before any list is made (the dynamic hot path).
    if bound is None or not (_has_half(args) or (kwargs and _has_half(kwargs.values()))):
        return args, kwargs
    return cast_arguments(_float_context_cast(node), args, kwargs, torch.float32)


def _has_half(values) -> bool:
    """Whether one of ``values`` is an fp16 or bf16 tensor."""
    for a in values:
        if isinstance(a, torch.Tensor) and a.dtype in _HALF:
            return True
    return False


def _float_context_cast(node) -> str:
    """How a node bound to a float context reads its inputs: ``"float"`` (a half input read
    as fp32), but ``"any"`` for an op whose NNabla output is its input's array
    (``OpSpec.keeps_input_dtype``), which keeps its dtype: ``reshape`` with ``inplace=True``
    (NNabla's default; ``Reshape::setup_impl`` sets the output's array to the input's and its
    forward returns at once: src/nbla/function/generic/reshape.cpp:62-72) and ``identity``
    (``Identity::forward_impl`` copies in the dtype of the input's head array:
    identity.cpp:35-45).  So ``F.reshape``, ``x.reshape`` and ``F.identity`` of a float16
    Variable are float16 on NNabla 1.39, where ``F.reshape(..., inplace=False)`` and the
    other functions give float32 (case
    ``nnabla_user_37.user37_float16_images_in_a_float_net``)."""
    keeps = node.spec.keeps_input_dtype
    return "any" if keeps is not None and keeps(node.attrs) else "float"


def _half_context_cast(node) -> str:
    """How a node bound to a half context (an NNabla function made in one) reads the inputs of
    an op declared ``"any"``: ``"half"`` (an fp32 input read as fp16: NNabla 1.39's
    ``F.tanh``, ``F.relu``, ``x * 3.3`` of a float32 Variable made in ``cpu:half`` compute
    in fp16, their ``.d`` float16), but ``"any"`` for an op whose NNabla output is its input's
    array (``OpSpec.keeps_input_dtype``: ``F.reshape`` in place stays float32 there), as
    :func:`_float_context_cast` (case ``nnabla_fix_38.fix38__any_op_in_a_half_context``)."""
    keeps = node.spec.keeps_input_dtype
    return "any" if keeps is not None and keeps(node.attrs) else "half"


def cast_arguments(precision: str, args: list, kwargs: dict, dtype: torch.dtype,
                   copies: HalfCopies | None = None) -> tuple[list, dict]:
    """``args``/``kwargs`` cast for an op of ``precision`` in a context of half type ``dtype``
    (an fp32 tensor cast to half: ``copies``' shared copy where given)."""
    if precision == "half":
        return ([_down(a, dtype, copies) for a in args],
                {k: _down(v, dtype, copies) for k, v in kwargs.items()})
    if precision == "float":
        return [_up(a) for a in args], {k: _up(v) for k, v in kwargs.items()}
    if precision == "mixed":
        out = list(args)
        for i, a in enumerate(out):
            if isinstance(a, torch.Tensor):
                out[i] = _down(a, dtype, copies)
                break
        return out, kwargs
    return args, kwargs


def note_cast_leaves(node, variables: list, before: list, after: list,
                     kw_variables: dict | None = None, kw_before: dict | None = None,
                     kw_after: dict | None = None) -> None:
    """Record on ``node``, run in dynamic mode, the leaf Variables among ``variables`` (its
    positional arguments, whose values were ``before``) and ``kw_variables`` (its keyword
    ones, values ``kw_before``) that it read as the half copies ``after``/``kw_after``
    (:func:`cast_for_node`), with each fp32 tensor's version, the copy and the count of NumPy
    arrays handed out over the tensor (``node.cast_leaves``): a backward casts a leaf written
    since into the copy torch's autograd saved (``_written_leaves.py``).

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> w = sd.Variable((2,)); node = F.relu(w).parent; t = torch.zeros(2)
        >>> note_cast_leaves(node, [w], [t], [t.half()]); node.cast_leaves[0][2]
        0
    """
    kept = [(v, b, b._version, a, handed_out(b)) for v, b, a in zip(variables, before, after)
            if _read_cast(v, b, a)]
    if kw_variables:
        kept.extend((v, kw_before[k], kw_before[k]._version, kw_after[k],
                     handed_out(kw_before[k])) for k, v in kw_variables.items()
                    if _read_cast(v, kw_before.get(k), kw_after.get(k)))
    if kept:
        node.cast_leaves = kept


def _read_cast(v, before, after) -> bool:
    """Whether a leaf Variable ``v`` whose tensor was ``before`` was read as the half copy
    ``after``."""
    return (after is not before and isinstance(after, torch.Tensor) and after.dtype in _HALF
            and isinstance(before, torch.Tensor) and getattr(v, "parent", 0) is None)
