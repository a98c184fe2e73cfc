"""Runs a tutorial script of this folder cell by cell, on Stadyn or on NNabla 1.39.

    python run_cells.py nb_NAME.py stadyn     (the ``import nnabla`` lines load Stadyn's compat
                                              layer, as examples/nnabla/on_stadyn.py does)
    python run_cells.py nb_NAME.py nnabla     (NNabla itself)
    python run_cells.py --serve stadyn        (runs as above, each forked from this process:
                                              see _serve)

Prints ``=== cell N`` before each cell's output, as a notebook shows it: what the cell prints,
then the repr of its last expression unless None.  A cell that raises prints one
``ERROR <type>: <message>`` line and the run goes on with the next cell.  NumPy's global
generator is seeded 0 first.  Without scikit-learn (the NNabla peer has none), ``sklearn``'s
``load_digits`` is read from the file at ``DIGITS_CSV`` (scikit-learn's ``digits.csv.gz``).
"""

import ast
import gzip
import os
import re
import sys
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _digits_from_csv():
    """``sklearn.datasets.load_digits`` read from scikit-learn's CSV (same values)."""
    def load_digits(n_class=10):
        with gzip.open(os.environ["DIGITS_CSV"], "rt") as f:
            table = np.loadtxt(f, delimiter=",")
        data, target = table[:, :64], table[:, 64].astype(int)
        return types.SimpleNamespace(data=data, target=target, images=data.reshape(-1, 8, 8))
    datasets = types.ModuleType("sklearn.datasets")
    datasets.load_digits = load_digits
    sklearn = types.ModuleType("sklearn")
    sklearn.datasets = datasets
    sys.modules.update({"sklearn": sklearn, "sklearn.datasets": datasets})


def _install_stadyn():
    sys.path.insert(0, os.path.join(os.path.dirname(ROOT), "examples", "nnabla"))
    import on_stadyn
    on_stadyn.install()


def cells(path):
    """``[(index, source)]`` of the script's ``# ---- cell N`` blocks."""
    parts = re.split(r"^# ---- cell (\d+)\n", open(path).read(), flags=re.M)
    return [(int(parts[k]), parts[k + 1]) for k in range(1, len(parts), 2)]


def main(path, framework):
    if framework == "stadyn":
        _install_stadyn()
    try:
        import sklearn.datasets  # noqa: F401
    except ImportError:
        if not os.environ.get("DIGITS_CSV"):
            sys.exit("run_cells.py: no scikit-learn here; set DIGITS_CSV to the path of "
                     "scikit-learn's sklearn/datasets/data/digits.csv.gz")
        _digits_from_csv()
    sys.path.insert(0, HERE)                 # tiny_digits.py
    np.random.seed(0)
    namespace = {"__name__": "__main__"}
    for index, source in cells(path):
        print("=== cell %d" % index, flush=True)
        try:
            tree = ast.parse(source)
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            exec(compile(tree, "cell %d" % index, "exec"), namespace)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), "cell %d" % index, "eval"),
                             namespace)
                if value is not None:
                    print(repr(value))
        except Exception as e:              # the next cell runs, as in a notebook
            message = str(e).splitlines()[0][:200] if str(e) else ""
            print("ERROR %s: %s" % (type(e).__name__, message), flush=True)
        sys.stdout.flush()


def _serve(framework):
    """``--serve FRAMEWORK``: what every run does before its first cell (the compat layer's
    import hook, scikit-learn's digits) and the imports every tutorial's first cells make
    (``nnabla``, its functions and parametric functions) once; then each run (``run_cells.py
    nb_NAME.py FRAMEWORK``) in a process forked from this one (``tests/fork_server.py``)."""
    if framework == "stadyn":
        _install_stadyn()
    import sklearn.datasets  # noqa: F401
    import nnabla  # noqa: F401
    import nnabla.functions  # noqa: F401
    import nnabla.parametric_functions  # noqa: F401
    sys.path.insert(0, ROOT)
    from fork_server import serve
    sys.path.remove(ROOT)
    serve(lambda argv: main(argv[1], argv[2]))


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        _serve(sys.argv[2])
    else:
        main(sys.argv[1], sys.argv[2])
