"""Word-level text for language models: CNTK's ``LMSequenceReader`` as a deserializer.

The text file holds one sentence a line, words separated by blanks (``</s> the cat sat </s>``);
lines of fewer than 3 words are skipped, as CNTK did.  A sentence of n words is one sequence of
n - 1 steps: step t reads word t (the input, one-hot) and predicts word t + 1 (the output).
Words are numbered by a word-class file (CNTK's ``wordclass``: lines ``id count word class``)
or a label mapping file (one word a line, numbered from 0); a word in neither is the ``unk``
word (``<unk>``), and with no ``unk`` word in the vocabulary it is an error naming the line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from .._errors import DataError
from ._deserializer import Deserializer, StreamBatch, StreamSpec, pad_sequences
from ._files import read_text_file
from ._random import SampleRandom

__all__ = ["LMSequenceDeserializer", "WordClasses", "read_word_classes"]

_OUTPUTS = ("class", "softmax", "none")


def _read_lines(path: str, what: str) -> list[str]:
    return read_text_file(path, what).split("\n")


@dataclass(frozen=True)
class WordClasses:
    """A vocabulary: word -> id, and each id's class (-1 where no class file gave one)."""

    ids: Mapping[str, int]
    classes: np.ndarray

    def class_ranges(self, words: int) -> np.ndarray:
        """``(classes, 2)``: the first id of each class and one past its last, over ids
        ``0 .. words-1`` (CNTK's class-based output needs the words of a class to be
        contiguous; a class that starts below the one before is an error)."""
        count = int(self.classes.max(initial=-1)) + 1
        ranges = np.zeros((max(count, 0), 2), np.float32)
        previous = -1
        for word in range(words):
            c = int(self.classes[word]) if word < len(self.classes) else -1
            if c > previous:
                if previous >= 0:
                    ranges[previous, 1] = word
                previous = c
                ranges[c, 0] = word
            elif c < previous:
                raise DataError(f"word {word} is in class {c}, after words of class {previous}: "
                                "the words of a class must be numbered together, the classes in "
                                "order")
        if previous >= 0:
            ranges[previous, 1] = words
        return ranges


def read_word_classes(path: str | os.PathLike) -> WordClasses:
    """A word-class file (CNTK's ``wordclass``): lines ``id count word class``.

    Example:
        >>> import os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), 'vocab.txt')
        >>> _ = open(p, 'w').write('0 5 the 0\\n1 3 </s> 0\\n2 1 cat 1\\n')
        >>> v = read_word_classes(p)
        >>> dict(v.ids), v.classes.tolist()
        ({'the': 0, '</s>': 1, 'cat': 2}, [0, 0, 1])
    """
    path = os.path.abspath(os.fspath(path))
    ids: dict[str, int] = {}
    classes: dict[int, int] = {}
    for number, raw in enumerate(_read_lines(path, "word class file"), 1):
        fields = raw.split()
        if not fields:
            continue
        if len(fields) != 4:
            raise DataError(f"expected 4 fields 'id count word class', got {len(fields)}", path,
                            number)
        try:
            word_id, count, word, cls = int(fields[0]), float(fields[1]), fields[2], int(fields[3])
        except ValueError:
            raise DataError(f"expected 'id count word class' with numbers, got {raw.strip()!r}",
                            path, number) from None
        if word_id < 0 or cls < 0 or count < 0:
            raise DataError(f"negative id, count or class in {raw.strip()!r}", path, number)
        ids[word] = word_id
        classes[word_id] = cls
    if not ids:
        raise DataError("the word class file holds no words", path)
    table = np.full(max(classes) + 1, -1, np.int64)
    for word_id, cls in classes.items():
        table[word_id] = cls
    return WordClasses(ids, table)


class LMSequenceDeserializer(Deserializer):
    """Sentences of a text file as sequences of word ids (CNTK's ``LMSequenceReader``).

    Args:
        path: the text file, one sentence a line.
        vocabulary: word -> id (``read_word_classes(...).ids`` or a label mapping file's).
        input_name, input_dim: the input stream, the one-hot of each word but the last; its
            dimension (at least the largest id + 1).
        output_name: the output stream (``None``: none, and every word of a line is an input).
        output: what the output stream holds for the next word, as CNTK's reader ``mode``:
            ``"softmax"`` one row, the word id (CNTK wrote 1e-6 for id 0); ``"class"`` four
            rows, the word id, its class and the first and one-past-last id of that class
            (``classes`` needed).
        classes: the word classes, for ``output = "class"``.
        unk: the word that stands for words outside the vocabulary.

    Example:
        >>> import os, tempfile
        >>> p = os.path.join(tempfile.mkdtemp(), 'text.txt')
        >>> _ = open(p, 'w').write('</s> a b </s>\\n</s> </s>\\n</s> b x </s>\\n')
        >>> d = LMSequenceDeserializer(p, {'</s>': 0, 'a': 1, 'b': 2, '<unk>': 3}, 'words', 4,
        ...                            'next', output='softmax')
        >>> len(d), d.sequence_lengths().tolist(), d.tokens(1).tolist()
        (2, [3, 3], [0, 2, 3, 0])
        >>> d.read(0)['next'][:, 0]
        array([1.e+00, 2.e+00, 1.e-06], dtype=float32)
    """

    def __init__(self, path: str | os.PathLike, vocabulary: Mapping[str, int], input_name: str,
                 input_dim: int, output_name: str | None = None, *, output: str = "softmax",
                 classes: WordClasses | None = None, unk: str = "<unk>"):
        self.path = os.path.abspath(os.fspath(path))
        if output not in _OUTPUTS:
            raise ValueError(f"output must be one of {', '.join(_OUTPUTS)}, got {output!r}")
        if output == "class" and output_name is not None and classes is None:
            raise ValueError("output = 'class' needs the word classes")
        if not vocabulary:
            raise ValueError("the vocabulary is empty")
        top = max(vocabulary.values())
        if input_dim <= top:
            raise ValueError(f"input_dim {input_dim} is too small for word id {top}")
        self._input, self._dim = input_name, int(input_dim)
        self._output = None if output == "none" else output_name
        self._mode = output
        unk_id = vocabulary.get(unk)
        tokens: list[int] = []
        starts = [0]
        for number, raw in enumerate(_read_lines(self.path, "text file"), 1):
            words = raw.split()
            if len(words) < 3:
                continue
            for w in words:
                wid = vocabulary.get(w, unk_id)
                if wid is None:
                    raise DataError(f"word {w!r} is not in the vocabulary, which has no "
                                    f"unknown-word entry {unk!r}", self.path, number)
                tokens.append(wid)
            starts.append(len(tokens))
        if len(starts) == 1:
            raise DataError("no sentence of 3 or more words", self.path)
        self._tokens = np.asarray(tokens, np.int64)
        self._starts = np.asarray(starts, np.int64)
        self._ranges = None
        if self._output is not None and output == "class":
            assert classes is not None
            if len(classes.classes) < self._dim:
                raise DataError(f"the word classes cover {len(classes.classes)} words; the "
                                f"input has {self._dim}", self.path)
            self._classes = classes.classes
            self._ranges = classes.class_ranges(self._dim)

    def __len__(self) -> int:
        return len(self._starts) - 1

    def tokens(self, i: int) -> np.ndarray:
        """The word ids of sentence ``i`` (all its words)."""
        return self._tokens[self._starts[i]:self._starts[i + 1]]

    def word_counts(self) -> np.ndarray:
        """The words of each sentence (cntk.exe's tokens, which its ``cacheBlockSize``
        counts)."""
        return np.diff(self._starts)

    def sequence_lengths(self) -> np.ndarray:
        return self.word_counts() - (self._output is not None)

    def stream_specs(self) -> dict[str, StreamSpec]:
        specs = {self._input: StreamSpec((self._dim,), np.dtype(np.float32), True, True)}
        if self._output is not None:
            rows = 4 if self._mode == "class" else 1
            specs[self._output] = StreamSpec((rows,), np.dtype(np.float32), False, True)
        return specs

    def _next_words(self, ids: np.ndarray) -> np.ndarray:
        out = np.zeros((len(ids), 4 if self._mode == "class" else 1), np.float32)
        out[:, 0] = ids
        if self._mode == "softmax":
            out[ids == 0, 0] = 1e-6
        else:
            cls = self._classes[ids]
            out[:, 1] = cls
            out[:, 2:] = self._ranges[cls]
        return out

    def read_batch(self, ids: Sequence[int],
                   rngs: Sequence[SampleRandom]) -> dict[str, StreamBatch]:
        inputs, outputs = [], []
        for i in ids:
            words = self.tokens(int(i))
            given = words[:-1] if self._output is not None else words
            one_hot = np.zeros((len(given), self._dim), np.float32)
            one_hot[np.arange(len(given)), given] = 1.0
            inputs.append(one_hot)
            if self._output is not None:
                outputs.append(self._next_words(words[1:]))
        out = {self._input: pad_sequences(inputs, (self._dim,), np.dtype(np.float32))}
        if self._output is not None:
            out[self._output] = pad_sequences(outputs, outputs[0].shape[1:], np.dtype(np.float32))
        return out
