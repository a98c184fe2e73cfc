"""``dump_signature`` and ``dump_function``: a Function's signature and a listing of its graph,
printed as CNTK 2.7's ``cntk.debugging`` prints them.

Each node of the graph (functions, inside blocks too, and the inputs, parameters and constants
they read; not the functions' output variables) gets one line: its kind, its name (a letter
sequence ``a``, ``b``, ... ``z``, ``ba``, ... for what has none), and for a function its inputs
and outputs, each ``name:type``.  A type is ``[axes](shape)``, the dynamic axes named ``b*`` for
the batch axis and ``n*``, ``o*``, ... for sequence axes, in the order they are first met (a
line ``Axis <name> == n*`` introduces each).  Inputs show their ``uid`` after their name.
"""

from __future__ import annotations

from .._function import Function
from .._variables import Constant, Parameter


def dump_signature(root, tag=None) -> None:
    """Print ``root``'s signature (``str(root)``, as CNTK 2.7 does; ``tag`` is not printed).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x = C.input_variable(3, name="x")
        >>> dump_signature(C.layers.Dense(2)(C.layers.Dense(4)(x)))
        Composite(x: Tensor[3]) -> Tensor[2]
    """
    print(str(root))


def _letters(n: int) -> str:
    """0 -> 'a', 25 -> 'z', 26 -> 'ba', ...: the base-26 name CNTK's listing invents."""
    head = "" if n < 26 else _letters(n // 26)
    return head + chr(ord("a") + n % 26)


class _Namer:
    """Names for the nodes and axes of one listing (``uid``s are the keys: each node has its
    own)."""

    def __init__(self) -> None:
        self.nodes: dict[str, str] = {}
        self.axes: dict[str, str] = {}

    def node(self, item) -> str:
        if item.name != "":
            return item.name
        if item.uid not in self.nodes:
            self.nodes[item.uid] = _letters(len(self.nodes))
        return self.nodes[item.uid]

    def axis(self, axis) -> str:
        if axis.name not in self.axes:
            if axis.name == "UnknownAxes":
                short = "?"
            elif axis.name == "defaultBatchAxis":
                short = "b*"
            else:
                short = _letters(len(self.axes) + 12) + "*"
                print("  Axis", axis.name, "==", short)
            self.axes[axis.name] = short
        return self.axes[axis.name]

    def type(self, var) -> str:
        axes = var.dynamic_axes
        head = "[" + ",".join(self.axis(a) for a in axes) + "]" if axes else ""
        return head + str(tuple(var.shape))

    def typed(self, var) -> str:
        return self.node(var) + ":" + self.type(var)


def _line(item, namer: _Namer) -> str:
    name = namer.node(item)
    inputs = sep = ""
    if isinstance(item, Function):
        kind = item.op_name
        fn = item.root_function
        outs = "(" + ", ".join(namer.typed(o) for o in fn.outputs) + ")"
        inputs = "(" + ", ".join(namer.typed(i) for i in fn.inputs) + ")"
        sep, shape = "-> ", outs
    elif isinstance(item, (Constant, Parameter)):
        kind = "Constant" if isinstance(item, Constant) else "Parameter"
        shape = namer.type(item)
    else:
        kind = ("Parameter" if item.is_parameter else "Placeholder" if item.is_placeholder
                else "Input" if item.is_input else "Constant" if item.is_constant
                else "Variable")
        shape = namer.type(item)
        name = name + " " + item.uid
    return "  {:20} {:30} {} {}{}".format(kind, name, inputs, sep, shape)


def dump_function(root, tag=None) -> None:
    """Print ``root``'s signature, then one line per node of its graph, depth first, blocks
    included (see the module's docstring for the format; CNTK 2.7's listing).

    Example:
        >>> import stadyn.compat.cntk as C
        >>> x = C.input_variable(2, name="x")
        >>> z = C.plus(x, C.parameter((2,), name="b"))
        >>> dump_function(z)  # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
        Plus(x: Tensor[2]) -> Tensor[2]
          Plus                 a                              (x:[b*](2,), b:(2,)) -> (b:[b*](2,))
          Input                x Input...                       [b*](2,)
          Parameter            b                               (2,)

    A ``@C.Function`` without types yet lists the graph over its placeholders, each of an
    unknown shape:

        >>> @C.Function
        ... def f(a):
        ...     return C.relu(a) + 1
        >>> dump_function(f)  # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
        Composite(a: Sequence[tensor]) -> Sequence[tensor]
          Plus                 a                              (c:[?](-2,), d:()) -> (b:[?](-2,))
          ReLU                 e                              (a:[?](-2,)) -> (c:[?](-2,))
          Placeholder          a Placeholder...                  [?](-2,)
          Constant             d                               ()
    """
    from ..logging.graph import depth_first_search
    listed = lambda n: isinstance(n, Function) or not n.is_output      # noqa: E731
    if not issubclass(type(root), Function) and getattr(root, "_typed", False) is None:
        # (a @C.Function without types: the graph CNTK 2.7 holds for it, over its
        # placeholders, each shape unknown; where Stadyn's waits as one call of the whole
        # function (an op needs the shapes), refused)
        # (an op over a placeholder without a shape is such a graph itself)
        root = root.waiting_graph() if hasattr(type(root), "waiting_graph") else root
        nodes = depth_first_search(root, listed, depth=0)
        if any(getattr(n, "is_block", False) for n in nodes):
            raise ValueError(
                "dump_function(%s): a @C.Function whose arguments have no types yet, whose "
                "ops need their shapes (reshape) or that applies layers: Stadyn has no graph "
                "to list until it is given them (update_signature, or a call on Variables)"
                % (root.name or "?"))
    else:
        root = getattr(root, "_typed", None) or root    # (a typed one: the Function it became)
        nodes = depth_first_search(root, listed, depth=-1)
    dump_signature(root, tag)
    namer = _Namer()
    for item in nodes:
        print(_line(item, namer))
