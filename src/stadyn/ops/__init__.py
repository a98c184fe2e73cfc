"""The op catalog (one declaration per op) and the functions ``stadyn.functions`` exports.

Besides the catalog, the ops share how they read their attributes with the layers that map
them to file formats (``stadyn.serialize``'s op rules), so that a mapping computes what the op
computes: :func:`ntuple`, :func:`norm_axis`, :func:`norm_axes`, the pooling geometry
(:func:`pool_geometry`, :func:`window_counts`), ``interpolate``'s sizes and coordinates
(:func:`interpolation_size`, :func:`interpolation_source`), ``shift``'s source positions
(:func:`shift_index`) and the types ``cast`` converts to
(:data:`CAST_DTYPES`).  What carries a recurrence's state between runs reads where a
recurrence node keeps its states from :func:`recurrence_states` and the fused LSTM's cells from
:func:`lstm_cells`.
"""

from . import _activation, _arith, _cntk, _logical, _loss, _misc, _nn, _reduce, _shape  # noqa: F401
from . import _compare, _elementwise, _index, _normalization  # noqa: F401
from . import _random, _resample, _trig  # noqa: F401
from . import _random_like  # noqa: F401  (random values of another value's shape: CNTK's)
from . import _cntk_draws  # noqa: F401  (CNTK 2.7's own random numbers: CNTKStream)
from . import _ranking  # noqa: F401  (CNTK's ranking criteria: lambda_rank, ndcg_at_1)
from . import _augment  # noqa: F401  (data augmentation: random_flip, _shift, _crop)
from . import _augment_image  # noqa: F401  (random_erase, image_augmentation)
from . import _binary, _grid, _linalg, _quantize, _rescale  # noqa: F401
from . import _nnabla_extra  # noqa: F401  (NNabla's scatter_nd)
from . import _nnabla_array, _nnabla_grad, _nnabla_index  # noqa: F401  (NNabla's flip, ...)
from . import _nnabla_stateful  # noqa: F401  (NNabla's mean_subtraction)
from . import _cntk_stateful  # noqa: F401  (CNTK's EpochAccumulator)
from . import _signal  # noqa: F401  (NNabla's fft, ifft, stft, istft)
from . import _nnabla_vision  # noqa: F401  (NNabla's roi_align, warp_by_flow)
from . import _nnabla_sampling  # noqa: F401  (NNabla's random_choice)
from . import _nnabla_values  # noqa: F401  (nonzero, unique, ...: shapes that depend on values)
from . import _nnabla_tensor  # noqa: F401  (NNabla's bc_add2, prune, batch_cholesky)
from . import _nnabla_conv  # noqa: F401  (NNabla's depthwise_deconvolution, ...)
from . import _nnabla_qlinear  # noqa: F401  (NNabla's quantize_linear, dequantize_linear)
from . import _nnabla_inq  # noqa: F401  (NNabla's inq_affine, inq_convolution)
from . import _nnabla_vat  # noqa: F401  (NNabla's vat_noise)
from . import _nnabla_onnx  # noqa: F401  (NNabla's onnx_resize, onnx_non_max_suppression)
from . import _python  # noqa: F401  (an op of Python code: NNabla's PythonFunction)
from . import _random_more  # noqa: F401  (NNabla's rand_binomial, rand_gamma, rand_beta)
from . import _distributed  # noqa: F401  (ops that communicate: sync_batch_normalization)
from . import _recurrence, _rnn, _sequence  # noqa: F401  (the sequence axis; recurrences)
from . import _sequence_where  # noqa: F401  (ops that make a new sequence axis)
from . import _sequence_rnn  # noqa: F401  (recurrences run whole: fused kernels, rnn stacks)
from . import _trace  # noqa: F401  (F.trace, a value probe)
from . import _ctc  # noqa: F401  (CNTK's CTC criterion and edit distance error)
from . import _cntk_nodes  # noqa: F401  (cntk.exe's EnvironmentInput, GatherPacked's columns)
from . import _roi_pool  # noqa: F401  (CNTK's max pooling over bins: its ROIPooling)
from ._gradient import grad
from ._grid import shift_index
from ._misc import CAST_DTYPES
from ._nn import pool_geometry, window_counts
from ._resample import interpolation_size, interpolation_source
from ._trace import reset_trace_counts
from ._recurrence import StepFunction
from ._random import RandomStream
from ._cntk_draws import CNTKStream
from ._cntk_nodes import check_environment_property
from ._nnabla_inq import INQState
from ._picks import kernels_as_torch_ops
from ._keyed_draws import generator_key, keyed_draw_op
from ._sequence_rnn import lstm_cells, rnnstack_parameters, rnnstack_weight_count
from ._recurrence_states import RECURRENCES, RecurrenceStates, recurrence_states
from ._registry import CATALOG, function_of, get_spec, op
from ._util import norm_axes, norm_axis, ntuple

__all__ = ["CATALOG", "op", "get_spec", "function_of", "grad", "ntuple", "norm_axis", "norm_axes",
           "pool_geometry", "window_counts", "CAST_DTYPES", "interpolation_size",
           "interpolation_source", "StepFunction", "reset_trace_counts", "shift_index",
           "RandomStream", "CNTKStream", "INQState", "rnnstack_parameters", "rnnstack_weight_count",
           "lstm_cells", "RECURRENCES", "RecurrenceStates", "recurrence_states",
           "kernels_as_torch_ops", "check_environment_property", "generator_key",
           "keyed_draw_op"]
