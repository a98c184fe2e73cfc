"""``stadyn eval CONFIG.cntk [key=value ...]``: run only the ``test``/``eval`` commands of a CNTK
BrainScript config on the model in ``modelPath``.

Prints CNTK's ``Final Results: Minibatch[1-N]: errs = 12.340% * 10000; ...`` line.  See
docs/brainscript.md.
"""

from __future__ import annotations

import argparse

from . import plain
from .train import _check_overrides, run_train

__all__ = ["add_parser"]


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("eval", help="run the test/eval commands of a .cntk config",
                              description=plain(__doc__),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", help="the .cntk config file")
    p.add_argument("overrides", nargs="*", default=[], metavar="key=value",
                   help="config overrides, e.g. dataDir=/data")
    p.set_defaults(func=lambda a: run_train(a.config, _check_overrides(a.overrides, "eval"),
                                            actions=("test", "eval")))
