"""Worker programs for the data-parallel tests, and the single-process runs they are compared
with.  Run as ``python dist_workers.py SCENARIO OUTDIR [options]`` under the Stadyn launcher; the
test process imports the same module for the single-process references.

Every worker uses one torch thread (the launcher's OMP_NUM_THREADS=1 and set_num_threads below).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import torch

import stadyn as sd
import stadyn.distributed as dist
import stadyn.functions as F
import stadyn.learners as CL
import stadyn.parametric_functions as PF
import stadyn.solvers as S
from stadyn.io import data_iterator_digits
from stadyn.io._data_iterator import DataIterator, SimpleDataSource
from stadyn.models import digits_mlp
from stadyn.train import Trainer

SEED = 11
LOCAL_BATCH = 16
WORKERS = 2
GLOBAL_BATCH = LOCAL_BATCH * WORKERS


# ---------------------------------------------------------------------------------------------
# Data and models shared by the workers and the references
# ---------------------------------------------------------------------------------------------
def digits_source() -> SimpleDataSource:
    """The digits set as a DataSource (the one data_iterator_digits uses)."""
    it = data_iterator_digits(batch_size=1, shuffle=False, use_thread=False)
    return it._source


def reference_iterator(batch: int = GLOBAL_BATCH) -> DataIterator:
    """What one process reads: the lead's DataIterator with the global batch and the seed."""
    return DataIterator(digits_source(), batch, np.random.RandomState(SEED), shuffle=True,
                        use_thread=False)


def sharded_iterator() -> dist.ShardedDataIterator:
    return dist.ShardedDataIterator(digits_source(), LOCAL_BATCH, rng=SEED, shuffle=True)


def small_cnn(x, bn, middle: int = 2):
    """The NNabla tutorial's digits CNN (conv 64 + BN + tanh, ``middle`` x conv 128 + BN +
    tanh, conv 512 + BN + tanh, 2x2 average pooling, affine 1024 + tanh, affine 10), with fewer
    middle blocks than the tutorial's 10 to keep a two-process test short on two cores; ``bn``
    is the PF batch norm."""
    def block(h, maps):
        return F.tanh(bn(PF.convolution(h, maps, (3, 3), pad=(1, 1))))
    with sd.parameter_scope("cnn"):
        with sd.parameter_scope("conv1"):
            h = block(x, 64)
        for i in range(middle):
            with sd.parameter_scope(f"conv{i + 2}"):
                h = block(h, 128)
        with sd.parameter_scope("conv_last"):
            h = F.average_pooling(block(h, 512), (2, 2))
        with sd.parameter_scope("fc"):
            h = F.tanh(PF.affine(h, 1024))
        with sd.parameter_scope("classifier"):
            return PF.affine(h, 10)


def snapshot() -> dict[str, np.ndarray]:
    return {k: v.d.copy() for k, v in sd.get_parameters(grad_only=False).items()}


# ---------------------------------------------------------------------------------------------
# Digits MLP: three ways of training, each on N workers or on one
# ---------------------------------------------------------------------------------------------
def mlp_learner(mode: str, params):
    if mode == "trainer-cntk":
        # Per-sample learning rate and a momentum time constant: both depend on the minibatch
        # size M the learner is told, so a wrong (local) M would change the result.
        return CL.momentum_sgd(list(params.values()),
                               CL.learning_parameter_schedule_per_sample(0.002),
                               CL.momentum_as_time_constant_schedule(200))
    if mode == "trainer-adam":
        solver = S.Adam(alpha=1e-3)
    else:
        solver = S.Momentum(lr=0.005, momentum=0.9)
    solver.set_parameters(params)
    return solver


def train_mlp(mode: str, iterations: int, data, dp=None, checkpoint: str | None = None,
              fail: tuple[int, int, str] | None = None, log: list | None = None) -> None:
    """Train the digits MLP for ``iterations`` minibatches of ``data``.

    ``mode``: ``trainer-cntk`` / ``trainer-adam`` (the Trainer: summed loss, static graph) or
    ``loop`` (hand-written dynamic loop: mean loss, ``all_reduce_gradients(average=True)``).
    With ``checkpoint`` the run resumes from it when it exists and writes it every 4
    minibatches.  ``fail = (rank, iteration, how)`` makes that rank exit or hang there.
    """
    batch = data.batch_size
    sd.seed(SEED + (dp.rank if dp is not None else 0))  # rank-dependent init: broadcast fixes
    x = sd.Variable((batch, 1, 8, 8))
    t = sd.Variable((batch, 1), dtype=np.int32)
    z = digits_mlp(x)
    params = sd.get_parameters()
    learner = mlp_learner(mode, params)
    start = 0
    if mode.startswith("trainer"):
        loss = F.softmax_cross_entropy(z, t)
        trainer = Trainer(z, (loss, F.top_n_error(z, t)), [learner], data_parallel=dp)
        if checkpoint is not None and os.path.exists(checkpoint):
            state = (dist.restore_from_checkpoint(trainer, checkpoint) if dp is not None
                     else trainer.restore_from_checkpoint(checkpoint))
            data.restore_from_checkpoint(state["data"])
            start = state["iteration"]
            if log is not None:
                log.append(f"resumed at {start}")
        for i in range(start, iterations):
            if fail is not None and dp is not None and dp.rank == fail[0] and i == fail[1]:
                if fail[2] == "exit":
                    os._exit(3)
                time.sleep(1000)
            xb, tb = data.next()
            trainer.train_minibatch({x: xb, t: tb})
            assert trainer.previous_minibatch_sample_count == GLOBAL_BATCH
            if checkpoint is not None and (i + 1) % 4 == 0:
                state = {"data": data.get_checkpoint_state(), "iteration": i + 1}
                if dp is not None:
                    dist.save_checkpoint(trainer, checkpoint, state)
                else:
                    trainer.save_checkpoint(checkpoint, state)
        return
    if dp is not None:
        dp.broadcast_parameters(sd.get_parameters(grad_only=False))
    for _ in range(iterations):
        xb, tb = data.next()
        x.d, t.d = xb, tb
        with sd.auto_forward():
            loss = F.mean(F.softmax_cross_entropy(digits_mlp(x), t))
        learner.zero_grad()
        loss.backward()
        if dp is not None:
            dp.all_reduce_gradients(params, average=True)
        learner.update()


def reference_mlp(mode: str, iterations: int) -> dict[str, np.ndarray]:
    """One process on the global minibatches."""
    with sd.parameter_registry(sd.ParameterRegistry()):
        train_mlp(mode, iterations, reference_iterator())
        return snapshot()


def reference_cnn(iterations: int) -> dict[str, np.ndarray]:
    """One process, local batch normalisation on the global minibatch."""
    with sd.parameter_registry(sd.ParameterRegistry()):
        train_cnn(PF.batch_normalization, iterations, reference_iterator())
        return snapshot()


def train_cnn(bn, iterations: int, data, dp=None) -> None:
    """The reduced digits CNN, static graph, mean loss, NNabla Momentum."""
    batch = data.batch_size
    sd.seed(SEED)
    x = sd.Variable((batch, 1, 8, 8))
    t = sd.Variable((batch, 1), dtype=np.int32)
    loss = F.mean(F.softmax_cross_entropy(small_cnn(x, bn), t))
    params = sd.get_parameters()
    solver = S.Momentum(lr=0.02, momentum=0.9)
    solver.set_parameters(params)
    if dp is not None:
        dp.broadcast_parameters(sd.get_parameters(grad_only=False))
    for _ in range(iterations):
        x.d, t.d = data.next()
        with sd.training(True):
            loss.forward(clear_no_need_grad=True)
        solver.zero_grad()
        loss.backward(clear_buffer=True)
        if dp is not None:
            dp.all_reduce_gradients(params, average=True)
        solver.update()


# ---------------------------------------------------------------------------------------------
# Scenarios (run by each worker)
# ---------------------------------------------------------------------------------------------
def save(out: str, name: str, arrays: dict) -> None:
    np.savez(os.path.join(out, f"{name}-rank{dist.rank()}.npz"), **arrays)


def scenario_mlp(out: str, args) -> None:
    dist.init()
    for mode in ("trainer-cntk", "trainer-adam", "loop"):
        with sd.parameter_registry(sd.ParameterRegistry()):
            # Small buckets: several all-reduces per step (started during backward in the loop).
            dp = dist.DataParallel(bucket_size_mb=0.1)
            train_mlp(mode, args.iterations, sharded_iterator(), dp)
            save(out, mode, {**snapshot(), "_overlapped": np.array(dp.overlapped_buckets)})


def scenario_cnn(out: str, args) -> None:
    dist.init()
    dp = dist.DataParallel(bucket_size_mb=1.0)
    train_cnn(PF.sync_batch_normalization, args.iterations, sharded_iterator(), dp)
    save(out, "cnn", {**snapshot(), "_overlapped": np.array(dp.overlapped_buckets)})


def scenario_resume(out: str, args) -> None:
    dist.init()
    fail = None
    if args.fail_at >= 0:
        fail = (args.fail_rank, args.fail_at, args.how)
    log: list[str] = []
    dp = dist.DataParallel()
    writes = []
    original = Trainer.save_checkpoint

    def recording_save(self, filename, external_state=None):   # who writes checkpoints?
        writes.append(dist.rank())
        original(self, filename, external_state)
    Trainer.save_checkpoint = recording_save
    train_mlp("trainer-cntk", args.iterations, sharded_iterator(), dp,
              checkpoint=os.path.join(out, "ckpt.safetensors"), fail=fail, log=log)
    save(out, "resume", snapshot())
    print(" ".join(log) or "started afresh", flush=True)
    print(f"checkpoints written by this rank: {len(writes)}", flush=True)


def scenario_convnet(out: str, args) -> None:
    """CNTK's CIFAR-10 ConvNet through the Trainer, reading a map file with a MinibatchSource
    sharded by rank; records the sample ids (the blue channel of each image) it trained on."""
    import stadyn.io as sio
    from stadyn.models import cifar_convnet
    from stadyn.train import ProgressPrinter
    dist.init()
    dp = dist.DataParallel()
    source = sio.MinibatchSource(sio.ImageDeserializer(args.map_file, sio.StreamDefs(
        features=sio.StreamDef(field="image"), labels=sio.StreamDef(field="label", shape=10))),
        randomize=True, randomization_seed=5, max_sweeps=args.sweeps)
    sd.seed(1 + dp.rank)
    x, y = sd.Variable((1, 3, 32, 32)), sd.Variable((1, 10))
    z = cifar_convnet(x)
    learner = CL.momentum_sgd(list(sd.get_parameters().values()),
                              CL.learning_parameter_schedule_per_sample(0.001),
                              CL.momentum_as_time_constant_schedule(100))
    printer = ProgressPrinter(freq=1, tag="Training")
    trainer = Trainer(z, (F.cross_entropy_with_softmax(z, y), F.classification_error(z, y)),
                      [learner], [printer], data_parallel=dp)
    seen = []
    while True:
        mb = source.next_minibatch(args.minibatch, num_data_partitions=dist.size(),
                                   partition_index=dist.rank())
        if not mb:
            break
        images, labels = mb[source.streams.features], mb[source.streams.labels]
        ids = images.data[:, 0, 0, 0].astype(int).tolist()
        seen.append({"ids": ids, "labels": labels.data.argmax(1).tolist(),
                     "end_of_sweep": images.end_of_sweep})
        trainer.train_minibatch({x: images, y: labels})
    trainer.summarize_training_progress()
    with open(os.path.join(out, f"seen-rank{dist.rank()}.json"), "w") as f:
        json.dump({"batches": seen, "samples": trainer.total_number_of_samples_seen}, f)
    save(out, "convnet", snapshot())


def scenario_comm(out: str, args) -> None:
    """The NNabla communicator's collectives."""
    import stadyn.compat.nnabla.communicators as C
    comm = C.MultiProcessDataParalellCommunicator(None)
    comm.init()
    r, n = comm.rank, comm.size
    res: dict = {"rank": r, "size": n, "local_rank": comm.local_rank}
    a = torch.full((3,), float(r + 1))
    b = np.full((2, 2), 10.0 * (r + 1), dtype=np.float32)   # a NumPy array: reduced in place
    comm.all_reduce([a, b], division=False, inplace=False)
    res["all_reduce"] = [a.tolist(), b.tolist()]
    c = torch.full((4,), float(r + 1))
    comm.all_reduce(c, division=True, inplace=True)
    res["all_reduce_division"] = c.tolist()
    d = torch.full((2,), float(r * 7 + 1))
    comm.bcast([d], src=1)
    res["bcast"] = d.tolist()
    outs = [torch.zeros(2) for _ in range(n)]
    comm.all_gather(torch.tensor([float(r), float(r * r + 5)]), outs)
    res["all_gather"] = [o.tolist() for o in outs]
    e = torch.full((2,), float(r + 2))
    comm.reduce([e], dst=0)
    res["reduce"] = e.tolist()
    with sd.parameter_registry(sd.ParameterRegistry()):
        v = sd.Variable.from_numpy_array(np.full((2,), float(r)), need_grad=True)
        v.g = np.full((2,), float(r + 1))
        comm.add_context_and_parameters((None, {"v": v}))
        comm.all_reduce(division=True)           # the registered parameters' gradients
        res["registered"] = v.g.tolist()
    try:
        comm.all_reduce([None])
    except TypeError as exc:
        res["none_error"] = str(exc)
    comm.new_group(("pair", [0, 1]))
    res["groups"] = comm.list_groups()
    comm.barrier()
    with open(os.path.join(out, f"comm-rank{r}.json"), "w") as f:
        json.dump(res, f)


SCENARIOS = {"mlp": scenario_mlp, "cnn": scenario_cnn, "resume": scenario_resume,
             "convnet": scenario_convnet, "comm": scenario_comm}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("out")
    parser.add_argument("--iterations", type=int, default=24)
    parser.add_argument("--fail-rank", type=int, default=1)
    parser.add_argument("--fail-at", type=int, default=-1)
    parser.add_argument("--how", choices=("exit", "hang"), default="exit")
    parser.add_argument("--map-file")
    parser.add_argument("--sweeps", type=int, default=2)
    parser.add_argument("--minibatch", type=int, default=16)
    args = parser.parse_args(argv)
    SCENARIOS[args.scenario](args.out, args)


if __name__ == "__main__":
    # a worker process only: the tests that import this module for its references run them
    # under the one_torch_thread fixture, and the rest of their process keeps its threads
    torch.set_num_threads(1)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
