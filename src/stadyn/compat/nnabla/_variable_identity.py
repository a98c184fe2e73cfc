"""Which NNabla Variables are one: NNabla 1.39's ``==`` and ``hash()`` of Variables.

An NNabla ``Variable`` is a Python handle on a graph node (``CgVariable``) that holds a C++
``nbla::Variable`` (the arrays); ``==`` and ``hash()`` compare that ``nbla::Variable``
(``_variable.pyx`` ``__eq__``/``__hash__``).  So ``x.get_unlinked_variable()`` (and a
parametric function's parameter whose ``need_grad`` the graph sees otherwise, a view of the
registered one) equals and hashes as ``x``; ``a.rewire_on(b)`` gives ``a`` ``b``'s
``nbla::Variable`` (``steal_variable_from_to``, computation_graph.cpp), so from then on ``a ==
b`` and ``a``'s hash is ``b``'s; ``x[key] = v`` rewires ``x`` on a new function's output (a new
hash).  A view made by ``reshape(shape, unlink=True)``, or a Variable given another's ``data``,
is a Variable of its own.

Each Variable stands for one such ``nbla::Variable`` here: a token, made on first use, that
the views share (``share_identity``, called for every view ``stadyn.graph.Variable.unlinked``
makes: a parametric function's frozen parameter is one, made before the parameter is an
NNabla Variable; ``as_nnabla`` gives such views NNabla's class with it).  Stadyn's own
records of Variables are keyed by identity (``stadyn.graph.IdentityKeyDict``), so a view and
its source stay two there.

Example:
    >>> import stadyn.compat.nnabla as nn
    >>> x = nn.Variable((2,)); u = x.get_unlinked_variable(need_grad=True)
    >>> u == x, hash(u) == hash(x), u is x, u in {x: 1}
    (True, True, False, True)
"""

from __future__ import annotations

from typing import Any

from ...graph import IdentityKeyDict, IdentitySet, on_unlinked

__all__ = ["holding_the_same", "same_variable", "share_identity", "variable_hash"]


class _NblaVariable:
    """Stands for one C++ ``nbla::Variable``: the Variables mapped to it are equal."""

    __slots__ = ("holders", "__weakref__")

    def __init__(self) -> None:
        self.holders = IdentitySet()


# a Variable -> the token of the nbla::Variable it holds (none until it is compared or viewed)
_HOLDS: IdentityKeyDict = IdentityKeyDict()


def _token(v: Any) -> _NblaVariable:
    token = _HOLDS.get(v)
    if token is None:
        token = _HOLDS[v] = _NblaVariable()
        token.holders.add(v)
    return token


def share_identity(v: Any, source: Any) -> None:
    """From now on ``v`` holds ``source``'s ``nbla::Variable``: equal to it, of its hash.

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> a, b = nn.Variable((2,)), nn.Variable((2,))
        >>> share_identity(a, b); same_variable(a, b), variable_hash(a) == variable_hash(b)
        (True, True)
    """
    token = _token(source)
    old = _HOLDS.get(v)
    if old is not None and old is not token:
        old.holders.discard(v)
    _HOLDS[v] = token
    token.holders.add(v)


def holding_the_same(v: Any) -> list:
    """The Variables alive that hold ``v``'s ``nbla::Variable`` (``v`` and its views; none
    where ``v`` was never compared nor viewed).

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> x = nn.Variable((2,)); u = x.get_unlinked_variable()
        >>> [h is x or h is u for h in holding_the_same(x)]
        [True, True]
    """
    token = _HOLDS.get(v)
    return [] if token is None else list(token.holders)


def same_variable(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` hold one ``nbla::Variable`` (NNabla's ``a == b``).

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> x = nn.Variable((2,))
        >>> same_variable(x, x), same_variable(x, nn.Variable((2,)))
        (True, False)
    """
    return a is b or _token(a) is _token(b)


def variable_hash(v: Any) -> int:
    """NNabla's ``hash(v)``: its ``nbla::Variable``'s, the same for the Variables holding it.

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> x = nn.Variable((2,))
        >>> variable_hash(x) == variable_hash(x.get_unlinked_variable())
        True
    """
    return object.__hash__(_token(v))


# every view ``Variable.unlinked`` makes (a parametric function's parameter frozen in a graph,
# ``get_unlinked_variable``) holds its source's nbla::Variable, as NNabla's
on_unlinked(share_identity)
