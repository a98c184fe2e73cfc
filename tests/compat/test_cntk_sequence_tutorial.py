"""A CNTK 2.x tutorial-style sequence classifier (Embedding + Recurrence(LSTM) + sequence.last
+ Dense, trained with Trainer from a CTF file of sequences) runs on ``stadyn.compat.cntk`` with
only the import changed, and learns.  The same script on the real CNTK 2.7 (the same data,
lr 0.3, 40 minibatches) brings its loss from about 0.68 to about 0.1; the CTF reader's streams
arrive as sequences with the lengths the file gives.
"""

from __future__ import annotations

import numpy as np

import stadyn as sd

import stadyn.compat.cntk as C

VOCAB, CLASSES = 12, 2


def write_ctf(path, n, seed=0):
    """Sequences of word ids (sparse one-hot ``|x``), the label ``|y`` on each first line: 1
    when word 3 occurs in the sequence."""
    rng = np.random.RandomState(seed)
    lengths = []
    with open(path, "w") as f:
        for s in range(n):
            words = rng.randint(0, VOCAB, rng.randint(2, 9))
            label = int(3 in words)
            lengths.append(len(words))
            for t, w in enumerate(words):
                tail = "\t|y %d %d" % (1 - label, label) if t == 0 else ""
                f.write("%d\t|x %d:1%s\n" % (s, w, tail))
    return lengths


def _reader(path):
    return C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
        features=C.io.StreamDef(field="x", shape=VOCAB, is_sparse=True),
        labels=C.io.StreamDef(field="y", shape=CLASSES, is_sparse=False))), randomize=False)


def test_ctf_streams_arrive_as_sequences(tmp_path):
    lengths = write_ctf(str(tmp_path / "t.ctf"), 5)
    reader = _reader(str(tmp_path / "t.ctf"))
    x = C.sequence.input_variable(VOCAB, is_sparse=True)
    y = C.input_variable(CLASSES)
    mb = reader.next_minibatch(sum(lengths[:3]), input_map={x: reader.streams.features,
                                                            y: reader.streams.labels})
    assert mb[x].lengths.tolist() == lengths[:3]
    # one-hot rows: step counts (through a product: CNTK 2.7 runs no reduce_sum on sparse
    # data, and neither does Stadyn)
    ones = C.constant(np.ones((VOCAB, 1), np.float32))
    seqs = C.sequence.reduce_sum(C.times(x, ones)).eval({x: mb[x]})
    assert seqs.sum(axis=1).tolist() == lengths[:3]
    assert C.combine([y]).eval({y: mb[y]}).shape == (3, CLASSES)   # one label per sequence


def test_a_tutorial_sequence_classifier_trains_from_ctf(tmp_path):
    sd.seed(0)          # the initial weights do not depend on what ran before in this worker
    path = str(tmp_path / "train.ctf")
    write_ctf(path, 400)
    reader = _reader(path)
    x = C.sequence.input_variable(VOCAB, is_sparse=True)
    y = C.input_variable(CLASSES)
    model = C.layers.Sequential([C.layers.Embedding(8), C.layers.Recurrence(C.layers.LSTM(16)),
                                 C.sequence.last, C.layers.Dense(CLASSES)])
    z = model(x)
    loss = C.cross_entropy_with_softmax(z, y)
    error = C.classification_error(z, y)
    lr = C.learning_parameter_schedule_per_sample(0.3)
    learner = C.learners.momentum_sgd(z.parameters, lr, C.momentum_schedule(0.9), unit_gain=True)
    trainer = C.Trainer(z, (loss, error), [learner])
    input_map = {x: reader.streams.features, y: reader.streams.labels}
    losses, counts = [], []
    for _ in range(40):
        mb = reader.next_minibatch(64, input_map=input_map)
        trainer.train_minibatch(mb)
        losses.append(trainer.previous_minibatch_loss_average)
        counts.append((trainer.previous_minibatch_sample_count, mb[y].num_sequences))
    # CNTK counts the labels' samples: one per sequence
    assert all(count == sequences for count, sequences in counts)
    assert np.mean(losses[:10]) > 0.6 and np.mean(losses[-10:]) < 0.5 * np.mean(losses[:10])
