"""The Stadyn side of the harness: running cases on ``stadyn.compat``, and the public surface
the completeness tests hold the cases to.

The public surface of ``stadyn.compat.<framework>`` (what needs an entry):

* modules: the package, every submodule whose dotted name has no ``_``-prefixed part, and every
  module one of those exports in its ``__all__`` (``cntk.io.transforms``, ``cntk.cntk_py``),
  each named by the path users type;
* names: each module's ``__all__`` (a compat module without one fails the test), less
  submodules (a module needs no entry of its own: its names do); a compat module's public
  function or class defined in it but missing from ``__all__`` fails the test too;
* members: the public attributes in the class dictionary of each class *defined in*
  ``stadyn.compat`` (``cntk.Function.eval``), since those are the compat layer's own code --
  methods, properties and class attributes, not ``__slots__`` (instance data).

A case covers a name when it lists it in ``names``; a name reached under several paths
(``cntk.minus`` is ``cntk.ops.minus``) is covered by an entry for any of them, judged by object
identity for functions, classes, modules and properties (by the path for plain values).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import pkgutil
import subprocess
import sys
import types

import numpy as np

import compat_cases
import compat_harness as H
import peers
import state_guard

PREFIX = "stadyn.compat."


def stadyn_side(framework: str) -> H.Side:
    """Stadyn's compat layer, each case in a fresh parameter registry, static mode, training
    phase and seed; every process-wide switch a case may set (``state_guard.ITEMS``: the
    default context, hooks, recompute, CNTK's fixed seed and global options, the image
    backend, torch's determinism switch, ...) is as it was before the case after it, so a
    case's result does not depend on the cases run before it.

    An NNabla case's static graphs are lowered on their first run (``BUILD_RUNS = 0``): an
    evaluation's first run, and a new shape's, would otherwise run eagerly, and the plan's
    results for that case would not be compared with NNabla's."""
    @contextlib.contextmanager
    def isolate():
        import stadyn as sd
        from stadyn.graph import _runner
        before = state_guard.snapshot()
        build_runs = _runner.BUILD_RUNS
        if framework == "nnabla":
            _runner.BUILD_RUNS = 0
        # compat.nnabla's contexts made current (``nn.set_default_context``), which the
        # guard above does not hold (NNabla's ``load`` sets one, as a program's does): a case
        # leaving one there would be read back by a later case's ``nn.get_current_context()``
        # once the native default it stands for is restored
        contexts = sys.modules.get("stadyn.compat.nnabla._context")
        made_current = None if contexts is None else list(contexts._set)
        sd.seed(313)
        try:
            with sd.parameter_registry(sd.ParameterRegistry()), sd.training(True):
                sd.set_auto_forward(False)
                yield
        finally:
            _runner.BUILD_RUNS = build_runs
            state_guard.restore(before, state_guard.snapshot())
            contexts = sys.modules.get("stadyn.compat.nnabla._context")
            if contexts is not None:
                contexts._set[:] = made_current or []
    return H.Side(framework, PREFIX, isolate)


def cases(framework: str):
    return compat_cases.load(framework)


def resolve(framework: str, path: str):
    """The compat object users reach as ``path`` (``cntk.ops.minus``), or a sentinel.  The
    attribute first: ``cntk.default_options`` is a module's path too, but ``C.default_options``
    is the function (as in CNTK 2.7)."""
    side = H.Side(framework, PREFIX)
    parent, _, name = path.rpartition(".")
    try:
        return getattr(side.module(parent), name) if parent else side.module(path)
    except (ImportError, AttributeError):
        pass
    try:
        return side.module(path)
    except (ImportError, AttributeError):
        return _MISSING


_MISSING = object()


def _by_identity(obj) -> bool:
    return isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.ModuleType,
                            type, property, types.MethodType)) or callable(obj)


def same(framework: str, a: str, b: str) -> bool:
    """Whether paths ``a`` and ``b`` name the same compat object (see the module docstring)."""
    if a == b:
        return True
    oa, ob = resolve(framework, a), resolve(framework, b)
    return oa is ob and oa is not _MISSING and _by_identity(oa)


def surface(framework: str) -> tuple[dict[str, object], list[str]]:
    """``({path: object}, problems)``: the public surface and the modules that break the rules."""
    root = importlib.import_module(PREFIX + framework)
    modules: dict[str, types.ModuleType] = {framework: root}
    for info in pkgutil.walk_packages(root.__path__, root.__name__ + "."):
        tail = info.name[len(PREFIX):]
        if any(part.startswith("_") for part in tail.split(".")):
            continue
        modules[tail] = importlib.import_module(info.name)
    pending = list(modules.items())
    while pending:
        path, module = pending.pop()
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            # (a module re-exported from elsewhere, as cntk.layers' np, is not Stadyn's surface)
            if (isinstance(obj, types.ModuleType) and obj not in modules.values()
                    and obj.__name__.startswith(PREFIX)):
                modules[path + "." + name] = obj
                pending.append((path + "." + name, obj))
    names: dict[str, object] = {}
    problems = []
    for path, module in sorted(modules.items()):
        exported = getattr(module, "__all__", None)
        own = module.__name__.startswith(PREFIX)
        if exported is None:
            if own:
                problems.append(f"{module.__name__} has no __all__")
            continue
        for name in exported:
            obj = getattr(module, name)
            if not isinstance(obj, types.ModuleType):
                names[f"{path}.{name}"] = obj
        if own:
            for name, obj in vars(module).items():
                if (not name.startswith("_") and name not in exported
                        and getattr(obj, "__module__", None) == module.__name__
                        and (inspect.isfunction(obj) or inspect.isclass(obj))):
                    problems.append(f"{module.__name__}.{name} is public but not in __all__")
    classes_seen = set()
    for path, obj in list(names.items()):
        if (inspect.isclass(obj) and obj.__module__.startswith(PREFIX)
                and id(obj) not in classes_seen):
            classes_seen.add(id(obj))
            for member, value in vars(obj).items():
                if not member.startswith("_") and not isinstance(value,
                                                                  types.MemberDescriptorType):
                    names[f"{path}.{member}"] = value
    return names, problems


def uncovered(framework: str) -> list[str]:
    """Public names no case lists (aliases resolved)."""
    names, _ = surface(framework)
    declared = [n for c in cases(framework).values() for n in c.names]
    by_id = {}
    for d in declared:
        obj = resolve(framework, d)
        if obj is not _MISSING and _by_identity(obj):
            by_id.setdefault(id(obj), d)
    missing = []
    for path, obj in names.items():
        if path in declared:
            continue
        if _by_identity(obj) and id(obj) in by_id:
            continue
        missing.append(path)
    return sorted(missing)


def untouched(framework: str, case: H.Case, touched: list[str]) -> list[str]:
    """The names ``case`` lists but did not reach (on one side)."""
    return [d for d in case.names if not any(same(framework, d, t) for t in touched)]


_RUNS: dict[tuple[str, str], tuple] = {}


def _run(case: H.Case):
    """Stadyn's results and touched names for ``case`` (run once per session)."""
    key = (case.framework, case.name)
    if key not in _RUNS:
        _RUNS[key] = H.run_case(case, stadyn_side(case.framework))
    return _RUNS[key]


def _expected(case: H.Case):
    if case.expected is not None:
        return H.normalise(case.expected(np)), None
    results, meta = H.load_ref(case.framework, case.name)
    return results, meta["touched"]


def check(case: H.Case) -> None:
    """Run ``case`` on Stadyn and compare with its reference (less its ``known`` keys); fails
    with every difference."""
    import pytest
    results, touched = _run(case)
    expected, real_touched = _expected(case)
    keys = [k for k in set(results) | set(expected) if k not in case.known]
    problems = H.compare(case, results, expected, keys)
    gaps = untouched(case.framework, case, touched)
    if gaps:
        problems.append(f"names the case lists but never reached on Stadyn: {gaps}")
    if real_touched is not None:
        gaps = untouched(case.framework, case, real_touched)
        if gaps:
            problems.append(f"names the case lists but never reached on the real framework: "
                            f"{gaps}")
    if problems:
        pytest.fail(f"{case.framework} case {case.name}: Stadyn differs from "
                    f"{'the expected values' if case.expected else 'the real framework'}:\n  "
                    + "\n  ".join(problems), pytrace=False)


def check_known(case: H.Case, key: str) -> None:
    """Compare only ``key``, a result Stadyn is known to get wrong (the test is an xfail)."""
    import pytest
    results, _ = _run(case)
    expected, _ = _expected(case)
    problems = H.compare(case, results, expected, [key])
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


def params(framework: str):
    """The cases as pytest parameters (``xfail(strict=True)`` where Stadyn is known to differ)."""
    import pytest
    out = []
    for case in cases(framework).values():
        marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
        marks += _missing_programs(case)
        out.append(pytest.param(case, id=f"{framework}:{case.name}", marks=marks))
    return out


def _missing_programs(case: H.Case) -> list:
    """A skip mark naming the programs ``case`` runs that this machine lacks (none: [])."""
    import pytest
    missing = case.missing_programs()
    return [pytest.mark.skip(reason=f"needs {', '.join(missing)} on the PATH (not found here)")
            ] if missing else []


def known_params(framework: str):
    """One xfail(strict=True) parameter per known difference (``case``, ``key``)."""
    import pytest
    return [pytest.param(case, key, id=f"{framework}:{case.name}:{key}",
                         marks=[pytest.mark.xfail(strict=True, reason=reason)]
                         + _missing_programs(case))
            for case in cases(framework).values() for key, reason in case.known.items()]


# The real frameworks' interpreters (tests/peers.py; CI has neither, and STADYN_NO_PEERS=1
# hides them: the freshness test then skips).
REAL = {
    "cntk": (peers.CNTK_PYTHON, {"LD_LIBRARY_PATH": peers.CNTK_LIBS}),
    "nnabla": (peers.NNABLA_PYTHON, {}),
}


#: A generator that writes no reference file for this long is taken to hang (its cases take
#: seconds each, a minute or two beside the whole suite at most).
STALL_SECONDS = 300


def _generate(command: list, env: dict, folder: str) -> tuple:
    """Run a reference generator; ``(exit code, the end of its output)``.  When it writes no
    file into ``folder`` for :data:`STALL_SECONDS` it is killed with its children (CNTK
    starts MPI's ``orted``) and the code is -9, as for a crash."""
    import signal
    import tempfile
    import time
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        seen, since = -1, time.monotonic()
        while proc.poll() is None:
            time.sleep(1.0)
            count = len(os.listdir(folder))
            if count != seen:
                seen, since = count, time.monotonic()
            elif time.monotonic() - since > STALL_SECONDS:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                script = next((c for c in command if c.endswith(".py")), command[0])
                print(f"{script}: no reference written for {STALL_SECONDS} s: killed")
        out.seek(0)
        return proc.returncode, out.read()[-6000:]


def _written(folder: str) -> int:
    """How many references a generator has written into ``folder`` so far."""
    return sum(name.endswith(".npz") for name in os.listdir(folder))


def generate_resuming(command: list, env: dict, folder: str) -> tuple:
    """Run a reference generator to the end; ``(exit code, the end of its output)``.

    CNTK 2.7 itself now and then dies of SIGABRT in the user-deserializer cases (heap
    corruption in its reader threads: 2 runs of 4 of the whole generator here on 2026-12-03,
    both of two runs in CI), or hangs there (a futex wait in user_deserializer__checkpoint,
    once).  The references written before a crash stand (each file is written whole or not at
    all), so a crash resumes the generator with ``--missing``; it gives up when five resumptions
    in a row write nothing (``restore__user_deserializer_one_partition`` dies in 2 runs of 5
    alone, so two in a row failed a whole CI run: 2026-12-07)."""
    code, output = _generate(command, env, folder)
    done, stuck = _written(folder), 0
    while code < 0 and stuck < 5:
        code, output = _generate(command + ["--missing"], env, folder)
        now = _written(folder)
        stuck = 0 if now > done else stuck + 1
        done = now
    return code, output


#: Cases whose reference generation mostly sleeps, with the seconds it waited (one generator run
#: on 2026-12-07, wall time less CPU time).  CNTK 2.7 reads a chunk it cannot parse or open up
#: to 5 times and sleeps 1 s after each failure (``attempt``: Source/Common/Include/File.h:60-86
#: and basetypes.h:413; called by TextParser.cpp:169,267 and HTKDeserializer.cpp:265,375), so
#: every read of a bad CTF or HTK chunk waits 4 s; NNabla's are all computing.  The freshness
#: check runs them in generator processes of their own, beside the process that runs every
#: other case (:func:`_generator_runs`): the check then waits about as long as its longest case
#: instead of for the sum (CNTK: ~280 s of sleep, ~100 s the longest).  Each case still runs on
#: the real framework and is compared with its committed reference, as before; the list only
#: decides which process runs it (a case missing from it is run with the others).
WAITING = {
    "cntk": {
        "io41__ctf_chunk_errors_partitions_frames": 100,
        "io40__ctf_chunk_errors": 48,
        "io41__htk_chunk_errors_partitions_frames": 33,
        "io40__htk_chunks": 25,
        "ioerr39__ctf": 24,
        "loops__streamdef_edges": 20,
        "ioerr39__htk": 12,
        "io41__settings_after_source": 8,
        "ioerr39__declared": 4,
        "io_errors__htk": 4,
        "io44__ctf_max_errors_randomized": 15,
    },
    "nnabla": {},
}


def _generator_runs(framework: str) -> list:
    """The case selections the freshness check runs at once, each in its own generator
    process: every case not in :data:`WAITING` (``--skip`` the waiting ones), then the waiting
    ones packed first-fit, longest first, into groups that wait no longer than the longest
    case does alone."""
    known = cases(framework)
    waits = sorted(((s, n) for n, s in WAITING[framework].items() if n in known), reverse=True)
    groups: list = []
    for seconds, name in waits:
        for group in groups:
            if group[0] + seconds <= waits[0][0]:
                group[0] += seconds
                group[1].append(name)
                break
        else:
            groups.append([seconds, [name]])
    return ([[f"--skip={name}" for _, name in waits]]
            + [[f"--only={name}" for name in names] for _, names in groups])


def check_refs_current(framework: str, folder: str) -> None:
    """Regenerate every reference into ``folder`` with the real framework and compare them with
    the committed ones (a case edited without regenerating fails here); skips without it.  The
    cases that mostly sleep run in processes of their own, at the same time
    (:data:`WAITING`)."""
    import pytest
    from concurrent.futures import ThreadPoolExecutor
    python, env = REAL[framework]
    if not os.access(python, os.X_OK):
        pytest.skip(f"the real {framework} is not installed here (set "
                    f"STADYN_{framework.upper()}_PYTHON to its interpreter)")
    script = os.path.join(H.HERE, "refgen", f"gen_{framework}.py")
    # CNTK 2.7 dies of a floating-point exception with OMP_NUM_THREADS=1, which conftest.py
    # sets under pytest-xdist: the generator runs with the threads it would have by default.
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "PYTHONPATH")}
    # OpenMP's default spin-waiting threads starve beside busy processes: with two CPU-bound
    # processes on this 2-core machine CNTK's regeneration took 123 s, 11 s with passive waits
    # (alone: 10-20 s); beside the xdist suite it once ran past 600 s.
    base["OMP_WAIT_POLICY"] = "PASSIVE"
    runs = _generator_runs(framework)
    folders = [os.path.join(folder, str(i)) for i in range(len(runs))]
    for sub in folders:
        os.makedirs(sub)
    with ThreadPoolExecutor(len(runs)) as pool:
        ran = list(pool.map(
            lambda run, sub: generate_resuming([python, "-W", "ignore", script, "--out", sub]
                                               + run, {**base, **env}, sub),
            runs, folders))
    for (code, output), run in zip(ran, runs):
        assert code == 0, f"{' '.join(run[:3])}{' ...' if len(run) > 3 else ''}:\n{output}"
    where = {name: sub for sub in folders for name in os.listdir(sub)}
    problems = []
    for case in cases(framework).values():
        if case.expected is not None or case.missing_programs():  # (not regenerated here)
            continue
        fresh, _ = H.load_ref(framework, case.name, where.get(case.name + ".npz", folders[0]))
        committed, _ = H.load_ref(framework, case.name)
        problems += [f"{case.name}: {p}" for p in H.compare(case, fresh, committed)]
    assert not problems, ("committed references differ from a fresh run (regenerate them: "
                          "tests/compat/README.md):\n" + "\n".join(problems))
