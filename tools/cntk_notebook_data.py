"""The data ``tools/cntk_notebooks.py`` writes beside a notebook it runs, in place of what the
notebook downloads: ``DATA`` maps a notebook's name to its writer (MNIST and CIFAR-10 stand-ins,
the DSSM, ATIS and CMUDict text files, the solar-panel CSV, gym's CartPole for 203; the speech,
image and style-transfer files of ``cntk_notebook_standins.py``), and the pandas stand-ins a
notebook imports instead of pandas (``PANDAS_STANDIN`` for 106A and the Manual's custom
deserializer, ``PANDAS_IOT_STANDIN`` for 106B).
"""

from __future__ import annotations

import datetime
import os
import shutil

import numpy as np
from cntk_notebook_standins import png, write_an4_speech, write_bsds_images, \
    write_style_transfer, write_superres_image, write_transfer_images

# a stand-in for the few pandas calls CNTK 106A makes (DataFrame of columns, .iloc, .values)
PANDAS_STANDIN = '''
import numpy as np
class Series:
    def __init__(self, v): self.values = np.asarray(v)
    @property
    def iloc(self): return _Iloc(self.values)
    def as_matrix(self): return self.values
class _Iloc:
    def __init__(self, v): self.v = v
    def __getitem__(self, k): return Series(self.v[k])
class DataFrame:
    def __init__(self, d): self.d = {k: np.asarray(v) for k, v in d.items()}
    def __getitem__(self, k): return Series(self.d[k])
    def __len__(self): return len(next(iter(self.d.values())))
    def as_matrix(self): return np.stack([self.d[k] for k in sorted(self.d)], 1)
def read_csv(f, engine=None, dtype=None, header=None):    # Manual_How_to_write_a_custom_des.
    rows = [ln.replace(b'"', b"").split(b",") for ln in f.read().splitlines() if ln.strip()]
    m = np.array(rows, dtype=dtype or np.float64)
    return DataFrame({i: m[:, i] for i in range(m.shape[1])})
'''

def write_mnist(folder: str) -> None:
    """Synthetic 28x28 'digits' in CNTK's text format, as CNTK 103A writes MNIST."""
    rs = np.random.RandomState(0)
    os.makedirs(os.path.join(folder, "data", "MNIST"), exist_ok=True)
    for name, n in (("Train", 600), ("Test", 300)):
        with open(os.path.join(folder, "data", "MNIST", f"{name}-28x28_cntk_text.txt"), "w") as f:
            for _ in range(n):
                y = rs.randint(10)
                x = (rs.rand(784) * 60).astype(int)
                x[y * 70:y * 70 + 40] = 255
                label = " ".join("1" if k == y else "0" for k in range(10))
                f.write(f"|labels {label} |features {' '.join(map(str, x))}\n")


def write_dssm(folder: str) -> None:
    """Query/answer word sequences in CNTK 303's CTF format, with its vocabularies."""
    rs = np.random.RandomState(1)
    d = os.path.join(folder, "data", "DSSM")
    os.makedirs(d, exist_ok=True)
    qwords = "BOS what contribution did e1 made to science in 1665 EOS".split()
    awords = "BOS book author book_editions_published EOS language human_language " \
             "main_country".split()
    for name, words, size in (("vocab_Q.wl", qwords, 1204), ("vocab_A.wl", awords, 1019)):
        with open(os.path.join(d, name), "w") as f:
            f.writelines((words[i] if i < len(words) else f"w{i}") + " \n" for i in range(size))
    for name, n in (("train.pair.tok.ctf", 300), ("valid.pair.tok.ctf", 60)):
        with open(os.path.join(d, name), "w") as f:
            for s in range(n):
                topic, lq, la = rs.randint(20), rs.randint(2, 7), rs.randint(2, 6)
                for t in range(max(lq, la)):
                    parts = [str(s)]
                    if t < lq:
                        parts.append("|S0 %d:1" % (topic * 50 + rs.randint(40)))
                    if t < la:
                        parts.append("|S1 %d:1" % (topic * 45 + rs.randint(40)))
                    f.write("\t".join(parts) + "\n")


def write_cifar_images(folder: str) -> None:
    """CIFAR-10 as CNTK 201A leaves it: ``train/%05d.png`` (32x32 padded by 4 pixels of 128),
    ``test/%05d.png``, ``train_map.txt``/``test_map.txt`` (absolute path, tab, label) and
    ``CIFAR-10_mean.xml`` (201A's OpenCV XML, pretty-printed, its 3072 values the CHW mean of
    the training images); the images are noisy colours, one per class."""
    rs = np.random.RandomState(2)
    d = os.path.abspath(os.path.join(folder, "data", "CIFAR-10"))
    palette = rs.randint(0, 256, (10, 3))
    mean = np.zeros((3, 32, 32))
    for name, n, pad in (("train", 256, 4), ("test", 64, 0)):
        os.makedirs(os.path.join(d, name), exist_ok=True)
        with open(os.path.join(d, f"{name}_map.txt"), "w") as map_file:
            for i in range(n):
                label = rs.randint(10)
                chw = np.clip(palette[label][:, None, None] + rs.normal(0, 40, (3, 32, 32)),
                              0, 255).astype(np.uint8)
                if pad:
                    mean += chw
                    chw = np.pad(chw, ((0, 0), (pad, pad), (pad, pad)), constant_values=128)
                path = os.path.join(d, name, "%05d.png" % i)
                png(path, chw.transpose(1, 2, 0).copy())
                map_file.write("%s\t%d\n" % (path, label))
    values = " ".join("%e" % v for v in (mean / 256).ravel())
    with open(os.path.join(d, "CIFAR-10_mean.xml"), "w") as f:
        f.write('<?xml version="1.0" ?>\n<opencv_storage>\n  <Channel>3</Channel>\n'
                "  <Row>32</Row>\n  <Col>32</Col>\n"
                '  <MeanImg type_id="opencv-matrix">\n    <rows>1</rows>\n'
                f"    <cols>3072</cols>\n    <dt>f</dt>\n    <data>{values}</data>\n"
                "  </MeanImg>\n</opencv_storage>\n")


# a stand-in for the pandas calls CNTK 106B makes on its solar-panel CSV: read_csv with a
# datetime index, columns, .index.date, groupby(...).max() and iteration, merge on the index
PANDAS_IOT_STANDIN = '''
import csv
import datetime
import numpy as np


class _Index(list):
    @property
    def date(self):
        return np.array([t.date() if hasattr(t, "date") else t for t in self], dtype=object)


class Series:
    def __init__(self, values):
        self.values = np.asarray(values)

    def __itruediv__(self, k):
        return Series(self.values / k)


class DataFrame:
    def __init__(self, columns, index):
        self._c, self.index = dict(columns), _Index(index)

    @property
    def columns(self):
        return list(self._c)

    @columns.setter
    def columns(self, names):
        self._c = dict(zip(names, self._c.values()))

    def __len__(self):
        return len(self.index)

    def __getitem__(self, key):
        if isinstance(key, list):
            return DataFrame([(k, self._c[k]) for k in key], self.index)
        return Series(self._c[key])

    def __setitem__(self, key, value):
        self._c[key] = value.values if isinstance(value, Series) else np.asarray(value)

    def _rows(self, rows):
        return DataFrame([(k, v[rows]) for k, v in self._c.items()], [self.index[i] for i in rows])

    def groupby(self, keys):
        return _GroupBy(self, np.asarray(keys))


class _GroupBy:
    def __init__(self, frame, keys):
        self.frame, self.keys = frame, keys

    def __iter__(self):
        for key in sorted(set(self.keys)):
            yield key, self.frame._rows([i for i, k in enumerate(self.keys) if k == key])

    def max(self):
        groups = list(self)
        return DataFrame([(c, np.array([g._c[c].max() for _, g in groups]))
                          for c in self.frame.columns], [k for k, _ in groups])


def read_csv(path, index_col, parse_dates, dtype):
    with open(path) as f:
        rows = list(csv.reader(f))
    head, body = rows[0], rows[1:]
    at = head.index(index_col)
    index = [datetime.datetime.strptime(r[at], "%Y-%m-%d %H:%M") for r in body]
    return DataFrame([(h, np.array([r[i] for r in body], dtype=dtype))
                      for i, h in enumerate(head) if i != at], index)


def merge(left, right, right_index, on):
    where = {k: i for i, k in enumerate(right.index)}
    rows = [where[k] for k in left._c[on]]
    columns = list(left._c.items()) + [(c, v[rows]) for c, v in right._c.items()
                                        if c not in left._c]
    return DataFrame(columns, left.index)
'''


def write_solar(folder: str) -> None:
    """CNTK 106B's ``data/iot/solar.csv`` (``time,solar.current,solar.total``: readings every
    half hour from about 7:00 to 19:00 for 60 days, the total the day's production so far in
    Wh; one day has only 5 readings, which the notebook skips) and the pandas stand-in."""
    rs = np.random.RandomState(4)
    os.makedirs(os.path.join(folder, "data", "iot"), exist_ok=True)
    with open(os.path.join(folder, "pandas_iot.py"), "w") as f:
        f.write(PANDAS_IOT_STANDIN)
    with open(os.path.join(folder, "data", "iot", "solar.csv"), "w") as f:
        f.write("time,solar.current,solar.total\n")
        for day in range(60):
            date = datetime.date(2013, 12, 1) + datetime.timedelta(days=day)
            peak, total = rs.uniform(800, 3500), 0.0
            for slot in range(14, 19 if day == 17 else 39):
                current = max(0.0, peak * np.sin(np.pi * (slot - 13) / 26) + rs.normal(0, 40))
                total += current / 2
                f.write(f"{date} {slot // 2}:{slot % 2 * 30:02d},{current:.1f},{total:.1f}\n")


# -- sequence notebooks (202, 204, 599A): data stand-ins --
def _ctf_line(sid, fields):
    """One CTF line: the sequence id, then each (stream, index, word) or None (an empty
    column), as CNTK's ATIS and CMUDict files write them: ``|S0 178:1 |# BOS``."""
    cols = ["" if f is None else "|%s %d:1 |# %s" % f for f in fields]
    return "\t".join([str(sid)] + cols).rstrip("\t") + "\n"


def write_atis(folder: str) -> None:
    """ATIS in CNTK 202's format: queries (S0, 943 words), the intent on a query's first
    line (S1, 26), a slot label per word (S2, 129), with query.wl/slots.wl/intent.wl."""
    rs = np.random.RandomState(2)
    words = "BOS EOS flights from new york to seattle boston denver i want fly at am " \
            "and arrive in show me".split()
    query = words + ["w%d" % i for i in range(943 - len(words))]
    slots = ["B-slot%d" % i for i in range(64)] + ["I-slot%d" % i for i in range(64)] + ["O"]
    intents = ["flight", "airfare", "ground_service"] + ["intent%d" % i for i in range(23)]
    for name, items in (("query.wl", query), ("slots.wl", slots), ("intent.wl", intents)):
        with open(os.path.join(folder, name), "w") as f:
            f.writelines(w + "\n" for w in items)
    for name, n in (("atis.train.ctf", 300), ("atis.test.ctf", 60)):
        with open(os.path.join(folder, name), "w") as f:
            for s in range(n):
                topic = rs.randint(6)
                ids = [0] + [topic * 150 + 2 + rs.randint(150) for _ in range(rs.randint(3, 9))]
                ids.append(1)
                for t, w in enumerate(ids):
                    slot = 128 if w < 2 or w % 3 else (w // 3) % 128
                    intent = ("S1", topic, intents[topic]) if t == 0 else None
                    f.write(_ctf_line(s, [("S0", w, query[w]), intent,
                                          ("S2", slot, slots[slot])]))


CMUDICT_MAPPING = (["'", "</s>", "<s/>", "<s>"] + [chr(65 + i) for i in range(26)] + [
    "~" + p for p in "AA AE AH AO AW AY B CH D DH EH ER EY F G HH IH IY JH K L M N NG OW OY P R "
    "S SH T TH UH UW V W Y Z ZH".split()])


def write_cmudict(folder: str) -> None:
    """CMUDict in CNTK 204's/599A's format: letters (S0) and phonemes (S1), each sequence
    between <s> and </s>, both over cmudict-0.7b.mapping's 69 symbols."""
    rs = np.random.RandomState(3)
    with open(os.path.join(folder, "cmudict-0.7b.mapping"), "w") as f:
        f.writelines(w + "\n" for w in CMUDICT_MAPPING)
    for name, n in (("cmudict-0.7b.train-dev-20-21.ctf", 400), ("tiny.ctf", 3),
                    ("cmudict-0.7b.test.ctf", 40)):
        with open(os.path.join(folder, name), "w") as f:
            for s in range(n):
                letters = [4 + rs.randint(26) for _ in range(rs.randint(2, 8))]
                # a phoneme per letter, a letter >= 'T' sounds twice: the lengths differ
                phones = [p for c in letters for p in ([30 + c % 39] * (1 + (c >= 23)))]
                src, dst = [3] + letters + [1], [3] + phones + [1]
                for t in range(max(len(src), len(dst))):
                    f.write(_ctf_line(s, [
                        ("S0", src[t], CMUDICT_MAPPING[src[t]]) if t < len(src) else None,
                        ("S1", dst[t], CMUDICT_MAPPING[dst[t]]) if t < len(dst) else None]))
# -- end of the sequence notebooks' data stand-ins --


DATA = {"103B_MNIST_LogisticRegression": write_mnist, "103C_MNIST_MultiLayerPerceptron":
        write_mnist, "206A_Basic_GAN": write_mnist, "206B_DCGAN": write_mnist,
        "103D_MNIST_ConvolutionalNeuralNetwork": write_mnist,
        "105_Basic_Autoencoder_for_Dimensionality_Reduction": write_mnist,
        "106B_LSTM_Timeseries_with_IOT_Data": write_solar,
        "201B_CIFAR-10_ImageHandsOn": write_cifar_images, "206C_WGAN_LSGAN": write_cifar_images,
        "303_Deep_Structured_Semantic_Modeling_with_LSTM_Networks": write_dssm,
        # sequence notebooks
        "202_Language_Understanding": write_atis, "204_Sequence_To_Sequence": write_cmudict,
        "599A_Sequence_To_Sequence": write_cmudict,
        "208_Speech_Connectionist_Temporal_Classification": write_an4_speech,
        "301_Image_Recognition_with_Deep_Transfer_Learning": write_transfer_images}


def write_feed_data(folder: str) -> None:
    """What CNTK's Manual_How_to_feed_data reads: 103A's MNIST (``write_mnist``), 201A's
    CIFAR-10 (``write_cifar_images``) and AN4 speech (``write_an4_speech``) in
    ``Tests/EndToEndTests/Speech/Data`` (the notebook's ``..`` cut to ``.``)."""
    write_mnist(folder)
    write_cifar_images(folder)
    write_an4_speech(os.path.join(folder, "Tests", "EndToEndTests", "Speech", "Data"))


DATA["Manual_How_to_feed_data"] = write_feed_data
DATA["Manual_How_to_use_network_optimizations"] = write_mnist


def write_gym(folder: str) -> None:
    """CNTK 203's ``import gym``: ``cntk_gym_standin.py`` (CartPole-v0) as ``gym.py``."""
    shutil.copyfile(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                 "cntk_gym_standin.py"), os.path.join(folder, "gym.py"))


DATA["203_Reinforcement_Learning_Basics"] = write_gym
DATA["205_Artistic_Style_Transfer"] = write_style_transfer
DATA["302A_Evaluation_of_Pretrained_Super-resolution_Models"] = write_superres_image
DATA["302B_Image_Super-resolution_Using_CNNs_and_GANs"] = write_bsds_images
