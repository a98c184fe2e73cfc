"""CNTK's native module (``import _cntk_py``): the few switches scripts call, as no-ops."""

__all__ = ["set_computation_network_trace_level", "set_fixed_random_seed",
           "force_deterministic_algorithms"]


def set_computation_network_trace_level(level: int) -> None:
    """Accepted for compatibility; Stadyn has no network trace."""


# The seed set_fixed_random_seed fixed: what every auto-selected random seed becomes (CNTK's
# rule), read by ``cntk.random``; None until it is called.
_fixed_seed = None


def set_fixed_random_seed(seed: int) -> None:
    """Reseed Stadyn, and make every random Function made afterwards with
    ``seed=auto_select`` use ``seed`` (so they draw the same values, as in CNTK)."""
    global _fixed_seed
    from ..._random import seed as _seed
    _seed(seed)
    _fixed_seed = int(seed)


def force_deterministic_algorithms(enable: bool = True) -> None:
    import torch
    torch.use_deterministic_algorithms(enable, warn_only=True)
