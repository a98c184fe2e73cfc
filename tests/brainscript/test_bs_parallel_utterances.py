"""``stadyn train --nproc N`` with an utterance-mode ``HTKMLFReader`` (``frameMode = false``):
cntk.exe splits the utterances among the workers (HTKMLFReader::StartDistributedMinibatchLoop,
``subsetNum`` of ``numSubsets``); Stadyn's utterance reader does not yet, so the train command
refuses it up front, naming the reader's ``frameMode`` line, before anything is built or read
(a ValueError from the reader in the middle of fit before)."""

from __future__ import annotations

import io

import pytest

from stadyn import ConfigError
from stadyn.brainscript import parse_config, run_config
from stadyn.brainscript._cntk_log import CNTKLog
from stadyn.brainscript._runner import _Runner

_CONFIG = """command = T ; deviceId = -1
T = [ action = "train" ; modelPath = "m/model"
  BrainScriptNetworkBuilder = [ features = Input {2} ; labels = Input {3}
    z = DenseLayer {3} (features) ; ce = CrossEntropyWithSoftmax (labels, z)
    criterionNodes = (ce) ]
  SGD = [ minibatchSize = 8 ; learningRatesPerSample = 0.1 ; maxEpochs = 1 ]
  reader = [ readerType = "HTKMLFReader" ; readMethod = "blockRandomize"
    frameMode = false ; nbruttsineachrecurrentiter = 2
    features = [ dim = 2 ; scpFile = "none.scp" ]
    labels = [ mlfFile = "none.mlf" ; labelMappingFile = "none.txt" ; labelDim = 3 ] ]
]
"""


class _TwoWorkers:
    rank, size, is_main = 0, 2, True

    def barrier(self) -> None:
        pass

    def data_parallel(self, params):
        return None


def test_whole_utterances_in_a_data_parallel_job_are_refused_up_front():
    config = run_config(parse_config(_CONFIG, "job.cntk"))
    runner = _Runner(config, CNTKLog(io.StringIO(), None, False), _TwoWorkers())
    with pytest.raises(ConfigError, match="frameMode = false .* data-parallel job") as e:
        runner.train(config.command("T"))
    assert (e.value.path, e.value.line) == ("job.cntk", 8)


# the job above with an LMSequenceReader block
_LM = _CONFIG.split("  reader = [")[0] + """  reader = [ readerType = "LMSequenceReader"
    file = "none.txt" ; wordclass = "none.txt"
    NBRUTTS
    features = [ dim = 0 ] ; labelIn = [ labelType = "category" ; labelDim = 3 ]
    labels = [ labelType = "nextWord" ] ]
]
"""


@pytest.mark.parametrize("setting, line", [("nbruttsineachrecurrentiter = 4", 9), ("", 7)])
def test_lm_sentences_in_a_data_parallel_job_are_refused_up_front(setting, line):
    # cntk.exe's LMSequenceReader cannot read distributed: every worker read each minibatch
    # and kept its share of the sentences (DecimateMinibatchInPlace); Stadyn's sentence source
    # has no such split, and gave a ValueError in the middle of fit. Refused before anything is
    # read, naming nbruttsineachrecurrentiter (its default 1 is cntk.exe's: the readerType line)
    config = run_config(parse_config(_LM.replace("NBRUTTS", setting), "lm.cntk"))
    runner = _Runner(config, CNTKLog(io.StringIO(), None, False), _TwoWorkers())
    with pytest.raises(ConfigError, match="LMSequenceReader .* data-parallel job") as e:
        runner.train(config.command("T"))
    assert (e.value.path, e.value.line) == ("lm.cntk", line)
