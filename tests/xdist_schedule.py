"""``--dist worksteal`` that keeps a test module's tests on one worker where it can.

pytest-xdist's work stealing hands each worker a contiguous run of the (long-first) collection
and, when a worker runs out, moves the last half of the longest queue to it.  Both cuts fall
wherever the half lands, usually inside a test module: that module's tests then run on both
workers, and each builds the module's module-scoped fixtures (a training, a multi-process job,
a program run: 5-40 s of CPU each in this suite).  ``ModuleWorkStealing`` moves each cut to the
module boundary nearest to it, and cuts inside a module only when the part that may be handed
over is one module, and never inside the modules named in ``whole`` (node-id prefixes: modules
whose module fixture runs a multi-process job, ``ONE_WORKER`` in ``tests/conftest.py``): an idle
worker then finishes instead.  Only where the work is handed out changes: every test still runs
once.

It also counts, per module, the workers that ran its tests; ``tests/conftest.py`` prints the
modules that ran on more than one (``split modules`` in the summary of ``make test``).

Example (two workers; ``a.py`` has 3 tests, ``b.py`` 5: the first half ends at ``a.py``'s end,
not inside ``b.py``)::

    sched = ModuleWorkStealing(config)          # config: xdist's, with two workers (--tx)
    # collection a.py::t0..t2, b.py::t0..t4  ->  worker 1 gets [0, 1, 2], worker 2 [3..7]
"""

from __future__ import annotations

from xdist.scheduler.worksteal import MIN_PENDING, WorkStealingScheduling


def module_of(nodeid: str) -> str:
    """The test module a node id belongs to (``tests/x/test_y.py::test_z[1]`` ->
    ``tests/x/test_y.py``)."""
    return nodeid.split("::", 1)[0]


class ModuleWorkStealing(WorkStealingScheduling):
    """Work stealing whose hand-outs and steals cut the queues between two test modules."""

    def __init__(self, config, log=None, whole: tuple[str, ...] = ()):
        super().__init__(config, log)
        self.whole = tuple(whole)
        self.workers_of_module: dict[str, set[str]] = {}
        self.steals = 0

    def _module(self, index: int) -> str:
        assert self.collection is not None
        return module_of(self.collection[index])

    def module_cut(self, queue: list[int], cut: int, lowest: int) -> int | None:
        """Where to cut ``queue`` (``queue[:cut]`` kept, ``queue[cut:]`` handed over): the
        module boundary nearest ``cut`` at ``lowest`` or above (the later one on a tie), or
        ``cut`` itself when ``queue[lowest - 1:]`` is all one module (None if that module is
        one to keep whole)."""
        best = None
        for at in range(max(lowest, 1), len(queue)):
            if self._module(queue[at - 1]) != self._module(queue[at]):
                if best is None or abs(at - cut) <= abs(best - cut):
                    best = at
                elif at > cut:
                    break
        if best is not None:
            return best
        if queue and self._module(queue[-1]).startswith(self.whole):
            return None
        return cut

    def _send_tests(self, node, num: int) -> None:
        if 0 < num < len(self.pending):
            cut = self.module_cut(self.pending, num, 1)
            num = len(self.pending) if cut is None else cut
        super()._send_tests(node, num)

    def check_schedule(self) -> None:
        """xdist's ``check_schedule``: hand out what nobody holds, else take work for an idle
        worker from the longest queue, that queue cut at a module boundary."""
        up = [(node, pending) for node, pending in self.node2pending.items()
              if not node.shutting_down]
        idle = [node for node, pending in up if len(pending) < MIN_PENDING]
        if not idle:
            return
        if self.pending:
            for i, node in enumerate(idle):
                self._send_tests(node, len(self.pending) // (len(idle) - i))
            idle = [node for node, pending in up if len(pending) < MIN_PENDING]
            if not idle:
                return
        if self.steal_requested_from_node is not None:
            return                          # one steal at a time, as xdist
        victim, queue = max(up, key=lambda entry: len(entry[1]), default=(None, []))
        give = min(len(queue) // 2, max(0, len(queue) - MIN_PENDING))
        cut = self.module_cut(queue, len(queue) - give, MIN_PENDING) if give else None
        if cut is None:
            for node in idle:               # nothing left to share: let them finish
                node.shutdown()
            return
        self.steals += 1
        victim.send_steal(queue[cut:])
        self.steal_requested_from_node = victim

    def mark_test_complete(self, node, item_index: int, duration=None) -> None:
        self.workers_of_module.setdefault(self._module(item_index), set()).add(node.gateway.id)
        super().mark_test_complete(node, item_index, duration)

    def split_modules(self) -> list[str]:
        """The modules whose tests ran on more than one worker, in collection order."""
        return [module for module, workers in self.workers_of_module.items()
                if len(workers) > 1]
