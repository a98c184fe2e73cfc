"""``--dist loadfile`` handing out whole test modules, longest first (``make test``).

pytest-xdist's ``loadfile`` sends each worker one test module at a time, so a module's
module-scoped fixtures (a training, a multi-process job, a program run: 5-40 s of CPU each in
this suite) are built by one worker; but it sends the modules with the most tests first.
``ModuleQueue`` sends them in collection order instead, which ``tests/conftest.py`` sorts
longest first (``suite_order.module_order``, by ``tests/durations.json``): the long modules
start at once, and the last to start are the shortest, so both workers end within seconds of
each other.  Only where the work is handed out changes: every test still runs once.

It counts, per module, the workers that ran its tests, and when each worker finished its last
test; ``tests/conftest.py`` prints both in the summary of ``make test``.

Example (two workers; the collection ``c.py`` (2 tests), ``a.py`` (3), ``b.py`` (5), sorted
longest first): worker 1 is sent ``c.py``, worker 2 ``a.py``; worker 1, down to its last two
tests, is sent ``b.py`` as well::

    sched = ModuleQueue(config)                 # config: xdist's, with two workers (--tx)
"""

from __future__ import annotations

import time

from xdist.scheduler.loadfile import LoadFileScheduling

from suite_order import module_of


class ModuleQueue(LoadFileScheduling):
    """``--dist loadfile`` (``make test``) that hands out the modules in collection order
    (``module_order``: longest first) instead of xdist's most-tests first, one whole module
    to a worker at a time, the next when it has two tests left: every module's fixtures are
    built once, and the last modules to start are the shortest, so both workers end together.
    Its ``summary`` line says when each worker finished its last test."""

    def __init__(self, config, log=None):
        config.option.loadscopereorder = False
        super().__init__(config, log)
        self.started = time.monotonic()
        self.finished: dict[str, float] = {}
        self.workers_of_module: dict[str, set[str]] = {}
        self._index: dict[str, int] = {}
        self._left: dict[tuple, int] = {}

    def _assign_work_unit(self, node) -> None:
        # xdist's looks each test up with list.index: quadratic in the collection's size
        if not self._index:
            self._index = {nodeid: i for i, nodeid in enumerate(self.collection)}
        module, unit = self.workqueue.popitem(last=False)
        self.assigned_work.setdefault(node, {})[module] = unit
        todo = [self._index[nodeid] for nodeid, done in unit.items() if not done]
        self._left[node, module] = len(todo)
        node.send_runtest_some(todo)

    def mark_test_complete(self, node, item_index: int, duration=0) -> None:
        nodeid = self.registered_collections[node][item_index]
        module = module_of(nodeid)
        self.workers_of_module.setdefault(module, set()).add(node.gateway.id)
        self.finished[node.gateway.id] = time.monotonic() - self.started
        self.assigned_work[node][module][nodeid] = True
        self._left[node, module] -= 1
        if not self._left[node, module]:
            # a finished module leaves the node's workload: xdist counts a node's pending tests
            # over its whole workload after each test
            del self.assigned_work[node][module]
        self._reschedule(node)

    def split_modules(self) -> list[str]:
        """The modules whose tests ran on more than one worker (none unless a worker crashed)."""
        return [module for module, workers in self.workers_of_module.items()
                if len(workers) > 1]

    def summary(self) -> str:
        ends = ", ".join(f"{w} {s:.0f} s" for w, s in sorted(self.finished.items()))
        split = self.split_modules()
        return (f"xdist: whole modules, longest first; last test done (since scheduling): "
                f"{ends}; {len(split)} test modules ran on more than one worker: "
                f"{' '.join(split) or '-'}")
