"""CNTK 2.7's files of a Gather over a sequence reference, or of sequence indices (the reference
reconciled to their axes), load as CNTK 2.7 loads them -- arguments, output shape -- and every
run raises CNTK 2.7's RuntimeError, as ``tests/serialize/test_cntk_files_17.py``'s batched
table; ``load_cntk`` refuses them in CNTK's words.  CNTK 2.7's files and outcomes are in
``tests/fixtures/cntk_gather_sequences`` (written by its ``make_models.py``).  Before, these
files were rejected at load as unsupported ("a table without dynamic axes is read")."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import stadyn.compat.cntk as C
from stadyn.serialize import load_cntk
from stadyn.serialize._legacy_import import ModelRefusedAtRunError

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_gather_sequences")
with open(os.path.join(FIXTURES, "gather_sequences.json")) as _f:
    CNTK = json.load(_f)
R = np.arange(30, dtype=np.float32).reshape(2, 5, 3)
I = np.array([[0, 4], [1, 2]], np.float32)
SEQUENCES = {"seq_table": (True, False), "seq_indices": (False, True), "seq_both": (True, True)}


def _feed(arguments, name):
    seq_r, seq_i = SEQUENCES[name]
    feed = {}
    for a in arguments:
        if a.name == "r":
            feed[a] = [R[:, None][k] for k in range(2)] if seq_r else R
        else:
            feed[a] = [I[k][None] for k in range(2)] if seq_i else I
    return feed


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_a_gather_file_of_sequences_loads_and_is_refused_at_every_run(name):
    want = CNTK[name]
    m = C.load_model(os.path.join(FIXTURES, name + ".model"))
    assert [a.name for a in m.arguments] == want["arguments"]
    assert list(m.outputs[0].shape) == want["output_shape"]
    feed = _feed(m.arguments, name)
    for run in want["runs"]:
        kind, words = run.split(": ", 1)
        with pytest.raises({"RuntimeError": RuntimeError, "ValueError": ValueError}[kind],
                           match="^" + re.escape(words)):
            m.eval(feed)


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_load_cntk_refuses_a_gather_file_of_sequences_in_cntks_words(name):
    with pytest.raises(ModelRefusedAtRunError, match=re.escape(
            "Gather operation's right operand doesn't expect to have dynamic axis")):
        load_cntk(os.path.join(FIXTURES, name + ".model"))
