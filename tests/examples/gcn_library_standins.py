"""Stand-ins for the three libraries nnabla-examples' ``graph-neural-networks/GCN`` reads Cora
with (``utils.load_cora`` and ``normalize_adj``), for its runs on NNabla 1.39 and on Stadyn
alike: pandas (in neither environment here), networkx 2.x (NNabla's has none; Stadyn's is 3.x,
whose ``adjacency_matrix`` gives a sparse array that ``normalize_adj``'s
``np.array(np.sum(A, axis=0))[0]`` turns into a scalar) and scikit-learn's ``LabelEncoder``
(NNabla's has none).  Each does what ``utils.py`` asks of it, as the library does it:

* ``pandas.read_csv(path, sep, header=None, names=...)``: the fields of each line, numbers
  as integers; a line with one field more than ``names`` gives its first field as the row's
  label (the index), as pandas does; ``DataFrame.sample(frac=1)`` draws its rows' order with
  ``np.random``'s global generator as pandas does (``choice(n, size, replace=False)``);
  ``reindex(index=...)``, ``iloc[rows, columns]``, ``df[column]``.
* ``networkx.from_pandas_edgelist(df)`` (columns ``source`` and ``target``): a graph whose
  nodes are in the order the edges first name them; ``adjacency_matrix(G)`` a SciPy sparse
  matrix (networkx 2.x's), symmetric, one per edge, in that order.
* ``sklearn.preprocessing.LabelEncoder().fit_transform(y)``: each value's place among the
  sorted distinct values.

:func:`installed` puts them in ``sys.modules`` for the block it covers.
"""

import contextlib
import importlib.machinery
import sys
import types

import numpy as np


def _field(text):
    try:
        return int(text)
    except ValueError:
        return text


class _Positions:
    def __init__(self, frame):
        self._frame = frame

    def __getitem__(self, key):
        rows, columns = key
        return np.array([row[columns] for row in self._frame._rows[rows]])


class DataFrame:
    """Rows of fields, named ``columns``, labelled ``index``."""

    def __init__(self, rows, columns, index=None):
        self._rows = np.empty(len(rows), dtype=object)
        self._rows[:] = [list(r) for r in rows]
        self.columns = list(columns)
        self.index = list(range(len(rows)) if index is None else index)

    def __len__(self):
        return len(self._rows)

    def __getitem__(self, column):
        j = self.columns.index(column)
        return np.array([row[j] for row in self._rows])

    @property
    def iloc(self):
        return _Positions(self)

    def sample(self, frac=1.0):
        order = np.random.choice(len(self), size=int(round(frac * len(self))), replace=False)
        return DataFrame(self._rows[order], self.columns, [self.index[i] for i in order])

    def reindex(self, index):
        where = {label: i for i, label in enumerate(self.index)}
        return DataFrame(self._rows[[where[label] for label in index]], self.columns, index)


def read_csv(path, sep=",", header=None, names=None):
    """The table of the file at ``path`` (``header=None``, ``names`` given)."""
    assert header is None and names is not None
    with open(path) as f:
        lines = [line.rstrip("\n").split(sep) for line in f if line.strip()]
    rows = [[_field(v) for v in fields] for fields in lines]
    if rows and len(rows[0]) == len(names) + 1:
        return DataFrame([r[1:] for r in rows], names, [r[0] for r in rows])
    return DataFrame(rows, names)


class Graph:
    """An undirected graph: nodes in the order first named, each node's neighbours."""

    def __init__(self):
        self._adjacent = {}

    @property
    def nodes(self):
        return self._adjacent

    def add_edge(self, u, v):
        self._adjacent.setdefault(u, {})
        self._adjacent.setdefault(v, {})
        self._adjacent[u][v] = self._adjacent[v][u] = 1


def from_pandas_edgelist(df, source="source", target="target"):
    graph = Graph()
    for u, v in zip(df[source], df[target]):
        graph.add_edge(u, v)
    return graph


def adjacency_matrix(graph):
    """networkx 2.x's: a ``scipy.sparse`` matrix, rows and columns in the nodes' order."""
    import scipy.sparse
    place = {node: i for i, node in enumerate(graph.nodes)}
    rows, cols = [], []
    for u, neighbours in graph.nodes.items():
        for v in neighbours:
            rows.append(place[u])
            cols.append(place[v])
    return scipy.sparse.csr_matrix((np.ones(len(rows), dtype=np.int64), (rows, cols)),
                                   shape=(len(place), len(place)))


class LabelEncoder:
    def fit_transform(self, y):
        self.classes_, codes = np.unique(np.asarray(y), return_inverse=True)
        return codes


def _module(name):
    """An empty module with a spec (of no file): ``importlib.util.find_spec`` asks for one
    (torch's ``_dynamo`` looks networkx up when it is first imported)."""
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    return module


def _modules():
    pandas = _module("pandas")
    pandas.DataFrame, pandas.read_csv = DataFrame, read_csv
    networkx = _module("networkx")
    networkx.Graph, networkx.from_pandas_edgelist = Graph, from_pandas_edgelist
    networkx.adjacency_matrix = adjacency_matrix
    sklearn = _module("sklearn")
    preprocessing = _module("sklearn.preprocessing")
    preprocessing.LabelEncoder = LabelEncoder
    sklearn.preprocessing = preprocessing
    return {"pandas": pandas, "networkx": networkx, "sklearn": sklearn,
            "sklearn.preprocessing": preprocessing}


@contextlib.contextmanager
def installed():
    """The stand-ins as ``pandas``, ``networkx``, ``sklearn`` and ``sklearn.preprocessing``
    while the block runs (the modules there before, if any, afterwards)."""
    modules = _modules()
    before = {name: sys.modules.get(name) for name in modules}
    sys.modules.update(modules)
    try:
        yield
    finally:
        for name, module in before.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
