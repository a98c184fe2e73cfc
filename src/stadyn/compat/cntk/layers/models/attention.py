"""``cntk.layers.models.attention``: ``AttentionModel`` (see ``compat/cntk/_attention.py``)
and the names CNTK 2.7's module imports beside it, which ``from cntk.layers.models.attention
import *`` hands out (the module has no ``__all__``).

Example:
    >>> from stadyn.compat.cntk.layers.models.attention import *
    >>> att = AttentionModel(8, name="att")
    >>> att.name
    'att'
"""

from ..._attention import AttentionModel
from ..._defaults import default_override_or, get_default_override
from ..._function import Function
from ..._layers import Dense, Label, Stabilizer, default_options
from ..._sequence_layers import PastValueWindow
from ...initializer import glorot_uniform

__all__ = ["AttentionModel", "Function", "default_options", "get_default_override",
           "default_override_or", "glorot_uniform", "Dense", "Label", "Stabilizer",
           "PastValueWindow"]
