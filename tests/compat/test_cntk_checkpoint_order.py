"""A CNTK 2.7 checkpoint restored by the parameters' place in the graph, as CNTK's
``RestoreFromCheckpoint`` matches them (``Function.cpp``:1040-1051: the loaded graph's
``Inputs()`` order), not by the order its model file lists them in
(``tests/fixtures/cntk_checkpoint_order/make_order.py``; rmF36)."""

from __future__ import annotations

import importlib.util
import json
import os

import numpy as np

import stadyn.compat.cntk as C

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cntk_checkpoint_order")


def _make():
    spec = importlib.util.spec_from_file_location(
        "cntk_checkpoint_order_make_order", os.path.join(FIXTURES, "make_order.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_checkpoint_listing_b_before_w_restores_each_into_its_own_parameter():
    # z = x * W + b: CNTK 2.7's file lists [b, x, W], its graph's parameters [W, b].  On
    # 4f7de761 the file's order was taken for the graph's: W got b's values and b
    # W's (both (2,): restored with no error), W [-0.0032, 1.5888], b [0.2334, -0.8129]
    make = _make()
    _, _, trainer = make.build(C)
    trainer.restore_from_checkpoint(os.path.join(FIXTURES, "order.model"))
    with open(os.path.join(FIXTURES, "values.json")) as f:
        want = json.load(f)
    got = {p.name: np.asarray(p.value) for p in trainer.model.parameters}
    assert sorted(got) == ["W", "b"]
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], np.asarray(value, np.float32))


def test_a_self_stabilized_gru_trainer_restores_its_own_checkpoint(tmp_path):
    # (rmD37) RestoreFromCheckpoint's Inputs() keeps each function's operands as stored
    # (pythonOperandOrder false: Function.cpp:1040-1041, CNTKLibrary.h), times(s, H) meeting
    # H before the stabilized state's alpha: the graph's parameters [b, W, H, alpha, H1].
    # CNTK 2.7 restores this trainer's own checkpoint, every value back (run with the same
    # program: ['b', 'W', 'H', 'alpha', 'H1'] True).  On cdddde34 the file was walked in
    # Python's operand order, [b, W, alpha, H, H1]: ModelFileError "parameter 'alpha' has
    # shape (), the trainer's 'H' (4, 8) (another network); nothing was restored"
    x = C.sequence.input_variable(3, name="x")
    y = C.input_variable(4, name="y")
    z = C.sequence.last(C.layers.Recurrence(C.layers.GRU(4, enable_self_stabilization=True))(x))
    rng = np.random.RandomState(1)
    for p in sorted(z.parameters, key=lambda p: (p.name, p.shape)):
        p.value = np.asarray(0.5 * rng.randn(*p.shape), np.float32)
    trainer = C.Trainer(z, (C.squared_error(z, y), None),
                        [C.sgd(z.parameters, C.learning_parameter_schedule(0.1))])
    trainer.train_minibatch({x: [rng.randn(3, 3).astype(np.float32),
                                 rng.randn(2, 3).astype(np.float32)],
                             y: rng.randn(2, 4).astype(np.float32)})
    path = str(tmp_path / "gru")
    trainer.save_checkpoint(path)
    saved = [np.array(p.value) for p in z.parameters]
    for p in z.parameters:
        p.value = np.zeros(p.shape, np.float32)
    trainer.restore_from_checkpoint(path)
    assert [p.name for p in z.parameters] == ["b", "W", "H", "alpha", "H1"]
    for value, p in zip(saved, z.parameters):
        np.testing.assert_array_equal(np.asarray(p.value), value)
