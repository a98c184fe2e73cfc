"""``stadyn data ...``: map files, mean files, CIFAR-10, im2rec, rec2img.

The CLI entry point calls :func:`add_parser` with its sub-parsers; every sub-command sets
``func(args) -> int`` (0 on success, 1 when the input was bad; the error is printed).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

from .._errors import StadynError
from . import count as count_type

__all__ = ["add_parser"]


def _report(command: str,
            run: Callable[[argparse.Namespace], str]) -> Callable[[argparse.Namespace], int]:
    def func(args: argparse.Namespace) -> int:
        try:
            message = run(args)
        except (StadynError, ValueError, OSError) as exc:
            print(f"stadyn data {command}: error: {exc}", file=sys.stderr)
            return 1
        if message:
            print(message)
        return 0
    return func


def _progress(args: argparse.Namespace) -> bool | None:
    return False if args.quiet else None


def _mapfile(args: argparse.Namespace) -> str:
    from ..io import make_map_file
    classes = make_map_file(args.folder, args.out, args.labels, relative=args.relative)
    where = f" and {args.labels}" if args.labels else ""
    return f"wrote {args.out}{where}: {len(classes)} classes"


def _mean(args: argparse.Namespace) -> str:
    from ..io import compute_mean
    if (args.width is None) != (args.height is None):
        raise ValueError("give both --width and --height, or neither")
    mean = compute_mean(args.map, args.out, args.width, args.height, progress=_progress(args))
    h, w, c = mean.shape
    return f"wrote {args.out}: {w}x{h}x{c} mean image"


def _cifar10(args: argparse.Namespace) -> str:
    from ..io import convert_cifar10
    written = convert_cifar10(args.archive, args.out, ctf=not args.no_ctf,
                              progress=_progress(args))
    return "wrote " + ", ".join(os.path.relpath(p, args.out) for p in written.values())


def _im2rec(args: argparse.Namespace) -> str:
    from ..io import make_image_list, pack_list
    lists = make_image_list(args.source, args.prefix, recursive=args.recursive,
                            train_ratio=args.train_ratio, test_ratio=args.test_ratio,
                            shuffle=args.shuffle, seed=args.seed, exts=args.exts)
    if args.list_only:
        return "wrote " + ", ".join(lists)
    root = args.source if os.path.isdir(args.source) else None
    written = []
    for lst in lists:
        written.extend(pack_list(lst, root=root, encoding=args.encoding,
                                 quality=args.quality, pass_through=args.pass_through,
                                 progress=_progress(args)))
    return "wrote " + ", ".join(lists + written)


def _rec2img(args: argparse.Namespace) -> str:
    from ..io import dump_rec
    count = dump_rec(args.rec, args.out, idx=args.idx, progress=_progress(args))
    return f"wrote {count} images to {args.out}"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``data`` and its sub-commands to a CLI's sub-parsers; returns the ``data`` parser."""
    parser = subparsers.add_parser(
        "data", help="prepare data: map files, mean files, CIFAR-10, RecordIO",
        description="Prepare data for Stadyn's readers.")
    commands = parser.add_subparsers(dest="data_command", metavar="COMMAND", required=True)

    def command(name: str, help_text: str, run) -> argparse.ArgumentParser:
        p = commands.add_parser(name, help=help_text, description=help_text)
        p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
        p.set_defaults(func=_report(name, run))
        return p

    p = command("mapfile", "write a map file for a folder of class sub-folders", _mapfile)
    p.add_argument("folder", help="folder whose sub-folders are the classes")
    p.add_argument("--out", required=True, metavar="MAP", help="map file to write")
    p.add_argument("--labels", metavar="LABELS.txt", help="also write the class names, one a line")
    p.add_argument("--relative", action="store_true",
                   help="write '...' paths relative to the map file's folder")

    p = command("mean", "compute a mean image (OpenCV XML) of a map file's images", _mean)
    p.add_argument("map", help="map file")
    p.add_argument("--out", required=True, metavar="MEAN.xml", help="mean file to write")
    p.add_argument("--width", type=count_type(), help="resize images to this width first")
    p.add_argument("--height", type=count_type(), help="resize images to this height first")

    p = command("cifar10", "convert cifar-10-python.tar.gz into CNTK's CIFAR-10 layout", _cifar10)
    p.add_argument("archive", help="the local cifar-10-python.tar.gz")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder")
    p.add_argument("--no-ctf", action="store_true", help="skip the CTF text files")

    p = command("im2rec", "write .lst, .rec and .idx files from a folder or a map file", _im2rec)
    p.add_argument("source", help="image folder, or a map file")
    p.add_argument("prefix", help="output prefix: PREFIX.lst, PREFIX.rec, PREFIX.idx")
    p.add_argument("--list-only", action="store_true", help="only write the .lst file(s)")
    p.add_argument("--recursive", action="store_true",
                   help="label each sub-folder (sorted walk order); else root images, label 0")
    p.add_argument("--train-ratio", type=float, default=1.0, help="share for PREFIX_train.lst")
    p.add_argument("--test-ratio", type=float, default=0.0, help="share for PREFIX_test.lst")
    p.add_argument("--encoding", choices=(".jpg", ".png"), default=".jpg")
    p.add_argument("--quality", type=int, default=95,
                   help="JPEG quality 1-100, or PNG compression 0-9 (default 95)")
    p.add_argument("--shuffle", action=argparse.BooleanOptionalAction, default=True,
                   help="shuffle the list (default: yes)")
    p.add_argument("--seed", type=int, default=100, help="shuffle seed (im2rec's: 100)")
    p.add_argument("--pass-through", action="store_true",
                   help="store the files' bytes instead of re-encoding")
    p.add_argument("--exts", nargs="+", default=[".jpeg", ".jpg", ".png"],
                   help="image extensions for folders")

    p = command("rec2img", "write the images of a .rec file with a map file and a .lst", _rec2img)
    p.add_argument("rec", help=".rec file")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder")
    p.add_argument("--idx", help="its .idx file (optional)")
    return parser
