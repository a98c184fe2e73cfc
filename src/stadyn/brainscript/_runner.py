"""Run a ``.cntk`` config as CNTK's BrainScript runner did: its ``command`` list, in order.

* ``train``: build the network of ``BrainScriptNetworkBuilder`` with :class:`StadynLibrary`, the
  learner of the ``SGD`` block and the minibatch source of the ``reader`` block; train
  ``maxEpochs`` epochs of ``epochSize`` samples (a full sweep when 0) in minibatches of
  ``minibatchSize``, printing CNTK's lines; evaluate the ``cvReader`` set after every epoch
  (``Finished Epoch[...]: [Validate] ...``); save the model after every epoch (``modelPath.<n>``,
  and ``modelPath`` after the last epoch) with its checkpoint (``<model>.ckp``: learner state,
  sample counts, reader position); on a restart, continue after the last saved epoch.
* ``write``: the values of ``outputNodeNames`` over the reader, as text files (:mod:`._write`).
* ``edit``: CNTK's BrainScript variant: build ``BrainScriptNetworkBuilder`` and save it as
  ``outputModelPath`` (skipped in make mode when that file exists); the MEL variant
  (``editPath``) is refused, naming the key.
* ``test`` / ``eval``: load ``modelPath``, evaluate ``evalNodeNames`` (default: the evaluation and
  criterion nodes) over one sweep of the ``reader`` and print ``Final Results: ...``
  (:mod:`._eval_command`).
* ``cv``: the test action on the model file of each epoch of ``crossValidationInterval``, then
  the best model per evaluation node (:mod:`._cross_validate`).

Training is :meth:`stadyn.train.Trainer.fit` (the runner has no epoch loop of its own; it calls
``fit`` again only where ``AutoAdjust`` rolled an epoch back) with one callback,
:class:`._train_progress.CNTKProgress`, that prints CNTK's lines (formatted by
:mod:`._cntk_log`), checks for NaNs where CNTK did, applies ``AutoAdjust`` (:mod:`._autoadjust`)
and saves the model files; the model files and resuming from them (make mode) are
:mod:`._model_files`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io as _io
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from .. import functions as F
from .. import io
from .._errors import ConfigError, StadynError
from .._random import auto_seeds_kept, restart_auto_seeds, seed
from ..graph import context_scope, topological_nodes
from ..parametric import ParameterRegistry, parameter_registry
from ._accumulators import EpochAccumulators
from ._blocks import (CommandConfig, RunConfig, per_epoch, run_config,
                      sgd_block)
from ._command_network import (CommandNetwork, Validation, loc_of,
                               record_loc)
from ._command_checks import ACTIONS, check_edit, check_train, warn_unused_overrides
from ._cntk_log import (CNTKLog, banner, cntk_shape_text, data_parallel_init_line,
                        format_criterion, log_file_path)
from ._config import ConfigRecord, load_config
from ._cross_validate import cross_validate
from ._mel import MELScript
from ._mel_read import is_mel_edit, mel_saved_models
from ._precompute import mark_computed, precompute
from ._network_source import loaded_network
from ._model_files import (check_writable, model_name, resume, save_model,
                           start_epoch)
from ._bptt_source import TruncatedSequenceSource, is_composite
from ._reader_blocks import shim_parallel_sequences
from ._readers import OpenedReaders, command_sequence_streams, make_source, reader_deserializers
from ._run_setup import NetworkTrainer, Parallel, device_of
from ._stadyn_library import StadynLibrary
from ._state_carry import StateCarry
from ._autoadjust import auto_adjust, initial_state, min_learning_rate
from ._sgd import (EpochClock, block_momentum, data_parallel_bits, disable_reg_in_batch_norm,
                   distributed_reading, keep_checkpoint_files, make_learners, quantized_bits)
from ._train_progress import (CNTKProgress, EpochResult, RepeatEpoch,
                              TrainingComplete, TrainSetting)
from ._write_command import write_command
from ._eval_command import EvalResult, evaluate_network, seeds_kept, trained_network

__all__ = ["run", "run_config_file", "RunResult", "EpochResult", "EvalResult", "model_name",
           "format_criterion"]

# the readers of one deserializer made with a ReaderShim (CNTKTextFormatReader, ImageReader,
# CNTKBinaryReader: their Exports.cpp), which reports its last minibatch's rows as the parallel
# sequences (ReaderShim.cpp:79, 352)
_SHIM_READERS = {"cntktextformatreader", "imagereader", "cntkbinaryreader",
                 "htkdeserializers"}     # (its Exports.cpp: HTKMLFReaderShim, a ReaderShim)


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------
@dataclass
class RunResult:
    """What :func:`run` did, per command name: a list of :class:`EpochResult` (train) or an
    :class:`EvalResult` (test/eval)."""

    commands: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# The runner
# ---------------------------------------------------------------------------------------------
class _Runner:
    def __init__(self, run: RunConfig, log: CNTKLog, parallel: Parallel,
                 epoch_callback: Callable[[str, int], None] | None = None):
        self.run = run
        self.log = log
        self.parallel = parallel
        self.epoch_callback = epoch_callback
        self.result = RunResult()
        # the readers opened to see their data's sequences, kept for the commands reading them
        self.opened = OpenedReaders()
        # the model files the config's MEL edits write: a train command starting from one
        # trains the network the file holds (cntk.exe reads its start file's network)
        self.mel_models = {os.path.abspath(path) for cmd in run.commands if is_mel_edit(cmd)
                           for path in mel_saved_models(str(cmd.record.get_str("editPath")),
                                                        cmd.record)}

    # -- commands ---------------------------------------------------------------------------
    def command(self, cmd: CommandConfig) -> None:
        log = self.log
        log()
        banner(log, f"{cmd.name} command ({cmd.action} action)")
        log()
        ctx = device_of(cmd.device_id, cmd.precision, record_loc(cmd.record, "action"))
        # (the readers opened and not read are closed after each command)
        with context_scope(ctx), parameter_registry(ParameterRegistry()), \
                contextlib.closing(self.opened):
            if cmd.action == "train":
                self.result.commands[cmd.name] = self.train(cmd)
            elif not self.parallel.is_main:   # data-parallel workers leave these to rank 0
                pass
            elif cmd.action == "write":
                self.result.commands[cmd.name] = self.write(cmd)
            elif cmd.action == "edit":
                self.result.commands[cmd.name] = self.edit(cmd)
            elif cmd.action == "cv":
                self.result.commands[cmd.name] = cross_validate(cmd, self._evaluate_model(cmd),
                                                                log)
            else:
                self.result.commands[cmd.name] = self.evaluate(cmd)
        log(f'Action "{cmd.action}" complete.')
        log()

    # -- train ------------------------------------------------------------------------------
    def train(self, cmd: CommandConfig) -> list[EpochResult]:
        """CNTK's ``train`` action; the readers it opens are closed when it ends, by an error
        too."""
        with contextlib.ExitStack() as opened:
            return self._train(cmd, opened)

    def _train(self, cmd: CommandConfig, opened: contextlib.ExitStack) -> list[EpochResult]:
        log, rec = self.log, cmd.record
        check_train(cmd, self.parallel.size, log)
        sgd, sgd_rec = cmd.sgd, sgd_block(rec)
        adjust = auto_adjust(sgd_rec.get("AutoAdjust"), sgd_rec,
                             (len(sgd.minibatch_size), sgd.max_epochs))
        min_lr = min_learning_rate(sgd_rec)
        if adjust is not None and self.parallel.size > 1:
            raise ConfigError("AutoAdjust (autoAdjustLR) is not supported in a data-parallel "
                              "job yet (stadyn train --nproc); train in one process",
                              *record_loc(sgd_rec, "AutoAdjust"))
        max_epochs, model_path = sgd.max_epochs, cmd.model_path
        # every worker looks for model files once rank 0 has written those of the commands
        # before (an edit action's modelPath.0): else they start from different networks
        self.parallel.barrier()
        start, resume_from = start_epoch(model_path, max_epochs,
                                          rec.get_bool("makeMode", True, inherited=True), log)
        if start >= max_epochs:
            log("No further training is necessary.")
            return []
        if resume_from is not None:
            log(f"Starting from checkpoint. Loading network from '{resume_from}'.")
        else:
            log("Creating virgin network.")
        seed_offset = rec.get_int("randomSeedOffset", 0, inherited=True)
        if not 0 <= seed_offset < 2 ** 32:
            value = rec.lookup("randomSeedOffset")
            raise ConfigError(f"randomSeedOffset must lie in [0, 2**32), got {value}",
                              *loc_of(value))
        # the offset seeds the per-epoch random streams; the parameters' seeds go on counting
        # (run_config_file), whatever the offset: randomSeedOffset reaches only NDL networks
        with auto_seeds_kept():
            seed(seed_offset)
        description = cmd.network
        if resume_from is not None and \
                os.path.abspath(model_name(model_path, -1, max_epochs)) in self.mel_models:
            # a MEL edit wrote the start (modelPath.0): the network is the file's, as cntk.exe
            # reads every network from its start file (TIMIT_TrainWithPreTrain's added layers)
            description = loaded_network(resume_from, record_loc(rec, "modelPath"))
        # cntk.exe loads a checkpoint without evaluating the network description: its
        # parameters take no seeds then
        with seeds_kept(self.run.root) if resume_from is not None else contextlib.nullcontext():
            network = CommandNetwork(description, per_epoch(sgd.dropout_rate, start),
                                     command_sequence_streams(cmd, self.run.commands, self.opened))
        if not network.criterion_nodes:
            raise ConfigError("the network declares no criterion node (criterionNodes = (ce))",
                              *loc_of(cmd.network))
        criterion = network.criterion_nodes[0]
        crit_name = network.name(criterion)
        evals = [n for n in network.evaluation_nodes if n is not criterion]
        eval_names = [network.name(n) for n in evals]
        # the reader's deserializers, indexed once: the pre-computing pass reads them too
        deserializers = reader_deserializers(cmd.reader, opened=self.opened.take(cmd.reader))
        # (set back as cntk.exe's reader: the pre-computing pass reads it, then epoch 1 starts)
        source = make_source(cmd.reader, warn=log.raw, pieces=True, opened=deserializers,
                             set_back=True)
        opened.callback(source.close)
        # the cvReader's deserializers (held until Validation takes them) are made before epoch
        # 1, as cntk.exe's after the reader (TrainActions.cpp:119-121): a file it lacks fails now
        cv_held: list = []
        if cmd.cv_reader is not None:
            cv_held.append(reader_deserializers(cmd.cv_reader,
                                                opened=self.opened.take(cmd.cv_reader)))
            opened.callback(lambda: [d.close() for d in (cv_held.pop() if cv_held else ())])
        truncated = (io.TruncatedUtteranceSource, io.LMSentenceSource, TruncatedSequenceSource)
        carry = StateCarry([criterion] + evals, source) if isinstance(source, truncated) else None
        reader_rows = False     # the reader reports its last minibatch's rows (CNTKProgress)
        if sgd_rec.get_bool("truncated", False, inherited=True):
            # a rate or momentum per minibatch is per minibatchSize x the reader's parallel
            # sequences (SGD.h:142-158); CNTK 2's readers say 0 (Exports.cpp:26-31 of
            # CompositeDataReader): cntk.exe's RuntimeError (_sgd_rates.effective_minibatch_size)
            legacy = isinstance(source, (io.UtteranceSource, io.LMSentenceSource,
                                         TruncatedSequenceSource))   # (its .parallel: 0 too)
            sgd = dataclasses.replace(sgd, parallel_sequences=source.parallel if legacy else
                                      0 if is_composite(cmd.reader) else 1)
            # a CNTKTextFormatReader's, ImageReader's or HTKDeserializers' shim: its
            # nbruttsineachrecurrentiter until a minibatch is read, then its rows, read again
            # at each epoch's start (ReaderShim.cpp:79, 352; SGD.cpp:549, 630)
            reader_rows = str(cmd.reader.reader_type or "").lower() in _SHIM_READERS
        reader_loc = record_loc(rec, "reader")
        inputs = network.input_source([criterion] + evals, source, reader_loc, cmd.name)
        if reader_rows:     # (what the shim says before it reads: ReaderShim.cpp:79)
            inputs.continue_reader(shim_parallel_sequences(rec.get_record("reader",
                                                                          inherited=True)))
        # epochSize = 0: an epoch is one sweep, ended where the reader's sweep ends (fit), so
        # the data is not read once more up front to count a sweep's labels
        epoch_size = sgd.epoch_size or None
        # cntk.exe's reader starts each epoch at epoch x epochSize samples (StartEpoch) and
        # ends it there (SGD's loop runs until the reader has no more), on one worker and on
        # several, a restart from modelPath.<n> too (its checkpoints keep no reader
        # position); a sequence counts its rows (the text index counts a sequence's lines,
        # the bundler the longest stream), whatever the trainer counts (a label per sequence)
        inputs.epochs_from_start = bool(epoch_size)
        if source.sweep_size == 0:
            raise ConfigError("the training reader delivers no samples", *reader_loc)
        params = network.learnable(criterion)
        if not params:
            raise ConfigError("the criterion depends on no learnable parameter",
                              *loc_of(cmd.network))
        exempt = network.library.unregularized(disable_reg_in_batch_norm(sgd, sgd_rec))
        rates = network.library.learning_rate_multipliers
        # each epoch's momentum is its entry, set at its start (CNTKProgress moves the clock)
        clock = EpochClock()
        if reader_rows:
            clock.reader_parallel = lambda: inputs.parallel_rows
        learners = make_learners(params, sgd, sgd_rec, sgd.epoch_size,
                                 {k for k, p in params.items() if id(p) in exempt},
                                 {k: rates[id(p)][1] for k, p in params.items() if id(p) in rates},
                                 clock=clock)
        model = network.output_nodes[0] if network.output_nodes else criterion
        parallel = self.parallel
        dp_bits = data_parallel_bits(sgd, parallel.size)    # (read once: the hook and the log)
        trainer = NetworkTrainer(model, (criterion, evals[0] if evals else None), learners,
                                  data_parallel=parallel.data_parallel(
                                      params, block_momentum(sgd, sgd_rec, parallel.size),
                                      quantized_bits(dp_bits), clock),
                                  check_numerics=cmd.check_numerics,
                                  counted=lambda node: network.counted(node, [criterion] + evals),
                                  carry=carry)

        log()
        log(f"Training criterion:   {crit_name} = {network.library.operation_of(criterion)}")
        reading, defaulted = distributed_reading(sgd, cmd.reader.reader_type)
        if defaulted and parallel.size > 1 and cmd.trace_level > 0:     # (SGD.cpp:230-237)
            log("\"distributedMBReading\" is not explicitly specified, defaulting to 'true'.")
        for name, node in zip(eval_names, evals):
            log(f"Evaluation criterion: {name} = {network.library.operation_of(node)}")
        log()
        count = sum(p.size for p in params.values())
        if cmd.trace_level > 0:
            with_gradient = network.nodes_with_gradient(criterion)
            log(f"Training {count} parameters in {len(params)} out of {len(params)} parameter "
                "tensors" + ("" if with_gradient is None else
                             f" and {with_gradient} nodes with gradient") + ":")
            log()
            # by name (cntk.exe's learnable nodes come sorted: BatchNormalization/NonSpatial/CNTK/
            # baseline.txt lists b, h1.W, h1.b, ol.W, ol.b, sc)
            for name, p in sorted(params.items()):
                log(f"\tNode '{name}' (LearnableParameter operation) : "
                    f"[{cntk_shape_text(p.shape)}]")
        else:
            log(f"Training {count} parameters in {len(params)} parameter tensors.")
        log()
        if dp_bits is not None and cmd.trace_level > 0:                # (SGD.cpp:398-402)
            log.raw(data_parallel_init_line(per_epoch(dp_bits, start)))

        checkpoint = None
        if resume_from is not None:    # the model file holds the pre-computed values
            # (a sweep counted through the training source's deserializers: indexed once)
            swept = functools.partial(inputs.label_sweep_size, cmd.reader, deserializers)
            checkpoint, flags = resume(log, resume_from, trainer, learners, source, start,
                                       lambda: epoch_size or swept(),
                                       per_sweep=epoch_size is None,
                                       aliases=network.precompute_aliases,
                                       reshaped=network.net.reshaped_weights,
                                       untagged_names=network.library.untagged_file_names)
            mark_computed(network, flags)
        # CNTK: the model before the start epoch is saved unless it was loaded and the pass
        # computed nothing (a model file written before the pass has values to compute)
        if (precompute(network, cmd, log, deserializers, inputs) or resume_from is None) and \
                parallel.is_main:
            save_model(model_name(model_path, start - 1, max_epochs),
                       *network.model_file_parts())
        setting = TrainSetting(cmd.name, sgd, [crit_name] + eval_names, cmd.trace_level,
                               seed_offset, model_path, keep_checkpoint_files(sgd, sgd_rec),
                               adjust, min_lr, [False] + network.accumulated(evals))
        validate = None
        if cmd.cv_reader is not None:
            # (cntk.exe's workers read the cvReader distributed where they read the reader so
            # and the cvReader can: SGD.cpp:706, SimpleEvaluator.h:96)
            shares = parallel.size if parallel.size > 1 and \
                distributed_reading(sgd, cmd.cv_reader.reader_type)[0] else 0
            validate = Validation(network, [criterion] + evals, [crit_name] + eval_names,
                                   cmd, log, cv_held.pop(), shares=shares)
            opened.callback(validate.close)
        progress = CNTKProgress(setting, log, network.library, source,
                                network.model_file_parts(), parallel, self.epoch_callback,
                                validate=validate,
                                batch_norms=[n for n in topological_nodes([criterion])
                                             if n.spec.name == "cntk_batch_normalization"],
                                criterion=criterion, clock=clock,
                                data_parallel=(dp_bits, reading))
        if adjust is not None:
            info = (checkpoint or {}).get("auto_adjust")
            try:
                progress.lr_state = initial_state(adjust, start, progress.fixed_epochs,
                                                  tuple(info) if info else None)
            except StadynError as exc:
                raise ConfigError(str(exc), *record_loc(sgd_rec, "AutoAdjust")) from None
        epoch = start
        while True:    # once, unless AutoAdjust rolls back an epoch (it is then trained again)
            try:
                # CNTK's loop: stop on a NaN where it is logged (the callback), not before the
                # update
                trainer.fit(inputs, inputs.input_map, epochs=max_epochs, epoch_size=epoch_size,
                            minibatch_size=list(sgd.minibatch_size), initial_epoch=epoch,
                            outputs=[F.sum(n) for n in evals[1:]], stop_on_nonfinite=False,
                            callbacks=[EpochAccumulators([criterion] + evals), progress],
                            progress_bar=False)
            except RepeatEpoch as again:
                epoch = again.epoch
                continue
            except TrainingComplete:
                pass
            break
        return progress.results

    def _trained_network(self, cmd: CommandConfig,
                         model_path: str | None = None) -> CommandNetwork:
        """A test/eval/write/cv command's network with the parameters of its model file
        (:func:`._eval_command.trained_network`)."""
        return trained_network(cmd, self.run, self.opened, model_path)

    # -- write --------------------------------------------------------------------------------
    def write(self, cmd: CommandConfig) -> dict[str, Any]:
        """CNTK's ``write`` action (:mod:`._write_command`)."""
        return write_command(cmd, self._trained_network, self.log, self.opened)

    # -- edit ---------------------------------------------------------------------------------
    def edit(self, cmd: CommandConfig) -> str | None:
        """CNTK's ``edit`` action (``DoEdit``): the network of ``BrainScriptNetworkBuilder``
        saved as ``outputModelPath``; the model file's path, or None when make mode skipped
        it (run_config_file has already checked the command with check_edit)."""
        rec = cmd.record
        if is_mel_edit(cmd):
            # MEL (cntk.exe's legacy model editing): run whatever makeMode says, as cntk.exe
            saved = MELScript(str(rec.get_str("editPath")), rec, StadynLibrary()).run()
            return saved[-1] if saved else None
        output = str(rec.get_str("outputModelPath"))
        if rec.get_bool("makeMode", True, inherited=True) and os.path.exists(output):
            self.log(f"'{output}' exists, skipping. Specify makeMode=false to force executing "
                     "the action.")
            return None
        network = CommandNetwork(cmd.network, 0.0,
                                 command_sequence_streams(cmd, self.run.commands, self.opened))
        outputs, inputs, tags = network.model_file_parts()
        save_model(output, outputs, inputs, tags)
        nodes = {id(v) for n in topological_nodes(list(outputs.values()))
                 for v in (*n.inputs, *n.outputs) if v is not None}
        self.log()
        self.log(f"Model with {len(nodes)} nodes saved as '{output}'.")
        return output

    # -- test / eval ------------------------------------------------------------------------
    def evaluate(self, cmd: CommandConfig, model_path: str | None = None) -> EvalResult:
        """CNTK's test/eval action (``DoEval``) on the model file ``model_path`` (by default
        the command's ``modelPath``; a cv command passes each of its models):
        :func:`._eval_command.evaluate_network`."""
        return evaluate_network(cmd, self._trained_network(cmd, model_path), self.log,
                                self.opened)

    def _evaluate_model(self, cmd: CommandConfig) -> Callable[[str], EvalResult]:
        """:meth:`evaluate` of one model file, its network built afresh (as cntk.exe loads each
        model of a cv command): in a registry of its own, so its parameters take the names
        the model file has."""
        def evaluate(path: str) -> EvalResult:
            with parameter_registry(ParameterRegistry()):
                return self.evaluate(cmd, path)
        return evaluate


def run(config: str | os.PathLike | Sequence[str | os.PathLike], overrides: Sequence[str] = (),
        *, actions: Sequence[str] | None = None, out: TextIO | None = None,
        epoch_callback: Callable[[str, int], None] | None = None) -> RunResult:
    """Run the commands of a ``.cntk`` config (``command = A:B``), as ``cntk configFile=...``.

    ``overrides`` are command-line ``key=value`` items (``dataDir=/data``,
    ``Train.SGD.maxEpochs=2``); ``actions`` limits the commands run to those actions (``stadyn
    eval`` passes ``("test", "eval")``); ``out`` receives the log (default stdout; with a
    top-level ``stderr = path`` the log also goes to cntk.exe's file: ``path``, or
    ``path_<commands>.log`` with ``timestamping = true``, each data-parallel worker its own:
    :func:`._cntk_log.log_file_path`);
    ``epoch_callback(command, epoch)`` is called after each saved epoch.
    """
    root = load_config(config, list(overrides))
    return run_config_file(root, actions=actions, out=out, epoch_callback=epoch_callback)


def run_config_file(root: ConfigRecord, *, actions: Sequence[str] | None = None,
                    out: TextIO | None = None,
                    epoch_callback: Callable[[str, int], None] | None = None) -> RunResult:
    """:func:`run` on a config already read (a :class:`ConfigRecord`)."""
    config = run_config(root)
    commands = list(config.commands)
    if actions is not None:
        wanted = {a.lower() for a in actions}
        commands = [c for c in commands if c.action in wanted]
        if not commands:
            names = ", ".join(f"{c.name} ({c.action})" for c in config.commands)
            raise ConfigError(f"the config runs no {' or '.join(sorted(wanted))} command "
                              f"(its commands: {names})", *record_loc(root, "command"))
    for cmd in commands:
        if cmd.action not in ACTIONS:
            raise ConfigError(f"action '{cmd.action}' of command '{cmd.name}' is not supported "
                              "(train, test, eval, cv, write or edit)",
                              *record_loc(cmd.record, "action"))
        if cmd.action == "edit":
            check_edit(cmd)
    parallel = Parallel()
    timestamping = root.get_bool("timestamping", False)
    log_path = None if not config.stderr else log_file_path(
        config.stderr, [c.name for c in commands], timestamping, parallel.rank, parallel.size)
    if log_path is not None:     # (each worker's own), before anything runs
        check_writable(log_path, "log file (stderr)", loc_of(root.get_str("stderr")))
    if parallel.is_main:     # before anything runs: not after an epoch of training
        for cmd in commands:
            if cmd.action == "train" and cmd.model_path is not None:
                sgd = sgd_block(cmd.record)
                rec = sgd if sgd is not None and "modelPath" in sgd else cmd.record
                check_writable(cmd.model_path, "model file (modelPath)",
                                loc_of(rec.get_str("modelPath", None, inherited=True)))
    if not parallel.is_main:
        out = _io.StringIO()   # rank 0 writes to stdout; every worker to its log file
    log = CNTKLog(out, log_path, timestamping)
    if parallel.is_main:
        warn_unused_overrides(root, config)
    # cntk.exe's BrainScript parameters count their seeds from 1 for the whole process, over
    # all its commands (a function-local static in LearnableParameter's constructor): a run
    # is one such process
    restart_auto_seeds(1)
    try:
        log(f"Commands: {' '.join(c.name for c in commands)}")
        log(f'precision = "{config.precision}"')
        if parallel.size > 1:
            log(f"Data-parallel training on {parallel.size} workers.")
        runner = _Runner(config, log, parallel, epoch_callback)
        for cmd in commands:
            runner.command(cmd)
        log("__COMPLETED__")
        return runner.result
    finally:
        log.close()

