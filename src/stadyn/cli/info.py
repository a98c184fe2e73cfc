"""``stadyn info FILE``: what a Stadyn model file or an ONNX model holds.

Prints the inputs (names, shapes, dtypes), the outputs, the op counts by type and the parameter
count, read from the file without building the graph.

Example::

    stadyn info digits.stadyn
"""

from __future__ import annotations

import argparse
import sys

from . import plain

__all__ = ["add_parser"]


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("info", help="show a model file's inputs, outputs, ops and "
                                           "parameters", description=plain(__doc__),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="a .stadyn model file or an .onnx model")

    def run(a: argparse.Namespace) -> int:
        from ..serialize import model_info
        try:
            print(f"{a.file}: {model_info(a.file)}")
        except (ValueError, OSError) as exc:  # StadynErrors are ValueErrors too
            print(f"stadyn info: error: {exc}", file=sys.stderr)
            return 1
        return 0
    p.set_defaults(func=run)
