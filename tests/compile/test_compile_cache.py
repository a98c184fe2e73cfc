"""A compiled step loaded from inductor's on-disk cache in a new process (a training program
run a second time) draws its dropout masks as the first run and a static plan do."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from stadyn.compile._generators import lift_generators
from stadyn.ops import CNTKStream, RandomStream, generator_key, keyed_draw_op
from stadyn.ops._cntk_draws import cntk_draw
from stadyn.ops._random import nnabla_draw

SCRIPT = Path(__file__).with_name("cached_step_run.py")


def _script():
    spec = importlib.util.spec_from_file_location("_stadyn_compile_cached_step_run", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _compiled_run(cache: Path) -> dict:
    # (kernels compiled in the process, not a pool of one process per core: conftest.py)
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache), OMP_NUM_THREADS="1",
               TORCHINDUCTOR_COMPILE_THREADS="1")
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, str(SCRIPT), "compiled"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_compiled_step_with_dropout_loaded_from_the_cache_draws_the_same_masks(tmp_path):
    # Before the fix the second process failed: the draw's generator, a constant of the
    # compiled graph, came back from the cache as None ("cntk_draw() Expected a value of
    # type 'Generator' ... found 'NoneType'").
    first = _compiled_run(tmp_path)
    second = _compiled_run(tmp_path)
    assert first["fxgraph"].get("fxgraph_cache_miss", 0) >= 1
    assert second["fxgraph"].get("fxgraph_cache_hit", 0) >= 1       # loaded, not compiled
    assert second["fxgraph"].get("fxgraph_cache_miss", 0) == 0
    assert second["losses"] == first["losses"]
    # the masks a static plan draws with the same seeds (inductor's reordered sums: ~1 ulp)
    assert first["losses"] == pytest.approx(_script().train("static"), rel=1e-6)


def _traced(f, *args):
    return make_fx(f, tracing_mode="fake")(*args)       # (fake: the trace draws nothing)


def test_lifted_draws_take_their_generators_as_inputs_and_draw_the_same_numbers():
    def draws(cntk, nnabla):
        def f(x):
            return (x * cntk_draw("dropout", 0.5, 0.0, (6,), torch.float32, cntk)
                    + cntk_draw("uniform", -1.0, 1.0, (6,), torch.float32, cntk)
                    + nnabla_draw("uniform", 0.0, 1.0, (6,), seed=nnabla))
        return f

    x = torch.ones(6)
    s, r = CNTKStream(7), RandomStream(5)
    gm = _traced(draws(s, r), x)
    assert any(n.op == "get_attr" for n in gm.graph.nodes)       # the generators, constants
    keys, cacheable = lift_generators(gm)
    assert len(keys) == 2 and cacheable                  # two generators: two inputs
    assert not any(n.op == "get_attr" for n in gm.graph.nodes)
    targets = {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    assert {"stadyn_kernels.cntk_draw_keyed.default",
            "stadyn_kernels.nnabla_draw_keyed.default"} <= targets
    expected = draws(CNTKStream(7), RandomStream(5))
    for _ in range(2):                                   # the streams move on as uncompiled
        assert torch.equal(gm(x, *keys), expected(x))
    assert s.position() == 24 and r.position() == 12


def test_a_generator_only_a_torch_operator_takes_keeps_the_program_out_of_the_cache():
    g = torch.Generator().manual_seed(3)
    gm = _traced(lambda x: x * torch.rand(6, generator=g), torch.ones(6))
    keys, cacheable = lift_generators(gm)
    assert keys == [] and not cacheable


def test_keyed_forms_exist_only_for_stadyn_draws():
    draw = torch.ops.stadyn_kernels.cntk_draw.default
    assert keyed_draw_op(draw) is keyed_draw_op(draw)            # made once
    assert keyed_draw_op(torch.ops.aten.rand.default) is None
    assert keyed_draw_op(torch.ops.stadyn_kernels.tanh_numpy.default) is None
    with pytest.raises(RuntimeError, match="names no live generator"):
        keyed_draw_op(draw)(3, 0.5, 0.0, [2], torch.float32, torch.tensor(-1))
    g = torch.Generator()
    assert generator_key(g) == generator_key(g) != generator_key(torch.Generator())
