"""Writes small synthetic data sets in the CNTK text format (CTF) of CNTK's sequence
tutorials, since their real data (ATIS, CMUDict) cannot be downloaded here:

* ``ATIS/atis.train.ctf``, ``ATIS/atis.test.ctf`` -- CNTK 202's slot tagging: one line per
  word, ``|S0`` the word (sparse one-hot over the vocabulary), ``|S1`` the query's intent on its
  first line, ``|S2`` the word's slot label.  A word's label follows from the word and the one
  before it (a rule an LSTM learns).
* ``CMUDict/g2p.train.ctf``, ``CMUDict/g2p.test.ctf``, ``CMUDict/g2p.mapping`` -- CNTK 204's
  grapheme-to-phoneme pairs: ``|S0`` the letters and ``|S1`` the phonemes of a made-up word,
  both wrapped in ``<s>`` ... ``</s>``, over one shared vocabulary (the mapping file, one
  token per line, laid out as CMUDict's: ``'``, ``</s>``, ``<s/>``, ``<s>``, letters,
  phonemes).  A letter reads as one phoneme, except that a letter doubled reads once.

    python prepare_sequences.py [--out data] [--seed 1]
"""

from __future__ import print_function

import argparse
import os

import numpy as np

VOCAB, INTENTS, SLOTS = 40, 5, 8
LETTERS = [chr(ord("A") + i) for i in range(10)]
PHONEMES = ["~P%d" % i for i in range(10)]
G2P_VOCAB = ["'", "</s>", "<s/>", "<s>"] + LETTERS + PHONEMES


def slot_of(word, previous):
    """The slot label of ``word`` after ``previous`` (-1 at the start)."""
    if word < 8:
        return 0                                   # "O": a word outside every slot
    if previous >= 0 and previous % 4 == 1:        # a "from"-like word before: a B- label
        return 1 + word % 3
    return 4 + word % 4


def write_atis(path, n_queries, rng):
    with open(path, "w") as f:
        for s in range(n_queries):
            words = rng.randint(0, VOCAB, rng.randint(3, 11))
            intent = int(words[0]) % INTENTS
            previous = -1
            for t, w in enumerate(words):
                tail = "\t|S1 %d:1" % intent if t == 0 else ""
                f.write("%d\t|S0 %d:1%s\t|S2 %d:1\n" % (s, w, tail, slot_of(int(w), previous)))
                previous = int(w)


def pronounce(letters):
    """A letter reads as its phoneme; a doubled letter reads once."""
    out = []
    for t, c in enumerate(letters):
        if t > 0 and letters[t - 1] == c:
            continue
        out.append(PHONEMES[(LETTERS.index(c) * 3) % len(PHONEMES)])
    return out


def write_g2p(path, n_words, rng):
    index = {w: i for i, w in enumerate(G2P_VOCAB)}
    with open(path, "w") as f:
        for s in range(n_words):
            letters = [LETTERS[i] for i in rng.randint(0, len(LETTERS), rng.randint(2, 7))]
            src = ["<s>"] + letters + ["</s>"]
            dst = ["<s>"] + pronounce(letters) + ["</s>"]
            for t in range(max(len(src), len(dst))):
                cols = []
                if t < len(src):
                    cols.append("|S0 %d:1 |# %s" % (index[src[t]], src[t]))
                if t < len(dst):
                    cols.append("|S1 %d:1 |# %s" % (index[dst[t]], dst[t]))
                f.write("%d\t%s\n" % (s, "\t".join(cols)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "data"))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.RandomState(args.seed)
    atis, cmu = os.path.join(args.out, "ATIS"), os.path.join(args.out, "CMUDict")
    for folder in (atis, cmu):
        if not os.path.isdir(folder):
            os.makedirs(folder)
    write_atis(os.path.join(atis, "atis.train.ctf"), 2000, rng)
    write_atis(os.path.join(atis, "atis.test.ctf"), 300, rng)
    write_g2p(os.path.join(cmu, "g2p.train.ctf"), 3000, rng)
    write_g2p(os.path.join(cmu, "g2p.test.ctf"), 300, rng)
    with open(os.path.join(cmu, "g2p.mapping"), "w") as f:
        f.write("\n".join(G2P_VOCAB) + "\n")
    print("wrote", atis, "and", cmu)


if __name__ == "__main__":
    main()
