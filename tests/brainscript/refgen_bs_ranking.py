"""Write the CNTK 2.7 references of test_bs_ranking.py (tests/fixtures/brainscript/ranking.json):
BrainScript's ``LambdaRank`` and ``NDCG1Eval`` nodes (CNTK.core.bs), which are the
ComputationNetworkLib nodes of CNTK 2.7's Python ``lambda_rank`` and ``ndcg_at_1``, on one
minibatch of 9 documents in 3 queries (each query's documents in decreasing gain, as CNTK
requires), and LambdaRank's gradient for the scores; and ``sequences``: the same nodes on
sequences of several steps, in the parallel streams of CNTK's minibatch (the node reads its
columns time-major, the gaps after the streams' sequences included).  CNTK packs a sequence
after another in one stream where it fits within the longest one's steps (first fit, in the
order given: lengths 1, 3, 2 make a stream of 1 + 2 and one of 3), as its readers do for
cntk.exe; the first three cases give each sequence a stream of its own, the last two pack.

    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \\
        tests/brainscript/refgen_bs_ranking.py

Parses under Python 3.6.
"""

import json
import os

import numpy as np

import cntk as C

OUT = os.path.join(os.path.dirname(__file__), "..", "fixtures", "brainscript", "ranking.json")


def main():
    gain = np.array([3, 2, 0, 0, 2, 1, 1, 0, 0], np.float32)[:, None]
    group = np.array([7, 7, 7, 7, 4, 4, 4, 9, 9], np.float32)[:, None]
    score = np.random.RandomState(3).uniform(-1, 1, gain.shape).astype(np.float32)
    g, s, q = (C.input_variable(1, needs_gradient=v == "s") for v in "gsq")
    feed = {g: gain, s: score, q: group}
    irm = C.lambda_rank(s, g, q)
    ndcg = C.ndcg_at_1(s, g, q)
    refs = {"gain": gain.tolist(), "group": group.tolist(), "score": score.tolist(),
            "lambda_rank": float(irm.eval(feed)), "ndcg_at_1": float(ndcg.eval(feed)),
            "lambda_rank_grad": irm.grad(feed, wrt=[s]).tolist()}
    refs["sequences"] = [_sequences(*case) for case in (
        # two queries, one per sequence
        ([[3, 1, 0], [2, 0]], [[0.1, 0.9, 0.5], [0.2, 0.8]], [[1, 1, 1], [2, 2]]),
        # one query across two sequences
        ([[3, 1], [0]], [[0.1, 0.9], [0.5]], [[1, 1], [1]]),
        # three sequences of 3, 1 and 3 steps, each in its own stream (the second's gaps after
        # its step); time-major the query runs are [3 2 1] [2] [gap] [2] [1] [gap] [0], each in
        # decreasing gain, as CNTK requires
        ([[3, 2, 1], [2], [1, 2, 0]], [[0.3, -0.2, 0.7], [0.4], [0.9, -0.5, 0.1]],
         [[5, 6, 7], [5], [5, 6, 7]]),
        # lengths 1, 3, 2: the third sequence goes after the first in stream 0 (time-major
        # the columns are [1st, 2nd's 1st step], [3rd's 1st, 2nd's 2nd], [3rd's 2nd, 2nd's 3rd])
        ([[2], [3, 2, 1], [1, 0]], [[0.5], [0.1, 0.7, -0.3], [0.2, 0.6]],
         [[4], [4, 4, 5], [4, 5]]),
        # lengths 4, 1, 2, 1: the 1 and the 2 share stream 1, the last 1 fills it; one query
        ([[4, 3, 2, 1], [3], [2, 1], [1]], [[0.4, -0.1, 0.8, 0.3], [0.9], [-0.6, 0.2], [0.05]],
         [[3, 3, 3, 3], [3], [3, 3], [3]]))]
    with open(OUT, "w") as f:
        json.dump(refs, f)
        f.write("\n")


def _sequences(gain, score, group):
    g, s, q = (C.sequence.input_variable(1, needs_gradient=v == "s") for v in "gsq")
    feed = {v: [np.array(x, np.float32)[:, None] for x in data]
            for v, data in ((g, gain), (s, score), (q, group))}
    irm = C.lambda_rank(s, g, q)
    grad = irm.grad(feed, wrt=[s])
    return {"gain": gain, "score": score, "group": group,
            "lambda_rank": float(irm.eval(feed)),
            "ndcg_at_1": float(C.ndcg_at_1(s, g, q).eval(feed)),
            "lambda_rank_grad": [np.asarray(x).ravel().tolist() for x in grad]}


if __name__ == "__main__":
    main()
