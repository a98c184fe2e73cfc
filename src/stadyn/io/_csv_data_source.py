"""NNabla's CSV data sets: one sample per row, values given inline or as files.

The header names the variables: ``x`` (a column of its own), ``x__0, x__1, ...`` (one variable
made of several columns), each optionally labelled ``x:image``; columns whose name starts with
``#`` are comments.  A cell holds a number or a file name relative to the CSV file (an image,
``.csv``, ``.npy`` or ``.wav``; see ``stadyn.io._data_loader``).  A one-column variable's
value is ``[number]`` or the file's array, a several-column one's the list of numbers -- as
NNabla 1.39 returns them.
"""

from __future__ import annotations

import collections
import csv
import os
from typing import Any

import numpy as np

from .._errors import DataError
from ._data_loader import FileReader, load
from ._data_source import DataSource

__all__ = ["CsvDataSource"]


class CsvDataSource(DataSource):
    """The rows of a data set CSV file (see the module docstring); with ``normalize``,
    images are scaled to ``[0, 1]``; with ``shuffle``, each epoch is a permutation drawn
    from ``rng``.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "train.csv")
        >>> with open(path, "w") as f:
        ...     _ = f.write("x__0,x__1,y\\n1,2,0\\n3,4,1\\n")
        >>> source = CsvDataSource(path)
        >>> source.variables, source.next()
        (('x', 'y'), ([1.0, 2.0], [0.0]))
    """

    def __init__(self, filename: str, shuffle: bool = False,
                 rng: np.random.RandomState | None = None, normalize: bool = False):
        super().__init__(shuffle=shuffle, rng=rng)
        self._filename = os.fspath(filename)
        self._normalize = bool(normalize)
        self._reader = FileReader(self._filename)
        with self._reader.open(textmode=True, encoding="utf-8-sig") as f:
            rows = list(csv.reader(f))
        if not rows:
            raise DataError("the data set CSV file is empty (it needs a header row)",
                            self._filename, 1)
        header, self._rows = rows[0], rows[1:]
        self._drop_comment_columns(header)
        self._columns: list[tuple[str, str | None]] = []
        variables: collections.OrderedDict[str, None] = collections.OrderedDict()
        for cell in header:
            name = cell.split(":", 1)[0]
            variable, _, index = name.partition("__")
            self._columns.append((variable, index if _ else None))
            variables[variable] = None
        self._size = len(self._rows)
        self._original_source_uri = self._filename
        self._original_order = list(range(self._size))
        self._order = list(range(self._size))
        self._variables = tuple(variables)
        self.reset()

    def _drop_comment_columns(self, header: list[str]) -> None:
        for k in reversed(range(len(header))):
            if header[k].startswith("#"):
                del header[k]
                for row in self._rows:
                    if k < len(row):
                        del row[k]

    def _value(self, cell: str, row: int, one_column: bool) -> Any:
        try:
            number = float(cell)
        except ValueError:
            pass
        else:
            return [number] if one_column else number
        ext = os.path.splitext(cell)[1].lower()
        try:
            reader = load(ext)
        except DataError:
            raise DataError(f"{cell!r} is neither a number nor a file of a known kind",
                            self._filename, row + 2) from None
        with self._reader.open(cell) as f:
            return reader(f, normalize=self._normalize)

    def _get_data(self, position: int) -> tuple[Any, ...]:
        index = self._order[position]
        row = self._rows[index]
        if len(row) != len(self._columns):
            raise DataError(f"{len(row)} values where the header has {len(self._columns)} "
                            f"columns", self._filename, index + 2)
        values: collections.OrderedDict[str, Any] = collections.OrderedDict()
        for cell, (variable, part) in zip(row, self._columns):
            if part is None:
                values[variable] = self._value(cell, index, True)
            else:
                values.setdefault(variable, []).append(self._value(cell, index, False))
        return tuple(values.values())

    def reset(self) -> None:
        if self._shuffle:
            self._order = list(self._rng.permutation(list(range(self._size))))
        self._generation += 1
        super().reset()

    def get(self, index: int) -> tuple[np.ndarray, ...]:
        saved, self._order = self._order, self._original_order
        try:
            return tuple(np.asarray(v) for v in self._get_data(int(index)))
        finally:
            self._order = saved
