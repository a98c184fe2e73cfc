"""NNabla's further convolutions: ``depthwise_deconvolution`` (the transpose of a depthwise
convolution) and ``deformable_convolution`` (sampling positions moved by learned offsets,
optionally masked), as NNabla 1.39 computes them.

Example:
    >>> import stadyn as sd, stadyn.functions as F
    >>> F.depthwise_deconvolution(sd.Variable((2, 4, 5, 5)), sd.Variable((4, 3, 3)),
    ...                           divisor=2).shape
    (2, 2, 7, 7)
"""

from __future__ import annotations

import torch.nn.functional as TF

from ._registry import op
from ._util import batch_flatten, ntuple

_C = "nn"
_DECONV = {1: TF.conv_transpose1d, 2: TF.conv_transpose2d, 3: TF.conv_transpose3d}


@op(3, category=_C, precision="half")
def depthwise_deconvolution(x, weight, bias=None, base_axis=1, pad=None, stride=None,
                            dilation=None, divisor=1):
    """Depthwise deconvolution (NNabla's): the transpose of a depthwise convolution.  Each
    input channel is deconvolved with its own kernel of ``weight`` ``(C, *kernel)``, and every
    ``divisor`` consecutive input channels are summed into one output channel (``C // divisor``
    of them; ``bias`` ``(C // divisor,)``).  Output size ``(i - 1) * s - 2 p + d (k - 1) + 1``.

    Example:
        >>> import stadyn as sd, stadyn.functions as F
        >>> F.depthwise_deconvolution(sd.Variable((2, 3, 8)), sd.Variable((3, 3)),
        ...                           stride=(2,)).shape
        (2, 3, 17)
    """
    n = weight.ndim - 1
    if n not in _DECONV:
        raise ValueError(f"depthwise_deconvolution: weight {tuple(weight.shape)} must be "
                         "(C, *kernel) with 1 to 3 kernel axes")
    x, batch = batch_flatten(x, base_axis)
    channels, divisor = x.shape[1], int(divisor)
    if weight.shape[0] != channels or divisor < 1 or channels % divisor:
        raise ValueError(f"depthwise_deconvolution: weight {tuple(weight.shape)} must have the "
                         f"input's {channels} channels first, and divisor={divisor} divide them")
    y = _DECONV[n](x, weight.unsqueeze(1), bias, ntuple(stride, n, 1), ntuple(pad, n, 0), 0,
                   channels // divisor, ntuple(dilation, n, 1))
    return y.reshape(tuple(batch) + tuple(y.shape[1:]))
