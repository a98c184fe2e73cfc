"""``nnabla.functions`` on Stadyn (the op catalog under NNabla's names).

Each function also takes ``nn.NdArray``s, as NNabla's do: it then computes at once and gives
NdArrays back (NNabla's imperative mode, ``_ndarray.py``); with Variables it is the catalog's
``F`` function.  NNabla's functions that are compositions of catalog ops (``broadcast_to``,
``reduce_mean``, ``reduce_sum``, ``logical_*_scalar``, ``binary_error``,
``epsilon_insensitive_loss``, ``multi_head_attention``) come from ``_composed.py``.

Not here (NNabla 1.39's module has them): the machinery it builds its functions with
(``function_api``, which writes each function from a source template with ``exec``,
``FUNCTION_API_HEADER``, ``FUNCTION_API_BODY``) and ``BatchNormalizationInOutAdapter``, an
internal helper of its batch normalisation (``benchmarks/compat_coverage.py --missing nnabla``
lists them).  It also holds ``get_auto_forward`` and ``get_current_context``, ``nnabla``'s own.

Left out: the ops that exist only for CNTK's semantics (``cntk_*``), and the ops of Stadyn's
sequence axis (category ``sequence``: ``past_value``, ``sequence_last``, ``recurrence``, ...):
NNabla has no sequence axis, and they read lengths NNabla programs do not have.  And Stadyn's
debugging probe ``trace`` (category ``debug``; ``sd.trace``) and ``store`` (category
``parameter``: how Stadyn's quantised layers write NNabla's ``W_q``), which NNabla does not have.
And the ops declared for other front ends only (``@op(..., frameworks=("cntk",))``: CNTK's
random, sampling and ranking Functions ``cntk.random.*_like``, ``random_sample``,
``lambda_rank``, ``ndcg_at_1``, CTC's ``cntk_forward_backward`` and
``cntk_edit_distance_error``; checked on NNabla 1.39: none of these names exists in
``nnabla.functions``).
"""

from ... import functions as _F
from ...ops import CATALOG as _CATALOG
from ._ndarray import accepting_ndarrays as _accepting_ndarrays



def _offered(names, catalog) -> list[str]:
    """The names of ``names`` (op names of ``catalog``) that NNabla's ``F`` offers."""
    return [n for n in names
            if not n.startswith("cntk_") and catalog[n].offered_by("nnabla")
            and catalog[n].category not in ("sequence", "debug", "parameter")]


__all__ = _offered(_F.__all__, _CATALOG)
globals().update({_n: _accepting_ndarrays(getattr(_F, _n)) for _n in __all__})

# NNabla's functions that are compositions of catalog ops (``_composed.py``).
from . import _composed as _composed  # noqa: E402

__all__ += _composed.__all__
globals().update({_n: _accepting_ndarrays(getattr(_composed, _n)) for _n in _composed.__all__})

# NNabla's ``functions`` module also holds (imported there) the mode and context getters.
from ...graph import get_auto_forward, get_current_context  # noqa: E402

__all__ += ["get_auto_forward", "get_current_context"]
