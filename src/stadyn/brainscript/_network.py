"""A network description's evaluation: the record, its special node lists and its named nodes."""

from __future__ import annotations

import contextvars
import ctypes
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

from . import _ast as A
from ._evaluator import Evaluator
from ._library import Library
from ._values import BSArray, Record, _err

__all__ = ["Network", "evaluate_network"]

_NETWORK_KEYS = ("featureNodes", "labelNodes", "criterionNodes", "evaluationNodes", "outputNodes")


@dataclass
class Network:
    """An evaluated ``BrainScriptNetworkBuilder`` record and its special node lists.

    ``nodes`` names every node reachable through the record's members (``z``, ``out.z``,
    ``arr[0]``), in definition order; ``name_of`` finds a node's name.  ``older_names`` maps
    a parameter's name to the one an older Stadyn gave it (read from model files it wrote).
    """

    record: Record
    feature_nodes: list[Any] = field(default_factory=list)
    label_nodes: list[Any] = field(default_factory=list)
    criterion_nodes: list[Any] = field(default_factory=list)
    evaluation_nodes: list[Any] = field(default_factory=list)
    output_nodes: list[Any] = field(default_factory=list)
    nodes: dict[str, Any] = field(default_factory=dict)
    # parameter name -> the name an older Stadyn saved it under (NDL's unnamed<n> parameters,
    # anonymous_<k>/W before d47d4df's successors named them), for the model files it wrote
    older_names: dict[str, str] = field(default_factory=dict)
    # the weights NDL's Times rule gave their input's dimensions (older Stadyns saved them
    # flat, [m x n]): only these load from a flat value
    reshaped_weights: frozenset[str] = frozenset()
    # cntk.exe's nodes where the builder knows them one for one (NDL): each node's Variable,
    # its inputs (indices, loops included) and whether it is a trained parameter
    cntk_nodes: list[tuple[Any, list[int], bool]] | None = None
    # cntk.exe's names of the nodes made inside functions that no member names
    # (``pixelwiseError.pixelNorm.z.r``: Library.inner_nodes), for the model file and MEL
    inner_nodes: dict[str, Any] = field(default_factory=dict)

    def nodes_with_gradient(self, criterion: Any) -> int | None:
        """cntk.exe's "and M nodes with gradient" for ``criterion`` from :attr:`cntk_nodes`
        (SGD.cpp: the nodes of the criterion's evaluation order that NeedsGradient: a trained
        parameter, or a node with an input that needs one, through loops too,
        ComputationNetworkEvaluation.cpp's ValidateNode); None without them.

        >>> net = Network(None, cntk_nodes=[("w", [], True), ("x", [], False),
        ...                                 ("h", [0, 3], False), ("past", [2], False),
        ...                                 ("ce", [1, 2], False), ("y", [1], False)])
        >>> net.nodes_with_gradient("ce"), net.nodes_with_gradient("y")
        (4, 0)
        """
        if self.cntk_nodes is None:
            return None
        roots = [k for k, (v, _, _) in enumerate(self.cntk_nodes) if v is criterion]
        if not roots:
            return None
        needs = [trained for _, _, trained in self.cntk_nodes]
        changed = True
        while changed:
            changed = False
            for k, (_, inputs, _) in enumerate(self.cntk_nodes):
                if not needs[k] and any(needs[i] for i in inputs):
                    needs[k] = changed = True
        reached, stack = set(roots), list(roots)
        while stack:
            for i in self.cntk_nodes[stack.pop()][1]:
                if i not in reached:
                    reached.add(i)
                    stack.append(i)
        return sum(needs[k] for k in reached)

    def name_of(self, node: Any) -> str | None:
        """The first member path under which ``node`` appears, or ``None``."""
        for name, value in self.nodes.items():
            if value is node:
                return name
        return None


def evaluate_network(expr: A.Expr, library: Library) -> Network:
    """Evaluate a network description and collect its special and named nodes.

    Every member is evaluated (as CNTK builds every node a network record defines), so a
    mistake anywhere in the record is reported.

    >>> from stadyn.brainscript._parser import parse_expression
    >>> class Nodes(Library):
    ...     def is_node(self, v): return isinstance(v, str) and v.startswith("node:")
    >>> lib = Nodes({"Input": lambda dims: f"node:input{dims}"})
    >>> net = evaluate_network(parse_expression("{ f = Input{3} ; outputNodes = (f) }"), lib)
    >>> net.output_nodes, net.name_of(net.output_nodes[0])
    (['node:input3'], 'f')
    """
    return _deep_enough(_evaluate, expr, library)


# cntk.exe evaluates a network description with C++ recursion, limited by its stack alone;
# Python's default 1000 frames stopped deep but finite descriptions (CNTK's ResNet-34, -50,
# -101, -152, ResNet110_CIFAR10 and Inception-ResNet-V1 examples: each member of a stack of
# blocks nests the evaluation; ResNet-152 needs between 3000 and 6000), while a runaway
# recursion must still end as a ConfigError (at 20000 frames: 3 s), not as a crash of the C
# stack, which Python's frames use too (a thread of 1 MB crashed at 20000 frames).  So the
# process's limit is raised once to 20000 frames (never lowered), and an evaluation runs in a
# thread of its own whose C stack of 64 MB holds them (3 KB a frame; a runaway recursion
# through a record member takes about 60 bytes a frame), whatever thread asked for it
_RECURSION_LIMIT = 20000
_STACK_BYTES = 64 << 20
_EVALUATING = "stadyn-brainscript-evaluation"


def _deep_enough(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` with :data:`_RECURSION_LIMIT` frames: in a thread of
    :data:`_STACK_BYTES` of stack (the caller's context variables copied into it; its result
    or exception handed back), or in this one where it is already such a thread (a
    description evaluated inside another's: ``BS.Network.Load``)."""
    if sys.getrecursionlimit() < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)
    if threading.current_thread().name == _EVALUATING:
        return fn(*args)
    context = contextvars.copy_context()
    done: dict[str, Any] = {}
    finished = threading.Event()

    def run() -> None:
        try:
            done["value"] = context.run(fn, *args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            done["error"] = exc
        finally:
            finished.set()

    with _thread_stack:
        before = threading.stack_size(_STACK_BYTES)
        try:
            worker = threading.Thread(target=run, name=_EVALUATING, daemon=True)
            worker.start()
        finally:
            threading.stack_size(before)
    try:
        # (an Event: a join interrupted by Ctrl-C leaves Python 3.11's thread marked stopped)
        finished.wait()
    except BaseException:       # Ctrl-C while waiting: the evaluation stops too, then it is raised
        _stop(worker, finished)
        raise
    worker.join()
    if "error" in done:
        raise done.pop("error")
    return done["value"]


_thread_stack = threading.Lock()        # (threading.stack_size is the process's setting)


def _stop(worker: threading.Thread, finished: threading.Event) -> None:
    """Raise KeyboardInterrupt in the evaluation thread ``worker`` and wait until it has
    ``finished`` (left running it would go on building the network and adding parameters to
    the registry after the caller was interrupted).  It is raised again where the thread
    still runs a second later (an evaluation that caught it), and no more once the thread has
    ended: one raised while it was already leaving (in ``run``'s handlers, before
    ``finished.set()`` took) ends it without ``finished``, and this loop then went on raising
    into no thread forever."""
    while not finished.is_set() and worker.is_alive():
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident),
                                                   ctypes.py_object(KeyboardInterrupt))
        finished.wait(1.0)
    worker.join()


def _evaluate(expr: A.Expr, library: Library) -> Network:
    library.prepare(expr)
    ev = Evaluator(library)
    value = ev.evaluate(expr)
    if not isinstance(value, Record):
        raise _err(f"a network description must be a record, got {ev._type(value)}", expr.loc)
    net = Network(value)
    try:
        _evaluate_in_cntk_order(ev, value)
        _collect_nodes(ev, value, "", net.nodes, set())
        net.nodes = dict(zip(net.nodes, library.resolve_all(list(net.nodes.values()))))
        _add_own_names(net, library, expr.loc)
        for key, attr in zip(_NETWORK_KEYS, ("feature_nodes", "label_nodes", "criterion_nodes",
                                             "evaluation_nodes", "output_nodes")):
            if key in value:
                setattr(net, attr, _node_list(ev, value[key], key, value._members[key].loc))
        library.name_parameters(net.nodes, _roots(ev, net))
        net.inner_nodes = library.inner_nodes(net.nodes)
    except RecursionError:
        raise _err("evaluation nested too deeply", ev._last_loc) from None
    return net


def _evaluate_in_cntk_order(ev: Evaluator, rec: Record) -> None:
    """Evaluate the record's members in the order cntk.exe's ComputationNetwork constructor
    asks for them: the special node lists (``criterionNodes``, ``evaluationNodes``, ...; each
    list's nodes in order), then every member, each time in the order of the member names
    (cntk.exe keeps a record's members in a sorted map).  Evaluation is lazy, so a node, and
    a parameter's seed, is made when first needed: ``ce = CrossEntropyWithSoftmax (labels,
    z)`` with ``criterionNodes = (ce)`` makes the output layer's weight first, as cntk.exe
    does (its logs show the output layer's weight with seed 1)."""
    names = sorted(rec)
    for name in names:
        if name in _NETWORK_KEYS:
            ev._to_python(rec[name])
    for name in names:
        rec[name]


def _roots(ev: Evaluator, net: Network) -> list[Any]:
    """The nodes cntk.exe's ComputationNetwork constructor starts its work list with: each
    special node list's nodes (the lists in the order of their names), then every member of
    the record that is a node (by name); it names the nodes it reaches from them, breadth
    first (two nodes of one name: the later one gets a '_' before it)."""
    lists = {"criterionNodes": net.criterion_nodes, "evaluationNodes": net.evaluation_nodes,
             "featureNodes": net.feature_nodes, "labelNodes": net.label_nodes,
             "outputNodes": net.output_nodes}
    roots = [node for key in sorted(lists) for node in lists[key]]
    for name in sorted(net.record):
        if name not in _NETWORK_KEYS and name in net.nodes:
            roots.append(net.nodes[name])
    return roots


def _add_own_names(net: Network, library: Library, loc) -> None:
    """The names the nodes reached already have (a loaded network's) for those the record does
    not name: as CNTK, another node of the same name is an error, unless the name holds ``.``,
    ``[`` or ``]`` (then ``_`` is put before it until it is free)."""
    own = library.own_names(list(net.nodes.values()))
    if getattr(net.record, "network", None) is not None:
        # the description is a loaded network itself (BS.Network.Load ("m")): its nodes keep
        # the file's names, '.' and all (cntk.exe uses the file's network as it is), not the
        # record's members' ('_' for '.')
        names = {id(v): name for name, v in own.items()}
        net.nodes = {(names[id(v)] if id(v) in names and names[id(v)].replace(".", "_") == key
                      else key): v for key, v in net.nodes.items()}
    named = {id(v) for v in net.nodes.values()}
    for name, node in own.items():
        if id(node) in named:       # a member of the record: named after it (CNTK renames it)
            continue
        while name in net.nodes and net.nodes[name] is not node:
            if not any(c in name for c in ".[]"):
                member = net.record._members.get(name)
                raise _err(f"two different nodes are named '{name}' (one of a loaded network); "
                           "CNTK refused such a network (duplicated name)",
                           member.loc if member is not None else loc)
            name = "_" + name
        net.nodes.setdefault(name, node)


def _node_list(ev: Evaluator, v: Any, key: str, loc) -> list[Any]:
    items = list(ev._to_python(v)) if isinstance(v, BSArray) else [v]
    items = [ev.library.resolve(item) for item in items]
    for item in items:
        if not ev.library.is_node(item):
            raise _err(f"'{key}' must list nodes, but holds {ev._type(item)}", loc)
    return items


def _collect_nodes(ev: Evaluator, rec: Record, prefix: str, out: dict[str, Any],
                   seen: set[int]) -> None:
    if id(rec) in seen:
        return
    seen.add(id(rec))
    for name in rec:
        if name in _NETWORK_KEYS:
            continue
        value = rec[name]
        _collect_value(ev, value, prefix + name, out, seen)


def _collect_value(ev: Evaluator, value: Any, path: str, out: dict[str, Any],
                   seen: set[int]) -> None:
    if ev.library.is_node(value):
        out.setdefault(path, value)
    elif isinstance(value, Record) and value.network is None:
        _collect_nodes(ev, value, path + ".", out, seen)
    elif isinstance(value, BSArray) and id(value) not in seen:
        seen.add(id(value))
        for k in range(len(value)):
            _collect_value(ev, value.thunk(k).force(), f"{path}[{value.first + k}]", out, seen)
