"""BrainScript: CNTK's ``.cntk`` config files and network descriptions, read by Stadyn.

Two languages live in a ``.cntk`` file:

- the **config language** (:func:`load_config`, :func:`parse_config` -> :class:`ConfigRecord`;
  :func:`run_config` -> plain dataclasses: :class:`RunConfig`, :class:`CommandConfig`,
  :class:`SGDConfig`, :class:`ReaderConfig`, ...);
- **BrainScript proper**, inside ``BrainScriptNetworkBuilder = { ... }``
  (:func:`parse_expression`, :func:`parse_members` -> AST; :class:`Evaluator`,
  :func:`evaluate_network` -> :class:`Network`).  The evaluator is engine-agnostic: an engine
  supplies a :class:`Library` of named functions and operator hooks.

>>> from stadyn.brainscript import parse_config, run_config
>>> run = run_config(parse_config('command = T\\nT = { action = "test" ; minibatchSize = 16 }'))
>>> run.commands[0].action, run.commands[0].minibatch_size
('test', (16,))
"""

from __future__ import annotations

from ._ast import SourceLocation
from ._blocks import (
    CommandConfig,
    DeserializerConfig,
    ReaderConfig,
    RunConfig,
    SGDConfig,
    StreamConfig,
    TransformConfig,
    command_config,
    command_names,
    per_epoch,
    reader_config,
    run_config,
    sgd_config,
)
from ._config import (
    BrainScriptSource,
    ConfigKeyError,
    ConfigList,
    ConfigRecord,
    ConfigString,
    expand_repeats,
    load_config,
    parse_config,
)
from ._evaluator import BSArray, BSFunction, Evaluator, Record, evaluate
from ._network import Network, evaluate_network
from ._library import NODE_OPERATOR_HOOKS, Composition, Library, cntk_filter_shape, cntk_shape
from ._build import build_network
from ._parser import parse_expression, parse_file, parse_members
from ._runner import run
from ._stadyn_library import StadynLibrary

__all__ = [
    "run", "StadynLibrary",
    # config language
    "load_config", "parse_config", "ConfigRecord", "ConfigString", "ConfigList",
    "BrainScriptSource", "ConfigKeyError", "expand_repeats",
    # well-known blocks
    "run_config", "command_config", "command_names", "sgd_config", "reader_config", "per_epoch",
    "RunConfig", "CommandConfig", "SGDConfig", "ReaderConfig", "DeserializerConfig",
    "StreamConfig", "TransformConfig",
    # BrainScript proper
    "parse_expression", "parse_members", "parse_file", "SourceLocation",
    "Evaluator", "evaluate", "evaluate_network", "build_network", "Network", "Record", "BSArray",
    "BSFunction",
    # engine interface
    "Library", "Composition", "NODE_OPERATOR_HOOKS", "cntk_shape", "cntk_filter_shape",
]
