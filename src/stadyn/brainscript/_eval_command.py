"""CNTK's ``test`` / ``eval`` action (``DoEval``, EvalActions.cpp:52-98) as the runner runs it:
a command's network with the parameters of its model file (``GetModelFromConfig``,
NetworkFactory.cpp:151-189: the file looked for first), evaluated over one sweep of its reader
(or ``epochSize`` samples), with CNTK's ``Minibatch[...]`` and ``Final Results`` lines.  The
``write`` and ``cv`` actions take their networks from :func:`trained_network` too."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from .. import io
from .._errors import ConfigError, ModelFileError
from .._random import auto_seeds_kept
from ..graph import topological_nodes
from ..train import evaluate_sums
from ._accumulators import EpochAccumulators, counted_once, logged_so_far
from ._blocks import CommandConfig, RunConfig
from ._bptt_source import TruncatedSequenceSource
from ._cntk_log import CNTKLog, results_line
from ._command_network import CommandNetwork, criterion_total, loc_of, record_loc
from ._config import ConfigRecord
from ._model_files import load_model_parameters
from ._ndl_counts import ndl_seeds_kept
from ._network_source import network_for
from ._precompute import check_computed, mark_computed
from ._readers import OpenedReaders, command_sequence_streams, make_source
from ._state_carry import StateCarry, whole_sequences_instead

__all__ = ["EvalResult", "evaluate_network", "seeds_kept", "trained_network"]

_EVAL_MINIBATCH = 40960               # CNTK's default minibatchSize of test/eval


@dataclass
class EvalResult:
    """A test/eval command's final results: node name -> (average, samples)."""

    values: dict[str, tuple[float, int]]
    minibatches: int



@contextlib.contextmanager
def seeds_kept(root: ConfigRecord) -> Iterator[None]:
    """A network built where cntk.exe reads its model file takes no seeds: neither a
    BrainScript network's parameter seeds nor the run's NDL seed count go on."""
    with auto_seeds_kept(), ndl_seeds_kept(root):
        yield



def trained_network(cmd: CommandConfig, run: RunConfig, opened: OpenedReaders,
                    model_path: str | None = None) -> CommandNetwork:
    """A test/eval/write/cv command's network with the parameters of its model file
    (``model_path``, by default the command's ``modelPath``); ``run`` is the config's
    commands, ``opened`` the readers the command has opened."""
    where = record_loc(cmd.record, "action")
    if cmd.reader is None:
        raise ConfigError(f"command '{cmd.name}' (action {cmd.action}) needs a 'reader'",
                          *where)
    if cmd.model_path is None:
        raise ConfigError(f"command '{cmd.name}' (action {cmd.action}) needs 'modelPath'",
                          *where)
    model_path = model_path or cmd.model_path
    # (before the network is looked for: cntk.exe opens the file first, fopenOrDie's
    # "error opening file" from ComputationNetwork::Read, ComputationNetwork.cpp:277)
    path_loc = loc_of(cmd.record.get_str("modelPath", None, inherited=True)) or where
    if not os.path.exists(model_path):
        raise ConfigError(f"command '{cmd.name}' (action {cmd.action}): model file "
                          f"'{model_path}' does not exist (modelPath; train it first)",
                          *path_loc)
    fed = command_sequence_streams(cmd, run.commands, opened)
    if cmd.network is not None:        # cntk.exe evaluates the command's description
        network = CommandNetwork(cmd.network, 0.0, fed)
    else:                              # cntk.exe read the model file: no seeds taken
        with seeds_kept(run.root):
            network = CommandNetwork(network_for(run.root, cmd, model_path), 0.0, fed)
    # the values the network computes with (a declared parameter nothing uses is not in
    # the model file)
    used = [v for n in topological_nodes(list(network.model_file_parts()[0].values()))
            for v in n.inputs]
    try:
        flags = load_model_parameters(model_path, used, network.precompute_aliases,
                                      network.net.reshaped_weights,
                                      network.library.untagged_file_names)
    except ModelFileError as exc:
        named = str(exc) if model_path in str(exc) else f"{model_path}: {exc}"
        raise ConfigError(f"command '{cmd.name}' (action {cmd.action}): modelPath is not a "
                          f"model file: {named}", *path_loc) from None
    mark_computed(network, flags)
    check_computed(network, model_path, where)
    return network


def evaluate_network(cmd: CommandConfig, network: CommandNetwork, log: CNTKLog,
                     opened: OpenedReaders) -> EvalResult:
    """CNTK's test/eval action (``DoEval``) of ``cmd`` on ``network``, with its model file's
    parameters (:func:`trained_network`); ``opened``: the readers the command has opened.

    Example (a config's test command, its model trained by the train command before)::

        network = trained_network(cmd, run, opened)
        result = evaluate_network(cmd, network, log, opened)
        result.values["errs"]      # (average, samples)
    """
    rec = cmd.record
    where = record_loc(rec, "action")
    if cmd.eval_node_names:
        nodes, seen = [], set()
        for name in cmd.eval_node_names:
            node = network.node(name, record_loc(rec, "evalNodeNames"))
            if id(node) not in seen:
                seen.add(id(node))
                nodes.append(node)
    else:
        log.raw("evalNodeNames are not specified, using all the default evalnodes and "
                "training criterion nodes.")
        nodes, seen = [], set()
        for node in network.evaluation_nodes + network.criterion_nodes:
            if id(node) not in seen:
                seen.add(id(node))
                nodes.append(node)
        if not nodes:
            raise ConfigError("There is no default evaluation node or training criterion "
                              "specified in the network.", *where)
    for node in nodes:
        if int(np.prod(node.shape[1:])) != 1:
            raise ConfigError(f"node '{network.name(node)}': criterion nodes to evaluate must "
                              "have dimension 1x1 (one value per sample)", *where)
    names = [network.name(n) for n in nodes]
    EpochAccumulators(nodes).reset()    # the sweep is one epoch
    # a node holding an accumulated result is logged as its value so far, counted once
    accumulated = network.accumulated(nodes)
    sums = [criterion_total(n) for n in nodes]     # over real steps of sequences
    # one sweep; an epoch of epochSize samples has no sweep limit, truncated or not
    # (SimpleEvaluator.h:97-99, ReaderShim.cpp:108-112, Reader.h:49: an epoch past the
    # sweep reads on into the next)
    sweeps = io.INFINITELY_REPEAT if cmd.epoch_size else 1
    source = make_source(cmd.reader, max_sweeps=sweeps, warn=log.raw,
                         evaluating=not whole_sequences_instead(nodes),
                         opened=opened.take(cmd.reader))
    inputs = network.input_source(nodes, source, record_loc(rec, "reader"), cmd.name)
    mb_size = (cmd.minibatch_size or (_EVAL_MINIBATCH,))[0]
    limit = cmd.epoch_size or source.sweep_size
    carry = None
    if isinstance(source, TruncatedSequenceSource):
        # a truncated deserializers list: truncated pieces, the state carried (cntk.exe's
        # evaluator reads the epoch of testSize samples until the packer is empty)
        carry, limit = StateCarry(nodes, source), None
        if cmd.epoch_size:
            source.start_epoch(0, cmd.epoch_size)
    show = rec.get_int("numMBsToShowResult", 100)   # command_config checked them
    first = rec.get_int("firstMBsToShowResult", 0)
    totals = [[0.0, 0] for _ in nodes]
    logged = [[0.0, 0] for _ in nodes]
    mbs_logged = seen_logged = 0

    def show_results(record: dict) -> None:      # CNTK's line every numMBsToShowResult
        nonlocal totals, logged, mbs_logged, seen_logged
        totals = counted_once([[t, record["seen"]] for t in record["totals"]],
                              record["sums"], accumulated)
        mbs = record["minibatch"]
        if cmd.trace_level > 0 and (mbs <= first or (show and mbs % show == 0)):
            _eval_line(log, mbs_logged + 1, mbs, names, nodes, totals, logged, network, False)
            logged = logged_so_far(totals, accumulated)
            mbs_logged, seen_logged = mbs, record["seen"]
    result = evaluate_sums(sums, inputs, inputs.input_map, minibatch_size=mb_size,
                           max_samples=limit, on_minibatch=show_results,
                           count=network.counted(nodes[0], nodes), carry=carry)
    mbs = result["minibatches"]
    source.close()
    if cmd.trace_level > 0 and result["samples"] > seen_logged:
        _eval_line(log, mbs_logged + 1, mbs, names, nodes, totals, logged, network, False)
    zero = [[0.0, 0] for _ in nodes]
    _eval_line(log, 1, mbs, names, nodes, totals, zero, network, True)
    return EvalResult({n: (t / c if c else 0.0, c) for n, (t, c) in zip(names, totals)}, mbs)


def _eval_line(log: CNTKLog, first, last, names, nodes, totals, logged, network,
               final) -> None:
    perplexity = [network.library.shows_perplexity(n) for n in nodes]
    log(results_line(first, last, names, totals, logged, perplexity, final))
