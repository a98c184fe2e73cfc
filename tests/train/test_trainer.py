"""The CNTK-style Trainer: summed-loss steps, evaluation phase, checkpoints."""

import re

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
import stadyn.layers as L
import stadyn.solvers as S
from stadyn.train import Trainer


pytestmark = pytest.mark.usefixtures("fresh_parameters")


def _one_hot(labels, n=3):
    return np.eye(n, dtype=np.float32)[labels]


def _dense_trainer():
    """A Dense(3) classifier of 4 features under SGD: inputs x, y and its Trainer."""
    x, y = sd.Variable((1, 4)), sd.Variable((1, 3))
    z = L.Dense(3)(x)
    solver = S.Sgd(lr=0.1)
    solver.set_parameters(sd.get_parameters())
    return x, y, Trainer(z, (F.cross_entropy_with_softmax(z, y), F.classification_error(z, y)),
                         [solver])


def test_learners_receive_the_summed_gradient_of_the_minibatch():
    x, y = sd.Variable((1, 2)), sd.Variable((1, 3))
    dense = L.Dense(3, init=0.0)
    z = dense(x)
    loss = F.cross_entropy_with_softmax(z, y)
    solver = S.Sgd(lr=0.5)
    solver.set_parameters(sd.get_parameters())
    trainer = Trainer(z, (loss, F.classification_error(z, y)), [solver])
    xb = np.array([[1.0, 2.0], [3.0, -1.0]], dtype=np.float32)
    labels = np.array([0, 2])
    trainer.train_minibatch({x: xb, y: _one_hot(labels)})
    # Hand-computed: z = 0, softmax = 1/3 each; dL/dz_i = p - t summed over the 2 samples.
    dz = np.full((2, 3), 1 / 3) - _one_hot(labels)
    w, b = dense.parameters
    np.testing.assert_allclose(w.d, -0.5 * xb.T @ dz, rtol=1e-6)
    np.testing.assert_allclose(b.d, -0.5 * dz.sum(0), rtol=1e-6)
    assert trainer.previous_minibatch_sample_count == 2
    assert trainer.previous_minibatch_loss_average == pytest.approx(np.log(3), rel=1e-6)
    assert trainer.total_number_of_samples_seen == 2


def test_batch_size_may_change_between_minibatches():
    x, y, trainer = _dense_trainer()
    rng = np.random.RandomState(0)
    for n in (8, 3, 8):
        trainer.train_minibatch({x: rng.rand(n, 4), y: _one_hot(rng.randint(0, 3, n))})
        assert trainer.previous_minibatch_sample_count == n
    assert trainer.total_number_of_samples_seen == 19


def test_test_minibatch_runs_in_the_inference_phase():
    x, y = sd.Variable((1, 6)), sd.Variable((1, 3))
    z = L.Sequential([L.Dense(16), L.Dropout(0.5), L.Dense(3)])(x)
    solver = S.Sgd(lr=0.1)
    solver.set_parameters(sd.get_parameters())
    trainer = Trainer(z, (F.cross_entropy_with_softmax(z, y), F.classification_error(z, y)),
                      [solver])
    rng = np.random.RandomState(0)
    data = {x: rng.rand(32, 6), y: _one_hot(rng.randint(0, 3, 32))}
    errors = {trainer.test_minibatch(data) for _ in range(5)}
    assert len(errors) == 1                     # no dropout: deterministic
    value = errors.pop()
    assert 0.0 <= value <= 1.0 and value * 32 == round(value * 32)


def test_the_2017_beta_signature_is_accepted():
    x, y = sd.Variable((2, 2)), sd.Variable((2, 3))
    z = L.Dense(3)(x)
    ce, pe = F.cross_entropy_with_softmax(z, y), F.classification_error(z, y)
    solver = S.Sgd()
    solver.set_parameters(sd.get_parameters())
    trainer = Trainer(z, ce, pe, solver)
    assert trainer.loss_function is ce and trainer.evaluation_function is pe
    assert trainer.parameter_learners == [solver]


def test_cntk_2x_reading_wins_when_learners_come_third():
    """CNTK 2.x's ``Trainer(model, loss, [learner])``: a single loss Function as the criterion
    (the 2017 beta's ``(model, loss, metric, learner)`` needs a metric there, not learners)."""
    x, y = sd.Variable((2, 2)), sd.Variable((2, 3))
    z = L.Dense(3)(x)
    ce = F.cross_entropy_with_softmax(z, y)
    solver = S.Sgd(lr=0.1)
    solver.set_parameters(sd.get_parameters())
    for learners in ([solver], solver):
        trainer = Trainer(z, ce, learners)
        assert trainer.loss_function is ce and trainer.evaluation_function is None
        assert trainer.parameter_learners == [solver]
    assert trainer.train_minibatch({x: np.ones((2, 2)), y: _one_hot([0, 2])})


def test_testing_a_trainer_without_a_metric_is_a_value_error_and_a_stadyn_error():
    """CNTK 2.7's ``test_minibatch`` of a Trainer made without a metric raises ValueError
    (reference ``misuse_gives_the_error_types``); the native Trainer's error is a
    StadynError too, for ``test_minibatch`` and ``evaluate`` alike."""
    x, y = sd.Variable((2, 2)), sd.Variable((2, 3))
    z = L.Dense(3)(x)
    solver = S.Sgd(lr=0.1)
    solver.set_parameters(sd.get_parameters())
    trainer = Trainer(z, (F.cross_entropy_with_softmax(z, y),), [solver])
    data = {x: np.ones((2, 2)), y: _one_hot([0, 2])}
    for call in (lambda: trainer.test_minibatch(data),
                 lambda: trainer.evaluate([data], {x: x, y: y})):
        with pytest.raises(ValueError, match="without an evaluation function") as caught:
            call()
        assert isinstance(caught.value, sd.StadynError)


def test_a_learner_that_is_not_an_optimizer_is_refused():
    x, y = sd.Variable((2, 2)), sd.Variable((2, 3))
    z = L.Dense(3)(x)
    with pytest.raises(sd.StadynError, match="learner 1 is a str, not an optimizer"):
        Trainer(z, (F.cross_entropy_with_softmax(z, y),), ["sgd"])


@pytest.mark.parametrize("compile_mode", [False, "program", True],
                         ids=["eager", "program", "compiled"])
def test_a_scheduled_solver_follows_its_schedule_in_every_mode(compile_mode):
    """``ScheduledSolver(S.Sgd(), lr=piecewise([8], [0.5, 0.0]))`` on a 3->2 affine with
    4-sample minibatches: two updates at 0.5, then the weights stop, and 16 samples are seen
    after 4 minibatches — with a compiled step too (whose schedule used to stay at 0 samples)."""
    from stadyn.schedules import ScheduledSolver, piecewise
    rng = np.random.RandomState(3)
    batches = [(rng.randn(4, 3).astype(np.float32), rng.randn(4, 2).astype(np.float32))
               for _ in range(4)]
    x, t = sd.Variable((4, 3)), sd.Variable((4, 2))
    import stadyn.parametric_functions as PF
    y = PF.affine(x, 2, name="fc")
    loss = F.squared_error(y, t)
    params = sd.get_parameters()
    w0 = {k: v.d.copy() for k, v in params.items()}
    solver = ScheduledSolver(S.Sgd(), lr=piecewise([8], [0.5, 0.0]))
    solver.set_parameters(params)
    trainer = Trainer(y, (loss,), [solver], compile=compile_mode)
    history = []
    for xb, tb in batches:
        trainer.train_minibatch({x: xb, t: tb})
        history.append({k: v.d.copy() for k, v in params.items()})
    # NumPy: the loss is summed over samples and outputs, so dL/dy = 2 (y - t)
    W, b = w0["fc/affine/W"].astype(np.float64), w0["fc/affine/b"].astype(np.float64)
    for xb, tb in batches[:2]:
        dy = 2 * (xb @ W + b - tb)
        W, b = W - 0.5 * xb.T @ dy, b - 0.5 * dy.sum(0)
    np.testing.assert_allclose(history[1]["fc/affine/W"], W, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(history[1]["fc/affine/b"], b, rtol=1e-5, atol=1e-6)
    for k in params:
        assert not np.array_equal(history[0][k], w0[k])
        np.testing.assert_array_equal(history[3][k], history[1][k])   # lr 0 after 8 samples
    assert solver.samples_seen == 16
    assert trainer.total_number_of_samples_seen == 16
    assert solver.learning_rate() == 0.0


def test_a_compiled_step_refuses_a_schedule_it_would_freeze():
    """A compiled program holds Momentum's ``momentum`` as a constant: scheduling it there is
    an error naming the hyperparameter, not a schedule silently ignored."""
    from stadyn.schedules import ScheduledSolver, piecewise
    x, t = sd.Variable((4, 3)), sd.Variable((4, 2))
    import stadyn.parametric_functions as PF
    y = PF.affine(x, 2, name="fc")
    solver = ScheduledSolver(S.Momentum(lr=0.1), momentum=piecewise([8], [0.9, 0.5]))
    solver.set_parameters(sd.get_parameters())
    trainer = Trainer(y, (F.squared_error(y, t),), [solver], compile="program")
    with pytest.raises(sd.StadynError, match="'momentum' as a constant"):
        trainer.train_minibatch({x: np.ones((4, 3)), t: np.zeros((4, 2))})


def _make(seed=0):
    sd.seed(seed)
    x, y = sd.Variable((1, 5)), sd.Variable((1, 3))
    z = L.Sequential([L.Dense(8, activation=L.relu), L.BatchNormalization(), L.Dense(3)])(x)
    solver = S.Adam(alpha=0.01)
    solver.set_parameters(sd.get_parameters())
    trainer = Trainer(z, (F.cross_entropy_with_softmax(z, y), F.classification_error(z, y)),
                      [solver])
    return x, y, trainer


def test_checkpoint_resume_continues_the_same_loss_curve(tmp_path):
    rng = np.random.RandomState(3)
    batches = [(rng.rand(16, 5), _one_hot(rng.randint(0, 3, 16))) for _ in range(6)]
    x, y, trainer = _make()
    uninterrupted = []
    for k, (xb, yb) in enumerate(batches):
        trainer.train_minibatch({x: xb, y: yb})
        uninterrupted.append(trainer.previous_minibatch_loss_average)
        if k == 2:
            trainer.save_checkpoint(tmp_path / "ckpt", external_state={"epoch": 1, "next": 3})
    with sd.parameter_registry(sd.ParameterRegistry()):
        x2, y2, resumed = _make(seed=99)           # other initial weights: restore must win
        state = resumed.restore_from_checkpoint(tmp_path / "ckpt")
        assert state == {"epoch": 1, "next": 3}
        assert resumed.total_number_of_samples_seen == 48
        losses = []
        for xb, yb in batches[state["next"]:]:
            resumed.train_minibatch({x2: xb, y2: yb})
            losses.append(resumed.previous_minibatch_loss_average)
    np.testing.assert_allclose(losses, uninterrupted[3:], rtol=1e-6)


def test_a_damaged_checkpoint_is_refused(tmp_path):
    x, y, trainer = _make()
    path = tmp_path / "ckpt"
    trainer.save_checkpoint(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(sd.ModelFileError, match="ckpt"):
        trainer.restore_from_checkpoint(path)


def test_a_checkpoint_whose_block_does_not_fit_the_model_is_refused(tmp_path):
    """A block momentum checkpoint (BrainScript's .ckp) whose block (the model at the block's
    start) is of another shape than its parameter: refused naming the file, the parameter and
    the shape it should have, and nothing restored."""
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file
    import stadyn.distributed as dist

    x, y = sd.Variable((2, 4)), sd.Variable((2, 3))
    z = L.Dense(3)(x)
    solver = S.Sgd(lr=0.1)
    solver.set_parameters(sd.get_parameters())
    params = list(sd.get_parameters().values())
    hook = dist.BlockMomentumParallel(params, dist.BlockMomentum(4, 1, None),
                                      reset_after_block=False)
    trainer = Trainer(z, (F.cross_entropy_with_softmax(z, y), F.classification_error(z, y)),
                      [solver], data_parallel=hook)
    trainer.train_minibatch({x: np.ones((2, 4), np.float32), y: _one_hot([0, 1])})
    path = tmp_path / "model.ckp"
    trainer.save_checkpoint(path)
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata()
    tensors = load_file(str(path))
    assert tuple(tensors["block_momentum/begin/0"].shape) == tuple(params[0].shape)
    tensors["block_momentum/begin/0"] = tensors["block_momentum/begin/0"].reshape(-1)
    save_file(tensors, str(path), metadata=meta)
    before = [p.d.copy() for p in params]
    trainer.train_minibatch({x: np.ones((2, 4), np.float32), y: _one_hot([2, 1])})
    after = [p.d.copy() for p in params]
    shape = tuple(params[0].shape)
    with pytest.raises(sd.ModelFileError, match=r"model\.ckp: .*the block momentum state kept "
                       rf"has no block of the shape {re.escape(str(shape))} of parameter 0"):
        trainer.restore_from_checkpoint(path)
    assert all(np.array_equal(p.d, a) for p, a in zip(params, after))
    assert not all(np.array_equal(b, a) for b, a in zip(before, after))


def test_a_block_momentum_checkpoint_keeps_cntk_exes_options_over_the_config(tmp_path):
    """As cntk.exe's BMACKP section (BlockMomentumSGD::SaveToCheckPoint/LoadFromCheckPoint),
    the checkpoint keeps the momentum reset, the block momentum time constant per worker and
    the samples per block per worker, and a run restored from it takes them over its own
    configuration."""
    import stadyn.distributed as dist

    def trainer(block, reset):
        with sd.parameter_registry(sd.ParameterRegistry()):
            x, y = sd.Variable((2, 4)), sd.Variable((2, 3))
            z = L.Dense(3)(x)
            solver = S.Sgd(lr=0.1)
            solver.set_parameters(sd.get_parameters())
            params = list(sd.get_parameters().values())
        hook = dist.BlockMomentumParallel(params, block, reset_after_block=reset)
        return x, y, hook, Trainer(z, (F.cross_entropy_with_softmax(z, y),
                                       F.classification_error(z, y)), [solver],
                                   data_parallel=hook)

    x, y, hook, first = trainer(dist.BlockMomentum(6, 1, 40.0), False)
    first.train_minibatch({x: np.ones((2, 4), np.float32), y: _one_hot([0, 1])})
    path = tmp_path / "model.ckp"
    first.save_checkpoint(path)
    _, _, other, second = trainer(dist.BlockMomentum(20, 1, 90.0), True)
    second.restore_from_checkpoint(path)
    assert (other.block.period, other.block.time_constant, other.reset_after_block) == \
        (6, 40.0, False)


def test_trainer_static_and_layers_driven_dynamically_give_equal_losses():
    rng = np.random.RandomState(0)
    batches = [(rng.rand(8, 1, 8, 8) * 16, _one_hot(rng.randint(0, 3, 8))) for _ in range(4)]

    def model():
        with L.default_options(activation=L.relu, pad=True):
            return L.Sequential([L.Convolution((3, 3), 8), L.MaxPooling((3, 3), (2, 2)),
                                 L.Dense(16), L.Dense(3, activation=None)])

    with sd.parameter_registry(sd.ParameterRegistry()):
        sd.seed(0)
        net = model()
        x, y = sd.Variable((8, 1, 8, 8)), sd.Variable((8, 3))
        z = net(x)
        solver = S.Momentum(lr=0.01)
        solver.set_parameters(sd.get_parameters())
        trainer = Trainer(z, (F.cross_entropy_with_softmax(z, y),
                              F.classification_error(z, y)), [solver])
        static = []
        for xb, yb in batches:
            trainer.train_minibatch({x: xb, y: yb})
            static.append(trainer.previous_minibatch_loss_average)
    with sd.parameter_registry(sd.ParameterRegistry()):
        sd.seed(0)
        net = model()
        solver = S.Momentum(lr=0.01)
        dynamic = []
        for xb, yb in batches:
            with sd.auto_forward():
                xv = sd.Variable.from_numpy_array(xb)
                yv = sd.Variable.from_numpy_array(yb)
                loss = F.sum(F.cross_entropy_with_softmax(net(xv), yv))
            solver.set_parameters(sd.get_parameters(), reset=False, retain_state=True)
            solver.zero_grad()
            loss.backward()
            solver.update()
            dynamic.append(float(loss.d) / 8)
    np.testing.assert_allclose(dynamic, static, rtol=1e-6)


@pytest.mark.parametrize("learner_kind", ["cntk", "nnabla"])
def test_trainer_step_program_matches_the_static_path(learner_kind):
    import stadyn.learners as CL
    rng = np.random.RandomState(5)
    batches = [(rng.rand(16, 1, 8, 8) * 16, _one_hot(rng.randint(0, 3, 16))) for _ in range(4)]
    batches.append((rng.rand(8, 1, 8, 8) * 16, _one_hot(rng.randint(0, 3, 8))))  # a short one

    def run(compile_mode):
        with sd.parameter_registry(sd.ParameterRegistry()):
            sd.seed(0)
            x, y = sd.Variable((16, 1, 8, 8)), sd.Variable((16, 3))
            with L.default_options(activation=L.relu, pad=True):
                z = L.Sequential([L.Convolution((3, 3), 8), L.BatchNormalization(map_rank=1),
                                  L.MaxPooling((3, 3), (2, 2)), L.Dense(3, activation=None)])(x)
            params = list(sd.get_parameters().values())
            if learner_kind == "cntk":
                learner = CL.momentum_sgd(params, CL.learning_rate_schedule(0.01, CL.UnitType.sample),
                                          CL.momentum_as_time_constant_schedule(100),
                                          l2_regularization_weight=0.001)
            else:
                learner = S.Adam(alpha=0.01)
                learner.set_parameters(sd.get_parameters())
            trainer = Trainer(z, (F.cross_entropy_with_softmax(z, y),
                                  F.classification_error(z, y)), [learner],
                              compile=compile_mode)
            losses = []
            for xb, yb in batches:
                trainer.train_minibatch({x: xb, y: yb})
                losses.append((trainer.previous_minibatch_loss_average,
                               trainer.previous_minibatch_evaluation_average))
            return losses

    static, program = run(False), run("program")
    np.testing.assert_allclose(program, static, rtol=2e-5, atol=1e-6)


def test_fit_trains_epochs_checkpoints_and_resumes_the_same_curve(tmp_path):
    from stadyn.io import MinibatchSourceFromData
    rng = np.random.RandomState(0)
    labels = rng.randint(0, 3, 96)
    features = (np.eye(3)[labels] + 0.3 * rng.randn(96, 3)).astype(np.float32)
    data = {"features": features, "labels": np.eye(3, dtype=np.float32)[labels]}

    def run(epochs, checkpoint, interrupt_after=None):
        with sd.parameter_registry(sd.ParameterRegistry()):
            sd.seed(0)
            x, y = sd.Variable((1, 3)), sd.Variable((1, 3))
            z = L.Dense(3)(x)
            solver = S.Momentum(lr=0.01)
            solver.set_parameters(sd.get_parameters())
            trainer = Trainer(z, (F.cross_entropy_with_softmax(z, y),
                                  F.classification_error(z, y)), [solver])
            source = MinibatchSourceFromData(data, randomize=True)
            stop = [] if interrupt_after is None else [interrupt_after]

            def interrupt(record):
                if stop and record["epoch"] == stop[0]:
                    raise KeyboardInterrupt
            try:
                return trainer.fit(source, {x: source.streams.features,
                                            y: source.streams.labels},
                                   epochs=epochs, minibatch_size=20, checkpoint=checkpoint,
                                   callbacks=[interrupt])
            except KeyboardInterrupt:
                return None

    full = run(4, tmp_path / "a.ckpt")
    assert [r["epoch"] for r in full] == [0, 1, 2, 3] and all(r["samples"] == 96 for r in full)
    assert full[-1]["loss"] < full[0]["loss"]
    assert run(4, tmp_path / "b.ckpt", interrupt_after=1) is None     # killed after epoch 1
    resumed = run(4, tmp_path / "b.ckpt")
    assert [r["epoch"] for r in resumed] == [2, 3]
    np.testing.assert_allclose([r["loss"] for r in resumed], [r["loss"] for r in full[2:]],
                               rtol=1e-6)


def test_fit_calls_its_hooks_at_every_point_of_the_loop(tmp_path):
    """A TrainingCallback sees each epoch begin, each minibatch (its sums), the checkpoint
    written and each epoch end, in that order; a plain function still gets the epoch record."""
    import os
    from stadyn.io import MinibatchSourceFromData
    from stadyn.train import TrainingCallback
    rng = np.random.RandomState(0)
    data = {"features": rng.rand(50, 3).astype(np.float32),
            "labels": _one_hot(rng.randint(0, 3, 50))}
    x, y = sd.Variable((1, 3)), sd.Variable((1, 3))
    z = L.Dense(3)(x)
    solver = S.Sgd(lr=0.1)
    solver.set_parameters(sd.get_parameters())
    trainer = Trainer(z, (F.cross_entropy_with_softmax(z, y), F.classification_error(z, y)),
                      [solver])
    events = []

    class Recorder(TrainingCallback):
        def on_epoch_begin(self, trainer, epoch):
            events.append(("begin", epoch))

        def on_minibatch_end(self, trainer, record):
            events.append(("minibatch", record["epoch"], record["minibatch"], record["samples"],
                           record["loss_sum"], record["metric_sum"]))

        def on_checkpoint(self, trainer, path, record):
            events.append(("checkpoint", record["epoch"], os.path.exists(path)))

        def on_epoch_end(self, trainer, record):
            events.append(("end", record["epoch"]))

    def function(record):
        events.append(("fn", record["epoch"]))

    source = MinibatchSourceFromData(data, randomize=False)
    history = trainer.fit(source, {x: source.streams.features, y: source.streams.labels},
                          epochs=2, minibatch_size=20, checkpoint=tmp_path / "run.ckpt",
                          callbacks=[Recorder(), function], progress_bar=False)
    kinds = [(e[0],) + e[1:3] if e[0] == "minibatch" else e[:2] for e in events]
    assert kinds == [("begin", 0), ("minibatch", 0, 1), ("minibatch", 0, 2), ("minibatch", 0, 3),
                     ("checkpoint", 0), ("end", 0), ("fn", 0),
                     ("begin", 1), ("minibatch", 1, 1), ("minibatch", 1, 2), ("minibatch", 1, 3),
                     ("checkpoint", 1), ("end", 1), ("fn", 1)]
    assert all(e[2] for e in events if e[0] == "checkpoint")       # written before the hook
    for epoch, record in enumerate(history):
        steps = [e for e in events if e[0] == "minibatch" and e[1] == epoch]
        assert [e[3] for e in steps] == [20, 20, 10]
        assert sum(e[4] for e in steps) / 50 == pytest.approx(record["loss"], rel=1e-6)
        assert sum(e[5] for e in steps) / 50 == pytest.approx(record["metric"], rel=1e-6)


def test_a_minibatch_that_leaves_out_an_input_is_refused():
    x, y, trainer = _dense_trainer()
    rng = np.random.RandomState(0)
    trainer.train_minibatch({x: rng.rand(8, 4), y: _one_hot(rng.randint(0, 3, 8))})
    before = {k: v.d.copy() for k, v in sd.get_parameters().items()}
    # y would otherwise keep the previous minibatch's labels and train on them
    with pytest.raises(sd.StadynError, match=r"train_minibatch: no data for input 2 of 2 "
                                             r"<Variable shape=\(8, 3\)"):
        trainer.train_minibatch({x: rng.rand(8, 4)})
    for k, v in sd.get_parameters().items():
        np.testing.assert_array_equal(v.d, before[k])
    assert trainer.minibatches_seen == 1
    with pytest.raises(sd.StadynError, match="test_minibatch: no data for input 2 of 2"):
        trainer.test_minibatch({x: rng.rand(8, 4)})


def test_fit_makes_the_checkpoint_folder_before_training(tmp_path):
    from stadyn.io import MinibatchSourceFromData
    rng = np.random.RandomState(0)
    data = {"features": rng.rand(40, 4).astype(np.float32),
            "labels": np.eye(3, dtype=np.float32)[rng.randint(0, 3, 40)]}
    x, y, trainer = _dense_trainer()
    source = MinibatchSourceFromData(data, randomize=False)
    imap = {x: source.streams.features, y: source.streams.labels}
    path = tmp_path / "runs" / "deep" / "t.ckpt"
    trainer.fit(source, imap, epochs=1, minibatch_size=20, checkpoint=path)
    assert path.is_file()
    # a folder in the checkpoint's place fails before any minibatch is trained
    (tmp_path / "taken.ckpt").mkdir()
    seen = trainer.total_number_of_samples_seen
    with pytest.raises(sd.ModelFileError, match="taken.ckpt"):
        trainer.fit(source, imap, epochs=1, minibatch_size=20, checkpoint=tmp_path / "taken.ckpt")
    assert trainer.total_number_of_samples_seen == seen


@pytest.mark.parametrize("compile_mode", [False, "program"])
def test_train_minibatch_returns_the_outputs_asked_for_in_every_mode(compile_mode):
    """``train_minibatch(data, outputs=[y])`` gives CNTK's ``(True, {y: array})``: ``y`` as the
    step computed it, before its update (NumPy from the parameters of the time), with a
    compiled step too (whose program used to leave the outputs out, silently)."""
    import stadyn.parametric_functions as PF
    rng = np.random.RandomState(5)
    batches = [(rng.randn(4, 3).astype(np.float32), rng.randn(4, 2).astype(np.float32))
               for _ in range(2)]
    x, t = sd.Variable((4, 3)), sd.Variable((4, 2))
    y = PF.affine(x, 2, name="fc")
    params = sd.get_parameters()
    W = params["fc/affine/W"].d.astype(np.float64)
    b = params["fc/affine/b"].d.astype(np.float64)
    solver = S.Sgd(lr=0.1)
    solver.set_parameters(params)
    trainer = Trainer(y, (F.squared_error(y, t),), [solver], compile=compile_mode)
    for xb, tb in batches:
        result = trainer.train_minibatch({x: xb, t: tb}, outputs=[y])
        assert isinstance(result, tuple) and result[0] is True and list(result[1]) == [y]
        np.testing.assert_allclose(result[1][y], xb @ W + b, rtol=1e-5, atol=1e-6)
        dy = 2 * (xb @ W + b - tb)          # the summed squared error's gradient
        W, b = W - 0.1 * xb.T @ dy, b - 0.1 * dy.sum(0)
    np.testing.assert_allclose(params["fc/affine/W"].d, W, rtol=1e-5, atol=1e-6)
    assert trainer.train_minibatch({x: batches[0][0], t: batches[0][1]}) is True


def test_the_step_for_front_ends_always_gives_a_flag_and_a_dict():
    """``_train_minibatch`` (what the CNTK Trainer calls, asking for outputs of its own or
    none) gives ``(updated, {output: array})`` whatever was asked for, while the public
    ``train_minibatch`` gives a bool without outputs and CNTK's pair with them."""
    x, y, trainer = _dense_trainer()
    data = {x: np.ones((2, 4), np.float32), y: _one_hot([0, 2])}
    z = trainer.model
    assert trainer._train_minibatch(data, []) == (True, {})
    assert trainer._train_minibatch({}, [z]) == (False, {})
    w, b = (p.d.copy() for p in trainer.parameters)
    updated, values = trainer._train_minibatch(data, [z])
    assert updated is True and list(values) == [z]
    np.testing.assert_allclose(values[z], np.ones((2, 4)) @ w + b, rtol=1e-6)
    assert trainer.train_minibatch(data) is True
    assert trainer.train_minibatch({}, outputs=[z]) is False
    updated, values = trainer.train_minibatch(data, outputs=[z])
    assert updated is True and list(values) == [z]
