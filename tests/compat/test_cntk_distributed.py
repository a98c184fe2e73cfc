"""``cntk.train.distributed.data_parallel_distributed_learner`` over two Stadyn workers: each
trains on its half of every minibatch, and both end with the parameters one process gets from
the whole minibatches (CNTK's data-parallel SGD: gradients and sample counts summed)."""

import io
import json
import os
import sys
import textwrap

import numpy as np

import stadyn.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "..", "src")

_SCRIPT = """
    import json, os, sys
    import numpy as np
    import stadyn.compat.cntk as C
    D = C.train.distributed
    rank, workers = int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(0)
    x, y = C.input_variable(4), C.input_variable(3)
    w = C.parameter((4, 3), init=rng.standard_normal((4, 3)).astype(np.float32))
    z = C.times(x, w)
    learner = C.momentum_sgd([w], C.learning_parameter_schedule_per_sample(0.05),
                             C.momentum_schedule(0.9))
    if workers > 1:
        learner = D.data_parallel_distributed_learner(learner)
    trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), None), [learner])
    for step in range(3):
        data = rng.standard_normal((8, 4)).astype(np.float32)
        labels = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 8)]
        part = slice(rank * 8 // workers, (rank + 1) * 8 // workers)
        trainer.train_minibatch({x: data[part], y: labels[part]})
    out = {"w": w.value.tolist(), "rank": D.Communicator.rank(),
           "workers": D.Communicator.num_workers(),
           "samples": learner.total_number_of_samples_seen}
    with open(os.path.join(sys.argv[1], "w%d_%d.json" % (workers, rank)), "w") as f:
        json.dump(out, f)
    D.Communicator.finalize()
"""


def test_two_workers_train_as_one_process_on_the_whole_minibatch(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(_SCRIPT))
    env = {"PYTHONPATH": os.pathsep.join([os.path.abspath(SRC),
                                          os.environ.get("PYTHONPATH", "")])}
    argv = [sys.executable, str(script), str(tmp_path)]
    out, err = io.StringIO(), io.StringIO()
    # two workers: RANK comes from the launcher, given here as the script's argument
    code = ("import os, sys, runpy; sys.argv = [sys.argv[1], sys.argv[2], os.environ['RANK'], "
            "os.environ['WORLD_SIZE']]; runpy.run_path(sys.argv[0], run_name='__main__')")
    status = dist.run_workers([sys.executable, "-c", code, str(script), str(tmp_path)], 2,
                              timeout=120, env=env, stdout=out, stderr=err)
    assert status == 0, err.getvalue()
    import subprocess
    one = subprocess.run(argv + ["0", "1"], env={**os.environ, **env}, capture_output=True,
                         text=True, timeout=300)
    assert one.returncode == 0, one.stderr
    alone = json.loads((tmp_path / "w1_0.json").read_text())
    ranks = [json.loads((tmp_path / f"w2_{r}.json").read_text()) for r in range(2)]
    assert [r["rank"] for r in ranks] == [0, 1] and {r["workers"] for r in ranks} == {2}
    assert alone["workers"] == 1 and alone["samples"] == 24
    assert [r["samples"] for r in ranks] == [24, 24]
    for r in ranks:
        np.testing.assert_allclose(r["w"], alone["w"], rtol=1e-5, atol=1e-6)


def test_quantization_bits_are_taken_as_cntk_27_takes_them():
    """CNTK 2.7 (run here) takes any whole number of bits from 1 where the learner is made: 33
    and 64 train unquantized, as 32; 3 or 5 bits alone never quantize (with two workers CNTK
    fails at the first exchange, Stadyn's QuantizedAllReduce refuses them as the learner is
    made). Not whole numbers, and fewer than 1, are refused at once."""
    import pytest

    import stadyn.compat.cntk as C
    from stadyn._errors import ConfigError

    def make(bits):
        w = C.parameter((2,), init=np.zeros(2, np.float32))
        return C.train.distributed.data_parallel_distributed_learner(
            C.sgd([w], C.learning_parameter_schedule(0.1)), num_quantization_bits=bits)

    for bits in (0, -1, 1.5, True):
        with pytest.raises(ConfigError, match=rf"num_quantization_bits={bits!r}; a whole number"):
            make(bits)
    for bits in (1, 2, 3, 4, 5, 8, 16, 32, 33, 64):
        assert make(bits).parallelization_after() == 0
    assert make(64)._quantized is None and make(33)._quantized is None
