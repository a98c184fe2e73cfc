"""``kernel_op``: a torch operator of Stadyn's own (namespace ``stadyn_kernels``) with a fake
(shape) rule and an autograd formula, as ``torch.library.custom_op`` makes one but without
importing ``torch._dynamo`` on its first call.  The op modules' kernels are made with it
(:mod:`._kernels` and the modules it names, random draws, picks, ranking, tracing probes)."""

from __future__ import annotations

import functools
import sys
from typing import Callable

import torch

__all__ = ["kernel_op", "define_out_form"]

# Kept alive for as long as the process: a Library's registrations go when it is collected.
_LIBRARIES: list = []


def _outside_dynamo(fn: Callable) -> Callable:
    """``fn``, never traced into by TorchDynamo, as ``torch.library.custom_op`` wraps a kernel;
    but ``torch._dynamo`` is not imported for it (custom_op's wrapper imports it on the first
    call: 1.3-1.5 s of a program's start, docs/performance.md "Start-up").  Until something
    else has imported ``torch._dynamo`` no frame can be traced, so ``fn`` runs as it is."""
    disabled: list = []

    @functools.wraps(fn)
    def kernel(*args, **kwargs):
        if not disabled:
            if "torch._dynamo" not in sys.modules:
                return fn(*args, **kwargs)
            disabled.append(torch.compiler.disable(fn))
        return disabled[0](*args, **kwargs)
    return kernel


def _addresses(values, found: list[int]) -> list[int]:
    """``found`` with the addresses of the memory behind the tensors among ``values`` and in the
    lists or tuples among them appended (one level: an op's arguments and results go no
    deeper); a tensor of no bytes has none (address 0)."""
    for v in values:
        if isinstance(v, torch.Tensor):
            address = v.untyped_storage().data_ptr()
            if address:
                found.append(address)
        elif isinstance(v, (list, tuple)):
            for t in v:
                if isinstance(t, torch.Tensor):
                    address = t.untyped_storage().data_ptr()
                    if address:
                        found.append(address)
    return found


def _taken(args: tuple, kwargs: dict) -> list[int]:
    """The addresses of the memory behind a call's arguments (:func:`_addresses`)."""
    found = _addresses(args, [])
    return _addresses(kwargs.values(), found) if kwargs else found


def _fresh_results(qualname: str, fn: Callable) -> Callable:
    """``fn``, checked on every call to return memory of its own: no result shares memory with
    an argument or another result.  The schema ``kernel_op`` defines declares its results new
    tensors (no ``Tensor(a)``), and the graph passes take them so (``graph/_aliases.py``): a
    ReLU after a kernel that returned a view of its input ran in place over that input
    (``reuse_dead_inputs``), with no error.  The error is torch ``custom_op``'s for the same
    contract, a RuntimeError naming the operator and its kernel; torch checks every call of a
    ``custom_op`` alike.  Every call, not once per kernel and argument shapes: a key of the
    arguments' shapes, strides, dtypes and devices costs about what the check does (0.6 us a
    tensor against 0.2 us for its address), and it would miss a kernel that returns its input
    for some values only.  The check reads each tensor's address once, with no sets for a
    single result: 1.2 us a call of one (4, 4) tensor, 3.5 us of five tensors and three
    results, where the lists and sets of bdf62809 took 2.7 and 4.3 us (best rounds, loaded
    2-core machine, ``benchmarks/kernel_op_fresh_check_ab.py``)."""

    def fail():
        raise RuntimeError(
            f"{qualname} (kernel {fn.__module__}.{fn.__qualname__}): a result shares "
            "memory with an argument or another result, but the operator's schema "
            "declares its results new tensors; return a copy (x.clone()) instead")

    @functools.wraps(fn)
    def kernel(*args, **kwargs):
        result = fn(*args, **kwargs)
        if isinstance(result, torch.Tensor):
            address = result.untyped_storage().data_ptr()
            if address and address in _taken(args, kwargs):
                fail()
            return result
        produced = _addresses(result, []) if isinstance(result, (tuple, list)) else None
        if produced:
            distinct = set(produced)
            if len(distinct) < len(produced) or not distinct.isdisjoint(_taken(args, kwargs)):
                fail()
        return result
    return kernel


def kernel_op(qualname: str, schema: str, impl: Callable, fake: Callable,
              backward: Callable | None = None, setup_context: Callable | None = None,
              tags: tuple = ()):
    """Define the torch operator ``qualname`` (``"stadyn_kernels::name"``) with ``schema``:
    ``impl`` its kernel on every device, ``fake`` its shape rule, ``backward`` and
    ``setup_context`` its autograd formula (as :func:`torch.library.register_autograd` takes
    them), ``tags`` torch's operator tags (``torch.Tag.nondeterministic_seeded`` for an op
    that draws); returns the operator.  What ``torch.library.custom_op`` makes, but a first
    call does not import ``torch._dynamo`` (see :func:`_outside_dynamo`).  As there, a kernel
    whose schema returns new tensors must return memory of its own (not an argument, not a
    view of one): a call that does raises RuntimeError (:func:`_fresh_results`).

    Example:
        >>> import torch
        >>> tanh_numpy = torch.ops.stadyn_kernels.tanh_numpy.default   # made by kernel_op
        >>> tanh_numpy(torch.zeros(2))
        tensor([0., 0.])
    """
    namespace, name = qualname.split("::")
    lib = torch.library.Library(namespace, "FRAGMENT")
    _LIBRARIES.append(lib)
    lib.define(name + schema, tags=tuple(tags))
    returns = getattr(getattr(torch.ops, namespace), name).default._schema.returns
    if not any(r.alias_info is not None for r in returns):
        impl = _fresh_results(qualname, impl)
    lib.impl(name, _outside_dynamo(impl), "CompositeExplicitAutograd")
    torch.library.register_fake(qualname, fake, lib=lib)
    if backward is not None:
        torch.library.register_autograd(qualname, backward, setup_context=setup_context, lib=lib)
    return getattr(getattr(torch.ops, namespace), name).default


def _save_product_operands(ctx, inputs, output) -> None:
    """``setup_context`` of a product operator ``(x, w, bias)``: keeps ``x`` and ``w`` for the
    backward and notes whether a bias came (``ctx.has_bias``)."""
    x, w, bias = inputs
    ctx.save_for_backward(x, w)
    ctx.has_bias = bias is not None


def define_out_form(qualname: str, schema: str, impl: Callable, fake: Callable):
    """The ``out=`` overload ``qualname`` (``"ns::name.out"``) of an operator :func:`kernel_op`
    made: no autograd formula (a plan's programs run it without gradients).

    Example:
        >>> import torch
        >>> half_mm_out = torch.ops.stadyn_kernels.half_mm.out    # made by define_out_form
        >>> out = torch.empty(1, 1, dtype=torch.bfloat16)
        >>> half_mm_out(torch.ones(1, 2, dtype=torch.bfloat16),
        ...             torch.ones(2, 1, dtype=torch.bfloat16), out=out).tolist()
        [[2.0]]
    """
    namespace, name = qualname.split("::")
    lib = torch.library.Library(namespace, "FRAGMENT")
    _LIBRARIES.append(lib)
    lib.define(name + schema)
    lib.impl(name, _outside_dynamo(impl), "CompositeExplicitAutograd")
    torch.library.register_fake(qualname, fake, lib=lib)
    op, overload = name.split(".")
    return getattr(getattr(getattr(torch.ops, namespace), op), overload)
