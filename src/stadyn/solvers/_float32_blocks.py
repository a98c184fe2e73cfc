"""NNabla's float32 solver arithmetic on CPU in cache-sized blocks: every C++ operation rounded
once, as NumPy's float32 ufuncs round it, over NumPy views of the tensors' own memory (no copy),
one block of :data:`BLOCK` elements through the whole update before the next.

Why not torch's multi-tensor ops: on the 2-core CI machine (torch 2.13 CPU) each of the dozen
whole-array passes of NNabla's Adam leaves cache, its float32 ``sqrt`` is not correctly
rounded (about one value in five one unit off) and its float64 root costs 5x NumPy's float32
one, which is exact (IEEE's square root); blocks that stay in cache make the exact update cheaper
than torch's fused Adam kernel (``benchmarks/nnabla_adam_exact_ab.py``, docs/performance.md).

:func:`adam_blocks` returns ``False`` (and touches nothing) where it cannot run: a tensor not on
the CPU, not float32, not contiguous, a subclass, or a trace being compiled; the caller then
takes its torch path.

Example:
    >>> import torch
    >>> w, m, v = [torch.ones(2)], [torch.zeros(2)], [torch.zeros(2)]
    >>> adam_blocks(w, [torch.ones(2)], m, v, step_size=0.1, beta1=0.95, beta2=0.999, eps=1e-8)
    True
    >>> m[0].tolist()
    [0.050000011920928955, 0.050000011920928955]
"""

from __future__ import annotations

import ctypes
import math
import weakref

import numpy as np
import torch

from ._scalars import Scalar, Tensors, per_tensor

__all__ = ["BLOCK", "adam_constants", "adam_blocks", "adabelief_blocks", "adabound_blocks",
           "can_use_blocks", "checked_plan", "for_blocks", "rmsprop_graves_blocks",
           "running_max"]

#: Elements per block: the block's six float32 arrays (parameter, gradient, two moments, two
#: scratch) take 1.5 MiB, within a core's L2 here; 2**14 and 2**18 measured slower.
BLOCK = 1 << 16


def can_use_blocks(*lists: Tensors) -> bool:
    """Whether every tensor of ``lists`` is a plain contiguous float32 CPU tensor outside a
    compiled trace (the tensors :func:`adam_blocks` updates in place through NumPy views)."""
    if torch.compiler.is_compiling():
        return False
    return all(type(t) is torch.Tensor and t.is_cpu and t.dtype == torch.float32
               and t.is_contiguous() for ts in lists for t in ts)


#: ``id(tensor) -> (weak reference, data_ptr, numel, dtype, flat view)``: the NumPy views of
#: the tensors the blocks update, made once per tensor and memory (``torch``'s ``numpy()``
#: costs 3 us a tensor, more than a small tensor's arithmetic).  A view is a pointer and a
#: length: it is reused only while its tensor is alive (the weak reference) and still starts at
#: the same address with as many elements of one dtype (a parameter replaced by ``.data =`` or
#: resized gets a new view).  The views own no memory (a ctypes buffer over the address), so
#: the cache keeps no tensor and no storage alive; an entry goes when its tensor does.
_VIEWS: dict[int, tuple] = {}
_CTYPES = {torch.float32: (ctypes.c_float, np.float32),
           torch.float64: (ctypes.c_double, np.float64)}


def _flat(t: torch.Tensor) -> np.ndarray:
    """A flat NumPy view of contiguous ``t``'s memory (float32 or float64), cached in
    :data:`_VIEWS` (the checks of the hit are the whole cost: ~0.6 us)."""
    key = id(t)
    ptr, n, dtype = t.data_ptr(), t.numel(), t.dtype
    entry = _VIEWS.get(key)
    if entry is not None and entry[0]() is t and entry[1] == ptr and entry[2] == n \
            and entry[3] is dtype:
        return entry[4]
    if not n and dtype in _CTYPES:
        return np.empty(0, _CTYPES[dtype][1])      # (no memory to view, none kept alive)
    if not n or dtype not in _CTYPES or not t.is_contiguous():
        return t.detach().numpy().reshape(-1)      # (not contiguous: a copy, as before)
    ctype, npt = _CTYPES[dtype]
    view = np.frombuffer((ctype * n).from_address(ptr), npt)
    ref = weakref.ref(t, lambda r, k=key, views=_VIEWS:
                      views.pop(k) if views.get(k, (None,))[0] is r else None)
    _VIEWS[key] = (ref, ptr, n, dtype, view)
    return view


def _float(s) -> np.float32:
    return np.float32(s.item() if isinstance(s, torch.Tensor) else s)


def _usable(params: Tensors, grads: Tensors, *states: Tensors | None) -> bool:
    """:func:`can_use_blocks` of ``params`` and the ``states`` given (``None``: absent), and
    ``grads`` plain float32 CPU tensors of their parameters' sizes."""
    return can_use_blocks(params, *(ts for ts in states if ts is not None)) and \
        all(type(g) is torch.Tensor and g.is_cpu and g.dtype == torch.float32
            and g.numel() == p.numel() for g, p in zip(grads, params))


def _read(g: torch.Tensor) -> np.ndarray:
    """A flat float array of ``g``'s values in their logical order: its memory where contiguous
    (:func:`_flat`), else a copy."""
    if g.is_contiguous():
        return _flat(g)
    return np.ascontiguousarray(g.detach().numpy()).reshape(-1)


_data_ptr, _numel, _contiguous = torch.Tensor.data_ptr, torch.Tensor.numel, \
    torch.Tensor.is_contiguous


class _Plan:
    """How :func:`for_blocks` walks one set of lists: every tensor's flat view (``views[j][i]``)
    and the runs of consecutive tensors smaller than a block that go through the kernel as one
    array (*packs*, by their first index): ``(i0, i1, total, arrays, gathers, spans)``,
    ``spans`` each tensor's ``(index, start, stop)`` in the pack, ``arrays[j]``
    the pack's array of list ``j`` (a view over its tensors where they lie end to end in
    memory, else a buffer of the plan), ``gathers`` the ``(lists sharing the buffer, buffer,
    views, the buffer's piece of each)`` to copy in before the kernel and back after it.  A
    plan holds NumPy views over raw addresses, never a tensor, and is used only for tensors at
    the same addresses with as many elements of the same dtype (:func:`_plan`'s key).  Its
    buffers are shared by the calls that use it: two threads updating the very same tensors at
    once (a race in any case) would also share them."""

    __slots__ = ("views", "packs", "size", "checked")

    def __init__(self, lists: list, sizes: list) -> None:
        # what callers checked of these tensors (:func:`checked_plan`), by the check
        self.checked: dict = {}
        self.views = [None if ts is None else [_flat(t) for t in ts] for ts in lists]
        self.packs: dict[int, tuple] = {}
        self.size = min(BLOCK, max(sizes, default=0))
        if not _disjoint(lists):
            return
        runs, run, total = [], [], 0
        for i, n in enumerate(sizes + [BLOCK]):          # (the last run ends at the end)
            if run and (n == 0 or n >= BLOCK or total + n > BLOCK):
                runs.append((run[0], run[-1] + 1))
                run, total = [], 0
            if 0 < n < BLOCK:
                run.append(i)
                total += n
        runs = [(i0, i1) for i0, i1 in runs if i1 - i0 > 1]
        self.size = max([self.size] + [sum(sizes[i0:i1]) for i0, i1 in runs])
        buffers: dict[int, np.ndarray] = {}          # one per list, shared by its packs
        for i0, i1 in runs:
            self._pack(lists, sizes, i0, i1, buffers)

    def _pack(self, lists: list, sizes: list, i0: int, i1: int, buffers: dict) -> None:
        """Plan the pack of tensors ``i0:i1``."""
        total = sum(sizes[i0:i1])
        bounds = np.cumsum([0] + sizes[i0:i1]).tolist()       # (each tensor's in the pack)
        arrays: list = [None] * len(lists)
        gathers: list = []
        first: dict[tuple, int] = {}
        for j, ts in enumerate(lists):
            if ts is None:
                continue
            ptrs = tuple(map(_data_ptr, ts[i0:i1]))
            if ptrs in first:                             # the same tensors as an earlier list
                k = first[ptrs]
                arrays[j] = arrays[k]
                for owners, *_ in gathers:
                    if k in owners:
                        owners.append(j)
                continue
            first[ptrs] = j
            views = self.views[j][i0:i1]
            dtype = views[0].dtype
            if all(ptrs[k] + sizes[i0 + k] * dtype.itemsize == ptrs[k + 1]
                   for k in range(len(ptrs) - 1)):        # end to end: one view over them all
                ctype = ctypes.c_float if dtype == np.float32 else ctypes.c_double
                arrays[j] = np.frombuffer((ctype * total).from_address(ptrs[0]), dtype)
            else:
                if j not in buffers:
                    buffers[j] = np.empty(self.size, dtype)
                arrays[j] = buffers[j][:total]
                pieces = [arrays[j][bounds[k]:bounds[k + 1]] for k in range(len(views))]
                gathers.append(([j], arrays[j], views, pieces))
        self.packs[i0] = (i0, i1, total, arrays, gathers,
                          [(i0 + k, bounds[k], bounds[k + 1]) for k in range(i1 - i0)])


def _disjoint(lists: list) -> bool:
    """Whether the tensors of ``lists`` overlap nowhere in memory but where a list is another's
    very tensors (a pack copies each list's tensors apart, so only those may be shared)."""
    seen: set[tuple] = set()
    spans = []
    for ts in lists:
        if ts is None:
            continue
        ptrs = tuple(map(_data_ptr, ts))
        if ptrs in seen:
            continue
        seen.add(ptrs)
        spans.extend((t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()) for t in ts
                     if t.numel())
    spans.sort()
    return all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


_NOT_CHECKED = object()

#: The plans of the last lists :func:`for_blocks` walked, by their key (a few, oldest out).
_PLANS: dict[tuple, _Plan] = {}
_PLANS_KEPT = 16


def _plan(lists: list, check=None, answers: list | None = None) -> _Plan | None:
    """The :class:`_Plan` of ``lists`` (made, or the one kept for tensors at the same addresses
    of the same lengths and dtype); ``None`` where the gradients (``lists[1]``) are not all
    contiguous (read through copies instead).  With ``check`` (:func:`checked_plan`), a plan
    not kept yet is made only where ``check(lists)`` is true, and keeps the answer (appended
    to ``answers`` too)."""
    if len(lists) > 1 and lists[1] is not None and not all(map(_contiguous, lists[1])):
        return None
    key = [lists[0][0].dtype if lists[0] else None]
    for ts in lists:
        key.append(None if ts is None else tuple(map(_data_ptr, ts)))
        key.append(None if ts is None else tuple(map(_numel, ts)))
    key = tuple(key)
    plan = _PLANS.get(key)
    if plan is None:
        answer = _NOT_CHECKED
        if check is not None:
            answer = check(lists)
            answers.append(answer)
            if not answer:
                return None
        if len(_PLANS) >= _PLANS_KEPT:
            try:                                     # (another thread may have taken it)
                _PLANS.pop(next(iter(_PLANS)), None)
            except (StopIteration, RuntimeError):
                pass
        plan = _PLANS[key] = _Plan(lists, list(key[2]))
        if check is not None:
            plan.checked[check] = answer
    return plan


def checked_plan(lists: list, check) -> tuple:
    """``(check(lists), plan)``: the :func:`_plan` of ``lists`` (``None`` where none is made)
    and ``check``'s answer, kept with the plan, so a list of tensors found again at the same
    addresses, of the same lengths and first dtype is not checked again (what ``check`` looks
    at of each tensor, its type, device, dtype and layout, cannot change without a new address
    or length but by an in-place change of the tensor's own metadata, ``.data =`` a view of its
    memory, ``t_()``, which a caller updating the tensors must not make; the gradients, the
    list a caller hands afresh, should be checked on every call, outside ``check``).  Pass the
    plan on to :func:`for_blocks` (``plan=``).

    Example:
        >>> import torch
        >>> ws = [torch.zeros(3), torch.zeros(2)]
        >>> calls = []
        >>> check = lambda lists: calls.append(1) or len(lists)
        >>> [checked_plan([ws], check)[0] for _ in range(3)], len(calls)
        ([1, 1, 1], 1)
    """
    if not lists or not lists[0]:
        return check(lists), None
    answers: list = []
    plan = _plan(lists, check, answers)         # (made only for lists the check passed)
    if plan is None:
        return (answers[0] if answers else check(lists)), None
    answer = plan.checked.get(check, _NOT_CHECKED)
    if answer is _NOT_CHECKED:
        answer = plan.checked[check] = check(lists)
    return answer, plan


def _same(values: list) -> bool:
    """Whether the scalars ``values`` are one value bit for bit: of one type, equal (``==``:
    a NaN only to itself), and for zeros of one sign, which ``==`` does not see."""
    first = values[0]
    if values.count(first) != len(values) or len(set(map(type, values))) != 1:
        return False
    if first != 0 or len(set(map(id, values))) == 1:
        return True
    return len({math.copysign(1.0, v) for v in values}) == 1


def for_blocks(kernel, lists: list, scalars: list, scratch: int, wide: int = 0,
               writes: tuple[int, ...] | None = None, spans: bool = False,
               plan: _Plan | None = None) -> None:
    """Run ``kernel(arrays, tmp, wide_tmp, *scalars_i)`` over every block of every tensor:
    ``arrays`` are the block's views of ``lists[j][i]`` (``None`` where ``lists[j]`` is
    ``None``; the second list, the gradients, read in the parameter's element order), ``tmp``
    ``scratch`` float32 and ``wide_tmp`` ``wide`` float64 arrays of the block's length, and
    ``scalars_i`` the ``i``-th entry of each per-tensor list of ``scalars``.

    With ``writes`` (the indices of the lists the kernel writes) the kernel is element-wise:
    each output element depends on the same element of the inputs alone.  Consecutive tensors
    smaller than a block whose scalars are bit for bit equal then go through it as one array
    (the same operations on every element: the same numbers; Python's cost paid once for them,
    not per tensor), taken from their memory where they lie end to end, else copied in and the
    written lists copied back.  (Without ``writes`` no plan is made or kept: a reduction's lists
    may hold scratch tensors made afresh on each call, whose plans would only push out others.)
    With ``spans`` the kernel also gets, last, the ``(i, start, stop)`` of each tensor ``i`` in
    its arrays, for a reduction of its own per tensor (a tensor past a block: its blocks in
    order, each ``(i, 0, length)``).  ``plan``: the plan of ``lists`` a caller already has
    (:func:`checked_plan`; with ``writes`` only)."""
    params = lists[0]
    if plan is None:
        plan = _plan(lists) if params and writes is not None else None
    if plan is None:
        sizes = [p.numel() for p in params]
        size = min(BLOCK, max(sizes, default=0))
        views = None
    else:
        sizes, size, views = None, plan.size, plan.views
    packs = plan.packs if plan is not None and writes is not None else {}
    tmps = [np.empty(size, np.float32) for _ in range(scratch)]
    wides = [np.empty(size, np.float64) for _ in range(wide)]
    n_all = len(params)
    with np.errstate(all="ignore"):        # inf and NaN as C++'s float gives them, unwarned
        i = 0
        while i < n_all:
            pack = packs.get(i)
            if pack is not None and all(_same(sc[i:pack[1]]) for sc in scalars):
                i0, i1, total, arrays, gathers, parts = pack
                for _, buffer, ins, _ in gathers:
                    np.concatenate(ins, out=buffer)
                kernel(arrays, [t[:total] for t in tmps], [w[:total] for w in wides],
                       *[sc[i0] for sc in scalars], *([parts] if spans else []))
                for owners, _, outs, pieces in gathers:
                    if any(j in writes for j in owners):
                        for out, piece in zip(outs, pieces):
                            out[...] = piece
                i = i1
                continue
            if views is None:
                flats = [None if ts is None else _read(ts[i]) if j == 1 else _flat(ts[i])
                         for j, ts in enumerate(lists)]
                n = sizes[i]
            else:
                flats = [None if vs is None else vs[i] for vs in views]
                n = flats[0].size
            args = [sc[i] for sc in scalars]
            i += 1
            if n == 0:                     # no element: nothing to compute (nor to index)
                continue
            if n == size:                  # one block, as long as the scratch
                kernel(flats, tmps, wides, *args, *([[(i - 1, 0, n)]] if spans else []))
                continue
            for s in range(0, n, BLOCK):
                k = min(BLOCK, n - s)
                kernel([None if f is None else f[s:s + k] for f in flats],
                       [t[:k] for t in tmps], [w[:k] for w in wides], *args,
                       *([[(i - 1, 0, k)]] if spans else []))
    torch.autograd.graph.increment_version(list(params))


def adam_constants(beta1: float, beta2: float, eps: float) -> tuple[np.float32, ...]:
    """``(b1, b2, eps, 1 - b1, 1 - b2)`` as NNabla's C++ holds them: the hyperparameters rounded
    to float32, the gains their float32 differences (for ``beta1=0.95``: 0.050000012, not
    0.05); the constants of every Adam-family update here and of
    :func:`~stadyn.solvers._functional_nnabla.adam_nnabla`'s torch path.

    Example:
        >>> float(adam_constants(0.95, 0.999, 1e-8)[3])
        0.050000011920928955
    """
    with np.errstate(over="ignore"):     # beyond float32's range: inf, as NNabla's
        b1, b2, e = np.float32(beta1), np.float32(beta2), np.float32(eps)
    return b1, b2, e, np.float32(1) - b1, np.float32(1) - b2


def running_max(maxc: np.ndarray, x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``maxc = std::max(maxc, x)`` in place: ``x`` only where ``maxc < x``, so a NaN ``x``
    leaves ``maxc`` as it is (``np.maximum`` would take the NaN); ``mask``: bool scratch of
    their length.

    Example:
        >>> m = np.array([1.0, 1.0, np.nan], np.float32)
        >>> running_max(m, np.array([np.nan, 2.0, 3.0], np.float32), np.empty(3, bool)).tolist()
        [1.0, 2.0, nan]
    """
    np.less(maxc, x, out=mask)
    np.copyto(maxc, x, where=mask)
    return maxc


def _mask(a: np.ndarray) -> np.ndarray:
    """A bool scratch of ``a``'s length in ``a``'s own memory (float32 scratch, free)."""
    return a.view(np.bool_)[:a.size]


def _adam_moments(gc, mc, vc, maxc, a, b1, gain1, b2, gain2) -> np.ndarray:
    """Adam's moments of one block in place, as NNabla's C++ rounds them (``a`` scratch):
    ``m = b1*m + gain1*g``; ``v = b2*v + (gain2*g)*g``; with ``maxc`` (AMSGRAD, AMSBound)
    ``v_max = std::max(v_max, v)`` (:func:`running_max`).  Returns the array whose root the
    update takes."""
    np.multiply(mc, b1, out=mc)
    np.multiply(gc, gain1, out=a)
    np.add(mc, a, out=mc)
    np.multiply(vc, b2, out=vc)
    np.multiply(gc, gain2, out=a)
    np.multiply(a, gc, out=a)
    np.add(vc, a, out=vc)
    return vc if maxc is None else running_max(maxc, vc, _mask(a))


def adam_blocks(params: Tensors, grads: Tensors, m: Tensors, v: Tensors, *, step_size: Scalar,
                beta1: float, beta2: float, eps: float, v_max: Tensors | None = None,
                decay: Scalar = 0.0) -> bool:
    """NNabla 1.39's Adam, AdamW and AMSGRAD update (the arithmetic of
    :func:`~stadyn.solvers._functional_nnabla.adam_nnabla`, bit for bit) block by block;
    ``False`` without touching anything where the tensors do not allow it
    (:func:`can_use_blocks`).  A gradient laid out otherwise than its parameter is read in the
    parameter's element order."""
    if not _usable(params, grads, m, v, v_max):
        return False
    b1, b2, e, gain1, gain2 = adam_constants(beta1, beta2, eps)
    n = len(params)
    steps = [_float(s) for s in per_tensor(step_size, n)]
    decays = [_float(d) for d in per_tensor(decay, n)]

    def kernel(arrays, tmp, _wide, step, d):
        pc, gc, mc, vc, maxc = arrays
        a, b, old = tmp
        if d:
            np.multiply(pc, d, out=old)
        root = _adam_moments(gc, mc, vc, maxc, a, b1, gain1, b2, gain2)
        np.sqrt(root, out=a)                         # sqrt(v) + eps
        np.add(a, e, out=a)
        np.multiply(mc, step, out=b)                 # w -= (alpha_t*m) / (sqrt(v)+eps)
        np.divide(b, a, out=b)
        np.subtract(pc, b, out=pc)
        if d:
            np.subtract(pc, old, out=pc)             # AdamW: - eta_t*wd*w_old

    for_blocks(kernel, [params, grads, m, v, v_max], [steps, decays], scratch=3,
               writes=(0, 2, 3, 4))
    return True


def adabelief_blocks(params: Tensors, grads: Tensors, m: Tensors, s: Tensors, *,
                     step_size: Scalar, sgd: Scalar, correction2: Scalar, beta1: float,
                     beta2: float, eps: float, s_max: Tensors | None = None,
                     decay: Scalar = 0.0) -> bool:
    """NNabla 1.39's AdaBelief update bit for bit (``src/nbla/solver/generic/adabelief.cpp:
    97-119``): ``m = b1*m + (1-b1)*g``; ``s = b2*s + (1-b2)*pow(g-m, 2)`` with ``pow``'s double
    (the sum rounded once from double); ``w = w - w*decay``; ``s += eps`` (AMSGrad: ``s_max =
    max(s_max, s) + eps``); then ``w = w - alpha_t*m`` where ``sgd`` (a per-tensor flag), else
    ``w = w - alpha_t*m / (sqrt(s)/correction2 + eps)``.  ``step_size`` (``alpha_t``),
    ``correction2`` and ``decay`` should be float32 values.  ``False`` without touching anything
    where the tensors do not allow it (:func:`can_use_blocks`).

    Example:
        >>> import torch
        >>> w, m, s = [torch.ones(2)], [torch.zeros(2)], [torch.zeros(2)]
        >>> adabelief_blocks(w, [torch.ones(2)], m, s, step_size=0.1, sgd=False,
        ...                  correction2=1.0, beta1=0.9, beta2=0.999, eps=1e-8)
        True
    """
    if not _usable(params, grads, m, s, s_max):
        return False
    b1, b2, e, gain1, gain2 = adam_constants(beta1, beta2, eps)
    gain2 = np.float64(gain2)                    # (1-b2) * pow(...) is taken in double
    n = len(params)
    steps = [_float(x) for x in per_tensor(step_size, n)]
    sgds = [bool(x) for x in per_tensor(sgd, n)]
    corrections = [_float(x) for x in per_tensor(correction2, n)]
    decays = [_float(x) for x in per_tensor(decay, n)]

    def kernel(arrays, tmp, wide, step, plain, corr, d):
        pc, gc, mc, sc, maxc = arrays
        a, = tmp
        w1, w2 = wide
        np.multiply(mc, b1, out=mc)                  # m = b1*m + (1-b1)*g, in float
        np.multiply(gc, gain1, out=a)
        np.add(mc, a, out=mc)
        np.subtract(gc, mc, out=a)                   # pow(g - m, 2): double
        np.multiply(a, a, out=w1, dtype=np.float64)
        np.multiply(w1, gain2, out=w1)               # (1-b2) * pow(...): double
        np.multiply(sc, b2, out=a)                   # b2*s: float, then + in double
        np.add(w1, a, out=w2)
        np.copyto(sc, w2, casting="unsafe")          # rounded to float on the store
        if d:
            np.multiply(pc, d, out=a)                # w = w - w*ratio
            np.subtract(pc, a, out=pc)
        if maxc is None:
            second = np.add(sc, e, out=sc)
        else:
            running_max(maxc, sc, _mask(a))
            second = np.add(maxc, e, out=maxc)
        if plain:
            np.multiply(mc, step, out=a)             # w = w - alpha_t*m
            np.subtract(pc, a, out=pc)
            return
        np.sqrt(second, out=a)                       # sqrt(s)/bias_correction2 + eps
        np.divide(a, corr, out=a)
        np.add(a, e, out=a)
        b = w1.view(np.float32)[:a.size]             # (a float32 view of free scratch)
        np.multiply(mc, step, out=b)                 # w = w - alpha_t*m / (...)
        np.divide(b, a, out=b)
        np.subtract(pc, b, out=pc)

    for_blocks(kernel, [params, grads, m, s, s_max], [steps, sgds, corrections, decays],
               scratch=1, wide=2, writes=(0, 2, 3, 4))
    return True


def adabound_blocks(params: Tensors, grads: Tensors, m: Tensors, v: Tensors, *,
                    step_size: Scalar, lower: Scalar, upper: Scalar, beta1: float, beta2: float,
                    eps: float, v_max: Tensors | None = None) -> bool:
    """NNabla 1.39's AdaBound (with ``v_max``, AMSBound) update bit for bit, all in float
    (``src/nbla/solver/generic/adabound.cpp:66-75``, ``amsbound.cpp:73-84``): Adam's
    moments; ``eta = std::min(upper, std::max(alpha_t / (sqrt(v) + eps), lower))``, the C++
    comparisons (a NaN quotient gives ``upper``) (``v``'s running maximum with ``v_max``);
    ``w = w - eta*m``.  ``step_size`` (``alpha_t``) and the bounds should be float32 values.
    ``False`` without touching anything where the tensors do not allow it
    (:func:`can_use_blocks`).

    Example:
        >>> import torch
        >>> w, m, v = [torch.ones(2)], [torch.zeros(2)], [torch.zeros(2)]
        >>> adabound_blocks(w, [torch.ones(2)], m, v, step_size=0.1, lower=0.0, upper=1.0,
        ...                 beta1=0.9, beta2=0.999, eps=1e-8)
        True
    """
    if not _usable(params, grads, m, v, v_max):
        return False
    b1, b2, e, gain1, gain2 = adam_constants(beta1, beta2, eps)
    n = len(params)
    steps = [_float(x) for x in per_tensor(step_size, n)]
    lows = [_float(x) for x in per_tensor(lower, n)]
    highs = [_float(x) for x in per_tensor(upper, n)]

    def kernel(arrays, tmp, _wide, step, low, high):
        pc, gc, mc, vc, maxc = arrays
        a, b = tmp
        root = _adam_moments(gc, mc, vc, maxc, a, b1, gain1, b2, gain2)
        np.sqrt(root, out=a)                         # eta = clip(alpha_t / (sqrt(v)+eps))
        np.add(a, e, out=a)
        np.divide(step, a, out=a)
        mask = _mask(b)
        np.less(a, low, out=mask)                    # std::max(x, lower): NaN stays
        np.copyto(a, low, where=mask)
        np.less(a, high, out=mask)                   # std::min(upper, x): upper for NaN
        np.logical_not(mask, out=mask)
        np.copyto(a, high, where=mask)
        np.multiply(a, mc, out=a)                    # w = w - eta*m
        np.subtract(pc, a, out=pc)

    for_blocks(kernel, [params, grads, m, v, v_max], [steps, lows, highs], scratch=2,
               writes=(0, 2, 3, 4))
    return True


def rmsprop_graves_blocks(params: Tensors, grads: Tensors, n: Tensors, g: Tensors,
                          d: Tensors, *, lr: Scalar, decay: float, momentum: float,
                          eps: float) -> bool:
    """NNabla 1.39's RMSpropGraves update bit for bit, all in float
    (``src/nbla/solver/generic/rmsprop_graves.cpp:64-70``): ``n = decay*n +
    ((1-decay)*grad)*grad``; ``g = decay*g + (1-decay)*grad``; ``d = momentum*d - (lr*grad) /
    sqrt((n - g*g) + eps)``; ``w += d``.  ``False`` without touching anything where the
    tensors do not allow it (:func:`can_use_blocks`).

    Example:
        >>> import torch
        >>> w, n, g, d = [torch.ones(2)], [torch.zeros(2)], [torch.zeros(2)], [torch.zeros(2)]
        >>> rmsprop_graves_blocks(w, [torch.ones(2)], n, g, d, lr=0.1, decay=0.5, momentum=0.0,
        ...                       eps=0.0)
        True
        >>> w[0].tolist()
        [0.800000011920929, 0.800000011920929]
    """
    if not _usable(params, grads, n, g, d):
        return False
    rho, mom, e = np.float32(decay), np.float32(momentum), np.float32(eps)
    gain = np.float32(1) - rho
    rates = [_float(x) for x in per_tensor(lr, len(params))]

    def kernel(arrays, tmp, _wide, rate):
        pc, gc, nc, avg, dc = arrays
        a, b = tmp
        np.multiply(nc, rho, out=nc)                 # n = decay*n + ((1-decay)*grad)*grad
        np.multiply(gc, gain, out=a)
        np.multiply(a, gc, out=b)
        np.add(nc, b, out=nc)
        np.multiply(avg, rho, out=avg)               # g = decay*g + (1-decay)*grad
        np.add(avg, a, out=avg)
        np.multiply(avg, avg, out=a)                 # sqrt(n - g*g + eps)
        np.subtract(nc, a, out=a)
        np.add(a, e, out=a)
        np.sqrt(a, out=a)
        np.multiply(gc, rate, out=b)                 # d = momentum*d - lr*grad / (...)
        np.divide(b, a, out=b)
        np.multiply(dc, mom, out=dc)
        np.subtract(dc, b, out=dc)
        np.add(pc, dc, out=pc)                       # w += d

    for_blocks(kernel, [params, grads, n, g, d], [rates], scratch=2, writes=(0, 2, 3, 4))
    return True
