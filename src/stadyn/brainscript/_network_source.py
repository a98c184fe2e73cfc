"""The network description of a command that gives none (a test, eval, write or cv command):
the train command's that writes its model, or the model file's own."""

from __future__ import annotations

import os

from .._errors import ConfigError
from ._blocks import CommandConfig, network_of_block
from ._command_network import record_loc
from ._config import BrainScriptSource, ConfigRecord

__all__ = ["loaded_network", "network_for"]


def network_for(root: ConfigRecord, cmd: CommandConfig,
                model_path: str | None = None) -> BrainScriptSource:
    """The network description of a command without one: the train command (of the whole
    config) that writes the same ``modelPath``, whose description is rebuilt (the model
    file then gives the parameters); where no block of the config builds it, the model file
    itself (``BS.Network.Load``: the graph with its criterion, evaluation and output tags,
    as cntk.exe read the network from the file), when it exists: ``model_path``, by default
    the command's ``modelPath`` (a cv command's model of one epoch)."""
    candidates = []
    for key in root:
        block = root.peek(key)
        if not isinstance(block, ConfigRecord) or network_of_block(block) is None:
            continue
        path = block.get_str("modelPath", None, inherited=True)
        sgd = block.get("SGD")
        if isinstance(sgd, ConfigRecord) and "modelPath" in sgd:
            path = sgd.get_str("modelPath")
        candidates.append((str(path) if path is not None else None, block))
    for path, block in candidates:
        if path == cmd.model_path:
            return network_of_block(block)
    model_path = model_path or cmd.model_path
    if model_path is not None and os.path.exists(model_path):
        # a model another config's train command wrote (TIMIT's eval, write and cv
        # configs): the network as the file holds it, its nodes tagged criterion,
        # evaluation and output as they were trained
        return loaded_network(str(model_path), record_loc(cmd.record, "modelPath"))
    raise ConfigError(f"command '{cmd.name}' has no BrainScriptNetworkBuilder and no block of "
                      f"the config builds the model '{cmd.model_path}'",
                      *record_loc(cmd.record, "action"))


def loaded_network(path: str, where: tuple) -> BrainScriptSource:
    """The network a model file holds, as a description (``BS.Network.Load``).

    >>> loaded_network("m.dnn", ()).text
    'BS.Network.Load ("m.dnn")'
    """
    quoted = f"'{path}'" if '"' in path else f'"{path}"'
    return BrainScriptSource(f"BS.Network.Load ({quoted})", *where)
