"""Workers started by OpenMPI's ``mpiexec`` (as CNTK's and NNabla's users started theirs) join
one group from OpenMPI's environment, and 1-bit SGD's quantized all-reduce
(:class:`stadyn.distributed.QuantizedAllReduce`) against a NumPy reading of CNTK 2.7's
(``MatrixQuantizerCPU``, ``ColumnQuantizer``, ``QuantizedMPICommunicatorImpl``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import stadyn.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(HERE, "mpi_workers.py")
sys.path.insert(0, HERE)
from mpi_workers import gradients  # noqa: E402

_LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                "MASTER_PORT", "STADYN_HEARTBEAT_DIR")
_OPENMPI_VARS = ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                 "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE",
                 "OMPI_MCA_orte_jobfam_session_dir", "PMIX_SERVER_TMPDIR", "PMIX_SYSTEM_TMPDIR",
                 "OMPI_MCA_orte_hnp_uri")


def _clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _LAUNCH_VARS + _OPENMPI_VARS}
    env.update(OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(
        [os.path.join(ROOT, "src"), os.environ.get("PYTHONPATH", "")]))
    return env


@pytest.fixture(scope="module")
def as_openmpi_starts_them(tmp_path_factory) -> list[dict]:
    """What two workers wrote, started with the environment OpenMPI 4's ``mpiexec -n 2``
    gives (no launcher, no MASTER_ADDR/MASTER_PORT)."""
    session = tmp_path_factory.mktemp("openmpi")
    out = session / "result"
    procs = []
    for r in range(2):
        env = dict(_clean_env(), OMPI_COMM_WORLD_RANK=str(r), OMPI_COMM_WORLD_SIZE="2",
                   OMPI_COMM_WORLD_LOCAL_RANK=str(r), OMPI_COMM_WORLD_LOCAL_SIZE="2",
                   OMPI_MCA_ess_base_jobid="4242", OMPI_MCA_orte_jobfam_session_dir=str(session),
                   STADYN_DIST_TIMEOUT="60")
        procs.append(subprocess.Popen([sys.executable, WORKER, str(out)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err[-3000:]
    results = []
    for r in range(2):
        with open(f"{out}.rank{r}.json") as f:
            results.append(json.load(f))
    return results


def _joined(result: dict, r: int) -> bool:
    return {k: result[k] for k in ("joined", "rank", "size", "local_rank", "local_size",
                                   "sum")} == {"joined": True, "rank": r, "size": 2,
                                               "local_rank": r, "local_size": 2, "sum": [3.0]}


def test_workers_with_openmpis_environment_join_one_group(as_openmpi_starts_them):
    for r, result in enumerate(as_openmpi_starts_them):
        assert _joined(result, r)


def _openmpi() -> str | None:
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        return None
    version = subprocess.run([mpiexec, "--version"], capture_output=True, text=True).stdout
    return mpiexec if "Open MPI" in version or "OpenRTE" in version else None


@pytest.mark.skipif(_openmpi() is None, reason="no OpenMPI mpiexec on this machine")
def test_workers_started_by_mpiexec_join_one_group(tmp_path):
    out = tmp_path / "mpi"
    proc = subprocess.run([_openmpi(), "--allow-run-as-root", "--oversubscribe", "-n", "2",
                           sys.executable, WORKER, str(out)], env=_clean_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for r in range(2):
        with open(f"{out}.rank{r}.json") as f:
            assert _joined(json.load(f), r)


@pytest.fixture
def openmpi_env(monkeypatch):
    for name in _LAUNCH_VARS + _OPENMPI_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in (("OMPI_COMM_WORLD_RANK", "1"), ("OMPI_COMM_WORLD_SIZE", "2"),
                        ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
                        ("OMPI_COMM_WORLD_LOCAL_SIZE", "1"),
                        ("OMPI_MCA_ess_base_jobid", "7")):
        monkeypatch.setenv(name, value)
    return monkeypatch


def test_before_init_rank_and_size_are_openmpis(openmpi_env):
    assert (dist.rank(), dist.size(), dist.local_rank(), dist.local_size()) == (1, 2, 0, 1)
    openmpi_env.setenv("WORLD_SIZE", "3")          # another launcher's variables come first
    openmpi_env.setenv("RANK", "2")
    assert (dist.rank(), dist.size()) == (2, 3)


def test_mpiexec_across_machines_needs_a_tcp_address(openmpi_env):
    with pytest.raises(dist.DistributedError, match=r"set MASTER_ADDR .*MASTER_PORT"):
        dist.init()


def _two_workers(out, env: dict, *args: str, timeout: float = 60) -> list[int]:
    """Start two workers (``mpi_workers.py OUT *args``) with OpenMPI's variables and ``env``;
    their exit codes (the test fails where they do not end in ``timeout`` seconds)."""
    procs = []
    for r in range(2):
        procs.append(subprocess.Popen(
            [sys.executable, WORKER, str(out), *args], stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True,
            env=dict(_clean_env(), OMPI_COMM_WORLD_RANK=str(r), OMPI_COMM_WORLD_SIZE="2",
                     OMPI_COMM_WORLD_LOCAL_RANK=str(r), OMPI_COMM_WORLD_LOCAL_SIZE="2",
                     STADYN_DIST_TIMEOUT="20", **env)))
    try:
        for p in procs:
            p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the workers did not end in {timeout} s (hung at the rendezvous)")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return [p.returncode for p in procs]


def test_a_rendezvous_file_left_by_a_crashed_job_of_the_same_id_is_not_joined(tmp_path):
    """Without OpenMPI's session folder (OpenMPI 5) the workers meet at a file in the temporary
    folder. A job that crashed left its file there; a later launch given the same job id (an
    mpiexec of the same process id) must not join it (torch's file store hangs on it): the
    file is named after the launch's PMIx server address too."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    env = dict(OMPI_MCA_ess_base_jobid="4343", TMPDIR=str(folder))
    crashed = _two_workers(tmp_path / "crashed", dict(
        env, PMIX_SERVER_URI41="4343.0;tcp4://127.0.0.1:40001"), "--crash")
    assert crashed == [3, 3]
    assert [p.name for p in folder.iterdir() if p.name.startswith("stadyn-rendezvous-4343")]
    out = tmp_path / "again"
    assert _two_workers(out, dict(env, PMIX_SERVER_URI41="4343.0;tcp4://127.0.0.1:40002"),
                        timeout=30) == [0, 0]
    for r in range(2):
        with open(f"{out}.rank{r}.json") as f:
            assert _joined(json.load(f), r)


def _meeting_place(monkeypatch, tmp_path, env: dict) -> str:
    """The rendezvous file two workers on this machine meet at, given OpenMPI's variables
    ``env`` (the others removed; a URI variable of PMIx's given as ``PMIX_SERVER_URI*``)."""
    from stadyn.distributed._process_group import _rendezvous
    for name in [*_LAUNCH_VARS, *_OPENMPI_VARS,
                 *(k for k in os.environ if k.startswith("PMIX_SERVER_URI"))]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr("tempfile.tempdir", None)        # read TMPDIR afresh
    (tmp_path / "tmp").mkdir(exist_ok=True)
    for name, value in dict(OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_SIZE="2",
                            OMPI_COMM_WORLD_LOCAL_RANK="0", OMPI_COMM_WORLD_LOCAL_SIZE="2",
                            **env).items():
        monkeypatch.setenv(name, value)
    method, _ = _rendezvous(2)
    assert method.startswith("file://")
    return method[len("file://"):]


def test_openmpi_4s_workers_meet_in_its_session_folder(monkeypatch, tmp_path):
    """The variables OpenMPI 4.1.4's ``mpiexec -n 2`` set (read from this machine's, values
    as it set them): the jobfam session folder, the same as PMIx's server folder."""
    session = tmp_path / "ompi.vm.0" / "pid.8428"
    session.mkdir(parents=True)
    path = _meeting_place(monkeypatch, tmp_path, dict(
        OMPI_MCA_ess_base_jobid="1276248065", PMIX_NAMESPACE="1276248065",
        OMPI_MCA_orte_jobfam_session_dir=str(session), PMIX_SERVER_TMPDIR=str(session),
        PMIX_SYSTEM_TMPDIR=str(tmp_path / "tmp"),
        OMPI_MCA_orte_hnp_uri="1276248064.0;tcp://192.0.2.2:41165",
        PMIX_SERVER_URI41="1276248064.0;tcp4://127.0.0.1:33679"))
    assert path == str(session / "stadyn-rendezvous-1276248065")


def test_openmpi_5s_workers_meet_in_prrtes_session_folder(monkeypatch, tmp_path):
    """OpenMPI 5 sets no ``OMPI_MCA_ess_base_jobid`` nor ``OMPI_MCA_orte_*`` (OpenPMIx v5.0.11
    src/mca/pmdl/ompi/pmdl_ompi.c:866-1160 lists the OMPI_ variables it sets): the job is the
    PMIx namespace (``prterun-HOST-PID@1``), the launch's folder PRRTE's session folder, passed
    as ``PMIX_SERVER_TMPDIR`` (PRRTE v3.0.14 src/prted/pmix/pmix_server.c:716; OpenPMIx
    src/mca/ptl/base/ptl_base_fns.c:229).  (Before: a file in the shared temporary folder.)"""
    session = tmp_path / "tmp" / "prte.vm.8431"
    session.mkdir(parents=True)
    path = _meeting_place(monkeypatch, tmp_path, dict(
        PMIX_NAMESPACE="prterun-vm-8431@1", PMIX_SERVER_TMPDIR=str(session),
        PMIX_SYSTEM_TMPDIR=str(tmp_path / "tmp"),
        PMIX_SERVER_URI41="prterun-vm-8431@0.0;tcp4://127.0.0.1:45731"))
    assert path == str(session / "stadyn-rendezvous-prterun-vm-8431_1")


def test_without_a_launch_folder_the_file_is_named_after_the_launch(monkeypatch, tmp_path):
    """PMIx's server folder that is the shared temporary folder itself is no launch's own;
    without PMIx's server address, ORTE's address of ``mpiexec`` names the launch; with no
    address at all the job id alone would let a later launch of that id join a crashed one's
    file: refused (before: ``stadyn-rendezvous-JOB`` in the temporary folder)."""
    tmp = str(tmp_path / "tmp")
    shared = _meeting_place(monkeypatch, tmp_path, dict(
        PMIX_NAMESPACE="prterun-vm-1@1", PMIX_SERVER_TMPDIR=tmp, PMIX_SYSTEM_TMPDIR=tmp,
        PMIX_SERVER_URI41="prterun-vm-1@0.0;tcp4://127.0.0.1:45731"))
    assert os.path.dirname(shared) == tmp
    assert os.path.basename(shared).startswith("stadyn-rendezvous-prterun-vm-1_1-")
    first = _meeting_place(monkeypatch, tmp_path, dict(
        OMPI_MCA_ess_base_jobid="77", OMPI_MCA_orte_hnp_uri="76.0;tcp://10.0.0.1:41165"))
    second = _meeting_place(monkeypatch, tmp_path, dict(
        OMPI_MCA_ess_base_jobid="77", OMPI_MCA_orte_hnp_uri="76.0;tcp://10.0.0.1:41166"))
    assert os.path.dirname(first) == tmp and first != second
    assert os.path.basename(first).startswith("stadyn-rendezvous-77-")
    with pytest.raises(dist.DistributedError, match=r"no folder of this launch's own"):
        _meeting_place(monkeypatch, tmp_path, dict(OMPI_MCA_ess_base_jobid="77"))


# -- 1-bit SGD ----------------------------------------------------------------------------------

def _quantize_columns(v: np.ndarray):
    """CNTK 2.7's 1-bit quantization of a (rows, cols) column-major matrix with the zero
    threshold (MatrixQuantizerCPU::QuantizeAsync, ColumnQuantizer::ComputeRangeStatColj<true>,
    ValueQuantizer), in float32, value by value: the unquantized values and the residual."""
    f = np.float32
    out, residual = np.empty_like(v), np.empty_like(v)
    for j in range(v.shape[1]):
        acc0, acc1, n0, n1 = f(0), f(0), 0, 0
        for x in v[:, j]:
            if x < 0:
                acc0, n0 = f(acc0 + x), n0 + 1
            else:
                acc1, n1 = f(acc1 + x), n1 + 1
        mean0, mean1 = f(acc0 / f(max(n0, 1))), f(acc1 / f(max(n1, 1)))
        mid = f(f(0.5) * f(mean0 + mean1))
        radius = f(f(2) * f(mean1 - mid))
        lower, upper = f(mid - radius), f(mid + radius)
        ufactor = f(0) if f(upper - lower) < 1e-36 else f(f(upper - lower) / f(2))
        val0, val1 = f(f(f(0.5) * ufactor) + lower), f(f(f(1.5) * ufactor) + lower)
        for i, x in enumerate(v[:, j]):
            out[i, j] = val1 if x >= 0 else val0
            residual[i, j] = f(x - out[i, j])
    return out, residual


def _cntk_matrix(a: np.ndarray) -> np.ndarray:
    """A gradient as CNTK's matrix: rows the last axis (CNTK's first), columns the rest."""
    rows = a.shape[-1] if a.ndim else 1
    return a.reshape(-1, rows).T.copy()


def _cntk_one_bit_sums(steps: int = 2) -> list[list[np.ndarray]]:
    """Two workers' quantized sums, as CNTK 2.7's QuantizedAggregate: each worker quantizes its
    gradient (+ residual); worker w owns the columns of its stripe, adds its own quantized
    stripe and the other's, quantizes the sum (+ its stripe residual); everyone reads each
    stripe's quantized sum."""
    residual: dict = {}
    stripe_residual: dict = {}
    sums = []
    for step in range(steps):
        per_worker = [[_cntk_matrix(g) for g in gradients(r, step)] for r in range(2)]
        step_sums = []
        for k in range(len(per_worker[0])):
            quantized = []
            for r in range(2):
                m = per_worker[r][k]
                u, residual[r, k] = _quantize_columns(m + residual.get((r, k), 0))
                quantized.append(u)
            cols = quantized[0].shape[1]
            result = np.empty_like(quantized[0])
            for w in range(2):
                per, extra = divmod(cols, 2)
                start, n = per * w + min(extra, w), per + (1 if w < extra else 0)
                if n == 0:
                    continue
                total = quantized[w][:, start:start + n] + quantized[1 - w][:, start:start + n]
                u, stripe_residual[w, k] = _quantize_columns(
                    total + stripe_residual.get((w, k), 0))
                result[:, start:start + n] = u
            shape = gradients(0, step)[k].shape
            step_sums.append(result.T.reshape(shape))
        sums.append(step_sums)
    return sums


def test_one_bit_all_reduce_is_cntks(as_openmpi_starts_them):
    got = as_openmpi_starts_them
    expected = _cntk_one_bit_sums()
    plain = [[gradients(0, s)[k] + gradients(1, s)[k] for k in range(3)] for s in range(2)]
    for g in got:
        for step in range(2):
            for k in range(3):
                mine = np.array(g["sums"][step][k], np.float32)
                np.testing.assert_allclose(mine, expected[step][k], rtol=1e-5, atol=1e-6)
                if k < 2:           # (a scalar is a column of one: its mean is itself)
                    assert not np.allclose(mine, plain[step][k], atol=1e-3)
    assert got[0]["sums"] == got[1]["sums"]         # every worker the same sums


def test_one_bit_all_reduce_alone_changes_nothing():
    import torch
    g = [torch.tensor([[1.0, -2.0], [3.0, 0.5]])]
    dist.QuantizedAllReduce(1).all_reduce(g)
    assert g[0].tolist() == [[1.0, -2.0], [3.0, 0.5]]


def test_bits_must_be_a_power_of_two_below_32():
    with pytest.raises(dist.DistributedError, match="bits=3; 1, 2, 4, 8 or 16"):
        dist.QuantizedAllReduce(3)
