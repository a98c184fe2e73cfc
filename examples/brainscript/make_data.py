"""Write small CTF data sets in the formats of CNTK's two BrainScript sequence examples.

The real data (ATIS, the SequenceClassification example's Train.ctf) cannot be downloaded
here, so this script makes data of the same layout, with a rule the models can learn:

* ``Data/ATIS.train.ctf`` / ``Data/ATIS.test.ctf``: slot tagging, one line per word, ``seq
  |PW prev:1 |CW word:1 |NW next:1 |L label:1`` (sparse one-hot; previous, current, next
  word and the word's label).  A word's label is ``word % labels`` and becomes label 0 after
  word 1 (context matters).
* ``Data/Train.ctf``: sequence classification, ``seq |x word:1`` on every line and ``|y``
  (dense one-hot, 5 classes) on each sequence's first line; the class is the sequence's
  first word modulo 5 (the LSTM has to carry it to the last step).

Usage: ``python make_data.py [OUTDIR]`` (default: ``Data`` beside this script).
"""

import os
import sys

import numpy as np

WORDS, LABELS = 50, 10          # ATIS.cntk: wordCount, labelCount (944, 127 in CNTK's data)
VOCAB, CLASSES = 30, 5          # SimpleExample.cntk: vocabDim, numLabels


def atis(path: str, n: int, seed: int, lengths: tuple[int, int] = (3, 12)) -> None:
    """``n`` sentences of ``lengths[0]`` to ``lengths[1] - 1`` words."""
    rng = np.random.RandomState(seed)
    with open(path, "w") as f:
        for s in range(n):
            words = rng.randint(2, WORDS, rng.randint(*lengths))
            words[rng.rand(len(words)) < 0.2] = 1
            for t, w in enumerate(words):
                prev = words[t - 1] if t > 0 else 0
                nxt = words[t + 1] if t + 1 < len(words) else 0
                label = 0 if prev == 1 else int(w) % LABELS
                f.write(f"{s}\t|PW {prev}:1\t|CW {w}:1\t|NW {nxt}:1\t|L {label}:1\n")


def classification(path: str, n: int, seed: int, lengths: tuple[int, int] = (2, 9)) -> None:
    """``n`` sequences of ``lengths[0]`` to ``lengths[1] - 1`` words."""
    rng = np.random.RandomState(seed)
    with open(path, "w") as f:
        for s in range(n):
            words = rng.randint(0, VOCAB, rng.randint(*lengths))
            label = int(words[0]) % CLASSES
            for t, w in enumerate(words):
                y = "\t|y " + " ".join("1" if k == label else "0" for k in range(CLASSES)) \
                    if t == 0 else ""
                f.write(f"{s}\t|x {w}:1{y}\n")


def main(out: str, scale: float = 1.0) -> None:
    """Write the three files into ``out``; ``scale`` shrinks them (the tests use less)."""
    os.makedirs(out, exist_ok=True)
    atis(os.path.join(out, "ATIS.train.ctf"), int(300 * scale), 1)
    atis(os.path.join(out, "ATIS.test.ctf"), int(60 * scale), 2)
    classification(os.path.join(out, "Train.ctf"), int(400 * scale), 3)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "Data"))
