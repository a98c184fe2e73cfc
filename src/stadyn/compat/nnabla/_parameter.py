"""NNabla's parameter-scope names that Stadyn's registry offers in another form:
``nn.get_current_parameter_scope()`` and ``nn.no_grad`` (Stadyn's ``stadyn.graph.no_grad``);
``nn.get_parameters`` / ``nn.get_parameter_or_create``, which give the parameters as NNabla's
Variables (``.data`` / ``.grad`` NdArrays: ``_variable.py``).

Example:
    >>> import stadyn as sd
    >>> import stadyn.compat.nnabla as nn
    >>> with sd.parameter_registry(sd.ParameterRegistry()), nn.parameter_scope("net"):
    ...     _ = sd.get_parameter_or_create("conv/W", (2,))
    ...     list(nn.get_current_parameter_scope()["conv"])
    ['W']
"""

import functools
from collections import OrderedDict

from ...graph import no_grad
from ... import parametric as _parametric
from ._variable import as_nnabla

__all__ = ["get_current_parameter_scope", "no_grad", "get_parameters", "get_parameter_or_create"]


@functools.wraps(_parametric.get_parameters)
def get_parameters(*args, **kwargs):
    return as_nnabla(_parametric.get_parameters(*args, **kwargs))


@functools.wraps(_parametric.get_parameter_or_create)
def get_parameter_or_create(*args, **kwargs):
    # NNabla's: asking for an existing parameter with another need_grad sets its flag
    kwargs.setdefault("overwrite_need_grad", True)
    return as_nnabla(_parametric.get_parameter_or_create(*args, **kwargs))


def get_current_parameter_scope():
    """The parameters under the current scope as NNabla shows them: nested ``OrderedDict``s,
    one level per scope name, with the parameter Variables at the leaves, in creation order
    (``{"conv": {"W": ..., "b": ...}}``).  It is a snapshot: Stadyn keeps its parameters in a
    registry keyed by path, so adding to this dict registers nothing (NNabla gives its live
    scope dict).

    Example:
        >>> import stadyn as sd
        >>> import stadyn.compat.nnabla as nn
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     _ = sd.get_parameter_or_create("a/W", (1,))
        ...     scope = nn.get_current_parameter_scope()
        ...     scope["a"]["W"].shape
        (1,)
    """
    root = OrderedDict()
    for path, var in get_parameters(grad_only=False).items():
        *scopes, leaf = path.split("/")
        node = root
        for name in scopes:
            node = node.setdefault(name, OrderedDict())
        node[leaf] = var
    return root
