"""NNabla's parameter-scope names that Stadyn's registry offers in another form:
``nn.get_current_parameter_scope()`` and ``nn.no_grad`` (Stadyn's ``stadyn.graph.no_grad``).

Example:
    >>> import stadyn as sd
    >>> import stadyn.compat.nnabla as nn
    >>> with sd.parameter_registry(sd.ParameterRegistry()), nn.parameter_scope("net"):
    ...     _ = sd.get_parameter_or_create("conv/W", (2,))
    ...     list(nn.get_current_parameter_scope()["conv"])
    ['W']
"""

from collections import OrderedDict

from ...graph import no_grad
from ...parametric import get_parameters

__all__ = ["get_current_parameter_scope", "no_grad"]


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
