"""The files ``tools/cntk_config_survey.py`` surveys: a CNTK checkout (or the config, BrainScript
and NDL files of its bare git mirror, copied to a scratch folder), its example configs with a
``command``, and its end-to-end tests' ``cntkrun`` lines with their overrides and the
``baseline*.txt`` counts they are checked against.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess

_SUFFIXES = (".cntk", ".bs", ".ndl", ".mel", ".config")


def checkout(path: str, scratch: str) -> str:
    """A folder with CNTK's Examples and Tests/EndToEndTests text files: ``path`` itself, or
    (a bare git mirror) the needed files copied out of its HEAD."""
    if os.path.isdir(os.path.join(path, "Examples")):
        return path
    names = subprocess.run(["git", "-C", path, "ls-tree", "-r", "--name-only", "HEAD"],
                           check=True, capture_output=True, text=True).stdout.splitlines()
    sizes = dict(line.split("\t")[::-1] for line in subprocess.run(
        ["git", "-C", path, "ls-tree", "-r", "-l", "HEAD"], check=True, capture_output=True,
        text=True).stdout.splitlines())
    wanted = [n for n in names if n.startswith(("Examples/", "Tests/EndToEndTests/")) and
              (n.endswith(_SUFFIXES) or re.search(r"/run-test(-common)?$", n) or
               re.search(r"/baseline[^/]*\.txt$", n) or
               # the small text files: NDL descriptions named .txt (Speech/DNN's dnn.txt)
               (n.endswith(".txt") and sizes.get(n, "").split()[-1].isdigit() and
                int(sizes[n].split()[-1]) < 20000))]
    for name in wanted:
        target = os.path.join(scratch, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        blob = subprocess.run(["git", "-C", path, "show", f"HEAD:{name}"], capture_output=True)
        if blob.returncode == 0:          # a few blobs are absent from the mirror
            with open(target, "wb") as f:
                f.write(blob.stdout)
    return scratch


def example_configs(root: str) -> list[tuple[str, list[str]]]:
    """Every Examples/**/*.cntk that names a ``command`` (no overrides)."""
    found = []
    for folder, _, files in os.walk(os.path.join(root, "Examples")):
        for name in sorted(files):
            if name.endswith(".cntk"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    if re.search(r"^\s*command\s*=", f.read(), re.M | re.I):
                        found.append((path, []))
    return sorted(found)


def _find_config(root: str, test_dir: str, name: str) -> str | None:
    """The config a ``cntkrun NAME`` of ``test_dir`` runs: in the test folder or one above it,
    else the file of that name under Examples whose folder path shares the most names with the
    test's."""
    folder = test_dir
    while os.path.relpath(folder, root).startswith("Tests"):     # the test's folders first
        local = os.path.join(folder, name)
        if os.path.exists(local):
            return local
        folder = os.path.dirname(folder)
    parts = set(os.path.relpath(test_dir, root).split(os.sep))
    best, score = None, -1
    for folder, _, files in os.walk(os.path.join(root, "Examples")):
        if name in files:
            s = len(parts & set(os.path.relpath(folder, root).split(os.sep)))
            if s > score:
                best, score = os.path.join(folder, name), s
    return best


def baseline_counts(test_dir: str) -> list[list[int]]:
    """``[parameters, tensors]`` of each ``Training N parameters in M ...`` line of the test's
    baseline log (cntk.exe's), in order."""
    logs = sorted(f for f in os.listdir(test_dir) if re.fullmatch(r"baseline.*\.txt", f))
    if not logs:
        return []
    # baseline.txt, else the first of baseline.cpu.txt, baseline.gpu.txt, ...
    path = os.path.join(test_dir, "baseline.txt" if "baseline.txt" in logs else logs[0])
    with open(path, encoding="utf-8", errors="replace") as f:
        return [[int(a), int(b)] for a, b in
                re.findall(r"Training (\d+) parameters in (\d+)", f.read())]


def baseline_check(r: dict) -> str:
    """Whether the parameter counts of the config's train commands, as built here, are those of
    cntk.exe's log: ``same``, ``differs`` (with both), or empty when there is nothing to
    compare."""
    ours = [[c["params"], c["tensors"]] for c in r["commands"].values()
            if c["action"] == "train" and "params" in c]
    theirs = r.get("baseline") or []
    if not ours or not theirs:
        return ""
    if all(pair in theirs for pair in ours):      # a test may run several configs
        return "same"
    return f"differs: {ours} vs {theirs}"


def _overrides(text: str) -> list[str]:
    """The ``key=value`` items of a ``cntkrun`` line (its quoted argument holds several)."""
    items = []
    try:
        for arg in shlex.split(text.strip()):
            for item in shlex.split(arg) if " " in arg else [arg]:
                # cntk.exe took a bracketed item too ("[command=TrainConvNet:Test]")
                bracketed = item.startswith("[") and item.endswith("]")
                items.append(item[1:-1] if bracketed else item)
    except ValueError:
        return []
    return [a for a in items if "=" in a and "$" != a.split("=", 1)[1][:1]
            and not a.lower().startswith(("stderr=", "configfile=", "exitcode="))]


def standard_overrides(config: str) -> list[str]:
    """What CNTK's test driver (``cntkrun``) passes every config: its folders and the CPU."""
    return ["RunDir=/tmp/run", "DataDir=/tmp/data", f"ConfigDir={os.path.dirname(config)}",
            "OutputDir=/tmp/run", "DeviceId=-1",
            # the TIMIT tests' own (run-timit-test-common)
            "ExpDir=/tmp/run/exp", "ScpDir=/tmp/data", "MlfDir=/tmp/data",
            f"LibDir={os.path.dirname(config)}/../lib", "DeviceNumber=-1",
            # run-timit-test-common's NDL and MEL folders: the config's own
            f"NdlDir={os.path.dirname(config)}", f"MelDir={os.path.dirname(config)}"]


def _shell_values(folder: str, base: str, text: str) -> dict[str, str]:
    """The plain ``name=value`` lines of a test's ``run-test`` and of the ``run-test-common``
    files of its folder and those above it (``imageLayout=cudnn`` of Examples/Image), which
    its ``cntkrun`` line may use (``imageLayout=\\"$imageLayout\\"``)."""
    texts = []
    while os.path.relpath(folder, base) != os.pardir:
        common = os.path.join(folder, "run-test-common")
        if os.path.exists(common):
            with open(common, encoding="utf-8", errors="replace") as f:
                texts.insert(0, f.read())
        if os.path.samefile(folder, base):
            break
        folder = os.path.dirname(folder)
    values: dict[str, str] = {}
    for t in texts + [text]:
        values.update(re.findall(r"^\s*(\w+)=([^\s$`\"']+)\s*$", t, re.M))
    return values


def test_configs(root: str) -> list[tuple[str, list[str], str]]:
    """``(config, overrides, test folder)`` for each ``cntkrun`` of each end-to-end test with a
    baseline log."""
    found = []
    base = os.path.join(root, "Tests", "EndToEndTests")
    for folder, _, files in os.walk(base):
        if "run-test" not in files or not any(f.startswith("baseline") for f in files):
            continue
        with open(os.path.join(folder, "run-test"), encoding="utf-8", errors="replace") as f:
            text = f.read()
        known = _shell_values(folder, base, text)
        for m in re.finditer(r"^\s*cntkrun\s+(\S+)\s*(.*?)(?:\|\||$)", text, re.M):
            config = _find_config(root, folder, m.group(1))
            if config is None:
                continue
            args = re.sub(r"\$(\w+)", lambda v: known.get(v.group(1), v.group(0)), m.group(2))
            found.append((config, _overrides(args), folder))
    return sorted(found)
