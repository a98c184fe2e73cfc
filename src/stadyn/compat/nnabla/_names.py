"""NNabla 1.39's ``Variable.name``: what a program reads and sets, apart from the name
Stadyn's own code knows a Variable by (``graph_name``).

NNabla names no Variable itself: a fresh Variable, a function's output, a registered parameter
(``nn.get_parameters()[...]``, loaded or created) all read ``''``; the Variable
``get_parameter_or_create`` hands a parametric function is named by the parameter's last path
element (``'W'``); a program may set any ASCII ``str`` or any ``bytes`` (anything else is
NNabla's ``TypeError``; a non-ASCII ``str`` its ``UnicodeEncodeError`` at once, while non-ASCII
``bytes`` are kept and each read of the name raises its ``UnicodeDecodeError``, as NNabla's C++
string is decoded as ASCII when read; case ``nnabla_fidelity_25.variable_name__non_ascii_bytes``).
Stadyn's registry names a registered parameter by its path on
``graph_name``, which its graph roles, exports and messages read; so the name NNabla shows is
kept here, beside it, by Variable (the class of a Stadyn Variable is switched to NNabla's in
place, so it has no slot of its own).  A name the program sets is the graph's name too, as it
was before the two were apart, except on a registered parameter, whose ``graph_name`` is its
path in the registry.  The view a program's ``F`` call is given for a registered parameter
(``_registered_flags.program_view``) shows, and sets, that parameter's name.

Example:
    >>> import stadyn.compat.nnabla as nn
    >>> x = nn.Variable((2,))
    >>> x.name, x.graph_name
    ('', None)
    >>> x.name = b"x"; x.name, x.graph_name
    ('x', 'x')
"""

from __future__ import annotations

from typing import Any
from ...graph import IdentityKeyDict

__all__ = ["shown_name", "set_shown_name", "same_name_as"]

# The name a program set (or NNabla's own code would have set) on each Variable that has one.
_SHOWN: "IdentityKeyDict[Any, str | bytes]" = IdentityKeyDict()
# Variables that stand for another in a graph and show (and set) that one's name.
_SAME_AS: "IdentityKeyDict[Any, Any]" = IdentityKeyDict()


def same_name_as(v: Any, source: Any) -> None:
    """Let ``v`` show and set the name of ``source``: NNabla's function input that wraps a
    registered parameter a program gave it is that parameter's C++ Variable, one name.

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> w, view = nn.Variable((1,)), nn.Variable((1,))
        >>> same_name_as(view, w); w.name = "w"; view.name
        'w'
    """
    _SAME_AS[v] = source


def shown_name(v: Any) -> str:
    """The name NNabla 1.39 shows on ``v``: ``''`` until one is set.

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> shown_name(nn.Variable((1,)))
        ''
    """
    name = _SHOWN.get(_SAME_AS.get(v, v), "")
    return name if isinstance(name, str) else name.decode("ascii")  # (NNabla's error, if any)


def set_shown_name(v: Any, value: Any, registered: bool) -> None:
    """Set the name NNabla shows on ``v`` to ``value`` (an ASCII ``str``, or ``bytes``: kept as
    they are, NNabla's C++ string, which reading decodes as ASCII); the graph's name too
    (non-ASCII bytes escaped) unless ``v`` is a ``registered`` parameter.

    Example:
        >>> import stadyn.compat.nnabla as nn
        >>> x = nn.Variable((1,))
        >>> set_shown_name(x, "a", registered=False); x.name, x.graph_name
        ('a', 'a')
        >>> set_shown_name(x, None, registered=False)
        Traceback (most recent call last):
        TypeError: expected bytes, NoneType found
    """
    if isinstance(value, str):
        value.encode("ascii")                   # NNabla's UnicodeEncodeError for any other
        text = str(value)
    elif isinstance(value, (bytes, bytearray)):
        text = bytes(value)
        if text.isascii():
            text = text.decode("ascii")
    else:
        # NNabla 1.39's TypeError, word for word
        raise TypeError(f"expected bytes, {type(value).__name__} found")
    if v in _SAME_AS:
        v, registered = _SAME_AS[v], True    # (the source's name; the graph's stays)
    _SHOWN[v] = text
    if not registered:                  # (no graph name: '' would make a leaf a parameter)
        v.graph_name = (text if isinstance(text, str)
                        else text.decode("ascii", "backslashreplace")) or None
