"""The models a surveyed CNTK config loads, stood in for by the networks that would write them
(for ``tools/cntk_config_survey.py``, which runs no command): a model file a train or edit
command of the config (or of a config run before it) writes is that command's network built
afresh, a file a MEL edit saves is its script run on the stand-ins of what it loads.
"""

from __future__ import annotations

import os

__all__ = ["MELStandIn", "model_writers", "run_mel", "stand_in_models"]


def model_writers(root) -> dict:
    """The model files the train and edit commands of a config write (``modelPath``,
    ``outputModelPath``), each with the network description that command builds."""
    from stadyn.brainscript._blocks import network_of_block
    from stadyn.brainscript._config import BrainScriptSource, ConfigRecord
    from stadyn.brainscript._mel_read import is_mel_block, mel_saved_models

    writers = {}
    blocks = [root.peek(key) for key in root]
    blocks = [b for b in blocks if isinstance(b, ConfigRecord)]
    for block in blocks:
        if is_mel_block(block):
            try:         # a MEL edit: what it saves is its script run on what it loads
                for path in mel_saved_models(str(block.get_str("editPath")), block):
                    writers.setdefault(path, MELStandIn(block))
            except Exception:  # noqa: BLE001 - the command's survey reports it
                pass
    for block in blocks:
        action = str(block.get_str("action", "", inherited=True))
        if action not in ("train", "edit"):
            continue
        try:
            source = network_of_block(block)
        except Exception:  # noqa: BLE001 - a network the survey reports elsewhere
            continue
        if source is None:
            continue
        path = block.get_str("outputModelPath", None) if action == "edit" else \
            block.get_str("modelPath", None, inherited=True)
        sgd = block.get("SGD")
        if action == "train" and isinstance(sgd, ConfigRecord) and "modelPath" in sgd:
            path = sgd.get_str("modelPath")
        if path is not None and action == "train" and \
                isinstance(writers.get(f"{path}.0"), MELStandIn):
            # it trains the network a MEL edit saved as its modelPath.0 (as the runner does)
            source = BrainScriptSource(f'BS.Network.Load ("{path}.0")')
        if path is not None:
            writers.setdefault(str(path), source)
    return writers


class MELStandIn:
    """A model file a MEL edit command saves: its script, run when the file is loaded."""

    def __init__(self, record):
        self.record = record


def run_mel(record, loader):
    """Run the MEL script of edit command ``record``, its models loaded by ``loader``: the
    networks it saves, by path (nothing is written)."""
    import stadyn as sd
    from stadyn.brainscript import StadynLibrary
    from stadyn.brainscript._mel import MELScript

    saved = {}
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        lib = StadynLibrary()
        lib.model_loader = loader
        mel = MELScript(str(record.get_str("editPath")), record, lib)
        mel.save = lambda path, outputs, inputs, tags: saved.__setitem__(
            path, sd.Network(inputs, outputs, registry, tags=tags))
        mel.write = lambda path, text: None
        mel.run()
    return saved


def stand_in_models(root, load, others: "dict | None" = None, pretrained=None):
    """``BS.Network.Load`` for the survey: a model file a train or edit command of the config
    writes (``modelPath``, ``outputModelPath``), or one of ``others`` (the configs run before
    it in the same test, or beside it in its Examples folder) writes, is that command's
    network, built afresh (the survey runs no command); an absent file no command writes is
    ``pretrained (path)``'s network description where it gives one; any other file is loaded
    as it is."""
    import numpy as np

    import stadyn as sd
    from stadyn.brainscript import StadynLibrary, build_network
    from stadyn.brainscript._command_network import node_inputs
    from stadyn.brainscript._model_files import inputs_tag

    writers = dict(others or {})
    writers.update(model_writers(root))
    building = set()

    def loader(path):
        source = writers.get(path)
        if source is None and not os.path.exists(path) and pretrained is not None:
            source = pretrained(path)
        if os.path.exists(path) or source is None or path in building:
            return load(path)
        building.add(path)
        try:
            if isinstance(source, MELStandIn):
                return run_mel(source.record, loader)[path]
            registry = sd.ParameterRegistry()
            with sd.parameter_registry(registry):
                lib = StadynLibrary()
                lib.model_loader = loader
                net = build_network(source, lib)
                outputs = {k: v for k, v in net.nodes.items()
                           if isinstance(v, sd.Variable) and v.parent is not None}
                # with cntk.exe's names of the nodes made inside functions, as the file has
                outputs.update((k, v) for k, v in net.inner_nodes.items() if k not in outputs)
                # the tags the file has: criterion, evaluation and output nodes, and each
                # node's inputs (a MEL edit's SetInput counts in them)
                tags = {}
                for tag, nodes in (("criterion", net.criterion_nodes),
                                   ("evaluation", net.evaluation_nodes),
                                   ("output", net.output_nodes)):
                    for name, v in outputs.items():
                        if any(v is n for n in nodes):
                            tags.setdefault(name, []).append(tag)
                for name, links in node_inputs(net, lib, outputs).items():
                    tags.setdefault(name, []).append(inputs_tag(links))
            for node in lib.precompute_nodes:   # computed, as in the file the command writes
                node.value.d = np.zeros(node.value.shape, np.float32)
        finally:
            building.discard(path)
        inputs = {net.name_of(v): v for v in lib.inputs if net.name_of(v) is not None}
        return sd.Network(inputs, outputs, registry, tags=tags)
    return loader
