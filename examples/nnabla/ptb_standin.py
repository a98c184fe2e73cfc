"""A small synthetic stand-in for the Penn Treebank language-modelling corpus, in its own
files, for running nnabla-examples' ``language-modeling`` programs without a network.

    python examples/nnabla/ptb_standin.py [FOLDER] [--words N]

writes ``ptb.train.txt``, ``ptb.valid.txt`` and ``ptb.test.txt`` into FOLDER (by default the
current folder, where ``language-modeling/lstm/train.py`` looks before it runs ``wget``).
``word2vec/word_embedding.py`` reads ``ptb.train.txt`` through
``nnabla.utils.data_source_loader.download``, which looks in NNabla's data folder
(``~/nnabla_data``) first.

The files are PTB's layout: one sentence a line, lower-case words separated by single
spaces, a leading and a trailing space, rare words written ``<unk>`` and numbers ``N``; the
validation and test texts use only words of the training text.  The
words come from a small vocabulary drawn with a Zipf-like law and a first-order chain
(each word prefers a few followers), so that there is something to learn; the same seed
gives the same bytes on every machine.

Example:
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> write_ptb(folder, n_train=200, n_valid=50, n_test=50)
    >>> text = open(folder + "/ptb.train.txt").read()
    >>> text.startswith(" ") and text.endswith(" \\n"), len(text.split()) >= 200
    (True, True)
"""

import argparse
import os

import numpy as np

_SYLLABLES = ["ka", "to", "ri", "mu", "se", "la", "no", "vi", "de", "po", "gu", "he"]


def vocabulary(n_words: int = 120, seed: int = 0) -> list[str]:
    """``n_words`` distinct made-up words, then ``<unk>`` and ``N``."""
    rng = np.random.RandomState(seed)
    words = []
    while len(words) < n_words:
        word = "".join(rng.choice(_SYLLABLES, size=rng.randint(1, 4)))
        if word not in words:
            words.append(word)
    return words + ["<unk>", "N"]


def sentences(n_words: int, vocab: list[str], seed: int) -> list[str]:
    """Lines of PTB text holding at least ``n_words`` words in all."""
    rng = np.random.RandomState(seed)
    k = len(vocab)
    prior = 1.0 / np.arange(1, k + 1)
    prior /= prior.sum()
    # each word's followers: the Zipf prior, three of them boosted
    chain = np.tile(prior, (k, 1))
    follow = np.random.RandomState(seed + 1000).randint(0, k, size=(k, 3))
    for i in range(k):
        chain[i, follow[i]] += 0.5
    chain /= chain.sum(axis=1, keepdims=True)
    lines, total = [], 0
    while total < n_words:
        length = rng.randint(4, 16)
        word = rng.choice(k, p=prior)
        line = [vocab[word]]
        for _ in range(length - 1):
            word = rng.choice(k, p=chain[word])
            line.append(vocab[word])
        lines.append(" " + " ".join(line) + " ")
        total += length
    return lines


def write_ptb(folder: str, n_train: int = 3000, n_valid: int = 600, n_test: int = 600,
              seed: int = 0) -> None:
    """Write ``ptb.{train,valid,test}.txt`` of about that many words into ``folder``."""
    os.makedirs(folder, exist_ok=True)
    vocab = vocabulary(seed=seed)
    train = sentences(n_train, vocab, seed) + [" <unk> N "]
    known = {w for line in train for w in line.split()}
    parts = {"train": train}
    # as in PTB, the validation and test texts use the training text's words only
    for part, n, s in (("valid", n_valid, seed + 1), ("test", n_test, seed + 2)):
        parts[part] = [" " + " ".join(w if w in known else "<unk>" for w in line.split()) + " "
                       for line in sentences(n, vocab, s)]
    for part, lines in parts.items():
        with open(os.path.join(folder, f"ptb.{part}.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default=".")
    parser.add_argument("--words", type=int, default=3000)
    args = parser.parse_args(argv)
    write_ptb(args.folder, args.words, args.words // 5, args.words // 5)
    print(f"wrote PTB's three files ({args.words} training words) to {args.folder}")


if __name__ == "__main__":
    main()
