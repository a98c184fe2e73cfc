"""Test-suite set-up and fixtures shared by every test.

Under pytest-xdist (``make test`` runs two workers on CI's two cores) each worker gets one torch
thread, and inductor one compiling process (``TORCHINDUCTOR_COMPILE_THREADS``), so the workers
do not oversubscribe the cores.

Fixtures:

* ``fresh_parameters``: the test runs in a new, empty parameter registry (yielded); the one it
  replaces is back afterwards.  Use it as an argument or with
  ``@pytest.mark.usefixtures("fresh_parameters")`` (``pytestmark`` for a whole module).
* ``one_torch_thread``: the test runs on one intra-op torch thread; the thread count is restored
  afterwards.  Tiny tensors on a loaded two-core machine spend far more time waiting in torch's
  thread pool than computing, and single-threaded references match single-threaded workers.

Every test is guarded (``global_state_guard``, autouse): the process-wide switches listed in
``state_guard.py`` (Stadyn's mode, ``no_grad``, phase, recompute, default context, scope,
parameter registry, function and solver hooks, numerics checking; torch's grad mode, default
dtype, ...) must be as the test found them when its fixtures are torn down.  A test that leaves
one changed fails, naming each change, and the state is put back, so the next test runs as it
would alone.  A change made between tests (a module import, a module- or session-scoped
fixture) fails the next test, naming it as such.

A static graph whose trace fails runs eagerly with the warning ``a static graph runs eagerly:
...``; ``pyproject.toml`` turns that warning into an error for every test, so a static == dynamic
test always compares two different executions.  A test that exercises the fallback on purpose
says so with ``@pytest.mark.eager_fallback`` (the warning is then ignored for that test).

Order: each module's tests run together, its long tests first (``@pytest.mark.slow``, and the
tests in ``LONG_TESTS``: trainings, example programs and multi-process runs), and the modules
longest first, by the seconds ``tests/durations.json`` gives (``make durations`` stores them;
a module it does not know yet goes first if it has a long test, else by its number of tests:
``suite_order.py``).  Every test still runs; only the order changes.  ``--store-durations``
(``make durations``) writes the seconds of the modules a run ran into that file.

Schedule: ``make test`` runs ``--dist loadfile``: a worker is sent one whole module at a time,
in the order above (``xdist_schedule.ModuleQueue``; xdist's own would send the modules with
the most tests first), the next when it has two tests left.  Every module's module-scoped
fixtures are then built by one worker, and the last modules to start are the shortest, so
the workers end together; the summary line ``xdist: ...`` says when each finished its last
test, and names any module that ran on more than one worker (only after a crash).
(``--dist load``, which hands out a few tests at a time --
``SCHEDULE_CHUNK`` here, ``--maxschedchunk`` unless given on the command line -- sent most
modules' tests to both workers: each worker ran a module's fixture, a training or a program
run, or waited on the lock while the other ran it: ``program_copies.shared_folder``.)
"""

import logging
import os

import pytest
import torch

import stadyn as sd
import state_guard
import suite_order

if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")   # inherited by subprocesses tests start
    # inductor compiles a program's kernels (and its CPU checks) in a pool of one process per
    # core, each importing torch first; beside the other worker there is no core to spare, so
    # a compiling process (a worker, or a program a test starts) compiles them itself
    # (test_compile_cache.py's first process: ~26 s of CPU instead of ~29)
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

# pytest's logging plugin hangs its capturing handlers on every logger that does not propagate,
# torch's structured-trace logger ("torch.__trace", written only under TORCH_TRACE) among them,
# and torch builds each structured record whenever that logger has a handler: with pytest's on
# it, every fake tensor a static plan's trace makes was described (its storage, its tensor, a
# symbolized Python stack): about a tenth of a trace's time (docs/testing.md).  Propagating, it
# gets no handler of pytest's (records still reach pytest through the root logger's).
if not os.environ.get("TORCH_TRACE"):
    logging.getLogger("torch.__trace").propagate = True


@pytest.fixture
def fresh_parameters():
    """A new, empty parameter registry for the test."""
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        yield registry


@pytest.fixture
def one_torch_thread():
    """One intra-op torch thread for the test."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def fresh_plan_templates():
    """No plan programs kept from the tests before (``graph/_plan_reuse.py``): a graph rebuilt
    alike replays the programs of the first build, so a test counting builds, or lowering with
    its passes patched, would otherwise depend on which graphs the tests before it built."""
    from stadyn.graph import _plan_reuse
    _plan_reuse.clear()
    yield


_after_last_test: list = [None]     # the state the previous test left (after the restore)


@pytest.fixture(autouse=True)
def global_state_guard():
    """Fail a test that leaves process-wide state changed, and put the state back."""
    before = state_guard.snapshot()
    previous = _after_last_test[0]
    if previous is not None:
        between = state_guard.changes(previous, before)
        if between:
            _after_last_test[0] = before
            pytest.fail("process-wide state changed since the previous test (a module import or "
                        "a module- or session-scoped fixture):\n  " + "\n  ".join(between),
                        pytrace=False)
    yield
    after = state_guard.snapshot()
    changed = state_guard.changes(before, after)
    _after_last_test[0] = before
    if changed:
        state_guard.restore(before, after)
        pytest.fail("the test left process-wide state changed (restored now):\n  "
                    + "\n  ".join(changed), pytrace=False)


EAGER_FALLBACK_WARNING = "a static graph runs eagerly"


# Long tests by node-id prefix: modules whose tests are mostly long (each a training, an
# example program or a multi-process run) and single long tests elsewhere, measured with
# --durations; they run first in their module, with the slow-marked tests, and a module that
# tests/durations.json does not know yet goes first when it has one (suite_order.py).
LONG_TESTS = (
    "tests/examples/test_cntk_gallery.py",
    "tests/examples/test_cntk_examples.py",
    "tests/examples/test_nnabla_gallery.py",
    "tests/examples/test_nnabla_examples_12.py",
    "tests/examples/test_nnabla_examples_13.py",
    "tests/examples/test_nnabla_examples_14.py",
    "tests/brainscript/test_bs_sequence_examples.py",
    "tests/brainscript/test_bs_generated.py",
    "tests/brainscript/test_bs_reliability.py",
    "tests/brainscript/test_bs_runner.py::test_stadyn_train_nproc_2_matches_one_process",
    "tests/distributed/",
    "tests/compat/test_cntk_distributed",           # and its _bits, _finalize, _session, _units
    "tests/compat/test_cntk_cifar_script.py",
    "tests/compat/test_compat_names.py::test_references_match_a_fresh_run_of_the_real_framework",
    "tests/compile/test_compile.py::test_compiled_step_matches_static_training",
    "tests/compile/test_compile.py::test_uncompiled_step_program_matches_static_training",
    "tests/compile/test_compile.py::test_update_after_the_program_matches_static_training",
    "tests/models/test_nnabla_tutorial.py",
    "tests/models/test_digits.py::test_the_data_parallel_benchmark_runs_alone_with_sync_batch_norm",
    "tests/cli/test_cli_usage.py::test_bench_workloads_are_named_for_what_they_are_and_seed2_still_works",
    "tests/train/test_fit_data_parallel.py",
    # (suite43) every example module (programs run in module fixtures: 5-27 s setups in CI), the
    # Sphinx build (~50 s), modules whose module fixture launches two-process jobs (5-8 s)
    "tests/examples/",
    "tests/docs/test_api_reference.py",
    "tests/compat/test_cntk_block_momentum",        # and _session
    "tests/compat/test_cntk_reader_positions.py",
    "tests/brainscript/test_bs_block_momentum.py",
    # (bs43) three `stadyn train` worker processes (~18 s)
    "tests/brainscript/test_bs_parallel_validation.py::test_three_workers_count_each_passes_longest_share_as_cntk",
)


# Tests sent to a worker at a time under ``--dist load`` (plain ``pytest -n 2``; ``make test``
# runs ``--dist loadfile``).  xdist's default sends each worker a quarter of its share at once
# (700-odd tests, all the long ones to one worker); a few at a time keeps both busy to the end.
SCHEDULE_CHUNK = 4


def pytest_configure(config):
    _after_last_test[0] = state_guard.snapshot()      # before collection imports test modules
    if getattr(config.option, "maxschedchunk", 0) is None:       # xdist's option, not given
        config.option.maxschedchunk = SCHEDULE_CHUNK


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` (``make test``): whole modules in collection order, longest first
    (``xdist_schedule.ModuleQueue``); any other ``--dist`` is xdist's own."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist_schedule import ModuleQueue
    return ModuleQueue(config, log)


def pytest_terminal_summary(terminalreporter, config):
    dsession = config.pluginmanager.getplugin("dsession")
    summary = getattr(getattr(dsession, "sched", None), "summary", None)
    if summary is not None:
        terminalreporter.write_line(summary())


def pytest_addoption(parser):
    parser.addoption("--store-durations", action="store_true",
                     help="write each test module's seconds into tests/durations.json "
                          "(make durations), which orders the modules of later runs")


_module_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report):
    if not os.environ.get("PYTEST_XDIST_WORKER"):        # the controller, or a run without xdist
        module = suite_order.module_of(report.nodeid)
        _module_seconds[module] = _module_seconds.get(module, 0.0) + report.duration


def pytest_sessionfinish(session, exitstatus):
    if (session.config.getoption("store_durations") and _module_seconds
            and not os.environ.get("PYTEST_XDIST_WORKER")):
        suite_order.store_durations(_module_seconds)


def _runs_long(item) -> bool:
    return (item.get_closest_marker("slow") is not None
            or item.nodeid.startswith(LONG_TESTS))


def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("eager_fallback") is not None:
            item.add_marker(pytest.mark.filterwarnings(
                f"ignore:{EAGER_FALLBACK_WARNING}:RuntimeWarning"))
    order = suite_order.module_order([item.nodeid for item in items],
                                     suite_order.load_durations(),
                                     [_runs_long(item) for item in items])
    items[:] = [items[i] for i in order]
