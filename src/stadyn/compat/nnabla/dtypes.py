"""``nnabla.dtypes``: NNabla's numbering of NumPy's scalar types (its C++ ``dtypes`` enum:
``bool`` 0, ... ``float32`` 11, ``float64`` 12, ``longdouble`` 13), ``np_dtpye_to_int`` (NNabla's
spelling) and its inverse ``int_to_np_dtype``.

Example:
    >>> import numpy as np
    >>> np_dtpye_to_int[np.float32], int_to_np_dtype[5] is np.int32
    (11, True)
"""

import numpy as np

__all__ = ["np_dtpye_to_int", "int_to_np_dtype"]

# (type, number) in the order NNabla lists them: a later type of the same number (int64 after
# longlong) is the one the inverse gives.
_NUMBERS = [(bool, 0), (np.byte, 1), (np.ubyte, 2), (np.short, 3), (np.ushort, 4),
            (np.int32, 5), (np.uint32, 6), (np.longlong, 9), (np.int64, 9),
            (np.ulonglong, 10), (np.uint64, 10), (np.float32, 11), (np.double, 12),
            (np.longdouble, 13)]

np_dtpye_to_int = dict(_NUMBERS)
int_to_np_dtype = {number: t for t, number in np_dtpye_to_int.items()}
