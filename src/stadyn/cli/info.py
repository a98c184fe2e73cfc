"""``stadyn info FILE``: what a Stadyn model file, an ONNX model, or an NNabla (.nnp, .nntxt) or
CNTK (.model, .dnn) model file holds.

Prints the inputs (names, shapes, dtypes), the outputs, the op counts by type and the parameter
count, read from the file without building the graph (NNabla and CNTK files: the inputs and
outputs of the first executor or of the model, their own op names, CNTK's layers; CNTK files
record no output shapes, so those come from building the graph).  With --summary it builds the
graph and prints a table by scope instead -- op, output shape, parameters, multiply-adds -- with
totals (--depth N: one row per scope cut to N levels); NNabla and CNTK model files are listed
with their own op names.

Example::

    stadyn info digits.stadyn
    stadyn info --summary --depth 2 digits.stadyn
"""

from __future__ import annotations

import argparse
import sys

from . import count, plain

__all__ = ["add_parser"]


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("info", help="show a model file's inputs, outputs, ops and "
                                           "parameters", description=plain(__doc__),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="a .stadyn model file, an .onnx model, or an NNabla or CNTK "
                                "model file")
    p.add_argument("--summary", action="store_true",
                   help="print a table by scope: op, output shape, parameters, multiply-adds")
    p.add_argument("--depth", type=count(1), default=None,
                   help="with --summary: one row per scope cut to this many levels")

    def run(a: argparse.Namespace) -> int:
        from ..serialize import model_info
        if a.depth is not None and not a.summary:
            print("stadyn info: error: --depth goes with --summary", file=sys.stderr)
            return 2
        try:
            if a.summary:
                from ..inspect import summary
                print(summary(a.file, depth=a.depth))
            else:
                print(f"{a.file}: {model_info(a.file)}")
        except (ValueError, OSError) as exc:  # StadynErrors are ValueErrors too
            print(f"stadyn info: error: {exc}", file=sys.stderr)
            return 1
        return 0
    p.set_defaults(func=run)
