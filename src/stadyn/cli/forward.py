"""``stadyn forward FILE.nnp -d DATA.csv -o OUTDIR``: run an NNabla file's executor on a CSV
data set, as ``nnabla_cli forward`` did.

The CSV is NNabla's data set format (a header of variable names such as ``x:image`` or
``x__0,x__1``; one sample per row, values or file names).  Writes ``OUTDIR/output_result.csv``:
the CSV's columns followed by each output (``y``, or ``y__0, y__1, ...`` for several values).
See docs/model-files.md.
"""

from __future__ import annotations

import argparse

from . import plain

__all__ = ["add_parser", "run_forward"]


def run_forward(config: str, dataset: str, outdir: str, executor: str | None = None,
                batch_size: int | None = None) -> int:
    """Run ``config``'s executor on ``dataset``; prints where the results went."""
    from ._nnp_run import forward_nnp
    result = forward_nnp(config, dataset, outdir, executor=executor, batch_size=batch_size)
    print(f"results written to {result}")
    return 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("forward", help="run an NNabla .nnp executor on a CSV data set",
                              description=plain(__doc__),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", help="the .nnp (or .nntxt) file")
    p.add_argument("-d", "--dataset", required=True, help="the CSV data set")
    p.add_argument("-o", "--outdir", required=True, help="folder for output_result.csv")
    p.add_argument("-e", "--executor", default=None, help="the executor (default: the first)")
    p.add_argument("-b", "--batch-size", type=int, default=None,
                   help="the batch size to run at (default: the network's)")
    p.set_defaults(func=lambda a: run_forward(a.config, a.dataset, a.outdir, a.executor,
                                              a.batch_size))
