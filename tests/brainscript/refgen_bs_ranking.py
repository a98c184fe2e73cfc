"""Write the CNTK 2.7 references of test_bs_ranking.py (tests/fixtures/brainscript/ranking.json):
BrainScript's ``LambdaRank`` and ``NDCG1Eval`` nodes (CNTK.core.bs), which are the
ComputationNetworkLib nodes of CNTK 2.7's Python ``lambda_rank`` and ``ndcg_at_1``, on one
minibatch of 9 documents in 3 queries (each query's documents in decreasing gain, as CNTK
requires), and LambdaRank's gradient for the scores.

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
    with open(OUT, "w") as f:
        json.dump(refs, f)
        f.write("\n")


if __name__ == "__main__":
    main()
