"""The ``stadyn`` command: ``stadyn demo | bench | data | ... | info | graph``.

Each subcommand lives in its own module with an ``add_parser(subparsers)`` function.  Options
may stand anywhere among a subcommand's positional arguments (``stadyn train CFG --nproc 2
dataDir=/data``), help texts are plain text (:func:`plain`), and Python warnings print as one
line, ``stadyn: warning: ...``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import warnings

__all__ = ["main", "build_parser", "count", "plain", "version_text"]


def count(minimum: int = 1):
    """An argparse ``type`` for a whole number of at least ``minimum`` (epochs, sizes, rounds):
    a bad value is a usage error naming the option, not a traceback later on.

    Example:
        >>> count(1)("3"), count(0)("0")
        (3, 0)
    """
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


_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`(~?)([^`<]*?)\s*(?:<[^`>]*>)?`")


def plain(text: str | None) -> str:
    """A docstring as plain text for ``--help``: reStructuredText markup (````literals````,
    ``:func:`name``` roles, ``**bold**``, ``Example::``) becomes the words it marks.

    Example:
        >>> plain("Run ``stadyn train`` (see :func:`~stadyn.brainscript.run`).  Example::")
        'Run stadyn train (see run).  Example:'
    """
    text = _ROLE.sub(lambda m: m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2),
                     text or "")
    text = text.replace("``", "")
    text = re.sub(r"\*\*([^*]+)\*\*", r"\1", text)
    text = re.sub(r"(?<![\w`])`([^`]+)`(?![\w`])", r"\1", text)
    return re.sub(r"::(\s*)$", r":\1", text, flags=re.M)


class _Parser(argparse.ArgumentParser):
    """A subcommand's parser: options may stand anywhere among the positional arguments, as
    users type them (``stadyn train CFG --nproc 2 dataDir=/data``); argparse alone would stop
    filling a ``key=value ...`` list at the first option."""

    _intermixing = False

    def parse_known_args(self, args=None, namespace=None):
        positional_nargs = {a.nargs for a in self._get_positional_actions()}
        if (self._intermixing or self._subparsers is not None
                or positional_nargs & {argparse.PARSER, argparse.REMAINDER}):
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


_SUBCOMMANDS = ("demo", "bench", "data", "train", "forward", "eval", "convert", "info",
                "graph")


def version_text() -> str:
    """``stadyn 0.1.0 (torch 2.5.1, Python 3.11.7)``: the installed package's version (from its
    metadata) and what it runs on.

    Example:
        >>> version_text().startswith("stadyn ")
        True
    """
    import platform

    import torch

    from .._version import __version__
    return f"stadyn {__version__} (torch {torch.__version__}, Python {platform.python_version()})"


class _VersionAction(argparse.Action):
    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="print Stadyn's version (and torch's and Python's) and exit"):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The ``stadyn`` argument parser with every subcommand.

    Example:
        >>> args = build_parser().parse_args(["train", "a.cntk", "--nproc", "2", "dataDir=/d"])
        >>> args.config, args.nproc, args.overrides
        ('a.cntk', 2, ['dataDir=/d'])
    """
    parser = argparse.ArgumentParser(prog="stadyn", description="Stadyn: one network, two graphs.")
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in _SUBCOMMANDS:
        importlib.import_module(f"{__name__}.{name}").add_parser(sub)
    return parser


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _origin(filename: str) -> str:
    """The top-level package a warning came from (``torch``), or '' for Stadyn itself."""
    path = os.path.abspath(filename or "")
    if path.startswith(_PACKAGE_DIR + os.sep):
        return ""
    for root in sorted((os.path.abspath(p) for p in sys.path if p), key=len, reverse=True):
        if path.startswith(root + os.sep):
            first = path[len(root) + 1:].split(os.sep)[0]
            return os.path.splitext(first)[0]
    return ""


def format_warning(message, category, filename: str = "", lineno: int = 0) -> str:
    """One line for a warning: ``stadyn: warning: ...`` (with its kind unless it is a plain
    user or runtime warning, and the package it came from unless it is Stadyn).

    Example:
        >>> format_warning(UserWarning("override x=1\\n  was not used"), UserWarning)
        'stadyn: warning: override x=1 was not used\\n'
    """
    text = " ".join(str(message).split())
    notes = []
    if category not in (UserWarning, RuntimeWarning):
        notes.append(category.__name__)
    origin = _origin(filename)
    if origin:
        notes.append(f"from {origin}")
    suffix = f" ({', '.join(notes)})" if notes else ""
    return f"stadyn: warning: {text}{suffix}\n"


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    stream = file if file is not None else sys.stderr
    try:
        stream.write(format_warning(message, category, filename, lineno))
    except (OSError, ValueError):   # stderr closed: a warning is not worth a crash
        pass


def main(argv: list[str] | None = None) -> int:
    """Run the ``stadyn`` command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from .._errors import StadynError
    shown = warnings.showwarning
    warnings.showwarning = _show_warning
    try:
        return int(args.func(args) or 0)
    except StadynError as exc:
        print(f"stadyn {args.command}: error: {exc}", file=sys.stderr)
        return 1
    finally:
        warnings.showwarning = shown
