"""The ``stadyn`` command: ``stadyn demo | bench | data ...``.

Each subcommand lives in its own module with an ``add_parser(subparsers)`` function.
"""

from __future__ import annotations

import argparse
import importlib
import sys

__all__ = ["main", "build_parser", "count"]


def count(minimum: int = 1):
    """An argparse ``type`` for a whole number of at least ``minimum`` (epochs, sizes, rounds):
    a bad value is a usage error naming the option, not a traceback later on."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value
    parse.__name__ = "count"
    return parse

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
