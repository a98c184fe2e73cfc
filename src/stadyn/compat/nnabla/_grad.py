"""NNabla's ``nn.grad`` on Stadyn's ``grad``, reaching the registered parameters a program put
in its graphs itself.

A program's ``F`` call holds a registered parameter's *program view*
(``_registered_flags.py``) and a parametric function's graph the parameter itself: NNabla's
two graph Variables of the parameter.  As NNabla 1.39's, a static gradient with respect to the
parameter is taken through the one its search from the outputs meets last, and through the
other only where a function reading it is below a Variable the gradient is taken through
(:func:`_found_last`, :func:`_expanded_reader`).  In dynamic mode both are the parameter's own
tensor, and both paths count (NNabla's one: known rows of case
``nn_grad__parameter_read_by_pf_and_f``).
"""

from __future__ import annotations

from typing import Any, Sequence

from ... import functions as _F
from ...graph import Variable as _Variable, get_auto_forward, topological_nodes
from ...ops import grad as _grad
from ._registered_flags import live_program_view

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
    views = {} if get_auto_forward() else {k: live_program_view(v) for k, v in enumerate(ins)}
    views = {k: view for k, view in views.items() if view is not None}
    if not views:
        return _grad(outputs, ins, grad_outputs)
    last = _found_last(given, {id(view): k for k, view in views.items()}
                       | {id(ins[k]): k for k in views})
    chosen = [last.get(k, v) if k in views else v for k, v in enumerate(ins)]
    others = {k: views[k] if chosen[k] is ins[k] else ins[k] for k in views}
    others = {k: v for k, v in others.items() if _expanded_reader(outputs, chosen, v)}
    found = _grad(outputs, chosen + list(others.values()), grad_outputs)
    result = found[:len(ins)]
    for j, k in enumerate(others):
        result[k] = _F.add2(result[k], found[len(ins) + j])
    return result


def _expanded_reader(outputs: Any, chosen: Sequence[_Variable], other: _Variable) -> bool:
    """Whether NNabla 1.39's ``nn.grad`` takes a gradient through ``other`` (the graph
    Variable of a parameter it did not bind the input to): only the functions below the bound
    Variables (``chosen``, all inputs together) are expanded (``Grad._get_children``, the
    "Propagate down" step), and an expanded function's input equal to a wanted input adds its
    gradient to it ("accum at leaf").  So ``other`` counts where a function reading it also
    reads a Variable below a chosen one (``nn.grad([y], [W, b])``: ``PF.affine(x, W, b)``'s
    ``W`` is counted through ``b``), or makes an output.  Where only some of its readers do,
    all of them are counted here (NNabla counts those only)."""
    outs = [outputs] if isinstance(outputs, _Variable) else list(outputs)
    below = {id(v) for v in chosen}
    tops = {id(o) for o in outs}
    for node in topological_nodes(outs):
        ins = [u for u in node.inputs if u is not None]
        if any(id(u) in below for u in ins):
            below.update(id(o) for o in node.outputs if o is not None)
            if any(u is other for u in ins):
                return True
        elif any(u is other for u in ins) and any(
                o is not None and id(o) in tops for o in node.outputs):
            return True
    return False


def _found_last(outputs: Any, wanted: dict) -> dict:
    """For each key of ``wanted`` (``id`` of a graph Variable -> the key), the Variable among
    those of that key that NNabla 1.39's search from ``outputs`` meets last.

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
                    last[wanted[id(u)]] = u
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
    implemented.`` (python/src/nnabla/backward_function/sink.py:36)."""
    outs = [outputs] if isinstance(outputs, _Variable) else list(outputs)
    below = {id(v) for v in ins}
    found = None
    for node in topological_nodes([o for o in outs if isinstance(o, _Variable)]):
        if not any(u is not None and id(u) in below for u in node.inputs):
            continue
        below.update(id(o) for o in node.outputs if o is not None)
        if node.spec.name in ("python_function", "spectral_norm", "sink") and any(
                getattr(u, "need_grad", False) for u in node.inputs):
            if node.spec.name != "spectral_norm" or not node.attrs.get("output_u"):
                found = node
    if found is not None and found.spec.name == "sink":
        raise NotImplementedError("sink_backward is not implemented.")
    if found is not None and found.spec.name == "spectral_norm":
        # (its backward function needs the u the forward started from: spectral_norm.py of
        # nnabla/backward_function, output_u=True only)
        raise ValueError("spectral_norm_backward is supported for output_u=True.")
    if found is not None:
        function = getattr(found.kwargs.get("function"), "function", None)
        name = function.name if function is not None else "Callback"
        raise ValueError(f"{name} is not in the backward function registry")
