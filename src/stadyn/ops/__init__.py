"""The op catalog (one declaration per op) and the functions ``stadyn.functions`` exports."""

from . import _activation, _arith, _cntk, _logical, _loss, _misc, _nn, _reduce, _shape  # noqa: F401
from . import _distributed  # noqa: F401  (ops that communicate: sync_batch_normalization)
from ._gradient import grad
from ._registry import CATALOG, function_of, get_spec, op

__all__ = ["CATALOG", "op", "get_spec", "function_of", "grad"]
