"""How each catalog op is written to and read from file formats: one record per op, registered
against the op's spec object.

The op modules (``stadyn/ops/``) are the catalog and know nothing of file formats.  For each op
the module here that mirrors its op module (``_nn.py`` for ``ops/_nn.py``, its pooling ops'
in ``_nn_pooling.py``, ...) registers one :class:`OpRules` record with
``register_rules(F.convolution, onnx_export=..., onnx_import=...)``: the op's rules for every
format sit side by side, each column either a rule or
:class:`Unmapped` with the one-line reason the op has none.  The exporter and the importer look
a node's rules up by its spec (:func:`rules_for`); nothing is looked up by name.

Adding a format is adding a column: a field of :class:`OpRules` (say ``nnp``), filled in the same
``register_rules`` call of every op, read by the format's writer through :func:`rules_for`; the
completeness test (``tests/serialize/test_op_rules.py``) then names every op that declares
neither a rule nor a reason for it.

Example:
    >>> import stadyn.functions as F
    >>> from stadyn.serialize import rules_for
    >>> rules = rules_for(F.relu6)
    >>> rules.onnx_export.__doc__, rules.onnx_import.reason
    ('Clip', 'ONNX has no ReLU6: the export (Clip) imports as clip_by_value_scalar')
"""

from . import _activation, _arith, _cntk, _distributed, _logical, _loss, _misc  # noqa: F401
from . import _gradient, _nn, _nn_pooling, _reduce, _sequence, _shape  # noqa: F401
from . import _compare, _elementwise, _index, _normalization, _random, _resample  # noqa: F401
from . import _augment, _trig  # noqa: F401
from . import _random_like, _ranking, _sequence_rnn  # noqa: F401
from . import _ctc  # noqa: F401
from ._user_function import register_user_function_loader  # (CNTK's user functions)
from . import _roi_pool  # noqa: F401  (CNTK's ROIPooling)
from . import _binary, _grid, _linalg, _quantize, _rescale  # noqa: F401
from . import _nnabla_more  # noqa: F401
from . import _nnabla_tensor, _nnabla_vision, _signal  # noqa: F401  (NNabla's, fft, ...)
from ._table import OpRules, Unmapped, kept_in_model_files, register_rules, rules_for

__all__ = ["OpRules", "Unmapped", "register_rules", "rules_for", "kept_in_model_files",
           "register_user_function_loader"]
