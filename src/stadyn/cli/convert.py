"""``stadyn convert IN OUT``: between Stadyn model files (``.stadyn``) and ONNX (``.onnx``).

The direction follows the file names: ``.onnx`` output exports (inference graph, dynamic batch
axis), ``.onnx`` input imports (symbolic dimensions sized by ``--dim NAME=SIZE``, default 1);
``.stadyn`` to ``.stadyn`` rewrites a file in the current format version.

Examples::

    stadyn convert digits.stadyn digits.onnx
    stadyn convert --dim batch=16 model.onnx model.stadyn
"""

from __future__ import annotations

import argparse
import os
import sys

__all__ = ["add_parser", "convert"]


def _dims(values: list[str]) -> dict[str, int]:
    dims = {}
    for item in values:
        name, sep, size = item.partition("=")
        if not sep or not name or not size.isdigit() or int(size) < 1:
            raise ValueError(f"--dim expects NAME=SIZE with a positive size, got {item!r}")
        dims[name] = int(size)
    return dims


def convert(src: str, dst: str, opset: int | None = None,
            dims: dict[str, int] | None = None) -> str:
    """Convert ``src`` to ``dst`` (by their suffixes) and return a one-line report.

    Example:
        >>> import os, tempfile, stadyn as sd, stadyn.functions as F
        >>> folder = tempfile.mkdtemp()
        >>> x = sd.Variable((2, 3))
        >>> sd.save(os.path.join(folder, "m.stadyn"), F.relu(x), x)
        >>> convert(os.path.join(folder, "m.stadyn"), os.path.join(folder, "m.onnx")).split("/")[-1]
        'm.onnx (ONNX opset 17, 1 ops)'
    """
    from ..serialize import export_onnx, import_onnx, load, save
    from ..serialize._onnx_export import DEFAULT_OPSET
    if os.path.abspath(src) == os.path.abspath(dst):
        raise ValueError("input and output are the same file")
    if src.endswith(".onnx"):
        net = import_onnx(src, dims=dims)
    else:
        net = load(src)
    n_ops = sum(net.info().op_counts.values())
    if dst.endswith(".onnx"):
        export_onnx(dst, net, opset=opset or DEFAULT_OPSET)
        return f"wrote {dst} (ONNX opset {opset or DEFAULT_OPSET}, {n_ops} ops)"
    if opset is not None:
        raise ValueError("--opset applies to .onnx output only")
    save(dst, net)
    return f"wrote {dst} (Stadyn model file, {n_ops} ops, {len(net.registry)} parameters)"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("convert", help="convert between Stadyn model files and ONNX",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", help="a .stadyn model file or an .onnx model")
    p.add_argument("output", help="the file to write (.onnx or .stadyn)")
    p.add_argument("--opset", type=int, default=None, help="ONNX opset of an .onnx output "
                                                           "(default 17; 17-21)")
    p.add_argument("--dim", action="append", default=[], metavar="NAME=SIZE",
                   help="size of a symbolic dimension of an ONNX input (repeatable)")

    def run(a: argparse.Namespace) -> int:
        try:
            print(convert(a.input, a.output, a.opset, _dims(a.dim)))
        except (ValueError, OSError) as exc:  # StadynErrors are ValueErrors too
            print(f"stadyn convert: error: {exc}", file=sys.stderr)
            return 1
        return 0
    p.set_defaults(func=run)
