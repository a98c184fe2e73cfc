"""A synthetic stand-in for the Cora citation network (LINQS' ``cora.tgz``), in its own
files, for running nnabla-examples' ``graph-neural-networks/GCN`` without the data set.

    python examples/nnabla/cora_standin.py FOLDER [--papers N]

writes ``FOLDER/cora.tgz``, whose ``cora/cora.content`` holds one line a paper (its id, its
1,433 word-occurrence flags, its subject, tab-separated) and ``cora/cora.cites`` one line a
citation (the cited paper's id, the citing one's), as the original does.  GCN's
``utils.download_cora`` uses a ``cora.tgz`` it finds in its working folder instead of
downloading it.  The papers' subjects are Cora's seven; each paper uses a few words, most of
them from its subject's share of the vocabulary, and cites papers of its own subject more often
than not, so that a graph convolution has something to learn.  Every paper cites at least one
other (the program's graph holds only the papers that appear in a citation).  A seeded
generator draws everything, so the same seed writes the same bytes on every machine.

Example:
    >>> import os, tarfile, tempfile
    >>> path = write_cora(tempfile.mkdtemp(), papers=20)
    >>> os.path.basename(path), sorted(tarfile.open(path).getnames())
    ('cora.tgz', ['cora', 'cora/cora.cites', 'cora/cora.content'])
    >>> line = tarfile.open(path).extractfile('cora/cora.content').readline().decode()
    >>> fields = line.rstrip('\\n').split('\\t')
    >>> len(fields), fields[-1] in SUBJECTS
    (1435, True)
"""

import argparse
import gzip
import io
import os
import tarfile

import numpy as np

SUBJECTS = ("Case_Based", "Genetic_Algorithms", "Neural_Networks", "Probabilistic_Methods",
            "Reinforcement_Learning", "Rule_Learning", "Theory")
WORDS = 1433


def _add(archive: tarfile.TarFile, name: str, text: str):
    data = text.encode()
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), 0o644
    archive.addfile(info, io.BytesIO(data))


def write_cora(folder: str, papers: int = 1200, seed: int = 0) -> str:
    """Write ``folder/cora.tgz`` (``folder`` made if missing) of ``papers`` papers; return its
    path."""
    rng = np.random.RandomState(seed)
    ids = rng.choice(np.arange(35, 1200000), size=papers, replace=False)
    subjects = rng.randint(len(SUBJECTS), size=papers)
    share = WORDS // len(SUBJECTS)
    content = []
    for paper, subject in zip(ids, subjects):
        words = np.zeros(WORDS, dtype=int)
        own = subject * share + rng.randint(share, size=rng.randint(5, 15))
        words[own] = 1
        words[rng.randint(WORDS, size=rng.randint(1, 6))] = 1
        content.append("\t".join([str(paper)] + [str(w) for w in words]
                                 + [SUBJECTS[subject]]))
    cites = []
    for i in range(papers):
        for _ in range(1 + rng.poisson(1.0)):
            same = np.flatnonzero(subjects == subjects[i])
            pool = same if rng.uniform() < 0.8 and len(same) > 1 else np.arange(papers)
            j = int(rng.choice(pool[pool != i]))
            cites.append("%d\t%d" % (ids[j], ids[i]))
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "cora.tgz")
    with gzip.GzipFile(path, "wb", mtime=0) as packed, \
            tarfile.open(fileobj=packed, mode="w") as archive:
        info = tarfile.TarInfo("cora")
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        archive.addfile(info)
        _add(archive, "cora/cora.content", "\n".join(content) + "\n")
        _add(archive, "cora/cora.cites", "\n".join(cites) + "\n")
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--papers", type=int, default=1200)
    args = parser.parse_args(argv)
    print("wrote", write_cora(args.folder, args.papers))


if __name__ == "__main__":
    main()
