"""Run CNTK 2.x's own tutorial notebooks on Stadyn and on CNTK 2.7, side by side, at tiny sizes.

The notebooks are not part of Stadyn (they are CNTK's); point this at a CNTK checkout:

    python tools/cntk_notebooks.py --notebooks /path/to/CNTK/Tutorials --out /tmp/nb \\
        --cntk-python "/path/to/cntk27/venv36/bin/python" [NAME ...]

For each notebook NAME (``106A_LSTM_Timeseries_with_Simulated_Data``...) it takes the code
cells, drops notebook magics, IPython and plotting (``plt``/``matplotlib`` become an object that
swallows every call), applies the size cuts of ``SETTINGS`` (``cntk_notebook_cuts.py``), writes
a tiny stand-in for the data the notebook would download (``DATA``, ``cntk_notebook_data.py``;
the speech files and images of 208 and 301 in ``cntk_notebook_standins.py``, gym's CartPole-v0
for 203 in ``cntk_gym_standin.py``) and for a pretrained model it loads (``MODELS``: written by
CNTK 2.7 itself with ``cntk_resnet_standin.py``), and writes two scripts, ``cntk_NAME.py`` and
``stadyn_NAME.py``, which differ only in their imports (``import cntk as C`` becomes
``import stadyn.compat.cntk as C``).  It runs each in its own folder and prints the tail of both
outputs (each side's whole output goes to ``output.txt`` in its folder).
CNTK_LD_LIBRARY_PATH sets CNTK's library path, CNTK_PYTHONPATH the path of CNTK's Python
(where packages a notebook needs beside CNTK 2.7 lie: h5py for 205, pandas for 104); the
Stadyn side runs with ``src`` before the tool's own PYTHONPATH (pandas for 104).

CNTK's ``Manual/Manual_How_to_*.ipynb`` run the same way (``--notebooks`` the Manual folder,
names as the files are: ``Manual_How_to_feed_data``...); the notebooks of ``CELL_BY_CELL``
run a cell at a time, a cell's exception printed and the next cell run, as a notebook does.
``Manual_How_to_use_network_optimizations`` starts from the models CNTK 102 and 103D train:
their steps, cut small (``NETOPT_FEEDFORWARD``, ``NETOPT_CONVNET`` in
``cntk_notebook_standins.py``), go before the cells that use them.

What running them found is in docs/cntk-notebooks.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

# the scripts made of a notebook, and the data written beside them: beside this file (its
# directory is first on sys.path)
from cntk_notebook_cuts import CELL_BY_CELL, MNIST_CUTS, SETTINGS, code_of, script
from cntk_notebook_data import DATA, PANDAS_STANDIN
from cntk_notebook_standins import write_resnet_standin, write_stock_standin, \
    write_superres_standins

# notebooks that load a pretrained model: a stand-in CNTK 2.7 writes (its python, its env)
MODELS = {"301_Image_Recognition_with_Deep_Transfer_Learning": write_resnet_standin,
          "104_Finance_Timeseries_Basic_with_Pandas_Numpy": write_stock_standin,
          "302A_Evaluation_of_Pretrained_Super-resolution_Models": write_superres_standins,
          "302B_Image_Super-resolution_Using_CNNs_and_GANs": write_superres_standins}


def run(name: str, args) -> None:
    cuts = SETTINGS[name]
    cuts = MNIST_CUTS if cuts == "mnist" else cuts
    file = f"{name}.ipynb" if name.startswith("Manual_") else f"CNTK_{name}.ipynb"
    code = code_of(os.path.join(args.notebooks, file), name in CELL_BY_CELL)
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cntk_env = {"LD_LIBRARY_PATH": os.environ.get("CNTK_LD_LIBRARY_PATH", ""),
                "PYTHONPATH": os.environ.get("CNTK_PYTHONPATH", "")}
    stadyn_path = [os.path.join(src, "src")] + [p for p in os.environ.get(
        "PYTHONPATH", "").split(os.pathsep) if p]
    for side, python, env in (
            ("cntk", args.cntk_python.split(), cntk_env),
            ("stadyn", [sys.executable], {"PYTHONPATH": os.pathsep.join(stadyn_path)})):
        folder = os.path.join(args.out, side, name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "pandas_standin.py"), "w") as f:
            f.write(PANDAS_STANDIN)
        if name in DATA:
            DATA[name](folder)
        if name in MODELS:
            MODELS[name](folder, args.cntk_python.split(), cntk_env)
        path = os.path.join(folder, f"{side}_{name}.py")
        with open(path, "w") as f:
            f.write(script(code, cuts, side == "stadyn", name in CELL_BY_CELL))
        proc = subprocess.run(python + ["-W", "ignore", path], cwd=folder, capture_output=True,
                              text=True, env=dict(os.environ, **env), timeout=args.timeout)
        lines = [ln for ln in (proc.stdout + proc.stderr).splitlines()
                 if ln.strip() and not ln.startswith(("\t", "-", "Build info"))]
        with open(os.path.join(folder, "output.txt"), "w") as f:
            f.write(proc.stdout + proc.stderr)                   # the whole output, to compare
        print(f"== {name} on {side}: exit {proc.returncode}")
        print("\n".join(lines[-args.tail:]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help=f"default: all of {sorted(SETTINGS)}")
    p.add_argument("--notebooks", required=True,
                   help="CNTK's Tutorials (or Manual) folder")
    p.add_argument("--out", required=True, help="where the scripts run")
    p.add_argument("--cntk-python", required=True, help="CNTK 2.7's python")
    p.add_argument("--tail", type=int, default=20)
    p.add_argument("--timeout", type=int, default=900)
    args = p.parse_args()
    for name in args.names or sorted(SETTINGS):
        run(name, args)


if __name__ == "__main__":
    main()
