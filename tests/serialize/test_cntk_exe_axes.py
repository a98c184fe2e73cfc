"""Real ``cntk.exe`` (BrainScript) v1 model files load with the dynamic axes CNTK 2.7's Python
gives them: an input whose dynamic-axis name is cntk.exe's default ``""`` is on the batch axis
and an ordered sequence axis named ``""`` (``BackCompat.cpp``:112-115 and ``Utils.cpp``:508-518
of CNTK: ``""`` is neither ``"*"``, the default sequence axis, nor ``"__noSequenceAxis"``), so
it is fed, and what is computed from it given back, as sequences; the criteria are one number
with no dynamic axes (``PrimitiveFunction.cpp``:108-122).

The expectations are CNTK 2.7's (``tests/fixtures/cntk_exe_axes/make_axes.py``: ``axes.json``,
``axes_outputs.npz``); the files are read from a copy of CNTK (``real_v1_file``, conftest.py).
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "fixtures", "cntk_exe_axes")
with open(os.path.join(FIXTURE, "axes.json")) as _f:
    AXES = json.load(_f)
VALUES = np.load(os.path.join(FIXTURE, "axes_outputs.npz"))
FILES = [name for name in AXES if name.endswith(".dnn")]


def axes(var) -> list:
    return [[a.name, bool(a.is_ordered)] for a in var.dynamic_axes]


def loaded(real_v1_file, name):
    import stadyn.compat.cntk as C
    return C.load_model(real_v1_file(name))


def samples(name: str, model) -> dict:
    """The seeded batch CNTK 2.7 was fed: argument name -> ``(2, *shape)``."""
    return {a.name: VALUES[f"{name}/x/{a.name}"] for a in model.arguments}


def feeds(name: str, model) -> dict:
    """``plain`` ``(2, *shape)`` (one sequence of two steps in CNTK 2.7), ``steps`` ``(2, 1,
    *shape)`` (two sequences of one step), ``list`` ``[x[:1], x]`` (of one and two steps)."""
    x = samples(name, model)
    by_name = {a.name: a for a in model.arguments}
    return {"plain": {by_name[n]: d for n, d in x.items()},
            "steps": {by_name[n]: d[:, None] for n, d in x.items()},
            "list": {by_name[n]: [d[:1], d] for n, d in x.items()}}


@pytest.mark.parametrize("name", FILES)
def test_cntk_exe_inputs_and_outputs_have_cntks_dynamic_axes(real_v1_file, name):
    """Before, the inputs had the batch axis alone, and so had every output (the criteria
    too, which CNTK gives none)."""
    ref = AXES[name]
    model = loaded(real_v1_file, name)
    assert [{"name": a.name, "shape": list(a.shape), "dynamic_axes": axes(a),
             "is_sparse": bool(a.is_sparse)} for a in model.arguments] == ref["arguments"]
    assert [{"name": o.name, "shape": list(o.shape), "dynamic_axes": axes(o)}
            for o in model.outputs] == ref["outputs"]


@pytest.mark.parametrize("form", ["plain", "steps", "list"])
@pytest.mark.parametrize("name", FILES)
def test_cntk_exe_eval_gives_cntks_sequences(real_v1_file, name, form):
    """A NumPy batch ``(N, *shape)`` is one sequence of N steps, ``(N, 1, *shape)`` N
    sequences of one step, a list one sequence each; a sequence output is a list of
    per-sequence arrays, a criterion one number.  Before, the plain batch gave an array of N
    samples, the other two the same array, a list of unequal sequences a ValueError."""
    ref = AXES[name]["eval"][form]
    model = loaded(real_v1_file, name)
    result = model.eval(feeds(name, model)[form], outputs=list(model.outputs))
    for out in model.outputs:
        got, want = result[out], ref[out.name]
        key = f"{name}/{form}/{out.name}"
        if want["type"] == "list":
            assert isinstance(got, list), key
            assert [list(np.shape(g)) for g in got] == want["shapes"], key
            for k, g in enumerate(got):
                np.testing.assert_allclose(np.asarray(g, np.float32), VALUES[f"{key}/{k}"],
                                           rtol=1e-4, atol=0, err_msg=key)
        else:
            # (relative only: LR_reg's criteria are ~1e-4, a gap's term ~4e-6)
            assert isinstance(got, np.ndarray) and list(got.shape) == want["shape"], key
            np.testing.assert_allclose(got, VALUES[key], rtol=1e-4, atol=0, err_msg=key)


@pytest.mark.parametrize("name", FILES)
def test_cntk_exe_find_by_name_and_clone_keep_cntks_axes(real_v1_file, name):
    """``find_by_name`` of a root (a function) or an input (a variable), and the arguments
    of a frozen clone, with CNTK 2.7's shapes and dynamic axes."""
    import stadyn.compat.cntk as C
    ref = AXES[name]
    model = loaded(real_v1_file, name)
    for key, want in ref["find_by_name"].items():
        hit = model.find_by_name(key)
        if want["kind"] == "function":
            assert isinstance(hit, C.Function), key
            got = {"kind": "function", "op_name": hit.op_name, "shape": list(hit.output.shape),
                   "dynamic_axes": axes(hit.output)}
        else:
            assert not isinstance(hit, C.Function), key
            got = {"kind": "variable", "shape": list(hit.shape), "dynamic_axes": axes(hit)}
        assert got == want, key
    frozen = model.clone(C.CloneMethod.freeze)
    assert [{"name": a.name, "dynamic_axes": axes(a)} for a in frozen.arguments] == \
        ref["clone_freeze_arguments"]


@pytest.mark.parametrize("name", FILES)
def test_cntk_exe_trainer_over_the_loaded_roots(real_v1_file, name):
    """A Trainer over the loaded model (its first root the loss, its second the metric) takes
    a minibatch of two one-step sequences as CNTK 2.7's does: the same sample count, loss and
    metric averages."""
    import stadyn.compat.cntk as C
    ref = AXES[name]["trainer"]
    model = loaded(real_v1_file, name)
    loss, metric = model.outputs[0], model.outputs[1]
    learner = C.sgd(model.parameters, C.learning_parameter_schedule_per_sample(0.01))
    trainer = C.Trainer(model.outputs[-1], (loss, metric), [learner])
    trainer.train_minibatch({a: d[:, None] for a, d in
                             zip(model.arguments, samples(name, model).values())})
    assert trainer.previous_minibatch_sample_count == ref["sample_count"]
    assert trainer.previous_minibatch_loss_average == pytest.approx(ref["loss"], rel=1e-4,
                                                                    abs=1e-6)
    assert trainer.previous_minibatch_evaluation_average == pytest.approx(ref["metric"],
                                                                          rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("name", FILES)
def test_cntk_exe_clone_keeps_the_criteria_without_a_batch_axis(real_v1_file, name):
    """A ``CloneMethod.clone`` copy of the loaded model: its criteria stay one number with no
    dynamic axes, and a Trainer over the copy, fed sequences of one and two steps, counts and
    averages as CNTK 2.7's (``clone_trainer``).  Before, the copy's criteria had the batch
    axis again (the rebuild lost the loader's mark): MC.dnn counted 2 samples, not 3."""
    import stadyn.compat.cntk as C
    ref = AXES[name]["clone_trainer"]
    model = loaded(real_v1_file, name)
    g = model.clone(C.CloneMethod.clone)
    assert [{"name": o.name, "dynamic_axes": axes(o)} for o in g.outputs] == ref["outputs"]
    learner = C.sgd(g.parameters, C.learning_parameter_schedule_per_sample(0.01))
    trainer = C.Trainer(g.outputs[-1], (g.outputs[0], g.outputs[1]), [learner])
    x = samples(name, model)
    trainer.train_minibatch({a: [x[a.name][:1], x[a.name]] for a in g.arguments})
    assert trainer.previous_minibatch_sample_count == ref["sample_count"]
    assert trainer.previous_minibatch_loss_average == pytest.approx(ref["loss"], rel=1e-4)
    assert trainer.previous_minibatch_evaluation_average == pytest.approx(ref["metric"],
                                                                          rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("lengths", sorted(AXES["logistic_gaps"]))
def test_cntk_exe_logistic_counts_cntks_gaps(real_v1_file, lengths):
    """LR_reg.dnn's v1 ``Logistic`` over sequences counts each gap of CNTK's packed minibatch
    with the label 0 (``LogisticNode::ForwardPropNonLooping`` masks none,
    TrainingNodes.h:2081), its bias set to 2 so that a gap weighs (sigmoid(2) against 0):
    ``2,1`` 5.464072 in CNTK 2.7, where Stadyn left the gaps out (3.337145); ``3,1,1``
    packed in two streams (one gap), not padded to three (four)."""
    model = loaded(real_v1_file, "ComputationNetwork__LR_reg.dnn")
    for p in model.parameters:
        if p.shape == (1, 1):
            p.value = np.full(p.shape, 2.0, np.float32)
    by_arg = {a.name: a for a in model.arguments}
    labels = np.array([[1.], [0.], [1.], [1.], [0.]], np.float32)
    features = np.array([[0.5, 0.1], [0.3, 0.2], [0.8, 0.1], [0.2, 0.2], [0.1, 0.9]],
                        np.float32)
    cuts = np.cumsum([0] + [int(n) for n in lengths.split(",")])
    feed = {by_arg[n]: [d[i:j] for i, j in zip(cuts, cuts[1:])]
            for n, d in (("labels", labels[:cuts[-1]]), ("features", features[:cuts[-1]]))}
    lr = next(o for o in model.outputs if o.name == "lr")
    got = float(np.asarray(model.eval(feed, outputs=[lr])))
    assert got == pytest.approx(AXES["logistic_gaps"][lengths], rel=1e-5)


def test_a_frozen_clone_keeps_an_inputs_named_sequence_axis():
    """``clone`` of a graph over an input on a program's own axis (``C.Axis('words')``) keeps
    it, as CNTK 2.7's does (``axes.json``'s ``clone_named_axis``); before, the cloned input
    and output were on the default sequence axis (``defaultDynamicAxis``)."""
    import stadyn.compat.cntk as C
    x = C.sequence.input_variable(2, sequence_axis=C.Axis("words"), name="x")
    frozen = C.plus(x, C.parameter((2,), init=1.0)).clone(C.CloneMethod.freeze)
    assert {"arguments": [axes(a) for a in frozen.arguments], "output": axes(frozen.output)} \
        == AXES["clone_named_axis"]


@pytest.mark.parametrize("kind", ["v2", "v1"])
def test_cntk_exe_model_saved_and_loaded_back_keeps_its_axes(real_v1_file, tmp_path, kind):
    """``Function.save`` / ``save_as_legacy_model`` of a loaded cntk.exe file, loaded back:
    CNTK 2.7 writes both (its v2 file with the sequence axis '', its v1 file with the name
    '') and gives the inputs back on that axis.  Stadyn's CNTK v2 writer writes this graph as
    CNTK 2.7 does (test_cntk_exe_resave.py: cntk.exe's criteria as CNTK's primitives, no
    function for the v1 reader's reshape to a column), and the v1 writer, built on it, too;
    before, ``save_as_legacy_model`` raised ``CntkWriteUnsupported`` (no sequence form for
    ``reshape_trailing``)."""
    import warnings

    import stadyn.compat.cntk as C
    name = "ComputationNetwork__MC.dnn"
    model = loaded(real_v1_file, name)
    path = str(tmp_path / f"model_{kind}")
    if kind == "v1":
        C.debugging.save_as_legacy_model(model, path)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.save(path)
    assert [axes(a) for a in C.load_model(path).arguments] == AXES[name]["saved"][kind]
