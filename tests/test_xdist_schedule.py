"""``xdist_schedule.ModuleWorkStealing``: ``make test``'s hand-outs and steals fall between test
modules, so a module's fixtures are built by one worker; every test is still handed out once.

The scheduler is driven as xdist's controller drives it (``add_node``, ``add_node_collection``,
``schedule``, ``mark_test_complete``, ``remove_pending_tests_from_node``) with stand-in
workers that record what they are sent."""

from __future__ import annotations

import types

import pytest

pytest.importorskip("xdist")

from xdist.scheduler.worksteal import WorkStealingScheduling  # noqa: E402
from xdist_schedule import ModuleWorkStealing, module_of  # noqa: E402


class _Worker:
    def __init__(self, name):
        self.gateway = types.SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[int] = []
        self.steals_asked: list[list[int]] = []
        self.ran: list[int] = []

    def send_runtest_some(self, indices):
        self.sent.extend(indices)

    def send_steal(self, indices):
        self.steals_asked.append(list(indices))

    def shutdown(self):
        self.shutting_down = True


def _started(scheduling, collection, **options):
    config = types.SimpleNamespace(getvalue=lambda name: ["2*popen"])
    sched = scheduling(config, **options)
    workers = [_Worker("gw0"), _Worker("gw1")]
    for worker in workers:
        sched.add_node(worker)
    for worker in workers:
        sched.add_node_collection(worker, collection)
    sched.schedule()
    return sched, workers


# a.py: 6 tests, b.py: 10, c.py: 4 (indices 0-5, 6-15, 16-19)
_COLLECTION = ([f"a.py::t{i}" for i in range(6)] + [f"b.py::t{i}[{i}]" for i in range(10)]
               + [f"c.py::t{i}" for i in range(4)])


def _answer_steal(sched):
    """The asked worker's answer, as xdist's: all the asked tests if none has started (the
    worker holds the one it runs and the next), else none."""
    worker = sched.steal_requested_from_node
    if worker is not None:
        asked = worker.steals_asked[-1]
        waiting = sched.node2pending[worker][2:]
        sched.remove_pending_tests_from_node(
            worker, asked if set(asked) <= set(waiting) else [])


def _run(sched, worker, count):
    for index in list(sched.node2pending[worker][:count]):
        worker.ran.append(index)
        sched.mark_test_complete(worker, index)
        _answer_steal(sched)


def _modules(indices):
    return sorted({module_of(_COLLECTION[i]) for i in indices})


def test_xdists_own_cuts_split_a_module_that_the_module_cuts_keep_whole():
    # xdist: the first half (10 tests) ends inside b.py, so both workers run b.py's tests
    _, (first, second) = _started(WorkStealingScheduling, _COLLECTION)
    assert first.sent == list(range(10)) and _modules(first.sent) == ["a.py", "b.py"]
    assert _modules(second.sent) == ["b.py", "c.py"]
    # the module-aware cut: the boundary nearest the half (6, not 16)
    sched, (first, second) = _started(ModuleWorkStealing, _COLLECTION)
    assert first.sent == list(range(6)) and second.sent == list(range(6, 20))


def test_an_idle_worker_steals_from_a_module_boundary_and_every_test_runs_once():
    # (b.py and c.py kept whole: at the end no queue holds two modules, and none is cut)
    sched, (first, second) = _started(ModuleWorkStealing, _COLLECTION, whole=("b.py", "c.py"))
    _run(sched, first, 5)                  # a.py's last test left: first is idle
    # xdist would take the last 7 of second's 14 (b.py's t7.. and c.py); the cut moves to c.py
    assert second.steals_asked == [list(range(16, 20))]
    assert first.sent == list(range(6)) + list(range(16, 20))
    _run(sched, second, 10)                # b.py done: second is idle, first still holds c.py
    _run(sched, first, 5)
    _run(sched, second, 5)
    assert sched.tests_finished
    assert sorted(first.ran + second.ran) == list(range(20))
    assert sched.split_modules() == [] and sched.steals == 1


def test_a_queue_of_one_module_is_still_shared_and_the_split_is_counted():
    sched, (first, second) = _started(ModuleWorkStealing, [f"m.py::t{i}" for i in range(8)])
    assert first.sent == [0, 1, 2, 3] and second.sent == [4, 5, 6, 7]   # no boundary: halves
    _run(sched, first, 3)                  # first idle: takes the last half of second's queue
    assert second.steals_asked == [[6, 7]]
    _run(sched, first, 3)
    _run(sched, second, 2)
    assert sched.tests_finished
    assert (first.ran, second.ran) == ([0, 1, 2, 3, 6, 7], [4, 5])
    assert sched.split_modules() == ["m.py"]


def test_a_module_to_keep_whole_is_not_split_even_when_a_worker_idles():
    sched, (first, second) = _started(ModuleWorkStealing, [f"m.py::t{i}" for i in range(8)],
                                      whole=("m.py",))
    assert first.sent == list(range(8)) and second.sent == []
    assert second.shutting_down                        # nothing it may take: it finishes
    _run(sched, first, 8)
    assert sched.tests_finished and sched.split_modules() == [] and sched.steals == 0


def test_every_long_and_one_worker_prefix_names_test_files(request):
    """A renamed module would silently leave ``LONG_TESTS`` or ``ONE_WORKER`` (conftest.py)."""
    import glob
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # tests/conftest.py as pytest loaded it ("import conftest" finds whichever of the suite's
    # conftest modules was imported last)
    here = os.path.join(root, "tests", "conftest.py")
    conftest = next(p for p in request.config.pluginmanager.get_plugins()
                    if os.path.abspath(getattr(p, "__file__", "") or "") == here)
    files = [os.path.relpath(p, root).replace(os.sep, "/")
             for p in glob.glob(os.path.join(root, "tests", "**", "test_*.py"), recursive=True)]
    for prefix in conftest.LONG_TESTS + conftest.ONE_WORKER:
        path = prefix.split("::", 1)[0]
        assert any(f.startswith(path) for f in files), prefix
