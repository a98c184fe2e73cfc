"""A block named by ``$name$`` in another (``SGD = $S$``) is pasted there, as cntk.exe's
``ConfigParameters::ResolveVariables`` substitutes the text (Source/Common/Include/Config.h) and
``config(L"SGD")`` makes it a child of the command block: it inherits the command block's
settings (``modelPath`` read by ``SGD``'s constructor through the parent chain), whether the
block and the settings come from the config file or from command-line overrides."""

from __future__ import annotations

import pytest

from stadyn.brainscript import load_config, parse_config, run_config

_CONFIG = """command = T
T = [ action = "train" ; {model}
  SGD = $S$
  BrainScriptNetworkBuilder = [ x = Input {{2}} ]
  reader = [ readerType = "CNTKTextFormatReader" ; file = "d.txt" ; input = [ x = [ dim = 2 ] ] ]
]
{s}
"""
_S = "S = [ minibatchSize = 2 ; maxEpochs = 1 ; learningRatesPerSample = 0.1 ]"


@pytest.mark.parametrize("model, s, overrides", [
    ('modelPath = "m/model"', _S, []),                     # both in the file
    ('modelPath = "m/model"', "", [_S.replace(" ", "")]),  # S on the command line
    ("", _S, ["T=[modelPath=m/model]"]),                   # modelPath on the command line
    ("", "", [_S.replace(" ", ""), "T=[modelPath=m/model]"]),
])
def test_a_substituted_block_inherits_where_it_is_pasted(tmp_path, model, s, overrides):
    path = tmp_path / "x.cntk"
    path.write_text(_CONFIG.format(model=model, s=s))
    (cmd,) = run_config(load_config(path, overrides)).commands
    assert cmd.model_path == "m/model" and cmd.sgd.max_epochs == 1


def test_the_definers_own_settings_still_come_after():
    # settings of the block around the definition are inherited too (the command block lies
    # inside it): the top level's modelPath
    path_text = _CONFIG.format(model="", s=_S) + 'modelPath = "top/model"\n'
    (cmd,) = run_config(parse_config(path_text, "x.cntk")).commands
    assert cmd.model_path == "top/model"
