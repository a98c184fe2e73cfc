"""Runs each program of examples/cntk on CNTK 2.7 with the CI's tiny arguments (tiny_runs.json),
its import line switched back to ``import cntk as C``, and writes its output to
cntk27_<program>.txt beside this script (the program's name without
.py).

    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \\
        make_cntk_gallery_refs.py DATA_DIR SEQUENCES_DIR [PROGRAM ...]

DATA_DIR holds the files of examples/cntk/prepare_digits.py, SEQUENCES_DIR those of
examples/cntk/prepare_sequences.py (the programs reading them say so in their header); the
PROGRAMs (names without .py: sequence_to_sequence) are the only ones run, when given.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "..", "examples", "cntk")
STADYN_IMPORT = "\nimport stadyn.compat.cntk as C\n"


def main():
    digits, sequences = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    only = sys.argv[3:]
    runs = json.load(open(os.path.join(HERE, "tiny_runs.json")))
    folder = tempfile.mkdtemp()
    try:
        for name, args in sorted(runs.items()):
            if name.startswith("_"):
                continue
            source = open(os.path.join(EXAMPLES, name)).read()
            assert source.count(STADYN_IMPORT) == 1, name
            stem = os.path.splitext(os.path.basename(name))[0]
            if only and stem not in only:
                continue
            data = sequences if "prepare_sequences.py" in source else digits
            script = os.path.join(folder, stem + ".py")
            with open(script, "w") as f:
                f.write(source.replace(STADYN_IMPORT, "\nimport cntk as C\n"))
            extra = ["--data", data] if '"--data"' in source else []
            if '"--models"' in source:
                extra += ["--models", os.path.join(folder, "Models")]
            out = subprocess.check_output([sys.executable, "-W", "ignore", script] + args + extra,
                                          cwd=folder, universal_newlines=True,
                                          stderr=subprocess.DEVNULL)
            # CNTK prints its build information when it saves a model; it says nothing here.
            lines = [l for l in out.splitlines() if l.strip() and not l.startswith(("\t", "-"))
                     and not l.startswith("Build info")]
            with open(os.path.join(HERE, "cntk27_%s.txt" % stem), "w") as f:
                f.write("\n".join(lines) + "\n")
            print(name, "done")
    finally:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
