"""What ``log_number_of_parameters`` prints for model outputs, as one program for CNTK 2.7 and
for Stadyn's compat layer (only the import differs).

Run with CNTK 2.7 to write the reference, ``cntk_log_parameters.txt``, next to this file::

    LD_LIBRARY_PATH=/work/peers/cntk27/shimlib /work/peers/cntk27/venv36/bin/python -W ignore \\
        tests/compat/cntk_log_parameters.py

``tests/compat/test_cntk_logging.py`` runs :func:`cases` on ``stadyn.compat.cntk`` and compares.
"""


def cases(C, log_number_of_parameters):
    """Print a header, then what ``log_number_of_parameters`` prints, for each case."""
    x = C.input_variable(3)
    z = C.layers.Dense(4)(C.layers.Dense(5, activation=C.relu)(x))
    ce = C.cross_entropy_with_softmax(z, C.input_variable(4))
    deep = C.layers.Dense(2)(C.layers.Dense(6)(C.layers.Dense(7, activation=C.tanh)(x)))
    for name, model, trace in (("z", z, 0), ("z traced", z, 1), ("criterion", ce, 1),
                               ("combine", C.combine([z, ce]), 0), ("deep", deep, 1)):
        print(f"== {name}")
        log_number_of_parameters(model, trace_level=trace)


if __name__ == "__main__":
    import contextlib
    import io
    import os

    import cntk
    from cntk.logging import log_number_of_parameters
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        cases(cntk, log_number_of_parameters)
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           "cntk_log_parameters.txt"), "w") as f:
        f.write(text.getvalue())
