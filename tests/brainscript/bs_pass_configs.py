"""The ``stadyn train`` configs of the reader-order tests (test_bs_mean_pass_order.py,
test_bs_trunc_pass_order.py, test_bs_cv_passes.py), built in one place: one scalar weight
``w`` (0.5) fitted by a ``SquareError`` between ``y`` and ``criterion`` on sequences of
one-value samples read from a CNTKTextFormat file, run by Stadyn's runner.

Example:
    >>> text = train_config(criterion="w .* x", sgd="epochSize = 0 ; maxEpochs = 1",
    ...                     reader=ctf_reader("d.ctf", window=2, chunk=40))
    >>> "se = SquareError (y, w .* x)" in text and "randomize = false" in text
    True
"""

from __future__ import annotations

import io
from pathlib import Path

from stadyn.brainscript._runner import run

#: The ``input`` block of a CNTKTextFormat reader or deserializer: ``x`` and ``y``, one value.
XY_INPUT = 'input = { x = { dim = 1 ; format = "dense" } ; y = { dim = 1 ; format = "dense" } }'


def sequences_ctf(lengths, x, y) -> str:
    """CNTKTextFormat lines of sequence ``k`` of ``lengths[k]`` steps, step ``t`` written
    ``k |x {x(k)} |y {y(t)}``."""
    return "".join(f"{k} |x {x(k)} |y {y(t)}\n" for k, n in enumerate(lengths)
                   for t in range(n))


def ctf_reader(path, *, window: int, chunk: int, seed: int | None = None) -> str:
    """A ``CNTKTextFormatReader``'s settings over ``path`` in chunks of ``chunk`` bytes, a
    window of ``window`` chunks: randomized with ``randomizationSeed = seed``, or in file
    order (``randomize = false``) where ``seed`` is None."""
    order = "randomize = false" if seed is None else f"randomizationSeed = {seed}"
    return (f'readerType = "CNTKTextFormatReader" ; file = "{path}" ; {order} ; '
            f"randomizationWindow = {window} ; chunkSizeInBytes = {chunk} ; {XY_INPUT}")


def train_config(*, criterion: str, sgd: str, reader: str, cv_reader: str | None = None
                 ) -> str:
    """A config whose one command ``train`` fits ``w`` by ``se = SquareError (y, criterion)``
    with the ``SGD`` settings ``sgd`` on ``reader`` (and ``cvReader`` where ``cv_reader``),
    on the CPU in float, its model at ``$OutputDir$/m``."""
    cv = "" if cv_reader is None else f"\n    cvReader = {{ {cv_reader} }}"
    return f"""command = train
deviceId = -1
precision = "float"
train = {{
    action = "train"
    modelPath = "$OutputDir$/m"
    BrainScriptNetworkBuilder = {{
        x = Input {{1}}
        y = Input {{1}}
        w = ParameterTensor {{1, initValue = 0.5}}
        se = SquareError (y, {criterion})
        featureNodes = (x) ; labelNodes = (y) ; criterionNodes = (se)
    }}
    SGD = {{ {sgd} }}
    reader = {{ {reader} }}{cv}
}}
"""


def write_mean_pass_data(folder: Path, lengths) -> Path:
    """``folder/seqs.ctf``: the pre-computing-pass tests' sequences (sequence ``k`` of
    ``lengths[k]`` steps, ``x`` = k / 4, ``y`` = t - 1); return its path."""
    path = folder / "seqs.ctf"
    path.write_text(sequences_ctf(lengths, lambda k: f"{k / 4:g}", lambda t: t - 1))
    return path


def mean_pass_config(refs: dict, reader: str, *, epoch_size, epochs: int, all_data: bool
                     ) -> str:
    """The pre-computing-pass tests' config: ``se = SquareError (y, w .* (x - Mean (x)))``,
    plain SGD (``momentumPerMB = 0``) at ``refs["rate"]`` per sample in minibatches of
    ``refs["minibatch"]``, epochs of ``epoch_size`` samples, ``UseAllDataForPreComputedNode``
    ``all_data``, on ``reader``."""
    return train_config(
        criterion="w .* (x - Mean (x))", reader=reader,
        sgd=(f"epochSize = {epoch_size} ; minibatchSize = {refs['minibatch']} ; "
             f"learningRatesPerSample = {refs['rate']} ; momentumPerMB = 0 ; "
             f"maxEpochs = {epochs} ; UseAllDataForPreComputedNode = {str(all_data).lower()}"))


def run_config(text: str, tmp_path: Path) -> str:
    """Run the config ``text`` (written to ``tmp_path/train.cntk``) with ``OutputDir`` set to
    ``tmp_path``; return what it logged."""
    config = tmp_path / "train.cntk"
    config.write_text(text)
    log = io.StringIO()
    run(config, [f"OutputDir={tmp_path}"], out=log)
    return log.getvalue()
