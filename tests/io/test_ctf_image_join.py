"""A CTF file without sequence ids and an image map file joined in one MinibatchSource: line k
with line k, as CNTK 2.7 bundles them by key (a CTF line's number counted from 0,
IndexBuilder.cpp:273; a map line's, ImageDataDeserializer.cpp:163-174); refs from CNTK 2.7
(tests/fixtures/ctf_image_join/make_refs.py).  At 2d7f4600 Stadyn keyed CTF lines from 1:
line k went with image k + 1 and the last line was dropped with a warning."""

from __future__ import annotations

import importlib.util
import json
import warnings
from pathlib import Path

import pytest

from stadyn import io

FIXTURE = Path(__file__).parents[1] / "fixtures" / "ctf_image_join"


def _make_refs():
    spec = importlib.util.spec_from_file_location("ctf_image_join_make_refs",
                                                  FIXTURE / "make_refs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_ctf_line_goes_with_the_image_of_its_line(tmp_path):
    refs = json.loads((FIXTURE / "refs.json").read_text())
    map_file, ctf = _make_refs().files(str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")         # (no sequence dropped)
        source = io.MinibatchSource([
            io.CTFDeserializer(ctf, io.StreamDefs(x=io.StreamDef(field="x", shape=1))),
            io.ImageDeserializer(map_file, io.StreamDefs(
                image=io.StreamDef(field="image", transforms=[]),
                label=io.StreamDef(field="label", shape=3)))], randomize=False, max_sweeps=1)
        mb = source.next_minibatch(100)
    keys = io.sequence_keys(source)
    source.close()
    assert mb["x"].data.reshape(-1).tolist() == refs["x"]
    assert mb["image"].data.reshape(len(mb["image"].data), -1)[:, 0].tolist() == refs["image"]
    assert keys == ["0", "1", "2", "3"]


@pytest.mark.parametrize("case", ["noid_then_ids_from_1", "ids_from_1_then_noid",
                                  "blank_lines_first_then_map"])
def test_line_keys_joined_with_ids_and_after_blank_lines(tmp_path, case):
    # a file without ids beside one with ids 1..4 (either first): the lines keyed 1..3 are
    # joined, line 0 and id 4 dropped; two blank lines before the text make its first line
    # key 2 (CNTK counts the file's lines from its start); refs from CNTK 2.7
    refs = json.loads((FIXTURE / "refs.json").read_text())["variations"][case]
    module = _make_refs()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # (Stadyn names the sequences it drops)
        source = io.MinibatchSource(module.variation_sources(io, str(tmp_path), case),
                                    randomize=False, max_sweeps=1)
        got = module.firsts(source, source.next_minibatch(100))
    source.close()
    assert got == refs
