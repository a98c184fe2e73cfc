"""Gradients as graph nodes: the ``grad`` op and :func:`grad`, NNabla's ``nn.grad``.

``grad`` is declared like every other op: its inputs are the outputs to differentiate followed
by the Variables to differentiate them with respect to, its value is computed by torch's
autograd with ``create_graph=True`` (so the result can be differentiated again), and both modes
run it.  :func:`grad` is the front users call (``sd.grad``).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from ..graph import Variable, get_auto_forward, grad_of_dynamic_graph, grad_seed
from ._registry import function_of, op

__all__ = ["grad"]

_UNSTORABLE = ("gradient graphs cannot be saved or exported; save the forward graph and call "
               "sd.grad on the loaded one")


def _grad_shape(*x, n_outputs: int = 1, grad_outputs: tuple = ()):
    return tuple(torch.empty_like(t) for t in x[n_outputs:])


@op(category="graph", name="grad", shape=_grad_shape, unstorable=_UNSTORABLE,
    frameworks=("stadyn", "cntk"))
def _grad(*x, n_outputs: int = 1, grad_outputs: tuple = ()):
    """Gradients of the first ``n_outputs`` inputs w.r.t. the others, as graph nodes.

    ``grad_outputs`` holds one seed per output (None: ones).  An input that does not need a
    gradient, or that the outputs do not depend on, gets zeros (as NNabla's ``nn.grad``).  Most
    programs call :func:`stadyn.grad` instead.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     x = sd.Variable.from_numpy_array(np.array([3.0]), need_grad=True)
        ...     dx, = F.grad(x * x, x)
        >>> dx.d
        array([6.], dtype=float32)
    """
    outs, ins = x[:n_outputs], x[n_outputs:]
    seeds = [grad_seed(g, o) for o, g in zip(outs, grad_outputs or (None,) * n_outputs)]
    diff = [k for k, o in enumerate(outs) if o.requires_grad]
    wrt = [k for k, i in enumerate(ins) if i.requires_grad]
    grads: list = [None] * len(ins)
    if diff and wrt:
        found = torch.autograd.grad([outs[k] for k in diff], [ins[k] for k in wrt],
                                    [seeds[k] for k in diff], create_graph=True,
                                    allow_unused=True)
        for k, g in zip(wrt, found):
            grads[k] = g
    return tuple(torch.zeros_like(i) if g is None else g for i, g in zip(ins, grads))


def grad(outputs: Variable | Sequence[Variable], inputs: Variable | Sequence[Variable],
         grad_outputs: Any = None) -> list[Variable]:
    """Gradients of ``outputs`` w.r.t. ``inputs`` as new Variables of the graph (one ``grad``
    node).

    The result can be differentiated again (higher-order gradients).  In dynamic mode the values
    are computed at once; in static mode they are graph nodes computed by ``forward``.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> with sd.auto_forward():
        ...     x = sd.Variable.from_numpy_array(np.array([3.0]), need_grad=True)
        ...     y = x * x * x
        ...     dx, = sd.grad(y, x)
        ...     ddx, = sd.grad(dx, x)
        >>> float(dx.d[0]), float(ddx.d[0])
        (27.0, 18.0)
    """
    outs = [outputs] if isinstance(outputs, Variable) else list(outputs)
    ins = [inputs] if isinstance(inputs, Variable) else list(inputs)
    if grad_outputs is None:
        gos = [None] * len(outs)
    elif isinstance(grad_outputs, (list, tuple)):
        gos = list(grad_outputs)
    else:
        gos = [grad_outputs]
    seeds = tuple(g if g is None or isinstance(g, (int, float)) else np.asarray(g) for g in gos)
    def compute():
        return function_of("grad")(*outs, *ins, n_outputs=len(outs), grad_outputs=seeds)

    # computed now in dynamic mode: under need_grad as it is now, as NNabla's nn.grad reads it
    result = (grad_of_dynamic_graph(outs, ins, seeds, compute)
              if get_auto_forward() else compute())
    return [result] if isinstance(result, Variable) else list(result)
