"""The data pass before training that sets CNTK's pre-computed nodes (``Mean``, ``InvStdDev``,
so ``MeanVarNorm`` and ``LogPrior``), as CNTK's ``SGD::PreCompute`` ran it.

* It runs once, before the first epoch of a train command that starts afresh, after the network is
  built and before the untrained model ``modelPath.0`` is saved; the values are parameters of the
  model files, so a restart, ``test``, ``eval`` and ``write`` read them back and nothing is computed
  again ("No PreCompute nodes found, or all already computed").  Only the nodes of the network
  (reached from its named nodes) whose value is not computed yet (its ``hasComputed`` flag:
  :mod:`._precompute_library`) count; a restart from a model file written before the pass (the
  ``edit`` action's ``modelPath.0``) computes them then, as CNTK.
* Its data is the training reader's, in minibatches of the first epoch's ``minibatchSize``,
  over one whole sweep (``SGD.UseAllDataForPreComputedNode = true``, the default) or the first
  ``epochSize`` samples (``false``).  Training then reads epoch 0 from the start.  A
  block-randomized reader (the training source a plain :class:`stadyn.io.MinibatchSource`) is
  read itself and set back, as cntk.exe's: where the pass left chunks behind the randomization
  window, epoch 1's sequences are shuffled anew with the seed 0, not ``randomizationSeed``
  (SequenceRandomizer.cpp:281-288); other readers are read by a reader of their own in epoch
  0's order.  A truncated reader (:class:`~._bptt_source.TruncatedSequenceSource`) is read
  itself only by a pass that stops inside sweep 0: after a whole sweep cntk.exe's truncated
  packer has asked into sweep 1, and epoch 1 re-randomizes sweep 0 with ``randomizationSeed``.
* Every sample counts once: the frames of a sequence, never its padding.
* The running estimates are CNTK's, in float32 (``PreComputeNodes.h``): per minibatch of ``n``
  new samples after ``N`` seen, ``alpha = 1 / (N + n)``, ``beta = N / (N + n)``,
  ``mean' = beta mean + alpha sum(x)``, and for ``InvStdDev``
  ``var' = beta (var + (mean - mean')**2) + alpha sum((x - mean')**2)`` (the variance of all
  samples, divided by their count); at the end ``1 / sqrt(max(var, 1e-10))``.
"""

from __future__ import annotations

import numpy as np
import torch

from .. import io
from .._errors import ConfigError
from ..graph import Variable, forward_all, training
from ..train import feed
from ._cntk_log import CNTKLog
from ._command_network import CommandNetwork, record_loc
from ._blocks import CommandConfig, sgd_block
from ._bptt_source import TruncatedSequenceSource
from ._config import ConfigRecord
from ._input_source import InputSource
from ._network_library import reached_ids
from ._precompute_library import PreComputeNode
from ._readers import make_source

__all__ = ["RunningStatistics", "check_computed", "mark_computed", "precompute", "uncomputed",
           "use_all_data"]

#: CNTK's floor of the variance before its square root (``InvStdDevNode``'s ``sqrtFloor``).
VARIANCE_FLOOR = np.float32(1e-10)


class RunningStatistics:
    """CNTK's running mean (and variance) of samples added a minibatch at a time, in float32.

    >>> s = RunningStatistics((2,), variance=True)
    >>> s.add(np.array([[1, 0], [3, 0]], np.float32)); s.add(np.array([[5, 0]], np.float32))
    >>> s.mean.tolist(), s.inv_std_dev().tolist()       # var = 8/3; a constant column: 1e-10
    ([3.0, 0.0], [0.6123723983764648, 100000.0])
    """

    def __init__(self, shape: tuple[int, ...], variance: bool):
        self.count = 0
        self.mean = np.zeros(shape, np.float32)
        self.var = np.zeros(shape, np.float32) if variance else None

    def add(self, samples: np.ndarray) -> None:
        """Add ``samples`` (first axis: the samples)."""
        n = int(samples.shape[0])
        total = self.count + n or 1
        alpha = np.float32(1.0) / np.float32(total)
        beta = np.float32(self.count) / np.float32(total)
        x = samples.astype(np.float32, copy=False)
        old = self.mean
        self.mean = (beta * old + alpha * x.sum(axis=0, dtype=np.float64)).astype(np.float32)
        if self.var is not None:
            shift = np.square(old - self.mean, dtype=np.float32)
            spread = np.square(x - self.mean, dtype=np.float32).sum(axis=0, dtype=np.float64)
            self.var = (beta * (self.var + shift) + alpha * spread).astype(np.float32)
        self.count += n

    def inv_std_dev(self) -> np.ndarray:
        return (np.float32(1.0) / np.sqrt(np.maximum(self.var, VARIANCE_FLOOR))).astype(np.float32)


def use_all_data(sgd_record: ConfigRecord) -> bool:
    """``SGD.UseAllDataForPreComputedNode`` (default true: one sweep; false: one epoch)."""
    return sgd_record.get_bool("UseAllDataForPreComputedNode", True)


def _samples(x: Variable) -> np.ndarray:
    """The values of ``x`` in this minibatch, one row per sample (a sequence's valid steps)."""
    data = x.d
    if x.sequence_lengths is None:
        return np.asarray(data).reshape((data.shape[0],) + tuple(x.shape[1:]))
    lengths = np.asarray(x.sequence_lengths.d).astype(np.int64).reshape(-1)
    mask = np.arange(data.shape[1])[None, :] < lengths[:, None]
    return np.asarray(data)[mask]


def uncomputed(network: CommandNetwork) -> list[PreComputeNode]:
    """The network's pre-computed nodes whose value has been neither computed nor read from a
    model file (CNTK's ``GetNodesRequiringPreComputation``): those its named nodes reach."""
    named = [v for v in network.net.nodes.values() if isinstance(v, Variable)]
    reached = reached_ids(named)
    return [n for n in network.library.precompute_nodes
            if id(n.value) in reached and not n.computed]


def mark_computed(network: CommandNetwork, flags: dict[str, bool] | None) -> None:
    """Take the ``hasComputed`` flags of a model file just loaded (parameter name -> flag;
    :func:`._model_files.load_model_parameters`); a node the file says nothing of is judged by
    its value (a file written before the flags were saved)."""
    for node in network.library.precompute_nodes:
        node.has_computed = (flags or {}).get(node.name)


def check_computed(network: CommandNetwork, model_path: str, where: tuple) -> None:
    """A ConfigError at ``where`` if a pre-computed value of the network did not come with the
    model file ``model_path`` (a ``test``, ``eval`` or ``write`` command's): it would be NaN."""
    missing = [network.precompute_name(n) for n in uncomputed(network)]
    if missing:
        raise ConfigError(f"the model '{model_path}' holds no computed value for the "
                          f"pre-computed node(s) {', '.join(missing)} (Mean, InvStdDev): it was "
                          "saved before the data pass of a train command (by an edit action) "
                          "or by another network; train it first", *where)


def precompute(network: CommandNetwork, cmd: CommandConfig, log: CNTKLog,
               deserializers: list[io.Deserializer] | None = None,
               shim: InputSource | None = None) -> bool:
    """Set the network's pre-computed nodes that are not computed yet (:func:`uncomputed`) from
    the training data (see the module); log CNTK's lines.  Returns whether a pass ran.  The
    data is read through ``deserializers`` where given (the training source's, indexed once,
    as cntk.exe's pass reads the training reader, SGD.cpp:413), else through the reader
    block's own, opened for the pass; a plain block-randomized training source (``shim``'s)
    is read itself and set back to epoch 0 after the pass.  ``shim``: the training's inputs,
    whose reader cntk.exe's pass reads (one reader shim): they report the pass's last
    minibatch's parallel rows until they read (:meth:`InputSource.continue_reader`)."""
    nodes = uncomputed(network)
    raw = log.raw
    if not nodes:
        if cmd.trace_level > 0:
            log("No PreCompute nodes found, or all already computed. Skipping pre-computation "
                "step.")
        return False
    raw()
    log(f"Precomputing --> {len(nodes)} PreCompute nodes found.")
    raw()
    if cmd.trace_level > 0:
        for node in nodes:
            log(f"\t{network.precompute_name(node)} = {node.operation}()")
    sgd_rec = sgd_block(cmd.record)
    limit = None if use_all_data(sgd_rec) else cmd.sgd.epoch_size
    reader_loc = record_loc(cmd.record, "reader")
    # a block-randomized training source is read itself, as cntk.exe's pass reads the training
    # reader (SGD.cpp:1766-1769, epoch 0 of a sweep or of epochSize samples), which the first
    # epoch then sets back to sample 0 (SGD.cpp:1051, BlockRandomizer.cpp:61-88): where the
    # pass left chunks behind the window, epoch 1's sequences come shuffled anew with the seed
    # 0 (SequenceRandomizer.cpp:281-288; make_source's set_back)
    own = shim.source if shim is not None and type(shim.source) is io.MinibatchSource else None
    truncated = shim is not None and isinstance(shim.source, TruncatedSequenceSource)
    if truncated and limit is not None and limit < shim.source.sweep_size:
        # a truncated reader's pass that stops inside sweep 0 (TruncatedBpttPacker.cpp:373-414
        # asks on at the epoch's end, still in sweep 0): epoch 1's seek sets it back the same
        # way.  One of a whole sweep asks past the sweep's end, which prepares sweep 1
        # (BlockRandomizer.cpp:254, 102-121), so epoch 1's SetState(0) re-randomizes sweep 0
        # with randomizationSeed (BlockRandomizer.cpp:471-484): a pass source of its own
        own = shim.source
    if own is not None:
        source, saved = own, own.get_checkpoint_state()
        io.start_epoch_at(source, 0, limit or source.sweep_size)
        if truncated:       # (read to the epoch's end: the packer empties its slots)
            limit = None
    else:
        source = make_source(cmd.reader, max_sweeps=1, warn=lambda _: None,  # (said once)
                             opened=deserializers)
    stats = [RunningStatistics(tuple(n.value.shape), n.operation == "InvStdDev") for n in nodes]
    for node in nodes:   # CNTK's MarkComputed(false): 0 while the pass runs (a node read by
        node.value.d = np.zeros(node.value.shape, np.float32)   # another's input: as CNTK's)
    computed = [n.input for n in nodes if n.input.parent is not None]
    try:
        # the training's inputs too, as cntk.exe's pass reads every feature and label node
        # (SGD.cpp:285-294, 1779) through the reader that checks their shared layout
        # (ReaderShim.cpp:318-335): refused here as in training (before bs28 only there)
        roots = [n.input for n in nodes] + network.criterion_nodes[:1] + \
            list(network.evaluation_nodes)
        inputs = network.input_source(roots, source, reader_loc, cmd.name)
        if shim is not None:
            inputs.continue_reader(shim.parallel_rows)
        seen = 0
        while limit is None or seen < limit:
            size = cmd.sgd.minibatch_size[0]
            data, count = inputs.read(size if limit is None else min(size, limit - seen))
            if not data:
                break
            seen += count
            for var, value in data.items():
                feed(var, value)
            if computed:
                with training(False), torch.no_grad():
                    forward_all(computed, clear_buffer=False)
            for node, stat in zip(nodes, stats):
                stat.add(_samples(node.input))
    finally:
        if own is None:
            source.close()
        else:   # set back to epoch 0 with no epoch end left behind (epochSize = 0's epochs
            # end with the sweep); a restart's start epoch where it was (a sweep later)
            io.start_epoch_at(source, 0, io.INFINITELY_REPEAT)
            if saved["samples"]:
                source.restore_from_checkpoint(saved)
    if shim is not None:    # (an HTKDeserializers truncated reader: cntk.exe's pass read
        # minibatchSize[0]'s slots, SGD.cpp:1767-1779; Stadyn's read whole utterances)
        slots = getattr(shim.source, "slots", None)
        shim.continue_reader(inputs.parallel_rows if slots is None else
                             slots(cmd.sgd.minibatch_size[0]))
    for node, stat in zip(nodes, stats):
        if stat.count == 0:
            raise ConfigError(f"{node.operation}: the training reader delivered no samples to "
                              "compute it from", *reader_loc)
        value = stat.mean if node.operation == "Mean" else stat.inv_std_dev()
        node.value.d = value.reshape(node.value.shape)
        node.has_computed = True           # whatever the data gave (a NaN too), as CNTK
    raw()
    log("Precomputing --> Completed.")
    raw()
    return True
