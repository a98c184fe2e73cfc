"""cntk.exe's HTKMLFReader skips an utterance whose label duration is not its frame count
(utterancesourcemulti.h, minibatchutterancesourcemulti: ``if (labframes != uttframes)`` prints
" [duration mismatch (%d in label vs. %d in feat file), skipping %ls]" and counts it with the
unlabelled ones, more than half of which is "too many files not found in label set")."""

from __future__ import annotations

import numpy as np
import pytest

from stadyn import io
from stadyn._errors import ConfigError, DataError
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


def _reordered(tmp_path, keys, lines=4):
    """A second feature stream whose script lists utterance ``keys[i]`` on line i (its frames
    are those of the same key of f.htk plus 100)."""
    _files(tmp_path, [5, 5, 5, 5])
    io.write_htk_features(tmp_path / "g.htk",
                          100 + np.arange(40, dtype=np.float32).reshape(20, 2))
    (tmp_path / "g.scp").write_text("".join(f"u{k}=g.htk[{5 * k},{5 * k + 4}]\n"
                                            for k in keys[:lines]))
    return reader_config(parse_config(
        'r = [ readerType = "HTKMLFReader" ; readMethod = "none" ; frameMode = true\n'
        '  features = [ dim = 2 ; scpFile = "f.scp" ; type = "real" ]\n'
        '  more = [ dim = 2 ; scpFile = "g.scp" ; type = "real" ]\n'
        '  labels = [ mlfFile = "l.mlf" ; labelMappingFile = "s.txt" ; labelDim = 2\n'
        '             labelType = "category" ] ]', "speech.cntk")["r"])


def test_feature_scripts_are_paired_line_by_line_not_by_key(tmp_path, monkeypatch):
    # cntk.exe's HTKMLFReader hands the script files' lines to minibatchutterancesourcemulti
    # as lists and takes line i of each together (utterancesourcemulti.h:946-948, no key is
    # compared); the labels are those of the first script's key. g.scp lists u2 u0 u3 u1.
    monkeypatch.chdir(tmp_path)
    source = make_source(_reordered(tmp_path, [2, 0, 3, 1]), max_sweeps=1)
    features, more, labels = [], [], []
    while mb := source.next_minibatch(5):
        features += mb["features"].data[:, 0].tolist()
        more += mb["more"].data[:, 0].tolist()
        labels += mb["labels"].data[:, 1].tolist()
    f = np.arange(0, 40, 2, dtype=np.float64)                # u0 u1 u2 u3 of f.htk
    g = 100 + np.concatenate([f[10:15], f[0:5], f[15:20], f[5:10]])   # u2 u0 u3 u1 of g.htk
    np.testing.assert_array_equal(features, f)
    np.testing.assert_array_equal(more, g)
    np.testing.assert_array_equal(labels, np.repeat([0, 1, 0, 1], 5))   # u0 'a', u1 'b', ...


def test_feature_scripts_of_different_lengths_are_an_error(tmp_path, monkeypatch):
    # HTKMLFReader.cpp:370-371: "number of files in each scriptfile inconsistent (%d vs. %d)"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataError, match="stream 'more' lists 3 utterances and stream "
                       "'features' 4.*number of files in each scriptfile inconsistent") as err:
        make_source(_reordered(tmp_path, [0, 1, 2], lines=3))
    assert err.value.path.endswith("g.scp")


def test_cntk2_deserializers_still_join_feature_streams_by_key(tmp_path):
    # CNTK 2.7's HTKFeatureDeserializer with two streams whose scripts list u1 u2 u3 and
    # u3 u1 u2 gave each utterance its own key's frames (run under CNTK 2.7: a = 1.x, b = 10.x
    # for u1, 2.x/20.x for u2, 3.x/30.x for u3)
    for k, n in ((1, 3), (2, 4), (3, 5)):
        io.write_htk_features(tmp_path / f"u{k}a.htk", np.full((n, 1), k, np.float32))
        io.write_htk_features(tmp_path / f"u{k}b.htk", np.full((n, 1), 10 * k, np.float32))
    (tmp_path / "a.scp").write_text("".join(f"u{k}={tmp_path}/u{k}a.htk[0,{n - 1}]\n"
                                            for k, n in ((1, 3), (2, 4), (3, 5))))
    (tmp_path / "b.scp").write_text("".join(f"u{k}={tmp_path}/u{k}b.htk[0,{n - 1}]\n"
                                            for k, n in ((3, 5), (1, 3), (2, 4))))
    des = io.HTKFeatureDeserializer(io.StreamDefs(
        a=io.StreamDef(shape=1, scp=str(tmp_path / "a.scp")),
        b=io.StreamDef(shape=1, scp=str(tmp_path / "b.scp"))))
    for i in range(3):
        row = des.read(i)
        assert row["b"].ravel().tolist() == [10 * v for v in row["a"].ravel().tolist()]


@pytest.mark.parametrize("frame_mode", ["true", "false"])
def test_every_stream_drops_the_same_utterances(tmp_path, monkeypatch, frame_mode):
    # one utterance skipped for each of cntk.exe's reasons: u1 has 6 frames in the second
    # feature stream (inconsistent durations), u3 a label of 4 frames for 5 (duration
    # mismatch), u4 no label.  The screening drops them from the features, the joined source
    # drops u4 by key; every frame read must still come with its own utterance's frame of the
    # second stream and its own label, none read twice (u0, u2, u5: 15 frames)
    monkeypatch.chdir(tmp_path)
    io.write_htk_features(tmp_path / "f.htk", np.arange(60, dtype=np.float32).reshape(30, 2))
    (tmp_path / "f.scp").write_text("".join(f"u{i}=f.htk[{5 * i},{5 * i + 4}]\n"
                                            for i in range(6)))
    g_frames = [5, 6, 5, 5, 5, 5]
    g_start = np.concatenate([[0], np.cumsum(g_frames)])
    io.write_htk_features(tmp_path / "g.htk",
                          1000 + np.arange(2 * g_start[-1], dtype=np.float32).reshape(-1, 2))
    (tmp_path / "g.scp").write_text("".join(f"u{i}=g.htk[{g_start[i]},{g_start[i + 1] - 1}]\n"
                                            for i in range(6)))
    (tmp_path / "s.txt").write_text("a\nb\nc\n")
    labels = {0: [(0, 5, "a")], 1: [(0, 5, "b")], 2: [(0, 2, "b"), (2, 5, "c")],
              3: [(0, 4, "a")], 5: [(0, 3, "c"), (3, 5, "a")]}
    (tmp_path / "l.mlf").write_text("#!MLF!#\n" + "".join(
        f'"u{i}.lab"\n' + "".join(f"{s} {e} {n}\n" for s, e, n in ranges) + ".\n"
        for i, ranges in labels.items()))
    reader = reader_config(parse_config(
        f'r = [ readerType = "HTKMLFReader" ; readMethod = "none" ; frameMode = {frame_mode}\n'
        '  features = [ dim = 2 ; scpFile = "f.scp" ; type = "real" ]\n'
        '  more = [ dim = 2 ; scpFile = "g.scp" ; type = "real" ]\n'
        '  labels = [ mlfFile = "l.mlf" ; labelMappingFile = "s.txt" ; labelDim = 3\n'
        '             labelType = "category" ] ]', "speech.cntk")["r"])
    said = []
    with pytest.warns(UserWarning, match="no sequence for 1 of the 4 sequences .*u4"):
        source = make_source(reader, max_sweeps=1, warn=said.append)
    assert len(said) == 2 and "1-th file" in said[0] and "skipping u3" in said[1]
    rows = {"features": [], "more": [], "labels": []}
    while mb := source.next_minibatch(5):
        for name in rows:
            b = mb[name]
            rows[name] += ([b.data] if b.lengths is None else
                           [b.data[k, :n] for k, n in enumerate(b.lengths)])
    f, g, lab = (np.concatenate(rows[n]) for n in ("features", "more", "labels"))
    assert len(f) == len(g) == len(lab) == 15
    utt, t = divmod(f[:, 0].astype(np.int64) // 2, 5)
    assert sorted(zip(utt.tolist(), t.tolist())) == [(u, k) for u in (0, 2, 5) for k in range(5)]
    np.testing.assert_array_equal(g[:, 0], 1000 + 2 * (g_start[utt] + t))
    want = [next("abc".index(n) for s, e, n in labels[u] if s <= k < e)
            for u, k in zip(utt.tolist(), t.tolist())]
    np.testing.assert_array_equal(lab.argmax(axis=1), want)
    np.testing.assert_array_equal(lab.sum(axis=1), 1)
