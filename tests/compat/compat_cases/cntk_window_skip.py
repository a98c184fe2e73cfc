"""Auto-padding that CNTK makes negative before the first window: a stride of 3 or more whose
first centre lies more than half a window into the input (``ConvolveGeometry::GetLowerPad``),
so the first positions are skipped.  ``pooling`` (max and average) and ``convolution`` --
values and gradients w.r.t. the input (``op_case``, see cntk_ops.py)."""

import numpy as np

from compat_cases.cntk_ops import op_case


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
