"""Passes over traced ATen programs (``torch.fx`` graphs), run once when a plan is built.

Each pass takes a traced program and rewrites it in place; none changes what it computes:

* :func:`simplify` drops ops that do nothing under ``no_grad`` (make_fx emits many);
* :func:`defer_output_casts` returns half-precision gradients unconverted (the accumulation into
  ``.grad`` converts them into a buffer it has);
* :func:`write_products_into_buffers` makes a large weight gradient's ``mm`` write into a buffer
  the caller passes in; :func:`cast_parameters_into_buffers` does the same for a large
  parameter's half-precision copy;
* :func:`defer_products` (for inductor-compiled steps) moves such a product out of the program;
* :func:`reuse_dead_inputs` runs an activation (ReLU) and its backward in place on a value
  nothing else reads, instead of allocating a tensor of the same size;
  :func:`fuse_convolution_relu` makes a channels-last convolution apply its ReLU as it writes
  (oneDNN's post-op), so the activation costs no pass over memory of its own;
* :func:`aliased_outputs` finds the outputs that may share memory with an input or each other
  (an analysis, no rewrite).

:func:`plan_passes` is the sequence every traced program of a plan gets (a static plan's
forward and backward programs, ``compile_step``'s whole step): one place, so the two paths
cannot drift apart; what differs between them is a parameter.

The thresholds come from page-fault costs measured on these machines (docs/performance.md).
"""

from __future__ import annotations

import operator
from typing import Callable, Sequence

import torch
import torch.fx as fx

from ._aliases import storage_owner, viewed_source
from ._fuse_relu import fuse_convolution_relu
from ._fx_nodes import output_node, output_values
from ._merged_checks import merge_split_checks

__all__ = ["drop_dead_code", "simplify", "defer_output_casts", "write_products_into_buffers",
           "cast_parameters_into_buffers", "defer_products", "aliased_outputs",
           "reuse_dead_inputs", "fuse_convolution_relu", "plan_passes", "is_large_product",
           "register_product", "new_placeholder", "OUT_BUFFER_BYTES"]

_aten = torch.ops.aten
_SAME_SHAPE_NOOPS = {_aten.view.default, _aten._unsafe_view.default, _aten.reshape.default,
                     _aten.expand.default}


def _shape_of(n) -> tuple | None:
    val = n.meta.get("val") if isinstance(n, fx.Node) else None
    return tuple(val.shape) if isinstance(val, torch.Tensor) else None


def drop_dead_code(graph: fx.Graph) -> None:
    """Erase the nodes nothing reads that have no side effect, last first (what
    ``graph.eliminate_dead_code()`` does, which also asks every node that *is* read whether it
    is impure: for a program of 10,000 nodes that question costs more than the rest of it).

    Example:
        >>> import torch
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> from stadyn.graph import drop_dead_code
        >>> def f(x):
        ...     unused = torch.exp(x)
        ...     return x + 1
        >>> gm = make_fx(f)(torch.ones(2))
        >>> drop_dead_code(gm.graph)
        >>> [n.target.__name__ for n in gm.graph.nodes if n.op == "call_function"]
        ['add.Tensor']
    """
    for node in reversed(graph.nodes):
        if not node.users and not node.is_impure():
            graph.erase_node(node)


def simplify(gm: fx.GraphModule) -> fx.GraphModule:
    """Remove ops that do nothing when the program runs under ``no_grad``.

    ``detach``; ``view``/``reshape``/``expand`` to the shape the tensor already has; and
    ``t(t(x))``.  make_fx emits these liberally (each costs an ATen dispatch at replay).

    Example:
        >>> import torch
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> from stadyn.graph import simplify
        >>> gm = make_fx(lambda x: x.detach().reshape(2, 3).t().t() + 1)(torch.ones(2, 3))
        >>> [n.target.__name__ for n in simplify(gm).graph.nodes if n.op == "call_function"]
        ['add.Tensor']
    """
    graph = gm.graph
    for n in list(graph.nodes):
        if n.op != "call_function" or not n.args:
            continue
        src = n.args[0]
        if n.target is _aten.detach.default:
            replacement = src
        elif n.target in _SAME_SHAPE_NOOPS and _shape_of(n) is not None \
                and _shape_of(n) == _shape_of(src):
            replacement = src
        elif n.target is _aten.t.default and isinstance(src, fx.Node) \
                and src.target is _aten.t.default:
            replacement = src.args[0]
        else:
            continue
        n.replace_all_uses_with(replacement)
        graph.erase_node(n)
    drop_dead_code(graph)
    gm.recompile()
    return gm


def defer_output_casts(gm: fx.GraphModule) -> fx.GraphModule:
    """Return a backward program's gradients in the precision they were computed in.

    Under a ``bfloat16``/``float16`` context a parameter's gradient is computed in half
    precision and cast back to the parameter's fp32 at the end of the traced backward.  Each
    such cast allocates a new fp32 tensor per step (for a large weight, fresh pages the kernel
    must fault in).  This drops a cast whose only use is the program's output; the
    accumulation into ``.grad`` (:func:`accumulate_grads`) then converts while it adds or
    copies into a buffer it already has.
    """
    output = output_node(gm)
    outs = list(output.args[0])
    changed = False
    for k, n in enumerate(outs):
        if not (isinstance(n, fx.Node) and n.target is _aten._to_copy.default
                and len(n.users) == 1 and len(n.args) == 1
                and set(n.kwargs) <= {"dtype", "layout", "device"}
                and isinstance(n.args[0], fx.Node)):
            continue
        src, val = n.args[0], n.meta.get("val")
        before = src.meta.get("val")
        if not (isinstance(val, torch.Tensor) and isinstance(before, torch.Tensor)
                and before.dtype in (torch.bfloat16, torch.float16)
                and val.dtype.is_floating_point and before.shape == val.shape
                and before.device == val.device and before.layout == val.layout):
            continue
        outs[k] = src
        changed = True
    if changed:
        output.args = (tuple(outs),)
        drop_dead_code(gm.graph)
        gm.recompile()
    return gm


#: Matrix-product gradients and half-precision parameter copies at least this large are
#: written into reused buffers.
OUT_BUFFER_BYTES = 1 << 20
_HALF_TYPES = (torch.bfloat16, torch.float16)


def _is_large(val: torch.Tensor) -> bool:
    return val.numel() * val.element_size() >= OUT_BUFFER_BYTES


#: Matrix products a pass may write into a buffer, each with its ``out=`` overload.
_PRODUCT_OUT_FORMS: dict = {_aten.mm.default: _aten.mm.out}


def register_product(op, out_op) -> None:
    """Let the passes treat the torch operator ``op`` as a matrix product, as they do ATen's
    ``mm``: :func:`write_products_into_buffers` rewrites a large one into ``out_op`` (its
    ``out=`` overload, writing into a buffer the plan keeps).  ``op``'s result must be the
    ``(rows of a, columns of b)`` product of its first two arguments, a new contiguous tensor.
    (The op catalog's half-precision CPU product, ``stadyn_kernels::half_mm``, registers so.)

    Example:
        >>> import torch
        >>> from stadyn.graph import register_product
        >>> register_product(torch.ops.aten.mm.default, torch.ops.aten.mm.out)   # already known
    """
    _PRODUCT_OUT_FORMS[op] = out_op


def is_large_product(n, kernels: bool = True) -> bool:
    """Is ``n`` an ``mm`` (or, with ``kernels``, a product :func:`register_product` made known)
    with a contiguous result of at least :data:`OUT_BUFFER_BYTES` (the products whose fresh
    result memory costs page faults on every step)?

    Example:
        >>> import torch
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> from stadyn.graph._passes import is_large_product
        >>> gm = make_fx(torch.mm)(torch.ones(1024, 8), torch.ones(8, 512))
        >>> [is_large_product(n) for n in gm.graph.nodes if n.op == "call_function"]
        [True]
    """
    val = n.meta.get("val") if isinstance(n, fx.Node) else None
    return (isinstance(val, torch.Tensor)
            and (n.target in _PRODUCT_OUT_FORMS if kernels else n.target is _aten.mm.default)
            and val.is_contiguous() and _is_large(val))


def new_placeholder(gm: fx.GraphModule, name: str, val) -> fx.Node:
    """A new placeholder ``name`` (its value's metadata ``val``), appended after the program's
    other placeholders (first, in a program that has none): a new last input of ``gm``.

    Example:
        >>> import torch, torch.fx as fx
        >>> gm = fx.symbolic_trace(lambda x: x + 1)
        >>> k = new_placeholder(gm, "k", torch.tensor(2.0))
        >>> [n.name for n in gm.graph.find_nodes(op="placeholder")]
        ['x', 'k']
    """
    graph = gm.graph
    placeholders = graph.find_nodes(op="placeholder")
    with (graph.inserting_after(placeholders[-1]) if placeholders
          else graph.inserting_before(next(iter(graph.nodes)))):
        buffer = graph.placeholder(name)
    buffer.meta["val"] = val
    return buffer


def _write_into_placeholder(gm: fx.GraphModule, n: fx.Node, name: str,
                            call: Callable[[fx.Node], tuple]) -> fx.Node:
    """Replace ``n`` by a call that writes its value into a new placeholder ``name``, appended
    after the program's other placeholders (first, in a program that has none);
    ``call(placeholder)`` gives that call's ``(target, args, kwargs)``.  Returns the
    placeholder."""
    graph = gm.graph
    buffer = new_placeholder(gm, name, n.meta["val"])
    with graph.inserting_after(n):
        written = graph.call_function(*call(buffer))
    written.meta["val"] = n.meta["val"]
    n.replace_all_uses_with(written)
    graph.erase_node(n)
    return buffer


def write_products_into_buffers(gm: fx.GraphModule, leaves: Sequence[torch.Tensor]
                                ) -> list[tuple[int, torch.dtype | None]]:
    """Let a backward program write large weight gradients into buffers it is given.

    A gradient computed by a matrix product (``mm``: an affine layer's weight) comes out of the
    program as a new tensor every step; for a large weight that means fresh memory the kernel
    must fault in page by page (a 8192 x 1024 fp32 gradient: 32 MB, several milliseconds).
    For each output ``k`` that is such a product, of at least :data:`OUT_BUFFER_BYTES`, this
    adds a trailing placeholder and computes the product with ``mm.out`` into it (or the
    ``out=`` form of a product kernel, :func:`register_product`).  Returns
    ``(k, owned)`` for each, in the order of the new placeholders: the caller passes one
    buffer per position — the leaf's gradient buffer (:func:`grad_out_buffer`) when
    ``owned`` is None, or, for a half-precision product of an fp32 leaf
    (:func:`defer_output_casts` left it unconverted), a buffer of dtype ``owned`` the plan
    keeps: the product never becomes a ``.grad`` itself.
    """
    output = output_node(gm)
    outs = list(output.args[0])
    slots: list[tuple[int, torch.dtype | None]] = []
    seen: set = set()
    for k, (n, leaf) in enumerate(zip(outs, leaves)):
        product = _product_behind_view(n)
        if not (is_large_product(product) and n not in seen):
            continue
        val = product.meta["val"]
        if not ((val.dtype == leaf.dtype or (val.dtype in _HALF_TYPES
                                             and leaf.dtype == torch.float32))
                and tuple(n.meta["val"].shape) == tuple(leaf.shape)):
            continue
        seen.add(n)
        if product is n:
            out_form = _PRODUCT_OUT_FORMS[n.target]
            _write_into_placeholder(gm, n, f"grad_out_{k}",
                                    lambda buffer: (out_form, tuple(n.args), {"out": buffer}))
        else:
            # The weight's shape is not the product's (an affine layer's (C, H, W, out)
            # weight): the product goes into the buffer seen as a matrix, and the program
            # returns the buffer itself.
            _write_view_into_placeholder(gm, n, product, f"grad_out_{k}")
        slots.append((k, val.dtype if val.dtype != leaf.dtype else None))
    if slots:
        gm.recompile()
    return slots


def _product_behind_view(n):
    """The large product ``n`` reshapes (a view of it that nothing else reads), else ``n``."""
    if isinstance(n, fx.Node) and n.target in (_aten.view.default, _aten._unsafe_view.default) \
            and len(n.users) == 1 and isinstance(n.args[0], fx.Node) \
            and len(n.args[0].users) == 1 and is_large_product(n.args[0]):
        return n.args[0]
    return n


def _write_view_into_placeholder(gm: fx.GraphModule, n: fx.Node, product: fx.Node,
                                 name: str) -> fx.Node:
    """Replace ``n``, a reshape of the product ``product``, by a placeholder ``name`` (shaped
    like ``n``) that ``mm.out`` writes ``product`` into, seen in ``product``'s shape."""
    graph = gm.graph
    buffer = new_placeholder(gm, name, n.meta["val"])
    with graph.inserting_before(product):
        matrix = graph.call_function(_aten.view.default,
                                     (buffer, list(product.meta["val"].shape)))
        matrix.meta["val"] = product.meta["val"]
        written = graph.call_function(_PRODUCT_OUT_FORMS[product.target], tuple(product.args),
                                      {"out": matrix})
        written.meta["val"] = product.meta["val"]
    n.replace_all_uses_with(buffer)
    graph.erase_node(n)
    graph.erase_node(product)
    return buffer


def cast_parameters_into_buffers(gm: fx.GraphModule, leaves: Sequence[torch.Tensor],
                                 n_values: int) -> list[tuple[int, torch.dtype]]:
    """Let a forward program write the half-precision copies of large parameters into buffers
    it is given.

    Under a ``bfloat16``/``float16`` context each op casts its fp32 parameters on every step
    (:mod:`stadyn.graph._precision`).  For a large weight the cast is a new tensor each step,
    fresh pages once the allocator has given the last one back (8192 x 1024 in bf16: 16 MB).
    Each cast of a leaf that needs a gradient, of at least :data:`OUT_BUFFER_BYTES`, becomes
    ``copy_`` into a trailing placeholder; returns the leaf positions and the copies' dtypes,
    in placeholder order.
    The caller keeps one buffer per position: a forward overwrites the copy the previous
    forward saved for its backward, which holds the same values unless the parameter changed,
    and a plan's backward always belongs to its latest forward.  A copy that one of the first
    ``n_values`` outputs (the values Variables receive) could share memory with is left alone.
    """
    exposed = {storage_owner(n) for n in output_node(gm).args[0][:n_values]}
    placeholders = gm.graph.find_nodes(op="placeholder")
    slots: list[tuple[int, torch.dtype]] = []
    for i, (ph, leaf) in enumerate(zip(placeholders, leaves)):
        if not (leaf.requires_grad and leaf.dtype == torch.float32 and leaf.is_contiguous()):
            continue
        for n in list(ph.users):
            val = n.meta.get("val")
            if not (n.target is _aten._to_copy.default and n.args == (ph,) and n not in exposed
                    and set(n.kwargs) <= {"dtype"} and isinstance(val, torch.Tensor)
                    and val.dtype in _HALF_TYPES and _is_large(val)):
                continue
            _write_into_placeholder(gm, n, f"cast_out_{i}",
                                    lambda buffer: (_aten.copy_.default, (buffer, ph), {}))
            slots.append((i, val.dtype))
            break
    if slots:
        gm.recompile()
    return slots


def aliased_outputs(gm: fx.GraphModule) -> list[bool]:
    """For each output of ``gm``: may it share memory with an input or another output?

    Follows view ops (ATen ops whose result aliases an argument, ``_aliases.py``) back to the
    node that owns the storage.  Outputs owned by an input (a tangent, a residual, a buffer an
    ``out=`` op wrote) or by the same node as an earlier output must be copied before they
    become a ``.grad`` that later accumulates in place.
    """
    output = output_node(gm)
    flags, owners = [], set()
    for n in output.args[0]:
        root = storage_owner(n)
        flags.append(not isinstance(root, fx.Node) or root.op == "placeholder" or root in owners)
        owners.add(root)
    return flags


def defer_products(gm: fx.GraphModule, first_grad: int) -> list[tuple[int, int, int]]:
    """Move large weight-gradient matrix products out of a forward-backward program.

    Inductor allocates each output of a compiled program afresh, so a large gradient computed
    by ``mm`` (an affine layer's weight: 32 MB for 8192 x 1024) costs a fresh allocation that
    the kernel must fault in page by page on every step (glibc maps allocations of 32 MB and
    more straight from the kernel and unmaps them when freed).  For each gradient output (from
    position ``first_grad``) that is such a product (``is_large_product``) — or its cast to
    fp32, when the product ran in half precision — the program returns the product's two
    operands instead (appended to its outputs) and the caller computes it into buffers it
    keeps (as :class:`stadyn.compile.CompiledStep` does, with ``torch.mm``: ATen's ``mm``
    only; a half-precision CPU product kernel stays in the program).  Returns ``(gradient
    index, operand a position, operand b position)`` for each.

    Example:
        >>> import torch
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> from stadyn.graph import defer_products
        >>> a, b = torch.ones(1024, 64), torch.ones(64, 512)      # a 2 MB product
        >>> gm = make_fx(lambda a, b: (a.sum(), torch.mm(a, b)))(a, b)
        >>> deferred = defer_products(gm, first_grad=1)
        >>> deferred, [tuple(t.shape) for t in gm(a, b)[2:]]
        ([(0, 2, 3)], [(1024, 64), (64, 512)])
    """
    output = output_node(gm)
    outs = list(output.args[0])
    extra: list[fx.Node] = []
    deferred = []
    for k in range(first_grad, len(outs)):
        n = product = outs[k]
        if not isinstance(n, fx.Node) or outs.count(n) != 1:
            continue
        if n.target is _aten._to_copy.default and len(n.args) == 1 \
                and set(n.kwargs) <= {"dtype", "layout", "device"} \
                and n.meta["val"].is_contiguous():
            product = n.args[0]         # a half-precision product cast up to the fp32 leaf
        if not (is_large_product(product, kernels=False) and len(product.users) == 1):
            continue
        a, b = product.args
        deferred.append((k - first_grad, len(outs) + len(extra), len(outs) + len(extra) + 1))
        extra += [a, b]
        outs[k] = a                 # a stand-in: the caller replaces it
    if deferred:
        output.args = (tuple(outs + extra),)
        drop_dead_code(gm.graph)
        gm.recompile()
    return deferred


#: Multi-output ops whose outputs are each new memory (``getitem`` of them is no view).
_FRESH_TUPLES = {_aten.convolution_backward.default, _aten.max_pool2d_with_indices.default,
                 _aten.native_batch_norm_backward.default}


def _dies_here(n, user: fx.Node, outputs: set) -> bool:
    """Is ``n`` a tensor of its own (no view, no input, no output of the program) read by
    ``user`` only, so that ``user`` may overwrite it?"""
    if not (isinstance(n, fx.Node) and n.op == "call_function" and len(n.users) == 1
            and next(iter(n.users)) is user and n not in outputs):
        return False
    if n.target is _aten._unsafe_view.default:
        # (a reshape over another node's memory, though its schema declares a new tensor:
        # ``matmul``'s result; it dies only with that memory)
        source = viewed_source(n)
        return _dies_here(source, n, outputs)
    if n.target is operator.getitem:
        src = n.args[0]
        return isinstance(src, fx.Node) and src.target in _FRESH_TUPLES
    schema = getattr(n.target, "_schema", None)
    return (schema is not None and len(schema.returns) == 1
            and schema.returns[0].alias_info is None and not schema.is_mutable)


def _laid_out_alike(a, n: fx.Node) -> bool:
    """Whether the traced values of ``a`` and ``n`` have the same shape and strides (an op
    writing into ``a`` gives its output ``a``'s)."""
    va = a.meta.get("val") if isinstance(a, fx.Node) else None
    vn = n.meta.get("val")
    return (isinstance(va, torch.Tensor) and isinstance(vn, torch.Tensor)
            and va.shape == vn.shape and va.stride() == vn.stride())


def reuse_dead_inputs(gm: fx.GraphModule) -> int:
    """Run ``relu`` and ``threshold_backward`` (ReLU's gradient) in place where their input is
    read by nothing else; returns the number of ops rewritten.

    A convolution's output feeds only its ReLU, and a convolution's (or pooling's) input
    gradient only the ReLU's backward: each such op otherwise allocates a tensor as large as
    its input — for a CIFAR ConvNet 16 MB at a time, fresh pages the kernel faults in on every
    step once the allocator has given the last ones back (docs/performance.md) — and writes
    it while the input dies.  The values are the same, bit for bit.

    Example:
        >>> import torch
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> from stadyn.graph import reuse_dead_inputs
        >>> gm = make_fx(lambda x: torch.relu(x * 2) + 1, tracing_mode="fake")(torch.ones(3))
        >>> reuse_dead_inputs(gm), [n.target.__name__ for n in gm.graph.nodes
        ...                         if n.op == "call_function"]
        (1, ['mul.Tensor', 'relu_.default', 'add.Tensor'])
        >>> gm(torch.tensor([-1.0, 0.5, 2.0])).tolist()
        [1.0, 2.0, 5.0]
    """
    graph = gm.graph
    outputs = output_values(gm)
    count = 0
    for n in list(graph.nodes):
        if n.op != "call_function" or not n.args or not _dies_here(n.args[0], n, outputs):
            continue
        if not _laid_out_alike(n.args[0], n):
            continue        # (written in place it would take its input's strides, and the
            #                 ops after it were traced on the strides it has: a view of it
            #                 fails, or reads the wrong elements)
        if n.target is _aten.relu.default:
            n.target = _aten.relu_.default
        elif n.target is _aten.threshold_backward.default and not n.kwargs:
            with graph.inserting_before(n):
                written = graph.call_function(_aten.threshold_backward.grad_input, n.args,
                                              {"grad_input": n.args[0]})
            written.meta = dict(n.meta)
            n.replace_all_uses_with(written)
            graph.erase_node(n)
        else:
            continue
        count += 1
    if count:
        gm.recompile()
    return count


def plan_passes(gm: fx.GraphModule, *, fuse: bool = True, in_place: bool = True
                ) -> fx.GraphModule:
    """The rewrites a plan gives one traced program, in order: :func:`simplify`;
    :func:`~stadyn.graph._merged_checks.merge_split_checks` (one value check of a split tensor
    where each of its pieces was checked); :func:`fuse_convolution_relu` (``fuse``: a
    channels-last CPU convolution and its ReLU as one oneDNN call; it changes nothing on other
    devices); and :func:`reuse_dead_inputs`
    (``in_place``: ReLUs and their backward in place).  The passes that route buffers
    (:func:`defer_output_casts`, :func:`write_products_into_buffers`,
    :func:`cast_parameters_into_buffers`, :func:`defer_products`) run after these: they read
    no value these rewrite and are left out of them.

    A static plan's forward program gets all of them and its backward program all but
    ``fuse`` (it holds no forward activation); ``compile_step``'s step gets all of them
    uncompiled, and all but ``in_place`` when inductor compiles it (inductor plans its own
    buffers, and a mutation would only cost it a copy).  Returns ``gm``.

    Example:
        >>> import torch
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> from stadyn.graph import plan_passes
        >>> gm = make_fx(lambda x: torch.relu(x.detach() * 2) + 1,
        ...              tracing_mode="fake")(torch.ones(3))
        >>> [n.target.__name__ for n in plan_passes(gm).graph.nodes if n.op == "call_function"]
        ['mul.Tensor', 'relu_.default', 'add.Tensor']
        >>> gm = make_fx(lambda x: torch.relu(x * 2), tracing_mode="fake")(torch.ones(3))
        >>> [n.target.__name__ for n in plan_passes(gm, in_place=False).graph.nodes
        ...  if n.op == "call_function"]
        ['mul.Tensor', 'relu.default']
    """
    simplify(gm)
    merge_split_checks(gm)
    if fuse:
        fuse_convolution_relu(gm)
    if in_place:
        reuse_dead_inputs(gm)
    return gm
