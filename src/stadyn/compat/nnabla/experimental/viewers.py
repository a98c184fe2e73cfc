"""``nnabla.experimental.viewers``: ``SimpleGraph``, a Graphviz picture of the graph that
computes a Variable (CenterNet's ``save_graph.py``: ``V.SimpleGraph(format='svg',
verbose=True).save(F.sink(*outputs), filename)``).

The picture is Stadyn's (``sd.show``'s, docs/seeing-your-network.md: one box per function
with its arguments, parameters named by their scope, scopes drawn as frames, an edge per tensor
labelled with its shape), not NNabla's own layout of circles and squares:
``create_graphviz_digraph`` returns that ``graphviz.Digraph`` (``.source``, ``.render``,
``.view``, shown inline in a notebook) in the asked ``format``.  ``verbose``,
``fname_color_map`` and ``vname_color_map`` are accepted and do not change it (Stadyn's boxes
always show shapes and arguments; its colours are its own); ``params`` is not needed (a
parameter's name comes from the registry, or from a module's own parameters).

Without the ``graphviz`` Python package it raises NNabla's ``ImportError``; ``save`` and
``view`` also need Graphviz's ``dot`` program (``graphviz.ExecutableNotFound`` otherwise, as
with NNabla).

Example:
    >>> import stadyn.compat.nnabla as nn
    >>> import stadyn.compat.nnabla.functions as F
    >>> import stadyn.compat.nnabla.parametric_functions as PF
    >>> import stadyn.compat.nnabla.experimental.viewers as V
    >>> import stadyn as sd
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     pred = F.relu(PF.affine(nn.Variable((4, 3)), 2, name="fc"))
    >>> graph = V.SimpleGraph(format="svg").create_graphviz_digraph(pred)
    >>> graph.format, "fc" in graph.source and "relu" in graph.source
    ('svg', True)
"""

from __future__ import annotations

from typing import Any

from ....inspect import GraphvizMissing, to_dot, view_of

__all__ = ["SimpleGraph"]


class SimpleGraph:
    """``SimpleGraph(format='png', verbose=False, fname_color_map=None,
    vname_color_map=None)``: :meth:`create_graphviz_digraph`, :meth:`save` (the DOT source
    at ``fpath`` and the picture at ``fpath.<format>``), :meth:`view`."""

    def __init__(self, format: str = "png", verbose: bool = False,
                 fname_color_map: dict | None = None, vname_color_map: dict | None = None):
        self._format = format
        self._verbose = verbose
        self._fname_color_map = fname_color_map
        self._vname_color_map = vname_color_map

    def create_graphviz_digraph(self, vleaf: Any, params: dict | None = None,
                                format: str | None = None) -> Any:
        """The ``graphviz.Digraph`` of the graph computing ``vleaf``, in ``format`` (default:
        the one given when made)."""
        try:
            graph = to_dot(view_of(vleaf))
        except GraphvizMissing as exc:
            raise ImportError("Install graphviz. `pip install graphviz.`") from exc
        graph.format = self._format if format is None else format
        return graph

    def save(self, vleaf: Any, fpath: str, cleanup: bool = False,
             format: str | None = None) -> None:
        """Write the DOT source to ``fpath`` and the picture to ``fpath.<format>`` (the source
        removed with ``cleanup``)."""
        self.create_graphviz_digraph(vleaf, format=format).render(fpath, cleanup=cleanup)

    def view(self, vleaf: Any, fpath: str | None = None, cleanup: bool = True,
             format: str | None = None, params: dict | None = None) -> None:
        """Render the picture (to ``fpath``, or a temporary file) and open it in the system's
        viewer."""
        self.create_graphviz_digraph(vleaf, params, format=format).view(fpath, cleanup=cleanup)
