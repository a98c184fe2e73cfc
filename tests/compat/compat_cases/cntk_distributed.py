"""``cntk.train.distributed`` on one worker (a program started without ``mpiexec`` here, and
without ``stadyn launch`` on Stadyn): the communicator's view of the job, and training with the
distributed learners gives the wrapped learner's parameters."""

import numpy as np

from compat_harness import cntk_case

_NAMES = ["Communicator", "DistributedLearner", "WorkerDescriptor", "mpi_communicator",
          "data_parallel_distributed_learner", "block_momentum_distributed_learner"]


def _train(C, r, wrap):
    x = C.input_variable(4, name="x")
    y = C.input_variable(3, name="y")
    w = C.parameter((4, 3), init=r.param_value("w", (4, 3)), name="w")
    z = C.times(x, w)
    loss = C.cross_entropy_with_softmax(z, y)
    base = C.momentum_sgd([w], C.learning_parameter_schedule(0.1), C.momentum_schedule(0.9))
    learner = wrap(base)
    trainer = C.Trainer(z, (loss, C.classification_error(z, y)), [learner])
    for _ in range(3):
        trainer.train_minibatch({x: r.randn(5, 4), y: r.onehot(5, 3)})
    return learner, w.value, trainer.total_number_of_samples_seen


def _error(e):
    """The error's type and the start of its message (without Stadyn's explanation)."""
    return "%s: %s" % (type(e).__name__, str(e).splitlines()[0].split(" (")[0][:40])


@cntk_case(names=["cntk.train.distributed.DistributedLearner.create_checkpoint",
                  "cntk.train.distributed.DistributedLearner.restore_from_checkpoint"],
           note="Stadyn's localLearners was a Dictionary, and its restore took the wrapped "
                "learner's own Dictionary or that dict")
def distributed_checkpoint_forms(C, r):
    """(Runs before ``distributed_one_worker``, which ends MPI.)  A data-parallel learner's
    ``create_checkpoint()``: its ``localLearners`` is a dict (CNTK 2.7 converts a nested
    Dictionary); ``restore_from_checkpoint`` of that dict is a TypeError, of the wrapped
    learner's own Dictionary a RuntimeError, of the whole Dictionary the counts and rate."""
    r.touch("cntk.train.distributed.DistributedLearner.create_checkpoint",
            "cntk.train.distributed.DistributedLearner.restore_from_checkpoint")
    D = C.train.distributed
    x, y = C.input_variable(2), C.input_variable(3)
    w = C.parameter((2, 3), init=r.param_value("w", (2, 3)), name="w")
    z = C.times(x, w)
    base = C.momentum_sgd([w], C.learning_parameter_schedule(0.1), C.momentum_schedule(0.9))
    learner = D.data_parallel_distributed_learner(base)
    C.Trainer(z, (C.squared_error(z, y),), [learner]).train_minibatch(
        {x: r.randn(4, 2), y: r.randn(4, 3)})
    saved = learner.create_checkpoint()
    res = {"type": type(saved).__name__, "local type": type(saved["localLearners"]).__name__,
           "keys": sorted(saved.keys()), "seen": saved["totalNumberOfSamplesSeen"]}
    w2 = C.parameter((2, 3), init=np.zeros((2, 3), np.float32), name="w")
    again = D.data_parallel_distributed_learner(
        C.momentum_sgd([w2], C.learning_parameter_schedule(0.5), C.momentum_schedule(0.9)))
    for name, given in (("local dict", saved["localLearners"]),
                        ("wrapped learner's", base.create_checkpoint()), ("whole", saved)):
        try:
            again.restore_from_checkpoint(given)
            res[name] = [int(again.total_number_of_samples_seen), again.learning_rate()]
        except (TypeError, RuntimeError) as e:
            res[name] = _error(e)
    return res


@cntk_case(names=["cntk.learners.UserLearner", "cntk.learners.UserLearner.update",
                  "cntk.train.distributed.data_parallel_distributed_learner",
                  "cntk.train.distributed.block_momentum_distributed_learner"],
           known={"block momentum": "CNTK 2.7's block momentum over a UserLearner fails at its "
                  "first minibatch (RuntimeError: SWIG director pure virtual method called "
                  "CNTK::Learner::ResetSmoothedGradients, a Python learner has no such "
                  "method); Stadyn trains, as the learner alone does"},
           note="a UserLearner (sign SGD, with an attribute of its own named 'step') inside a "
                "data-parallel distributed learner trains as it does alone on one worker: "
                "W [0.2262, -0.8005], b [0.06] after three minibatches in CNTK 2.7.  Stadyn "
                "(mendE34's base) called the user's update(gradient_values, ...) with the "
                "sample count (AttributeError)")
def user_learner__inside_distributed_learners(C, r, np):
    r.touch("cntk.learners.UserLearner.update")

    class SignSGD(C.learners.UserLearner):
        def __init__(self, parameters, lr):
            super(SignSGD, self).__init__(parameters, lr)
            self.step = 0.02

        def update(self, gradient_values, training_sample_count, sweep_end):
            for p, g in gradient_values.items():
                p.set_value(C.NDArrayView.from_dense(
                    (p.value - self.step * np.sign(g.asarray())).astype(np.float32)))
            return True

    D = C.train.distributed
    res = {}     # (before distributed_one_worker, whose Communicator.finalize ends MPI)
    for label, wrap in (("alone", lambda l: l),
                        ("data parallel", D.data_parallel_distributed_learner),
                        ("block momentum",
                         lambda l: D.block_momentum_distributed_learner(l, block_size=2))):
        x = C.input_variable(2, name="x")
        z = C.layers.Dense(1, init=C.glorot_uniform(seed=3))(x)
        t = C.input_variable(1)

        def trained(z=z, x=x, t=t, wrap=wrap):
            learner = wrap(SignSGD(list(z.parameters), C.learning_parameter_schedule(1.0)))
            trainer = C.Trainer(z, C.squared_error(z, t), [learner])
            for _ in range(3):
                trainer.train_minibatch({x: np.ones((2, 2), np.float32),
                                         t: np.zeros((2, 1), np.float32)})
            return {"W": z.W.value.ravel().tolist(), "b": z.b.value.ravel().tolist()}
        try:
            res[label] = {"returns": trained()}
        except Exception as e:      # (CNTK 2.7's block momentum: a SWIG director error)
            res[label] = {"raises": type(e).__name__}
    return res


_METHODS = ["Communicator.barrier", "Communicator.current_worker", "Communicator.finalize",
            "Communicator.is_main", "Communicator.num_workers", "Communicator.rank",
            "Communicator.workers", "DistributedLearner.communicator",
            "DistributedLearner.get_communicator", "DistributedLearner.parallelization_after",
            "DistributedLearner.parameters",
            "WorkerDescriptor.is_main", "DistributedLearner.create_checkpoint",
            "DistributedLearner.restore_from_checkpoint"]


@cntk_case(names=["cntk.train.distributed." + n for n in _NAMES] +
           ["cntk." + n for n in _NAMES] + ["cntk.train." + n for n in _NAMES] +
           ["cntk." + m for m in _METHODS],
           note="one worker: rank 0 of 1; the distributed learners train as the learner they wrap")
def distributed_one_worker(C, r):
    D = C.train.distributed
    learner, w_dp, seen = _train(C, r, lambda l: D.data_parallel_distributed_learner(
        l, distributed_after=8, num_quantization_bits=32))
    comm = learner.communicator()
    comm.barrier()
    worker = comm.current_worker()
    has_update = hasattr(learner, "update")         # (CNTK 2.7's has none: a Trainer updates)
    saved = learner.create_checkpoint()              # CNTK's Dictionary, back in unchanged
    learner.restore_from_checkpoint(saved)
    checkpoint = [sorted(saved.keys()), saved["totalNumberOfSamplesSeen"],
                  len(saved["localLearners"])]
    _, w_bm, _ = _train(C, r, lambda l: D.block_momentum_distributed_learner(l, block_size=10))
    _, w_plain, _ = _train(C, r, lambda l: l)
    mpi = D.mpi_communicator()
    res = {"rank": D.Communicator.rank(), "num_workers": D.Communicator.num_workers(),
           "has update": has_update,
           "is_main": comm.is_main(), "workers": len(comm.workers()),
           "worker rank": worker.global_rank, "parallelization_after":
           learner.parallelization_after(), "samples seen": seen,
           "learning rate": learner.learning_rate(),
           "parameters": len(learner.parameters()) if callable(learner.parameters) else -1,
           "learner samples": learner.total_number_of_samples_seen,
           "data parallel": w_dp, "block momentum": w_bm, "plain": w_plain,
           "mpi is_main": mpi.is_main(), "worker is_main": worker.is_main(),
           "get_communicator": learner.get_communicator() is not None,
           "is DistributedLearner": isinstance(learner, D.DistributedLearner),
           "is WorkerDescriptor": isinstance(worker, D.WorkerDescriptor),
           "checkpoint": checkpoint}
    D.Communicator.finalize()
    r.touch(*["cntk." + m for m in _METHODS])         # each called above
    return res
