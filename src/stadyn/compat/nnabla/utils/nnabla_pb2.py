"""``nnabla.utils.nnabla_pb2``: the protobuf message classes of NNabla's files that Stadyn
reads and writes (``NNablaProtoBuf``, ``Parameter``, ``Shape``, ``Optimizer``:
:func:`stadyn.serialize.nnabla_messages`); NNabla's others (``Network``, ``Executor``, ...) are
not here (``AttributeError``).

Example:
    >>> proto = NNablaProtoBuf()
    >>> p = proto.parameter.add(); p.variable_name = "w"; p.shape.dim.extend([2])
    >>> [q.variable_name for q in proto.parameter]
    ['w']
"""

from .... import serialize as _serialize

# (the message classes protobuf builds have no ``__module__``: they stay out of ``__all__``,
# the list of this package's own names)
__all__: list = []


# (protobuf is loaded here, when a program imports this module: not by ``import nnabla``)
_MESSAGES = _serialize.nnabla_messages()
NNablaProtoBuf = _MESSAGES["NNablaProtoBuf"]
Parameter = _MESSAGES["Parameter"]
Shape = _MESSAGES["Shape"]
Optimizer = _MESSAGES["Optimizer"]
