"""A parameter's initial value written as text: ``init = "fromLiteral"`` with
``initFromLiteral = "..."`` and ``initFromFilePath = "..."`` of BrainScript's ``Parameter`` and
``ParameterTensor``, read as cntk.exe reads them.

The text is a matrix, one row a line, its numbers separated by white space (cntk.exe's
``File::LoadMatrixFromStringLiteral`` and ``LoadMatrixFromTextFile``): lines are split at CR
and LF, blank lines are skipped, every row must have as many numbers as the first.  The
matrix then fills the parameter as ``LearnableParameter::InitFromArray`` does: dimensions
given as 0 are inferred (the first from the rows; one other from the columns, a rank-1 shape
growing a second axis for a matrix of more than one column), and the ``[rows x cols]``
matrix, column-major, is read as the column-major tensor of those dimensions.

Example:
    >>> from stadyn.brainscript._text_matrix import read_text_matrix, fill_dims
    >>> m = read_text_matrix("1 2 3\\n4 5 6", "initFromLiteral")
    >>> m.tolist()
    [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    >>> dims, value = fill_dims((0,), m, "ParameterTensor")
    >>> dims, value.tolist()          # [2 x 3] column-major: Stadyn's (3, 2)
    ((2, 3), [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]])
"""

from __future__ import annotations

import re

import numpy as np

from .._errors import ConfigError

__all__ = ["read_text_matrix", "fill_dims"]


def read_text_matrix(text: str, where: str, what: str = "") -> np.ndarray:
    """The ``[rows x cols]`` matrix ``text`` writes (one row a line); ``where`` names the text
    in errors (``initFromLiteral``, a file's path), after ``what`` (the function) if given.

    Example:
        >>> read_text_matrix("\\n 0.5  -25e-2 \\r\\n\\n 2 3\\n", "x").tolist()
        [[0.5, -0.25], [2.0, 3.0]]
    """
    where = f"{what}: {where}" if what else where
    rows: list[list[float]] = []
    for line in re.split(r"[\r\n]+", text):
        if not line.strip(" "):          # cntk.exe skips lines of blanks, CRs and LFs only
            continue
        row = []
        for token in line.split():
            try:
                row.append(float(token))
            except ValueError:
                raise ConfigError(f"{where}: malformed number '{token[:15]}' in row "
                                  f"{len(rows)}") from None
        if rows and len(row) != len(rows[0]):
            raise ConfigError(f"{where}: row {len(rows)} has {len(row)} numbers, the rows "
                              f"before it {len(rows[0])}")
        rows.append(row)
    if not rows or not rows[0]:
        raise ConfigError(f"{where}: holds no numbers")
    return np.asarray(rows, np.float32)


def fill_dims(dims: tuple[int, ...], matrix: np.ndarray, what: str
              ) -> tuple[tuple[int, ...], np.ndarray]:
    """The CNTK dimensions (column-major) of a parameter of ``dims`` filled from ``matrix``
    and its value in Stadyn's order (the dimensions reversed); ``what`` names the function
    in errors.

    Example:
        >>> import numpy as np
        >>> fill_dims((2, 0), np.arange(6, dtype=np.float32).reshape(2, 3), "Parameter")[0]
        (2, 3)
    """
    rows, cols = matrix.shape
    dims = tuple(int(d) for d in dims)
    shown = "[" + " x ".join(map(str, dims)) + "]"
    if 0 in dims or not dims:
        grown = list(dims) or [0]
        if len(grown) == 1 and cols != 1:
            grown.append(0)
        if grown[0] == 0:
            grown[0] = rows
        zeros = [k for k in range(1, len(grown)) if grown[k] == 0]
        if len(zeros) > 1:
            raise ConfigError(f"{what}: the shape {shown} cannot be inferred: too many "
                              "unknown dimensions")
        if zeros:
            known = int(np.prod([d for d in grown[1:] if d]))
            grown[zeros[0]] = cols // known
            if known * grown[zeros[0]] != cols:
                raise ConfigError(f"{what}: the shape {shown} cannot hold a [{rows} x {cols}] "
                                  "matrix")
        dims = tuple(grown)
    if int(np.prod(dims)) != rows * cols or dims[0] != rows:
        raise ConfigError(f"{what}: the shape {shown} does not fit a [{rows} x {cols}] matrix")
    # the matrix column-major is the tensor column-major: Stadyn's C order of reversed dims
    value = np.ascontiguousarray(matrix.T).reshape(tuple(reversed(dims)))
    return dims, value
