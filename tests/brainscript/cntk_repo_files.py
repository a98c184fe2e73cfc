"""Files of CNTK's own repository read by the BrainScript reader tests: its configs, data and
the baseline logs cntk.exe printed.  They come from a copy of CNTK, ``$STADYN_CNTK_SOURCE`` (a
checkout, or a bare git repository whose HEAD is read), by default
``/work/.mirror/yaochengji+CNTK/repo``; without one (or without the file) the test skips."""

from __future__ import annotations

import os
import subprocess

import pytest

SOURCE = os.environ.get("STADYN_CNTK_SOURCE", "/work/.mirror/yaochengji+CNTK/repo")


def cntk_file(path: str) -> bytes:
    """The bytes of ``path`` in the CNTK copy (skips the test without it)."""
    if os.path.isdir(os.path.join(SOURCE, "Examples")):
        with open(os.path.join(SOURCE, path), "rb") as f:
            return f.read()
    if not os.path.isdir(SOURCE):
        pytest.skip(f"no copy of CNTK at {SOURCE} (set STADYN_CNTK_SOURCE)")
    got = subprocess.run(["git", "--git-dir", SOURCE, "show", f"HEAD:{path}"],
                         capture_output=True)
    if got.returncode:
        pytest.skip(f"{path} is not in the CNTK copy at {SOURCE}")
    return got.stdout


def copy_cntk_file(target, path: str, name: str | None = None):
    """Write ``path`` of the CNTK copy into the folder ``target`` (as ``name``, by default its
    own); return the new file's path."""
    out = target / (name or os.path.basename(path))
    out.write_bytes(cntk_file(path))
    return out
