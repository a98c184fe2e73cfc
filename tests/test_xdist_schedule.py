"""``make test``'s order and schedule: ``suite_order.module_order`` puts each module's tests
together and the modules longest first (``tests/durations.json``), and
``xdist_schedule.ModuleQueue`` hands them out whole in that order, so a module's fixtures are
built by one worker; every test is still handed out once.

The scheduler is driven as xdist's controller drives it (``add_node``, ``add_node_collection``,
``schedule``, ``mark_test_complete``) with stand-in workers that record what they are sent."""

from __future__ import annotations

import types

import pytest

pytest.importorskip("xdist")

from xdist.scheduler.loadfile import LoadFileScheduling  # noqa: E402
from suite_order import load_durations, module_order, store_durations  # noqa: E402
from xdist_schedule import ModuleQueue  # noqa: E402


class _Worker:
    def __init__(self, name):
        self.gateway = types.SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[int] = []
        self.ran: list[int] = []

    def send_runtest_some(self, indices):
        self.sent.extend(indices)

    def shutdown(self):
        self.shutting_down = True


def _started(scheduling, collection):
    config = types.SimpleNamespace(getvalue=lambda name: ["2*popen"],
                                   option=types.SimpleNamespace(loadscopereorder=True))
    sched = scheduling(config)
    workers = [_Worker("gw0"), _Worker("gw1")]
    for worker in workers:
        sched.add_node(worker)
    for worker in workers:
        sched.add_node_collection(worker, collection)
    sched.schedule()
    return sched, workers


# c.py (2 tests) is the longest module, then a.py (3), then b.py (5): the collection as
# module_order leaves it
_BY_SECONDS = (["c.py::t0", "c.py::t1"] + [f"a.py::t{i}" for i in range(3)]
               + [f"b.py::t{i}" for i in range(5)])


def _run_next(sched, worker, count):
    """``worker`` runs the next ``count`` tests it was sent, reporting each."""
    for index in [i for i in worker.sent if i not in worker.ran][:count]:
        worker.ran.append(index)
        sched.mark_test_complete(worker, index)


def test_the_queue_hands_out_whole_modules_in_collection_order_not_by_test_count():
    # xdist's loadfile sends the module with the most tests first (b.py), whatever it costs
    _, (first, _) = _started(LoadFileScheduling, _BY_SECONDS)
    assert first.sent == list(range(5, 10))
    sched, (first, second) = _started(ModuleQueue, _BY_SECONDS)
    # c.py to first, a.py to second; first has two tests left (all of c.py): b.py goes too
    assert first.sent == [0, 1] + list(range(5, 10)) and second.sent == [2, 3, 4]
    _run_next(sched, second, 3)
    assert second.shutting_down and first.shutting_down          # nothing left to hand out
    _run_next(sched, first, 7)
    assert sched.tests_finished
    assert sorted(first.ran + second.ran) == list(range(10))
    assert sched.split_modules() == []
    assert set(sched.finished) == {"gw0", "gw1"} and "0 test modules" in sched.summary()


def test_a_worker_gets_the_next_module_only_when_two_of_its_tests_are_left():
    collection = [f"a.py::t{i}" for i in range(6)] + [f"b.py::t{i}" for i in range(6)] + [
        "c.py::t0", "d.py::t0"]
    sched, (first, second) = _started(ModuleQueue, collection)
    assert first.sent == list(range(6)) and second.sent == list(range(6, 12))
    _run_next(sched, first, 3)
    assert first.sent == list(range(6))                           # three left: nothing yet
    _run_next(sched, first, 1)
    assert first.sent == list(range(6)) + [12]                    # two left: c.py
    _run_next(sched, second, 6)
    assert second.sent == list(range(6, 12)) + [13]               # done: d.py
    _run_next(sched, first, 3)
    _run_next(sched, second, 1)
    assert sched.tests_finished and sched.split_modules() == []


def test_modules_run_longest_first_together_with_their_long_tests_first():
    nodeids = ["s.py::t0", "s.py::t1", "big.py::t0", "new.py::t0", "new.py::t1", "new.py::t2",
               "newlong.py::t0", "newlong.py::t1", "big.py::t1"]
    long = [False, False, False, False, False, False, False, True, True]
    # known: s.py 1 s (2 tests), big.py 7 s (2 tests): 2 s a test; new.py: 3 tests, ~6 s
    order = module_order(nodeids, {"s.py": 1.0, "big.py": 7.0}, long)
    assert [nodeids[i] for i in order] == [
        "newlong.py::t1", "newlong.py::t0",       # unknown, with a long test: first
        "big.py::t1", "big.py::t0",               # 7 s, its long test first
        "new.py::t0", "new.py::t1", "new.py::t2",  # unknown: 3 tests x 2 s
        "s.py::t0", "s.py::t1"]


def test_stored_durations_update_the_modules_run_and_keep_the_others(tmp_path):
    path = str(tmp_path / "durations.json")
    assert load_durations(path) == {}
    store_durations({"b.py": 2.0, "a.py": 1.234}, path)
    store_durations({"b.py": 5.0}, path)
    assert load_durations(path) == {"a.py": 1.23, "b.py": 5.0}


def test_every_long_prefix_names_test_files(request):
    """A renamed module would silently leave ``LONG_TESTS`` (conftest.py)."""
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
    for prefix in conftest.LONG_TESTS:
        path = prefix.split("::", 1)[0]
        assert any(f.startswith(path) for f in files), prefix
