"""CNTK's window geometry: auto-padding that CNTK makes negative before the first window (a
stride of 3 or more whose first centre lies more than half a window into the input,
``ConvolveGeometry::GetLowerPad``, so the first positions are skipped) and ``ceil_out_dim``
(a last window hanging over the end).  ``pooling`` (max and average), ``convolution`` and
``convolution_transpose`` -- values and gradients w.r.t. the input (``op_case``, see
cntk_ops.py) -- and ``SequentialConvolution`` (``seq_case``, see cntk_sequence.py)."""

import numpy as np

from compat_cases.cntk_ops import op_case
from compat_cases.cntk_sequence import seq_case


def _kernel(shape):
    return np.arange(1, int(np.prod(shape)) + 1, dtype=np.float32).reshape(shape) / 10.0


# a window of 2 every 3 over 9: centres at 1, 4, 7 (the first position skipped)
op_case("pooling__skip_max",
        lambda C, x: C.pooling(x, C.MAX_POOLING, (2, 2), (3, 3), auto_padding=[False, True, True]),
        [(2, 8, 9)], names=["cntk.ops.pooling"])
# a window of 3 every 5 over 10: windows 1..3 and 6..8
op_case("pooling__skip_average",
        lambda C, x: C.pooling(x, C.AVG_POOLING, (3, 3), (5, 5), auto_padding=[False, True, True]),
        [(1, 10, 10)], names=["cntk.ops.pooling"])
# a window of 1 every 3 over 6: positions 1 and 4
op_case("convolution__skip",
        lambda C, x: C.convolution(C.constant(_kernel((2, 3, 1, 2))), x, (3, 3),
                                   auto_padding=[False, True, True]),
        [(3, 6, 9)], names=["cntk.ops.convolution"])
# the same, the padding counted as zeros (include_pad): rows 1..3 and 6..8 of 10 (the first
# skipped), columns -1..1, 4..6 and 9..11 of 12 (one of padding before)
op_case("pooling__skip_average_include_pad",
        lambda C, x: C.pooling(x, C.AVG_POOLING, (3, 3), (5, 5), auto_padding=[False, True, True],
                               include_pad=True),
        [(1, 10, 12)], names=["cntk.ops.pooling"])
# the transpose of a 2-wide convolution every 3 over 6 (output_shape): position 0, which the
# convolution's windows skip, gets nothing (zeros); Stadyn put the windows from position 0
op_case("convolution_transpose__skip",
        lambda C, x: C.convolution_transpose(C.constant(_kernel((3, 2, 2, 2))), x, (3, 3),
                                             auto_padding=[False, True, True],
                                             output_shape=(2, 6, 6)),
        [(3, 2, 2)], names=["cntk.ops.convolution_transpose"])
# a window of 2 every 3 over 9 steps' cells (the sequence axis' filter of 1): cells 1-2, 4-5,
# 7-8 (Stadyn: 0-1, 3-4, 6-7)
seq_case("SequentialConvolution__skip",
         lambda C, x: C.layers.SequentialConvolution((1, 2), 2, pad=True, strides=(1, 3))(x),
         step_shape=(2, 9), names=["cntk.layers.SequentialConvolution"], params=True)
# ceil_out_dim=True: a window of 3 every 2 over 6 has a last window hanging over the end by one
# (3 outputs, not 2), over 7 none; the overhang never wins a max, an average counts only the
# values inside unless include_pad (then the window's 9 cells, the overhang as zeros)
op_case("pooling__ceil_max",
        lambda C, x: C.pooling(x, C.MAX_POOLING, (3, 3), (2, 2), ceil_out_dim=True),
        [(2, 6, 7)], names=["cntk.ops.pooling"])
op_case("pooling__ceil_average",
        lambda C, x: C.pooling(x, C.AVG_POOLING, (3, 3), (2, 2), ceil_out_dim=True),
        [(2, 6, 7)], names=["cntk.ops.pooling"])
op_case("pooling__ceil_average_include_pad",
        lambda C, x: C.pooling(x, C.AVG_POOLING, (3, 3), (2, 2), ceil_out_dim=True,
                               include_pad=True),
        [(2, 6, 7)], names=["cntk.ops.pooling"])
# with auto-padding on the width (CNTK 2.7's CPU engine reads past the sample where an
# auto-padded window hangs over the height, so that is not compared): a window of 3 every 2
# over 6 columns, 4 outputs centred from column 0 (C++'s rounding toward zero)
op_case("pooling__ceil_average_auto",
        lambda C, x: C.pooling(x, C.AVG_POOLING, (3, 3), (2, 2), auto_padding=[False, False, True],
                               ceil_out_dim=True),
        [(2, 5, 6)], names=["cntk.ops.pooling"])
