"""BrainScript parser: every construct, precedence, and located syntax errors."""

from __future__ import annotations

import pytest

from stadyn._errors import ConfigError
from stadyn.brainscript import _ast as A
from stadyn.brainscript import load_config, parse_expression, parse_file, parse_members


def sexpr(e: A.Expr) -> str:
    """A compact, fully parenthesised rendering of an AST, to state precedence plainly."""
    if isinstance(e, A.Number):
        return repr(e.value)
    if isinstance(e, A.String):
        return repr(e.value)
    if isinstance(e, A.Bool):
        return "true" if e.value else "false"
    if isinstance(e, A.Ident):
        return e.name
    if isinstance(e, A.Unary):
        return f"({e.op} {sexpr(e.operand)})"
    if isinstance(e, A.Binary):
        return f"({e.op} {sexpr(e.left)} {sexpr(e.right)})"
    if isinstance(e, A.ArrayLit):
        return "[" + " ".join(sexpr(i) for i in e.items) + "]"
    if isinstance(e, A.ArrayCtor):
        return f"(array {sexpr(e.first)} {sexpr(e.last)} {sexpr(e.init)})"
    if isinstance(e, A.If):
        return f"(if {sexpr(e.cond)} {sexpr(e.then)} {sexpr(e.orelse)})"
    if isinstance(e, A.Lambda):
        params = " ".join(p.name if p.default is None else f"{p.name}={sexpr(p.default)}"
                          for p in e.params)
        return f"(fn [{params}] {sexpr(e.body)})"
    if isinstance(e, A.Call):
        args = " ".join(sexpr(a.value) if a.name is None else f"{a.name}={sexpr(a.value)}"
                        for a in e.args)
        br = "{}" if e.braces else "()"
        return f"({sexpr(e.func)}{br[0]}{args}{br[1]})"
    if isinstance(e, A.MemberAccess):
        return f"(. {sexpr(e.obj)} {e.name})"
    if isinstance(e, A.Index):
        return f"(at {sexpr(e.obj)} {sexpr(e.index)})"
    if isinstance(e, A.Record):
        return "{" + " ".join(f"{m.name}={sexpr(m.value)}" for m in e.members) + "}"
    if isinstance(e, A.New):
        return f"(new {e.class_name} {sexpr(e.arg)})"
    raise TypeError(e)


def p(text: str) -> str:
    return sexpr(parse_expression(text))


# ---------------------------------------------------------------------------------------------
# constructs
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("42", "42"), ("1.5", "1.5"), (".5", "0.5"), ("1e3", "1000"), ("2.5e-1", "0.25"), ("7.", "7"),
    ("'single'", "'single'"), ('"double"', "'double'"), ("'it''s'", None),
    ('"a \\n b"', "'a \\\\n b'"),  # no escapes: a backslash is a backslash
    ("true", "true"), ("false", "false"), ("name_1", "name_1"),
])
def test_literals(text, expected):
    if expected is None:
        with pytest.raises(ConfigError):
            parse_expression(text)
    else:
        assert p(text) == expected


def test_string_may_span_lines_and_hold_comment_marks():
    assert p("'a\n# not a comment // nor this'") == repr("a\n# not a comment // nor this")


@pytest.mark.parametrize("text", ["x # comment", "x // comment", "/* c */ x /* multi\nline */",
                                  "x\n#end"])
def test_comments(text):
    assert p(text) == "x"


def test_records_with_braces_and_brackets_and_separators():
    assert p("{ a = 1 ; b = 2 }") == "{a=1 b=2}"
    assert p("[ a = 1\n b = 2 ]") == "{a=1 b=2}"
    assert p("{ a = 1 b = 2 }") == "{a=1 b=2}"  # newline or `;` optional, as in CNTK
    assert p("{ a = 1 ;; }") == "{a=1}"
    assert p("{}") == "{}"


def test_member_definitions_desugar():
    r = parse_members("f(x, y=2) = x + y\ng{a, b = true} = a\nv[i:0..3] = i * i\nc = 1")
    assert [m.name for m in r.members] == ["f", "g", "v", "c"]
    assert sexpr(r.members[0].value) == "(fn [x y=2] (+ x y))"
    assert sexpr(r.members[1].value) == "(fn [a b=true] a)"
    assert sexpr(r.members[2].value) == "(array 0 3 (fn [i] (* i i)))"
    assert r.members[0].value.name == "f"


def test_empty_parameter_list():
    assert p("{ f() = 1 }") == "{f=(fn [] 1)}"


def test_array_forms():
    assert p("1 : 2 : 3") == "[1 2 3]"
    assert p("[| 1; 2; 3 |]") == "[1 2 3]"
    assert p("[| |]") == "[]"
    assert p("[||]") == "[]"
    assert p("[| 7 |]") == "[7]"
    assert p("array[1..n](i => i * 2)") == "(array 1 n (fn [i] (* i 2)))"
    assert p("1..2" if False else "array[1..2](i=>i)") == "(array 1 2 (fn [i] i))"


def test_calls_members_and_indexing():
    assert p("f(x)") == "(f(x))"
    assert p("F{64, (3:3), pad = true}") == "(F{64 [3 3] pad=true})"
    assert p("F{64}(x)") == "((F{64})(x))"
    assert p("out.z") == "(. out z)"
    assert p("a.b.c") == "(. (. a b) c)"
    assert p("a[1]") == "(at a 1)"
    assert p("f(x).y[0](z)") == "((at (. (f(x)) y) 0)(z))"
    assert p("{ a = 1 }.a") == "(. {a=1} a)"
    assert p("f()") == "(f())"


def test_if_and_new():
    assert p("if a then b else c") == "(if a b c)"
    assert p("if a then if b then 1 else 2 else 3") == "(if a (if b 1 2) 3)"
    assert p("if a then 1 else if b then 2 else 3") == "(if a 1 (if b 2 3))"
    assert p("new ComputationNetwork { x = 1 }") == "(new ComputationNetwork {x=1})"


def test_lambdas():
    assert p("x => x + 1") == "(fn [x] (+ x 1))"
    assert p("x => y => x + y") == "(fn [x] (fn [y] (+ x y)))"  # right-associative


def test_newline_does_not_end_an_expression():
    assert p("a\n+\nb") == "(+ a b)"
    r = parse_members("h1 = DenseLayer {200}\n    (s1)\nz = 1")
    assert sexpr(r.members[0].value) == "((DenseLayer{200})(s1))"


# ---------------------------------------------------------------------------------------------
# precedence
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("a + b * c", "(+ a (* b c))"),
    ("a * b + c", "(+ (* a b) c)"),
    ("a - b - c", "(- (- a b) c)"),  # left-associative
    ("a / b * c", "(* (/ a b) c)"),
    ("-x .* y", "(.* (- x) y)"),
    ("-x.y", "(- (. x y))"),  # postfix binds tighter than unary
    ("!a && b", "(&& (! a) b)"),
    ("- - x", "(- (- x))"),
    ("a ** b % c .* d", "(.* (% (** a b) c) d)"),  # one level, left to right
    ("a + b with c", "(with (+ a b) c)"),  # same level as + and -
    ("a + b == c * d", "(== (+ a b) (* c d))"),
    ("a < b && c >= d", "(&& (< a b) (>= c d))"),
    ("a == b != c", "(!= (== a b) c)"),
    ("a && b || c && d", "(|| (&& a b) (&& c d))"),
    ("a || b >> c", "(>> (|| a b) c)"),
    ("f >> g >> h", "(>> (>> f g) h)"),
    ("f << 1", "(<< f 1)"),
    ("a >> b : c", "[(>> a b) c]"),
    ("a : b : c", "[a b c]"),  # n-ary: one array
    ("a + 1 : b * 2", "[(+ a 1) (* b 2)]"),
    ("x => a : b", "(fn [x] [a b])"),
    ("x => y => x + y", "(fn [x] (fn [y] (+ x y)))"),
    ("(a : b) : c", "[[a b] c]"),
    ("f(x) . y", "(. (f(x)) y)"),
    ("a.b(c)[d]{e}", "((at ((. a b)(c)) d){e})"),
    ("if c then a else b + 1", "(if c a (+ b 1))"),  # else extends to the right
    ("1 + if c then a else b : d", "(+ 1 (if c a [b d]))"),
    ("-a * b", "(* (- a) b)"),
    ("x * featScale", "(* x featScale)"),
])
def test_precedence(text, expected):
    assert p(text) == expected


# ---------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------

def err(text: str, path: str = "net.bs") -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_members(text, path)
    return info.value


@pytest.mark.parametrize("text, line, column, words", [
    ("a = ", 1, 5, ["end of input", "an expression"]),
    ("a = 1 +\n", 2, 1, ["end of input", "an expression"]),
    ("a = f(a b)", 1, 9, ["identifier 'b'", "')'", "','"]),
    ("a = (1", 1, 7, ["end of input", "')' to close the '(' at 1:5"]),
    ("a = [| 1; 2 }", 1, 13, ["'}'", "'|]' to close the '[|' at 1:5"]),
    ("a = 1 ]", 1, 7, ["']'"]),
    ("a = 1\nb = = 2", 2, 5, ["'='", "an expression"]),
    ("a = x =>", 1, 9, ["end of input", "an expression"]),
    ("a = 1 : : 2", 1, 9, ["':'", "an expression"]),
    ("a = if x then y", 1, 16, ["end of input", "'else'"]),
    ("a = array[1..](i=>i)", 1, 14, ["']'", "an expression"]),
    ("1 = 2", 1, 1, ["number '1'"]),
    ("f(1) = 2", 1, 3, ["number '1'"]),
    ("a = {b = 1", 1, 11, ["end of input", "'}' to close the '{' at 1:5"]),
    ("a = 'abc", 1, 5, ["without closing quotation mark"]),
    ("a = 1 /* open", 1, 7, ["comment without closing"]),
    ("a = 1 @ 2", 1, 7, ["'@'"]),
    ("a = $x$", 1, 5, ["'$'"]),
    ("a = 1\na = 2", 2, 1, ["duplicate member 'a'", "net.bs:1:1"]),
    ("f(x, x) = 1", 1, 6, ["duplicate parameter 'x'"]),
    ("a = f(x=1, x=2)", 1, 12, ["duplicate named argument 'x'"]),
    ("a = with", 1, 5, ["keyword 'with'"]),
    ("a = (x + y) => 1", 1, 13, ["'=>'"]),
])
def test_syntax_errors_are_located(text, line, column, words):
    e = err(text)
    assert (e.path, e.line, e.column) == ("net.bs", line, column), str(e)
    for w in words:
        assert w in e.reason, (w, str(e))
    assert str(e).startswith(f"net.bs:{line}:{column}: ")


def test_error_shows_source_line_with_caret():
    e = err("a = 1\nb = f(a b)\nc = 3")
    assert "\n    b = f(a b)\n            ^" in e.reason


def test_locations_offset_into_enclosing_file():
    with pytest.raises(ConfigError) as info:
        parse_expression("{\n  a = 1 +\n}", "x.cntk", line=10, column=33)
    assert (info.value.line, info.value.column) == (12, 1)
    assert info.value.path == "x.cntk"
    e = parse_expression("{ a = 1 }", "x.cntk", line=10, column=33)
    assert (e.loc.line, e.loc.column) == (10, 33)
    assert (e.members[0].loc.line, e.members[0].loc.column) == (10, 35)


def test_ast_locations():
    e = parse_expression("a +\n  b * c", "f.bs")
    assert (e.loc.line, e.loc.column) == (1, 3)  # the operator
    assert (e.right.loc.line, e.right.loc.column) == (2, 5)
    assert str(e.loc) == "f.bs:1:3"


# ---------------------------------------------------------------------------------------------
# include
# ---------------------------------------------------------------------------------------------

def test_include_splices_tokens_relative_to_including_file(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "layers.bs").write_text("Double(x) = x * 2\n")
    (tmp_path / "lib" / "main.bs").write_text('include "layers.bs"\ny = Double(3)\n'
                                              'z = 1 + include "num.bs"\n')
    (tmp_path / "lib" / "num.bs").write_text("41")
    r = parse_file(tmp_path / "lib" / "main.bs")
    assert [m.name for m in r.members] == ["Double", "y", "z"]
    assert r.members[0].loc.path.endswith("layers.bs")
    assert sexpr(r.members[2].value) == "(+ 1 41)"


def test_include_errors(tmp_path):
    (tmp_path / "a.bs").write_text('include "b.bs"\n')
    (tmp_path / "b.bs").write_text('include "a.bs"\n')
    with pytest.raises(ConfigError, match="include cycle"):
        parse_file(tmp_path / "a.bs")
    (tmp_path / "bad.bs").write_text("x = 1\ny = (2 ]\n")
    (tmp_path / "c.bs").write_text('include "bad.bs"\n')
    with pytest.raises(ConfigError) as info:
        parse_file(tmp_path / "c.bs")
    assert info.value.path.endswith("bad.bs") and (info.value.line, info.value.column) == (2, 8)
    assert "y = (2 ]" in info.value.reason  # the excerpt comes from the included file
    e = err("include 42")
    assert "quoted file name" in e.reason
    e = err("include 'missing.bs'")
    assert "file not found" in e.reason and e.column == 9


def test_an_include_path_not_found_is_looked_for_by_its_file_name_as_cntk_exe_on_linux(tmp_path):
    # BrainScriptParser.cpp:398-419 (FindSourceFile): a path that does not exist is tried as
    # its file name in the include folders; File::FileNameOf (File.cpp:215-227) splits at '/'
    # alone on Linux, so the Windows path a log of ResNet20_CIFAR10 echoes,
    # "D:\GitHub\CNTK\...\BrainScript/Macros.bs" (baseline.txt:78), is Macros.bs there
    (tmp_path / "Macros.bs").write_text("Double(x) = x * 2\n")
    (tmp_path / "Half.bs").write_text("Half(x) = x / 2\n")
    (tmp_path / "main.bs").write_text(
        'include "D:\\GitHub\\CNTK\\Examples\\BrainScript/Macros.bs"\ny = Double(3)\n'
        'include "/no/such/folder/Half.bs"\n')
    r = parse_file(tmp_path / "main.bs")
    assert [m.name for m in r.members] == ["Double", "y", "Half"]
    assert r.members[0].loc.path == str(tmp_path / "Macros.bs")
    # a path of '\\' alone is one file name on Linux: not found, as there
    (tmp_path / "win.bs").write_text('include "D:\\GitHub\\Macros.bs"\n')
    with pytest.raises(ConfigError, match="file not found"):
        parse_file(tmp_path / "win.bs")


def test_the_parser_is_built_once_and_is_linear_time(monkeypatch):
    """What kept parsing fast, checked without a clock: one LALR(1) parser (linear in the
    text) built once per process, not per call."""
    import lark

    from stadyn.brainscript._parser import _lark
    text = "{\n" + "\n".join(f"  l{i} = DenseLayer {{{i}, activation = ReLU}} (l{i - 1} .* 2 + 1)"
                            for i in range(1, 200)) + "\n}"
    parse_expression(text)  # builds the cached parser
    built = []
    original = lark.Lark.__init__

    def counting(self, *args, **kwargs):
        built.append(args[:1])
        original(self, *args, **kwargs)
    monkeypatch.setattr(lark.Lark, "__init__", counting)
    tree = parse_expression(text)
    assert built == []
    assert len(tree.members) == 199
    assert (_lark().options.parser, _lark().options.lexer) == ("lalr", "basic")


def _network_members(cfg) -> dict:
    record = cfg["T"]["BrainScriptNetworkBuilder"].parse()
    return {m.name: sexpr(m.value) for m in record.members}


def test_a_brainscript_include_is_looked_for_as_cntk_exe_looks(tmp_path, monkeypatch):
    # BrainScriptParser.cpp:398-419 (FindSourceFile): the name as written (the working folder)
    # first, then its file name in the include folders: the folders of the files being
    # included, innermost first (:487 pushes, :445 pops), then every config file's
    # (Config.cpp:66, given to the parser by NetworkFactory.cpp:84)
    work, conf, other, inner = (tmp_path / n for n in ("work", "conf", "other", "inner"))
    for d in (work, conf, other, inner):
        d.mkdir()
    monkeypatch.chdir(work)
    (work / "lib.bs").write_text("fromLib = 1\n")
    (conf / "lib.bs").write_text("fromLib = 2\n")
    (other / "only.bs").write_text("fromOnly = 3\n")        # in the first config's folder alone
    (inner / "outer.bs").write_text('include "near.bs"\n')
    (inner / "near.bs").write_text("fromNear = 4\n")
    (conf / "near.bs").write_text("fromNear = 5\n")
    (other / "first.cntk").write_text("x = 1\n")
    (conf / "main.cntk").write_text(
        'T = { BrainScriptNetworkBuilder = {\n include "lib.bs"\n include "only.bs"\n'
        f' include "{inner}/outer.bs"\n' '} }\n')
    cfg = load_config([other / "first.cntk", conf / "main.cntk"])
    assert _network_members(cfg) == {"fromLib": "1", "fromOnly": "3", "fromNear": "4"}
    # the working folder has no lib.bs: the config's folder has
    (work / "lib.bs").unlink()
    cfg = load_config([other / "first.cntk", conf / "main.cntk"])
    assert _network_members(cfg)["fromLib"] == "2"
