"""The one evaluation loop: sums of a static graph over minibatches of a source, in the inference
phase.  :meth:`Trainer.evaluate <stadyn.train.Trainer.evaluate>` is it with the metric and the
progress writers' ``update_test``; the BrainScript runner's ``test``/``eval`` command is it with
the criterion nodes and a callback that prints CNTK's lines."""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import torch

from ..graph import Subgraph, Variable, forward_all, is_lengths, training
from ._feeding import FeedingPlans, _class_id_inputs, count_roots, feed_minibatch, sample_count
from ._source_protocol import ends_sweep, epoch_starter

__all__ = ["evaluate_sums"]


def evaluate_sums(sums: Sequence[Variable], source, input_map: Mapping | None = None, *,
                  minibatch_size: int = 256, max_samples: int | None = None,
                  on_minibatch: Callable[[dict], None] | None = None,
                  convert: Callable[[dict], dict] | None = None,
                  count: Variable | None = None,
                  count_samples: Callable[[Variable, int], int] = sample_count,
                  carry=None) -> dict:
    """Evaluate the scalar Variables ``sums`` (each a sum over a minibatch's samples, as
    ``F.sum(metric)``) on minibatches of ``source`` until ``max_samples`` samples are counted or
    the source ends -- by default one sweep: until a minibatch ends the sweep, or
    ``source.sweep_size`` samples (the source's own count) are read -- in the inference phase
    (dropout off, batch normalisation on running statistics) without gradients.

    ``source.next_minibatch(n, input_map=input_map)`` gives ``{input: data}``; the data is fed
    as :meth:`Trainer.train_minibatch <stadyn.train.Trainer.train_minibatch>` feeds it, and a
    minibatch's sample count is the one the Trainer counts (sequences where some input is per
    sequence, steps where all are sequences) or, with ``count`` (the per-sample criterion the
    sums are of), that criterion's samples (CNTK's rule: a sequence classifier's metric counts
    sequences, a tagger's steps; see :func:`~stadyn.train._feeding.sample_count`), counted by
    ``count_samples(count, fed)`` (by default that function; a Trainer gives its own test
    count, as :meth:`Trainer.test_minibatch <stadyn.train.Trainer.test_minibatch>` counts).
    After each minibatch ``on_minibatch`` gets
    ``{"minibatch", "samples", "sums", "totals", "seen"}`` (counted from 1; this minibatch's
    sums; the running totals and sample count).  Returns
    ``{"sums", "samples", "minibatches"}``: the totals over everything read.  ``convert``
    (optional) turns each minibatch into what is fed (a front end's reshaping of reader data).
    ``carry`` (optional) carries state from one minibatch to the next (truncated
    back-propagation's recurrent state, as the BrainScript runner's ``StateCarry``): its
    ``before()`` runs ahead of each minibatch's forward pass, which computes its ``wanted()``
    Variables too, and ``after(ran)`` once it is done; ``release()`` when the loop ends, by an
    error too.

    Example — the errors of a fixed classifier over 10 samples, in minibatches of 4:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F
        >>> from stadyn.io import MinibatchSourceFromData
        >>> from stadyn.train import evaluate_sums
        >>> x, y = sd.Variable((1, 2)), sd.Variable((1, 2))
        >>> errors = F.sum(F.classification_error(x, y))
        >>> source = MinibatchSourceFromData(
        ...     {"x": np.eye(2, dtype="f4")[[0, 1] * 5], "y": np.eye(2, dtype="f4")[[0] * 10]},
        ...     randomize=False)
        >>> sizes = []
        >>> result = evaluate_sums([errors], source, {x: "x", y: "y"}, minibatch_size=4,
        ...                        on_minibatch=lambda r: sizes.append(r["samples"]))
        >>> result, sizes
        ({'sums': [5.0], 'samples': 10, 'minibatches': 3}, [4, 4, 2])
    """
    sums = list(sums)
    graph = Subgraph(sums)
    class_ids = _class_id_inputs(graph.nodes)
    needed = [v for v in graph.inputs if not is_lengths(v)]
    sweep = max_samples is None
    limit = source.sweep_size if sweep else max_samples
    roots = sums + (count_roots(count) if count is not None else [])
    plans = FeedingPlans(class_ids, _missing_message)
    totals = [0.0] * len(sums)
    seen = read = minibatches = 0
    # a reader that ends its own epochs (CNTK's legacy HTKMLFReader in utterance mode, which
    # reads some sequences twice; truncated BPTT's packer, whose slots go on after the
    # sequence ending the sweep) is read until it gives no more, as cntk.exe's evaluator did
    own_end = sweep and epoch_starter(source) is not None
    try:
        while own_end or (read if sweep else seen) < limit:
            data = source.next_minibatch(minibatch_size if own_end else
                                         min(minibatch_size, limit - (read if sweep else seen)),
                                         input_map=input_map)
            if not data:
                break
            parts = list(data.values())
            read += max(map(_source_count, parts), default=0)
            end = sweep and not own_end and ends_sweep(data)
            if convert is not None:
                data = convert(data)
            samples = feed_minibatch(plans.plan(list(data), needed)[0], data.values())
            _forward(roots, carry)
            if count is not None:
                samples = count_samples(count, samples)
            values = [float(s.d) for s in sums]
            totals = [t + v for t, v in zip(totals, values)]
            seen += samples
            minibatches += 1
            if on_minibatch is not None:
                on_minibatch({"minibatch": minibatches, "samples": samples, "sums": values,
                              "totals": list(totals), "seen": seen})
            if end:
                break
        return {"sums": totals, "samples": seen, "minibatches": minibatches}
    finally:
        if carry is not None:
            carry.release()


def _forward(roots: list[Variable], carry) -> None:
    """One minibatch's forward pass, in the inference phase, with ``carry``'s state where
    given."""
    if carry is None:
        with training(False), torch.no_grad():
            forward_all(roots, clear_buffer=True)
        return
    ran = False
    try:
        carry.before()
        with training(False), torch.no_grad():
            forward_all(roots + carry.wanted(), clear_buffer=True)
        ran = True
    finally:
        carry.after(ran)


def _missing_message(missing: list, tag: str) -> str:
    return (f"evaluation: the source gives no data for the input(s) "
            f"{', '.join(map(repr, missing))}; map every input the sums read")


def _source_count(part) -> int:
    """A minibatch stream's samples as its source counts them (a reader's ``num_samples``)."""
    count = getattr(part, "num_samples", None)
    return int(count) if count is not None else len(part)
