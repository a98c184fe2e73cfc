"""CNTK's older language-model reader, ``readerType = "LMSequenceReader"``, on the PennTreebank
config and data of CNTK's own repository (``Examples/SequenceToSequence/PennTreebank``): its
sentence and sample counts and minibatches against those cntk.exe printed in its baseline log,
its word ids and classes against the files read by hand, and its errors.  The files come from a
copy of CNTK (``cntk_repo_files.py``); without one the tests that read them skip."""

from __future__ import annotations

import re

import numpy as np
import pytest

from stadyn import io
from stadyn._errors import ConfigError, DataError
from stadyn.brainscript import load_config, parse_config, reader_config, run_config
from stadyn.brainscript._deserializer_builders import lm_text
from stadyn.brainscript._readers import make_source

from cntk_repo_files import cntk_file, copy_cntk_file

PTB = "Examples/SequenceToSequence/PennTreebank"


# ---------------------------------------------------------------------------------------------
# LMSequenceReader: Examples/SequenceToSequence/PennTreebank/Config/rnn.cntk
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ptb(tmp_path_factory):
    data = tmp_path_factory.mktemp("ptb")
    config = copy_cntk_file(data, f"{PTB}/Config/rnn.cntk")
    vocab = copy_cntk_file(data, f"{PTB}/Data/vocab.txt")
    valid = copy_cntk_file(data, f"{PTB}/Data/ptb.valid.txt")
    copy_cntk_file(data, f"{PTB}/Data/ptb.test.txt")
    log = cntk_file("Tests/EndToEndTests/Examples/Text/PennTreebank/RNN/baseline.linux.cpu.txt")
    table = [ln.split() for ln in vocab.read_text().splitlines() if ln.strip()]
    return dict(data=data, config=config, valid=valid, log=log.decode("utf-8", "replace"),
                ids={w: int(i) for i, _, w, _ in table},
                cls={int(i): int(c) for i, _, _, c in table})


def _lm_reader(case, command, *overrides):
    root = load_config(str(case["config"]), [
        f"DataDir={case['data']}", f"OutputDir={case['data']}/out", f"command={command}",
        # as the end-to-end test's run-test does
        f'{command}=[reader=[wordclass="{case["data"]}/vocab.txt"]]',
        f'train=[cvReader=[wordclass="{case["data"]}/vocab.txt"]]',
        f"{command}=[reader=[nbruttsineachrecurrentiter=0]]", *overrides])
    return run_config(root).command(command)


def test_lmsequencereader_sentence_and_sample_counts_are_cntk_exes(ptb):
    cmd = _lm_reader(ptb, "train")
    # the cvReader reads ptb.valid.txt: "LMSequenceReader: Reading epoch data... 3370 sequences
    # read." and "Final Results: Minibatch[1-704]: ... * 73760" (every word but the first of a
    # sentence is a sample)
    reads = [int(n) for n in re.findall(r"Reading epoch data\.\.\. (\d+) sequences", ptb["log"])]
    validated = {int(n) for n in re.findall(r"Finished Epoch\[.*\[Validate\].* \* (\d+)",
                                            ptb["log"])}
    valid = lm_text(cmd.cv_reader.deserializers[0])
    assert len(valid) == 3370 and 3370 in reads
    assert validated == {int(valid.sequence_lengths().sum())} == {73760}
    # through the source (whole sentences a minibatch; a sweep of 10,000-wide one-hot rows is
    # 3 GB, so two minibatches here)
    source = make_source(cmd.cv_reader)
    for _ in range(2):
        mb = source.next_minibatch(256)
        assert 0 < mb["features"].num_samples <= 256
        assert mb["labels"].num_samples == mb["features"].num_samples
        assert mb["features"].data.shape[-1] == 10000 and mb["labels"].data.shape[-1] == 4
    # the test command reads ptb.test.txt: "3760 sequences read."
    assert len(lm_text(_lm_reader(ptb, "test").reader.deserializers[0])) == 3760
    assert 3760 in reads


def test_lmsequencereader_word_ids_and_classes_by_hand(ptb):
    reader = _lm_reader(ptb, "train").cv_reader
    deserializer = lm_text(reader.deserializers[0])
    first = [w for w in ptb["valid"].read_text().splitlines()[0].split()]
    ids = np.array([ptb["ids"].get(w, ptb["ids"]["<unk>"]) for w in first])
    sample = deserializer.read(0)
    assert sample["features"].shape == (len(ids) - 1, 10000)
    np.testing.assert_array_equal(sample["features"].argmax(-1), ids[:-1])
    assert (sample["features"].sum(-1) == 1).all()
    labels = sample["labels"]          # mode = "class": word, class, class begin, class end
    np.testing.assert_array_equal(labels[:, 0], ids[1:])
    classes = np.array([ptb["cls"][i] for i in ids[1:]])
    np.testing.assert_array_equal(labels[:, 1], classes)
    for c, begin, end in zip(classes, labels[:, 2], labels[:, 3]):
        members = [i for i, k in ptb["cls"].items() if k == c]
        assert (begin, end) == (min(members), max(members) + 1)


def test_lmsequencereader_softmax_mode_and_errors(tmp_path):
    (tmp_path / "v.txt").write_text("0 9 </s> 0\n1 5 a 0\n2 3 b 1\n3 1 <unk> 1\n")
    (tmp_path / "t.txt").write_text("</s> a b </s>\n</s> </s>\n</s> zzz a </s>\n")

    def reader(extra="", labels_type="nextWord", parallel=0):
        return reader_config(parse_config(f"""reader = [ readerType = "LMSequenceReader"
            file = "{tmp_path / 't.txt'}" ; wordclass = "{tmp_path / 'v.txt'}"
            nbruttsineachrecurrentiter = {parallel} ; {extra}
            words = [ dim = 0 ; mode = "softmax" ]
            labelIn = [ labelType = "category" ; labelDim = 4 ]
            labels = [ labelType = "{labels_type}" ] ]""", "lm.cntk")["reader"])

    d = lm_text(reader().deserializers[0])
    assert len(d) == 2 and d.sequence_lengths().tolist() == [3, 3]
    assert d.read(1)["words"].argmax(-1).tolist() == [0, 3, 1]        # zzz -> <unk>
    assert d.read(0)["labels"][:, 0].tolist() == [1, 2, np.float32(1e-6)]  # CNTK's 0 -> 1e-6
    for kwargs, words in [({"parallel": "a"}, "'nbruttsineachrecurrentiter' must be a whole "),
                          ({"labels_type": "category"}, "labelType = 'category'"),
                          ({"extra": "randomize = maybe"}, None)]:
        if words is None:
            reader(**kwargs)                # CNTK's reader ignored randomize
            continue
        with pytest.raises(ConfigError, match=words) as info:
            make_source(reader(**kwargs))
        assert info.value.path == "lm.cntk"
    # an existing labelMappingFile numbers the words (one a line), not the word-class file
    (tmp_path / "map.txt").write_text("b\n</s>\na\n<unk>\n")
    mapped = reader(extra=f'labelIn = [ labelMappingFile = "{tmp_path / "map.txt"}" ]')
    assert lm_text(mapped.deserializers[0]).tokens(0).tolist() == [1, 2, 0, 1]
    (tmp_path / "t.txt").write_text("</s> a c </s>\n")
    (tmp_path / "v.txt").write_text("0 9 </s> 0\n1 5 a 0\n")
    with pytest.raises(DataError, match="'c' is not in the vocabulary") as err:
        make_source(reader())
    assert err.value.line == 1


def test_lmsequencereader_fill_mode_minibatches_are_cntk_exes(ptb):
    # nbruttsineachrecurrentiter = 0 (PTB's rnn.cntk): cntk.exe's DetermineSequencesToProcess
    # groups sentences of one length while their words stay under the minibatch size; the
    # validation passes of its log: "Final Results: Minibatch[1-704]" (minibatchSize 128) and
    # "Minibatch[1-193]" (512), 73760 samples each
    cmd = _lm_reader(ptb, "train")
    assert re.search(r"Final Results: Minibatch\[1-704\]: .* \* 73760;", ptb["log"])
    assert re.search(r"Final Results: Minibatch\[1-193\]: .* \* 73760;", ptb["log"])
    for size, count in ((128, 704), (512, 193)):
        source = make_source(cmd.cv_reader)       # read as a cvReader: no start_epoch
        minibatches, samples = 0, 0
        while mb := source.next_minibatch(size):
            minibatches += 1
            samples += mb["labels"].num_samples
            lengths = mb["labels"].lengths
            assert len(set(lengths.tolist())) == 1          # one sentence length a minibatch
            assert len(lengths) == 1 or int((lengths + 1).sum()) < size   # a sentence's words
        assert (minibatches, samples) == (count, 73760)


def test_lmsequencereader_fill_mode_by_hand(tmp_path):
    # words (with both </s>): 4, 5, 4, 4, 3 -> steps 3, 4, 3, 3, 2; minibatch size 9 in the
    # file's order: sentences 0 and 2 (4 + 4 = 8 < 9; adding sentence 3 would make 12 >= 9),
    # then 1, then 3, then 4
    (tmp_path / "v.txt").write_text("0 9 </s> 0\n1 5 a 0\n2 3 b 1\n3 1 <unk> 1\n")
    (tmp_path / "t.txt").write_text("</s> a b </s>\n</s> a b a </s>\n</s> b b </s>\n"
                                    "</s> a a </s>\n</s> b </s>\n")
    reader = reader_config(parse_config(f"""reader = [ readerType = "LMSequenceReader"
        file = "{tmp_path / 't.txt'}" ; wordclass = "{tmp_path / 'v.txt'}"
        nbruttsineachrecurrentiter = 0
        words = [ dim = 0 ; mode = "softmax" ]
        labelIn = [ labelType = "category" ; labelDim = 4 ]
        labels = [ labelType = "nextWord" ] ]""", "lm.cntk")["reader"])
    assert make_source(reader).parallel == 0
    source = io.LMSentenceSource(lm_text(reader.deserializers[0]), 0, randomize=False)
    seen = []
    while mb := source.next_minibatch(9):
        words = mb["words"]
        seen.append([words.data[k, :n].argmax(-1).tolist() for k, n in enumerate(words.lengths)])
    assert seen == [[[0, 1, 2], [0, 2, 2]], [[0, 1, 2, 1]], [[0, 1, 1]], [[0, 2]]]
