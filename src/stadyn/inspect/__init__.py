"""Seeing what you built: pictures of a network (:func:`show`: SVG, PNG, DOT or an interactive
HTML page, laid out by Graphviz), a Keras-style table of it (:func:`summary`), and where its
time goes (:func:`profile`: per op and scope, on ``torch.profiler``).

The compat layers' listings (CNTK's ``logging.graph.plot`` and ``find_by_name``, NNabla's
``print_network``) are to call :func:`show`, :func:`find_by_name` and :func:`summary`.

Both read a :class:`GraphView`, a drawing-neutral copy of the graph gathered from Variables, a
loaded or imported :class:`stadyn.serialize.Network`, or another framework's decoded model file.
See ``docs/seeing-your-network.md``.

Example:
    >>> import stadyn as sd
    >>> from stadyn.models import digits_cnn
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     s = sd.summary(digits_cnn(sd.Variable((16, 1, 8, 8))), depth=2)
    >>> len(s.rows), s.rows[0].scope, s.total_parameters
    (14, 'cnn/conv1', 10400394)
"""

from ._dot import GraphvizMissing, to_dot
from ._find import find_by_name
from ._html import page
from ._macs import MAC_RULES, multiply_adds
from ._profile import Profile, ProfileRow, profile
from ._show import PICTURE_EXTENSIONS, graph_view, load_for_inspection, show
from ._trace import reset_trace_counts, trace
from ._summary import Summary, SummaryRow, summarize_view, summary
from ._view import Box, Edge, GraphView, Param, Scope, Tensor, view_of

__all__ = ["show", "summary", "Summary", "SummaryRow", "summarize_view", "graph_view",
           "view_of", "load_for_inspection", "to_dot", "page", "GraphView", "Box", "Edge",
           "Scope", "Tensor", "Param", "multiply_adds", "MAC_RULES", "GraphvizMissing",
           "PICTURE_EXTENSIONS", "find_by_name", "profile", "Profile", "ProfileRow", "trace",
           "reset_trace_counts"]
