"""The ``stadyn`` command: ``stadyn demo | bench | data ...``.

Each subcommand lives in its own module with an ``add_parser(subparsers)`` function.
"""

from __future__ import annotations

import argparse
import importlib
import sys

__all__ = ["main", "build_parser"]

_SUBCOMMANDS = ("demo", "bench", "data", "train", "eval", "convert", "info")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stadyn", description="Stadyn: one network, two graphs.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _SUBCOMMANDS:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:  # a subcommand still being built
            if exc.name != f"{__name__}.{name}":
                raise
            continue
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from .._errors import StadynError
    try:
        return int(args.func(args) or 0)
    except StadynError as exc:
        print(f"stadyn {args.command}: error: {exc}", file=sys.stderr)
        return 1
