"""What both generators share: pick cases, run them on the real framework, write references.

Parses under Python 3.6 (CNTK 2.7's interpreter).
"""

import argparse
import contextlib
import glob
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import compat_cases  # noqa: E402
import compat_harness as H  # noqa: E402


def main(framework, version, isolate=None, argv=None):
    parser = argparse.ArgumentParser(
        description="Write tests/compat/refs/%s/<case>.npz from the real %s" % (framework,
                                                                              framework))
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="only the case NAME, or every case starting with NAME* "
                             "(repeatable); stale files are then left alone")
    parser.add_argument("--skip", action="append", default=[], metavar="NAME",
                        help="not the case NAME (repeatable); stale files are then left alone")
    parser.add_argument("--missing", action="store_true",
                        help="only the cases with no file in the output folder yet (to resume "
                             "a run that crashed)")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--out", metavar="DIR",
                        help="write the files into DIR instead of refs/%s (to compare)" % framework)
    args = parser.parse_args(argv)
    folder = args.out or os.path.join(H.REFS, framework)
    if not os.path.isdir(folder):
        os.makedirs(folder)

    cases = compat_cases.load(framework)
    if args.list:
        for c in cases.values():
            print(c.name, "(expected by hand)" if c.expected else "")
        return 0
    selected = [c for c in cases.values() if not args.only or any(
        c.name == o or (o.endswith("*") and c.name.startswith(o[:-1])) for o in args.only)]
    if args.only and not selected:
        sys.exit("no case matches %s" % args.only)
    unknown = sorted(set(args.skip) - set(cases))
    if unknown:
        sys.exit("--skip: no case named %s" % ", ".join(unknown))
    selected = [c for c in selected if c.name not in args.skip]
    if args.missing:
        selected = [c for c in selected
                    if not os.path.exists(os.path.join(folder, c.name + ".npz"))]
    side = H.Side(framework, "", isolate or contextlib.contextmanager(
        lambda: (yield)))
    failed = []
    written = 0
    for c in selected:
        if c.expected is not None:
            continue
        if c.missing_programs():
            print("skipped %s: needs %s on the PATH (its reference is left as it is)"
                  % (c.name, ", ".join(c.missing_programs())), file=sys.stderr)
            continue
        try:
            results, touched = H.run_case(c, side)
        except Exception:
            failed.append(c.name)
            print("FAILED %s:\n%s" % (c.name, traceback.format_exc()), file=sys.stderr)
            continue
        H.save_ref(c, results, touched, version, folder)
        written += 1
    if not args.only and not args.skip and not args.out and not args.missing:
        keep = set(H.ref_path(framework, c.name) for c in cases.values() if c.expected is None)
        for path in glob.glob(os.path.join(H.REFS, framework, "*.npz")):
            if path not in keep:
                os.remove(path)
                print("removed stale %s" % os.path.relpath(path, H.HERE))
    print("%s %s: wrote %d reference files%s" % (framework, version, written,
                                                 "; FAILED: " + ", ".join(failed)
                                                 if failed else ""))
    return 1 if failed else 0
