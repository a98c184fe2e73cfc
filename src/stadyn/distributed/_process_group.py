"""Joining and leaving the process group: :func:`init` from the launcher's environment,
:func:`shutdown`, and the exit handler that tears the group down while the interpreter is whole.

``init()`` reads what ``torchrun`` (and :func:`stadyn.distributed.run_workers`) set: ``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT``; under
OpenMPI's ``mpiexec`` (none of them set) its ``OMPI_COMM_WORLD_RANK``, ``..._SIZE``,
``..._LOCAL_RANK`` and ``..._LOCAL_SIZE``, the workers meeting at a file in the job's session
folder unless ``MASTER_ADDR`` and ``MASTER_PORT`` are given.  Without
``WORLD_SIZE`` (or with ``WORLD_SIZE=1``) it does nothing and the process is rank 0 of 1, so the
same script runs alone or under a launcher.  The backend is Gloo on CPUs; where CUDA is
available it is ``cpu:gloo,cuda:nccl`` (NCCL for CUDA tensors, Gloo for CPU ones).

The rendezvous writes this worker's heartbeat (:mod:`._collectives`), which sits below this
module: the environment (:mod:`._env`), then the collectives, then joining the group.
"""

from __future__ import annotations

import atexit
import datetime
import gc
import hashlib
import os
import sys
import tempfile

import torch
import torch.distributed as dist

from ._collectives import beat, current_sequence, describe_peers, last_state
from ._env import (_LAUNCH_HINT, DistributedError, _default_backend, _env_int, _groups, _seconds,
                   _timeout, local_rank, under_mpiexec)

__all__ = ["init", "shutdown"]


def init(backend: str | None = None, timeout: float | datetime.timedelta | None = None) -> bool:
    """Join the process group the launcher describes in the environment.

    Returns True when this process is one of several workers, False when it runs alone (no
    ``WORLD_SIZE``, or ``WORLD_SIZE=1``: then nothing is set up and every collective of
    :mod:`stadyn.distributed` is a no-op).  Calling it again is harmless; a group someone else
    initialised (``torch.distributed.init_process_group``) is adopted.

    Args:
        backend: ``'gloo'``, ``'nccl'`` or torch's ``'cpu:gloo,cuda:nccl'`` form; by default
            Gloo, plus NCCL for CUDA tensors where CUDA is available (``STADYN_DIST_BACKEND``
            overrides).
        timeout: seconds (or a timedelta) a collective waits for its peers before failing with
            an error naming this rank (default: ``STADYN_DIST_TIMEOUT``, else 600 s).

    Example:
        >>> import stadyn.distributed as dist
        >>> dist.init()          # no launcher here: one process
        False
        >>> dist.rank(), dist.size(), dist.is_main()
        (0, 1, True)
    """
    if dist.is_available() and dist.is_initialized():
        if timeout is not None:
            _timeout[0] = _seconds(timeout)
        return dist.get_world_size() > 1
    seconds = _seconds(timeout)
    _timeout[0] = seconds
    world = _env_int("WORLD_SIZE")
    if world is None or world == 1:
        return False
    if world < 1:
        raise DistributedError(f"WORLD_SIZE={world}: expected a positive number of workers")
    if not dist.is_available():
        raise DistributedError("this torch build has no torch.distributed")
    init_method, where = _rendezvous(world)
    r = _env_int("RANK")
    if not 0 <= r < world:
        raise DistributedError(f"RANK={r} is outside 0..{world - 1} (WORLD_SIZE={world})")
    chosen = backend or os.environ.get("STADYN_DIST_BACKEND") or _default_backend()
    if "nccl" in chosen and torch.cuda.is_available():
        torch.cuda.set_device(local_rank() % max(1, torch.cuda.device_count()))
    beat(0, "in", "init (rendezvous)")
    try:
        dist.init_process_group(chosen, init_method=init_method, rank=r, world_size=world,
                                timeout=datetime.timedelta(seconds=seconds))
    except Exception as exc:  # noqa: BLE001 - rendezvous failures come in many types
        beat(0, "failed", "init")
        raise DistributedError(
            f"rank {r} of {world}: could not join the process group at {where} with backend "
            f"{chosen!r} within {seconds:g} s ({type(exc).__name__}: "
            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}){describe_peers(r)}"
        ) from exc
    beat(0, "out", "init")
    _joined[0] = True
    sys.excepthook = _noting_uncaught(sys.excepthook)
    atexit.register(_leave_at_exit)
    return True


def _rendezvous(world: int) -> tuple[str, str]:
    """Where the workers meet: ``(init_method, a description for errors)``.  ``MASTER_ADDR``
    and ``MASTER_PORT`` when they are set (torchrun, Stadyn's launcher, or given to
    ``mpiexec -x``); under OpenMPI's ``mpiexec`` without them, a file in the launch's session
    folder (:func:`_session_folder`), else one in the temporary folder named after the job and
    the launch (:func:`_launch_tag`); every worker on this machine (OpenMPI's
    ``OMPI_COMM_WORLD_LOCAL_SIZE`` is the world size)."""
    addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    if addr and port:
        if _env_int("RANK") is None:
            raise DistributedError(f"WORLD_SIZE={world} but RANK is not set: {_LAUNCH_HINT}")
        return "env://", f"{addr}:{port}"
    if under_mpiexec():
        local = _env_int("LOCAL_WORLD_SIZE")
        if local is not None and local != world:
            raise DistributedError(
                f"mpiexec started {world} workers on {world // max(local, 1)} or more "
                "machines: the workers of several machines meet at a TCP address, set "
                "MASTER_ADDR (the host of rank 0) and MASTER_PORT (a free port) for every "
                "worker (mpiexec -x MASTER_ADDR=host0 -x MASTER_PORT=29500 ...)")
        job = os.environ.get("OMPI_MCA_ess_base_jobid") or os.environ.get("PMIX_NAMESPACE")
        folder = _session_folder()
        tag = "" if folder else _launch_tag()
        if not job or not (folder or tag):
            raise DistributedError(
                f"mpiexec started {world} workers but gave no job id or no folder of this "
                "launch's own (OMPI_MCA_ess_base_jobid or PMIX_NAMESPACE; "
                "OMPI_MCA_orte_jobfam_session_dir, PMIX_SERVER_TMPDIR, PMIX_SERVER_URI* or "
                "OMPI_MCA_orte_hnp_uri): "
                "set MASTER_ADDR and MASTER_PORT for every worker (mpiexec -x "
                f"MASTER_ADDR=127.0.0.1 -x MASTER_PORT=29500 ...), or {_LAUNCH_HINT}")
        path = os.path.join(folder or tempfile.gettempdir(),
                            f"stadyn-rendezvous-{_file_name(job)}{tag}")
        return "file://" + path, f"{path} (mpiexec's job {job})"
    missing = [name for name in ("RANK", "MASTER_ADDR", "MASTER_PORT")
               if not os.environ.get(name)]
    raise DistributedError(f"WORLD_SIZE={world} but {', '.join(missing)} "
                           f"{'is' if len(missing) == 1 else 'are'} not set: {_LAUNCH_HINT}")


def _session_folder() -> str | None:
    """The folder OpenMPI's launcher made for this launch and removes at its end, shared by the
    workers of a machine; None where it names none.

    OpenMPI up to 4 (ORTE) sets ``OMPI_MCA_orte_jobfam_session_dir``
    (``/tmp/ompi.HOST.UID/pid.MPIEXEC_PID``, as OpenMPI 4.1.4's ``mpiexec`` sets it).  OpenMPI 5
    (PRRTE 3.0) sets no ``OMPI_MCA_orte_*``: its PMIx server is given PRRTE's session folder of
    the launch (``TMPDIR/prte.HOST.PID``; PRRTE v3.0.14 src/prted/pmix/pmix_server.c:716,
    src/util/session_dir.c:106-140) and passes it to each worker as ``PMIX_SERVER_TMPDIR``
    (OpenPMIx v5.0.11 src/mca/ptl/base/ptl_base_fns.c:229).  That variable names the shared
    temporary folder itself where a PMIx server was given none (then it equals
    ``PMIX_SYSTEM_TMPDIR``): not the launch's own, so not used."""
    orte = os.environ.get("OMPI_MCA_orte_jobfam_session_dir")
    if orte and os.path.isdir(orte):
        return orte
    server = os.environ.get("PMIX_SERVER_TMPDIR")
    if not server or not os.path.isdir(server):
        return None
    shared = {os.path.realpath(tempfile.gettempdir())}
    if os.environ.get("PMIX_SYSTEM_TMPDIR"):
        shared.add(os.path.realpath(os.environ["PMIX_SYSTEM_TMPDIR"]))
    return None if os.path.realpath(server) in shared else server


def _file_name(job: str) -> str:
    """The job id as part of a file name (OpenMPI 5's PMIx namespace, ``prterun-HOST-PID@1``,
    holds characters a file name should not)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in job)


def _launch_tag() -> str:
    """``-<tag>`` naming this ``mpiexec`` launch, for the rendezvous file in the shared temporary
    folder (where OpenMPI names no session folder of the launch): the PMIx server's addresses
    (``PMIX_SERVER_URI*``), else the address of ``mpiexec`` itself (ORTE's
    ``OMPI_MCA_orte_hnp_uri``), which every worker of a machine shares and a new launch
    changes (a port of its own), so that a file a crashed job of the same job id left there is
    never joined (torch's file store would hang on it); empty where mpiexec gives neither."""
    uris = sorted(v for k, v in os.environ.items() if k.startswith("PMIX_SERVER_URI"))
    if not uris and os.environ.get("OMPI_MCA_orte_hnp_uri"):
        uris = [os.environ["OMPI_MCA_orte_hnp_uri"]]
    return "-" + hashlib.sha1("\n".join(uris).encode()).hexdigest()[:12] if uris else ""


_uncaught = [False]     # did the script end with an uncaught exception?
_joined = [False]       # did init() join a process group in this process?


def _noting_uncaught(hook):
    """``sys.excepthook`` that first records that the script failed (see _leave_at_exit), in
    the heartbeat too: its exit handlers will tear the process group down and make its peers'
    collectives fail, and the launcher must not blame them."""
    def excepthook(kind, value, tb):
        _uncaught[0] = True
        try:
            if last_state() != "failed":     # a failed collective: a peer is to blame
                beat(current_sequence(), "raised", getattr(kind, "__name__", "an exception"))
        except Exception:  # noqa: BLE001 - never hide the exception being reported
            pass
        hook(kind, value, tb)
    return excepthook


def _leave_at_exit() -> None:
    """Tear the process group down while the interpreter is still whole.

    Left to interpreter finalization, Gloo's worker threads can release the last tensors of
    finished asynchronous work while the interpreter is being torn down and abort the process
    ("terminate called without an active exception", SIGABRT) after a successful run.  This
    drops Stadyn's group handles, destroys the process group and collects garbage first.  A
    worker whose script ended without an uncaught exception also records "finished" in its
    heartbeat before the teardown, so the launcher can tell such an abort from a failure.
    That holds too when the script left the group itself (:func:`shutdown`, CNTK's
    ``Communicator.finalize()``): Gloo's threads can abort the process at exit all the same.
    """
    if not _joined[0]:
        return
    if not _uncaught[0]:
        beat(current_sequence(), "finished", "the script ended")
    if not (dist.is_available() and dist.is_initialized()):
        gc.collect()
        return
    try:
        shutdown()
    except Exception:  # noqa: BLE001 - exiting anyway; never turn success into failure
        pass
    gc.collect()


def shutdown() -> None:
    """Leave the process group (at the end of a script; optional)."""
    _groups.clear()
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
