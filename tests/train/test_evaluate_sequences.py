"""Trainer.evaluate / test_minibatch on sequences count the metric's samples, as CNTK does
(``tests/compat/compat_cases/cntk_train.py::test_minibatch_sequences`` holds CNTK 2.7's own
numbers): a classifier over sequences counts sequences, a tagger steps, a metric on each
sequence's last step sequences; and one sweep is one sweep of the reader, whatever the unit.
Expectations are computed with NumPy from the CTF file's contents."""

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
import stadyn.solvers as S
from stadyn import io
from stadyn.train import ProgressWriter, Trainer, evaluate_sums

LENGTHS = (3, 1, 4, 2, 5)
W = (np.arange(9, dtype=np.float32).reshape(3, 3) / 10 - 0.3)


@pytest.fixture
def ctf(tmp_path):
    """Five sequences: features x and a class t per step, a class y per sequence."""
    rng = np.random.RandomState(7)
    feats = [rng.randn(n, 3).round(3).astype(np.float32) for n in LENGTHS]
    tags = [rng.randint(0, 3, n) for n in LENGTHS]
    labels = [s * 2 % 3 for s in range(len(LENGTHS))]
    lines = []
    for s, (f, t) in enumerate(zip(feats, tags)):
        for k in range(len(f)):
            line = f"{s} |x {' '.join('%.3f' % v for v in f[k])} |t {t[k]}:1"
            lines.append(line + (f" |y {labels[s]}:1" if k == 0 else ""))
    path = tmp_path / "seq.ctf"
    path.write_text("\n".join(lines) + "\n")
    return path, feats, tags, labels


def _source(path, **kw):
    return io.MinibatchSource(io.CTFDeserializer(str(path), io.StreamDefs(
        x=io.StreamDef(field="x", shape=3), y=io.StreamDef(field="y", shape=3, is_sparse=True),
        t=io.StreamDef(field="t", shape=3, is_sparse=True))), randomize=False, **kw)


class _Tests(ProgressWriter):
    def __init__(self):
        super().__init__()
        self.summaries = []

    def on_test_summary(self, record):
        self.summaries.append((record.metric, record.samples))


def _trainer(kind):
    with sd.parameter_registry(sd.ParameterRegistry()):
        x = sd.sequence.input_variable(3)
        w = sd.get_parameter_or_create("w", W.shape, W)
        h = x @ w
        if kind == "classifier":
            label = sd.Variable((1, 3))
            z, target = sd.sequence.last(h), label
        elif kind == "tagger":
            label = sd.sequence.input_variable(3)
            z, target = h, label
        else:
            label = sd.sequence.input_variable(3)
            z, target = sd.sequence.last(h), sd.sequence.last(label)
        loss = F.cross_entropy_with_softmax(z, target)
        metric = F.classification_error(z, target)
        solver = S.Sgd(lr=0.0)
        solver.set_parameters(sd.get_parameters())
        writer = _Tests()
        return Trainer(z, (loss, metric), [solver], [writer]), x, label, writer


def _expected(kind, feats, tags, labels):
    """Errors and their count, from NumPy."""
    if kind == "classifier":
        errs = [np.argmax(f[-1] @ W) != y for f, y in zip(feats, labels)]
    elif kind == "tagger":
        errs = [e for f, t in zip(feats, tags) for e in np.argmax(f @ W, 1) != t]
    else:
        errs = [np.argmax(f[-1] @ W) != t[-1] for f, t in zip(feats, tags)]
    return float(np.mean(errs)), len(errs)


@pytest.mark.parametrize("kind", ["classifier", "tagger", "last step"])
def test_evaluate_counts_the_metrics_samples_over_one_sweep(ctf, kind):
    path, feats, tags, labels = ctf
    trainer, x, label, writer = _trainer(kind)
    source = _source(path)          # repeats forever: the evaluation stops at the sweep's end
    stream = "y" if kind == "classifier" else "t"
    average = trainer.evaluate(source, {x: "x", label: stream}, minibatch_size=6)
    metric, count = _expected(kind, feats, tags, labels)
    assert average == pytest.approx(metric)
    assert writer.summaries == [(pytest.approx(metric), count)]


@pytest.mark.parametrize("kind", ["classifier", "tagger", "last step"])
def test_test_minibatch_averages_over_the_metrics_samples(ctf, kind):
    path, feats, tags, labels = ctf
    trainer, x, label, writer = _trainer(kind)
    ys = (np.eye(3, dtype=np.float32)[labels] if kind == "classifier"
          else [np.eye(3, dtype=np.float32)[t] for t in tags])
    average = trainer.test_minibatch({x: feats, label: ys})
    metric, count = _expected(kind, feats, tags, labels)
    assert average == pytest.approx(metric)
    assert trainer.previous_test_sample_count == count


def test_evaluation_without_data_for_an_input_is_one_clear_error():
    x, y = sd.Variable((1, 2)), sd.Variable((1, 2))
    errors = F.sum(F.classification_error(x, y))
    source = io.MinibatchSourceFromData({"x": np.eye(2, dtype="f4")}, randomize=False)
    with pytest.raises(sd.StadynError, match=r"evaluation: the source gives no data for the "
                                             r"input\(s\) <Variable shape=\(1, 2\)"):
        evaluate_sums([errors], source, {x: "x"})


def test_evaluate_sums_counts_with_the_given_rule():
    """``count_samples`` decides a minibatch's samples (what ``Trainer.evaluate`` passes: its
    ``_test_sample_count``, the rule ``test_minibatch`` counts by): here one a minibatch, so 10
    samples in minibatches of 4 count 3, the sums unchanged (hand-computed: x.sum() = 45)."""
    from stadyn.io import MinibatchSourceFromData
    x = sd.Variable((1, 1))
    total = F.sum(x)
    source = MinibatchSourceFromData({"x": np.arange(10, dtype="f4").reshape(10, 1)},
                                     randomize=False)
    fed = []

    def one(counted, n):
        fed.append(n)
        return 1
    result = evaluate_sums([total], source, {x: "x"}, minibatch_size=4, count=total,
                           count_samples=one)
    assert result == {"sums": [45.0], "samples": 3, "minibatches": 3}
    assert fed == [4, 4, 2]
