"""An op computed by Python code on NumPy arrays: NNabla's ``PythonFunction`` (a user's own
function with ``setup_impl`` / ``forward_impl`` / ``backward_impl``) runs as this op."""

from __future__ import annotations

import numpy as np
import torch

from ._registry import op

__all__ = ["python_function"]


class _PythonCall(torch.autograd.Function):
    """Runs the NumPy ``forward_arrays`` / ``backward_arrays`` of a Python function inside
    autograd (any number of outputs)."""

    @staticmethod
    def forward(ctx, function, *xs):
        arrays = [x.detach().cpu().numpy() for x in xs]
        state, outs = function.forward_arrays(arrays)
        ctx.function, ctx.state = function, state
        ctx.inputs = [(x.device, x.dtype) for x in xs]
        device = xs[0].device if xs else torch.device("cpu")
        return tuple(torch.as_tensor(np.ascontiguousarray(o), device=device) for o in outs)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, *grads):
        given = [None if g is None else g.detach().cpu().numpy() for g in grads]
        out = ctx.function.backward_arrays(ctx.state, given, list(ctx.needs_input_grad[1:]))
        return (None, *[None if g is None or not needed
                        else torch.as_tensor(np.ascontiguousarray(g), device=d).to(t)
                        for g, (d, t), needed in zip(out, ctx.inputs, ctx.needs_input_grad[1:])])


def _python_function_shape(*x, function=None):
    outs = []
    for shape, dtype in function.output_shapes([tuple(t.shape) for t in x],
                                               [t.dtype for t in x]):
        out = torch.empty(tuple(shape), dtype=dtype, device="meta")
        outs.append(out.requires_grad_(dtype.is_floating_point
                                       and any(t.requires_grad for t in x)))
    return outs[0] if len(outs) == 1 else tuple(outs)


@op(category="misc", shape=_python_function_shape, traceable=False, frameworks=("stadyn",),
    unstorable="a Python function runs Python; model files and ONNX hold only catalog ops")
def python_function(*x, function=None):
    """Outputs computed from the inputs by Python code on NumPy arrays: ``function`` has
    ``output_shapes(shapes, dtypes) -> [(shape, torch dtype) per output]``,
    ``forward_arrays(arrays) -> (state, [array per output])`` and
    ``backward_arrays(state, [gradient or None per output], [whether each input needs a
    gradient]) -> [gradient or None per input]``.
    One output is returned as a Variable, several as a tuple.  Graphs holding it run eagerly (its
    Python cannot be traced) and cannot be saved.  A ``function`` that also has
    ``defer_input(k)``, ``held_gradient(k)`` and ``run_deferred(partial, accum)`` (and
    ``run_leaves(partials, accums)``, for inputs that are leaves) sees its inputs' other
    readers' gradients in NNabla's backward order (``graph/_reader_order.py``).
    NNabla's ``PythonFunction`` (``stadyn.compat.nnabla.function``) runs as this op.

    Example:
        >>> import numpy as np, torch, stadyn as sd, stadyn.functions as F
        >>> class Twice:
        ...     def output_shapes(self, shapes, dtypes): return [(shapes[0], torch.float32)]
        ...     def forward_arrays(self, a): return None, [2 * a[0]]
        ...     def backward_arrays(self, state, g, needed): return [2 * g[0]]
        >>> with sd.auto_forward():
        ...     y = F.python_function(sd.Variable.from_numpy_array(np.ones(2)), function=Twice())
        >>> y.d.tolist()
        [2.0, 2.0]
    """
    outs = _PythonCall.apply(function, *x)
    return outs[0] if len(outs) == 1 else outs
