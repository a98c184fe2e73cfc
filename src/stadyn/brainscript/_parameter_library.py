"""BrainScript's learnable parameters and constants (``Parameter``, ``ParameterTensor``,
``Constant``): CNTK's initialisers and seeds, shapes inferred by the first ``Times``
(:class:`PendingParameter`), and cntk.exe's node names for them once a network is built
(:meth:`ParameterFunctions.name_parameters`).  A mixin of :class:`~._stadyn_library.StadynLibrary`.

Example:
    >>> import stadyn as sd
    >>> from stadyn.brainscript import build_network
    >>> from stadyn.brainscript._stadyn_library import StadynLibrary
    >>> with sd.parameter_registry(sd.ParameterRegistry()):
    ...     net = build_network('{ W = ParameterTensor {(2:3), init = "fixedValue", value = 1}'
    ...                         ' ; c = Constant (2) ; outputNodes = (W) }', StadynLibrary())
    ...     sorted(sd.get_parameters(grad_only=False)), net.nodes["W"].shape
    (['W', 'c'], (3, 2))
"""

from __future__ import annotations

import numbers
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from .._errors import ConfigError
from .._random import auto_seed, auto_seeds_kept, initializer_seed, restart_auto_seeds
from ..graph import Variable
from ..layers import CNTKInitializer, initial_value
from ..parametric import current_registry, get_parameter_or_create
from ._layer_library import _positive_ints, cntk_fans, cntk_initializer, member_name
from ._library import cntk_shape, learning_rate_multiplier
from ._text_matrix import fill_dims, read_text_matrix

__all__ = ["ParameterFunctions", "PendingParameter"]


class ParameterFunctions:
    """``Parameter``, ``ParameterTensor`` and ``Constant``, and the naming of the parameters
    they (and the layers) made.  The library holding it keeps ``_unnamed_parameters`` (each
    made parameter with its placeholder name and expression path), ``_constants``,
    ``learning_rate_multipliers`` (``id -> (parameter, multiplier)`` of those trained at a
    multiplier other than 1),
    ``named_layers``, ``path`` and ``_node``."""

    #: the names Stadyn gave parameters and constants sharing one path before its model files
    #: were tagged with names version 2 (:data:`._model_files.NAMES_VERSION`), where they
    #: differ: name now -> name then (set by :meth:`name_parameters`)
    untagged_file_names: dict[str, str] = {}

    def Parameter(self, outputDim, inputDim, learningRateMultiplier=1.0, init="",
                  initValueScale=1, value=0, initValue="", initFromFilePath="",
                  initFromLiteral="", initOnCPUOnly=True, randomSeed=-1, tag=""):
        """A learnable ``[outputDim x inputDim]`` matrix (Stadyn shape ``(inputDim, outputDim)``);
        ``inputDim = 0`` is inferred by the first ``Times`` that uses it."""
        return self._parameter((outputDim, inputDim), learningRateMultiplier, init,
                               initValueScale, value, initValue, initFromFilePath,
                               initFromLiteral, tag, "Parameter", random_seed=randomSeed)

    def ParameterTensor(self, dims, learningRateMultiplier=1.0, init="", initValueScale=1,
                        value=0, initValue="", initFilterRank=0, initOutputRank=1,
                        initFromFilePath="", initFromLiteral="", initOnCPUOnly=True,
                        randomSeed=-1, tag=""):
        """A learnable tensor of shape ``dims`` (column-major); a random ``init`` draws with
        CNTK's fans for ``initFilterRank`` and ``initOutputRank``."""
        dims = dims if isinstance(dims, tuple) else (dims,)
        return self._parameter(dims, learningRateMultiplier, init, initValueScale, value,
                               initValue, initFromFilePath, initFromLiteral, tag,
                               "ParameterTensor", (int(initFilterRank), int(initOutputRank)),
                               random_seed=randomSeed)

    def _parameter(self, cntk_dims, lr_multiplier, init, scale, value, init_value, from_file,
                   from_literal, tag, what, ranks=(0, 1), random_seed=-1):
        for d in cntk_dims:
            if isinstance(d, bool) or not isinstance(d, int) or d < 0:
                raise ConfigError(f"{what}: dimensions must be non-negative integers, got "
                                  f"{cntk_dims!r}")
        text = _text_value(init, from_file, from_literal, what)
        if text is not None:
            dims, value = fill_dims(cntk_dims, read_text_matrix(*text, what), what)
            return self._make_parameter(cntk_shape(dims), value,
                                        learning_rate_multiplier(lr_multiplier, what), tag,
                                        ranks, self.path)
        if isinstance(init_value, numbers.Real) and not isinstance(init_value, bool):
            initializer: Any = float(init_value)
        elif init_value not in ("", None):
            raise ConfigError(f"{what}: initValue must be a number")
        elif str(init).lower() == "fixedvalue":
            initializer = float(value)
        else:
            initializer = cntk_initializer(init or "uniform", scale)
        if isinstance(initializer, CNTKInitializer):
            # cntk.exe's LearnableParameter takes its seed when it is made, even when its shape
            # is inferred later: 'randomSeed' if given, else the next of the count
            forced = int(random_seed)
            initializer = initializer.with_seed(forced if forced >= 0 else initializer_seed())
        multiplier = learning_rate_multiplier(lr_multiplier, what)
        shape = cntk_shape(cntk_dims)
        if 0 in shape:
            return PendingParameter(self, shape, initializer, multiplier, tag, ranks, self.path)
        return self._make_parameter(shape, initializer, multiplier, tag, ranks, self.path)

    def _make_parameter(self, shape, initializer, multiplier, tag, ranks=(0, 1), path=""):
        """A parameter node; ``multiplier`` is its ``learningRateMultiplier`` (a bool: 1 or 0):
        0 leaves it out of training, another value scales the learning rate of its updates
        (kept in ``learning_rate_multipliers``)."""
        # a placeholder name until the network is evaluated (name_parameters): the order
        # parameters are made in depends on the evaluation order, their node names do not
        registry_name = _claim("anonymous") + "/W"
        fan_in, fan_out = cntk_fans(tuple(reversed(shape)), *ranks) if shape else (1, 1)
        value = initial_value(initializer, shape, fan_in, fan_out)
        multiplier = float(multiplier)
        v = get_parameter_or_create(registry_name, shape, value, multiplier > 0)
        if multiplier > 0 and multiplier != 1.0:
            self.learning_rate_multipliers[id(v)] = (v, multiplier)
        if path:
            self._unnamed_parameters.append((v, registry_name, path))
        return self._node(v, "LearnableParameter", tag or "")

    def checkpoint(self) -> Callable[[], None]:
        """A function that forgets the parameters made after this call (the registry's
        entries and their names, the seeds they took, the pending parameters given a shape
        since), so that those made again take the same names and values.

        Example:
            >>> import stadyn as sd
            >>> from stadyn.brainscript import StadynLibrary
            >>> lib = StadynLibrary()
            >>> with sd.parameter_registry(sd.ParameterRegistry()):
            ...     forget = lib.checkpoint()
            ...     _ = lib.Parameter(2, 3)
            ...     forget()
            ...     len(sd.get_parameters())
            0
        """
        registry = current_registry()
        names = set(registry)
        with auto_seeds_kept():         # (the count read, not moved)
            seed = auto_seed()
        made, layers, shaped = (len(self._unnamed_parameters), len(self.named_layers),
                                len(self._shaped_pending))
        kept = {"learning_rate_multipliers": set(self.learning_rate_multipliers),
                "_constants": set(self._constants)}

        def forget() -> None:
            new = [k for k in registry if k not in names]
            for k in new:
                registry.pop(k)
            for scope in {k.split("/")[0] for k in new}:
                if not registry.items(scope):
                    registry.remove(scope)        # its name free again
            restart_auto_seeds(seed)
            for pending in self._shaped_pending[shaped:]:
                pending.variable = None
            del self._unnamed_parameters[made:], self.named_layers[layers:], \
                self._shaped_pending[shaped:]
            for attr, keys in kept.items():
                table = getattr(self, attr)
                for k in [k for k in table if k not in keys]:
                    del table[k]
        return forget

    def name_parameters(self, nodes: dict[str, Any], roots: Any = ()) -> None:
        """Register each parameter under cntk.exe's name of its node: the expression path it
        was made at (``W0``; ``out.W`` for ``out = m (x)`` where ``m (x) = { W = Parameter
        (...) ... }``; ``z.PlusArgs[1]`` for ``z = W * x + Parameter (4, 1)``; a layer's
        parameters add CNTK.core.bs's member names), so a model file's parameters are matched
        by name whatever order the network makes them in.  Two parameters at one path are
        named as cntk.exe names them: the one its breadth-first walk from ``roots`` reaches
        first takes the path, the next ``_`` and the path, and so on (ResNet20's
        ``_z.x.x.x.b...W``).  A parameter made at no path, at the path of another node, or at
        a shared path the walk does not order keeps its ``anonymous_<n>/W``, numbered in the
        order made."""
        registry = current_registry()
        made, self._unnamed_parameters = self._unnamed_parameters, []
        for layer, path, members in self.named_layers:   # Dense, Convolutional, LSTM, ...
            made += [(v, v.name, f"{path}.{member_name(v.name, members)}")
                     for v in layer.parameters]
        self.named_layers = []
        groups: dict[str, list[tuple[Variable, str]]] = {}
        for v, registry_name, path in made:
            other = nodes.get(path)
            if isinstance(other, PendingParameter):
                other = other.variable
            if other is not None and other is not v:    # a Python function's own path
                continue
            if registry.get(registry_name) is v:
                groups.setdefault(path, []).append((v, registry_name))
        shared = any(len(g) > 1 for g in groups.values())
        order = _breadth_first(roots, self._node_inputs) if shared else {}
        before = _breadth_first(roots, _op_inputs) if shared else {}
        self.untagged_file_names = {}
        # the names taken as they will be once the renames are made (made at once: one by one,
        # each rebuilds the registry's order, quadratic in the parameters)
        taken, renames = set(registry), []
        for path, group in groups.items():
            if len(group) > 1:
                if not any(c in path for c in ".[]") or \
                        not all(id(v) in order for v, _ in group):
                    continue            # cntk.exe: a duplicated name; or an order unknown
                group.sort(key=lambda item: order[id(item[0])])
            name, given = path, {}
            for v, registry_name in group:
                while name in taken and any(c in path for c in ".[]"):
                    name = "_" + name
                if name not in taken:
                    renames.append((registry_name, name))
                    taken.discard(registry_name)
                    taken.add(name)
                    given[id(v)] = name
            if len(group) > 1 and all(id(v) in before for v, _ in group):
                # (the k-th in the old walk took the k-th name)
                then = sorted(group, key=lambda item: before[id(item[0])])
                self.untagged_file_names.update(
                    (given[id(u)], given[id(v)]) for (v, _), (u, _) in zip(group, then)
                    if v is not u and id(v) in given and id(u) in given)
        registry.rename_all(renames)

    def _node_inputs(self, v: Variable) -> list[Any]:
        """The inputs of cntk.exe's node ``v``: the nodes (a library function's, a parameter,
        an input) that Stadyn's ops below ``v`` reach first, those its function was given
        first, in their order (``made_inputs``), then the others (the constants of its number
        arguments) in the order the ops take them."""
        given = self.made_inputs(v) or []
        found: dict[int, Variable] = {id(u): u for u in given if isinstance(u, Variable)}
        passed: set[int] = set()
        stack = list(reversed(v.parent.inputs)) if v.parent is not None else []
        while stack:
            u = stack.pop()
            if id(u) in found or id(u) in passed:
                continue
            if u.parent is None or id(u) in self._operations:
                found[id(u)] = u
            else:                                   # one of Stadyn's ops inside the node
                passed.add(id(u))
                stack.extend(reversed(u.parent.inputs))
        return list(found.values())

    def number_operand(self, value: Any) -> Any:
        """A number operand of an infix operator or ``if`` on nodes as cntk.exe makes it
        (BrainScriptEvaluator.cpp's ``CastToComputationNode``): a ``[1]`` ``Constant`` named
        by the operator's expression path, which the operator's own node takes first, so
        ``_`` and the path (``rmse = Sqrt (sqerr / labelDim)``: ``_rmse.z``).

        Example:
            >>> import stadyn as sd
            >>> from stadyn.brainscript import StadynLibrary, build_network
            >>> with sd.parameter_registry(sd.ParameterRegistry()):
            ...     _ = build_network("{ x = Input {2} ; y = (x + 1) * 2 }", StadynLibrary())
            ...     {k: v.shape for k, v in sd.get_parameters(grad_only=False).items()}
            {'_y.TimesArgs[0]': (1,), '_y': (1,)}
        """
        path = "_" + self.path if self.path else ""
        v = self._make_parameter((1,), float(value), False, "", path=path)
        self._constants[id(v)] = (v, float(value))
        return v

    def Constant(self, val, rows=1, cols=1, tag=""):
        """A non-learnable ``[rows x cols]`` matrix filled with ``val``: as CNTK.core.bs's
        ``Constant``, a ``LearnableParameter`` with ``learningRateMultiplier = 0`` (a parameter
        the learners leave alone, saved in the model file with the others), not an input."""
        if isinstance(val, bool) or not isinstance(val, numbers.Real):
            raise ConfigError(f"Constant: val must be a number, got {val!r}")
        shape = cntk_shape((_positive_ints(rows, "Constant: rows"),
                            _positive_ints(cols, "Constant: cols")))
        v = self._make_parameter(shape, float(val), False, "", path=self.path)
        if rows == 1 and cols == 1:
            self._constants[id(v)] = (v, float(val))
        return self._node(v, "LearnableParameter", tag or "")


def _text_value(init: Any, from_file: Any, from_literal: Any, what: str
                ) -> tuple[str, str] | None:
    """The text and its name in errors when the parameter is filled from text, as cntk.exe's
    LearnableParameter chooses: ``init = "fromLiteral"`` reads ``initFromLiteral``;
    ``init = "fromFile"``, or no ``init`` beside an ``initFromFilePath`` (before ``initValue``),
    reads the file.  An ``initFromLiteral`` without ``init = "fromLiteral"`` is not read
    (cntk.exe's default ``init`` is then ``uniform``: CNTK.core.bs's ``ConstantFromString``
    gives no ``init`` and so a random constant)."""
    init, from_file = str(init or ""), str(from_file or "")
    if init == "fromLiteral":
        if not from_literal:
            raise ConfigError(f'{what}: initFromLiteral parameter must be provided when using '
                              '"fromLiteral" initialization method')
        return str(from_literal), "initFromLiteral"
    if init == "fromFile" or (not init and from_file):
        if not from_file:
            raise ConfigError(f'{what}: initFromFilePath parameter must be provided when using '
                              '"fromFile" initialization method')
        try:
            with open(from_file, encoding="utf-8") as f:
                return f.read(), f"initFromFilePath '{from_file}'"
        except OSError as exc:
            raise ConfigError(f"{what}: initFromFilePath '{from_file}' cannot be read: "
                              f"{exc.strerror}") from None
    return None


def _breadth_first(roots: Any, inputs_of: Any) -> dict[int, int]:
    """The position of each node in cntk.exe's walk of a network (ComputationNetwork::
    ConstructFromRoots, ComputationNetworkScripting.cpp:106-176): from the roots in order, a
    node's inputs after it, breadth first.  Over cntk.exe's nodes
    (:meth:`ParameterFunctions._node_inputs`: a ``Clip``'s ``maxValue`` is one step below it,
    as its ``minValue``) for the names of names version 2; over Stadyn's finer ops
    (:func:`_op_inputs`: ``maxValue`` two steps below) for the names model files were written
    with before it."""
    order: dict[int, int] = {}
    queue = deque(roots)
    while queue:
        v = queue.popleft()
        if not isinstance(v, Variable) or id(v) in order:
            continue
        order[id(v)] = len(order)
        queue.extend(inputs_of(v))
    return order


def _op_inputs(v: Variable) -> Any:
    """The inputs of the Stadyn op that made ``v`` (none for a leaf)."""
    return v.parent.inputs if v.parent is not None else ()


def _claim(base: str) -> str:
    return current_registry().claim(base)


class PendingParameter:
    """A ``Parameter`` whose input dimension (0, CNTK's ``Inferred``) the first ``Times`` sets."""

    def __init__(self, library: ParameterFunctions, shape: tuple[int, ...], initializer: Any,
                 multiplier: float, tag: str, ranks: tuple[int, int] = (0, 1), path: str = ""):
        self.library, self.shape, self.initializer = library, shape, initializer
        self.multiplier, self.tag, self.ranks, self.path = multiplier, tag, ranks, path
        self.variable: Variable | None = None

    @property
    def need_grad(self) -> bool:
        """Whether training changes the parameter (its multiplier is not 0)."""
        return self.multiplier > 0

    def materialize(self, data: Variable, output_rank: int) -> Variable:
        if self.variable is not None:
            return self.variable
        lib = self.library
        batched = lib.has_batch_axis(data)
        sample = data.shape[1:] if batched else data.shape
        out = self.shape[len(self.shape) - output_rank:]
        if 0 in out:
            raise ConfigError("Parameter: only the input dimension can be inferred (0)")
        in_rank = len(self.shape) - output_rank
        inferred = tuple(sample[len(sample) - in_rank:]) if in_rank > 1 else \
            (int(np.prod(sample)),)
        known = self.shape[:in_rank]
        # (an outputRank past the parameter's rank drops dimensions here: Times then refuses
        # the rank, naming the shape made)
        return self._made(tuple(k or i for k, i in zip(known, inferred)) + tuple(out))

    def infer(self, dims: tuple[int, ...]) -> Variable:
        """The parameter with its 0 dimensions taken from ``dims`` (Stadyn order, one for each
        of its dimensions; CNTK's ``ValidateInferInputDimsFrom``)."""
        return self._made(tuple(d or g for d, g in zip(self.shape, dims)))

    def infer_like(self, sample: tuple[int, ...]) -> Variable:
        """The parameter made with the dimensions of ``sample`` (an element-wise partner's
        per-sample shape, or a delay's per-step shape, Stadyn order) matched from CNTK's first
        dimension on (the last in Stadyn's order; cntk.exe's ValidateInferBinaryInputDims), a
        missing one left 0: the one rule of an element-wise partner and of a delay's initial
        state."""
        rank = len(self.shape)
        dims = sample[len(sample) - rank:] if len(sample) >= rank else \
            (0,) * (rank - len(sample)) + sample
        return self.infer(tuple(dims))

    def _made(self, shape: tuple[int, ...]) -> Variable:
        """The parameter, made once with ``shape``, the same Variable afterwards."""
        if self.variable is None:
            self.variable = self.library._make_parameter(shape, self.initializer,
                                                         self.multiplier, self.tag, self.ranks,
                                                         self.path)
            self.library._shaped_pending.append(self)
        return self.variable

    def __repr__(self) -> str:
        return f"Parameter(shape {self.shape}, input dimension inferred later)"
