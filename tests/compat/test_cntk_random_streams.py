"""CNTK's random functions' streams in model files and clones, against what CNTK 2.7 does
(``tests/fixtures/cntk_random_streams``, written by its ``make_streams.py`` with CNTK 2.7):

* a CNTK model file keeps where each stream stands (``rngSeed``, ``rngOffset``): the function
  loaded from a file saved after ``k`` evaluations first gives the original's evaluation ``k``
  (0-based).  Stadyn reads CNTK's files so and writes CNTK's ``rngOffset`` (the count of
  uniform numbers drawn: CNTK's count for the uniform, bernoulli, gumbel draws and dropout);
* a clone (share, clone or freeze, and a Function called on a new input) draws a stream of its
  own, from where the original's stood at its last save (from its seed if never saved)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

import stadyn.compat.cntk as C
from stadyn.graph import topological_nodes
from stadyn.ops import RandomStream
from stadyn.serialize._cntk_format import read_cntk

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_random_streams")
with open(os.path.join(HERE, "streams.json")) as _fh:
    CNTK = json.load(_fh)
X = np.asarray(CNTK["input"], np.float32)
MAKERS = {
    "uniform_like": lambda x: C.random.uniform_like(x, seed=3),
    "bernoulli_like": lambda x: C.random.bernoulli_like(x, mean=0.5, seed=3),
    "gumbel_like": lambda x: C.random.gumbel_like(x, seed=3),
    "dropout": lambda x: C.dropout(x, 0.5, seed=3),
}


def _run(f) -> np.ndarray:
    """One evaluation: a training forward (dropout draws only while training)."""
    _, out = f.forward({f.arguments[0]: X}, keep_for_backward=set(f.outputs))
    return np.asarray(out[f.output])


def _evaluations(make, n: int = 5) -> list:
    f = make(C.input_variable(5, name="x"))
    return [_run(f) for _ in range(n)]


def _index(evaluations: list, value: np.ndarray):
    found = [k for k, e in enumerate(evaluations) if np.array_equal(e, value)]
    return found[0] if found else None


def _saved_offset(path: str) -> int:
    (f,) = [f for net in read_cntk(path).networks.values() for f in net.functions
            if f.type in ("RandomDistribution", "Dropout")]
    return int(f.attrs["rngOffset"])


@pytest.mark.parametrize("name, k", [("uniform_like", 2), ("dropout", 2), ("bernoulli_like", 1)])
def test_a_function_loaded_from_cntks_file_draws_on_where_cntk_saved_it(name, k):
    assert CNTK["files"][name]["loaded_first_is_evaluation"][k] == k
    loaded = C.load_model(os.path.join(HERE, f"{name}_after{k}.model"))
    assert _index(_evaluations(MAKERS[name]), _run(loaded)) == k


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_a_saved_function_keeps_cntks_offset_and_draws_on_when_loaded(name, tmp_path):
    offsets, firsts = [], []
    evaluations = _evaluations(MAKERS[name])
    for k in range(4):
        f = MAKERS[name](C.input_variable(5, name="x"))
        for _ in range(k):
            _run(f)
        path = os.path.join(tmp_path, f"{k}.model")
        f.save(path)
        offsets.append(_saved_offset(path))
        firsts.append(_index(evaluations, _run(C.load_model(path))))
    assert offsets == CNTK["files"][name]["offsets"]
    assert firsts == CNTK["files"][name]["loaded_first_is_evaluation"]


def test_a_stream_whose_position_is_not_found_is_written_at_0_with_a_warning(tmp_path):
    x = C.input_variable(5, name="x")
    f = C.random.uniform_like(x, seed=3)
    _run(f)
    (stream,) = {a for node in topological_nodes([f.variable]) for a in node.kwargs.values()
                 if isinstance(a, RandomStream)}
    other = torch.Generator().manual_seed(4)        # a state on another seed's sequence
    stream.generator(torch.device("cpu")).set_state(other.get_state())
    path = os.path.join(tmp_path, "lost.model")
    with pytest.warns(RuntimeWarning, match="seed 3 has drawn too many numbers to count: "
                                            "rngOffset 0 written"):
        f.save(path)
    assert _saved_offset(path) == 0


def _made():
    x = C.input_variable(5, name="x")
    return C.random.uniform_like(x, seed=3) + x


@pytest.mark.parametrize("method", ["share", "clone", "freeze"])
def test_a_clone_draws_a_stream_of_its_own_as_cntks_does(method):
    evaluations = _evaluations(lambda x: C.random.uniform_like(x, seed=3) + x)
    f = _made()
    _run(f), _run(f)
    c = f.clone(getattr(C.CloneMethod, method))
    first, original_next, second = _run(c), _run(f), _run(c)
    assert {"clone_first": _index(evaluations, first),
            "clone_second": _index(evaluations, second),
            "original_next": _index(evaluations, original_next)} == CNTK["clone"][method]


def test_a_clone_starts_where_the_stream_stood_at_its_last_save(tmp_path):
    evaluations = _evaluations(lambda x: C.random.uniform_like(x, seed=3) + x)
    f = _made()
    _run(f), _run(f)
    f.save(os.path.join(tmp_path, "f.model"))
    _run(f)
    got = _index(evaluations, _run(f.clone(C.CloneMethod.share)))
    assert got == CNTK["clone"]["after_save_at_2_then_1"]
    f = _made()
    _run(f), _run(f)
    called = f(C.input_variable(5, name="y"))
    assert _index(evaluations, _run(called)) == CNTK["clone"]["called_on_new_input"]
