"""``cntk.default_options``: the module behind ``cntk.default_options(...)`` and the global
options (``from cntk.default_options import default_options_for``).

Example:
    >>> import stadyn.compat.cntk as C
    >>> from stadyn.compat.cntk.default_options import default_options, get_default_override
    >>> with default_options(init=0.5):
    ...     get_default_override(None, init=C.default_override_or(1.0))
    0.5
    >>> default_options is C.default_options
    True
"""

from ._defaults import (default_override_or, get_default_override, get_global_option,
                        is_default_override, set_global_option)
from ._layers import default_options, default_options_for

__all__ = ["default_options", "default_options_for", "default_override_or",
           "get_default_override", "get_global_option", "is_default_override",
           "set_global_option"]
