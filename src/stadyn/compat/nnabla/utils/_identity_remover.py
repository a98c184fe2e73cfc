"""NNabla 1.39's ``IdentityRemover`` (``nnabla.core.graph_optimizer``, re-exported by
``nnabla.utils.load``): a pass over a protobuf network that takes its ``Identity`` functions out,
wiring what read an identity's output to its input.

NNabla's loader runs it on every network of a file (only on identities named ``$EC$/...``), over
the proto graph objects of ``nnabla.core.graph_def``, which Stadyn does not have: Stadyn's
loaders build the file's identities as ops.  The pass itself works here as NNabla's on
objects of the same shape -- a function ``pf`` with ``type``, ``name``, ``inputs``, ``outputs``
(lists of names) and ``owner()``, the network, whose ``variables``, ``parameters`` and
``functions`` are dicts by name and ``outputs`` a list of names; a variable has ``name``,
``parent`` (a function name or None), ``required`` (the names of the functions reading it)
and ``need_grad``.
"""

from __future__ import annotations

from typing import Any, Callable

from ..logger import logger

__all__ = ["IdentityRemover", "remove_function"]


def remove_function(pf: Any, renamed: dict | None) -> None:
    """Take the function ``pf`` out of its network (NNabla's ``remove_function``): where its
    output is read, the readers read its input, which keeps its name (``renamed[output] =
    input``); where it is not, the input's producer writes the output, which keeps its name
    (``renamed[input] = output``)."""
    network = pf.owner()
    input_name, need_grad, parent, required = None, False, None, iter(())
    for name in pf.inputs:
        pv = network.variables[name] if name in network.variables else network.parameters[name]
        parent = pv.parent
        # an iterator, as NNabla's ``filter``: what reads it first consumes it
        required = iter([k for k in pv.required if network.functions[k] != pf])
        input_name, need_grad = name, pv.need_grad
        break
    for name in pf.outputs:
        pv = network.variables[name]
        pv.parent = parent
        if len(pv.required) > 0:
            for r in pv.required:
                reader = network.functions[r]
                reader.inputs[reader.inputs.index(pv.name)] = input_name
            pv.required += list(required)
            if name in network.outputs:
                network.outputs[network.outputs.index(name)] = input_name
            if renamed is not None:
                renamed[pv.name] = input_name
            pv.name = input_name
            pv.need_grad = need_grad
            network.variables[pv.name] = pv
            logger.info(f"[upper bound] proto_variable:{name} is deleted, output name: "
                        f"{input_name} is kept.")
            del network.variables[name]
        else:
            if parent is not None:
                producer = network.functions[parent]
                producer.outputs[producer.outputs.index(input_name)] = pv.name
            for f_name in required:
                reader = network.functions[f_name]
                reader.inputs[reader.inputs.index(input_name)] = pv.name
            pv.need_grad = need_grad
            pv.required += list(required)
            if renamed is not None:
                renamed[input_name] = pv.name
            del network.variables[input_name]
            logger.info(f"[lower bound] proto_variable:{input_name} is deleted, output name: "
                        f"{pv.name} is kept.")
        break
    del network.functions[pf.name]
    logger.info(f"proto_function:{pf.name} is deleted.")


class IdentityRemover:
    """Called with each function of a network (NNabla's ``execute_on_proto``), removes those of
    type ``Identity`` -- only those ``is_required(pf)`` accepts, when given -- recording the
    renamed variables in ``renamed`` (see the module's docstring for the objects it works on).

    Example:
        >>> from types import SimpleNamespace as NS
        >>> net = NS(functions={}, parameters={}, outputs=["y"])
        >>> net.variables = {"x": NS(name="x", parent=None, required=["id"], need_grad=False),
        ...                  "y": NS(name="y", parent="id", required=[], need_grad=False)}
        >>> pf = NS(type="Identity", name="id", inputs=["x"], outputs=["y"], owner=lambda: net)
        >>> net.functions["id"] = pf
        >>> renamed = {}
        >>> IdentityRemover(renamed)(pf)
        >>> sorted(net.variables), net.functions, renamed
        (['y'], {}, {'x': 'y'})
    """

    def __init__(self, renamed: dict | None = None,
                 is_required: Callable[[Any], bool] | None = None):
        self.renamed = renamed
        self.is_required = is_required

    def __call__(self, pf: Any) -> None:
        if pf.type == "Identity":
            if self.is_required:
                if not self.is_required(pf):
                    return
            remove_function(pf, self.renamed)
