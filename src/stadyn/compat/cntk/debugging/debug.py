"""``cntk.debugging.debug``: the module of CNTK 2.7's debugging switches (``from
cntk.debugging.debug import set_computation_network_trace_level``); the same functions as
``cntk.debugging`` (``debug_model`` and its ``DEBUG_USAGE`` too).

Example:
    >>> from stadyn.compat.cntk.debugging.debug import set_checked_mode
    >>> set_checked_mode(True); set_checked_mode(False)
"""

from . import set_checked_mode, set_computation_network_trace_level, set_node_timing
from ._debugger import DEBUG_USAGE, debug_model

__all__ = ["set_checked_mode", "set_computation_network_trace_level", "set_node_timing",
           "debug_model", "DEBUG_USAGE"]
