"""``stadyn.compat.cntk`` and ``stadyn.compat.nnabla`` against numbers the real CNTK 2.7 and
NNabla 1.39 produced.

Each case (``compat_cases/<framework>_*.py``) runs here on the compat layer and is compared with
the reference file the same case wrote under the real framework
(``refs/<framework>/<case>.npz``, made by ``refgen/gen_<framework>.py``).  Test ids are
``<framework>:<case>``.  See README.md.
"""

import os

import pytest

import compat_harness as H
import compat_support as S
import stadyn.functions as F

FRAMEWORKS = ["cntk", "nnabla"]


# Catalog ops the nnabla-ops branch adds (NNabla's trigonometry, top_k_data with indices); the
# CNTK ops built on them skip until stadyn.functions has them, then their cases run.
AWAITED_OPS = {"sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "atanh",
               "top_k_data"}


@pytest.mark.parametrize("case", S.params("cntk") + S.params("nnabla"))
def test_case(case):
    try:
        S.check(case)
    except AttributeError as exc:
        if exc.obj is F and exc.name in AWAITED_OPS and not hasattr(F, exc.name):
            pytest.skip(f"needs the catalog op {exc.name!r} (the nnabla-ops branch adds it)")
        raise


@pytest.mark.parametrize("case,key", S.known_params("cntk") + S.known_params("nnabla"))
def test_known_difference(case, key):
    S.check_known(case, key)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_public_name_has_a_case(framework):
    """Every public name of stadyn.compat.<framework> (see compat_support) is listed by a case."""
    _, problems = S.surface(framework)
    missing = S.uncovered(framework)
    assert not problems, problems
    assert not missing, f"{len(missing)} public names without a case: {missing}"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_case_has_its_reference_and_no_reference_is_stale(framework):
    cases = S.cases(framework)
    wanted = {c.name for c in cases.values() if c.expected is None}
    folder = os.path.join(H.REFS, framework)
    present = {f[:-4] for f in os.listdir(folder) if f.endswith(".npz")}
    assert not wanted - present, (f"cases without a reference (run gen_{framework}.py --only "
                                  f"NAME): {sorted(wanted - present)}")
    assert not present - wanted, f"references without a case: {sorted(present - wanted)}"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_references_match_a_fresh_run_of_the_real_framework(framework, tmp_path):
    S.check_refs_current(framework, str(tmp_path))


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_freshness_check_runs_each_waiting_case_once_beside_the_others(framework):
    """``check_refs_current`` runs the cases of ``S.WAITING`` in processes of their own: every
    one of them is a case, the main process skips exactly them and the others run each once."""
    runs = S._generator_runs(framework)
    skipped = [arg.split("=", 1)[1] for arg in runs[0]]
    alone = [arg.split("=", 1)[1] for run in runs[1:] for arg in run]
    assert all(arg.startswith("--skip=") for arg in runs[0])
    assert all(arg.startswith("--only=") for run in runs[1:] for arg in run)
    assert sorted(skipped) == sorted(alone) == sorted(S.WAITING[framework])
    assert set(S.WAITING[framework]) <= set(S.cases(framework))


# A stand-in generator: writes the references a..d into --out, aborting (as CNTK 2.7 now and
# then does) after the first ``crash_after`` files of each run; --missing skips written ones.
_CRASHING_GENERATOR = """
import os, sys
out = sys.argv[sys.argv.index("--out") + 1]
names = [n for n in "abcd" if "--missing" not in sys.argv
         or not os.path.exists(os.path.join(out, n + ".npz"))]
for i, name in enumerate(names):
    if i == {crash_after}:
        os.abort()
    open(os.path.join(out, name + ".npz"), "w").close()
"""


@pytest.mark.parametrize("crash_after, code, written", [(1, 0, 4), (0, -6, 0)])
def test_a_crashed_reference_generator_resumes_with_the_missing_cases(crash_after, code,
                                                                      written, tmp_path):
    import sys
    script = tmp_path / "gen.py"
    script.write_text(_CRASHING_GENERATOR.format(crash_after=crash_after))
    out = tmp_path / "out"
    out.mkdir()
    got, _ = S.generate_resuming([sys.executable, str(script), "--out", str(out)], {}, str(out))
    assert (got, sorted(p.name for p in out.iterdir())) == (
        code, ["a.npz", "b.npz", "c.npz", "d.npz"][:written])


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_coverage_script_runs_on_its_own(framework, tmp_path):
    """``benchmarks/compat_coverage.py`` (the README's coverage figure) runs as a user runs it,
    from any folder with only ``src`` on the path, and its total counts every real name."""
    import json
    import subprocess
    import sys

    import stadyn

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    src = os.path.dirname(os.path.dirname(os.path.abspath(stadyn.__file__)))
    proc = subprocess.run([sys.executable, os.path.join(root, "benchmarks", "compat_coverage.py"),
                           framework], cwd=tmp_path, env=dict(os.environ, PYTHONPATH=src),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(os.path.join(H.REFS, f"names_{framework}.json")) as f:
        real = sum(len(names) for names in json.load(f)["modules"].values())
    total, = [line.split() for line in proc.stdout.splitlines() if line.split()[:1] == ["total"]]
    assert int(total[1]) == real
    assert 0 < int(total[3]) <= int(total[2]) <= real
