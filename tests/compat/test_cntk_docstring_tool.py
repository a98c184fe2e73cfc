"""``tools/cntk_docstring_examples.py`` without CNTK: how it finds a package's examples, how it
rewrites their imports for Stadyn, and how it judges one docstring from both sides' records."""

import importlib.util
import os
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _tool():
    spec = importlib.util.spec_from_file_location(
        "cntk_docstring_examples", os.path.join(ROOT, "tools", "cntk_docstring_examples.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_extract_finds_module_function_and_method_docstrings_but_not_tests(tmp_path):
    pkg = tmp_path / "cntk"
    (pkg / "ops" / "tests").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""Top.\n\n>>> 1 + 1\n2\n"""\n')
    (pkg / "ops" / "__init__.py").write_text(textwrap.dedent('''\
        def plus(a, b):
            """Adds.

            >>> plus(1, 2)
            3
            """
            def inner():
                """>>> never"""

        class Box:
            def get(self):
                """>>> Box().get()"""

        def plain():
            """No example."""
        '''))
    (pkg / "ops" / "tests" / "t.py").write_text('"""\n>>> 0\n0\n"""\n')
    names = [t[0] for t in _tool().extract(str(pkg))]
    assert names == ["cntk", "cntk.ops.plus", "cntk.ops.Box.get"]


def test_imports_of_cntk_read_stadyn_compat():
    to_stadyn = _tool()._to_stadyn
    assert to_stadyn("import cntk as C\n") == "import stadyn.compat.cntk as C\n"
    assert to_stadyn("import cntk\n") == "import stadyn.compat.cntk as cntk\n"
    assert to_stadyn("from cntk.layers import Dense\n") == \
        "from stadyn.compat.cntk.layers import Dense\n"
    assert to_stadyn("x = cntk_like + 1\n") == "x = cntk_like + 1\n"


def test_classify_holds_stadyn_to_cntks_output_where_cntk_differs_from_its_docstring():
    classify = _tool().classify
    test = (0, "cntk.ops.f", "cntk/ops/__init__.py", 1, ">>> f()\n1\n>>> g()\n2\n")
    ok = {"ok": True, "got": "1\n", "exc": None}
    real = {"records": [ok, {"ok": False, "got": "3\n", "exc": None}]}
    assert classify(test, real, {"records": [ok, {"ok": True, "got": "3\n", "exc": None}]})[0] \
        == "cntk-fails"
    status, detail = classify(test, real, {"records": [ok, {"ok": False, "got": "2\n",
                                                          "exc": None}]})
    assert status == "DIFFERS" and "expected: 3" in detail
    assert classify(test, {"records": [ok, ok]}, {"records": [ok, ok]})[0] == "pass"
