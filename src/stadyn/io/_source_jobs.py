"""How a :class:`~stadyn.io.MinibatchSource` reads through worker processes: it cuts the
positions ahead of the reader into jobs, submits them to the :class:`WorkerPool` (prefetching as
many as the workers hold, guessing the next request has the same size) and joins the rows of
the jobs a minibatch spans.  Rows are taken by position, so a wrong guess costs only a re-cut,
and the batches are the same with any number of workers.  A mix-in of ``MinibatchSource``
(``_source.py``), which owns the state it reads: the plan (``_plan``, ``_plan_at``), the
position, the composite and the seed."""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from ._deserializer import INVALID_ROWS, StreamBatch, concat_batches
from ._workers import WorkerPool

__all__ = ["Job", "WorkerJobs"]


@dataclass
class Job:
    """A range of global positions [start, end) submitted to the worker pool: this
    partition's positions in it, the rows already handed out and, once it arrived, the
    decoded result."""
    job_id: int
    start: int  # global positions [start, end)
    end: int
    positions: np.ndarray  # this partition's positions in the range
    consumed: int = 0  # rows already handed out
    result: dict[str, StreamBatch] | None = None
    chunks: np.ndarray | None = None  # the chunks its worker reads whole first
    # (one job a worker) the chunks the group of jobs it is one of loads, in load order
    load_order: np.ndarray | None = None


def _without_unstored(batch: StreamBatch) -> StreamBatch:
    """``batch`` with no ``stored`` where its rows store no zero (rows of a job that read
    more than one minibatch: a read of these rows alone gives None)."""
    if batch.stored is None or batch.stored.any():
        return batch
    return StreamBatch(batch.data, batch.lengths)


class WorkerJobs:
    """The worker pipeline of ``MinibatchSource`` (see the module docstring)."""

    def _partition_positions(self, start: int, samples: int, end: int, count: int,
                             index: int) -> np.ndarray:
        """The positions from ``start`` (``samples`` counted before it) to ``end`` a plan
        reads (``_plan_positions``) that are partition ``index``'s of ``count``."""
        positions = self._plan_positions(start, samples, end)
        return positions if count == 1 else positions[positions % count == index]

    def _job(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(sample ids, sweeps, positions within their sweep) of global positions."""
        n = self._sweep_length
        return self._sample_ids(positions), positions // n, positions % n

    def _ensure_pool(self) -> WorkerPool:
        if self._pool is None:
            prefetch, method, timeout = self._pool_args
            self._pool = WorkerPool(self._composite, self._seed, self.num_workers, prefetch,
                                    method, timeout)
            self._finalizer = weakref.finalize(self, self._pool.close)
        return self._pool

    def _reset_jobs(self) -> None:
        if self._pool is not None and self._jobs:
            self._pool.cancel([j.job_id for j in self._jobs if j.result is None])
        sent = self.__dict__.get("_chunks_sent")
        for job in self._jobs:     # (a cancelled job's chunks go with a later job)
            if job.result is None and job.chunks is not None and sent is not None:
                sent.difference_update(job.chunks.tolist())
        self._jobs.clear()
        self._plan_at = None
        self._plan_key = None

    def _owners(self, ids: np.ndarray) -> np.ndarray | None:
        """The worker that reads each of sample ``ids`` where randomized data is read in
        whole chunks by several workers: the one owning its chunk (chunk ``% num_workers``),
        which reads that chunk whole once and keeps the parses for its own reads (a
        randomized minibatch's rows come from many chunks, so the workers share it); else
        None: any worker reads any job (in file order a minibatch's rows are a chunk's, so
        owners would read one after another)."""
        if self.num_workers < 2 or not self._randomize or \
                self._composite.randomizer != "block" or \
                not getattr(self._composite, "loads_whole_chunks", False):
            return None
        ends = self.__dict__.get("_owner_ends")
        if ends is None:
            ends = self._owner_ends = np.cumsum(self._composite.chunk_sizes())
        return np.searchsorted(ends, ids, side="right") % self.num_workers

    def _chunk_rest(self, position: int, count: int) -> int | None:
        """The samples from ``position`` to the end of its chunk where data read in file
        order is read in whole chunks (a job then reads the rest of a chunk: the worker that
        reads the chunk whole reads every row of it from what it parsed, each chunk parsed
        once, the workers reading different chunks at once); else None (a job a minibatch)."""
        if self._randomize or count != 1 or self._counted is not None or \
                self._composite.randomizer != "block" or \
                not getattr(self._composite, "loads_whole_chunks", False):
            return None
        ends = self.__dict__.get("_chunk_ends")
        if ends is None:
            ends = self._chunk_ends = np.cumsum(self._composite.chunk_sizes())
        within = position % self._sweep_length
        chunk = int(np.searchsorted(ends, within, side="right"))
        if chunk >= len(ends):
            return None
        stop = position - within + int(ends[chunk])
        if self._lengths is None:
            return max(stop - position, 1)
        return max(int(self._lengths[self._sample_ids(np.arange(position, stop))].sum()), 1)

    def _queue_job(self, n: int, count: int, index: int) -> bool:
        position, samples = self._plan_at
        rest = self._chunk_rest(position, count)
        end, taken = self._plan(position, samples, n if rest is None else rest)
        if end == position:
            return False
        positions = self._partition_positions(position, samples, end, count, index)
        chunks = self._chunks_to_send(positions)
        ids, sweeps, within = self._job(positions)
        owners = self._owners(ids) if count == 1 else None
        pool = self._ensure_pool()
        # (read in whole chunks by several workers: one job a worker, its own chunks' rows
        # and the chunks it reads whole first, so each chunk is parsed once)
        for worker in range(self.num_workers) if owners is not None else (None,):
            mine = slice(None) if worker is None else owners == worker
            own = chunks if chunks is None or worker is None else \
                chunks[chunks % self.num_workers == worker]
            own = None if own is None or not len(own) else own
            if worker is not None and not mine.any() and own is None:
                continue
            job = Job(self._next_job_id, position, end, positions[mine], chunks=own,
                      load_order=None if worker is None else chunks)
            self._next_job_id += 1
            self._jobs.append(job)
            pool.submit(job.job_id, ids[mine], sweeps[mine], within[mine], own, worker)
        self._plan_at = (self._counted_start(end, samples + taken), samples + taken)
        return True

    def _gather_from_workers(self, end: int, n: int, count: int,
                             index: int) -> dict[str, StreamBatch]:
        if self._plan_key != (count, index):
            self._reset_jobs()
            self._plan_key = (count, index)
        if not self._jobs:
            self._plan_at = (self._position, self._samples)
        while self._plan_at[0] < end:
            self._queue_job(n, count, index)
        pieces: list[dict[str, StreamBatch]] = []
        taken: list[np.ndarray] = []     # (the positions of each piece's rows)
        pool = self._ensure_pool()
        k = 0       # (one job a worker: jobs with one start and end, read alike)
        while k < len(self._jobs) and self._jobs[k].start < end:
            job = self._jobs[k]
            if job.result is None and job.load_order is not None:
                # (one job a worker: the inputs they skipped count in CNTK's load order)
                group = [j for j in self._jobs if j.load_order is job.load_order]
                for j, result in zip(group, pool.wait_all([j.job_id for j in group],
                                                          job.load_order)):
                    j.result = result
            elif job.result is None:
                job.result = pool.wait(job.job_id)
            stop = int(np.searchsorted(job.positions, end))
            if stop > job.consumed:
                pieces.append({s: _without_unstored(b.take(job.consumed, stop))
                               for s, b in job.result.items()})
                taken.append(job.positions[job.consumed:stop])
            job.consumed = stop
            if job.end <= end:
                self._jobs.popleft()
            else:       # (read on by the next minibatch, as the other workers' parts of it)
                k += 1
        # Prepare ahead, guessing that the next request has the same size (a wrong guess only
        # costs a re-cut: rows are taken by position).
        limit = self.num_workers * self._pool_args[0]
        if self._chunk_rest(self._plan_at[0], count) is not None:
            limit = self.num_workers + 1    # (jobs of whole chunks: one a worker ahead)
        while len(self._jobs) < limit and self._queue_job(n, count, index):
            pass
        if not pieces:  # this partition's share of the minibatch is empty
            return self._composite.materialize(*self._job(np.zeros(0, np.int64)), self._seed)
        if any(INVALID_ROWS in p for p in pieces):  # (a piece with no rows left out has
            pieces = [p if INVALID_ROWS in p else   # no marks: none of its rows are marked)
                      {**p, INVALID_ROWS: StreamBatch(np.zeros(next(iter(p.values())).rows,
                                                               dtype=bool))}
                      for p in pieces]
        joined = {s: concat_batches([p[s] for p in pieces]) for s in pieces[0]}
        at = np.concatenate(taken)
        if len(at) > 1 and (np.diff(at) < 0).any():    # (one job a worker: rows by position)
            order = np.argsort(at, kind="stable")
            joined = {s: b.rows_at(order) for s, b in joined.items()}
        return joined
