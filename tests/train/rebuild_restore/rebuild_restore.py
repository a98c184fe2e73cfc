"""Build, checkpoint, build again in the same process, restore, train on: the program of
``tests/train/test_checkpoint_rebuild.py``, run by CNTK 2.7 to write ``losses.json`` (from the
repository root: ``LD_LIBRARY_PATH=/work/peers/cntk27/shimlib
/work/peers/cntk27/venv36/bin/python -W ignore tests/train/rebuild_restore/rebuild_restore.py``)
and by Stadyn's tests with ``C = stadyn.compat.cntk``.  The second build has new parameters
(new uids in CNTK, new generated names in Stadyn) with other initial values; CNTK restores
them from the checkpoint by their place in the graph."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "fixtures", "cntk_checkpoints"))
import network as N  # noqa: E402


def run(C, folder, net="deep", kind="adam"):
    """Losses of minibatches 0-1, then of 2-5 after rebuilding and restoring."""
    path = os.path.join(folder, net + ".ckpt")
    x, y, z, trainer = N.build(C, net, kind)
    first = N.train(trainer, x, y, [0, 1])
    trainer.save_checkpoint(path)
    x, y, z, trainer = N.build(C, net, kind)        # the same program run again
    trainer.restore_from_checkpoint(path)
    return first, N.train(trainer, x, y, [2, 3, 4, 5])


if __name__ == "__main__":
    import tempfile
    import cntk as C
    out = {}
    for net, kind in (("deep", "adam"), ("classifier", "momentum_sgd")):
        first, then = run(C, tempfile.mkdtemp(), net, kind)
        x, y, z, trainer = N.build(C, net, kind)
        straight = N.train(trainer, x, y, range(6))
        assert max(abs(a - b) for a, b in zip(straight, first + then)) < 1e-5
        out[net + "_" + kind] = first + then
    with open(os.path.join(HERE, "losses.json"), "w") as fh:
        json.dump(out, fh, indent=1, sort_keys=True)
    print(out)
