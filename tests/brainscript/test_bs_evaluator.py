"""BrainScript evaluator: laziness, scoping, functions, arrays, operators, node hooks, errors."""

from __future__ import annotations

import math

import pytest
from bs_fakelib import FakeLibrary, Layer, Node

from stadyn._errors import ConfigError
from stadyn.brainscript import (
    BSArray,
    BSFunction,
    Evaluator,
    Library,
    Record,
    build_network,
    cntk_filter_shape,
    cntk_shape,
    evaluate,
    parse_expression,
    parse_members,
)


def ev(text: str, library: Library | None = None):
    return evaluate(parse_expression(text), library)


def member(text: str, name: str, library: Library | None = None):
    return Evaluator(library).evaluate(parse_members(text))[name]


def fails(text: str, library: Library | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        value = evaluate(parse_members(text, "t.bs"), library)
        for name in value:  # force every member
            value[name]
    return info.value


# ---------------------------------------------------------------------------------------------
# values and operators on immediate values
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, value", [
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("7 / 2", 3.5), ("1 / 256", 0.00390625), ("7 % 3", 1),
    ("-7 % 3", -1), ("2 ** 10", 1024), ("-3", -3), ("+3", 3), ("1 - 2 - 3", -4), ("256 / 2", 128),
    ("1 < 2", True), ("2 <= 1", False), ("3 == 3", True), ("3 != 3", False), ("2 > 1", True),
    ("1 >= 2", False), ("'a' + 'b'", "ab"), ("'a' < 'b'", True), ("'x' == \"x\"", True),
    ("true && false", False), ("true || false", True), ("!true", False), ("true == false", False),
    ("1 / 0", math.inf), ("-1 / 0", -math.inf),
])
def test_immediate_operators(text, value):
    assert ev(text) == value


def test_numbers_are_doubles_kept_as_int_when_integral():
    assert isinstance(ev("6 / 2"), int) and isinstance(ev("1.0"), int)
    assert isinstance(ev("1 / 3"), float)
    assert math.isnan(ev("0 / 0"))


def test_boolean_operators_short_circuit():
    assert ev("false && undefinedName") is False
    assert ev("true || undefinedName") is True


def test_if_evaluates_only_the_chosen_branch():
    assert ev("if 1 < 2 then 'yes' else undefinedName") == "yes"
    assert ev("if false then 1 else if true then 2 else 3") == 2


# ---------------------------------------------------------------------------------------------
# records and scoping
# ---------------------------------------------------------------------------------------------

def test_record_members_are_lazy_and_see_each_other():
    rec = ev("{ b = a + 1 ; a = 1 ; broken = undefinedName }")
    assert isinstance(rec, Record)
    assert rec["b"] == 2  # defined before `a`: members are let-rec
    assert list(rec) == ["b", "a", "broken"]
    with pytest.raises(ConfigError, match="unknown identifier 'undefinedName'"):
        rec["broken"]


def test_inner_records_see_enclosing_scopes_and_shadow_them():
    text = "{ x = 1 ; inner = { y = x + 1 ; x = 10 ; z = x } ; outer = inner.y }"
    rec = ev(text)
    assert rec["inner"]["y"] == 11 and rec["inner"]["z"] == 10 and rec["outer"] == 11


def test_member_lookup_continues_into_the_records_scope():
    # as CNTK: `r.x` searches r, then the scopes around r's definition
    assert ev("{ k = 5 ; r = { a = 1 } ; v = r.k }.v") == 5


def test_member_access_chains():
    assert ev("{ a = { b = { c = 42 } } }.a.b.c") == 42


def test_circular_definition_is_reported():
    e = fails("a = b\nb = a")
    assert "circular definition" in e.reason and e.path == "t.bs"


# ---------------------------------------------------------------------------------------------
# functions
# ---------------------------------------------------------------------------------------------

def test_function_definitions_and_named_optional_arguments():
    text = """
        f(x, y = 2) = x * y
        g{n, scale = 10, bias = 0} = n * scale + bias
        r1 = f(3)
        r2 = f(3, y = 4)
        r3 = g{2, bias = 1}
        r4 = g{2}
    """
    rec = Evaluator().evaluate(parse_members(text))
    assert (rec["r1"], rec["r2"], rec["r3"], rec["r4"]) == (6, 12, 21, 20)


def test_default_values_are_evaluated_in_the_defining_scope():
    text = "k = 1\nf(x, y = k) = x + y\nr = { k = 100 ; v = f(1) }.v"
    assert member(text, "r") == 2


def test_arguments_are_evaluated_in_the_callers_scope_and_lazily():
    text = "x = 5\nf(x, unused = 0) = x\nr = f(x + 1)\nlazy = f(1, unused = undefinedName)"
    rec = Evaluator().evaluate(parse_members(text))
    assert rec["r"] == 6 and rec["lazy"] == 1


def test_lambdas_and_closures():
    assert ev("(x => y => x + y)(1)(2)") == 3
    assert ev("{ add(n) = (x => x + n) ; add5 = add(5) ; r = add5(1) }.r") == 6
    text = "Normalize{f} = x => f .* x\nn = Normalize{2}"
    fn = member(text, "n")
    assert isinstance(fn, BSFunction) and fn.positional == ["x"]


def test_recursion():
    text = "fact(n) = if n <= 1 then 1 else n * fact(n - 1)\nr = fact(10)"
    assert member(text, "r") == 3628800


def test_function_is_callable_from_python():
    f = ev("{ f(x, y = 1) = x * 10 + y }.f")
    assert f(2) == 21 and f(2, y=3) == 23


def test_composition_operator():
    assert ev("((x => x + 1) >> (x => x * 2))(3)") == 8
    assert ev("((x => x + 1) >> (x => x * 2) >> (x => x - 1))(3)") == 7


def test_prelude_sequential_and_layerstack():
    assert ev("Sequential((x => x + 1) : (x => x * 2))(3)") == 8
    assert ev("Sequential(x => x + 1)(3)") == 4
    assert ev("LayerStack{3, i => (x => x * 10 + i)}(0)") == 12
    assert ev("Length(1:2:3) + Length('four')") == 7
    assert ev("Identity(5)") == 5


def test_library_overrides_prelude_and_script_overrides_library():
    lib = Library({"Length": lambda x: -1, "Twice": lambda x: 2 * x})
    assert ev("Length(1:2)", lib) == -1
    assert ev("{ Twice(x) = 0 ; r = Twice(4) }.r", lib) == 0
    assert ev("Twice(4)", lib) == 8


# ---------------------------------------------------------------------------------------------
# arrays
# ---------------------------------------------------------------------------------------------

def test_arrays_and_indexing():
    assert ev("(10 : 20 : 30)[2]") == 30
    assert ev("[| 1; 2 |][0]") == 1
    arr = ev("array[1..3](i => i * i)")
    assert isinstance(arr, BSArray) and arr.first == 1 and list(arr) == [1, 4, 9]
    assert ev("array[1..3](i => i * i)[3]") == 9
    assert ev("((1:2:3) << 1)[0]") == 2


def test_array_members_may_refer_to_earlier_items():
    assert member("h[t:0..10] = if t == 0 then 1 else 2 * h[t - 1]", "h")[10] == 1024


def test_array_items_are_lazy():
    assert ev("(1 : undefinedName : 3)[2]") == 3


def test_arrays_reach_library_functions_as_tuples():
    seen = []
    lib = Library({"Show": lambda *a, **k: seen.append((a, k)) or 0})
    ev("Show(32:32:3, (3:3), stride = (2:2), names = 'a' : 'b')", lib)
    assert seen == [(((32, 32, 3), (3, 3)), {"stride": (2, 2), "names": ("a", "b")})]


# ---------------------------------------------------------------------------------------------
# with
# ---------------------------------------------------------------------------------------------

def test_with_edits_a_record():
    rec = ev("{ a = 1 ; b = a + 1 ; c = 3 } with { a = 10 ; d = 4 }")
    assert dict(rec) == {"a": 10, "b": 11, "c": 3, "d": 4}


def test_with_keeps_the_right_records_own_scope():
    text = "base = { a = 1 ; b = a * 2 }\nk = 7\nedited = base with { a = k }"
    rec = member(text, "edited")
    assert rec["a"] == 7 and rec["b"] == 14


# ---------------------------------------------------------------------------------------------
# nodes and library hooks
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, op, args", [
    ("a * b", "Times", ("a", "b")),  # node * node: matrix product
    ("2 * a", "ElementTimes", (2, "a")),  # scalar * node: element-wise
    ("a * 2", "ElementTimes", ("a", 2)),
    ("a .* b", "ElementTimes", ("a", "b")),
    ("a / 4", "ElementTimes", ("a", 0.25)),  # x/number = x .* (1/number)
    ("1 / a", "Reciprocal", ("a",)),
    ("a + b", "Plus", ("a", "b")),
    ("a - 1", "Minus", ("a", 1)),
    ("-a", "Negate", ("a",)),
    ("+a", "Input", (10,)),  # unary plus is a no-op
    ("!a", "Minus", (1, "a")),  # as CNTK: 1 - x
    ("a < b", "Less", ("a", "b")),
    ("a == 0", "Equal", ("a", 0)),
    ("if a then b else 0", "If", ("a", "b", 0)),
    ("(x => x .* 2 + 1)(a)", "Plus", ("<ElementTimes>", 1)),
])
def test_operators_on_nodes_dispatch_to_hooks(text, op, args):
    lib = FakeLibrary()
    rec = Evaluator(lib).evaluate(parse_members("a = Input{10}\nb = Input{10}\nr = " + text))
    r = rec["r"]
    names = {id(rec["a"]): "a", id(rec["b"]): "b"}
    assert isinstance(r, Node) and r.op == op
    shown = tuple(names.get(id(x), f"<{x.op}>" if isinstance(x, Node) else x) for x in r.inputs)
    assert shown == args


def test_missing_hook_is_a_located_error():
    class Nodes(Library):
        def is_node(self, v):
            return isinstance(v, Node)
    lib = Nodes({"Input": lambda dims: Node("Input")})
    e = fails("a = Input(1)\nb = a * a", lib)
    assert (e.line, e.column) == (2, 7)
    assert "operator '*'" in e.reason and "times" in e.reason


def test_invalid_operands_are_named():
    e = fails("a = 1 + 'x'")
    assert e.reason == "operator '+' cannot be applied to a number and a string"
    e = fails("a = Input{1} / Input{2}", FakeLibrary())
    assert "division of a node by a node" in e.reason
    e = fails("a = 3 / Input{2}", FakeLibrary())
    assert "1/x" in e.reason
    e = fails("a = Input{1} ** 2", FakeLibrary())
    assert "'**' is not supported on nodes" in e.reason


def test_library_layers_called_and_applied():
    lib = FakeLibrary()
    text = "x = Input{784}\nh = DenseLayer{200, activation = ReLU}(x)\nz = LinearLayer{10}(h)"
    rec = Evaluator(lib).evaluate(parse_members(text))
    assert rec["z"].chain() == ["Input", "DenseLayer", "ReLU", "LinearLayer"]
    assert lib.calls_to("DenseLayer") == [("DenseLayer", (200,),
                                           {"activation": lib.functions["ReLU"]})]
    assert isinstance(rec["z"].inputs[0].inputs[0].attrs["layer"], Layer)


def test_network_record_collects_named_and_special_nodes():
    text = """{
        f = Input{3}
        m(x) = { h = DenseLayer{4}(x) ; o = LinearLayer{2}(h) }
        out = m(f)
        arr = f : out.o
        featureNodes = (f)
        outputNodes = (out.o : out.h)
        criterionNodes = (out.o)
    }"""
    net = build_network(text, FakeLibrary())
    assert list(net.nodes) == ["f", "out.h", "out.o", "arr[0]", "arr[1]"]
    assert net.name_of(net.output_nodes[0]) == "out.o"
    assert net.name_of(net.output_nodes[1]) == "out.h"
    assert net.feature_nodes == [net.nodes["f"]] and net.label_nodes == []
    assert net.criterion_nodes == [net.nodes["out.o"]]


# ---------------------------------------------------------------------------------------------
# errors name what went wrong and where
# ---------------------------------------------------------------------------------------------

def test_unknown_identifier_and_function_are_named_with_location():
    e = fails("x = 1\ny = x + featScal", FakeLibrary())
    assert (e.path, e.line, e.column) == ("t.bs", 2, 9)
    assert "unknown identifier 'featScal'" in e.reason
    e = fails("z = ConvolutionLayer{64, (3:3)}", FakeLibrary())
    assert (e.line, e.column) == (1, 5)
    assert "unknown function 'ConvolutionLayer'" in e.reason
    assert "did you mean 'ConvolutionalLayer'" in e.reason


def test_wrong_arguments_to_library_functions_are_located():
    e = fails("z = ConvolutionalLayer{64, (3:3), padding = true}", FakeLibrary())
    assert (e.line, e.column) == (1, 23)
    assert "ConvolutionalLayer" in e.reason and "padding" in e.reason
    e = fails("z = ReLU(1, 2, 3)", FakeLibrary())  # CNTK's ReLU(_, tag='')
    assert "ReLU" in e.reason and "too many" in e.reason


def test_wrong_arguments_to_script_functions():
    e = fails("f(x) = x\ny = f(1, 2)")
    assert "function 'f' expects 1 positional argument(s) (x), got 2" in e.reason
    e = fails("f(x) = x\ny = f(1, z = 2)")
    assert "has no optional parameter 'z'" in e.reason
    assert (e.line, e.column) == (2, 6)


def test_type_errors():
    assert "must be a boolean" in fails("a = if 1 then 2 else 3").reason
    assert "cannot be called" in fails("a = 3\nb = a(1)").reason
    assert "needs a record" in fails("a = 3\nb = a.x").reason
    assert "has no member 'y'" in fails("a = { x = 1 }\nb = a.y").reason
    assert "out of bounds 0..1" in fails("a = (1:2)[2]").reason
    assert "must be an integer" in fails("a = (1:2)[0.5]").reason
    assert "needs an array" in fails("a = 3\nb = a[0]").reason
    assert "unknown class 'Foo'" in fails("a = new Foo {}").reason


def test_runaway_recursion_is_a_config_error():
    e = fails("f(n) = f(n + 1)\nr = f(0)")
    assert "nested too deeply" in e.reason and e.path == "t.bs"


def test_library_errors_get_the_call_location():
    def bad(x):
        raise ConfigError("no good")
    e = fails("\n  y = Bad(1)", Library({"Bad": bad}))
    assert (e.line, e.column) == (2, 10) and e.reason == "Bad: no good"


# ---------------------------------------------------------------------------------------------
# shapes
# ---------------------------------------------------------------------------------------------

def test_cntk_shapes_map_to_nchw_order():
    assert cntk_shape((32, 32, 3)) == (3, 32, 32)  # W:H:C -> C,H,W
    assert cntk_shape((28, 28, 1)) == (1, 28, 28)
    assert cntk_shape(784) == (784,)
    assert cntk_shape((10,)) == (10,)
    assert cntk_shape((640, 480, 3)) == (3, 480, 640)
    assert cntk_filter_shape((5, 3)) == (3, 5) and cntk_filter_shape(2) == 2
    with pytest.raises(ValueError):
        cntk_shape((3, -1))
    with pytest.raises(ValueError):
        cntk_shape((3, 2.5))


def test_shape_values_from_brainscript():
    lib = FakeLibrary()
    rec = Evaluator(lib).evaluate(parse_members("imageShape = 32:32:3\nf = Input{imageShape}"))
    assert cntk_shape(rec["f"].inputs[0]) == (3, 32, 32)
