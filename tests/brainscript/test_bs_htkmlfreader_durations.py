"""cntk.exe's HTKMLFReader skips an utterance whose label duration is not its frame count
(utterancesourcemulti.h, minibatchutterancesourcemulti: ``if (labframes != uttframes)`` prints
" [duration mismatch (%d in label vs. %d in feat file), skipping %ls]" and counts it with the
unlabelled ones, more than half of which is "too many files not found in label set")."""

from __future__ import annotations

import numpy as np
import pytest

from stadyn import io
from stadyn._errors import ConfigError
from stadyn.brainscript import parse_config, reader_config
from stadyn.brainscript._readers import make_source


def _files(tmp_path, durations):
    io.write_htk_features(tmp_path / "f.htk", np.arange(40, dtype=np.float32).reshape(20, 2))
    (tmp_path / "f.scp").write_text("".join(f"u{i}=f.htk[{5 * i},{5 * i + 4}]\n"
                                            for i in range(4)))
    (tmp_path / "s.txt").write_text("a\nb\n")
    (tmp_path / "l.mlf").write_text("#!MLF!#\n" + "".join(
        f'"u{i}.lab"\n0 {n} {"ab"[i % 2]}\n.\n' for i, n in enumerate(durations)))


def _reader(frame_mode):
    return reader_config(parse_config(
        f'r = [ readerType = "HTKMLFReader" ; readMethod = "none" ; frameMode = {frame_mode}\n'
        '  features = [ dim = 2 ; scpFile = "f.scp" ; type = "real" ]\n'
        '  labels = [ mlfFile = "l.mlf" ; labelMappingFile = "s.txt" ; labelDim = 2\n'
        '             labelType = "category" ] ]', "speech.cntk")["r"])


@pytest.mark.parametrize("frame_mode", ["true", "false"])
def test_an_utterance_whose_labels_are_longer_or_shorter_is_skipped(tmp_path, monkeypatch,
                                                                     frame_mode):
    # u1: 6 label frames for 5 feature frames, u3: 4 for 5 -- both skipped, one frame off is
    # already a mismatch (no tolerance); u0 and u2 are read, each frame with its own label
    monkeypatch.chdir(tmp_path)
    _files(tmp_path, [5, 6, 5, 4])
    said = []
    source = make_source(_reader(frame_mode), max_sweeps=1, warn=said.append)
    assert [m for m in said if "duration" in m] == [
        "HTKMLFReader: [duration mismatch (6 in label vs. 5 in feat file), skipping u1]",
        "HTKMLFReader: [duration mismatch (4 in label vs. 5 in feat file), skipping u3]"]
    features, labels = [], []
    while mb := source.next_minibatch(5):
        f, lab = mb["features"], mb["labels"]
        assert f.num_samples == lab.num_samples
        if f.lengths is None:
            features.append(f.data)
            labels.append(lab.data)
        else:
            features += [f.data[k, :n] for k, n in enumerate(f.lengths)]
            labels += [lab.data[k, :n] for k, n in enumerate(lab.lengths)]
    features, labels = np.concatenate(features), np.concatenate(labels)
    # u0 (frames 0-4) and u2 (frames 10-14), both labelled 'a'
    np.testing.assert_array_equal(features[:, 0], [0, 2, 4, 6, 8, 20, 22, 24, 26, 28])
    np.testing.assert_array_equal(labels, np.tile([1.0, 0.0], (10, 1)))


def test_more_than_half_skipped_is_cntk_exes_broken_configuration(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _files(tmp_path, [5, 6, 4])          # u3 has no label, u1 and u2 a mismatched one: 3 of 4
    with pytest.warns(UserWarning, match="duration mismatch"):
        with pytest.raises(ConfigError, match="1 of the 4 utterances have no label .* and 2 a "
                           "label duration .*too many files not found in label set") as err:
            make_source(_reader("true"))
    assert (err.value.path, err.value.line) == ("speech.cntk", 1)   # the reader block


def _two_streams(tmp_path, second_frames):
    _files(tmp_path, [5, 5, 5, 5])
    io.write_htk_features(tmp_path / "g.htk", np.arange(60, dtype=np.float32).reshape(30, 2))
    start = np.concatenate([[0], np.cumsum(second_frames)])
    (tmp_path / "g.scp").write_text("".join(f"u{i}=g.htk[{start[i]},{start[i + 1] - 1}]\n"
                                            for i in range(4)))
    return reader_config(parse_config(
        'r = [ readerType = "HTKMLFReader" ; readMethod = "none" ; frameMode = true\n'
        '  features = [ dim = 2 ; scpFile = "f.scp" ; type = "real" ]\n'
        '  more = [ dim = 2 ; scpFile = "g.scp" ; type = "real" ]\n'
        '  labels = [ mlfFile = "l.mlf" ; labelMappingFile = "s.txt" ; labelDim = 2\n'
        '             labelType = "category" ] ]', "speech.cntk")["r"])


def test_an_utterance_of_another_length_in_a_second_feature_stream_is_skipped(tmp_path,
                                                                              monkeypatch):
    # utterancesourcemulti.h: "skipping %d-th file due to inconsistency in duration in
    # different feature streams (%d vs %d frames)"; more than half is "too many files with
    # inconsistent durations, assuming broken configuration"
    monkeypatch.chdir(tmp_path)
    said = []
    source = make_source(_two_streams(tmp_path, [5, 6, 5, 5]), max_sweeps=1, warn=said.append)
    assert said == ["HTKMLFReader: skipping 1-th file due to inconsistency in duration in "
                    "different feature streams (5 vs 6 frames)"]
    frames = []
    while mb := source.next_minibatch(5):
        assert mb["features"].num_samples == mb["more"].num_samples == mb["labels"].num_samples
        frames += mb["features"].data[:, 0].tolist()
    assert frames == [0, 2, 4, 6, 8, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38]   # u0, u2, u3
    with pytest.raises(ConfigError, match="3 of the 4 utterances have another frame count.*"
                       "too many files with inconsistent durations"):
        make_source(_two_streams(tmp_path, [5, 6, 6, 6]), warn=said.append)
