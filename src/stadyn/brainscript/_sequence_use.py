"""Which sequence functions a network description uses, read from its syntax tree before it is
evaluated: whether its Inputs carry a sequence axis.

Only what the network can reach counts: the members of its records (CNTK builds every node a
network record defines) and the bodies of the functions they call, by name, however deep.  A
function the network defines but never calls makes no node, so a ``PastValue`` in it does not
make the network one of sequences.  Names are matched without scopes (a name defined twice
counts both definitions): the analysis may take a network for one of sequences that uses none,
never the other way round where a function is called by its name.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from . import _ast as A

__all__ = ["SEQUENCE_NAMES", "SequenceUse", "sequence_use"]

# Names whose use makes a network a sequence network (its Inputs then carry a sequence axis).
SEQUENCE_NAMES = frozenset({
    "PastValue", "FutureValue", "Delay", "DelayLayer", "RecurrentLSTMLayer",
    "RecurrentLSTMLayerStack", "DynamicAxis", "OptimizedRNNStack", "BS",
    "LabelsToGraph", "ForwardBackward",    # CTC: over sequences
    "Where"})

# The BS namespaces (CNTK.core.bs's, sequences.bs's) whose every function works on sequences:
# ``BS.Loop``, named as a whole or through a member, counts
_SEQUENCE_BS = frozenset({"Loop", "Sequences", "RNNs", "Seq2Seq"})
# The members of the other namespaces that work on sequences (CNTK.core.bs:815
# ``BS.Boolean.Toggle``: a PastValue); every other member of those (``BS.Boolean.If``,
# ``BS.Constants.One``, ``BS.Parameters.BiasParam``, ``BS.Network.Load``) makes no sequence
# node, as the same node reached by its plain name makes none.  Such a namespace named as a
# whole (``B = BS.Boolean``) counts where it has a member that works on sequences, as its
# members may then be any (``BS.Constants``, ``BS.Parameters``, ``BS.Network`` never count).
_SEQUENCE_MEMBERS = {"Boolean": frozenset({"Toggle"}), "Constants": frozenset(),
                     "Parameters": frozenset(), "Network": frozenset()}
_NO_SEQUENCE_BS = frozenset(ns for ns, members in _SEQUENCE_MEMBERS.items() if not members)


def _children(e: Any) -> list[Any]:
    if isinstance(e, (list, tuple)):
        return list(e)
    if hasattr(e, "__dataclass_fields__"):
        return [getattr(e, f) for f in e.__dataclass_fields__ if f != "loc"]
    return []


def _functions(expr: Any) -> dict[str, list[Any]]:
    """Every named function of the tree (``f (x) = ...``, ``f = x => ...``): name -> bodies."""
    found: dict[str, list[Any]] = {}
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, A.Member) and isinstance(e.value, A.Lambda):
            found.setdefault(e.name, []).append(e.value)
        stack.extend(_children(e))
    return found


def _reached(expr: Any) -> list[Any]:
    """The nodes of the tree the network evaluates: everything outside named functions, and
    the named functions it calls (transitively)."""
    functions = _functions(expr)
    named = {id(body) for bodies in functions.values() for body in bodies}
    seen: set[str] = set()
    out: list[Any] = []
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, A.Lambda) and id(e) in named and e is not expr:
            continue            # a definition: walked where it is called
        out.append(e)
        # f (...), or rec.f (...): a function of a record
        if isinstance(e, (A.Ident, A.MemberAccess)) and e.name in functions \
                and e.name not in seen:
            seen.add(e.name)
            for body in functions[e.name]:
                stack.extend(_children(body))
        stack.extend(_children(e))
    return out


def _bs_namespace(e: Any) -> str | None:
    """``ns`` for ``BS.ns``, else None."""
    if isinstance(e, A.MemberAccess) and isinstance(e.obj, A.Ident) and e.obj.name == "BS":
        return e.name
    return None


def _namespace(e: Any, aliases: dict[str, str]) -> str | None:
    """``ns`` for ``BS.ns``, for a name bound to it (``S`` of ``S = BS.Sequences``) and for
    ``b.ns`` of a name bound to ``BS`` (:func:`_aliases`), else None."""
    if isinstance(e, A.Ident) and aliases.get(e.name):
        return aliases[e.name]
    if isinstance(e, A.MemberAccess) and isinstance(e.obj, A.Ident) and \
            aliases.get(e.obj.name) == "":
        return e.name
    return _bs_namespace(e)


def _is_sequence_member(e: Any, aliases: dict[str, str] | None = None) -> bool:
    """``BS.ns.f`` (or ``ns`` reached through ``aliases``) of a namespace or a member that
    works on sequences."""
    ns = _namespace(e.obj, aliases or {}) if isinstance(e, A.MemberAccess) else None
    return ns is not None and (ns in _SEQUENCE_BS or e.name in _SEQUENCE_MEMBERS.get(ns, ()))


def _plain_members(nodes: list[Any]) -> set[int]:
    """The ids of the ``BS.ns`` nodes that are read only for a member of no sequence use
    (``BS.Boolean`` in ``BS.Boolean.If``), and of the ``BS`` names read for a namespace
    (``BS`` in ``BS.Boolean``: the namespace decides).  A ``BS`` read as a whole (``b = BS``)
    is none of these: its members may then be any, so it counts."""
    plain = {id(e.obj) for e in nodes if isinstance(e, A.MemberAccess)
             and _bs_namespace(e.obj) in _SEQUENCE_MEMBERS and not _is_sequence_member(e)}
    plain.update(id(e.obj) for e in nodes if isinstance(e, A.MemberAccess)
                 and isinstance(e.obj, A.Ident) and e.obj.name == "BS")
    return plain


def _is_sequence_name(e: Any, plain: set[int]) -> bool:
    if isinstance(e, A.Ident):
        return e.name in SEQUENCE_NAMES and (e.name != "BS" or id(e) not in plain)
    ns = _bs_namespace(e)
    return ns is not None and id(e) not in plain and ns not in _NO_SEQUENCE_BS


def _aliases(nodes: list[Any]) -> dict[str, str]:
    """The names bound to ``BS`` (``b = BS``: name -> ``""``) or to a namespace of it (``S =
    BS.Sequences``: name -> ``"Sequences"``)."""
    found: dict[str, str] = {}
    for e in nodes:
        if isinstance(e, A.Member):
            if isinstance(e.value, A.Ident) and e.value.name == "BS":
                found[e.name] = ""
            elif _bs_namespace(e.value) is not None:
                found[e.name] = e.value.name
    return found


def _is_sequence_call(call: A.Call, aliases: dict[str, str]) -> bool:
    f = call.func
    if isinstance(f, A.Ident):
        if f.name == "Slice":     # Slice (..., axis = -1): along the sequence
            return any(a.name == "axis" and isinstance(a.value, A.Unary) and a.value.op == "-"
                       and isinstance(a.value.operand, A.Number) and a.value.operand.value == 1
                       for a in call.args)
        return f.name != "BS" and _is_sequence_name(f, set())
    # BS.Sequences.First (x), BS.Loop.Previous (x), BS.Boolean.Toggle (clk), ...; S.First (x)
    # of S = BS.Sequences; b.Sequences.First (x) of b = BS
    return _is_sequence_member(f, aliases)


class SequenceUse(NamedTuple):
    """What a network description does with sequences (:func:`sequence_use`)."""

    #: it uses sequence functions: its Inputs carry a sequence axis
    uses: bool
    #: it declares a ``DynamicAxis``: then only Inputs given that axis, or named in
    #: ``arguments``, are sequences
    declares_axis: bool
    #: where it declares an axis, the names passed, as they are, to a sequence function
    #: (``BS.Sequences.First (x)``, ``Slice (1, 0, x, axis = -1)``, ``PastValue (0, x)``): an
    #: Input of one of these names is a sequence even where it does not name the declared axis
    #: (CNTK gives such an Input the default sequence axis); empty where none is declared
    arguments: frozenset[str]


def sequence_use(expr: Any) -> SequenceUse:
    """Whether a network description uses sequence functions, whether it declares a
    ``DynamicAxis``, and then which names it passes to sequence functions: one walk over what
    the network reaches.

    >>> from stadyn.brainscript._parser import parse_expression
    >>> sequence_use(parse_expression("{ x = Input{3} ; h = PastValue (3, x) }"))[:2]
    (True, False)
    >>> sequence_use(parse_expression("{ x = Input{3} ; f (y) = PastValue (3, y) ; h = x }"))
    SequenceUse(uses=False, declares_axis=False, arguments=frozenset())
    >>> sorted(sequence_use(parse_expression(
    ...     "{ a = DynamicAxis{} ; x = Input{3} ; y = Slice (1, 0, x, axis = -1) }")).arguments)
    ['x']
    >>> sequence_use(parse_expression("{ x = Input{3} ; y = BS.Boolean.If (x, x, x) }")).uses
    False
    >>> sorted(sequence_use(parse_expression(
    ...     "{ a = DynamicAxis{} ; x = Input{3} ; S = BS.Sequences ; y = S.First (x) }")).arguments)
    ['x']
    """
    uses = declares = False
    names: set[str] = set()
    reached = _reached(expr)
    plain = _plain_members(reached)
    aliases = _aliases(reached)
    for e in reached:
        uses = uses or _is_sequence_name(e, plain)
        declares = declares or (isinstance(e, A.Ident) and e.name == "DynamicAxis")
        if isinstance(e, A.Call) and _is_sequence_call(e, aliases):
            names.update(a.value.name for a in e.args if isinstance(a.value, A.Ident))
    return SequenceUse(uses, declares, frozenset(names) if declares else frozenset())
