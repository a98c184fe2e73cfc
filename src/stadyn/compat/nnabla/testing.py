"""``nnabla.testing``: ``assert_allclose``, the comparison NNabla's own tests and its users'
tests import.

It is NumPy's ``numpy.testing.assert_allclose`` with ``numpy.allclose``'s tolerances as the
defaults (``rtol=1e-5``, ``atol=1e-6``) and NaNs equal, as in NNabla 1.39
(``python/src/nnabla/testing/__init__.py``).  NNabla's ``clear_called_flag_recorder`` (a
recorder inside its C++ graph engine) has no counterpart.

Example:
    >>> import numpy as np
    >>> from stadyn.compat.nnabla.testing import assert_allclose
    >>> assert_allclose(np.float32(1.0) + 1e-7, 1.0)      # within atol=1e-6
    >>> assert_allclose([np.nan], [np.nan])               # NaNs compare equal
"""

from __future__ import annotations

import numpy as np

__all__ = ["assert_allclose"]


def assert_allclose(actual, desired, rtol=1e-5, atol=1e-6, equal_nan=True, err_msg='',
                    verbose=True):
    """``numpy.testing.assert_allclose(actual, desired, ...)`` with ``numpy.allclose``'s
    tolerances by default; raises ``AssertionError`` where they differ.

    Example:
        >>> assert_allclose(np.ones(3), np.ones(3) * (1 + 1e-6))
    """
    np.testing.assert_allclose(actual, desired, rtol=rtol, atol=atol, equal_nan=equal_nan,
                               err_msg=err_msg, verbose=verbose)
