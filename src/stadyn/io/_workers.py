"""Reader worker processes: decode and augment whole minibatches, hand them over in shared memory.

Design:

- Each worker owns ``prefetch`` shared-memory slots. A job (a list of sample ids with their
  sweep and position) goes to a worker through its own pipe; the worker reads and transforms the
  samples, writes the batch arrays into its next slot and answers with a small message: the
  slot's name and where each array lies in it. Nothing is pickled per sample.
- The main process copies a batch out of the slot as soon as the answer arrives and only then
  gives that worker another job, so a worker never overwrites a slot still being read.
- The main process waits on the pipes *and* the workers' process sentinels: a worker that dies
  (a crash, a kill, ``os._exit``) is reported at once as :class:`WorkerError`; an exception in a
  worker comes back as the same DataError (file, line or record kept) or as a WorkerError with
  the worker's traceback. A worker that answers nothing for ``timeout`` seconds is an error too.
- Workers start with 'forkserver' by default (else 'spawn'). Plain 'fork' is offered but
  unsafe once the parent has used OpenCV's thread pool: measured here, a forked child then
  hangs in its first ``cv2.resize`` (OpenCV's pthreads pool is not fork-safe).
"""

from __future__ import annotations

import collections
import multiprocessing as mp
import os
import multiprocessing.connection as mp_connection
import pickle
import signal
import time
import traceback
from multiprocessing import resource_tracker
from multiprocessing.shared_memory import SharedMemory
from typing import Any

import numpy as np

from .._errors import DataError, StadynError
from ._composite import Composite
from ._deserializer import StreamBatch
from ._image import require_cv2
from ._limits import get_limits, set_limits

__all__ = ["WorkerPool", "WorkerError", "default_start_method"]

_ALIGN = 64


class WorkerError(StadynError, RuntimeError):
    """A reader worker process died, hung, or raised something other than a DataError."""


_MAIN_GUARD_HINT = ("reader workers start by importing the main script, which must not start "
                    "readers itself: put the code that makes the MinibatchSource and trains "
                    "under `if __name__ == \"__main__\":`")


def default_start_method() -> str:
    methods = mp.get_all_start_methods()
    return "forkserver" if "forkserver" in methods else "spawn"


# ----------------------------------------------------------------------------- worker side


def _pack_exception(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, DataError):
        return {"kind": "data", "class": _picklable_class(exc), "reason": exc.reason,
                "path": exc.path, "line": exc.line, "record": exc.record}
    return {"kind": "other", "type": type(exc).__name__, "message": str(exc),
            "traceback": traceback.format_exc()}


def _picklable_class(exc: DataError) -> type:
    """The class of ``exc`` when the main process can be sent it (a DataError that is also a
    built-in error, CNTK's RuntimeError of a text file or of frame mode, stays one), else
    DataError."""
    try:
        pickle.dumps(type(exc))
    except (pickle.PicklingError, AttributeError, TypeError):
        return DataError
    return type(exc)


def _layout(batch: dict[str, StreamBatch]) -> tuple[list, list[np.ndarray], int]:
    entries, arrays, offset = [], [], 0
    for name, sb in batch.items():
        for kind, a in (("data", sb.data), ("lengths", sb.lengths), ("stored", sb.stored)):
            if a is None:
                continue
            a = np.ascontiguousarray(a)
            if a.dtype.hasobject:
                entries.append((name, kind, None, a))
                continue
            offset = (offset + _ALIGN - 1) // _ALIGN * _ALIGN
            entries.append((name, kind, offset, (a.shape, a.dtype.str)))
            arrays.append(a)
            offset += a.nbytes
    return entries, arrays, offset


def _write_slot(slots: list, slot: int, batch: dict[str, StreamBatch]) -> tuple[str, list]:
    entries, arrays, size = _layout(batch)
    shm = slots[slot]
    if shm is None or shm.size < size:
        if shm is not None:
            shm.close()
            shm.unlink()
        shm = SharedMemory(create=True, size=max(int(size * 1.25) + 4096, 4096))
        slots[slot] = shm
    arrays_iter = iter(arrays)
    for name, kind, offset, info in entries:
        if offset is None:
            continue
        a = next(arrays_iter)
        view = np.ndarray(a.shape, a.dtype, buffer=shm.buf, offset=offset)
        view[...] = a
        del view
    return shm.name, entries


def _parent_alive() -> bool:
    parent = mp.parent_process()
    return parent is None or parent.is_alive()


def _one_opencv_thread() -> None:
    """OpenCV (if installed) runs on this worker's one thread; the workers are the parallelism."""
    try:
        cv2 = require_cv2()
    except ImportError:     # pragma: no cover - exercised only without OpenCV
        return
    cv2.setNumThreads(1)


def _worker_main(index: int, conn, composite: Composite, seed: int, prefetch: int,
                 forked: bool, limits: dict[str, int]) -> None:
    """Serve jobs until told to stop (None), the pipe closes, or the parent dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    set_limits(**limits)                     # the main process's, not the defaults
    if not forked:          # in a plain fork this call itself can hang
        _one_opencv_thread()
    slots: list[SharedMemory | None] = [None] * prefetch
    count = 0
    composite.defer_error_counts()      # (the main process counts them: WorkerPool.wait)
    try:
        while True:
            if not conn.poll(1.0):
                if not _parent_alive():
                    return
                continue
            try:
                job = conn.recv()
            except EOFError:
                return
            if job is None:
                return
            job_id, ids, sweeps, positions, chunks, keep = job
            slot = count % prefetch
            count += 1
            try:
                if chunks is not None:      # (read whole first, as CNTK 2.7 loads them)
                    composite.load_chunks(chunks)
                batch = composite.materialize(ids, sweeps, positions, seed)
                name, entries = _write_slot(slots, slot, batch)
                message = ("ok", job_id, slot, name, entries, composite.deferred_errors())
            except Exception as exc:  # noqa: BLE001 - every failure goes back to the main process
                message = ("err", job_id, _pack_exception(exc), composite.deferred_errors())
            finally:    # (the other workers read the rest of those chunks: keep no parses,
                if chunks is not None and not keep:     # unless this worker reads them all)
                    composite.release_chunks()
            try:
                conn.send(message)
            except (BrokenPipeError, ConnectionResetError):
                return
    finally:
        for shm in slots:
            if shm is not None:
                shm.close()
                shm.unlink()


# ------------------------------------------------------------------------------- main side


def _in_load_order(met: list, load_order) -> list:
    """``Composite.deferred_errors`` of several jobs as one list, each deserializer's
    records sorted by the place of the chunk they were met reading whole in ``load_order``
    (records met otherwise, chunk None, after those, in the order given)."""
    rank = {int(c): k for k, c in enumerate(load_order)}
    joined: dict[int, list] = {}
    for k, records in met:
        joined.setdefault(k, []).extend(records)
    return [(k, sorted(records, key=lambda r: rank.get(r[3], len(rank))))
            for k, records in sorted(joined.items())]


def _unlink(name: str) -> None:
    try:
        shm = SharedMemory(name=name)
    except FileNotFoundError:
        return
    shm.close()
    shm.unlink()


def _unread_slot_names(conn) -> set[str]:
    names = set()
    try:
        while conn.poll():
            message = conn.recv()
            if message[0] == "ok":
                names.add(message[3])
    except (EOFError, OSError):
        pass
    return names


class _Worker:
    def __init__(self, index: int, process, conn):
        self.index, self.process, self.conn = index, process, conn
        self.in_flight: collections.deque[int] = collections.deque()
        self.slots: dict[int, SharedMemory] = {}


class WorkerPool:
    """Worker processes that materialize jobs of a :class:`Composite`; see the module docstring."""

    def __init__(self, composite: Composite, seed: int, num_workers: int, prefetch: int = 2,
                 start_method: str | None = None, timeout: float = 300.0):
        if num_workers < 1:
            raise ValueError("a worker pool needs at least one worker")
        if prefetch < 1:
            raise ValueError("prefetch must be >= 1")
        if getattr(mp.current_process(), "_inheriting", False):
            # forkserver and spawn import the main script in each new process: a script that
            # starts a reader at import time would start workers from its workers
            raise WorkerError(_MAIN_GUARD_HINT)
        method = start_method or default_start_method()
        ctx = mp.get_context(method)
        if method == "forkserver":
            ctx.set_forkserver_preload(["stadyn.io._workers"])
        resource_tracker.ensure_running()
        self.prefetch, self.timeout = prefetch, float(timeout)
        self._pid = os.getpid()       # (a forked copy of the pool is not theirs to stop)
        self._pending: collections.deque = collections.deque()
        self._done: dict[int, Any] = {}
        self._composite = composite     # (counts the malformed inputs the workers skipped)
        self._met: dict[int, list] = {}     # job -> the malformed inputs its worker skipped
        self._cancelled: set[int] = set()
        self._owner: dict[int, _Worker] = {}
        self._failure: BaseException | None = None
        self._answered = False                # has any worker sent a result yet?
        self.workers: list[_Worker] = []
        try:
            for index in range(num_workers):
                parent_conn, child_conn = ctx.Pipe(duplex=True)
                process = ctx.Process(target=_worker_main, name=f"stadyn-reader-{index}",
                                      args=(index, child_conn, composite, seed, prefetch,
                                            method == "fork", get_limits()),
                                      daemon=True)
                process.start()
                child_conn.close()
                self.workers.append(_Worker(index, process, parent_conn))
        except BaseException:
            self.close()
            raise

    # -- jobs

    def submit(self, job_id: int, ids: np.ndarray, sweeps: np.ndarray,
               positions: np.ndarray, chunks: np.ndarray | None = None,
               worker: int | None = None) -> None:
        """Queue a job; it goes to a worker as soon as one has a free slot.  ``chunks``: the
        chunks the worker has the data read whole first (``Composite.load_chunks``), so a bad
        line in them raises from this job.  ``worker``: the worker that must read it (it
        reads every sequence of the chunks it is given, so it keeps what reading them whole
        parsed until it reads them); jobs wait in order for their worker."""
        self._pending.append((job_id, ids, sweeps, positions, chunks, worker))
        self._dispatch()

    def cancel(self, job_ids) -> None:
        """Forget jobs whose results are no longer wanted."""
        wanted = set(job_ids)
        self._pending = collections.deque(j for j in self._pending if j[0] not in wanted)
        for job_id in wanted:
            self._met.pop(job_id, None)
            if self._done.pop(job_id, None) is None and job_id in self._owner:
                self._cancelled.add(job_id)

    def _dispatch(self) -> None:
        while self._pending:
            target = self._pending[0][5]
            worker = min(self.workers, key=lambda w: len(w.in_flight)) if target is None \
                else self.workers[target]
            if len(worker.in_flight) >= self.prefetch:
                return
            job = self._pending.popleft()
            try:
                worker.conn.send(job[:5] + (target is not None,))
            except (BrokenPipeError, ConnectionResetError, OSError):
                self._pending.appendleft(job)
                self._check_alive()
                raise self._dead(worker)
            worker.in_flight.append(job[0])
            self._owner[job[0]] = worker

    def wait(self, job_id: int) -> dict[str, StreamBatch]:
        """The result of a submitted job; raises what the worker raised, or WorkerError."""
        result, met = self._wait(job_id)
        # (the malformed inputs its worker skipped count here, in the order of the jobs
        # read, as one process counts them: a DataError past the count)
        self._composite.count_errors(met)
        if isinstance(result, BaseException):
            raise result
        return result

    def wait_all(self, job_ids, load_order) -> list[dict[str, StreamBatch]]:
        """The results of jobs that read one minibatch together, each worker the chunks it
        was given whole first (one job a worker): the malformed inputs they skipped count
        in ``load_order``, the order of the chunks one process loads for the minibatch
        (CNTK 2.7's, ``BlockRandomizer::LoadDataChunks``: the last one named is the one
        past ``maxErrors``), then those met reading, in job order; then the first job that
        raised raises."""
        results, met = [], []
        for job_id in job_ids:
            result, skipped = self._wait(job_id)
            results.append(result)
            met.extend(skipped)
        self._composite.count_errors(_in_load_order(met, load_order))
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return results

    def _wait(self, job_id: int) -> tuple[Any, list]:
        """A submitted job's result (what its worker raised, as an exception) and the
        malformed inputs its worker skipped uncounted (``Composite.deferred_errors``)."""
        if self._failure is not None:
            raise self._failure
        deadline = time.monotonic() + self.timeout
        while job_id not in self._done:
            if job_id not in self._owner and not any(j[0] == job_id for j in self._pending):
                raise KeyError(f"job {job_id} was never submitted")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._failure = WorkerError(
                    f"no minibatch from the reader workers in {self.timeout:g} s (a worker is "
                    f"stuck; pass worker_timeout= to wait longer)")
                raise self._failure
            conns = [w.conn for w in self.workers]
            sentinels = [w.process.sentinel for w in self.workers]
            ready = mp_connection.wait(conns + sentinels, timeout=min(remaining, 1.0))
            for worker in self.workers:
                if worker.conn in ready:
                    self._receive(worker)
            if any(w.process.sentinel in ready for w in self.workers):
                for worker in self.workers:  # drain answers sent before a death
                    while worker.conn.poll():
                        self._receive(worker)
                if job_id not in self._done:
                    self._check_alive()
        return self._done.pop(job_id), self._met.pop(job_id, [])

    def _receive(self, worker: _Worker) -> None:
        try:
            message = worker.conn.recv()
        except (EOFError, OSError):
            self._check_alive()
            raise self._dead(worker)
        job_id = message[1]
        self._answered = True
        if message[0] == "ok":
            _, _, slot, name, entries, met = message
            result: Any = self._read_slot(worker, slot, name, entries)
        else:
            result, met = self._unpack_exception(worker, message[2]), message[3]
        if worker.in_flight and worker.in_flight[0] == job_id:
            worker.in_flight.popleft()
        else:
            worker.in_flight.remove(job_id)
        self._owner.pop(job_id, None)
        if job_id in self._cancelled:
            self._cancelled.discard(job_id)
        else:
            self._done[job_id] = result
            if met:
                self._met[job_id] = met
        self._dispatch()

    def _read_slot(self, worker: _Worker, slot: int, name: str, entries: list) -> dict:
        shm = worker.slots.get(slot)
        if shm is None or shm.name != name:
            if shm is not None:
                shm.close()
            shm = SharedMemory(name=name)
            worker.slots[slot] = shm
        data: dict[str, dict[str, np.ndarray]] = {}
        for stream, kind, offset, info in entries:
            if offset is None:
                array = info
            else:
                shape, dtype = info
                view = np.ndarray(shape, np.dtype(dtype), buffer=shm.buf, offset=offset)
                array = view.copy()
                del view
            data.setdefault(stream, {})[kind] = array
        return {s: StreamBatch(d["data"], d.get("lengths"), d.get("stored"))
                for s, d in data.items()}

    def _unpack_exception(self, worker: _Worker, info: dict) -> BaseException:
        if info["kind"] == "data":     # (its class's own __init__ may take other arguments)
            err = info["class"].__new__(info["class"])
            DataError.__init__(err, info["reason"], info["path"], info["line"], info["record"])
            return err
        return WorkerError(f"reader worker {worker.index} (pid {worker.process.pid}) raised "
                           f"{info['type']}: {info['message']}\n\nworker traceback:\n"
                           f"{info['traceback']}")

    def _dead(self, worker: _Worker) -> WorkerError:
        worker.process.join(0.1)
        code = worker.process.exitcode
        how = f"was killed by signal {-code}" if code is not None and code < 0 else \
            f"exited with code {code}"
        when = " while decoding minibatches"
        if code == 1 and not self._answered:
            when = (f" before its first minibatch (its error is printed above; a common cause: "
                    f"{_MAIN_GUARD_HINT})")
        self._failure = WorkerError(f"reader worker {worker.index} (pid {worker.process.pid}) "
                                    f"{how}{when}")
        return self._failure

    def _check_alive(self) -> None:
        for worker in self.workers:
            if not worker.process.is_alive():
                raise self._dead(worker)

    # -- shutdown

    def close(self) -> None:
        """Stop the workers (politely, then by force) and release shared memory.  In a
        process forked after the pool was made (another pool's 'fork' worker, which may
        collect a dropped source it inherited), a no-op: the workers are the maker's."""
        workers, self.workers = self.workers, []
        if os.getpid() != getattr(self, "_pid", os.getpid()):
            return
        for worker in workers:
            try:
                worker.conn.send(None)
            except (BrokenPipeError, ConnectionResetError, OSError):
                pass
        # A healthy worker stops within one batch; after a failure do not wait for stuck ones.
        deadline = time.monotonic() + (0.5 if self._failure is not None else 5.0)
        for worker in workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.terminate()
                worker.process.join(1.0)
            if worker.process.is_alive():  # pragma: no cover - a worker ignoring SIGTERM
                worker.process.kill()
                worker.process.join(1.0)
            clean = worker.process.exitcode == 0
            for shm in worker.slots.values():
                shm.close()
                if not clean:
                    _unlink(shm.name)
            if not clean:  # slots it reported in answers never read
                known = {s.name for s in worker.slots.values()}
                for name in _unread_slot_names(worker.conn) - known:
                    _unlink(name)
            worker.slots.clear()
            worker.conn.close()
        self._done.clear()
        self._met.clear()
        self._pending.clear()

    def __del__(self) -> None:  # pragma: no cover - normal paths close explicitly
        if getattr(self, "workers", None):
            self.close()
