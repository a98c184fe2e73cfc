"""Recurrences written as CNTK 2.7 writes them beyond one state with a scalar initial value
(cntkrecw): ``Recurrence(LSTM(4), return_full_state=True)`` (CNTK 2.7's LSTM block of two
outputs), a step function of two states, ``RNNStep`` from a vector initial state and from one
a Function computes, a step reading two input sequences; and a step that reads no input
sequence, which CNTK 2.7's ``Recurrence`` refuses to build, refused by the writer.

``tests/fixtures/cntk_recurrence_write/`` holds the files CNTK 2.7 and Stadyn write of each
network and in ``outputs.npz`` what CNTK 2.7 computes from both, written by the real CNTK 2.7
with ``make_models.py`` there (its docstring gives the commands).
"""

from __future__ import annotations

import importlib.util
import json
import os
import warnings

import numpy as np
import pytest

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_recurrence_write")
KINDS = ["lstm_full", "user2", "rnn_vec", "rnn_fn", "two_seq", "gru_vec", "fold_full",
         "back_full", "user2_full", "rnn_back_vec", "lstm_fn", "gru_fn", "rnn_from",
         "lstm_from", "gru_from"]


def _make():
    spec = importlib.util.spec_from_file_location(
        "cntk_recurrence_write_make_models", os.path.join(FIXTURES, "make_models.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


APPLIED = ["lstm_apply"]          # (v2 only, as pv_default: CNTK 2.7 wrote no .dnn of them)
#: v2 only (make_models.V2_KINDS), written by mendB34: recurrences over a named sequence axis
#: (enc_*), per-sequence initial states computed in the graph, self-stabilized RNNStep, a
#: user step applying an RNNStep cell; cntkfiles36: user steps applying self-stabilized cells;
#: rmF36: one applying two, the second to the first's output; cntkfiles37: user steps applying
#: a self-stabilized LSTM cell (two outputs), a Dense after a (self-stabilized) GRU cell
MORE = ["enc_rnn", "enc_gru", "enc_lstm", "enc_seq2seq", "from_first_x", "rnnfrom_dense",
        "rnn_stab", "rnnfrom_stab", "user_rnn", "lstm_peep_stab", "gru_stab", "user_gru",
        "user_rnn_stab", "user_gru_stab", "user_two_stab", "user2_stab", "user2_full_stab",
        "user_gru_dense", "user_gru_stab_dense"]


def _close(got: dict, want, key: str) -> None:
    assert sorted(got) == sorted({int(k.split("/")[-2]) for k in want.files
                                  if k.startswith(key + "/") and k.count("/") == 2})
    for k, seqs in got.items():
        assert len(seqs) == 2
        for s, v in enumerate(seqs):
            np.testing.assert_allclose(v, want[f"{key}/{k}/{s}"], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fmt", ["model", "dnn"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_recurrence_is_written_as_cntk_writes_it(kind, fmt, tmp_path):
    # CNTK 2.7 saves each (v2 and v1); Stadyn's files are the committed stadyn_<kind>.<fmt>,
    # which CNTK 2.7 loads and evaluates to its own model's numbers (outputs.npz), and Stadyn
    # loads back to them. Before, Stadyn wrote none of them for CNTK: the full state and the
    # two-state step fell back to Stadyn's format ("an op of several outputs", "a step of
    # other than one input sequence and one state"), the vector initial state too ("an
    # initial state other than a constant or parameter of one value"), and the compat took
    # the computed initial state for a callable (TypeError building the recurrence); the
    # writer refused a step of two input sequences ("a step of other than one input
    # sequence and one state": two_seq, written by stadyn.serialize's writers), GRU's vector
    # initial state ("an activation, initial state or input the writer cannot write"), Fold
    # and a backward Recurrence of LSTM with return_full_state ("an op of several outputs");
    # on c1e89f0e RecurrenceFrom of RNNStep, GRU and LSTM from inputs of one state per
    # sequence (rnn_from, gru_from, lstm_from: CNTK 2.7's PastValue reads that input itself)
    # fell back to Stadyn's format ("a sequence and a value without its sequence axis")
    _written_as_cntk(kind, fmt, tmp_path)


@pytest.mark.parametrize("kind", MORE)
def test_more_recurrences_are_written_as_cntk_writes_them(kind, tmp_path):
    # CNTK 2.7 evaluates Stadyn's committed stadyn_<kind>.model to its own model's numbers
    # (outputs.npz), and the writer writes it byte for byte.  On 19f0fea7 the recurrences
    # over a named sequence axis (enc_rnn, enc_gru, enc_lstm, and the encoder of
    # enc_seq2seq feeding RecurrenceFrom) had their state placeholders on
    # defaultDynamicAxis: CNTK 2.7 refused the file ("Operation 'Plus': Operand
    # 'Output('Times11_Output_0', [#, *], [4])' has dynamic axes, that do not match the
    # dynamic axes '[#, enc]'"), the bytes differ.  from_first_x, rnnfrom_dense: initial
    # states per sequence computed in the graph (sequence.first(x), Dense(4)(s0)).
    # rnn_stab, rnnfrom_stab, lstm_peep_stab: the Stabilizer's softplus of alpha was read
    # through a placeholder of the step block, written inside its composite now, as CNTK
    # 2.7 writes its Stabilizer block (the listing: test_a_stabilized_steps_parameters_...).
    # user_rnn_stab, user_gru_stab: on 2d7f4600 the self-stabilized cell a step function
    # applies was written op by op (no cell block), its softplus of alpha outside the loop;
    # now the cell's block inside the loop reading that softplus inside its composite.
    # user_two_stab (gru(rnn(h, x), x) - h): on 4f7de761 the GRU's block, found through
    # graph.replayed_from, read the recorded step's rnn(h, x), not the replayed one: "no CNTK
    # v2 form for mul2: a value read across a layer's boundary", Stadyn's format with a warning
    # user2_stab, user2_full_stab: on 1154ef55 the self-stabilized LSTM cell (two outputs) a
    # step function applies was written op by op, no LSTM block (its replayed outputs were not
    # found as one cell's): the bytes differ, CNTK 2.7 listed [W, b, H, alpha] (its own file
    # [b, W, H, alpha]: test_a_self_stabilized_lstm_a_step_applies_is_its_block_in_the_loop)
    # user_gru_dense, user_gru_stab_dense: on 1154ef55 the Dense a step applies to a GRU
    # cell's output was written op by op, no Dense block (test_a_dense_a_step_applies_...)
    _written_as_cntk(kind, "model", tmp_path)
    want = np.load(os.path.join(FIXTURES, "outputs.npz"))
    _close(_make().run(C.load_model(os.path.join(FIXTURES, f"cntk_{kind}.model"))), want,
           kind)


def _written_as_cntk(kind, fmt, tmp_path):
    make = _make()
    want = np.load(os.path.join(FIXTURES, "outputs.npz"))
    z = make.build(C, kind)
    make.set_parameters(z)
    _close(make.run(z), want, kind)
    path = str(tmp_path / f"{kind}.{fmt}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (no fall back to Stadyn's format)
        if kind == "two_seq":
            make.save_two_seq(path)
        else:
            make.save(C, z, path)
    with open(path, "rb") as f, open(os.path.join(FIXTURES, f"stadyn_{kind}.{fmt}"),
                                     "rb") as g:
        assert f.read() == g.read()
    for k in (key for key in want.files if key.startswith(f"{kind}/{fmt}/")):
        # (CNTK 2.7's numbers from Stadyn's file: its own model's)
        np.testing.assert_allclose(want[k], want[kind + "/" + k.split("/", 2)[2]],
                                   rtol=1e-6, atol=1e-7)
    _close(make.run(C.load_model(path)), want, kind)


@pytest.mark.parametrize("fmt", ["model", "dnn"])
@pytest.mark.parametrize("kind", KINDS)
def test_cntks_file_of_a_recurrence_loads(kind, fmt):
    make = _make()
    want = np.load(os.path.join(FIXTURES, "outputs.npz"))
    _close(make.run(C.load_model(os.path.join(FIXTURES, f"cntk_{kind}.{fmt}"))), want, kind)


def test_a_full_state_lstm_is_one_lstm_block_of_two_outputs(tmp_path):
    # CNTK 2.7's file (cntk_lstm_full.model): one LSTM block, its composite's root a Combine
    # of h and c, each output read back by a PastValue of the block's output k
    from stadyn.serialize._cntk_format import OP_NAMES, _decode_file
    for file in (os.path.join(FIXTURES, "cntk_lstm_full.model"),
                 os.path.join(FIXTURES, "stadyn_lstm_full.model")):
        with open(file, "rb") as f:
            top = _decode_file(file, f.read())
        functions = top["primitive_functions"]
        blocks = [f for f in functions if f.get("block_function_op_name") == "LSTM"]
        assert len(blocks) == 1
        uid = blocks[0]["uid"]
        inner = blocks[0]["block_function_composite"]["root"]
        assert OP_NAMES[next(f["op"] for f in functions if f["uid"] == inner)] == "Combine"
        delays = [f for f in functions if OP_NAMES[f["op"]] == "PastValue"]
        assert sorted(d["inputs"][0] for d in delays) == [f"{uid}_Output_0", f"{uid}_Output_1"]


def test_a_step_that_reads_no_sequence_is_refused_and_saved_in_stadyns_format(tmp_path):
    # CNTK 2.7's Recurrence refuses a step that never reads its input ("CNTK Function 'step'
    # has 1 unused arguments (x), which is currently not supported"). Stadyn wrote it as a
    # PastValue loop along no sequence: CNTK 2.7's load_model failed on the file ("tuple
    # index out of range") and Stadyn's refused it ("it reads no sequence to run along").
    # Since cntkrec36 compat.cntk's Recurrence refuses such a step as CNTK 2.7's does; the
    # loop is still made by Stadyn's own layers, which the writer meets
    import stadyn as sd
    from stadyn.compat.cntk._adapt import unwrap, wrap
    from stadyn.serialize._cntk_write_graph import CntkWriteUnsupported
    with pytest.raises(TypeError, match=r"CNTK Function '<lambda>' has 1 unused arguments "
                                        r"\(x\), which is currently not supported"):
        C.layers.Recurrence(lambda h, x: h * 0.5 + 1)
    x = C.sequence.input_variable(3, name="x")
    z = wrap(sd.layers.Recurrence(lambda h, v: h * 0.5 + 1)(unwrap(x)))
    path = str(tmp_path / "noseq.model")
    with pytest.warns(UserWarning, match="reads no input sequence"):
        z.save(path)
    feed = [np.ones((4, 3), np.float32), np.ones((2, 3), np.float32)]
    want = [np.array([[1.0] * 3, [1.5] * 3, [1.75] * 3, [1.875] * 3], np.float32),
            np.array([[1.0] * 3, [1.5] * 3], np.float32)]
    for f in (z, C.load_model(path)):
        for got, w in zip(f.eval({f.arguments[0]: feed}), want):
            np.testing.assert_allclose(got, w)
    from stadyn.serialize._cntk_write import cntk_v2_bytes
    with pytest.raises(CntkWriteUnsupported, match="reads no input sequence"):
        cntk_v2_bytes([unwrap(z.output)], {"x": unwrap(x)})


@pytest.mark.parametrize("file", ["cntk_lstm_fn.model", None])
def test_a_recurrence_of_an_lstm_has_one_output_as_cntks_file(file, tmp_path):
    # CNTK 2.7's file of Recurrence(LSTM(4)) (cntk_lstm_fn.model) has one output, h: its root a
    # Combine of the LSTM block's output 0. Stadyn's file had the block itself as its root, so
    # CNTK 2.7 and Stadyn loaded it with two outputs (h and the cell c)
    if file is None:
        x = C.sequence.input_variable(3, name="x")
        file = str(tmp_path / "lstm.model")
        C.layers.Recurrence(C.layers.LSTM(4))(x).save(file)
    z = C.load_model(os.path.join(FIXTURES, file))
    assert z.root_function.op_name == "Combine"
    assert [o.shape for o in z.outputs] == [(4,)]


@pytest.mark.parametrize("kind", APPLIED)
def test_cntks_v2_file_of_an_lstm_applied_to_values_loads(kind):
    # CNTK 2.7's file of LSTM(3)(h, c, x) (cntk_lstm_apply.model) reads the gates' product
    # through a placeholder named by its output's uid (Plus111_Output_0), which the reader did
    # not follow into the block: the product was computed outside it, and the block's root
    # Combine refused ("'ElementTimes138_Output_0' is used before it is computed"). Once
    # loaded, the block's walk read its other output (c) inside it as the block again and
    # recursed for ever (RecursionError between block_inner_leaves and stored_inputs)
    make = _make()
    want = np.load(os.path.join(FIXTURES, "outputs.npz"))
    z = C.load_model(os.path.join(FIXTURES, f"cntk_{kind}.model"))
    assert [a.name for a in z.arguments] == ["h", "c", "x"]
    assert sorted(p.name for p in z.parameters) == ["H", "W", "b"]
    _close(make.run(z), want, kind)


@pytest.mark.parametrize("kind", APPLIED)
def test_an_lstm_applied_to_values_is_written_as_cntk_writes_it(kind, tmp_path):
    # Stadyn's file of LSTM(3)(h, c, x) (stadyn_lstm_apply.model): CNTK's LSTM block, its root a
    # Combine of h and c, the gates CNTK's Slice ops; CNTK 2.7 loads it and computes its own
    # model's numbers (outputs.npz), Stadyn loads it back. Before: Stadyn's format ("no CNTK
    # v2 form for slice")
    from stadyn.serialize._cntk_format import OP_NAMES, _decode_file
    make = _make()
    want = np.load(os.path.join(FIXTURES, "outputs.npz"))
    z = make.build(C, kind)
    make.set_parameters(z)
    _close(make.run(z), want, kind)
    path = str(tmp_path / f"{kind}.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (no fall back to Stadyn's format)
        make.save(C, z, path)
    with open(path, "rb") as f, open(os.path.join(FIXTURES, f"stadyn_{kind}.model"), "rb") as g:
        assert f.read() == g.read()
    for k in (key for key in want.files if key.startswith(f"{kind}/model/")):
        np.testing.assert_allclose(want[k], want[kind + "/" + k.split("/", 2)[2]],
                                   rtol=1e-6, atol=1e-7)
    _close(make.run(C.load_model(path)), want, kind)
    for file in (path, os.path.join(FIXTURES, f"cntk_{kind}.model")):
        with open(file, "rb") as f:
            functions = _decode_file(file, f.read())["primitive_functions"]
        blocks = [f for f in functions if f.get("block_function_op_name") == "LSTM"]
        assert len(blocks) == 1
        root = blocks[0]["block_function_composite"]["root"]
        assert OP_NAMES[next(f["op"] for f in functions if f["uid"] == root)] == "Combine"
        assert sum(OP_NAMES[f["op"]] == "Slice" for f in functions) == 4


def test_a_past_value_loop_from_the_default_initial_state_is_written_for_cntk(tmp_path):
    # h = tanh(past_value(h) + x) closed with replace_placeholders: the compat's default
    # initial state is a constant op, which the writer had no rule for (Stadyn's format, "no
    # CNTK v2 form for constant"); now the delay reads a Constant 0 of () as in CNTK 2.7's file
    # (PastValue6 reads Constant5), and CNTK 2.7 computes its own model's numbers from
    # Stadyn's file (outputs.npz: pv_default/model/...)
    from stadyn.serialize._cntk_format import OP_NAMES, _decode_file
    make = _make()
    want = np.load(os.path.join(FIXTURES, "outputs.npz"))
    z = make.build(C, "pv_default")
    path = str(tmp_path / "pv_default.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (no fall back to Stadyn's format)
        make.save(C, z, path)
    with open(path, "rb") as f, open(os.path.join(FIXTURES, "stadyn_pv_default.model"),
                                     "rb") as g:
        assert f.read() == g.read()
    for k in (key for key in want.files if key.startswith("pv_default/model/")):
        np.testing.assert_allclose(want[k], want["pv_default/" + k.split("/", 2)[2]],
                                   rtol=1e-6, atol=1e-7)
    _close(make.run(C.load_model(path)), want, "pv_default")
    for file in (path, os.path.join(FIXTURES, "cntk_pv_default.model")):
        with open(file, "rb") as f:
            top = _decode_file(file, f.read())
        leaves = {v["uid"]: v for v in top["inputs"]}
        for d in (f for f in top["primitive_functions"] if OP_NAMES[f["op"]] == "PastValue"):
            init = leaves[d["inputs"][1]]
            assert init["kind"] == 3 and tuple(init["shape"]) == ()
            assert float(np.asarray(init["value"])) == 0.0


def test_a_past_value_loop_is_written_with_cntks_ops(tmp_path):
    # CNTK 2.7's cntk_pv_default.model holds Tanh(Plus(PastValue(Tanh, Constant), x)): one
    # PastValue, no Reshape.  Stadyn's file (made by make_models.py --stadyn) held, before
    # cntkload39, a second PastValue of the Plus no op read (close_loops carries each op's
    # output) and three Reshapes between a step's values and its sequence of one step, the
    # root a Reshape (CNTK 2.7 loads it so: block_inputs.json)
    from stadyn.serialize._cntk_format import OP_NAMES, _decode_file

    def ops(file):
        with open(file, "rb") as f:
            functions = _decode_file(file, f.read())["primitive_functions"]
        return sorted(OP_NAMES[f["op"]] for f in functions)
    make = _make()
    path = str(tmp_path / "pv_default.model")
    make.save(C, make.build(C, "pv_default"), path)
    theirs = ops(os.path.join(FIXTURES, "cntk_pv_default.model"))
    assert theirs == ["PastValue", "Plus", "Tanh"]
    assert ops(path) == theirs


with open(os.path.join(FIXTURES, "parameters.json")) as _f:
    LISTED = json.load(_f)
@pytest.mark.parametrize("fmt", ["model", "dnn"])
@pytest.mark.parametrize("kind", KINDS + APPLIED + MORE)
def test_cntk_lists_the_parameters_of_stadyns_file_as_of_its_own(kind, fmt):
    # parameters.json: what CNTK 2.7 lists of each committed file (make_models.py), which
    # test_a_recurrence_is_written_as_cntk_writes_it holds the writer to byte for byte.  On
    # a21eddab the full-state LSTMs (lstm_full, back_full, fold_full) were written W first:
    # CNTK 2.7 listed [W, b, H] of Stadyn's file, [b, W, H] of its own.  On c4441c04 (strict
    # xfails then): a step function applying an LSTM cell (user2, user2_full) was written op
    # by op, x W + b, listed [W, b, H] (CNTK 2.7's own: [b, W, H]); one applying an RNNStep
    # cell (user_rnn) x W + b then h H, listed [W, b, H] (CNTK's [W, H, b]); a
    # self-stabilized GRU's step (gru_stab) [W, b, H, alpha, H1] (CNTK's [b, W, H, alpha, H1]).
    # On 2d7f4600 a step function applying a self-stabilized cell (user_rnn_stab,
    # user_gru_stab) was written op by op, its softplus of alpha outside the loop, listed
    # [W, b, H, alpha] and [W, b, H, alpha, H1] (CNTK's own: [W, H, alpha, b] and
    # [b, W, H, alpha, H1], the cell's block inside the loop holding its Stabilizer block)
    if fmt == "dnn" and kind in APPLIED + MORE:
        pytest.skip("CNTK 2.7 wrote no v1 file of an LSTM applied to values")
    assert LISTED[f"stadyn_{kind}.{fmt}"] == LISTED[f"cntk_{kind}.{fmt}"]


def _listed(f) -> list:
    return [[p.name, list(p.shape)] for p in f.parameters]


def test_an_rnnstep_applied_to_values_is_written_as_cntk_writes_it(tmp_path):
    # RNNStep(3)(h, x) (rnn_apply): CNTK 2.7's RNNStep block computes (times(x, W) +
    # times(h, H)) + b (cntk_rnn_apply.model), listed [W, H, b]; c1e89f0e wrote (x W + b) +
    # h H, listed [W, b, H] by CNTK 2.7 and Stadyn.  CNTK 2.7 computes from Stadyn's file
    # (stadyn_rnn_apply.model) what its own model does (outputs.npz: rnn_apply/model/...)
    from stadyn.serialize._cntk_format import OP_NAMES, _decode_file
    make = _make()
    want = np.load(os.path.join(FIXTURES, "outputs.npz"))
    z = make.build(C, "rnn_apply")
    make.set_parameters(z)
    _close(make.run(z), want, "rnn_apply")
    path = str(tmp_path / "rnn_apply.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (no fall back to Stadyn's format)
        make.save(C, z, path)
    with open(path, "rb") as f, open(os.path.join(FIXTURES, "stadyn_rnn_apply.model"),
                                     "rb") as g:
        assert f.read() == g.read()
    for k in (key for key in want.files if key.startswith("rnn_apply/model/")):
        np.testing.assert_allclose(want[k], want["rnn_apply/" + k.split("/", 2)[2]],
                                   rtol=1e-6, atol=1e-7)
    for file in (path, os.path.join(FIXTURES, "cntk_rnn_apply.model")):
        loaded = C.load_model(file)
        _close(make.run(loaded), want, "rnn_apply")
        assert _listed(loaded) == LISTED["cntk_rnn_apply.model"] == \
            LISTED["stadyn_rnn_apply.model"]
        with open(file, "rb") as f:
            functions = _decode_file(file, f.read())["primitive_functions"]
        ops = {f["uid"]: f for f in functions}
        root = next(f for f in functions if f.get("block_function_op_name") == "RNNStep")
        top = ops[ops[root["block_function_composite"]["root"]]["inputs"][0].rpartition(
            "_Output_")[0]]
        assert OP_NAMES[top["op"]] == "Plus"        # (Plus(Plus(Times, Times), b))
        inner = ops[top["inputs"][0].rpartition("_Output_")[0]]
        assert [OP_NAMES[ops[i.rpartition("_Output_")[0]]["op"]] for i in inner["inputs"]] == \
            ["Times", "Times"]


@pytest.mark.parametrize("fmt", ["model", "dnn"])
@pytest.mark.parametrize("kind", ["rnn_vec", "rnn_fn", "rnn_back_vec", "lstm_full", "fold_full",
                                  "user2", "user2_full", "back_full", "rnn_from", "lstm_from",
                                  "gru_from"])
def test_stadyn_loads_its_file_of_a_recurrence_with_cntks_parameter_order(kind, fmt, tmp_path,
                                                                         request):
    # CNTK 2.7 lists RNNStep's parameters [W, H, b] (its body (times(x, W) + times(h, H)) +
    # b) and the full-state LSTM's [b, W, H], of its own file (parameters.json).  On c1e89f0e
    # Stadyn wrote RNNStep's sum (x W + b) + h H, loaded [W, b, H] by CNTK 2.7 and by Stadyn,
    # and the LSTM block's inputs [W, b, H] while its composite reads b first: CNTK 2.7 listed
    # [b, W, H] (it rebuilds a block's inputs from its composite), Stadyn's reader [W, b, H]
    make = _make()
    z = make.build(C, kind)
    make.set_parameters(z)
    path = str(tmp_path / f"{kind}.{fmt}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (no fall back to Stadyn's format)
        make.save(C, z, path)
    assert _listed(C.load_model(path)) == LISTED[f"cntk_{kind}.{fmt}"]


def test_a_blocks_inputs_are_read_in_cntks_order_whatever_its_file_lists():
    # stadyn_c1e89f0e_lstm_full.model: the LSTM block's inputs listed [W, b, H], its composite
    # reading b first (Plus(b, Times(W, x))).  CNTK 2.7 lists [b, W, H] (parameters.json:
    # PrimitiveFunction.cpp:1255-1277 makes the block from its composite, DetermineInputs in
    # BlockFunction.h:98-146 over composite->Inputs()); Stadyn's reader kept the file's order
    name = "stadyn_c1e89f0e_lstm_full.model"
    z = C.load_model(os.path.join(FIXTURES, name))
    assert _listed(z) == LISTED[name] == LISTED["cntk_lstm_full.model"]
    _close(_make().run(z), np.load(os.path.join(FIXTURES, "outputs.npz")), "lstm_full")


@pytest.mark.parametrize("name", ["reversed_lstm_peep_stab.model",
                                  "reversed_Recurrence_LSTM_options.model"])
def test_a_nested_blocks_inputs_are_read_as_cntk_rebuilds_them(name):
    # CNTK 2.7's own files of a peephole, self-stabilized LSTM (the LSTM block holding
    # Stabilizer blocks) with every block's inputs listed backwards (make_models.py
    # reverse_block_inputs).  CNTK 2.7 lists both as the files they were made from
    # (parameters.json: ... H alpha Co alpha Cf alpha Ci): it rebuilds each block's inputs
    # from its composite, walking a nested block through that block's own rebuilt inputs
    # (BlockFunction.h:98-146).  On 19f0fea7 Stadyn's walk read a nested block's inputs as
    # the file lists them: ... H alpha Co Cf alpha Ci alpha
    source = os.path.join(FIXTURES, _make().REVERSED[name])
    with open(source, "rb") as f, open(os.path.join(FIXTURES, name), "rb") as g:
        assert f.read() != g.read()
    z = C.load_model(os.path.join(FIXTURES, name))
    assert [p.name for p in z.parameters][-6:] == ["alpha", "Co", "alpha", "Cf", "alpha", "Ci"]
    assert _listed(z) == LISTED[name] == _listed(C.load_model(source))


@pytest.mark.parametrize("kind", ["rnn_stab", "rnnfrom_stab", "lstm_peep_stab", "gru_stab"])
def test_a_stabilized_steps_parameters_are_listed_as_cntk_lists_its_own(kind, tmp_path):
    # CNTK 2.7 lists its own files of these [W, H, alpha, b] (RNNStep) and [b, W, H, alpha,
    # Co, alpha, Cf, alpha, Ci] (peephole LSTM): its Stabilizer blocks inside the step's
    # composite (parameters.json).  On 19f0fea7 Stadyn wrote each softplus of alpha outside
    # the loop, read through a placeholder of the step block: CNTK 2.7 and Stadyn listed
    # [W, H, b, alpha] and [b, W, H, Co, Cf, Ci, alpha, alpha, alpha].  gru_stab: CNTK 2.7's
    # [b, W, H, alpha, H1]; c4441c04 wrote the GRU step's x W + b, listed [W, b, H, alpha, H1]
    make = _make()
    z = make.build(C, kind)
    make.set_parameters(z)
    path = str(tmp_path / f"{kind}.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (no fall back to Stadyn's format)
        make.save(C, z, path)
    assert _listed(C.load_model(path)) == LISTED[f"cntk_{kind}.model"] == \
        LISTED[f"stadyn_{kind}.model"]


@pytest.mark.parametrize("kind", ["user2", "user_rnn", "user_gru"])
def test_a_cell_a_step_function_applies_is_its_block_inside_the_loop(kind, tmp_path):
    # CNTK 2.7's files (cntk_user2.model, cntk_user_rnn.model): the LSTM / RNNStep cell the
    # step function applies is the cell's block inside the loop, over the delayed states and
    # x (the LSTM's of two outputs, a Combine of h and c its root), its inputs [b, W, H] /
    # [W, H, b] then the delays and x.  On c4441c04 Stadyn wrote the cell's ops as they are,
    # no block
    from stadyn.serialize._cntk_format import OP_NAMES, _decode_file
    make = _make()
    z = make.build(C, kind)
    make.set_parameters(z)
    path = str(tmp_path / f"{kind}.model")
    make.save(C, z, path)

    def shown(file):
        with open(file, "rb") as f:
            top = _decode_file(file, f.read())
        names = {v["uid"]: v.get("name") or f"kind {v['kind']}" for v in top["inputs"]}
        ops = {f["uid"]: f for f in top["primitive_functions"]}
        (block,) = [f for f in ops.values() if f.get("block_function_op_name")]
        root = ops[block["block_function_composite"]["root"]]

        def kind_of(uid):
            made = ops.get(uid.rpartition("_Output_")[0])
            return OP_NAMES[made["op"]] if made else names[uid]
        return (block["block_function_op_name"], OP_NAMES[root["op"]],
                [kind_of(i) for i in block["inputs"]])
    assert shown(path) == shown(os.path.join(FIXTURES, f"cntk_{kind}.model"))


@pytest.mark.parametrize("kind", ["user2_stab", "user2_full_stab"])
def test_a_self_stabilized_lstm_a_step_applies_is_its_block_in_the_loop(kind, tmp_path):
    # CNTK 2.7's files (cntk_user2_stab.model, cntk_user2_full_stab.model): the step's
    # self-stabilized LSTM cell is one LSTM block inside the loop, its composite's root a
    # Combine of h and c, reading the delayed h and c and x, its parameters listed [b, W, H,
    # alpha] (parameters.json), the Stabilizer's softplus of alpha inside the block.  On
    # 1154ef55 Stadyn wrote the cell's ops as they are (no LSTM block), listed [W, b, H, alpha]
    # by CNTK 2.7 and by Stadyn
    from stadyn.serialize._cntk_format import OP_NAMES, _decode_file
    make = _make()
    z = make.build(C, kind)
    make.set_parameters(z)
    path = str(tmp_path / f"{kind}.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (no fall back to Stadyn's format)
        make.save(C, z, path)

    def shown(file):
        with open(file, "rb") as f:
            top = _decode_file(file, f.read())
        names = {v["uid"]: v.get("name") or "" for v in top["inputs"]}
        ops = {f["uid"]: f for f in top["primitive_functions"]}
        (lstm,) = [f for f in ops.values() if f.get("block_function_op_name") == "LSTM"]
        root = OP_NAMES[ops[lstm["block_function_composite"]["root"]]["op"]]
        made = [OP_NAMES[ops[i.rpartition("_Output_")[0]]["op"]] for i in lstm["inputs"]
                if "_Output_" in i]
        parameters = [names[i] for i in lstm["inputs"] if i in names and names[i] and
                      not i.startswith("Input")]
        return root, made, parameters
    assert shown(path) == shown(os.path.join(FIXTURES, f"cntk_{kind}.model")) == \
        ("Combine", ["PastValue", "PastValue"], ["b", "W", "H", "alpha"])
    assert _listed(C.load_model(path)) == LISTED[f"cntk_{kind}.model"] == \
        [["b", [16]], ["W", [3, 16]], ["H", [4, 16]], ["alpha", []]]


@pytest.mark.parametrize("kind", ["user_gru_dense", "user_gru_stab_dense"])
def test_a_dense_a_step_applies_is_its_block_in_the_loop(kind, tmp_path):
    # CNTK 2.7's files (cntk_user_gru_dense.model, cntk_user_gru_stab_dense.model): the Dense a
    # step function applies to its GRU cell's output is a Dense block inside the loop over the
    # GRU block, listed [W, b, b, W, H, H1] / [W, b, b, W, H, alpha, H1] (parameters.json: the
    # Dense block's W and b met first).  On 1154ef55 Stadyn wrote the Dense's ops as they are,
    # the output x W + b: CNTK 2.7 and Stadyn listed the Dense's b last (the same numbers)
    from stadyn.serialize._cntk_format import OP_NAMES, _decode_file
    make = _make()
    z = make.build(C, kind)
    make.set_parameters(z)
    path = str(tmp_path / f"{kind}.model")
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (no fall back to Stadyn's format)
        make.save(C, z, path)

    def shown(file):
        with open(file, "rb") as f:
            top = _decode_file(file, f.read())
        names = {v["uid"]: v.get("name") or "" for v in top["inputs"]}
        ops = {f["uid"]: f for f in top["primitive_functions"]}
        (dense,) = [f for f in ops.values() if f.get("block_function_op_name") == "Dense"]
        read = [names.get(i) or ops[i.rpartition("_Output_")[0]].get("block_function_op_name")
                for i in dense["inputs"]]
        delays = [f for f in ops.values() if OP_NAMES[f["op"]] == "PastValue"]
        return read, [d["inputs"][0] == dense["uid"] + "_Output_0" for d in delays]
    assert shown(path) == shown(os.path.join(FIXTURES, f"cntk_{kind}.model")) == \
        (["W", "b", "GRU"], [True])
    assert _listed(C.load_model(path)) == LISTED[f"cntk_{kind}.model"]
    assert [n for n, _ in LISTED[f"cntk_{kind}.model"]][:3] == ["W", "b", "b"]
