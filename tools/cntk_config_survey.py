"""Survey CNTK's own ``.cntk`` configs: which ones Stadyn's BrainScript runner can take as written.

CNTK's configs are not part of Stadyn; point this at a CNTK checkout (or its bare git mirror,
whose config, BrainScript and NDL files are then copied to a scratch folder):

    python tools/cntk_config_survey.py --cntk /path/to/CNTK [--markdown] [--json out.json]

It surveys every ``Examples/**/*.cntk`` with a ``command`` (files without one are only
included by others) and every end-to-end test of ``Tests/EndToEndTests`` that has a
``baseline*.txt`` (a cntk.exe log): each ``cntkrun CONFIG "overrides"`` line of its ``run-test``,
with those overrides.  For each config it does what ``stadyn train`` does before reading data:
read the config (includes, ``$var$``), read the command blocks, and for each command

* refuse an action other than ``train``/``test``/``eval``/``write``/``edit``; run an ``edit``'s
  MEL script on the networks standing in for the models it loads (``MEL Delete``: a MEL
  command Stadyn does not run), and build a train command that starts from a model file a
  MEL edit writes from that file, as the runner does;
* build the network of ``BrainScriptNetworkBuilder``, ``SimpleNetworkBuilder`` or
  ``NDLNetworkBuilder`` with ``StadynLibrary`` (Input sizes are the config's own; no data is
  read) and count its parameters;
* make the learner of the ``SGD`` block on those parameters (``gradUpdateType``, unknown keys,
  the ``AutoAdjust`` block);
* check each ``reader`` / ``cvReader`` block's deserializer types (CNTK's legacy
  ``readerType`` readers Stadyn lacks are reported by name; settings of the ones it reads that
  it refuses, by reader and key: ``reader HTKMLFReader truncated``), then open it as its
  command would, without data: each deserializer made from its block (that its file does not
  exist is expected), and its minibatch source made on stand-ins of the block's streams, what
  fails on the config alone reported as ``reader opened: <label>``; a train command's SGD
  ``truncated = true`` with a deserializers reader and a rate or momentum per minibatch
  (cntk.exe's RuntimeError at the first epoch).

Each gap is one short label (``gradUpdateType FSAdaGrad``, ``BS function OptimizedRNNStack``,
``NDL``, ``reader HTKMLFReader``, ``action write``); the table counts the configs each gap
blocks, so the gaps can be closed most-blocking first.  What it found is in
docs/brainscript.md ("CNTK's example configs").
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import os
import sys
import tempfile
import warnings

# the files, and what a command's readers lack, beside this file (its directory is first on
# sys.path)
from cntk_config_files import (baseline_check, baseline_counts, checkout, example_configs,
                               standard_overrides, test_configs)
from cntk_config_readers import _label, _reader_gaps, _reader_open_gaps, _truncated_rates_gaps
from cntk_model_stand_ins import model_writers, run_mel, stand_in_models

# ---------------------------------------------------------------------------------------------
# One config
# ---------------------------------------------------------------------------------------------
# Pretrained models CNTK's examples load from outside the repository, by file name: the
# end-to-end test config (and its overrides) whose train command built the network the file
# holds.  Fast R-CNN's BrainScript clones AlexNet.model's features..conv5_y and pool3..h2_d,
# the node names of Tests/EndToEndTests/Image/AlexNet's NDL network.
_PRETRAINED = {"AlexNet.model": ("Tests/EndToEndTests/Image/AlexNet/AlexNetCommon.cntk",
                                 ["configFile=AlexNet.cntk"])}


def _pretrained_stand_in(path: str):
    """The network description standing in for the absent pretrained model ``path``, or
    None: the first train command's of the config :data:`_PRETRAINED` names for its file name,
    looked up in the checkout that holds the working directory."""
    from stadyn.brainscript import load_config, run_config

    entry = _PRETRAINED.get(os.path.basename(path))
    root = os.getcwd()
    while entry and not os.path.isdir(os.path.join(root, "Tests", "EndToEndTests")):
        if os.path.dirname(root) == root:
            return None
        root = os.path.dirname(root)
    if not entry or not os.path.exists(os.path.join(root, entry[0])):
        return None
    config = os.path.join(root, entry[0])
    cwd = os.getcwd()
    os.chdir(os.path.dirname(config))
    try:
        run = run_config(load_config(config, standard_overrides(config) + entry[1]))
    finally:
        os.chdir(cwd)
    return next((c.network for c in run.commands if c.action == "train"), None)


def survey_command(cmd, root_record, others: "dict | None" = None) -> tuple[list[str], dict]:
    """The gaps of one command and what was built (``params``: parameter count, ``tensors``)."""
    import numpy as np

    import stadyn as sd
    from stadyn.brainscript import StadynLibrary, build_network
    from stadyn.brainscript._autoadjust import auto_adjust
    from stadyn.brainscript._blocks import sgd_block
    from stadyn.brainscript._config import BrainScriptSource
    from stadyn.brainscript._command_checks import ACTIONS
    from stadyn.brainscript._mel_read import is_mel_block, is_mel_edit, mel_saved_models
    from stadyn.brainscript._model_files import model_name
    from stadyn.brainscript._network_library import load_model_file
    from stadyn.brainscript._network_source import network_for
    from stadyn.brainscript._sgd import make_learner
    from stadyn.graph import topological_nodes

    gaps: list[str] = []
    info: dict = {}
    if cmd.action not in ACTIONS:
        gaps.append(f"action {cmd.action}")
    if is_mel_edit(cmd):     # its script run on the models it loads (stand-ins)
        loader = stand_in_models(root_record, load_model_file, others, _pretrained_stand_in)
        try:
            saved = run_mel(cmd.record, loader)
        except Exception as exc:  # noqa: BLE001 - any failure is a finding
            return gaps + [_label(exc)], info
        for net in saved.values():     # its trained parameters, as a train command's
            params = {k: p for k, p in net.registry.items() if p.need_grad}
            info = {"params": int(sum(p.size for p in params.values())),
                    "tensors": len(params)}
        return gaps, info
    for reader, pieces in ((cmd.reader, cmd.action == "train"), (cmd.cv_reader, False)):
        found = _reader_gaps(reader, "reader")
        # (a reader Stadyn reads: opened as its command would, on stand-ins of its data)
        gaps += found or ([] if reader is None else _reader_open_gaps(reader, pieces))
    gaps += _truncated_rates_gaps(cmd)
    if cmd.action == "train" and cmd.sgd is not None:     # the learner on a stand-in parameter
        with sd.parameter_registry(sd.ParameterRegistry()):
            try:
                w = sd.Variable.from_numpy_array(np.zeros(2, np.float32), need_grad=True)
                sgd_record = sgd_block(cmd.record)
                make_learner({"w": w}, cmd.sgd, sgd_record, epoch_size=None)
                auto_adjust(sgd_record.get("AutoAdjust"), sgd_record,
                            (len(cmd.sgd.minibatch_size), cmd.sgd.max_epochs))
            except Exception as exc:  # noqa: BLE001
                gaps.append(_label(exc))
    network = cmd.network
    if cmd.action == "train" and cmd.model_path is not None and cmd.sgd is not None:
        first = model_name(cmd.model_path, -1, cmd.sgd.max_epochs)
        for block in (root_record.peek(k) for k in root_record):
            try:
                if getattr(block, "get_str", None) is None or not is_mel_block(block):
                    continue
                if first in mel_saved_models(str(block.get_str("editPath")), block):
                    # a MEL edit writes modelPath.0: the runner trains the file's network
                    network = BrainScriptSource(f'BS.Network.Load ("{first}")')
            except Exception:  # noqa: BLE001 - the edit command's survey reports it
                continue
    if network is None:
        if cmd.action in ("train",):
            gaps.append("no network")
            return gaps, info
        try:     # test/eval/write: the train command's network (as the runner does)
            network = network_for(root_record, cmd)
        except Exception:  # noqa: BLE001 - any failure is a finding
            if str(cmd.model_path) not in (others or {}):
                gaps.append("network only in a model file (BS.Network.Load, edit)")
                return gaps, info
            # another config's train command writes the file: the runner loads it then
            # (BS.Network.Load of the file, as cntk.exe read the network from it)
            network = BrainScriptSource(f'BS.Network.Load ("{cmd.model_path}")')
    with sd.parameter_registry(sd.ParameterRegistry()):
        try:
            lib = StadynLibrary()
            lib.model_loader = stand_in_models(root_record, lib.model_loader, others,
                                                _pretrained_stand_in)
            net = build_network(network, lib)
        except RecursionError:
            gaps.append("recursion")
            return gaps, info
        except Exception as exc:  # noqa: BLE001 - any failure is a finding
            gaps.append(_label(exc))
            return gaps, info
        roots = [v for v in net.nodes.values() if isinstance(v, sd.Variable)]
        leaves = {id(v) for n in topological_nodes(roots) for v in n.inputs if v.parent is None}
        params = {k: v for k, v in sd.get_parameters().items() if id(v) in leaves}
        info = {"params": int(sum(p.size for p in params.values())), "tensors": len(params)}
    return list(dict.fromkeys(gaps)), info


def survey_config(path: str, overrides: list[str], others: "dict | None" = None) -> dict:
    """``{"gaps": [...], "commands": {name: info}}`` for one config (``others``: the model
    files other configs write, :func:`model_writers`)."""
    from stadyn.brainscript import load_config, run_config

    result: dict = {"config": path, "overrides": overrides, "gaps": [], "commands": {}}
    cwd = os.getcwd()
    os.chdir(os.path.dirname(path))        # includes are relative to the working directory too
    try:
        try:
            root = load_config(path, overrides)
            run = run_config(root)
        except RecursionError:
            result["gaps"].append("recursion")
            return result
        except Exception as exc:  # noqa: BLE001
            result["gaps"].append(_label(exc))
            return result
        for cmd in run.commands:
            gaps, info = survey_command(cmd, root, others)
            gaps = list(dict.fromkeys(gaps))      # a reader and a cvReader may share a gap
            result["commands"][cmd.name] = {"action": cmd.action, "gaps": gaps, **info}
            result["gaps"] += [g for g in gaps if g not in result["gaps"]]
    finally:
        os.chdir(cwd)
    return result


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------
def _quiet(fn, *args):
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        return fn(*args)


def _zero_initialised() -> None:
    """Stand-in parameter values: every initialiser draws zeros (the networks of ImageNet
    configs hold 10^8 parameters; the survey needs their shapes, not CNTK's random values)."""
    from stadyn.brainscript import _layer_library, _parameter_library, _stadyn_library

    real = _layer_library.cntk_initializer
    for module in (_layer_library, _parameter_library, _stadyn_library):
        module.cntk_initializer = lambda init, scale=1.0: real("zero", 1.0)


def _writers_of(path: str, overrides: list[str]) -> dict:
    """:func:`model_writers` of one config (nothing where it cannot be read)."""
    from stadyn.brainscript import load_config

    cwd = os.getcwd()
    os.chdir(os.path.dirname(path))
    try:
        return model_writers(load_config(path, overrides))
    except Exception:  # noqa: BLE001 - the config's own survey reports it
        return {}
    finally:
        os.chdir(cwd)


def _others(runs: list[tuple[str, list[str], str]]) -> list[dict]:
    """For each ``(config, overrides, group)``, the model files the other configs of its group
    write (a test's other ``cntkrun`` configs, an example's neighbours in its folder): CNTK's
    TIMIT eval, write and cross-validation configs read the model TIMIT_TrainSimpleNetwork
    trains."""
    writers = [_quiet(_writers_of, path, overrides) for path, overrides, _ in runs]
    found = []
    for k, (path, _, group) in enumerate(runs):
        mine: dict = {}
        for j, (other, _, where) in enumerate(runs):
            if where == group and other != path:
                for key, source in writers[j].items():
                    mine.setdefault(key, source)
        found.append(mine)
    return found


def survey(root: str) -> list[dict]:
    sys.setrecursionlimit(20000)
    _zero_initialised()
    results = []
    examples = [(path, standard_overrides(path) + overrides, os.path.dirname(path))
                for path, overrides in example_configs(root)]
    for (path, overrides, _), others in zip(examples, _others(examples)):
        r = _quiet(survey_config, path, overrides, others)
        r["kind"] = "example"
        results.append(r)
    tests = [(path, standard_overrides(path) + overrides, test)
             for path, overrides, test in test_configs(root)]
    for (path, overrides, test), others in zip(tests, _others(tests)):
        r = _quiet(survey_config, path, overrides, others)
        r["kind"] = "test"
        r["test"] = os.path.relpath(test, root)
        r["baseline"] = baseline_counts(test)
        results.append(r)
    for r in results:
        r["config"] = os.path.relpath(r["config"], root)
        r["overrides"] = r["overrides"][len(standard_overrides("")):]
    return results


def markdown(results: list[dict]) -> str:
    """The gap tables (examples, tests), the examples' table and the tests whose parameter
    counts could be compared with cntk.exe's log."""
    lines = []
    for kind, title in (("example", "Example configs (`Examples/**/*.cntk`)"),
                        ("test", "End-to-end test runs with a baseline log "
                                 "(`Tests/EndToEndTests`)")):
        group = [r for r in results if r["kind"] == kind]
        ready = [r for r in group if not r["gaps"]]
        lines += [f"{title}: {len(group)} configs, {len(ready)} with nothing missing.", "",
                  "| gap | configs it blocks |", "| --- | --- |"]
        counts = collections.Counter(g for r in group for g in r["gaps"])
        lines += [f"| {gap} | {n} |" for gap, n in counts.most_common()]
        lines.append("")

    def commands(r: dict) -> str:
        return "; ".join(f"{n} ({c['action']}" + (f": {c['params']:,}" if "params" in c else "")
                         + ")" for n, c in r["commands"].items())
    lines += ["| example config | commands (action: parameters built) | gaps |",
              "| --- | --- | --- |"]
    for r in results:
        if r["kind"] == "example":
            name = r["config"].replace("Examples/", "", 1)
            lines.append(f"| {name} | {commands(r)} | {', '.join(r['gaps']) or 'none'} |")
    checks = [(r, baseline_check(r)) for r in results if r["kind"] == "test"]
    same = sum(c == "same" for _, c in checks)
    lines += ["", f"Parameter counts of train commands built here against cntk.exe's baseline "
              f"logs: {same} the same, {sum(c.startswith('differs') for _, c in checks)} "
              "different.", "", "| end-to-end test | parameters (tensors) | vs. cntk.exe |",
              "| --- | --- | --- |"]
    for r, check in checks:
        if check:
            counts = ", ".join(f"{c['params']:,} ({c['tensors']})" for c in r["commands"].values()
                               if c["action"] == "train" and "params" in c)
            lines.append(f"| {r['test'].replace('Tests/EndToEndTests/', '')} | {counts} | "
                         f"{check} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cntk", required=True, help="a CNTK checkout or its bare git mirror")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        results = survey(checkout(args.cntk, scratch))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.markdown:
        print(markdown(results))
    else:
        for r in results:
            print(f"{r['config']} {' '.join(r['overrides'])}: {', '.join(r['gaps']) or 'ok'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
