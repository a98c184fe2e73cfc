"""How ``nn.graph_def`` (``graph_def.py``) names and describes a network made from Variables as
NNabla 1.39 does, over what Stadyn's ``.nnp`` writer writes: the buffers it was given no name
for (``nnabla_names``), the parameters a proto-graph recording names after the function reading
them (``recorded_parameter_names``), and each function's
``args`` (``take_arguments``).
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from ._proto_recording import Recorder, unique_name

__all__ = ["nnabla_names", "recorded_parameter_names", "take_arguments", "named_functions",
           "described_as"]


def nnabla_names(text: str, network: str, unnamed_outputs: dict[str, int],
                  unnamed_inputs: set[str]) -> str:
    """``text`` (one network's ``.nntxt``) with the buffers ``create_graph_from_variable`` was
    given no name for named as NNabla 1.39 names them: an output after its function
    (``@net/Affine_1`` writes ``@net/Affine_out_1``), an input after the first function
    reading it (``@net/Affine_in``)."""
    functions = re.findall(r'function \{\s*name: "([^"]*)"\s*type: "([^"]*)"((?:\s*input: '
                           r'"[^"]*")*)((?:\s*output: "[^"]*")*)', text)
    renames: dict[str, str] = {}
    for fname, ftype, ins, outs in functions:
        for position, out in enumerate(re.findall(r'output: "([^"]*)"', outs)):
            if out in unnamed_outputs:
                m = re.fullmatch(r"(.*)_(\d+)", fname)
                stem, count = (m.group(1), m.group(2)) if m and m.group(1).endswith(ftype) \
                    else (fname, None)
                new = f"{stem}_out" + (f"_{count}" if count else "")
                renames[out] = new if position == 0 else f"{new}_{position}"
        for inp in re.findall(r'input: "([^"]*)"', ins):
            if inp in unnamed_inputs and inp not in renames:
                renames[inp] = f"{fname}_in"
    for old, new in renames.items():
        text = text.replace(f'"{old}"', f'"{new}"')
    return text


def recorded_parameter_names(text: str, recorder: Recorder) -> dict[str, str]:
    """The parameters of ``text`` (a network's ``.nntxt``) that NNabla 1.39's recording names
    after the function reading them, new name -> scope name: its commit names a parameter
    Variable by the scope's ``nn.get_parameters()``, which lists those with ``need_grad``
    only, so a batch normalisation's ``mean`` and ``var`` (input 3 and 4 of
    ``BatchNormalization``) become ``BatchNormalization_3`` and ``BatchNormalization_4``,
    counted with the recording's variable names.  (A parameter of no scope, an ``nn.Module``'s,
    keeps its registry name.)"""
    from ._parameter import get_parameters
    declared = set(re.findall(r'variable \{\s*name: "([^"]*)"\s*type: "Parameter"', text))
    in_scope = set(get_parameters(grad_only=False))
    with_grad = set(get_parameters(grad_only=True))
    renamed: dict[str, str] = {}
    for fname, ins in re.findall(r'function \{\s*name: "([^"]*)"\s*type: "[^"]*"((?:\s*input: '
                                 r'"[^"]*")*)', text):
        for k, inp in enumerate(re.findall(r'input: "([^"]*)"', ins)):
            if inp in declared and inp in in_scope and inp not in with_grad and \
                    inp not in renamed.values():
                renamed[unique_name(recorder.variable_names, f"{fname}_{k}")] = inp
    return renamed


def take_arguments(network: Any, outputs: Sequence[Any], built: bool = False) -> None:
    """Give each function of ``network`` (made from the graph computing ``outputs``) NNabla
    1.39's ``args``: its ``Function``'s arguments (``f.info.args``: every argument, defaults
    filled, lists, float32 values), where the file holds only those the writer writes.  The
    written functions are matched to the graph's in order, by type.  ``built``: the graph was
    built from the file by the loader for this (a loaded network's ``args`` are NNabla's too).

    Example:
        >>> import stadyn.compat.nnabla as nn, stadyn.compat.nnabla.functions as F
        >>> g = nn.graph_def.create_graph_from_variable("n", F.relu(nn.Variable((2, 3))))
        >>> g.default_graph().functions["@n/ReLU"].args
        {'inplace': False}
    """
    from ...graph import topological_nodes
    from ._function import Function, as_function
    from ._variable import Variable
    nodes = topological_nodes([v for v in outputs if isinstance(v, Variable)])
    if built:       # a network the loader built for this (its nodes are Stadyn's)
        nodes = [as_function(n) for n in nodes]
    nodes = [n for n in nodes if isinstance(n, Function)]
    taken: set[int] = set()
    for f in network.functions.values():
        for k, node in enumerate(nodes):
            if k not in taken and node.name == f.type:
                taken.add(k)
                args = dict(node.arguments)
                if built:       # the file's batch placeholder stays: Reshape's [-1, 3, 2]
                    args.update((k, list(v)) for k, v in f.args.items() if k in args and
                                isinstance(v, (list, tuple)) and v and v[0] == -1)
                f.args = args
                break


def _ordered(items: list, key: Any, order: Sequence[str]) -> list:
    """``items`` in the order their ``key`` has in ``order`` (those it lacks last, as they
    were)."""
    rank = {name: k for k, name in enumerate(order)}
    return sorted(items, key=lambda item: rank.get(key(item), len(rank)))


def _ordered_as_run(items: list, key: Any, order: Sequence[str]) -> list:
    """``items`` in the order their ``key`` has in ``order``; one it lacks (a function a
    parametric function calls on its parameter, ``apply_w``'s ``Tanh``, and its output) stays
    before the item that followed it in ``items`` (the graph's order: ``Tanh`` runs before the
    ``Affine`` reading it), those after the last listed one last, as they were.

    Example:
        >>> _ordered_as_run(["Tanh", "b", "a", "c"], lambda k: k, ["a", "b"])
        ['a', 'Tanh', 'b', 'c']
    """
    rank = {name: k for k, name in enumerate(order)}
    ranks: list = [None] * len(items)
    following = (len(rank), 0)
    for k in range(len(items) - 1, -1, -1):     # each unlisted item: the next listed one's
        r = rank.get(key(items[k]))
        if r is None:
            ranks[k] = (following[0], -1)
        else:
            ranks[k] = following = (r, 0)
    return [items[k] for k in sorted(range(len(items)), key=lambda k: (ranks[k], k))]


def named_functions(network: Any, recorded: dict[str, Sequence[str]],
                    variables: Sequence[str]) -> None:
    """Give the functions of ``network`` (a ``ProtoNetwork`` made from a recording) the names
    ``recorded`` gave them (function name -> its outputs' names: each written function is
    found by its first output), and its functions and ``variables`` the recording's order
    (NNabla's: the calls', where the writer's follows the graph): ``Affine`` in the default
    graph's second network ``model_1``, where the writer names it ``@model_1/Affine``."""
    by_output = {outs[0]: name for name, outs in recorded.items() if outs}
    for f, legacy in zip(network.functions.values(), network._legacy.functions):
        name = by_output.get(f.outputs[0]) if f.outputs else None
        if name is not None:
            f.name = legacy.name = name
    network.functions = type(network.functions)(
        (f.name, f) for f in _ordered_as_run(list(network.functions.values()),
                                             lambda f: f.name, list(recorded)))
    network.variables = type(network.variables)(
        _ordered(list(network.variables.items()), lambda kv: kv[0], list(variables)))


def _field(message: Any, key: str) -> Any:
    return next((v for k, v in message if k == key), None)


def described_as(writer: Any, networks: Sequence[Any]) -> None:
    """Write each of ``networks`` (``ProtoNetwork`` s; the writer's network of the same name)
    as it is described: its functions under their names (found by their first output) and its
    buffers and functions in its order.

    Example:
        >>> from types import SimpleNamespace as NS
        >>> f = NS(name="Tanh", outputs=["Tanh_out"])
        >>> net = NS(name="model_1", functions={"Tanh": f}, variables={"Tanh_out": None})
        >>> written = NS(message=[("function", [("name", "@model_1/Tanh"),
        ...                                     ("output", "Tanh_out")])])
        >>> described_as(NS(networks={"model_1": written}), [net])
        >>> written.message[0][1][0]
        ('name', 'Tanh')
    """
    for network in networks:
        written = writer.networks.get(network.name)
        if written is None:
            continue
        by_output = {f.outputs[0]: f.name for f in network.functions.values() if f.outputs}
        message = []
        for kind, m in written.message:
            if kind == "function":
                name = by_output.get(_field(m, "output"))
                if name is not None:
                    m = [(k, name if k == "name" else v) for k, v in m]
            message.append((kind, m))
        for kind, order in (("variable", list(network.variables)),
                            ("function", list(network.functions))):
            slots = [k for k, (kd, m) in enumerate(message)
                     if kd == kind and _field(m, "name") in order]
            entries = _ordered([message[k] for k in slots], lambda e: _field(e[1], "name"),
                               order)
            for k, entry in zip(slots, entries):
                message[k] = entry
        written.message = message
