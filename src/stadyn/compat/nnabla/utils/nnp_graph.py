"""``nnabla.utils.nnp_graph`` on Stadyn: :class:`NnpLoader` builds the networks of an NNabla
``.nnp`` / ``.nntxt`` file as Stadyn graphs (``stadyn.load_nnp``), without NNabla.

As in NNabla, parameters go to the current parameter scope (Stadyn's current registry) under
the file's names, and a network's inputs are the variables no function writes, its outputs
those no function reads.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import Any

from ....parametric import current_registry
from ....serialize import load_nnp, read_legacy_model

__all__ = ["NnpLoader", "NnpNetwork"]


class NnpNetwork:
    """One network of an ``.nnp`` file, built: ``inputs`` and ``outputs`` (ordered dicts name ->
    Variable), ``variables`` (those and the parameters it uses), ``name``, ``batch_size``.

    Set ``inputs[...].d`` and call ``outputs[...].forward()``, as with NNabla."""

    def __init__(self, name: str, network: Any, batch_size: int):
        self.name = name
        self.batch_size = batch_size
        self.network = network
        self.inputs = OrderedDict(network.inputs)
        self.outputs = OrderedDict(network.outputs)
        self.variables = OrderedDict(list(self.inputs.items()) + list(self.outputs.items()))
        self.variables.update(network.parameters)

    def __repr__(self) -> str:
        return (f"<NnpNetwork {self.name!r} inputs={list(self.inputs)} "
                f"outputs={list(self.outputs)}>")


class NnpLoader:
    """NNabla's ``NnpLoader``: ``get_network_names()`` and ``get_network(name, batch_size)``.

    Example:
        >>> import os, tempfile, numpy as np
        >>> path = os.path.join(tempfile.mkdtemp(), "tiny.nntxt")
        >>> with open(path, "w") as f:
        ...     _ = f.write('network { name: "n" batch_size: 2 '
        ...                 'variable { name: "x" type: "Buffer" shape { dim: -1 dim: 2 } } '
        ...                 'variable { name: "y" type: "Buffer" shape { dim: -1 dim: 2 } } '
        ...                 'function { name: "r" type: "ReLU" input: "x" output: "y" } }')
        >>> nnp = NnpLoader(path)
        >>> nnp.get_network_names()
        ['n']
        >>> net = nnp.get_network("n", batch_size=1)
        >>> net.inputs["x"].d = np.array([[-1.0, 3.0]])
        >>> net.outputs["y"].forward()
        >>> net.outputs["y"].d
        array([[0., 3.]], dtype=float32)
    """

    def __init__(self, filepath: str | os.PathLike, scope: Any = None,
                 extension: str = ".nntxt"):
        if scope is not None:
            raise NotImplementedError("NnpLoader(scope=...): Stadyn loads parameters into the "
                                      "current registry (use stadyn.parameter_registry)")
        self._model = read_legacy_model(filepath)

    def get_network_names(self) -> list[str]:
        """The names of the file's networks, in file order."""
        return list(self._model.networks)

    def get_network(self, name: str, batch_size: int | None = None,
                    callback: Any = None) -> NnpNetwork:
        """The network ``name`` built for ``batch_size`` (default: the file's)."""
        if callback is not None:
            raise NotImplementedError("get_network(callback=...): NNabla's graph-rewriting "
                                      "callbacks have no Stadyn counterpart")
        net = load_nnp(self._model, network=name, batch_size=batch_size,
                       registry=current_registry())
        return NnpNetwork(name, net, int(net.info().details.get("batch_size", 1)))
