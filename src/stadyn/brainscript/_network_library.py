"""CNTK's network-level BrainScript operations, ``BS.Network`` in CNTK.core.bs (implemented in
CNTK's ``ComputationNetworkScripting.cpp``), for :class:`~._stadyn_library.StadynLibrary` (a
mixin: it uses the library's ``_value``, ``_node``, ``_batched``, ``inputs``,
``precompute_nodes`` and ``precomputed_copy``).

- ``BS.Network.Load (pathName)``: a model file (Stadyn's, as ``stadyn train`` writes it, or a
  CNTK 2 model) as a record of its nodes by name (CNTK's ``ComputationNetworkFromFile``; a name
  with a ``.`` is reached with ``_`` instead, names with ``[`` not at all).  Its nodes keep their
  names in the network that uses them (an input is fed from the reader stream of its name), its
  parameters join the command's and are trained with it; a network description that holds the
  loaded network as a member takes in only the nodes its other members reach.  Its
  ``criterionNodes``, ``evaluationNodes`` and ``outputNodes`` are the nodes the model file tags
  so (``stadyn train`` and the ``edit`` action save the tags), else its losses and metrics; a
  ``SumElements`` node is again one number for the minibatch (no batch axis).  A model saved
  before the data pass that computes its ``Mean``/``InvStdDev`` values (by the ``edit``
  action: they are NaN) gives them back as pre-computed nodes still to compute (the model file
  tags the node each is computed from), which the next ``train`` command's data pass computes,
  as CNTK's; one whose file does not say from what is refused, naming the value.  Its Inputs
  that are not sequences (a model trained on one-step data) read each step of the sequences
  the readers feed as a sample, where the network's own Inputs would be sequences: cntk.exe
  links a loaded network's Inputs to the reader's layout as any other's
  (:meth:`NetworkFunctions.fed_as_sequences`).
- ``BS.Network.CloneFunction (inputNodes, outputNodes, parameters = "learnable")``: a function
  that copies the part of a network between ``inputNodes`` (a node or an array of nodes, the
  function's arguments in that order) and ``outputNodes`` (a node, or a record of nodes: the
  function then returns a record with the same members).  The parameters the outputs depend on
  are copied with their current values and stay learnable (``"learnable"``), are copied and
  frozen (``"constant"``: not trained) or are shared with the original (``"shared"``); inputs
  not listed, and nodes that depend on neither the listed inputs nor a copied parameter, are
  shared.  A pre-computed node (``Mean``, ``InvStdDev``: ``MeanVarNorm``, ``LogPrior``) whose
  input is copied is a new pre-computed node, which the data pass before training computes
  from the copy's own input, whatever ``parameters`` says; one of a loaded model is computed
  already and keeps its values (copied or shared as a parameter).  Each call makes a new copy.
- ``BS.Network.Edit (inputModel, editFunctions, additionalRoots)``: a new network in which every
  node of ``inputModel`` is offered to the edit functions in turn (the first that returns
  another node replaces it); the nodes that depend on a replaced node are made again, the rest
  are shared.  ``BS.Network.Editing.ReplaceLinksToNode (old, new)`` and
  ``ReplaceLinksToNamedNode (name, new)`` make such functions.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from .._errors import ConfigError, StadynError
from ..graph import Variable, apply, base_axis_kept, name_scope, topological_nodes
from ..parametric import current_registry, get_parameter_or_create
from ..serialize import load
from . import _ast as A
from ._model_files import tagged_inputs, tagged_multipliers, tagged_operation
from ._precompute_library import PreComputeNode, never_computed
from ._values import BSArray, Record

__all__ = ["NetworkFunctions", "load_model_file", "reached_ids", "replay"]

_TREATMENTS = ("learnable", "constant", "shared")
_GROUPS = {"loss": "criterionNodes", "metric": "evaluationNodes"}
_TAGGED = {"criterion": "criterionNodes", "evaluation": "evaluationNodes",
           "output": "outputNodes"}


class NetworkFunctions:
    """``BS.Network.Load``, ``CloneFunction``, ``Edit`` and ``IsSameObject``."""

    #: how ``BS.Network.Load`` reads a model file: ``path -> stadyn.serialize.Network`` (a tool
    #: that builds networks without running the commands before, such as
    #: ``tools/cntk_config_survey.py``, puts a stand-in for a file a command would write)
    model_loader: Callable[[str], Any]

    def _init_networks(self) -> dict[str, Any]:
        self._own_names: dict[int, tuple[Variable, str]] = {}
        # a loaded node's inputs in cntk.exe's order, by name, where its file said (MEL)
        self._links: dict[int, tuple[Variable, list[str]]] = {}
        self._peeked: dict[str, Any] = {}
        self.model_loader = load_model_file
        return {"_NetworkLoad": self._NetworkLoad, "_CloneFunction": self._CloneFunction,
                "_NetworkEdit": self._NetworkEdit, "IsSameObject": self.IsSameObject,
                "_ReplaceLinksToNamedNode": self._ReplaceLinksToNamedNode}

    # ---- Load -------------------------------------------------------------------------------
    def _NetworkLoad(self, pathName):
        path = str(pathName)
        loaded = self._peeked.pop(path, None) or self.model_loader(path)
        self.fed_as_sequences(loaded)
        tags = getattr(loaded, "tags", None) or {}
        # pre-computed values the file says how to compute (a Stadyn model file tags the input
        # of each: "precompute:<Mean|InvStdDev>:<parameter>"), computed by the next data pass
        pending, computed = {}, set()
        for name, items in tags.items():
            for tag in items:
                kind, operation, rest = (tag.split(":", 2) + ["", ""])[:3]
                parameter, _, member = rest.rpartition(":")
                if kind == "precompute" and operation in ("Mean", "InvStdDev"):
                    pending[parameter] = (operation, name, member or None)
                elif kind == "hasComputed" and rest == "true":   # (its value may be NaN)
                    computed.add(operation)
        for name in computed:
            pending.pop(name, None)
        for name, p in loaded.registry.items():
            if name in pending or name in computed:
                continue
            if not p.need_grad and p.size and never_computed(p):
                raise ConfigError(
                    f"BS.Network.Load: '{path}' holds a pre-computed value that was never "
                    f"computed ('{name}' is not a number): the model was saved before the data "
                    "pass (by an edit action). CNTK computed it in the next train command; "
                    "Stadyn cannot (the file does not say from what: it was not saved by a "
                    "BrainScript command of this Stadyn): train the network that makes it "
                    "first, or load that network's trained model")
        # the file's parameters keep the file's names, so a network saved and loaded again
        # (an edit action's modelPath.0, then the train's model file) names them the same each
        # time and a model file finds them by name; under a scope of their own only where a
        # name is taken already (the same file loaded twice)
        registry = current_registry()
        scope = (registry.claim("Load") + "/"
                 if any(name in registry for name in loaded.registry) else "")
        for name, parameter in loaded.registry.items():
            registry.set(scope + name, parameter)
        for name, multiplier in tagged_multipliers(tags).items():   # (cntk.exe's file keeps
            parameter = loaded.registry.get(name)                     # each parameter's)
            if parameter is not None and parameter.need_grad:
                self.learning_rate_multipliers[id(parameter)] = (parameter, multiplier)
        nodes: dict[str, Variable] = {}
        for name, v in loaded.inputs.items():
            self.inputs.append(v)
            self._batched.add(v)
            nodes[name] = self._node(v, "InputValue")
        for node in topological_nodes(list(loaded.outputs.values())):
            for v in node.outputs:              # a SumElements (one number a minibatch)
                if v is not None and _sums_everything(v):
                    self._batched.unmark(v)
                    self._node(v, "SumElements")
        for parameter, p in loaded.registry.items():      # (in the order they were made)
            if parameter not in pending or not never_computed(p):
                continue
            operation, name, member = pending[parameter]
            source = loaded.outputs.get(name, loaded.inputs.get(name))
            if source is not None:
                self.precompute_nodes.append(
                    PreComputeNode(operation, source, p, scope + parameter, member))
        for v, origin in loaded.origins:    # a CNTK model: its own operation names
            if origin.kind == "function" and origin.op_name and self.operation_of(v) is None:
                self._node(v, origin.op_name)
        # the criterion, evaluation and output nodes: those the model file tags as such (a
        # Stadyn model file saved by a BrainScript command: CNTK's node tags); a file without
        # tags (a CNTK model, a model saved from Python) has its losses and its metrics
        groups: dict[str, list[Variable]] = {}
        tagged = any(t in _TAGGED for items in tags.values() for t in items)
        for name, v in loaded.outputs.items():
            if self.operation_of(v) is None and v.parent is not None:
                self._node(v, tagged_operation(tags.get(name, ())) or _operation(v))
            links = tagged_inputs(tags.get(name, ()))
            if links is not None:
                self._links[id(v)] = (v, links)
            if tagged:
                found = [_TAGGED[t] for t in tags.get(name, ()) if t in _TAGGED]
            else:
                found = [_GROUPS[c] for c in [v.parent.spec.category if v.parent is not None
                                              else ""] if c in _GROUPS]
            for group in found:
                if all(u is not v for u in groups.get(group, ())):
                    groups.setdefault(group, []).append(v)
            nodes.setdefault(name, v)
        named = [(origin.name, v) for v, origin in loaded.origins if origin.name]
        for name, v in named:        # a CNTK model: what find_by_name finds (one node a name)
            if sum(n == name for n, _ in named) == 1:
                nodes.setdefault(name, v)
        return self._network_record(nodes, loaded, groups)

    def fed_as_sequences(self, loaded: Any) -> None:
        """Where the readers feed sequences of several steps, put the loaded network's Inputs
        that are not sequences on the default layout (:attr:`default_axis_inputs`), by the rule
        of the network's own Inputs (every one where the network declares no ``DynamicAxis{}``,
        else those whose own stream does): the reader then feeds them each step as a sample
        (``InputSource``), as such a model holds no sequence function and cntk.exe computes it
        step by step.  cntk.exe's ``BS.Network.Load`` keeps no layout (CNTK.core.bs:1684,
        ``ComputationNetworkFromFile``, ComputationNetworkScripting.cpp:238-253): the network
        it runs is compiled again, which links each Input of no dynamic axis to the network's
        layout (ComputationNetworkEvaluation.cpp:513, 628-632), the reader's copied into it
        (ReaderShim.cpp:318-327).  Before bs28 such a model was refused (``stream 'features'
        delivered samples of shape (4, 4); the input needs (4,)``)."""
        fed = self._fed_sequences
        framed = [v for name, v in loaded.inputs.items() if fed and v.sequence_lengths is None
                  and (not self._declares_axis or name.lower() in fed)]
        self.default_axis_inputs.extend(framed)
        self.framed_inputs.extend(framed)

    def loads_sequences(self, expr: Any) -> bool:
        """Whether a network description loads (``BS.Network.Load ("path")``, a literal path)
        a model whose inputs are sequences: then its own Inputs are sequences too, as in CNTK,
        where every Input has the default sequence axis.  (A file that cannot be loaded says
        no; ``Load`` reports it when it is evaluated.)"""
        found = False
        for path in _literal_loads(expr):
            try:
                loaded = self._peeked[path] = self._peeked.get(path) or self.model_loader(path)
            except (ConfigError, StadynError):
                continue
            found = found or any(v.sequence_lengths is not None for v in loaded.inputs.values())
        return found

    def _network_record(self, nodes: Mapping[str, Variable], network: Any,
                        groups: Mapping[str, list[Variable]]) -> Record:
        """A network's record: members named as CNTK's network gives them (``.`` as ``_``),
        and its node groups (``criterionNodes``, ...)."""
        members: dict[str, Any] = {key: BSArray.of_values(v) for key, v in groups.items()}
        for name, v in nodes.items():
            self._own_names.setdefault(id(v), (v, name))
            key = name.replace(".", "_")
            if "[" not in key and "$" not in key:
                members.setdefault(key, v)
        return Record.of_values(members, network=network)

    def own_names(self, nodes: list[Any]) -> dict[str, Any]:
        reached = reached_ids([v for v in nodes if isinstance(v, Variable)])
        return {name: v for key, (v, name) in self._own_names.items() if key in reached}

    def loaded_inputs(self, v: Any) -> list[str] | None:
        """The inputs, in cntk.exe's order and by name, of a node of a loaded network whose
        model file lists them (an NDL network's, MEL's), else None."""
        entry = self._links.get(id(v))
        return list(entry[1]) if entry is not None and entry[0] is v else None

    def is_loaded(self, v: Any) -> bool:
        """Whether ``v`` is a node of a loaded network (it has a name of its own)."""
        entry = self._own_names.get(id(v))
        return entry is not None and entry[0] is v

    # ---- CloneFunction ----------------------------------------------------------------------
    def _CloneFunction(self, inputNodes, outputNodes, parameters="learnable"):
        what = "BS.Network.CloneFunction"
        inputs = [self._value(v, what) for v in _items(inputNodes)]
        if isinstance(outputNodes, Mapping):
            outputs = {k: self._value(v, what) for k, v in outputNodes.items()}
        else:
            outputs = {"": self._value(outputNodes, what)}
        if not outputs:
            raise ConfigError(f"{what}: at least one output node must be given")
        if parameters not in _TREATMENTS:
            raise ConfigError(f"{what}: parameters must be 'learnable', 'constant' or 'shared', "
                              f"got {parameters!r}")
        reached = reached_ids(list(outputs.values()))
        for k, v in enumerate(inputs):
            if id(v) not in reached:
                raise ConfigError(f"{what}: no output depends on input {k + 1} "
                                  f"({self._describe(v)})")
        # the pre-computed nodes the outputs read that the data pass has yet to compute (in the
        # order made: a node's input before the node); those of a loaded model are computed
        # (their values came with it) and are copied or shared as its other parameters
        pending = [n for n in self.precompute_nodes if id(n.value) in reached]
        skip = {id(n.value) for n in pending}
        copied = [] if parameters == "shared" else \
            [(name, p) for name, p in current_registry().items()
             if id(p) in reached and id(p) not in skip]

        def cloned(*args: Any) -> Any:
            if len(args) != len(inputs):
                raise ConfigError(f"the function CloneFunction made takes {len(inputs)} "
                                  f"input(s), got {len(args)}")
            subs = [(old, self._value(new, "the cloned function")) for old, new in
                    zip(inputs, args)]
            scope = current_registry().claim("clone") if copied else ""
            for name, p in copied:
                value = get_parameter_or_create(f"{scope}/{name}", p.shape, p.d.copy(),
                                                p.need_grad and parameters == "learnable")
                subs.append((p, self._node(value, "LearnableParameter")))
            made = self._remake(list(outputs.values()), subs, pending)
            result = {k: made.get(id(v), v) for k, v in outputs.items()}
            return result[""] if "" in result else result
        return cloned

    def _remake(self, roots: list[Variable], subs: list[tuple[Variable, Variable]],
                pending: list[Any]) -> dict[int, Variable]:
        """:func:`replay` where a pre-computed node of ``pending`` (not computed yet, in the
        order made) whose input is made again is made again too, as CNTK's CloneFunction and
        Edit duplicate it: a new node, which the data pass computes from the new input."""
        made = replay([], subs)
        for node in pending:
            made = replay([node.input], [], made)
            if id(node.input) in made and id(node.value) not in made:
                made[id(node.value)] = self.precomputed_copy(node, made[id(node.input)])
        return replay(roots, [], made)

    def _describe(self, v: Variable) -> str:
        entry = self._own_names.get(id(v))
        return f"'{entry[1]}'" if entry is not None and entry[0] is v else \
            f"a node of shape {tuple(v.shape)}"

    # ---- Edit -------------------------------------------------------------------------------
    def _NetworkEdit(self, inputModel, editFunctions, additionalRoots):
        what = "BS.Network.Edit"
        if not isinstance(inputModel, Record) or inputModel.network is None:
            raise ConfigError(f"{what}: inputModel must be a network (BS.Network.Load, "
                              f"BS.Network.Edit), got {type(inputModel).__name__}")
        functions = _items(editFunctions)
        for f in functions:
            if not callable(f) or self.is_node(f):
                raise ConfigError(f"{what}: editFunctions must be functions of a node")
        groups = {key: list(v) for key, v in inputModel.items() if key in _TAGGED.values()}
        members = {name: self._value(v, what) for name, v in inputModel.items()
                   if name not in groups}
        names = {id(v): self._own_names.get(id(v), (v, name))[1] for name, v in members.items()}
        roots = list(members.values()) + [self._value(v, what) for v in _items(additionalRoots)]
        subs = []
        for v in _graph_variables(list(members.values())):
            for f in functions:
                new = f(v)
                if new is not v:
                    subs.append((v, self._value(new, what)))
                    break
        reached = reached_ids(roots)
        made = self._remake(roots, subs, [n for n in self.precompute_nodes
                                          if id(n.value) in reached])
        replaced = {id(old) for old, _ in subs}       # (a replacement keeps its own name)
        edited = {names[id(v)]: v if id(v) in replaced else made.get(id(v), v)
                  for v in members.values()}
        groups = {key: [made.get(id(v), v) for v in nodes] for key, nodes in groups.items()}
        return self._network_record(edited, inputModel.network, groups)

    def IsSameObject(self, a, b):
        """Whether ``a`` and ``b`` are the same object (node, record, ...)."""
        return a is b

    def _ReplaceLinksToNamedNode(self, name, replacement) -> Callable[[Any], Any]:
        def edit(node: Any) -> Any:
            entry = self._own_names.get(id(node))
            return replacement if entry is not None and entry[0] is node and \
                entry[1] == name else node
        return edit


def load_model_file(path: str) -> Any:
    """``BS.Network.Load``'s model file (:func:`stadyn.load`), its errors as ConfigErrors."""
    if not os.path.isfile(path):
        raise ConfigError(f"BS.Network.Load: the model file '{path}' does not exist")
    try:
        return load(path)
    except (StadynError, OSError) as exc:
        raise ConfigError(f"BS.Network.Load: cannot load '{path}': {exc}") from None


def replay(roots: list[Variable], subs: list[tuple[Variable, Variable]],
           made: dict[int, Variable] | None = None,
           only: set[int] | None = None) -> dict[int, Variable]:
    """The graph of ``roots`` with each ``(old, new)`` of ``subs`` put in: every op that reads a
    replaced Variable (or one made again) is applied again, the rest is kept.  Returns
    ``{id(old): new}`` for everything replaced or made again (a sequence read through its
    lengths reads the substitute's); ``made``, such a mapping of an earlier replay, goes on
    (what it holds is not made again); ``only`` (ids of op nodes) limits what is applied again
    to those ops (MEL's SetInput: one node's own ops)."""
    mapping: dict[int, Variable] = dict(made or {})
    for old, new in subs:
        mapping[id(old)] = new
        if old.sequence_lengths is not None and new.sequence_lengths is not None:
            mapping.setdefault(id(old.sequence_lengths), new.sequence_lengths)

    def sub(a: Any) -> Any:
        if isinstance(a, Variable):
            return mapping.get(id(a), a)
        if isinstance(a, (list, tuple)) and any(isinstance(x, Variable) for x in a):
            return type(a)(sub(x) for x in a)
        return a

    for node in topological_nodes(list(roots)):
        outputs = [o for o in node.outputs if o is not None]
        if (outputs and all(id(o) in mapping for o in outputs)) or \
                not any(id(i) in mapping for i in node.inputs) or \
                (only is not None and id(node) not in only):
            continue
        args = tuple(sub(a) for a in node.args)
        kwargs = {k: sub(a) for k, a in node.kwargs.items()}
        if node.spec.name == "affine" and isinstance(args[0], Variable):
            # a Times applied again to a right operand with more or fewer axes, as CNTK
            # validates the cloned node again: the axes it reduced over are reduced again, the
            # leading ones it has now kept (Fast R-CNN's fully connected layers, cloned from a
            # network of one image, applied to the 6:6:256:R regions ROIPooling gives)
            args, kwargs = base_axis_kept(node, args, kwargs, args[0].shape)
        with name_scope(node.scope, absolute=True):
            made = apply(node.spec, args, kwargs)
        for old, new in zip(node.outputs, made if isinstance(made, tuple) else (made,)):
            if old is not None:
                mapping[id(old)] = new
    return mapping


def _operation(v: Variable) -> str:
    """The CNTK operation of a loaded node: the op that computes it, in CNTK's spelling
    (``cross_entropy_with_softmax``: ``CrossEntropyWithSoftmax``)."""
    return "".join(part.capitalize() for part in v.parent.spec.name.split("_"))


def _sums_everything(v: Variable) -> bool:
    """Whether ``v`` is what BrainScript's ``SumElements`` makes: the sum of every element
    (over the minibatch too) as a ``(1,)`` vector, with no batch axis."""
    p = v.parent
    if p is None or p.spec.name != "reshape" or tuple(v.shape) != (1,):
        return False
    q = p.inputs[0].parent
    return q is not None and q.spec.name == "sum" and q.kwargs.get("axis") is None


def _literal_loads(expr: Any) -> list[str]:
    """The paths of the ``BS.Network.Load ("path")`` calls of an AST."""
    paths, stack = [], [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, A.Call) and isinstance(e.func, A.MemberAccess) and \
                e.func.name == "Load" and isinstance(e.func.obj, A.MemberAccess) and \
                e.func.obj.name == "Network" and len(e.args) == 1 and \
                isinstance(e.args[0].value, A.String):
            paths.append(e.args[0].value.value)
        if isinstance(e, (list, tuple)):
            stack.extend(e)
        elif hasattr(e, "__dataclass_fields__"):
            stack.extend(getattr(e, f) for f in e.__dataclass_fields__ if f != "loc")
    return paths


def _items(v: Any) -> list[Any]:
    return list(v) if isinstance(v, (tuple, list)) else [v]


def reached_ids(roots: list[Variable]) -> set[int]:
    """The ids of ``roots`` and of every Variable their graph reads or makes (the one rule for
    what a network's nodes reach)."""
    reached = {id(v) for v in roots}
    for n in topological_nodes(roots):
        reached.update(id(v) for v in (*n.inputs, *n.outputs) if v is not None)
    return reached


def _graph_variables(roots: list[Variable]) -> list[Variable]:
    """Every Variable of the graph of ``roots`` once, inputs before what reads them."""
    seen: set[int] = set()
    out: list[Variable] = []
    for n in topological_nodes(roots):
        for v in (*n.inputs, *n.outputs):
            if v is not None and id(v) not in seen:
                seen.add(id(v))
                out.append(v)
    for v in roots:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out
