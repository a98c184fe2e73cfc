"""``stadyn graph FILE -o OUT``: draw a model file's network.

FILE is a Stadyn model file, an ONNX model, or an NNabla (.nnp, .nntxt) or CNTK (.model, .dnn)
model file (drawn with that framework's own op names).  OUT's extension picks the format: .svg,
.png, .dot (Graphviz source) or .html (a self-contained page in which parameter scopes open and
close on a click).  Laying out needs Graphviz's dot program (apt-get install graphviz).

Example::

    stadyn graph digits.stadyn -o digits.html
    stadyn graph digits.stadyn -o digits.svg --depth 2
"""

from __future__ import annotations

import argparse
import sys

from . import count, plain

__all__ = ["add_parser"]


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("graph", help="draw a model file's network (SVG, PNG, DOT or an "
                                            "interactive HTML page)", description=plain(__doc__),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="a .stadyn model file, an .onnx model, or an NNabla/CNTK model")
    p.add_argument("-o", "--output", required=True,
                   help="the picture to write: .svg, .png, .dot or .html")
    p.add_argument("--depth", type=count(0), default=None,
                   help="draw scopes deeper than this many levels closed (in the HTML page: the "
                        "first view)")
    p.add_argument("--network", default=None,
                   help="which network of an NNabla .nnp file (default: the first)")
    p.add_argument("--title", default=None, help="the title drawn above the graph")
    p.add_argument("--direction", choices=("TB", "LR"), default="TB",
                   help="where the data flows: TB (top to bottom, the default) or LR (left to "
                        "right)")

    def run(a: argparse.Namespace) -> int:
        from ..inspect import show
        try:
            show(a.file, a.output, depth=a.depth, network=a.network, title=a.title,
                 direction=a.direction)
        except (ValueError, OSError, RuntimeError) as exc:  # StadynErrors are among these
            print(f"stadyn graph: error: {exc}", file=sys.stderr)
            return 1
        print(f"wrote {a.output}")
        return 0
    p.set_defaults(func=run)
