"""NNabla's function hooks (``nn.set_function_pre_hook`` and the rest) over Stadyn's
(``stadyn.graph.set_function_pre_hook``): the hook gets each op as NNabla shows a function,
``f.info.type_name`` (``"Tanh"``, ``"MulScalar"``: the op's name in CamelCase), ``f.name``,
``f.inputs`` and ``f.outputs`` (Variables), before and after it runs in a static graph's
``forward`` and, in reverse order, its ``backward``.

Example:
    >>> import numpy as np
    >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
    >>> x = nn.Variable.from_numpy_array(np.ones(2))
    >>> y = F.sum(F.tanh(x) * 2.0)
    >>> seen = []
    >>> nn.set_function_pre_hook("log", lambda f: seen.append(f.info.type_name))
    >>> y.forward()
    >>> nn.unset_function_pre_hook("log")
    >>> seen
    ['Tanh', 'MulScalar', 'Sum']
"""

from types import SimpleNamespace

from ...graph import set_function_post_hook as _set_post
from ...graph import set_function_pre_hook as _set_pre
from ...graph import unset_function_post_hook, unset_function_pre_hook

__all__ = ["set_function_pre_hook", "set_function_post_hook", "unset_function_pre_hook",
           "unset_function_post_hook"]


class FunctionView:
    """An op of a running graph as NNabla's hooks see a function: ``info.type_name``,
    ``name``, ``inputs``, ``outputs``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> view = FunctionView(F.mul_scalar(sd.Variable((2,)), 2.0).parent)
        >>> view.info.type_name, len(view.inputs)
        ('MulScalar', 1)
    """

    __slots__ = ("_node", "info")

    def __init__(self, node):
        self._node = node
        self.info = SimpleNamespace(type_name="".join(
            part[:1].upper() + part[1:] for part in node.spec.name.split("_")))

    @property
    def name(self):
        return self.info.type_name

    @property
    def inputs(self):
        return list(self._node.inputs)

    @property
    def outputs(self):
        return self._node.outputs

    def __repr__(self):
        return f"<Function {self.info.type_name}>"


def _viewing(hook):
    if not callable(hook):
        return hook                    # Stadyn's setter names the mistake
    return lambda node: hook(FunctionView(node))


def set_function_pre_hook(key, function_pre_hook):
    """Call ``function_pre_hook(f)`` before each function of a static graph's forward and
    backward runs (NNabla's; see the module)."""
    _set_pre(key, _viewing(function_pre_hook))


def set_function_post_hook(key, function_post_hook):
    """Call ``function_post_hook(f)`` after each function of a static graph's forward and
    backward ran (NNabla's; see the module)."""
    _set_post(key, _viewing(function_post_hook))
