"""``PFC.Embed``: a lookup table ``W`` of ``(n_inputs, n_features)``, uniform in
``[-sqrt(3), sqrt(3))`` unless ``w_init``.

NNabla 1.39's class cannot be made (its ``__init__`` reads an undefined name, a
``NameError``); this one makes the table its arguments describe.

Example:
    >>> import numpy as np
    >>> import stadyn.compat.nnabla as nn
    >>> from stadyn.compat.nnabla.experimental.parametric_function_class.embed import Embed
    >>> emb = Embed(10, 4)
    >>> emb(nn.Variable.from_numpy_array(np.array([[1, 2, 3]]))).shape
    (1, 3, 4)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import functions as F
from ...initializer import UniformInitializer
from ._common import parameter
from .module import Module

__all__ = ["Embed"]


class Embed(Module):
    """``F.embed(inp, self.W)``."""

    def __init__(self, n_inputs: int, n_features: int, w_init: Any = None,
                 fix_parameters: bool = False):
        if w_init is None:
            w_init = UniformInitializer((-np.sqrt(3.0), np.sqrt(3.0)))
        self.W = parameter(w_init, (n_inputs, n_features), not fix_parameters)

    def __call__(self, inp: Any) -> Any:
        return F.embed(inp, self.W)
