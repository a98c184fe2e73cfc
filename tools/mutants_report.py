"""The report of ``tools/mutants.py``: the score of a group's mutants, ``report.md`` and
``report.json`` (``_write``), several runs merged into one (``combine``, ``--combine``), and the
survivors judged equivalent (``tools/mutants_equivalent.txt``, ``_equivalent``).
"""

from __future__ import annotations

import json
from pathlib import Path


def _slug(group: str) -> str:
    return group.replace("/", "-")


def _score(mutants: list[dict]) -> tuple[int, int, int, int, int]:
    killed = sum(m["status"] == "killed" for m in mutants)
    timeout = sum(m["status"] == "timeout" for m in mutants)
    equivalent = sum(m["status"] == "survived" and m["detail"].startswith("equivalent")
                     for m in mutants)
    survived = sum(m["status"] == "survived" for m in mutants) - equivalent
    errors = sum(m["status"] == "error" for m in mutants)
    return killed, timeout, survived, equivalent, errors


def _write(results: dict, out_dir: Path, seconds: float) -> dict:
    results["seconds"] = round(seconds)
    total = [0, 0, 0, 0, 0]
    lines = ["# Mutation testing report", "",
             f"Command: `{results['command']}` (seed {results['seed']}, "
             f"{results['per_group']} per group), started {results['started']}, "
             f"{results['seconds']} s.", "",
             "| group | mutants | killed | timeout | survived | equivalent | score |",
             "|---|---|---|---|---|---|---|"]
    for group, entry in results["groups"].items():
        if "baseline" in entry:
            lines.append(f"| {group} | - | - | - | - | - | {entry['baseline']} |")
            continue
        k, t, s, e, err = _score(entry["mutants"])
        total = [a + b for a, b in zip(total, (k, t, s, e, err))]
        n = k + t + s
        lines.append(f"| {group} | {len(entry['mutants'])} | {k} | {t} | {s} | {e} | "
                     f"{(k + t) / n:.0%} |" if n else f"| {group} | 0 | | | | | |")
    k, t, s, e, err = total
    n = k + t + s
    results["score"] = (k + t) / n if n else None
    lines.append(f"| **all** | {k + t + s + e + err} | {k} | {t} | {s} | {e} | "
                 f"{'%.0f%%' % (100 * (k + t) / n) if n else '-'} |")
    lines += ["", "## Survivors", ""]
    for group, entry in results["groups"].items():
        for m in entry.get("mutants", []):
            if m["status"] == "survived":
                lines.append(f"- `{m['ident']}` — `{m['source_line']}`"
                             + (f" ({m['detail']})" if m["detail"] else ""))
    errors = [m for e in results["groups"].values() for m in e.get("mutants", [])
              if m["status"] == "error"]
    if errors:
        lines += ["", "## Errors (not counted)", ""]
        lines += [f"- `{m['ident']}`: {m['detail']}" for m in errors]
    (out_dir / "report.md").write_text("\n".join(lines) + "\n")
    (out_dir / "report.json").write_text(json.dumps(results, indent=1) + "\n")
    return results


def combine(dirs: list[Path], equivalent: dict[str, str]) -> dict:
    """The runs in ``dirs`` (their ``report.json``) as one result: groups merged, a mutant run
    in several keeps its last result; survivors in ``equivalent`` marked so."""
    merged: dict = {"groups": {}, "seconds": 0, "command": "tools/mutants.py --combine "
                    + " ".join(str(d) for d in dirs)}
    for d in dirs:
        run = json.loads((Path(d) / "report.json").read_text())
        merged.setdefault("seed", run["seed"])
        merged.setdefault("per_group", run["per_group"])
        merged.setdefault("started", run["started"])
        merged["seconds"] += run.get("seconds", 0)
        for group, entry in run["groups"].items():
            into = merged["groups"].setdefault(group, {"tests": entry.get("tests"),
                                                       "mutants": []})
            byid = {m["ident"]: k for k, m in enumerate(into["mutants"])}
            for m in entry.get("mutants", []):
                if m["ident"] in byid:
                    into["mutants"][byid[m["ident"]]] = m
                else:
                    into["mutants"].append(m)
    for entry in merged["groups"].values():
        for m in entry["mutants"]:
            if m["status"] == "survived" and m["ident"] in equivalent:
                m["detail"] = f"equivalent: {equivalent[m['ident']]}"
    return merged


def _equivalent(path: Path) -> dict[str, str]:
    """``tools/mutants_equivalent.txt``: one ``ident  # reason`` per line (two spaces before
    the ``#``)."""
    out: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                ident, _, reason = line.partition("  #")   # idents hold '#' ("compare#0")
                out[ident.strip()] = reason.strip() or "equivalent"
    return out
