"""Every name of CNTK's BrainScript core library (CNTK.core.bs: top level and ``BS.*``) is one
StadynLibrary defines, but for the exceptions listed with their reasons
(``tests/fixtures/brainscript/list_core_bs_names.py`` wrote ``core_bs_names.txt`` from CNTK's
source); and the element-wise nodes and number helpers added for them, against NumPy and
hand-computed values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import stadyn as sd
from stadyn._errors import ConfigError
from stadyn.brainscript import build_network, parse_config
from stadyn.brainscript._blocks import command_config
from stadyn.brainscript._evaluator import Evaluator
from stadyn.brainscript._stadyn_library import StadynLibrary
from stadyn.train import feed

NAMES = (Path(__file__).parent.parent / "fixtures" / "brainscript" /
         "core_bs_names.txt").read_text().split()

_INTERNAL = "CNTK.core.bs's own helper (a name beginning with _ is for the library's use only)"

# the names StadynLibrary leaves out on purpose, each with its reason
EXCEPTIONS = {
    "_PoolingLayer": _INTERNAL, "_AreElementsTheSame": _INTERNAL, "_AsNodes": _INTERNAL,
    "_PFValue": _INTERNAL, "_ForceResizeArray": _INTERNAL, "_AsArray": _INTERNAL,
    "_ConcatArrays": _INTERNAL, "BS.Sequences._Fold": _INTERNAL, "BS.Loop._IsWithin": _INTERNAL,
    "CNTK2": "CNTK.core.bs's namespace of the CNTK 2 names; the library has them at the top "
             "level (Abs, Floor, ...) where configs call them",
    "Shift": "used by Tests/EndToEndTests/Speech/LSTM/cntk.kaldi.cntk only, which reads Kaldi "
             "features Stadyn has no reader for",
    "BS.Seq2Seq.GreedySequenceDecoderFrom": "not implemented yet (G2P.cntk's decoding "
                                            "command, which Stadyn does not run)",
    "BS.Seq2Seq.BeamSearchSequenceDecoderFrom": "not implemented yet (G2P.cntk's decoding "
                                                "command, which Stadyn does not run)",
    "BS.Seq2Seq.GetTopNTensor": "helper of the Seq2Seq decoders (see there)",
    # (initFromLiteral is read for init = "fromLiteral": test_bs_param_text_init.py)
    # CNTK.core.bs's own definitions fail in cntk.exe: _Fold takes 3 arguments and FoldL/FoldR
    # give it 4; Iteration calls PastValue (dims, input, ...) with the input alone; Count gives
    # Sequences.Last (x) two arguments
    **{name: "CNTK.core.bs's definition calls a function with the wrong number of arguments: "
             "cntk.exe fails on every use"
       for name in ("BS.Sequences.FoldL", "BS.Sequences.FoldR", "BS.Loop.Iteration",
                    "BS.Loop.Count")},
}


def _defines(evaluator: Evaluator, qualified: str) -> bool:
    first, *rest = qualified.split(".")
    value = evaluator._global(first)
    for member in rest:
        members = getattr(value, "_members", None)
        if value is None or members is None or member not in members:
            return False
        value = members[member].force()
    return value is not None


def test_every_core_bs_name_is_in_the_library():
    assert len(NAMES) > 200 and "SquareError" in NAMES and "BS.Boolean.And" in NAMES
    evaluator = Evaluator(StadynLibrary())
    missing = [n for n in NAMES if n not in EXCEPTIONS and not _defines(evaluator, n)]
    assert not missing, f"CNTK.core.bs's names StadynLibrary lacks: {missing}"
    # an exception that the library now defines, or that CNTK.core.bs does not, is stale
    stale = [n for n in EXCEPTIONS if n not in NAMES or _defines(evaluator, n)]
    assert not stale, f"listed as exceptions but defined (or not CNTK's): {stale}"


def _run(text: str, names: str, inputs: dict) -> dict:
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("{ " + text + " }", StadynLibrary())
        for name, value in inputs.items():
            feed(net.nodes[name], np.asarray(value, np.float32))
        out = {}
        for name in names.split():
            net.nodes[name].forward()
            out[name] = net.nodes[name].d.copy()
        return out


X = np.array([[-2.5, -0.5, 0.25, 0.5, 1.5, 2.5], [0.9, -0.9, 0.0, -1.5, 3.0, -3.0]],
             np.float32)
Y = np.array([[1.0, 0.0, -2.0, 4.0, 0.5, -1.0], [2.0, 3.0, 0.0, 1.0, -4.0, 0.25]], np.float32)


def test_rounding_and_trigonometric_nodes_against_numpy():
    u = np.clip(X / 4, -0.9, 0.9)      # in the domains of Asin, Acos, Atanh
    out = _run("""x = Input {6} ; u = Input {6}
        fl = Floor (x) ; ce = Ceil (x) ; ro = Round (x)
        si = Sin (x) ; co = Cosine (x) ; sh = Sinh (x) ; ch = Cosh (x)
        as = Asin (u) ; ac = Acos (u) ; ash = Asinh (x) ; ath = Atanh (u)""",
               "fl ce ro si co sh ch as ac ash ath", {"x": X, "u": u})
    # CNTK's Round is floor (x + 0.5): halves go up (-2.5 -> -2, -0.5 -> 0, 2.5 -> 3)
    np.testing.assert_array_equal(out["ro"][0], [-2, 0, 0, 1, 2, 3])
    expect = {"fl": np.floor(X), "ce": np.ceil(X), "ro": np.floor(X + 0.5), "si": np.sin(X),
              "co": np.cos(X), "sh": np.sinh(X), "ch": np.cosh(X), "as": np.arcsin(u),
              "ac": np.arccos(u), "ash": np.arcsinh(X), "ath": np.arctanh(u)}
    for name, value in expect.items():
        np.testing.assert_allclose(out[name], value, rtol=1e-6, atol=1e-6, err_msg=name)


def test_element_divide_clip_and_square_error_against_numpy():
    out = _run("""x = Input {6} ; y = Input {6}
        d = ElementDivide (x, y) ; dn = ElementDivide (x, 2) ; nd = ElementDivide (3, y)
        c = Clip (-1, 0.75, x) ; cn = Clip (y - 1, y, x)
        se = SquareError (x, y)""", "d dn nd c cn se", {"x": X, "y": Y})
    # CNTK's ElementDivide is 0 where the divisor is 0
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_allclose(out["d"], np.where(Y == 0, 0, X / Y), rtol=1e-6)
        np.testing.assert_allclose(out["nd"], np.where(Y == 0, 0, 3 / Y), rtol=1e-6)
    np.testing.assert_allclose(out["dn"], X / 2, rtol=1e-6)
    np.testing.assert_allclose(out["c"], np.clip(X, -1, 0.75))
    np.testing.assert_allclose(out["cn"], np.where(X < Y - 1, Y - 1, np.where(X > Y, Y, X)))
    np.testing.assert_allclose(out["se"].reshape(-1), ((X - Y) ** 2).sum(axis=1), rtol=1e-6)


def test_square_error_of_ndl_and_brainscript_agree(tmp_path):
    # one declaration: NDL's SquareError (alias SE) is the library's
    (tmp_path / "net.ndl").write_text("run = net\nnet = [\n x = InputValue(6)\n"
                                      " y = InputValue(6)\n se = SE(x, y)\n]\n")
    root = parse_config("command = T\nT = [\n action = train\n NDLNetworkBuilder = [\n"
                        f"  networkDescription = {tmp_path}/net.ndl\n ]\n]\n")
    with sd.parameter_registry(sd.ParameterRegistry()):
        lib = StadynLibrary()
        net = build_network(command_config(root, "T").network, lib)
        feed(net.nodes["x"], X)
        feed(net.nodes["y"], Y)
        net.nodes["se"].forward()
        assert lib.operation_of(net.nodes["se"]) == "SquareError"
        np.testing.assert_allclose(net.nodes["se"].d.reshape(-1), ((X - Y) ** 2).sum(axis=1),
                                   rtol=1e-6)


def test_number_helpers():
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("""{ x = Input {2}
            n = Fac (5) + 10 * Max (2, 7) + 1000 * Sign (-3) + 10000 * Min (4, 3)
            z = Sign (0) + Sign (0.5)
            W = LearnableParameter (3, 2) ; y = W * x }""", StadynLibrary())
        assert net.nodes["y"].shape == (1, 3)
    with sd.parameter_registry(sd.ParameterRegistry()):
        ev = Evaluator(StadynLibrary())
        from stadyn.brainscript._parser import parse_members
        rec = ev.evaluate(parse_members("n = Fac (5) + 10 * Max (2, 7) + 1000 * Sign (-3) + "
                                        "10000 * Min (4, 3) ; z = Sign (0) + Sign (0.5)",
                                        "<test>"))
        assert rec._members["n"].force() == 120 + 70 - 1000 + 30000
        assert rec._members["z"].force() == 1


def test_simple_criteria_against_numpy():
    p = np.array([[0.2, 0.5, 0.3], [0.9, 0.05, 0.05]], np.float32)
    r = np.array([[0.0, 1.0, 0.0], [0.5, 0.25, 0.25]], np.float32)
    y = np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]], np.float32)
    out = _run("""p = Input {3} ; r = Input {3} ; y = Input {3}
        ce = CrossEntropy (r, p) ; lg = Logistic (y, p) ; cd = CosDistance (r, p)
        sc = SumColumnElements (p)""", "ce lg cd sc", {"p": p, "r": r, "y": y})
    np.testing.assert_allclose(out["ce"].reshape(-1), -(r * np.log(p)).sum(axis=1), rtol=1e-6)
    want = -np.log(y * p + (1 - y) * (1 - p)).sum(axis=1)
    np.testing.assert_allclose(out["lg"].reshape(-1), want, rtol=1e-6)
    cos = (r * p).sum(axis=1) / np.linalg.norm(r, axis=1) / np.linalg.norm(p, axis=1)
    np.testing.assert_allclose(out["cd"].reshape(-1), cos, rtol=1e-6)
    np.testing.assert_allclose(out["sc"].reshape(-1), p.sum(axis=1), rtol=1e-6)


def test_value_functions():
    # BrainScriptEvaluator.cpp: Mod and IntDiv on the numbers as ints (C++'s % and /: towards
    # zero), Substr's negative start counts from the end, a count past the end stops there
    with sd.parameter_registry(sd.ParameterRegistry()):
        from stadyn.brainscript._parser import parse_members
        rec = Evaluator(StadynLibrary()).evaluate(parse_members("""
            m = Mod (-7, 3) : Mod (7, -3) : IntDiv (-7, 2) : IntDiv (9, 4)
            s = Substr ("network", -4, 2) : Substr ("network", 3, 100) : Substr ("ab", -5, 1)
            c = Chr (65) ; r = Replace ("a.b.c", ".", "::")
            t = IsArray ((1 : 2)) : IsArray (1) : IsDouble (1.5) : IsDouble (true) : IsBool (false)
            """, "<test>"))
        value = {k: rec._members[k].force() for k in "mscrt"}
    assert list(value["m"]) == [-1, 1, -3, 2]
    assert list(value["s"]) == ["wo", "work", ""]
    assert value["c"] == "A" and value["r"] == "a::b::c"
    assert list(value["t"]) == [True, False, True, False, True]


@pytest.mark.parametrize("call", ["Mod (7.9, -3)", "IntDiv (9, 4.5)", 'Substr ("network", 1.5, 2)'])
def test_value_functions_take_whole_numbers_only(call):
    # cntk.exe converts each argument with (int) of the config value (ConfigValuePtr::operator
    # int -> AsInt, ScriptableObjects.h:364-381): "expected expression of type size_t instead of
    # floating-point value 7.900000" where it is not a whole number
    from stadyn.brainscript._parser import parse_members
    with sd.parameter_registry(sd.ParameterRegistry()):
        rec = Evaluator(StadynLibrary()).evaluate(parse_members(f"v = {call}", "<test>"))
        with pytest.raises(ConfigError, match="expected an integer instead of the floating"):
            rec._members["v"].force()


def test_toggle_and_zeroes_like():
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("""{ clk = Input {1} ; t = BS.Boolean.Toggle (clk)
            z = BS.Constants.ZeroesLike1 (clk) ; zs = BS.Constants.ZeroSequenceLike (clk) }""",
                            StadynLibrary())
        net.nodes["clk"].d = [np.array([[1.0], [0.0], [1.0], [1.0], [0.0]]), np.array([[0.0]])]
        steps = {}
        for name in ("t", "z", "zs"):
            net.nodes[name].forward()
            steps[name] = [np.asarray(s).reshape(-1) for s in
                           sd.sequence.unpack_value(net.nodes[name])]
    # the state flips where clk is 1: 1, 1, 0, 1, 1; the second sequence starts at False
    np.testing.assert_array_equal(steps["t"][0], [1, 1, 0, 1, 1])
    np.testing.assert_array_equal(steps["t"][1], [0])
    for name in ("z", "zs"):
        np.testing.assert_array_equal(np.concatenate(steps[name]), np.zeros(6))


def test_row_repeat_multiplies_the_last_axis():
    # CNTK's RowRepeatNode: the trailing (column-major) dimension times numRepeats, the sample
    # (all its elements, one column) repeated; [2 x 3] column-major is NumPy's (3, 2)
    m = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    out = _run("x = Input {6} ; m = Input {2:3} ; r = RowRepeat (x, 2) ; rm = RowRepeat (m, 3)",
               "r rm", {"x": X, "m": m})
    np.testing.assert_array_equal(out["r"], np.concatenate([X, X], axis=1))
    assert out["rm"].shape == (2, 9, 2)
    np.testing.assert_array_equal(out["rm"].reshape(2, -1), np.tile(m.reshape(2, -1), 3))


def test_where_gives_the_positions_of_the_nonzero_steps():
    # CNTK's WhereNode: each step's position, repeated as often as its count (2 -> twice), one
    # [1] value a step
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("{ c = Input {1} ; w = Where (c) }", StadynLibrary())
        net.nodes["c"].d = [np.array([[1.0], [0.0], [1.0], [1.0]]), np.array([[0.0], [2.0]])]
        net.nodes["w"].forward()
        got = [np.asarray(s) for s in sd.sequence.unpack_value(net.nodes["w"])]
    assert [g.shape for g in got] == [(3, 1), (2, 1)]
    assert [g.reshape(-1).tolist() for g in got] == [[0, 2, 3], [1, 1]]


def test_parallel_and_merge_binary():
    # CNTK.core.bs: Parallel applies each function to the input and combines the array of
    # results; MergeBinary applies two functions to two inputs and combines the two
    x = np.array([[0.5, -1.0, 2.0]], np.float32)
    y = np.array([[1.0, 0.0, -2.0]], np.float32)
    out = _run("""x = Input {3} ; y = Input {3}
        p = Parallel ((Sigmoid : Tanh), Splice) (x) ; p1 = Parallel (Tanh, Splice) (x)
        m = MergeBinary ((Sigmoid : Tanh), Plus) (x, y)""", "p p1 m", {"x": x, "y": y})
    sig = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(out["p"], np.concatenate([sig, np.tanh(x)], axis=1), rtol=1e-6)
    np.testing.assert_allclose(out["p1"], np.tanh(x), rtol=1e-6)
    np.testing.assert_allclose(out["m"], sig + np.tanh(y), rtol=1e-6)


def test_clip_takes_a_number_beside_a_node():
    # CNTK.core.bs: Clip's inputs are _AsNodes (minValue : maxValue : x), a number a Constant
    x = np.array([[-1.0, 0.5, 2.0, 3.0]], np.float32)
    y = np.array([[1.0, 1.0, 1.5, 4.0]], np.float32)
    out = _run("x = Input {4} ; y = Input {4} ; c = Clip (0, y, x) ; d = Clip (y, 2.5, x)",
               "c d", {"x": x, "y": y})
    np.testing.assert_array_equal(out["c"], np.where(x < 0, 0, np.where(x > y, y, x)))
    np.testing.assert_array_equal(out["d"], np.where(x < y, y, np.where(x > 2.5, 2.5, x)))


def test_cross_entropy_and_logistic_take_cntks_log_of_zero():
    # CrossEntropyNode / LogisticNode take CPUMatrix's log, LOG_OF_EPS_IN_LOG (-85.1) below
    # EPS_IN_LOG (1e-37) (CPUMatrixImpl.h, CommonMatrix.h): a one-hot output gives 0, not nan
    p = np.array([[0.0, 1.0, 0.0]], np.float32)
    y = np.array([[1.0, 0.0, 0.0]], np.float32)
    out = _run("p = Input {3} ; y = Input {3} ; ce = CrossEntropy (p, p) ; lg = Logistic (y, p)",
               "ce lg", {"p": p, "y": y})
    np.testing.assert_allclose(out["ce"].reshape(-1), [0.0], atol=1e-6)
    # y = 1 where p = 0: log of 0 -> -85.1; the other two classes: log (1 - 0), log (1 - 1) = -85.1
    np.testing.assert_allclose(out["lg"].reshape(-1), [85.1 + 0.0 + 85.1], rtol=1e-6)


def _cntk27(case: str) -> dict:
    path = Path(__file__).parent.parent / "fixtures" / "brainscript" / "core_names_cntk27.json"
    return json.loads(path.read_text())[case]


def _parameters_run(text: str, root: str, values: dict) -> tuple[np.ndarray, dict]:
    """``root``'s value and the gradients of ``values``' parameters (set to those values) of
    ``root`` after one backward from ones."""
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("{ " + text + " }", StadynLibrary())
        for name, value in values.items():
            net.nodes[name].d = np.asarray(value, np.float32)
        y = net.nodes[root]
        y.forward()
        y.backward()
        return y.d.copy(), {name: net.nodes[name].g.copy() for name in values}


def test_log_plus_against_cntk27():
    # LogPlusNode is C.log_add_exp's node (refgen_bs_core_names.py): CNTK 2.7's LogAdd, exact
    # for a tiny exp (-85.1 beside 0 gives 1.1e-37, not 0), and its gradients
    ref = _cntk27("log_plus")
    value, grads = _parameters_run("a = ParameterTensor {(4:2)} ; b = ParameterTensor {(4:2)}\n"
                                   "y = LogPlus (a, b)", "y", {"a": ref["a"], "b": ref["b"]})
    np.testing.assert_allclose(value, ref["value"], rtol=1e-6)
    np.testing.assert_allclose(grads["a"], ref["grad_a"], rtol=1e-5, atol=1e-30)
    np.testing.assert_allclose(grads["b"], ref["grad_b"], rtol=1e-5, atol=1e-30)


def test_log_plus_takes_a_number_as_a_constant():
    x = np.array([[0.0, 1.0, -2.0]], np.float32)
    out = _run("x = Input {3} ; y = LogPlus (x, 0) ; z = LogPlus (1, x)", "y z", {"x": x})
    np.testing.assert_allclose(out["y"].reshape(-1), np.logaddexp(x, 0).reshape(-1), rtol=1e-6)
    np.testing.assert_allclose(out["z"].reshape(-1), np.logaddexp(1, x).reshape(-1), rtol=1e-6)


def test_weighted_logistic_against_cntk27():
    # LogisticNode with a weight is C.weighted_binary_cross_entropy's node: -N sum (w l) /
    # sum (w), one number for the minibatch; its gradient that of -sum (w l), for p only
    ref = _cntk27("weighted_logistic")
    with sd.parameter_registry(sd.ParameterRegistry()):
        lib = StadynLibrary()
        net = build_network("""{ y = Input {1} ; w = Input {1} ; q = Input {1}
            b = ParameterTensor {(1), initValue = 0} ; p = q + b
            wl = WeightedLogistic (y, p, w) }""", lib)
        for name in "ywq":
            feed(net.nodes[name], np.asarray(ref["p" if name == "q" else name], np.float32))
        wl = net.nodes["wl"]
        wl.forward()
        wl.backward()
        assert wl.shape == (1,) and not lib.has_batch_axis(wl)
        np.testing.assert_allclose(wl.d, [ref["value"]], rtol=1e-6)
        # b reaches every sample's p: its gradient is the sum of p's
        np.testing.assert_allclose(net.nodes["b"].g, [np.sum(ref["grad_p"])], rtol=1e-5)


def test_weighted_logistic_over_unequal_sequences_against_cntk27():
    # over sequences of lengths 2 and 3, CNTK packs two streams of three steps: LogisticNode's
    # N counts every column (6), the gap too, where the real steps are 5
    ref = _cntk27("weighted_logistic_sequences")
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("""{ y = Input {1} ; w = Input {1} ; p = Input {1}
            wl = WeightedLogistic (y, p, w) ; d = PastValue (1, p) }""",     # (p a sequence)
                            StadynLibrary())
        for name in "ywp":
            feed(net.nodes[name], [np.asarray(v, np.float32) for v in ref[name]])
        p = net.nodes["p"]
        p.need_grad = True
        wl = net.nodes["wl"]
        wl.forward()
        wl.backward()
        np.testing.assert_allclose(wl.d, ref["value"], rtol=1e-6)
        for k, g in enumerate(ref["grad_p"]):
            np.testing.assert_allclose(p.g[k, :len(g)], g, rtol=1e-5)


def test_matrix_regularizers_against_numpy():
    # MatrixL1RegNode: sum |x|, gradient sign (x); MatrixL2RegNode: the Frobenius norm,
    # gradient x / (norm + 1e-30) (TrainingNodes.h); each over the whole matrix
    w = np.array([[0.5, -2.0, 0.0], [1.5, -0.25, 3.0]], np.float32)
    value, grads = _parameters_run("W = ParameterTensor {(3:2)} ; r = MatrixL1Reg (W)", "r",
                                   {"W": w})
    np.testing.assert_allclose(value, [np.abs(w).sum()], rtol=1e-6)
    np.testing.assert_array_equal(grads["W"], np.sign(w))
    value, grads = _parameters_run("W = ParameterTensor {(3:2)} ; r = MatrixL2Reg (W)", "r",
                                   {"W": w})
    norm = np.sqrt((w.astype(np.float64) ** 2).sum())
    np.testing.assert_allclose(value, [norm], rtol=1e-6)
    np.testing.assert_allclose(grads["W"], w / norm, rtol=1e-6)
    # over a minibatch: all its samples, one number with no batch axis
    x = np.array([[1.0, -2.0], [0.5, 0.0], [-3.0, 4.0]], np.float32)
    out = _run("x = Input {2} ; l1 = MatrixL1Reg (x) ; l2 = MatrixL2Reg (x)", "l1 l2", {"x": x})
    np.testing.assert_allclose(out["l1"], [10.5], rtol=1e-6)
    np.testing.assert_allclose(out["l2"], [np.sqrt((x ** 2).sum())], rtol=1e-6)


def test_a_per_sample_criterion_plus_one_number_is_cntks_sum():
    # cntk.exe's SquareError is one number for the minibatch, so SquareError (x, y) + 0.5 *
    # MatrixL1Reg (W) counts the regulariser once, not once per sample; its gradient for W is
    # 0.5 sign (W) whatever the minibatch's size
    x = np.array([[0.5, -1.0], [1.0, 2.0], [0.0, 3.0]], np.float32)
    y = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]], np.float32)
    w = np.array([[0.5, -2.0]], np.float32)
    with sd.parameter_registry(sd.ParameterRegistry()):
        lib = StadynLibrary()
        net = build_network("""{ x = Input {2} ; y = Input {2} ; W = ParameterTensor {(2:1)}
            se = SquareError (x, y)
            c = se + 0.5 * MatrixL1Reg (W) ; d = MatrixL1Reg (W) * 2 - se
            n = -se + MatrixL1Reg (W) ; p = Pass (se) + MatrixL1Reg (W)
            t = Negate (Pass (se)) .* x }""", lib)
        net.nodes["W"].d = w
        feed(net.nodes["x"], x)
        feed(net.nodes["y"], y)
        c = net.nodes["c"]
        c.forward()
        c.backward()
        assert not lib.has_batch_axis(c)
        np.testing.assert_allclose(c.d, [((x - y) ** 2).sum() + 0.5 * 2.5], rtol=1e-6)
        np.testing.assert_array_equal(net.nodes["W"].g, 0.5 * np.sign(w))
        net.nodes["d"].forward()
        np.testing.assert_allclose(net.nodes["d"].d, [5.0 - ((x - y) ** 2).sum()], rtol=1e-6)
        # Negate and Pass of a criterion are criteria still (cntk.exe: minus the [1], the [1]):
        # the regulariser is added once; times per-sample data, the sum scales each sample
        se = ((x - y) ** 2).sum()
        for name, want in (("n", [-se + 2.5]), ("p", [se + 2.5]), ("t", -se * x)):
            net.nodes[name].forward()
            np.testing.assert_allclose(net.nodes[name].d, want, rtol=1e-6)


def test_a_per_sample_criterion_with_per_sample_data_is_cntks_broadcast_sum():
    # cntk.exe's SquareError is one number for the minibatch (no minibatch layout); plus, minus
    # or times per-sample data x it broadcasts to each sample of x, and the SGD sums such a
    # criterion over its samples (CriterionAccumulator) with every sample's gradient seeded
    # with 1 (ComputationNetwork::Backprop): N se + sum x, the gradient N d(se); a number
    # added is cntk.exe's Constant, added once
    x = np.array([[0.5, -1.0], [1.0, 2.0], [0.0, 3.0]], np.float32)
    y = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]], np.float32)
    b = np.array([0.25, -0.5], np.float32)
    se = ((x + b - y) ** 2).sum()
    d_se = 2 * (x + b - y).sum(axis=0)                  # d se / d B
    with sd.parameter_registry(sd.ParameterRegistry()):
        lib = StadynLibrary()
        net = build_network("""{ x = Input {2} ; y = Input {2} ; B = ParameterTensor {2}
            se = SquareError (x + B, y)
            p = se + x ; m = x - se ; t = se .* x ; n = se + 1 }""", lib)
        net.nodes["B"].d = b
        feed(net.nodes["x"], x)
        feed(net.nodes["y"], y)
        expect = {"p": (se + x, 6 * d_se), "m": (x - se, -6 * d_se),
                  "t": (se * x, x.sum() * d_se), "n": ([se + 1], d_se)}
        for name, (value, grad) in expect.items():
            node = net.nodes[name]
            node.forward()
            net.nodes["B"].g = 0
            node.backward()
            np.testing.assert_allclose(node.d, value, rtol=1e-6, err_msg=name)
            np.testing.assert_allclose(net.nodes["B"].g, grad, rtol=1e-5, err_msg=name)
        assert not lib.has_batch_axis(net.nodes["n"])


def test_a_function_of_a_per_sample_criterion_is_cntks_function_of_the_sum():
    # cntk.exe's SquareError is one [1] value, the minibatch's sum: Exp, Abs, Log, Reciprocal,
    # ElementDivide, .* of two criteria and Times apply to that sum, and give a [1] (no batch
    # axis) to which a regulariser is added once; each checked with its gradient for B
    x = np.array([[0.5, -1.0], [1.0, 2.0], [0.0, 3.0]], np.float32)
    y = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]], np.float32)
    b = np.array([0.25, -0.5], np.float32)
    w = np.array([[0.5, -2.0]], np.float32)             # MatrixL1Reg (W) = 2.5
    r = (x + b - y).astype(np.float64)
    se, d_se = (r ** 2).sum(), 2 * r.sum(axis=0)        # the [1] and d se / d B
    u = (x + b).astype(np.float64)                      # a second criterion: sum (x + B)^2
    sq, d_sq = (u ** 2).sum(), 2 * u.sum(axis=0)
    sg = 1 / (1 + np.exp(-0.1 * se))
    expect = {
        "e": (np.exp(se * 0.1) + 2.5, 0.1 * np.exp(se * 0.1) * d_se),
        "a": (np.abs(-se) + 2.5, d_se),
        "g": (np.log(se), d_se / se),
        "q": (1 / se, -d_se / se ** 2),
        "s": (np.sqrt(se), d_se / (2 * np.sqrt(se))),
        "m": (se * (se + 1), (2 * se + 1) * d_se),
        "v": (se / (se + 1), d_se / (se + 1) ** 2),
        "t": (3 * se, 3 * d_se),
        "z": (sg, 0.1 * sg * (1 - sg) * d_se),
        "k": (np.exp(0.1 * se) + sq, 0.1 * np.exp(0.1 * se) * d_se + d_sq),
    }
    with sd.parameter_registry(sd.ParameterRegistry()):
        lib = StadynLibrary()
        net = build_network("""{ x = Input {2} ; y = Input {2} ; B = ParameterTensor {2}
            W = ParameterTensor {(2:1)} ; C = Constant (3, rows = 1, cols = 1)
            se = SquareError (x + B, y) ; cr = SquareError (x + B, y) + 1
            e = Exp (se * 0.1) + MatrixL1Reg (W) ; a = Abs (-se) + MatrixL1Reg (W)
            g = Log (se) ; q = 1 / se ; s = Sqrt (se) ; m = se .* cr
            v = ElementDivide (se, cr) ; t = C * se ; z = Sigmoid (se * 0.1)
            k = Exp (0.1 * se) + SquareError (x + B, 0 * x) }""", lib)
        net.nodes["B"].d = b
        net.nodes["W"].d = w
        feed(net.nodes["x"], x)
        feed(net.nodes["y"], y)
        for name, (value, grad) in expect.items():
            node = net.nodes[name]
            node.forward()
            net.nodes["B"].g = 0
            node.backward()
            assert not lib.has_batch_axis(node), name
            np.testing.assert_allclose(node.d, [value], rtol=1e-5, err_msg=name)
            np.testing.assert_allclose(net.nodes["B"].g, grad, rtol=1e-4, err_msg=name)


def test_khatri_rao_product_and_column_element_times():
    # KhatriRaoProductNode: element j * rows (left) + i of each column is left[i] * right[j]
    # (CPUMatrix::AssignKhatriRaoProductOf); ColumnwiseCrossProduct is its old name
    x = np.array([[0.5, -1.0, 2.0], [1.0, 2.0, 3.0]], np.float32)
    m = np.array([[10.0, 20.0], [1.0, -2.0]], np.float32)
    out = _run("""x = Input {3} ; m = Input {2}
        k = KhatriRaoProduct (x, m) ; c = ColumnwiseCrossProduct (x, m)
        e = ColumnElementTimes (x, x)""", "k c e", {"x": x, "m": m})
    want = [[5.0, -10.0, 20.0, 10.0, -20.0, 40.0], [1.0, 2.0, 3.0, -2.0, -4.0, -6.0]]
    np.testing.assert_array_equal(out["k"].reshape(2, 6), want)
    np.testing.assert_array_equal(out["c"].reshape(2, 6), want)
    np.testing.assert_array_equal(out["e"].reshape(2, 3), x * x)


def test_stabilizer_layer_repeat_range_and_rnn_stack():
    # StabilizerLayer: x times log (1 + exp (s p)) / s, p starting at 0.99537863 (1 for s = 4)
    x = np.array([[0.5, -1.0, 2.0]], np.float32)
    out = _run("""x = Input {3} ; s4 = StabilizerLayer {} (x)
        s2 = StabilizerLayer {steepness = 2} (x)
        r = BS.Constants.Range (4)""", "s4 s2 r", {"x": x})
    for name, s in (("s4", 4.0), ("s2", 2.0)):
        beta = np.log1p(np.exp(s * 0.99537863)) / s
        np.testing.assert_allclose(out[name].reshape(-1), beta * x.reshape(-1), rtol=1e-6)
    np.testing.assert_array_equal(out["r"].reshape(-1), [0, 1, 2, 3])
    # p is learned: d/dp of sum (u .* s4) is sum (u x sigmoid (s p)) (softplus' derivative)
    u = np.array([[2.0, 0.5, -1.5]], np.float32)
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("{ x = Input {3} ; u = Input {3} ; s = StabilizerLayer {} (x)\n"
                            " c = ReduceSum (u .* s, axis = 1) }", StadynLibrary())
        feed(net.nodes["x"], x)
        feed(net.nodes["u"], u)
        learned = list(sd.get_parameters().values())
        assert len(learned) == 1, "StabilizerLayer's p is a learned parameter"
        (p,) = learned
        p.g = np.zeros_like(p.d)
        c = net.nodes["c"]
        c.forward()
        c.backward()
    want = (u * x).sum() / (1 + np.exp(-4.0 * 0.99537863))
    np.testing.assert_allclose(p.g.reshape(-1), [want], rtol=1e-5)
    from stadyn.brainscript._parser import parse_members
    with sd.parameter_registry(sd.ParameterRegistry()):
        rec = Evaluator(StadynLibrary()).evaluate(parse_members(
            "n = Length (Repeat (3, 7)) ; a = Repeat (2, 5) ; "
            "z = BS.Constants.IsNone (Repeat (0, 1))",
            "<test>"))
        assert rec._members["n"].force() == 3
        assert list(rec._members["a"].force()) == [5, 5]
        assert rec._members["z"].force() is True
        # CNTK.core.bs builds it with ':', whose arrays start at 0 (as _ConcatArrays reads them)
        rec = Evaluator(StadynLibrary()).evaluate(parse_members(
            "first = Repeat (2, 5)[0] ; last = Repeat (2, 5)[1] ; past = Repeat (2, 5)[2]",
            "<test>"))
        assert rec._members["first"].force() == 5
        assert rec._members["last"].force() == 5
        with pytest.raises(ConfigError, match=r"<test>:1:.*out of bounds 0\.\.1"):
            rec._members["past"].force()


def test_rnn_stack_is_one_layer_one_direction_whatever_it_is_told():
    # CNTK.core.bs's RNNStack passes numLayers = 1 and bidirectional = false to
    # OptimizedRNNStack, whatever its own arguments say: the same weights' sizes
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("""{ x = Input {3}
            W1 = ParameterTensor {0:0, initOutputRank = -1}
            a = RNNStack (x, W1, hiddenSize = 2, numLayers = 3, bidirectional = true,
                          rnnMode = 'gru')
            W2 = ParameterTensor {0:0, initOutputRank = -1}
            b = OptimizedRNNStack (W2, x, 2, numLayers = 1, recurrentOp = 'gru')
            W3 = ParameterTensor {0:0, initOutputRank = -1}
            c = OptimizedRNNStack (W3, x, 2, numLayers = 1) }""",
                            StadynLibrary())
        weights = {name: w.shape for name, w in sd.get_parameters().items()}
        assert weights["W1"] == weights["W2"] == (21, 2)      # CNTK's [2 x 21]: a GRU's
        assert net.nodes["a"].shape == net.nodes["b"].shape
        # rnnMode reaches it as recurrentOp: an LSTM's weights are larger
        assert weights["W3"] == (28, 2)


def test_time_reverse_is_refused_as_cntk_exe_refuses_it():
    # CNTK.core.bs declares TimeReverse, but cntk.exe 2.7 has no such node (deleted with
    # LSTMNode and others): ComputationNetworkBuilder fails "Attempted to instantiate
    # undefined operation"; the error names the config's line
    with sd.parameter_registry(sd.ParameterRegistry()), \
            pytest.raises(ConfigError, match="undefined operation TimeReverse") as err:
        build_network("{ x = Input {3}\n r = TimeReverse (x) }", StadynLibrary())
    assert err.value.line == 2


def test_format_and_print(capsys):
    # BrainScriptEvaluator.cpp's FormatConfigValue: 'how' is a printf conversion's middle; a
    # whole number %d, another %f, a string %s; an array's items a line each in ( ... ), a
    # record's members by name in [ ... ] (HasToString::NestString: indented by two)
    from stadyn.brainscript._parser import parse_members
    with sd.parameter_registry(sd.ParameterRegistry()):
        rec = Evaluator(StadynLibrary()).evaluate(parse_members("""
            f = Format (2.5, ".2") : Format (7, "3") : Format (7.0, "") : Format ("ab", "-4")
            a = Format ((1 : 2.5), "") ; r = Format ([ b = "x" ; a = 1 ], "")
            p = Print ((1 : "two"))""", "<test>"))
        value = {k: rec._members[k].force() for k in "farp"}
    assert list(value["f"]) == ["2.50", "  7", "7", "ab  "]
    assert value["a"] == "( 1\n  2.500000 )"
    assert value["r"] == "[\n  a = 1\n  b = x\n]"
    assert capsys.readouterr().err == "( 1\n  two )\n"
    with sd.parameter_registry(sd.ParameterRegistry()):
        rec = Evaluator(StadynLibrary()).evaluate(parse_members('f = Format (1, "%d")', "<t>"))
        with pytest.raises(ConfigError, match="must not contain %"):
            rec._members["f"].force()


def test_constant_from_string_is_cntk_exes_random_constant_sized_by_its_partner():
    # CNTK.core.bs: ParameterTensor ((0), initFromLiteral = literal, learningRateMultiplier =
    # 0) with no init: cntk.exe does not read the literal (init 'uniform', the next seed of
    # the count, taken when the node is made) and the element-wise op infers its dimension
    from stadyn._random import auto_seeds_kept, restart_auto_seeds
    text = """{{ x = Input {{3}}
        c = {0}
        z = x + c
        p = {1}
        y = p .* x }}"""
    nets = []
    for c, p in (("ConstantFromString ('1 2 3')", "ParameterTensor ((0))"),
                 ("ParameterTensor ((3), learningRateMultiplier = 0, randomSeed = 0)",
                  "ParameterTensor ((3), randomSeed = 1)")):
        with auto_seeds_kept(), sd.parameter_registry(sd.ParameterRegistry()):
            restart_auto_seeds(0)      # members are made by name: c first (seed 0), then p
            nets.append(build_network(text.format(c, p), StadynLibrary()))
    ours, expected = ([getattr(n.nodes[k], "variable", n.nodes[k]) for k in "cp"]
                      for n in nets)
    assert ours[0].shape == (3,) and not ours[0].need_grad
    np.testing.assert_array_equal(ours[0].d, expected[0].d)
    assert not np.allclose(ours[0].d, [1, 2, 3])          # the literal is not read
    assert ours[1].shape == (3,) and ours[1].need_grad     # .* infers the dimension too
    np.testing.assert_array_equal(ours[1].d, expected[1].d)     # seed 1 in both
    net = nets[0]
    xs = np.arange(3, dtype=np.float32).reshape(1, 3)
    net.nodes["x"].d = xs
    net.nodes["z"].forward()
    np.testing.assert_allclose(net.nodes["z"].d, xs + ours[0].d, rtol=1e-6)


def test_sparse_image_input_is_an_image_input_of_the_same_dimensions():
    # CNTK.core.bs:577-578: ImageInput and SparseImageInput take the same arguments (W, H, C
    # column-major; imageLayout 'HWC' puts C first); the sparse one's values arrive dense
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = build_network("""{ a = SparseImageInput (4, 3, 2)
            b = SparseImageInput (4, 3, 2, imageLayout = 'HWC', tag = 'label') }""",
                            StadynLibrary())
    assert net.nodes["a"].shape[1:] == (2, 3, 4)        # [4 x 3 x 2]
    assert net.nodes["b"].shape[1:] == (3, 4, 2)        # [2 x 4 x 3]


def test_deconv_layer_of_an_older_cntk_core_bs_is_refused_naming_its_cntk_2_7_name():
    # 07_Deconvolution's baseline log (2017) echoes DeconvLayer {1, (5:5), cMap, ...}; CNTK
    # 2.7's CNTK.core.bs has no DeconvLayer (renamed ConvolutionTransposeLayer in 615bdaf86),
    # so cntk.exe 2.7 refuses the config: the error says what the layer is called now
    with pytest.raises(ConfigError, match=r"<string>:1:27: unknown function 'DeconvLayer' .*"
                                          r"calls it ConvolutionTransposeLayer"):
        build_network("{ x = Input {4:4:1} ; y = DeconvLayer {1, (3:3), 1} (x) }",
                      StadynLibrary())
