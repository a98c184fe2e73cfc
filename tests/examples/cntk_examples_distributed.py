"""Run CNTK's distributed ``Examples/`` programs (of Microsoft/CNTK; not part of this
repository) with two workers at a tiny size, as their users ran them (``mpiexec -n 2 python
X.py``), and write what each worker printed as JSON: ``OUT.rank0.json``, ``OUT.rank1.json``
(``--combine=OUT`` merges them into another file: ``{run: {"rank0": ..., "rank1": ...}}``).
Each worker runs this file; the program runs as ``cntk_examples.py`` runs the others (its
runner, import hook and stand-ins).  One program per launch: each calls
``Communicator.finalize()``, after which CNTK 2.7 cannot start MPI again in that process.

    python tests/examples/cntk_examples_distributed.py EXAMPLES --prepare
    <launch 2 workers> python tests/examples/cntk_examples_distributed.py EXAMPLES OUT \\
        --only=RUN [--stadyn]
    python tests/examples/cntk_examples_distributed.py EXAMPLES ALL.json --combine=OUT [--update]

The reference ``refs/cntk27_examples_distributed.json`` was written by CNTK 2.7 under OpenMPI,
once per run (``--update`` keeps the runs already in the file)::

    PY=/work/peers/cntk27/venv36/bin/python; export LD_LIBRARY_PATH=.../shimlib
    $PY -W ignore tests/examples/cntk_examples_distributed.py EXAMPLES --prepare
    mpiexec -n 2 $PY -W ignore tests/examples/cntk_examples_distributed.py EXAMPLES \\
        /tmp/ref.json --only=seq2seq_distributed
    $PY tests/examples/cntk_examples_distributed.py EXAMPLES \\
        tests/examples/refs/cntk27_examples_distributed.json --combine=/tmp/ref.json --update

and on Stadyn the workers are those of its launcher (``python -m stadyn.distributed.run
--nproc 2 ...``, ``--stadyn``).  The worker's rank is OpenMPI's ``OMPI_COMM_WORLD_RANK`` or
the launcher's ``RANK``.  Parses under Python 3.6 (CNTK 2.7's interpreter runs it too).
"""

from __future__ import print_function

import io
import json
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cntk_examples import _CntkIsStadyn, cut_cmudict, run_program, write_cifar  # noqa: E402

# (run, program under Examples/, argv, [(text, replacement), ...])
RUNS = [
    # sequence to sequence with attention (CMUDict cut to 200 words, as cntk_examples.py's
    # sequence2sequence): minibatches of 16 samples (of both workers), two epochs of 200
    ("seq2seq_distributed", "SequenceToSequence/CMUDict/Python/Sequence2Sequence_Distributed.py",
     ["-e", "2", "-es", "200", "-ms", "16"], []),
    # the same with block momentum (blocks of 64 samples of both workers), 1-bit SGD (epochs
    # of 100: its cross-validation reads ten times the training samples) and 2-bit
    ("seq2seq_distributed_block_momentum",
     "SequenceToSequence/CMUDict/Python/Sequence2Sequence_Distributed.py",
     ["-e", "2", "-es", "200", "-ms", "16", "-b", "64"], []),
    ("seq2seq_distributed_1bit",
     "SequenceToSequence/CMUDict/Python/Sequence2Sequence_Distributed.py",
     ["-e", "2", "-es", "100", "-ms", "16", "-q", "1"], []),
    ("seq2seq_distributed_2bit",
     "SequenceToSequence/CMUDict/Python/Sequence2Sequence_Distributed.py",
     ["-e", "2", "-es", "200", "-ms", "16", "-q", "2"], []),
    # warm start: each worker alone for its first 96 samples (distributed_after)
    ("seq2seq_distributed_after",
     "SequenceToSequence/CMUDict/Python/Sequence2Sequence_Distributed.py",
     ["-e", "2", "-es", "200", "-ms", "16", "-a", "96"], []),
    # ResNet20 on the CIFAR-10 stand-in: two epochs of one minibatch of 128 (64 per worker),
    # the 64 test pictures
    ("resnet20_cifar10_distributed",
     "Image/Classification/ResNet/Python/TrainResNet_CIFAR10_Distributed.py",
     ["-e", "2", "-es", "128", "-r"], []),
    ("resnet20_cifar10_distributed_1bit",
     "Image/Classification/ResNet/Python/TrainResNet_CIFAR10_Distributed.py",
     ["-e", "2", "-es", "128", "-r", "-q", "1"], []),
    # BN-Inception on the CIFAR-10 stand-in: one epoch of 32 samples in minibatches of 16
    ("bn_inception_cifar10_distributed",
     "Image/Classification/GoogLeNet/BN-Inception/Python/BN_Inception_CIFAR10_Distributed.py",
     ["-n", "1", "-m", "16", "-e", "32", "-r"], []),
    # (its first minibatch alone: the loss before any update)
    ("bn_inception_cifar10_distributed_one_minibatch",
     "Image/Classification/GoogLeNet/BN-Inception/Python/BN_Inception_CIFAR10_Distributed.py",
     ["-n", "1", "-m", "16", "-e", "16", "-r"], []),
]

# the modules the programs import, cut (each text must be found) and loaded from the cut text
# before the program runs (the files are left as they are): Sequence2Sequence.py's sizes as
# cntk_examples.py's sequence2sequence cuts them; the image readers' random crops made centre
# crops of the same ratio, so that both frameworks read the same pixels and every printed
# number can be compared (each framework draws its own random crops)
_CENTRE = "xforms.crop(crop_type='center', side_ratio=0.8)"
_S2S_CUTS = [
    ("Sequence2Sequence", "SequenceToSequence/CMUDict/Python/Sequence2Sequence.py",
     [("hidden_dim = 512", "hidden_dim = 24"), ("attention_dim = 128", "attention_dim = 12"),
      ("embedding_dim = 200", "embedding_dim = 16")])]
_RESNET_CUTS = [
    ("TrainResNet_CIFAR10", "Image/Classification/ResNet/Python/TrainResNet_CIFAR10.py",
     [("xforms.crop(crop_type='randomside', side_ratio=(0.8, 1.0), jitter_type='uniratio')",
       _CENTRE)])]
_BN_INCEPTION_CUTS = [
    ("BN_Inception_CIFAR10",
     "Image/Classification/GoogLeNet/BN-Inception/Python/BN_Inception_CIFAR10.py",
     [("xforms.crop(crop_type='randomside', side_ratio=0.8, jitter_type='uniratio')",
       _CENTRE)])]
IMPORTED_CUTS = {
    "seq2seq_distributed": _S2S_CUTS, "seq2seq_distributed_block_momentum": _S2S_CUTS,
    "seq2seq_distributed_1bit": _S2S_CUTS, "seq2seq_distributed_2bit": _S2S_CUTS,
    "seq2seq_distributed_after": _S2S_CUTS,
    "resnet20_cifar10_distributed": _RESNET_CUTS, "resnet20_cifar10_distributed_1bit": _RESNET_CUTS,
    "bn_inception_cifar10_distributed_one_minibatch": _BN_INCEPTION_CUTS,
    "bn_inception_cifar10_distributed": _BN_INCEPTION_CUTS,
}


def prepare(examples):
    """The stand-ins: CIFAR-10 (``cntk_examples.py``'s) and CMUDict cut."""
    cut_cmudict(examples)
    write_cifar(os.path.join(examples, "Image", "DataSets", "CIFAR-10"))


def load_cut_modules(examples, run):
    """``IMPORTED_CUTS[run]``'s modules, made from the cut text of their files and put in
    ``sys.modules`` (their folder on ``sys.path`` while they load); returns their names."""
    names = []
    for name, path, cuts in IMPORTED_CUTS.get(run, ()):
        path = os.path.join(examples, path)
        with io.open(path, encoding="utf-8-sig") as f:
            source = f.read()
        for old, new in cuts:
            if old not in source:
                raise SystemExit("%s: not in the file: %r" % (path, old))
            source = source.replace(old, new)
        module = types.ModuleType(name)
        module.__file__ = path
        sys.path.insert(0, os.path.dirname(path))
        try:
            exec(compile(source, path, "exec"), module.__dict__)
        finally:
            sys.path.pop(0)
        sys.modules[name] = module
        names.append(name)
    return names


def worker_rank():
    """This worker's rank: OpenMPI's (``mpiexec``) or Stadyn's launcher's."""
    return int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("RANK", "0")))


def combine(out_path, parts, update):
    """``parts.rank0.json`` and ``parts.rank1.json`` into ``out_path`` (``update``: keeping the
    runs already there)."""
    results = {}
    if update and os.path.exists(out_path):
        with open(out_path) as f:
            results = json.load(f)
    for r in (0, 1):
        with open("%s.rank%d.json" % (parts, r)) as f:
            for run, result in json.load(f).items():
                results.setdefault(run, {})["rank%d" % r] = result
    with open(out_path, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)


def main(argv):
    examples = os.path.abspath(argv[0])
    if "--prepare" in argv:
        prepare(examples)
        return
    out_path = os.path.abspath(argv[1])
    combined = [a.split("=", 1)[1] for a in argv if a.startswith("--combine=")]
    if combined:
        combine(out_path, os.path.abspath(combined[0]), "--update" in argv)
        return
    stadyn = "--stadyn" in argv
    if stadyn:
        sys.meta_path.insert(0, _CntkIsStadyn())
    only = [a.split("=", 1)[1].split(",") for a in argv if a.startswith("--only=")]
    results = {}
    rank = worker_rank()
    for run, program, args, cuts in RUNS:
        if only and run not in only[0]:
            continue
        loaded = load_cut_modules(examples, run)
        error, stdout, _, seconds = run_program(examples, run, program, args, cuts)
        for name in loaded:
            sys.modules.pop(name, None)
        results[run] = {"error": error, "stdout": stdout}
        if stadyn:                              # (the reference file has no timings)
            results[run]["seconds"] = seconds
        sys.stderr.write("rank %d: %s: %s (%.1f s)\n"
                         % (rank, run, "ok" if error is None else error, seconds))
    with open("%s.rank%d.json" % (out_path, rank), "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
