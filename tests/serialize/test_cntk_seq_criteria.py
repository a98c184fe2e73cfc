"""A Trainer's checkpoint of a sequence model -- its loss and metric,
``cross_entropy_with_softmax`` and ``classification_error``, computed per step of sequences --
is CNTK 2.7's model and ``.ckp`` pair: the CNTK v2 writer writes both criteria over sequences
(the ``CrossEntropyWithSoftmax`` and ``ClassificationError`` blocks, step by step), where it
refused them before ("no CNTK v2 form for cntk:CrossEntropyWithSoftmax: an op on a sequence
the writer has no sequence form for") and every LSTM checkpoint was Stadyn's own file.

``tests/fixtures/cntk_seq_criteria/``: CNTK 2.7's checkpoint of ``network.py``'s LSTM tagger and
the losses and metrics CNTK 2.7 goes on with (``refs.json``, ``make_refs.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import warnings

import numpy as np
import pytest
import peers

import stadyn.compat.cntk as C
from stadyn.serialize._cntk_format import _decode_file
from fixture_network import fixture_network

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_seq_criteria")


network = fixture_network("cntk_seq_criteria")

with open(os.path.join(FIXTURES, "refs.json")) as _f:
    AFTER = json.load(_f)["after"]
CNTK_PYTHON = peers.CNTK_PYTHON


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("cntk_seq_criteria") / "tagger.model")
    x, y, trainer = network.build(C)
    network.train(trainer, x, y, [0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)       # CNTK's pair, not Stadyn's file
        trainer.save_checkpoint(path, {"epoch": 1})
    return path


def _functions(path: str) -> list:
    """The file's functions (blocks' insides included: CNTK lists them all at the top), as a
    sorted list of op, block op name, name, input count and attributes (``Times``'
    ``inferInputRankToMap`` too: CNTK's Dense writes 0, infer the weight from every input
    axis, and so does the writer)."""
    with open(path, "rb") as f:
        top = _decode_file(path, f.read())
    listed = []
    for f in top["primitive_functions"]:
        attributes = {k: repr(v) for k, v in f["attributes"].items()}
        listed.append((f["op"], f.get("block_function_op_name", ""), f.get("name", ""),
                       len(f["inputs"]), sorted(attributes.items())))
    return sorted(listed)


def test_the_checkpoint_is_cntks_pair_with_cntks_functions(checkpoint):
    assert os.path.exists(checkpoint + ".ckp")
    ours, cntks = _functions(checkpoint), _functions(os.path.join(FIXTURES, "tagger.model"))
    assert ours == cntks
    blocks = [f[1] for f in ours if f[1]]
    assert sorted(blocks) == ["ClassificationError", "CrossEntropyWithSoftmax", "Dense", "LSTM"]


def _go_on(path: str) -> list:
    x, y, trainer = network.build(C)
    trainer.restore_from_checkpoint(path)
    return network.train(trainer, x, y, [1, 2])


def test_stadyn_goes_on_from_its_checkpoint_as_cntk_does(checkpoint):
    np.testing.assert_allclose(_go_on(checkpoint), AFTER, rtol=1e-5)


def test_stadyn_goes_on_from_cntks_checkpoint_as_cntk_does():
    np.testing.assert_allclose(_go_on(os.path.join(FIXTURES, "tagger.model")), AFTER, rtol=1e-5)


@pytest.mark.skipif(not os.path.exists(CNTK_PYTHON), reason="CNTK 2.7's Python is not installed")
def test_cntk_goes_on_from_stadyns_checkpoint_as_from_its_own(checkpoint):
    env = dict(os.environ, LD_LIBRARY_PATH=peers.CNTK_LIBS)
    run = subprocess.run([CNTK_PYTHON, "-W", "ignore", os.path.join(FIXTURES, "make_refs.py"),
                          checkpoint], check=True, env=env, cwd=FIXTURES, capture_output=True,
                         text=True)
    np.testing.assert_allclose(json.loads(run.stdout.strip().splitlines()[-1]), AFTER,
                               rtol=1e-6)
