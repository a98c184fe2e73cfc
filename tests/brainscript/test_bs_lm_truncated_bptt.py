"""LMSequenceReader's ``nbruttsineachrecurrentiter = N`` (``io.LMSentenceSource``): N sentences
of one length a minibatch, cut into minibatch-size pieces, by cntk.exe's rule
(Source/Readers/LMSequenceReader/SequenceReader.cpp, ``DetermineSequencesToProcess`` and
``GetMinibatchData``) worked by hand; a sweep's sample count against the PennTreebank baseline
log; the recurrent state carried between the pieces against the whole sentence run at once."""

from __future__ import annotations

import io as pyio
import re

import numpy as np
import pytest

import stadyn as sd
from stadyn import io
from stadyn._errors import ConfigError
from stadyn.brainscript import parse_config, reader_config, run
from stadyn.brainscript._readers import make_source
from stadyn.brainscript._state_carry import StateCarry
from test_bs_lmsequencereader import ptb, _lm_reader  # noqa: F401 (a fixture)
from test_bs_truncated_bptt import LSTM, _network, _pieces_run, _Utterances


def _rows(source, epoch, size, steps):
    source.start_epoch(epoch, size, steps)
    out = []
    while mb := source.next_minibatch(steps):
        layout = source.layout
        out.append([(int(n), b, g) for n, b, g in zip(mb["x"].lengths, layout.begins,
                                                       layout.goes_on)])
    return out


def test_sentences_of_one_length_in_minibatch_size_pieces_by_hand():
    # sentences of 3, 2, 3, 3 and 5 steps in file order, two streams, 2 steps a minibatch:
    # the first not processed sentence and the next of its length (0 and 2), both cut into
    # [0:2] then [2:3]; then 1 alone (3 is of another length, and is next after it); then 3,
    # which finds no other sentence of 3 steps left; then 4 in three pieces
    source = io.LMSentenceSource(_Utterances([3, 2, 3, 3, 5]), 2, randomize=False)
    first, on, last = (2, True, True), (2, False, True), (1, False, False)
    assert _rows(source, 0, 0, 2) == [
        [first, first], [last, last],
        [(2, True, False)],
        [first], [last],
        [first], [on], [last]]
    # the epoch ends, checked before each minibatch, once the samples given out exceed the
    # epoch size (m_epochSamplesReturned > m_epochSize): 4 <= 5 reads on, 6 > 5 stops
    assert _rows(source, 0, 5, 2) == [[first, first], [last, last]]
    assert _rows(source, 0, 4, 2) == [[first, first], [last, last]]
    assert _rows(source, 0, 3, 2) == [[first, first]]
    # nbruttsineachrecurrentiter = 1 and a minibatch longer than every sentence (PennTreebank
    # rnn.cntk's write command: "one sentence per minibatch"): whole sentences, one a minibatch
    source = io.LMSentenceSource(_Utterances([3, 2, 4]), 1, randomize=False)
    assert _rows(source, 0, 0, 8192) == [[(3, True, False)], [(2, True, False)],
                                         [(4, True, False)]]
    # read without start_epoch (an evaluation, a write action: nothing carries the state
    # there), one pass of whole sentences, whatever the size asked for
    source = io.LMSentenceSource(_Utterances([3, 2, 3]), 2, randomize=False)
    whole = [list(source.next_minibatch(1)["x"].lengths) for _ in range(2)]
    assert whole == [[3, 3], [2]] and source.next_minibatch(1) == {}


def test_a_shuffled_epoch_gives_every_sentence_once():
    lengths = [4, 2, 4, 3, 2, 4, 6, 3, 2, 2]
    source = io.LMSentenceSource(_Utterances(lengths), 3)
    rows = _rows(source, 1, 0, 3)
    assert sum(n for mb in rows for n, _, _ in mb) == sum(lengths)
    assert max(len(mb) for mb in rows) == 3
    assert all(len({n for n, _, _ in mb}) == 1 for mb in rows)    # one length a minibatch
    assert rows != _rows(source, 2, 0, 3)                        # shuffled each epoch


def test_a_sweep_of_ptb_valid_is_the_baseline_logs_73760_samples(ptb):  # noqa: F811
    # Tests/EndToEndTests/Examples/Text/PennTreebank/RNN/baseline.linux.cpu.txt line 442:
    # "Finished Epoch[ 1 of 3]: [Validate] ... * 73760" (every word of a sentence but the
    # first is a sample, however the sentences are grouped); here 32 sentences of 35 steps
    cmd = _lm_reader(ptb, "train", "train=[cvReader=[nbruttsineachrecurrentiter=32]]")
    assert re.search(r"Finished Epoch\[ 1 of 3\]: \[Validate\].* \* 73760", ptb["log"])
    source = make_source(cmd.cv_reader)
    assert isinstance(source, io.LMSentenceSource) and source.parallel == 32
    source.start_epoch(0, 0, 35)
    total, rows = 0, 0
    labels = {next(k for k in source.streams if k.lower() == "labels"): "labels"}
    while mb := source.next_minibatch(35, labels):
        total += mb["labels"].num_samples
        rows = max(rows, mb["labels"].num_sequences)
        assert mb["labels"].data.shape[1] <= 35
    assert total == 73760 and rows == 32


@pytest.mark.parametrize("parallel", [1, 3])
def test_carried_state_equals_the_whole_sentence_forward(parallel):
    # BrainScript's LSTM layer over sentences cut into pieces of 4 steps, N sentences of one
    # length at a time: each sentence's outputs are those it gives run whole
    lengths = [9, 3, 9, 6, 9, 11, 6, 4]
    source = io.LMSentenceSource(_Utterances(lengths, 2), parallel, randomize=False)
    net = _network(LSTM)
    z = net.nodes["z"]
    sentences, _ = _pieces_run(net, z, source, 4, 0)
    assert sorted(len(u) for u, _ in sentences) == sorted(lengths)
    for inputs, outputs in sentences:
        net.nodes["x"].d = [inputs]
        z.forward()
        np.testing.assert_allclose(outputs, sd.sequence.unpack_value(z)[0], rtol=1e-5,
                                   atol=1e-6)


def lm_source(folder, settings: str, words: int):
    """The source of an LMSequenceReader block over folder's t.txt and v.txt (``words``
    words in the vocabulary), with ``settings`` added to the block."""
    return make_source(reader_config(parse_config(f"""reader = [
        readerType = "LMSequenceReader" ; {settings}
        file = "{folder / 't.txt'}" ; wordclass = "{folder / 'v.txt'}"
        words = [ dim = 0 ; mode = "softmax" ]
        labelIn = [ labelType = "category" ; labelDim = {words} ]
        labels = [ labelType = "nextWord" ] ]""", "lm.cntk")["reader"]))


def test_nbruttsineachrecurrentiter_values(tmp_path):
    (tmp_path / "v.txt").write_text("0 9 </s> 0\n1 5 a 0\n2 3 b 1\n3 1 <unk> 1\n")
    (tmp_path / "t.txt").write_text("</s> a b </s>\n</s> b a b </s>\n")

    def source(parallel):
        line = "" if parallel is None else f"nbruttsineachrecurrentiter = {parallel}"
        return lm_source(tmp_path, line, 4)

    # cntk.exe's default is 1 (readerConfig(L"nbruttsineachrecurrentiter", (size_t) 1))
    assert source(None).parallel == 1 and source(4).parallel == 4
    assert source(0).parallel == 0          # 0: whole sentences filled by the word count
    for bad in ("x", "-1", "2:4"):
        with pytest.raises(ConfigError, match="nbruttsineachrecurrentiter") as err:
            source(bad)
        assert err.value.path == "lm.cntk"


def test_a_language_model_trains_on_truncated_sentences(tmp_path, monkeypatch):
    # the train command with nbruttsineachrecurrentiter = 2 and minibatchSize = 2 (steps a
    # sentence): sentences of 4, 2, 6 and 3 steps (all lengths differ: one a group) in pieces
    # of at most 2 steps, the LSTM's state carried from piece to piece; every step once
    from test_bs_class_softmax import LM_READER, _lm_files
    _lm_files(tmp_path)
    reader = LM_READER.format(dir=tmp_path).replace("nbruttsineachrecurrentiter = 0",
                                                    "nbruttsineachrecurrentiter = 2")
    network = ("features = Input {7} ; labels = Input {4} ; h = RecurrentLSTMLayer {5} "
               "(features) ; W = ParameterTensor {(5:7)} ; Wc = Parameter (3, 5) ; "
               "ce = ClassBasedCrossEntropyWithSoftmax (labels, h, W, Wc * h) ; "
               "criterionNodes = (ce)")
    sgd = ("epochSize = 0 ; minibatchSize = 2 ; learningRatesPerSample = 0.1 ; maxEpochs = 2 ; "
           "unroll = false")
    (tmp_path / "lm.cntk").write_text(
        f'command = train:test\ndeviceId = -1 ; modelPath = "{tmp_path}/out/lm"\n'
        f"train = [ action = \"train\"\nBrainScriptNetworkBuilder = [ {network} ]\n"
        f"SGD = [ {sgd} ]\n{reader} ]\n"
        f"test = [ action = \"test\" ; minibatchSize = 1\n{reader} ]\n")
    seen, before = [], StateCarry.before

    def spy(self):
        before(self)
        seen.append((len(self.carries), tuple(self._layout.begins)))

    monkeypatch.setattr(StateCarry, "before", spy)
    out = pyio.StringIO()
    run(str(tmp_path / "lm.cntk"), out=out)
    text = out.getvalue()
    assert len(re.findall(r"Finished Epoch\[ ?\d of 2\]: \[Training\] ce = [0-9.]+ \* 15;",
                          text)) == 2
    # 4 = 2 + 2, 2, 6 = 2 + 2 + 2, 3 = 2 + 1 steps: 8 minibatches an epoch, 4 going on
    assert len(seen) == 16 and sum(not b for _, (b,) in seen) == 8
    assert {n for n, _ in seen} == {1}            # the LSTM's recurrence carries its state
    # the test command reads whole sentences (minibatchSize = 1 would be pieces of one step,
    # which cntk.exe ran with the state carried): every step once, one sentence a minibatch
    assert re.search(r"Final Results: Minibatch\[1-4\]: ce = [0-9.]+ \* 15;", text)
