"""The engine interface of the BrainScript evaluator: :class:`Library`, plus CNTK shape mapping.

The evaluator knows numbers, strings, booleans, records, arrays and functions.  Everything else
(tensors, layers, graph nodes) belongs to an engine, which it reaches only through a
:class:`Library`: a table of named functions (``DenseLayer``, ``ReLU``, ``Input``, ...) and one
hook per operator that BrainScript applies to nodes (``a * b`` on two nodes calls
``library.times(a, b)``).  Stadyn's layers and ops plug in by subclassing it; the test suite
plugs in a fake that records calls.
"""

from __future__ import annotations

import contextlib
import inspect
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from .._errors import ConfigError
from ._ast import line_of

__all__ = ["Library", "Composition", "ForwardRef", "NodeCall", "cntk_shape", "cntk_filter_shape",
           "learning_rate_multiplier",
           "without_unit_axes", "NODE_OPERATOR_HOOKS"]


# Infix operator -> Library hook, used when at least one operand is a node.  A scalar operand is
# passed as a plain Python number (CNTK turned it into a Constant; the library decides).
NODE_OPERATOR_HOOKS: dict[str, str] = {
    "*": "times",            # node * node: matrix product.  scalar * node: element_times
    ".*": "element_times",
    "+": "plus",
    "-": "minus",
    "==": "equal",
    "!=": "not_equal",
    "<": "less",
    "<=": "less_equal",
    ">": "greater",
    ">=": "greater_equal",
}


class NodeCall:
    """What a library's :meth:`Library.new` returns for a node the evaluator is to make: the
    library function ``function`` applied to the node values ``inputs`` (and ``tag``), which
    the evaluator does with its checked call (a wrong argument list is a located ConfigError
    naming ``operation``) and then refuses unless the result is a node.

    Example:
        >>> NodeCall("Plus", max, (1, 2)).operation
        'Plus'
    """

    def __init__(self, operation: str, function: Callable[..., Any], inputs: Sequence[Any],
                 tag: Any = None) -> None:
        self.operation, self.function = operation, function
        self.inputs, self.tag = tuple(inputs), tag


class Composition:
    """``f >> g``: a callable that applies ``f`` to its arguments, then ``g`` to the result
    (passed through ``link``, an engine's hook, first).

    A step of ``Sequential`` is ``nested``: cntk.exe applies ``Sequential (F : G)`` as ``G
    (F (x))`` (CNTK.core.bs), so ``G`` starts first and ``F (x)`` is evaluated when ``G`` asks
    for it, where ``F >> G`` applies ``F`` first.  The order shows where a layer makes its
    parameters (their seeds count in that order); the evaluator applies a nested composition
    that way, and from Python both apply ``f``, then ``g``.

    >>> inc = lambda x: x + 1
    >>> Composition(inc, lambda x: 2 * x)(3)
    8
    """

    def __init__(self, f: Callable[..., Any], g: Callable[[Any], Any],
                 link: Callable[[Any], Any] | None = None, nested: bool = False) -> None:
        self.f = f
        self.g = g
        self.link = link if link is not None else _same
        self.nested = nested

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.g(self.link(self.f(*args, **kwargs)))

    def __repr__(self) -> str:
        return f"Composition({self.f!r}, {self.g!r})"


def _same(value: Any) -> Any:
    return value


class ForwardRef:
    """The input of a delay (``PastValue``/``FutureValue``) that is still being defined: the
    delay is part of a loop (``h = f(PastValue(0, h))``).  The evaluator passes one to the
    delay function instead of the input's value, and hands the value to
    :meth:`Library.define_forward` once the definition it waits for has finished.

    >>> ref = ForwardRef(None, "h")
    >>> ref
    ForwardRef(h)
    """

    def __init__(self, loc: Any, name: str = "") -> None:
        self.loc, self.name = loc, name

    def __repr__(self) -> str:
        return f"ForwardRef({self.name})"


#: the file name of the library's own BrainScript (CNTK.core.bs's functions, ``sequences.bs``)
LIBRARY_SOURCE = "<library>"


class Library:
    """What the evaluator needs from an engine.

    ``functions`` maps BrainScript names (case-sensitive: ``DenseLayer``, ``ReLU``, ``Times``,
    ``Input``, ``CrossEntropyWithSoftmax``, ...) to Python callables.  Positional BrainScript
    arguments become positional Python arguments and named ones keyword arguments; arrays arrive
    as tuples (``(3:3)`` is ``(3, 3)``, in CNTK's column-major order: see :func:`cntk_shape`),
    records as read-only mappings, BrainScript functions as plain Python callables.  A name
    defined in the script shadows the library; the evaluator's own prelude (``Sequential``,
    ``LayerStack``, ``Identity``, ``Length``) is used only where the library has no entry.

    Override :meth:`is_node` and the operator hooks to let BrainScript's operators build graph
    nodes.  A hook left as is raises :class:`NotImplementedError`, which the evaluator reports
    as a located :class:`~stadyn._errors.ConfigError`.

    >>> lib = Library({"Twice": lambda x: 2 * x})
    >>> lib.lookup("Twice")(4), lib.lookup("Missing")
    (8, None)
    """

    #: the calls of BrainScript functions from outside the library now running, innermost
    #: last (``(where, name)``: the call's source location and the function's name), which the
    #: evaluator keeps: the place a node made inside the library names in messages
    #: (:attr:`user_call`) and the callers a delay's later error names (a class default too,
    #: for an engine that sets up its own state; a tuple, replaced and never changed in place)
    callers: tuple[tuple[Any, str], ...] = ()

    def __init__(self, functions: Mapping[str, Callable[..., Any]] | None = None) -> None:
        self.functions: dict[str, Callable[..., Any]] = dict(functions or {})
        # the expression path (``out.h1``) being evaluated when the evaluator calls a library
        # function: cntk.exe's name of a node that function makes
        self.path = ""
        self.callers = ()

    @property
    def user_call(self) -> str | None:
        """``file:line`` of the user's call into the library's own BrainScript (CNTK.core.bs's
        functions, ``sequences.bs``) being evaluated -- ``BS.Loop.Previous (h)``'s line -- or
        None: the innermost of :attr:`callers`.

        >>> from stadyn.brainscript._ast import SourceLocation
        >>> lib = Library()
        >>> lib.user_call is None
        True
        >>> lib.callers = ((SourceLocation("net.bs", 3, 5), "F"),)
        >>> lib.user_call
        'net.bs:3'
        """
        if not self.callers:
            return None
        return "%s:%d" % line_of(self.callers[-1][0])

    @contextlib.contextmanager
    def _at_path(self, path: str) -> Iterator[None]:
        """:attr:`path` set to ``path`` (a node the library adds for the user: cntk.exe's name
        of it, ``inputs.inputs[5]``) while the block runs, then put back."""
        outer, self.path = self.path, path
        try:
            yield
        finally:
            self.path = outer

    def user_place(self, here: str) -> str:
        """``here`` (``file:line`` of the expression being evaluated), or the user's call into
        the library (:attr:`user_call`) where ``here`` is a line of the library's own text:
        the line a message about what the user wrote names.

        >>> from stadyn.brainscript._ast import SourceLocation
        >>> lib = Library()
        >>> lib.callers = ((SourceLocation("net.bs", 3, 5), "F"),)
        >>> lib.user_place("<library>:96"), lib.user_place("net.bs:5")
        ('net.bs:3', 'net.bs:5')
        """
        if self.user_call is not None and here.startswith(LIBRARY_SOURCE + ":"):
            return self.user_call
        return here

    # ---- names ---------------------------------------------------------------------------
    def lookup(self, name: str) -> Callable[..., Any] | None:
        """The library function called ``name``, or ``None``."""
        return self.functions.get(name)

    def names(self) -> list[str]:
        """Every name the library defines (for "did you mean" hints)."""
        return list(self.functions)

    def renamed(self, name: str) -> str | None:
        """For a name the library's language no longer defines, a note on what it became (the
        hint of the "unknown function" error); ``None`` by default."""
        return None

    def parameter_names(self, fn: Callable[..., Any]) -> Sequence[str] | None:
        """The names of ``fn``'s positional parameters as BrainScript's definition of the
        function names them (an argument's expression path adds its name: ``z.y`` for the data
        of ``z = Times (W, x)``); ``None`` for a callable that is no library function (a
        layer).  The default reads them off the Python signature."""
        if not (inspect.ismethod(fn) or inspect.isfunction(fn)):
            return None
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            return None
        return tuple(p.name for p in params if p.default is inspect.Parameter.empty
                     and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))

    # ---- values --------------------------------------------------------------------------
    def is_node(self, value: Any) -> bool:
        """Whether ``value`` is an engine node that BrainScript operators apply to via hooks."""
        return False

    def type_name(self, value: Any) -> str:
        """How error messages call a node (or another engine value)."""
        return "node" if self.is_node(value) else type(value).__name__

    # ---- operator hooks (at least one operand is a node) ---------------------------------
    def _missing(self, hook: str) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement the '{hook}' hook")

    def times(self, a: Any, b: Any) -> Any:
        """``a * b`` on two nodes: matrix product (CNTK's ``Times``)."""
        return self._missing("times")

    def element_times(self, a: Any, b: Any) -> Any:
        """``a .* b``, ``scalar * node``, ``node * scalar`` and ``node / scalar`` (as ``node .*
        (1/scalar)``)."""
        return self._missing("element_times")

    def reciprocal(self, x: Any) -> Any:
        """``1 / node``."""
        return self._missing("reciprocal")

    def plus(self, a: Any, b: Any) -> Any:
        return self._missing("plus")

    def minus(self, a: Any, b: Any) -> Any:
        """``a - b``; also ``!node``, which CNTK computes as ``1 - node``."""
        return self._missing("minus")

    def negate(self, x: Any) -> Any:
        """Unary ``-node``."""
        return self._missing("negate")

    def equal(self, a: Any, b: Any) -> Any:
        return self._missing("equal")

    def not_equal(self, a: Any, b: Any) -> Any:
        return self._missing("not_equal")

    def less(self, a: Any, b: Any) -> Any:
        return self._missing("less")

    def less_equal(self, a: Any, b: Any) -> Any:
        return self._missing("less_equal")

    def greater(self, a: Any, b: Any) -> Any:
        return self._missing("greater")

    def greater_equal(self, a: Any, b: Any) -> Any:
        return self._missing("greater_equal")

    def if_then_else(self, cond: Any, then: Any, orelse: Any) -> Any:
        """``if node then a else b``: an element-wise choice (CNTK's ``If``)."""
        return self._missing("if_then_else")

    def number_operand(self, value: Any) -> Any:
        """A number operand of an infix operator or ``if`` on nodes, as the operator's hook
        gets it (:attr:`path` is the operator's expression path); the default passes the
        number on.  cntk.exe makes it a ``[1]`` constant node (BrainScriptEvaluator.cpp's
        ``CastToComputationNode``)."""
        return value

    # ---- recurrence (loops through delays) -------------------------------------------------
    def delay_input(self, fn: Any) -> tuple[int, str] | None:
        """For a delay function (``PastValue``, ``FutureValue``): the position and name of its
        input parameter; ``None`` for every other function.  A library that names none has no
        recursive definitions (a loop is then a circular definition)."""
        return None

    def checkpoint(self) -> Callable[[], None]:
        """A function that forgets what the library makes after this call (its parameters,
        and the seeds they took): the evaluator calls it when a delay's input, tried early,
        turned out to be still in the making (cntk.exe evaluates that input late, once).  The
        default remembers nothing."""
        return lambda: None

    def define_forward(self, ref: ForwardRef, value: Any) -> None:
        """The value of a delay's input that was passed as ``ref`` (see :class:`ForwardRef`)."""
        raise NotImplementedError("recursive definitions through a delay are not supported")

    def prepare_args(self, args: list[Any], kwargs: dict[str, Any]) -> None:
        """Adjust the arguments of a library call or operator hook in place (Stadyn's engine
        maps values made inside a recurrence loop here); the default changes nothing."""

    def resolve(self, value: Any) -> Any:
        """A node as the network exposes it (a node made inside a closed loop: its sequence)."""
        return value

    def resolve_all(self, values: list[Any]) -> list[Any]:
        """:meth:`resolve` for many nodes at once (a network's named nodes)."""
        return [self.resolve(v) for v in values]

    def name_parameters(self, nodes: dict[str, Any], roots: Sequence[Any] = ()) -> None:
        """Called once the network's named nodes are known (``nodes``: name to node, as
        :class:`~._network.Network` holds them; ``roots``: the nodes cntk.exe's network starts
        from, in its order): Stadyn registers a parameter under its node name; the default
        does nothing."""

    def own_names(self, nodes: list[Any]) -> dict[str, Any]:
        """Names the nodes ``nodes`` reach already have (a loaded network's nodes keep their
        names, as in CNTK); a network description's own member names come first."""
        return {}

    def script_prelude(self) -> str | None:
        """BrainScript source of further definitions (a record's members), evaluated on first
        use; its names are found after the library's functions."""
        return None

    def prepare(self, expr: Any) -> None:
        """Called with a network description's AST before it is evaluated."""

    # ---- functions and classes -----------------------------------------------------------
    def compose(self, f: Callable[..., Any], g: Callable[[Any], Any],
                nested: bool = False) -> Callable[..., Any]:
        """``f >> g``, and each step of ``Sequential`` (``nested``): apply ``f``, then ``g``
        (see :class:`Composition`)."""
        return Composition(f, g, nested=nested)

    def before_apply(self, fn: Callable[..., Any]) -> None:
        """Called when the evaluator applies the library callable ``fn``, before it evaluates
        the arguments (Stadyn's layers take their parameters' seeds here, as cntk.exe's layers
        make their weights before they evaluate their input); the default does nothing."""

    def after_apply(self, fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any],
                    result: Any) -> None:
        """Called when the library callable ``fn`` (or an operator's hook) has returned
        ``result`` from ``args`` and ``kwargs``, with :attr:`path` still the call's (Stadyn
        notes cntk.exe's name and inputs of the node it made); the default does nothing."""

    def inner_nodes(self, named: dict[str, Any]) -> dict[str, Any]:
        """cntk.exe's names of the nodes the library's functions made that the network's
        members (``named``) do not name; the default knows none."""
        return {}

    def made_inputs(self, node: Any) -> list[Any] | None:
        """The inputs, in cntk.exe's order, of a node a library function made, or None where
        not known (the default)."""
        return None

    def new(self, class_name: str, value: Any) -> Any:
        """``new ClassName value``; ``new ComputationNetwork {...}`` is the record itself."""
        if class_name == "ComputationNetwork":
            return value
        raise NotImplementedError(f"unknown class '{class_name}' after 'new'")


def cntk_shape(shape: int | Sequence[int]) -> tuple[int, ...]:
    """Map a CNTK shape (column-major, e.g. ``32:32:3`` = W:H:C) to Stadyn's per-sample shape.

    Stadyn tensors are N,C,H,W (row-major), so the per-sample shape is CNTK's reversed: an
    image ``W:H:C`` becomes ``(C, H, W)``, a vector ``784`` stays ``(784,)``.  ``0`` (CNTK's
    ``Inferred``) is kept.

    >>> cntk_shape((32, 32, 3)), cntk_shape((28, 28, 1)), cntk_shape(784)
    ((3, 32, 32), (1, 28, 28), (784,))
    """
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int) or d < 0:
            raise ValueError(f"a CNTK shape holds non-negative integers, got {shape!r}")
    return tuple(reversed(dims))


def without_unit_axes(shape: Sequence[int]) -> tuple[int, ...]:
    """A Stadyn sample shape without its leading 1s: CNTK's shape without its trailing
    singleton dimensions (``[n x 1]`` is ``(1, n)``), which cntk.exe treats as the same
    shape where it compares two (TensorShape::IsElementwiseCompatibleWith: a dimension one
    shape lacks is 1).

    >>> without_unit_axes((1, 1, 256)), without_unit_axes((3, 1))
    ((256,), (3, 1))
    """
    dims = list(shape)
    while dims and dims[0] == 1:
        dims.pop(0)
    return tuple(dims)


def cntk_filter_shape(shape: int | Sequence[int]) -> int | tuple[int, ...]:
    """Map a CNTK filter, stride or pooling window (``3:3`` = W:H) to Stadyn's ``(kH, kW)`` order.

    A single number means the same size along every spatial axis and stays a number.

    >>> cntk_filter_shape((5, 3)), cntk_filter_shape(2)
    ((3, 5), 2)
    """
    if isinstance(shape, int) and not isinstance(shape, bool):
        return shape
    return cntk_shape(shape)


def learning_rate_multiplier(value: Any, what: str) -> float:
    """A parameter's ``learningRateMultiplier`` as cntk.exe takes it (a float32): 0 leaves the
    parameter out of training, another value scales the learning rate of its updates (CNTK's
    ``SGD::TrainOneEpoch``: the rate per sample times the node's multiplier); a negative one
    is refused, as ``SetLearningRateMultiplier`` refuses it.

    >>> learning_rate_multiplier(0.1, "ParameterTensor")
    0.10000000149011612
    >>> learning_rate_multiplier(-1, "Parameter")
    Traceback (most recent call last):
    stadyn._errors.ConfigError: Parameter: learningRateMultiplier should be non-negative, got -1
    """
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number) or number < 0:
        raise ConfigError(f"{what}: learningRateMultiplier should be non-negative, got {value}")
    return float(np.float32(number))
