"""``stadyn train CONFIG.cntk [key=value ...]``: run a CNTK BrainScript config, as
``cntk configFile=CONFIG.cntk key=value ...`` did.  ``stadyn train FILE.nnp -o OUTDIR
[--epochs N]`` trains an NNabla training configuration, as ``nnabla_cli train`` did.

Runs the config's ``command`` list in order (``train``, ``test``/``eval``, ``write``, ``edit``,
``cv`` -- each model file of an interval of epochs evaluated, the best named), printing
CNTK's log lines; ``key=value`` items override the config (``dataDir=/data``,
``TrainConvNet.SGD.maxEpochs=2``).  Models are saved to ``modelPath`` after every epoch and a
restarted run continues after the last saved epoch.  ``--profile DIR`` records the run with
``sd.profile`` and writes the time per scope and a Chrome/Perfetto trace into DIR (shorten the
run with overrides such as ``Train.SGD.maxEpochs=1 Train.SGD.epochSize=2048``: the trace keeps
every op call).  See docs/brainscript.md and docs/seeing-your-network.md.
"""

from __future__ import annotations

import argparse
import os
import sys

from .._errors import StadynError
from . import count, plain

__all__ = ["add_parser", "run_train"]


def _check_overrides(overrides: list[str], command: str) -> list[str]:
    for item in overrides:
        if "=" not in item:
            raise StadynError(f"'{item}' is not a key=value override (stadyn {command} "
                              "CONFIG.cntk [key=value ...])")
    return list(overrides)


def run_train(config: str, overrides: list[str], nproc: int = 1, actions=None,
              timeout: float = 600.0, profile_dir: str | None = None) -> int:
    """Run ``config`` with ``overrides``; ``nproc > 1`` trains data-parallel in that many
    processes (through :func:`stadyn.distributed.run_workers`); ``profile_dir`` records the run
    with :func:`stadyn.profile` and writes ``profile.txt`` (time per scope, then per op) and
    ``trace.json`` (Chrome/Perfetto) there."""
    if nproc < 1:
        raise StadynError(f"--nproc must be at least 1, got {nproc}")
    if profile_dir is not None and nproc > 1:
        raise StadynError("--profile records one process: run it without --nproc")
    if nproc > 1:
        from ..distributed import run_workers
        # Every worker runs this command without --nproc; stadyn.distributed tells each one its
        # rank, the workers split each minibatch and sum gradients, and rank 0 logs and saves.
        command = "train" if actions is None else "eval"
        return run_workers([sys.executable, "-m", "stadyn", command, config, *overrides], nproc,
                           timeout)
    from ..brainscript import run
    from ..graph import source_location
    # Nodes the config's expressions make name its lines; the few the runner adds (sums of
    # criteria) name no line rather than this command's.
    if profile_dir is None:
        with source_location(None):
            run(config, overrides, actions=actions)
        return 0
    from ..inspect import profile
    os.makedirs(profile_dir, exist_ok=True)
    with profile() as prof, source_location(None):
        run(config, overrides, actions=actions)
    trace_path = os.path.join(profile_dir, "trace.json")
    prof.export_chrome_trace(trace_path)
    text = (prof.table(by="scope", depth=2) + "\n\n" + prof.table(by="op", limit=30) + "\n")
    with open(os.path.join(profile_dir, "profile.txt"), "w") as f:
        f.write(text)
    print(text + f"profile: {os.path.join(profile_dir, 'profile.txt')}, trace: {trace_path}")
    return 0


def _is_nnp(config: str) -> bool:
    return config.lower().endswith((".nnp", ".nntxt", ".prototxt"))


def run_train_nnp(config: str, overrides: list[str], outdir: str | None,
                  epochs: int | None) -> int:
    """Train the NNabla file ``config`` (see the module docstring)."""
    if overrides:
        raise StadynError(f"key=value overrides apply to BrainScript configs, not to {config}")
    from ._nnp_run import train_nnp
    train_nnp(config, outdir or ".", epochs=epochs)
    return 0


def _run(a) -> int:
    if _is_nnp(a.config):
        if a.profile is not None:
            raise StadynError("--profile applies to BrainScript configs; profile an .nnp's "
                              "training from Python with sd.profile()")
        return run_train_nnp(a.config, a.overrides, a.outdir, a.epochs)
    if a.outdir is not None or a.epochs is not None:
        raise StadynError("-o/--outdir and --epochs apply to .nnp files; a BrainScript config "
                          "sets them with key=value overrides")
    return run_train(a.config, _check_overrides(a.overrides, "train"), a.nproc,
                     timeout=a.timeout, profile_dir=a.profile)


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("train", help="run a CNTK BrainScript config (.cntk) or train an "
                                            "NNabla .nnp",
                              description=plain(__doc__),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", help="the .cntk config file (or an NNabla .nnp)")
    p.add_argument("overrides", nargs="*", default=[], metavar="key=value",
                   help="config overrides, e.g. dataDir=/data Train.SGD.maxEpochs=2")
    p.add_argument("--nproc", type=int, default=1,
                   help="train data-parallel in N local worker processes")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="with --nproc: seconds a worker may wait for the others (default 600)")
    p.add_argument("--profile", metavar="DIR", default=None,
                   help="record the run with sd.profile: time per scope and op in "
                        "DIR/profile.txt, a Chrome/Perfetto trace in DIR/trace.json")
    p.add_argument("-o", "--outdir", default=None,
                   help="with an .nnp: the folder for results.nnp (the best epoch) and "
                        "results_current_N.nnp (default: the current one)")
    p.add_argument("--epochs", type=count(), default=None,
                   help="with an .nnp: epochs to run instead of the file's max_epoch")
    p.set_defaults(func=_run)
