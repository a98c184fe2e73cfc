"""A UTF-8 byte order mark at the start of a line of a config or BrainScript file, which cntk.exe
drops (File::GetLine, File.cpp:331-336, reads every line of both: Config.cpp:218-220,
BrainScriptParser.cpp:40).  CNTK's Tests/EndToEndTests/Image/Base64Write/EvalNetOnImages.cntk
starts with one: its baseline.txt lists ``EvalNetOnImages.cntk:data=...`` (the key without it)
and the reader's ``file = "$data$"`` resolved.  At a113996d Stadyn refused the file as "not a
config file"."""

from __future__ import annotations

import pytest

from stadyn.brainscript import load_config, parse_file, run_config
from cntk_repo_files import copy_cntk_file

BOM = "\ufeff"


def test_a_config_file_starting_with_a_bom_reads_as_cntk(tmp_path):
    path = tmp_path / "c.cntk"
    path.write_text(f'{BOM}data = "d.txt"\ncommand = Output\nOutput = {{ action = write ; '
                    'file = "$data$" }\n', encoding="utf-8")
    config = load_config(str(path))
    assert config["data"] == "d.txt"
    assert config["Output"]["file"] == "d.txt"


def test_a_bom_at_a_later_lines_start_is_dropped_too(tmp_path):
    # (File.cpp: "We strip it from any string, not just at the start", so that files joined
    # with cat read)
    path = tmp_path / "c.cntk"
    path.write_text(f"{BOM}a = 1\r\n{BOM}b = 2\n", encoding="utf-8")
    config = load_config(str(path))
    assert (config["a"], config["b"]) == ("1", "2")


def test_a_brainscript_file_starting_with_a_bom_parses(tmp_path):
    path = tmp_path / "lib.bs"
    path.write_text(f"{BOM}Double (x) = x + x\n", encoding="utf-8")
    assert [m.name for m in parse_file(str(path)).members] == ["Double"]


def test_cntks_evalnetonimages_config_reads(tmp_path):
    path = copy_cntk_file(tmp_path, "Tests/EndToEndTests/Image/Base64Write/EvalNetOnImages.cntk")
    config = load_config(str(path), overrides=["DataDir=/data", "RunDir=/run",
                                               "EvalModelDir=/models"])
    assert config["data"] == "/data/ImagesAndLabels_4Bad2Good.txt"
    [cmd] = run_config(config).commands
    assert cmd.action == "write"


if __name__ == "__main__":
    pytest.main([__file__])
