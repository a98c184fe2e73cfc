"""NNabla's function hooks (``nn.set_function_pre_hook`` and the rest) over Stadyn's
(``stadyn.graph.set_function_pre_hook``): the hook gets each op as NNabla shows a function,
``f.info.type_name`` (``"Tanh"``, ``"MulScalar"``: NNabla's type name), ``f.name``,
``f.inputs`` and ``f.outputs`` (Variables; ``_function.py``), before and after it runs in a
static graph's ``forward`` and, in reverse order, its ``backward``.

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

from ...graph import set_function_post_hook as _set_post
from ...graph import set_function_pre_hook as _set_pre
from ...graph import unset_function_post_hook, unset_function_pre_hook
from ._function import as_function

__all__ = ["set_function_pre_hook", "set_function_post_hook", "unset_function_pre_hook",
           "unset_function_post_hook"]


def _viewing(hook):
    if not callable(hook):
        return hook                    # Stadyn's setter names the mistake
    return lambda node: hook(as_function(node))


def set_function_pre_hook(key, function_pre_hook):
    """Call ``function_pre_hook(f)`` before each function of a static graph's forward and
    backward runs (NNabla's; see the module)."""
    _set_pre(key, _viewing(function_pre_hook))


def set_function_post_hook(key, function_post_hook):
    """Call ``function_post_hook(f)`` after each function of a static graph's forward and
    backward ran (NNabla's; see the module)."""
    _set_post(key, _viewing(function_post_hook))
