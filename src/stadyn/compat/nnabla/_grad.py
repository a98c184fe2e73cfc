"""NNabla's ``nn.grad`` on Stadyn's ``grad``, reaching the registered parameters a program put
in its graphs itself.

NNabla 1.39's graphs hold, for a registered parameter, one Variable per parametric function
call (``get_unlinked_variable``) and the registered Variable itself where a program's ``F``
call reads it (here its *program view*, ``_registered_flags.py``).  Its ``nn.grad`` binds the
parameter to the one of them its search from the outputs meets last (:func:`_found_last`),
expands the functions below the bound Variables and counts the parameter's gradient at the
expanded functions only (:func:`_edges`).  Stadyn's parametric functions read the parameter
itself, so the parts of the functions NNabla does not expand are cut from the differentiation
(``graph.cut_at``, ``graph.dynamic_cuts``), static and dynamic (cases
``nn_grad__parameter_read_by_pf_and_f``, ``nn_grad__parameter_shared_by_two_calls``).
"""

from __future__ import annotations

import contextlib

from typing import Any, Sequence

from ... import functions as _F
from ...graph import (Variable as _Variable, cut_at, dynamic_cuts, get_auto_forward,
                      reading_group, topological_nodes)
from ...ops import grad as _grad
from ._registered_flags import is_registered, live_program_view

__all__ = ["grad"]


def grad(outputs: Any, inputs: "_Variable | Sequence[_Variable]", grad_outputs: Any = None
         ) -> list:
    """Gradients of ``outputs`` with respect to ``inputs`` as Variables of the graph
    (``nn.grad``): differentiable again, computed at once in dynamic mode and by ``forward`` in
    static mode.  A registered parameter a program gave an ``F`` function itself gets the
    gradient through it (the meta-learning pattern: ``F.affine(x, W, b)`` on
    ``nn.get_parameters()``'s ``W``), as in NNabla 1.39.  A Variable in ``grad_outputs`` is
    part of the graph, as NNabla's (the gradient of ``o * go``).

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.compat.nnabla as nn
        >>> import stadyn.compat.nnabla.functions as F
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     w = nn.parameter.get_parameter_or_create("W", (2,))
        ...     w.d = [1.0, 2.0]
        ...     loss = F.sum(F.mul2(w, w))
        ...     g, = nn.grad([loss], [w])
        ...     g.forward()
        ...     g.d.tolist()
        [2.0, 4.0]
    """
    ins = [inputs] if isinstance(inputs, _Variable) else list(inputs)
    given = outputs
    outputs, grad_outputs = _variable_grad_outputs(outputs, grad_outputs)
    _refuse_python_functions(outputs, ins)
    params = [k for k, v in enumerate(ins) if isinstance(v, _Variable) and is_registered(v)]
    if not params:
        return _grad(outputs, ins, grad_outputs)
    views = {k: live_program_view(ins[k]) for k in params}
    wanted = {id(ins[k]): k for k in params} | {
        id(view): k for k, view in views.items() if view is not None}
    bound = _found_last(given, wanted, ins)
    edges = _edges(outputs, ins, params, views, bound)
    cuts = [(node, u) for node, u, counted in edges if not counted]
    counted = {id(u) for _, u, c in edges if c}
    # the Variable bound first, then the other where a function NNabla expands reads it;
    # each differentiated with the other's readers cut too (in a dynamic graph the view and
    # the parameter are one tensor, in a static one two leaves)
    chosen = list(ins)
    others = {}
    for k in params:
        view = views[k]
        if view is not None and bound.get(k) is view:
            chosen[k] = view
        other = ins[k] if chosen[k] is view else view
        if other is not None and id(other) in counted:
            others[k] = other
    result = _cut_grad(outputs, chosen, grad_outputs, cuts + [
        (node, u) for node, u, c in edges if c and any(u is o for o in others.values())])
    if others:
        more = _cut_grad(outputs, list(others.values()), grad_outputs, cuts + [
            (node, u) for node, u, c in edges if c and any(u is chosen[k] for k in others)])
        for j, k in enumerate(others):
            result[k] = _F.add2(result[k], more[j])
    return result


def _cut_grad(outputs: Any, ins: list, grad_outputs: Any, cuts: list) -> list:
    """The gradients of ``outputs`` with respect to ``ins`` but for the parts ``cuts`` names,
    now in a dynamic graph and whenever the node runs (``graph.cut_at``)."""
    with dynamic_cuts(cuts) if get_auto_forward() and cuts else contextlib.nullcontext():
        found = _grad(outputs, ins, grad_outputs)
    cut_at(found[0].parent, cuts)
    return found


def _edges(outputs: Any, ins: Sequence[_Variable], params: Sequence[int], views: dict,
           bound: dict) -> list:
    """Each function reading a parameter's Variable (the parameter, its view) as
    ``(function, Variable, counted)``: whether NNabla 1.39's ``nn.grad`` counts its part of the
    parameter's gradient.

    NNabla expands the functions of the outputs and, down from them, those below the graph
    Variables it bound the inputs to (python/src/nnabla/grad.py, ``_get_children``, the
    "Propagate down" step), and counts an input's gradient at each expanded function reading
    a Variable equal to it ("accum at leaf").  A parametric function call's Variable of a
    parameter is its own (``get_unlinked_variable``; here: the function reading the
    parameter itself, :func:`_call`), the program view one Variable for every ``F``
    call on it.  So ``F.sum(h1) + F.sum(3 * h2)`` of two ``PF.affine`` calls sharing ``W``
    counts ``h2``'s call only (the one the search met last)."""
    outs = [outputs] if isinstance(outputs, _Variable) else list(outputs)
    nodes = topological_nodes([o for o in outs if isinstance(o, _Variable)])
    start_nodes = {key for key in bound.values() if isinstance(key, tuple)}
    below = {id(key) for key in bound.values() if isinstance(key, _Variable)}
    below |= {id(v) for k, v in enumerate(ins) if k not in params}
    mine = {id(ins[k]) for k in params} | {id(v) for v in views.values() if v is not None}
    for node in nodes:
        call = _call(node)
        # (a function apply_w made reads the call's own Variable, not the view a program's F
        # call binds: it starts with its group only)
        if call in start_nodes or any(
                u is not None and id(u) in below and not (call[0] == "group" and id(u) in mine)
                for u in node.inputs):
            below.update(id(o) for o in node.outputs if o is not None)
    expanded = {id(o.parent) for o in outs if isinstance(o, _Variable) and o.parent is not None}
    for node in reversed(nodes):
        if id(node) in expanded:
            expanded.update(id(u.parent) for u in node.inputs
                            if u is not None and u.parent is not None and id(u) in below)
    edges = []
    for node in nodes:
        read = {id(u): u for u in node.inputs if u is not None and id(u) in mine}
        edges += [(node, u, id(node) in expanded) for u in read.values()]
    return edges


def _call(node: Any) -> tuple:
    """The parametric function call whose Variable of a parameter ``node`` reads: the
    functions ``apply_w`` made on it together (``graph.reading_group``: NNabla hands
    ``apply_w`` the call's one Variable, ``PF.affine(x, 3, apply_w=lambda w: w * 2 +
    F.tanh(w))``), else ``node`` alone."""
    group = reading_group(node)
    return ("call", id(node)) if group is None else ("group", group)


def _found_last(outputs: Any, wanted: dict, ins: Sequence[_Variable]) -> dict:
    """For each key of ``wanted`` (``id`` of a graph Variable -> the key), the graph Variable
    of that key NNabla 1.39's search from ``outputs`` meets last: the Variable itself, or for
    ``ins[key]`` itself (a registered parameter a parametric function's graph reads: each
    call its own Variable in NNabla's graph) :func:`_call` of the function reading it.

    NNabla's ``nn.grad`` binds each input to one Variable of the graph equal to it (same
    arrays) and differentiates through that one only (python/src/nnabla/grad.py,
    ``Grad._get_corresponding_vars_on_graph``: a depth-first walk from each output over each
    function's inputs in order, the last one met kept; ``_get_children`` then expands only the
    functions below it).  A registered parameter read by a parametric function's graph (the
    parameter here) and by a program's ``F`` call (its program view) is two such Variables,
    so only one path's gradient counts: ``F.sum(h) + F.sum(2 * F.affine(x, W))`` differentiates
    through ``F.affine``, ``F.sum(2 * F.affine(x, W)) + F.sum(h)`` through ``h``'s graph."""
    last: dict = {}
    done: set = set()
    for out in ([outputs] if isinstance(outputs, _Variable) else list(outputs)):
        if not isinstance(out, _Variable) or out.parent is None or id(out) in done:
            continue
        stack = [(out, iter(out.parent.inputs))]
        while stack:
            node, inputs = stack[-1]
            for u in inputs:
                if not isinstance(u, _Variable):
                    continue
                if id(u) in wanted:
                    k = wanted[id(u)]
                    call = _call(node.parent)
                    last[k] = call if u is ins[k] or call[0] == "group" else u
                if u.parent is not None and id(u) not in done:
                    stack.append((u, iter(u.parent.inputs)))
                    break
                done.add(id(u))
            else:
                stack.pop()
                if stack:                       # (NNabla marks the functions' inputs only)
                    done.add(id(node))
    return last


def _variable_grad_outputs(outputs: Any, grad_outputs: Any) -> tuple:
    """NNabla 1.39 differentiates ``o * go`` for a Variable ``go`` in ``grad_outputs``
    (python/src/nnabla/grad.py, ``Grad.__call__``, "Set grad_outputs": ``output = o * go``), so
    ``go`` is a node of the graph: its value is read when the gradient is computed, and a ``go``
    that depends on an input is differentiated too (``tanh(x)`` with ``go = sigmoid(x)`` gives
    ``sigmoid(x) * tanh'(x) + tanh(x) * sigmoid'(x)``).  The outputs with a Variable ``go``
    become that product, with a seed of ones."""
    if not isinstance(grad_outputs, (list, tuple)) or not any(
            isinstance(g, _Variable) for g in grad_outputs):
        return outputs, grad_outputs
    outs = [outputs] if isinstance(outputs, _Variable) else list(outputs)
    if len(outs) != len(grad_outputs):
        raise ValueError("Length of `grad_outputs` and length of `outputs` must be the same.")
    gos = list(grad_outputs)
    for k, (o, g) in enumerate(zip(outs, gos)):
        if isinstance(g, _Variable):
            if tuple(g.shape) != tuple(o.shape):
                raise ValueError("Shape of each of outputs and grad_outputs must be same.\n"
                                 f"output[{k}]({tuple(o.shape)}) != "
                                 f"grad_output[{k}]({tuple(g.shape)})")
            outs[k], gos[k] = o * g, None  # (the operator, bound to the context as NNabla's)
    return outs, gos


# The functions whose backward function in NNabla 1.39 raises ``NotImplementedError("<name>_
# backward is not implemented.")`` whatever its arguments (python/src/nnabla/backward_function/
# <name>.py), by Stadyn's op names (NNabla's, snake-cased)
_NO_BACKWARD = frozenset((
    "adaptive_separable_convolution", "affine_grid", "assign", "batch_logdet",
    "binary_connect_affine", "binary_connect_convolution", "binary_weight_affine",
    "binary_weight_convolution", "bit_shift", "confusion_matrix", "cumprod",
    "deformable_convolution", "depthwise_convolution", "depthwise_deconvolution", "einsum",
    "fixed_point_quantize", "flip", "fused_convolution", "gather", "image_augmentation",
    "inq_affine", "inq_convolution", "mean_subtraction", "meshgrid", "min_max_quantize",
    "mish", "mod2", "nms_detection2d", "nonzero", "patch_correlation", "pow2_quantize",
    "random_erase", "reset_inf", "reset_nan", "roi_align", "scatter_add", "searchsorted",
    "shift", "sink", "sort", "sync_batch_normalization", "top_k_data", "top_k_grad",
    "top_n_error", "unique", "unlink", "vat_noise", "warp_by_flow", "warp_by_grid"))


def _refuse_python_functions(outputs: Any, ins: Sequence[_Variable]) -> None:
    """NNabla 1.39's ``nn.grad`` builds the gradient graph from each function's backward
    function (``nnabla.backward_functions.registry``), which has none for a ``PythonFunction``:
    one it reaches (below the outputs, above an input, an input of it needing a gradient)
    stops it with ``ValueError: <its name> is not in the backward function registry``
    (python/src/nnabla/grad.py, ``_connect_on_gradient_graph``), before any ``backward_impl``
    runs; the one nearest the outputs is named, as NNabla reaches it first.  So does a
    ``spectral_norm`` without ``output_u`` (``PF.spectral_norm``'s): NNabla's backward function
    for it raises ``ValueError: spectral_norm_backward is supported for output_u=True.``; and a
    ``sink`` (either ``one_input_grad``): ``NotImplementedError: sink_backward is not
    implemented.`` (python/src/nnabla/backward_function/sink.py:36), as every function of
    :data:`_NO_BACKWARD` (``mish``, ``flip``, ``gather``, ...: their backward functions raise
    it at once)."""
    outs = [outputs] if isinstance(outputs, _Variable) else list(outputs)
    below = {id(v) for v in ins}
    found = None
    for node in topological_nodes([o for o in outs if isinstance(o, _Variable)]):
        if not any(u is not None and id(u) in below for u in node.inputs):
            continue
        below.update(id(o) for o in node.outputs if o is not None)
        if (node.spec.name in ("python_function", "spectral_norm") or
                node.spec.name in _NO_BACKWARD) and any(
                getattr(u, "need_grad", False) for u in node.inputs):
            if node.spec.name != "spectral_norm" or not node.attrs.get("output_u"):
                found = node
    if found is not None and found.spec.name in _NO_BACKWARD:
        raise NotImplementedError(f"{found.spec.name}_backward is not implemented.")
    if found is not None and found.spec.name == "spectral_norm":
        # (its backward function needs the u the forward started from: spectral_norm.py of
        # nnabla/backward_function, output_u=True only)
        raise ValueError("spectral_norm_backward is supported for output_u=True.")
    if found is not None:
        function = getattr(found.kwargs.get("function"), "function", None)
        name = function.name if function is not None else "Callback"
        raise ValueError(f"{name} is not in the backward function registry")
