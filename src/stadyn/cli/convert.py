"""``stadyn convert IN OUT``: between Stadyn model files (``.stadyn``) and ONNX (``.onnx``), and
from NNabla (``.nnp``, ``.nntxt``: the first executor) and CNTK 2 (``.model``, ``.dnn``) model
files to either.

The direction follows the file names: ``.onnx`` output exports (inference graph, dynamic batch
axis), ``.onnx`` input imports (symbolic dimensions sized by ``--dim NAME=SIZE``, default 1);
``.stadyn`` to ``.stadyn`` rewrites a file in the current format version; ``.nnp`` output
writes an NNabla file (an inference network and its executor) that NNabla 1.39 runs.  An input
without either extension is read as a Stadyn model file (``stadyn train`` writes
``Models/NAME``).

An ONNX export holds the model's predictions: the outputs no loss or metric computes (a
BrainScript model's ``z``, not ``ce`` or ``errs``) and only the inputs they need (``features``,
not ``labels``).  ``--outputs`` names the outputs to write instead (to either format).

Examples::

    stadyn convert digits.stadyn digits.onnx
    stadyn convert ConvNet_CIFAR10_DataAug_0.dnn convnet.onnx
    stadyn convert net.nnp net.stadyn
    stadyn convert old.model old.nnp
    stadyn convert Models/01_OneHidden one_hidden.onnx --outputs out.z
    stadyn convert --dim batch=16 model.onnx model.stadyn
"""

from __future__ import annotations

import argparse
import os
import sys

from . import plain

__all__ = ["add_parser", "convert"]


#: The largest size ``--dim`` takes (the graph is built with arrays of that size).
MAX_DIM = 2 ** 31 - 1

_EXTENSIONS = {".onnx": "ONNX model", ".stadyn": "Stadyn model file", ".nnp": "NNabla .nnp file"}


def _dims(values: list[str]) -> dict[str, int]:
    dims = {}
    for item in values:
        name, sep, size = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--dim expects NAME=SIZE, got {item!r}")
        try:
            value = int(size)
        except ValueError:
            value = None
        if value is None or not 1 <= value <= MAX_DIM:
            raise ValueError(f"--dim {item}: SIZE must be a whole number from 1 to {MAX_DIM}, "
                             f"got {size!r}")
        dims[name] = value
    return dims


def _names(values: list[str]) -> list[str] | None:
    names = [n.strip() for item in values for n in item.split(",") if n.strip()]
    return names or None


def _known() -> str:
    return ", ".join(f"{ext} ({kind})" for ext, kind in _EXTENSIONS.items())


def _read(src: str, dims: dict[str, int] | None):
    from ..serialize import import_onnx, is_legacy_model_file, is_model_file, load
    ext = os.path.splitext(src)[1].lower()
    if ext == ".onnx":
        return import_onnx(src, dims=dims)
    if is_legacy_model_file(src):
        if dims:
            raise ValueError("--dim applies to .onnx input only")
        return load(src)            # NNabla .nnp/.nntxt, CNTK .model/.dnn
    if ext == ".stadyn" or not os.path.isfile(src) or is_model_file(src):
        return load(src)            # also the errors for a missing file or a folder
    raise ValueError(f"{src}: neither a Stadyn model file nor an ONNX model (by its extension "
                     f"{ext or '(none)'} and its contents); known: {_known()}")


def convert(src: str, dst: str, opset: int | None = None,
            dims: dict[str, int] | None = None, outputs: list[str] | None = None) -> str:
    """Convert ``src`` to ``dst`` (by their suffixes) and return a one-line report.

    ``outputs`` names the outputs to write; an ONNX file gets the model's predictions by
    default (:func:`stadyn.serialize.inference_outputs`).

    Example:
        >>> import os, tempfile, stadyn as sd, stadyn.functions as F
        >>> folder = tempfile.mkdtemp()
        >>> x = sd.Variable((2, 3))
        >>> sd.save(os.path.join(folder, "m.stadyn"), F.relu(x), x)
        >>> convert(os.path.join(folder, "m.stadyn"), os.path.join(folder, "m.onnx")).split("/")[-1]
        'm.onnx (ONNX opset 17, 1 ops; inputs x; outputs y)'
    """
    from ..serialize import DEFAULT_OPSET, Network, export_onnx, model_info, save, save_nnp
    ext = os.path.splitext(dst)[1].lower()
    if ext not in _EXTENSIONS:
        raise ValueError(f"{dst}: unknown extension {ext or '(none)'} for the output; known: "
                         f"{_known()}")
    if os.path.abspath(src) == os.path.abspath(dst):
        raise ValueError("input and output are the same file")
    if opset is not None and ext != ".onnx":
        raise ValueError("--opset applies to .onnx output only")
    net = _read(src, dims)
    if ext == ".onnx":
        export_onnx(dst, net, opset=opset or DEFAULT_OPSET, outputs=outputs)
        info = model_info(dst)
        names = list(info.outputs)
        left = [n for n in net.outputs if n not in names]
        note = (f"; left out {', '.join(left)}: " + ("criteria; name outputs with --outputs"
                                                     if outputs is None else "not asked for")
                if left else "")
        return (f"wrote {dst} (ONNX opset {opset or DEFAULT_OPSET}, "
                f"{sum(info.op_counts.values())} ops; inputs {', '.join(info.inputs)}; "
                f"outputs {', '.join(names)}{note})")
    if outputs is not None:
        unknown = [n for n in outputs if n not in net.outputs]
        if unknown:
            raise ValueError(f"{src} has no output(s) {unknown}; its outputs are "
                             f"{', '.join(net.outputs)}")
        chosen = {n: net.outputs[n] for n in outputs}
        net = Network({n: net.inputs[n] for n in net.inputs_needed(outputs)}, chosen,
                      net.registry, source=net.source)
    n_ops = sum(net.info().op_counts.values())
    if ext == ".nnp":
        save_nnp(dst, net)
        return (f"wrote {dst} (NNabla .nnp: network 'network', executor 'runtime', {n_ops} ops, "
                f"{len(net.registry)} parameters; outputs {', '.join(net.outputs)})")
    save(dst, net)
    return (f"wrote {dst} (Stadyn model file, {n_ops} ops, {len(net.registry)} parameters; "
            f"outputs {', '.join(net.outputs)})")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("convert", help="convert between Stadyn model files and ONNX, "
                                              "and from NNabla and CNTK model files",
                              description=plain(__doc__),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="a .stadyn model file, an .onnx model, or an NNabla (.nnp, "
                                 ".nntxt) or CNTK (.model, .dnn) model file")
    p.add_argument("output", help="the file to write (.onnx, .stadyn or .nnp)")
    from ..serialize import DEFAULT_OPSET, SUPPORTED_OPSETS
    p.add_argument("--opset", type=int, default=None, choices=SUPPORTED_OPSETS, metavar="N",
                   help=f"ONNX opset of an .onnx output (default {DEFAULT_OPSET}; "
                        f"{SUPPORTED_OPSETS.start} to {SUPPORTED_OPSETS.stop - 1})")
    p.add_argument("--dim", action="append", default=[], metavar="NAME=SIZE",
                   help="size of a symbolic dimension of an ONNX input, e.g. batch=16 "
                        "(repeatable; default 1)")
    p.add_argument("--outputs", action="append", default=[], metavar="NAME[,NAME...]",
                   help="the outputs to write (repeatable; default for .onnx: the model's "
                        "predictions, no losses or metrics; for .stadyn: all)")

    def run(a: argparse.Namespace) -> int:
        try:
            print(convert(a.input, a.output, a.opset, _dims(a.dim), _names(a.outputs)))
        except (ValueError, OSError) as exc:  # StadynErrors are ValueErrors too
            print(f"stadyn convert: error: {exc}", file=sys.stderr)
            return 1
        return 0
    p.set_defaults(func=run)
