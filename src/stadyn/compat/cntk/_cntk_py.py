"""CNTK's native module (``import _cntk_py``): the few switches scripts call, as no-ops."""

__all__ = ["set_computation_network_trace_level", "set_fixed_random_seed",
           "reset_random_seed", "force_deterministic_algorithms",
           "set_gpumemory_allocation_trace_level", "enable_synchronous_gpukernel_execution",
           "disable_forward_values_sharing"]


def set_computation_network_trace_level(level: int) -> None:
    """Accepted for compatibility; Stadyn has no network trace."""


def set_fixed_random_seed(seed: int) -> None:
    """Reseed Stadyn, and make every parameter initialiser and random Function made afterwards
    with ``seed=auto_select`` use ``seed`` (so they draw the same values, as in CNTK 2.7)."""
    from ..._random import seed as _seed
    from ..._random import set_fixed_seed
    _seed(seed)
    set_fixed_seed(seed)


def reset_random_seed(value: int) -> None:
    """Number the auto-selected seeds (parameter initialisers, random Functions) from ``value``
    again, and unfix a seed :func:`set_fixed_random_seed` fixed, as in CNTK 2.7: after
    ``reset_random_seed(0)`` a program's parameters start from the values they take at the
    start of a process."""
    from ..._random import restart_auto_seeds
    restart_auto_seeds(value)


def force_deterministic_algorithms(enable: bool = True) -> None:
    import torch
    torch.use_deterministic_algorithms(enable, warn_only=True)


# the debugging switches CNTK's Manual_How_to_debug calls (its last cell)
def set_gpumemory_allocation_trace_level(level: int) -> None:
    """Accepted for compatibility; Stadyn does not trace the device's allocations (torch's
    ``torch.cuda.memory`` tools do)."""


def enable_synchronous_gpukernel_execution() -> None:
    """Accepted for compatibility; set ``CUDA_LAUNCH_BLOCKING=1`` before torch starts for
    synchronous kernels."""


def disable_forward_values_sharing() -> None:
    """Accepted for compatibility; Stadyn does not share the memory of forward values between
    nodes, so there is nothing to disable."""
