"""CNTK's semantics over Stadyn's graph, written once for both CNTK front ends.

``stadyn.compat.cntk`` (CNTK's Python API) and ``stadyn.brainscript`` (its config language)
build the same graphs: a CNTK value has per-sample axes and, when it depends on an input, a batch
axis in front (Stadyn's axis 0).  The rules that follow from that live here:

* :class:`BatchAxes` tells which Variables carry the batch axis (those computed from an input);
* :func:`static_axis` turns CNTK's per-sample axis (row-major as CNTK's Python shows shapes, or
  column-major as BrainScript writes them) into a Stadyn axis;
* :func:`times` is CNTK's ``times``: the trailing axes of the data are reduced against the
  weight's leading (input) axes; where the shapes differ it infers the base axis from the number
  of elements, as CNTK does;
* :func:`reshape_sample` reshapes each sample and keeps the batch axis;
* :func:`over_sample` applies an axis function (softmax) over all axes of a sample at once;
* :func:`broadcast_pair` aligns two operands' sample axes on the right, the batch axis apart;
* :func:`divide` is CNTK's division (0 where the divisor is 0), :func:`hardmax` its one-hot
  of each sample's first maximum and :func:`class_ids` the ids its ``OneHotOp`` reads, for
  the compat's ops and for CNTK model files' rules; :func:`log_add_exp` is CNTK's ``LogPlus``
  (``C.log_add_exp`` and BrainScript's ``LogPlus``);
* :func:`sequence_columns` gives a sequence's steps as the columns of CNTK's minibatch (its
  packing of sequences into parallel streams), the order its ranking nodes read them in;
* :func:`cos_distance` is CNTK's ``CosDistance`` (``C.cosine_distance``, BrainScript's
  ``CosDistance`` and a model file's), a zero vector's inverse norm clamped as CNTK clamps it
  (:func:`inverse_norm`), its parts multiplied in the node's order (:func:`cos_distance_of`);
* :func:`cosine_with_negative_samples` is CNTK's ``CosDistanceWithNegativeSamples``
  (``C.cosine_distance_with_negative_samples`` and BrainScript's node);
* :func:`logistic_weights_refused` says which weighted ``Logistic`` CNTK builds but refuses
  when it runs, in its words (``weighted_binary_cross_entropy`` and a file's ``Logistic``);
* :func:`cannot_run` is a sampling op of weights with the batch axis, which CNTK builds and
  saves but cannot evaluate (refused in CNTK's words when it runs);
* :func:`auto_padding`, :func:`convolution` and :func:`pooling`: CNTK's auto-padding (windows
  centred on every ``stride``-th position, ``ceil(size / stride)`` outputs) for convolutions
  and pooling (padding never wins a max; an average counts only the values inside; a stride
  of 3 or more may skip the first positions: a negative padding, which :func:`padded`
  applies), :func:`window_edges` its geometry also for ``ceilOutDim`` and explicit pads,
  :func:`max_unpooling` its inverse;
  :func:`roi_pooling` is CNTK's ``ROIPooling`` (Fast R-CNN's max pooling over regions);
* :func:`crop` is CNTK's ``Crop``, :func:`crop_offsets` the offsets its automatic form finds
  from the graph (the two inputs' pixels mapped back to a common ancestor).

Example:
    >>> import stadyn as sd, stadyn.cntk_semantics as S
    >>> x = sd.Variable((4, 2, 3))            # a batch of 4 samples of shape (2, 3)
    >>> S.times(x, sd.Variable((3, 5)), batched=True).shape
    (4, 2, 5)
    >>> S.reshape_sample(x, (6,), batched=True).shape
    (4, 6)
"""

from ..sequence import reshape_samples
from ._crop import crop, crop_offsets
from ._axes import (BatchAxes, broadcast_pair, input_base_axis, over_sample, reshape_sample,
                    static_axis, times)
from ._cosine import cos_distance, cos_distance_of, inverse_norm
from ._negative_samples import cosine_with_negative_samples
from ._ops import (cannot_run, class_ids, constant_like, divide, hardmax, log_add_exp, logistic,
                   logistic_weights_refused, sequence_columns, straight_through)
from ._windows import (auto_padding, convolution, convolution_transpose, max_unpooling,
                       padded, pooling, refuse_window_beyond_input,
                       refuse_windows_over_free_lengths, roi_pooling, window_edges)

__all__ = ["BatchAxes", "static_axis", "times", "input_base_axis", "reshape_sample",
           "reshape_samples", "over_sample", "broadcast_pair", "auto_padding", "padded",
           "window_edges", "convolution",
           "convolution_transpose", "pooling", "max_unpooling", "divide", "hardmax", "roi_pooling",
           "refuse_window_beyond_input", "refuse_windows_over_free_lengths", "straight_through",
           "logistic", "constant_like", "class_ids", "crop", "crop_offsets", "log_add_exp",
           "sequence_columns", "cannot_run", "cos_distance", "cos_distance_of", "inverse_norm",
           "cosine_with_negative_samples",
           "logistic_weights_refused"]

