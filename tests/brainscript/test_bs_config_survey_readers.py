"""``tools/cntk_config_survey.py`` opens each command's reader as the command would, without
its data: a setting refused on the config alone is a gap (``reader opened: ...``), a data file
that is not there is not.  At 1154ef55 the survey only looked at the deserializer types."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from stadyn.brainscript import load_config, run_config

TOOLS = Path(__file__).resolve().parents[2] / "tools"


@pytest.fixture(scope="module")
def survey():
    sys.path.insert(0, str(TOOLS))       # (its sibling cntk_model_stand_ins)
    try:
        spec = importlib.util.spec_from_file_location("bs_survey_under_test",
                                                      TOOLS / "cntk_config_survey.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(TOOLS))


def _gaps(survey, tmp_path, reader: str, sgd: str = "learningRatesPerSample = 0.1") -> list:
    text = f"""command = train
train = {{
    action = "train" ; modelPath = "{tmp_path}/m"
    SGD = {{ maxEpochs = 1 ; minibatchSize = 8 ; {sgd} }}
    BrainScriptNetworkBuilder = {{
        x = Input {{2}} ; y = Input {{2}} ; W = ParameterTensor {{(2:2)}}
        ce = CrossEntropyWithSoftmax (y, W * x) ; criterionNodes = (ce)
    }}
    {reader}
}}
"""
    path = tmp_path / "c.cntk"
    path.write_text(text)
    cmd = run_config(load_config(str(path))).commands[0]
    return survey._reader_open_gaps(cmd.reader, True) + survey._truncated_rates_gaps(cmd)


def _list(settings: str) -> str:
    return f"""reader = {{ {settings}
        deserializers = ({{ type = "CNTKTextFormatDeserializer" ; file = "/nowhere/d.ctf"
            input = {{ x = {{ dim = 2 ; format = "dense" }}
                       y = {{ dim = 2 ; format = "dense" }} }} }}) }}"""


def test_a_reader_is_opened_without_its_data(survey, tmp_path):
    # no data file: nothing to report on the config alone
    assert _gaps(survey, tmp_path, _list("randomize = false")) == []
    assert _gaps(survey, tmp_path, _list("truncated = true ; truncationLength = 4"),
                 "learningRatesPerSample = 0.1 ; momentumAsTimeConstant = 0") == []
    # refused on the config alone, each when its command opens the reader (the deserializer's
    # own checks, then the source's settings)
    (gap,) = _gaps(survey, tmp_path, _list("frameMode = true ; truncated = true"))
    assert gap.startswith("reader opened: ConfigError: frameMode and truncated BPTT are "
                          "mutually exclusive")
    bad = _gaps(survey, tmp_path, _list("randomizationSeed = x"))
    assert bad == ["reader opened: ConfigError: randomizationSeed must be an integer, got 'x'"]
    bad = _gaps(survey, tmp_path, _list("").replace('format = "dense" }\n', 'format = "csv" }\n'))
    assert len(bad) == 1 and bad[0].startswith("reader opened: ConfigError") and "csv" in bad[0]
    # SGD's truncated (here the top of the train block) with a rate per minibatch: cntk.exe's
    # RuntimeError at the first epoch (CompositeDataReader/Exports.cpp:26-31, SGD.h:142-158)
    gaps = _gaps(survey, tmp_path, "truncated = true\n" +
                 _list("truncationLength = 4"), "learningRatesPerMB = 0.1")
    assert len(gaps) == 1 and "Learning rate and momentum are not supported per minibatch" \
        in gaps[0]
