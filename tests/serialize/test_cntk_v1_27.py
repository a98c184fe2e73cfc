"""CNTK v1 model files read as CNTK 2.7 reads them (the ``cntkv1_27`` items).

``tests/fixtures/cntk_v1_27/`` holds what CNTK 2.7 wrote and did (``make_v1_survey.py``: one
``cntk.debugging.save_as_legacy_model`` file per CNTK 2.7 op, CNTK 2.7's outputs of each file
loaded back, or its refusal in its words).
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections import OrderedDict

import numpy as np
import pytest

import stadyn.compat.cntk as C
from stadyn import ModelFileError
from stadyn.serialize._legacy_import import build_network
from stadyn.serialize._legacy_ir import LegacyFunction, LegacyModel, LegacyNetwork, LegacyVariable

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_v1_27")
with open(os.path.join(FIXTURES, "v1_survey.json")) as _f:
    SURVEY = json.load(_f)
SURVEY_VALUES = dict(np.load(os.path.join(FIXTURES, "v1_survey.npz")))


def _survey_feed(model, case):
    feed = {}
    for arg in model.arguments:
        value = SURVEY_VALUES[f"{case}/{arg.name}"]
        feed[arg] = [value[:3], value[3:]] if arg.name in ("s", "t") else value  # (3, 2 steps)
    return feed


def _flat(out):
    out = list(out.values())[0] if isinstance(out, dict) else out
    return np.concatenate(out) if isinstance(out, list) else np.asarray(out)


@pytest.mark.parametrize("case", [c for c, entry in SURVEY.items() if entry[0] == "written"])
def test_every_v1_file_cntk_27_writes_and_reads_gives_its_outputs(case):
    # CNTK 2.7: save_as_legacy_model, load_model, eval (make_v1_survey.py); 843c47fc refused
    # the v1 nodes Exp, Log, Sqrt, Floor, Negate, Cosine, Sin, Sinh, Cosh, Asin, Acos, LogPlus,
    # StopGradient, CosDistance, TransposeDimensions and could not read Less ... If at all
    model = C.load_model(os.path.join(FIXTURES, f"v1_{case}.dnn"))
    out = _flat(model.eval(_survey_feed(model, case)))
    expected = SURVEY_VALUES[f"{case}/out"]
    assert out.shape == expected.shape
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    # the op, uid and name of each output's function, as CNTK 2.7 shows them
    assert [[o.owner.op_name, o.owner.uid, o.owner.name] for o in model.outputs] == SURVEY[case][2]


@pytest.mark.parametrize("case", [c for c, entry in SURVEY.items()
                                  if entry[0] == "refused_load"])
def test_every_v1_file_cntk_27_cannot_read_is_refused(case):
    # CNTK 2.7 refuses these files when it loads or runs them (Tan, Atan, Pow, ELU ...:
    # "Attempted to instantiate undefined operation"; a TransposeDimensions permutation; a file
    # of no root but its input, C.alias(x)); each is one ModelFileError naming the file
    with pytest.raises(ModelFileError, match="v1_" + case):
        m = C.load_model(os.path.join(FIXTURES, f"v1_{case}.dnn"))
        m.eval(_survey_feed(m, case))


def test_the_gru_of_an_exp_initial_state_is_cntks():
    # the brief's file: Recurrence(GRU(2), initial_state=exp(constant 0.3)) (make_v1_survey.py)
    model = C.load_model(os.path.join(FIXTURES, "v1_gru_exp_state.dnn"))
    out = _flat(model.eval(_survey_feed(model, "gru_exp_state")))
    np.testing.assert_allclose(out, SURVEY_VALUES["gru_exp_state/out"], rtol=1e-5, atol=1e-6)
    assert "Exp" in {f.op_name for f in _all_functions(model)}


def _all_functions(f):
    seen, todo, out = set(), [f.root_function], []
    while todo:
        g = todo.pop()
        if g.uid in seen:
            continue
        seen.add(g.uid)
        out.append(g)
        todo += [i.owner for i in g.inputs if i.is_output]
    return out


def test_a_deferred_combine_keeps_its_inputs_deferred_functions():
    # a function reading a block's argument waits for the block (Builder.functions); a Combine
    # reading it waits too, and its outputs are its inputs' names: on 843c47fc it took their
    # entries, so its input 'r' was never computed ("'r' is used before it is computed").  The
    # Combine is a block's root (the outer block's body is built whole, Combine and all): the
    # inner block binds 'q', which 'r' reads.  No CNTK 2.7 file holds this: CNTK refuses to
    # make such a block ("1 of the arguments 'Placeholder('q')' of the underlying composite
    # Function of Block '' have not been mapped"), so it is built here in the decoded form
    inner = LegacyNetwork("inner", [LegacyFunction("s", "Sigmoid", ("q",), ("s",))],
                          OrderedDict(q=LegacyVariable("q", "placeholder", (3,))))
    body = LegacyNetwork("body", [
        LegacyFunction("r", "Tanh", ("q",), ("r",)),
        LegacyFunction("b", "Inner", ("p",), ("b",), body=inner,
                       meta={"arguments": {"q": "p"}, "root": "s"}),
        LegacyFunction("c", "Combine", ("r", "b"), ("r", "b"))],
        OrderedDict(p=LegacyVariable("p", "placeholder", (3,)),
                    q=LegacyVariable("q", "placeholder", (3,))))
    outer = LegacyFunction("o", "Outer", ("x",), ("o0", "o1"), body=body,
                           meta={"arguments": {"p": "x"}, "root": "c"})
    net = LegacyNetwork("main", [outer], OrderedDict(x=LegacyVariable(
        "x", "input", (3,), "float32", {"dynamic_axes": ["defaultBatchAxis"]})))
    model = LegacyModel("cntk-v2", "crafted.model", OrderedDict(main=net), OrderedDict())
    built = build_network(model, net, {"x": "x"}, {"r": "o0", "b": "o1"}, batch_size=2)
    x = np.array([[0.5, -1.0, 2.0], [0.0, 1.0, -3.0]], np.float32)
    out = built(x=x)
    np.testing.assert_allclose(out["r"], np.tanh(x), rtol=1e-6)
    np.testing.assert_allclose(out["b"], 1 / (1 + np.exp(-x)), rtol=1e-6)


_spec = importlib.util.spec_from_file_location(
    "cntk_v1_27_make_applied_steps", os.path.join(FIXTURES, "make_applied_steps.py"))
APPLIED = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(APPLIED)
with open(os.path.join(FIXTURES, "applied_steps.json")) as _f:
    APPLIED_CNTK = json.load(_f)


def _shown(f):
    return [[p.name, list(p.shape)] for p in f.parameters]


@pytest.mark.parametrize("kind", ["gru", "lstm", "rnn"])
def test_a_saved_step_layer_applied_to_values_loads_with_cntks_parameter_order(kind, tmp_path):
    # CNTK 2.7 (make_applied_steps.py): GRU(3)(h, x) and LSTM(3)(h, c, x) show [b, W, H, ...]
    # built and loaded from its file; on 843c47fc Stadyn's file of them loaded (in CNTK 2.7 as
    # in Stadyn) as [W, b, H, ...]: its writer added the bias after the product.  RNNStep(3)(h,
    # x): CNTK 2.7 writes (times(x, W) + times(h, H)) + b, [W, H, b]; on c1e89f0e Stadyn wrote
    # (x W + b) + h H, loaded [W, b, H]
    z = APPLIED.build(C, kind)
    assert _shown(z) == APPLIED_CNTK[kind]["built"]
    path = str(tmp_path / f"{kind}.model")
    z.save(path)
    assert _shown(C.load_model(path)) == APPLIED_CNTK[kind]["loaded"]
    cntks = C.load_model(os.path.join(FIXTURES, f"cntk_{kind}_applied.model"))
    assert _shown(cntks) == APPLIED_CNTK[kind]["loaded"]


def _mixed_logistic_file(tmp_path, labels_on: str) -> str:
    # a cntk.exe network: Logistic(labels, Sigmoid(s)), one of the two a sequence (an input on
    # cntk.exe's default axis '') and the other a value per sequence (an input on
    # '__noSequenceAxis': frame mode).  CNTK 2.7 builds no such graph ("Operand ... has dynamic
    # axes, that do not match"), so the file is written node by node; the C++ is the spec
    from stadyn.serialize._cntk_v1_write import V1Node, cntk_v1_file_bytes
    axis = {"s": "", "y": "__noSequenceAxis"} if labels_on == "batch" else \
        {"s": "__noSequenceAxis", "y": ""}
    nodes = [V1Node(n, "InputValue", attrs={"shape": (1,), "dynamic_axis": axis[n],
                                            "learning_rate_multiplier": 0.0}) for n in "sy"]
    nodes += [V1Node("p", "Sigmoid", inputs=("s",)), V1Node("lr", "Logistic", inputs=("y", "p"))]
    path = str(tmp_path / f"mixed_{labels_on}.dnn")
    with open(path, "wb") as f:
        f.write(cntk_v1_file_bytes(nodes, {"feature": ["s"], "label": ["y"],
                                           "criterion": ["lr"]}))
    return path


@pytest.mark.parametrize("labels_on", ["batch", "sequence"])
def test_a_v1_logistic_of_one_step_sequences_and_values_per_sequence_runs_as_cntk_exe(
        tmp_path, labels_on):
    # cntk.exe reads the prediction at the labels' MBLayout (TrainingNodes.h:2083-2086), which
    # ColumnRangeWithMBLayoutFor accepts where the layouts are equal in content
    # (Sequences.h:1030-1042, 317-326): N sequences of one step each are packed as N rows of
    # one step, ids 0..N-1 (SequencePacker.cpp:19-39), as N values per sequence are
    # (InitAsFrameMode, Sequences.h:419-434).  On 843c47fc every run was refused.
    m = C.load_model(_mixed_logistic_file(tmp_path, labels_on))
    s, y = sorted(m.arguments, key=lambda a: a.name)
    x = np.array([[0.5], [-1.0], [2.0]], np.float32)
    t = np.array([[1.0], [0.0], [1.0]], np.float32)
    as_seqs = [v[None] for v in (x if labels_on == "batch" else t)]      # (one step each)
    feed = {s: as_seqs, y: t} if labels_on == "batch" else {s: x, y: as_seqs}
    p = 1 / (1 + np.exp(-x.astype(np.float64)))
    want = -np.sum(t * np.log(p) + (1 - t) * np.log(1 - p))      # (CNTK's Logistic, summed)
    np.testing.assert_allclose(m.eval(feed), want, rtol=1e-6)
    # a sequence of two steps: the layouts differ, refused in cntk.exe's words
    longer = [np.concatenate([as_seqs[0], as_seqs[0]])] + as_seqs[1:]
    feed = {s: longer, y: t} if labels_on == "batch" else {s: x, y: longer}
    with pytest.raises(RuntimeError, match="FrameRange's dynamic axis is inconsistent"):
        m.eval(feed)
    # one-step sequences and values of another count (3 vs 1, 1 vs 3): the layouts' parallel
    # sequences differ (MBLayout::operator==, Sequences.h:317-326), refused as well (on
    # a21eddab the frame-mode operand was broadcast and a number came back)
    frame_mode = t if labels_on == "batch" else x
    for n_seqs, n_values in ((3, 1), (1, 3)):
        feed = {s: as_seqs[:n_seqs], y: frame_mode[:n_values]} if labels_on == "batch" else \
            {s: frame_mode[:n_values], y: as_seqs[:n_seqs]}
        with pytest.raises(RuntimeError, match="FrameRange's dynamic axis is inconsistent"):
            m.eval(feed)
    np.testing.assert_allclose(m.eval({s: as_seqs, y: t} if labels_on == "batch" else
                                      {s: x, y: as_seqs}), want, rtol=1e-6)    # (still runs)


def test_a_v1_file_computing_nothing_loads_and_is_refused_when_run():
    # C.alias(x) saved as a v1 file: its output group holds the input alone.  CNTK 2.7 loads
    # it (CompositeFunctionOpName, no arguments: /tmp/revA_w/alias.py) and refuses each run,
    # a ValueError "At least one output has to be specified when calling Forward method"
    # (make_v1_survey.py records it); a21eddab refused it at load
    path = os.path.join(FIXTURES, "v1_alias.dnn")
    m = C.load_model(path)
    assert m.op_name == "CompositeFunctionOpName"
    assert m.arguments == ()
    for run in (lambda: m.eval({}), lambda: m.eval(), lambda: m.forward({})):
        with pytest.raises(ValueError, match="At least one output has to be specified") as e:
            run()
        assert "v1_alias.dnn" in str(e.value)
