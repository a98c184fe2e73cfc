"""Property tests: random token sequences give a result or a ConfigError, never anything else."""

from __future__ import annotations

from bs_fakelib import FakeLibrary
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stadyn._errors import ConfigError
from stadyn.brainscript import (
    evaluate_network,
    parse_config,
    parse_expression,
    parse_members,
    run_config,
)

_SETTINGS = settings(max_examples=2000, deadline=None, derandomize=True, database=None,
                     suppress_health_check=[HealthCheck.too_slow])

_BS_TOKENS = [
    # names, including library and prelude names
    "a", "b", "x", "f", "z", "Sequential", "LayerStack", "DenseLayer", "ConvolutionalLayer", "ReLU",
    "Input", "Constant", "Dropout", "Length", "featureNodes", "outputNodes",
    # literals
    "0", "1", "2.5", ".5", "1e3", "3.", "1..3", "'s'", '"t"', "true", "false",
    # keywords
    "if", "then", "else", "new", "with", "array", "include", "ComputationNetwork",
    # punctuation and operators
    "=", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", ".*", "**", "%", "!", "&&", "||",
    ">>", "<<", ":", "=>", ".", "..", ",", ";", "(", ")", "{", "}", "[", "]", "[|", "|]",
    # comments, line ends, junk
    "# c\n", "// c\n", "/* c */", "/*", "\n", "'open", '"open', "@", "$", "$x$", "?", "\\", "^",
    "~",
    "include 'nowhere.bs'",
]

_CONFIG_TOKENS = [
    "a", "B", "command", "action", "train", "SGD", "reader", "maxEpochs", "learningRatesPerMB",
    "minibatchSize", "BrainScriptNetworkBuilder", "deserializers", "type", "input", "file", "dim",
    "0", "1", "0.5*2", "x*0", "1*y", "$a$", "$B$", "$nope$", "$", "Train.SGD.maxEpochs",
    '"q"', '"open', "=", ";", ",", ":", "\n", "{", "}", "[", "]", "(", ")", "# c\n", "include",
    '"nowhere.cntk"', "a#b", "\t", "\x0b",
]


def _token_text(vocabulary: list[str]):
    """Texts of up to 40 tokens, each followed by a space or glued to the next one.

    One byte string is drawn per example (far cheaper for hypothesis than a list of draws):
    the low 7 bits of each byte pick a token, the high bit a following space.
    """
    def text(data: bytes) -> str:
        return "".join(vocabulary[(b & 127) % len(vocabulary)] + (" " if b & 128 else "")
                       for b in data)
    return st.binary(max_size=40).map(text)


@_SETTINGS
@given(_token_text(_BS_TOKENS))
def test_brainscript_parser_raises_only_config_errors(text):
    for parse in (parse_expression, parse_members):
        try:
            tree = parse(text, "fuzz.bs")
        except ConfigError as err:
            assert err.path == "fuzz.bs" and err.line is not None and err.line >= 1
            continue
        try:  # whatever parses also evaluates to a network or a ConfigError
            evaluate_network(tree, FakeLibrary())
        except ConfigError:
            pass


@_SETTINGS
@given(_token_text(_CONFIG_TOKENS))
def test_config_reader_raises_only_config_errors(text):
    try:
        cfg = parse_config(text, "fuzz.cntk", overrides=["a=1"])
    except ConfigError as err:
        assert err.path == "fuzz.cntk" and err.line is not None and err.line >= 1
        return
    try:  # reading every value (with $var$ resolution) and the blocks is safe too
        _touch(cfg)
        run_config(cfg)
    except ConfigError:
        pass


def _touch(record) -> None:
    for key in record:
        value = record[key]
        if hasattr(value, "keys"):
            _touch(value)
        elif hasattr(value, "parse"):
            value.parse()


def test_a_well_formed_example_still_works_after_fuzzing():
    # sanity check that the fuzz strategies are not vacuous: a valid text passes end to end
    net = evaluate_network(parse_expression("{ x = Input{3} ; outputNodes = (x) }"), FakeLibrary())
    assert len(net.output_nodes) == 1


# ---------------------------------------------------------------------------------------------
# precedence round trip: print a random operator tree with the fewest parentheses BrainScript's
# precedence allows, parse it back, get the same tree
# ---------------------------------------------------------------------------------------------

_LEVEL = {"*": 6, "/": 6, ".*": 6, "**": 6, "%": 6, "+": 5, "-": 5, "with": 5, "==": 4, "!=": 4,
          "<": 4, "<=": 4, ">": 4, ">=": 4, "&&": 3, "||": 2, ">>": 1, "<<": 1}
_ATOM = 9


def _trees():
    # a number is wrapped before `.m` (`1.m` lexes as `1.` then `m`, in CNTK too)
    leaves = st.sampled_from(["a", "b", "c", "1", "2"]).map(
        lambda s: (s, s, _ATOM - 1 if s.isdigit() else _ATOM))

    def extend(children):
        binary = st.tuples(st.sampled_from(sorted(_LEVEL)), children, children).map(_binary)
        unary = children.map(lambda c: _unary(c))
        postfix = children.map(lambda c: (f"(. {c[0]} m)", f"{_wrap(c, _ATOM)}.m", _ATOM))
        return st.one_of(binary, unary, postfix)
    return st.recursive(leaves, extend, max_leaves=12)


def _wrap(node, need: int, right: bool = False) -> str:
    _, text, level = node
    return f"({text})" if level < need or (right and level == need) else text


def _binary(parts):
    op, left, right = parts
    level = _LEVEL[op]
    text = f"{_wrap(left, level)} {op} {_wrap(right, level, right=True)}"
    return (f"({op} {left[0]} {right[0]})", text, level)


def _unary(child):
    return (f"(- {child[0]})", f"-{_wrap(child, 8)}", 8)


@settings(max_examples=500, deadline=None, derandomize=True, database=None)
@given(_trees())
def test_precedence_round_trip(tree):
    from test_bs_parser import sexpr

    expected, text, _ = tree
    assert sexpr(parse_expression(text)) == expected, text
