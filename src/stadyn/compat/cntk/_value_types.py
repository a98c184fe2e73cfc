"""The data types CNTK 2.7 gives what it makes from values: a constant's and a parameter's
(from the value's, or float32), an input's (``default_options(dtype=...)``'s)."""

from __future__ import annotations

import numpy as np

from ...layers import default_override_or

__all__ = ["value_dtype", "parameter_dtype", "input_dtype"]


def value_dtype(value, dtype) -> np.dtype:
    """The data type of a constant made from ``value`` with ``dtype`` (None: CNTK 2.7's rule:
    a float64 or float16 NumPy array's type, anything else float32).

    >>> value_dtype(np.zeros(2), None), value_dtype([1.0], None), value_dtype(1.0, np.float64)
    (dtype('float64'), dtype('float32'), dtype('float64'))
    """
    if dtype is None:
        dtype = value.dtype if isinstance(value, np.ndarray) and value.dtype in _OWN_TYPES \
            else np.float32
    return np.dtype(dtype)


_OWN_TYPES = (np.dtype(np.float64), np.dtype(np.float16))


def parameter_dtype(value, dtype) -> np.dtype:
    """A parameter's data type (as :func:`value_dtype`): float64, float16 (which CNTK 2.7
    computes in on a CPU but does not train there: ``Trainer.train_minibatch``) or float32."""
    dt = value_dtype(value, dtype)
    return dt if dt in _OWN_TYPES else np.dtype(np.float32)


def input_dtype(dtype) -> np.dtype:
    """An input's data type: ``dtype``, or ``default_options(dtype=...)``'s, else float32."""
    from ...layers import resolve
    return np.dtype(resolve(None, "dtype", default_override_or(np.float32)
                            if dtype is None else dtype))
