"""CNTK.core.bs's last node functions (``_core_nodes_library.py``):
``CosDistanceWithNegativeSamples`` and the raw ``BatchNormalization`` against CNTK 2.7's
Python ops that are the same nodes (``refgen_bs_core_nodes.py`` wrote
``core_nodes_cntk27.json``); ``PackedIndex``, ``GatherPacked``, ``ScatterPacked`` and
``Embedding`` against NumPy; ``GMMLogLikelihood`` and ``QuantizedTimes`` refused at the
user's line with cntk.exe's reasons.  All of them were unknown names on df50ddc6."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import stadyn as sd
import stadyn.functions as F
from stadyn._errors import ConfigError
from stadyn.brainscript import StadynLibrary, build_network
from stadyn.train import feed

REFS = json.loads((Path(__file__).parent.parent / "fixtures" / "brainscript" /
                   "core_nodes_cntk27.json").read_text())


def _network(text: str, sequences: bool | None = None):
    return build_network("{ " + text + " }", StadynLibrary(sequences=sequences), "net.bs")


@pytest.mark.parametrize("key", ["cos_neg_1_2", "cos_neg_2_3", "cos_neg_sequences",
                                 "cos_neg_0_2", "cos_neg_1_0", "cos_neg_ragged_1_2",
                                 "cos_neg_ragged_2_3"])
def test_cos_distance_with_negative_samples_against_cntk27(key):
    # CosDistanceWithNegativeSamplesNode (LinearAlgebraNodes.h:1612) is CNTK 2.7's
    # C.cosine_distance_with_negative_samples: column j against b's column j, then against
    # (j + shift + k - 1) mod n; value and the gradients of the outputs' sum
    ref = REFS[key]
    sequences = key.endswith("sequences") or "ragged" in key
    dim = np.asarray(ref["x"][0]).shape[-1]
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = _network(f"a = Input {{{dim}}} ; b = Input {{{dim}}}\n"
                       f"c = CosDistanceWithNegativeSamples (a, b, {ref['shift']}, "
                       f"{ref['count']})", sequences)
        for name, key_ in (("a", "x"), ("b", "y")):
            if sequences:
                sd.sequence.feed(net.nodes[name], [np.asarray(s, np.float32) for s in ref[key_]])
            else:
                feed(net.nodes[name], np.asarray(ref[key_], np.float32))
            net.nodes[name].need_grad = True
        c = net.nodes["c"]
        c.forward()
        c.backward()
        assert c.shape[-1] == ref["count"] + 1
        if not sequences:
            np.testing.assert_allclose(c.d, ref["value"], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(net.nodes["a"].g, ref["grad_x"], rtol=1e-5, atol=2e-6)
            np.testing.assert_allclose(net.nodes["b"].g, ref["grad_y"], rtol=1e-5, atol=2e-6)
            return
        # sequences of unequal lengths (3, 1, 2; 4, 1, 1, 2): CNTK packs them into parallel
        # streams, and the negatives are other columns of that matrix, its gaps included
        values = sd.sequence.unpack_value(c)
        assert [len(v) for v in values] == [len(v) for v in ref["value"]]
        for b, want in enumerate(ref["value"]):
            np.testing.assert_allclose(values[b], want, rtol=1e-5, atol=1e-6)
            for node, grad in (("a", "grad_x"), ("b", "grad_y")):
                np.testing.assert_allclose(net.nodes[node].g[b, :len(want)], ref[grad][b],
                                           rtol=1e-5, atol=2e-6)


def test_cos_distance_with_negative_samples_takes_constants_and_checks_counts():
    x = np.eye(3, dtype=np.float32)
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = _network("a = Input {3}\n c = CosDistanceWithNegativeSamples (a, a, Constant (1), "
                       "Constant (1))")
        feed(net.nodes["a"], x)
        net.nodes["c"].forward()
        # the unit vectors: 1 with themselves, 0 with the next one
        np.testing.assert_allclose(net.nodes["c"].d, [[1, 0], [1, 0], [1, 0]])
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError, match=r"net.bs:2:\d+: .*numNegSamples must be an integer"):
            _network("a = Input {3}\n c = CosDistanceWithNegativeSamples (a, a, 1, -1)")


@pytest.mark.parametrize("key", ["batch_norm_replace", "batch_norm_5", "batch_norm_corpus"])
def test_raw_batch_normalization_against_cntk27(key):
    # BatchNormalizationNode is C.batch_normalization's: two training minibatches of 3 and 2
    # samples (each normalised by its own statistics, the running ones updated: time constant
    # 0 replaces them with this minibatch's, TrainingNodes.h:2630-2631; -1 the corpus-level
    # average, weight M / (M + count), TrainingNodes.h:2610-2611) and inference on the running
    # statistics; CNTK.core.bs:639 adds the running count, a ParameterTensor {(1)} of 0, where
    # none is given (its value is the samples seen)
    ref = REFS[key]
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = _network(f"""x = Input {{4}}
            s = ParameterTensor {{4}} ; b = ParameterTensor {{4}}
            m = ParameterTensor {{4, learningRateMultiplier = 0}}
            v = ParameterTensor {{4, learningRateMultiplier = 0}}
            c = ParameterTensor {{(1), learningRateMultiplier = 0, initValue = 0}}
            y = BatchNormalization (x, s, b, m, v, runCount = c,
                                    normalizationTimeConstant = {ref['time_constant']})""")
        n = net.nodes
        n["s"].d, n["b"].d = np.float32(ref["scale"]), np.float32(ref["bias"])
        n["m"].d, n["v"].d = np.float32([0.5, 0.0, -0.5, 1.0]), np.float32([2.0, 1.0, 0.5, 4.0])
        for step in ref["training"]:
            feed(n["x"], np.asarray(step["x"], np.float32))
            with sd.training(True):
                n["y"].forward()
            np.testing.assert_allclose(n["y"].d, step["value"], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(n["m"].d, step["mean"], rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(n["v"].d, step["var"], rtol=1e-5, atol=1e-7)
            assert float(n["c"].d.reshape(())) == step["count"]
        feed(n["x"], np.asarray(ref["training"][0]["x"] + ref["training"][1]["x"], np.float32))
        with sd.training(False):
            n["y"].forward()
        np.testing.assert_allclose(n["y"].d, ref["inference"], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("spatial", [False, True])
def test_raw_batch_normalization_infers_0_x_1_parameters(spatial):
    # cntk.exe's BatchNormalizationNode makes a [0 x 1] parameter (CNTK.core.bs:247's
    # normShape = (0:1), or Parameter (0, 1)) [n x 1]: n the input's elements a sample, or its
    # channels (the last CNTK dimension) where spatial (TrainingNodes.h:2805-2813); the
    # numbers are then CNTK 2.7's of the same node on [4] parameters (batch_norm_5)
    ref = REFS["batch_norm_5"]
    image = "Input {(1:1:4)}" if spatial else "Input {4}"
    reg = sd.ParameterRegistry()
    with sd.parameter_registry(reg):
        net = _network(f"""x = {image}
            s = Parameter (0, 1) ; b = ParameterTensor {{(0:1)}}
            m = ParameterTensor {{(0:1), learningRateMultiplier = 0}}
            v = ParameterTensor {{(0:1), learningRateMultiplier = 0}}
            y = BatchNormalization (x, s, b, m, v, spatial = {str(spatial).lower()},
                                    normalizationTimeConstant = 5)""")
        params = dict(reg.items())
        assert [tuple(params[k].shape) for k in "sbmv"] == [(1, 4)] * 4     # CNTK's [4 x 1]
        params["s"].d, params["b"].d = np.float32([ref["scale"]]), np.float32([ref["bias"]])
        params["m"].d = np.float32([[0.5, 0.0, -0.5, 1.0]])
        params["v"].d = np.float32([[2.0, 1.0, 0.5, 4.0]])
        for step in ref["training"]:
            x = np.asarray(step["x"], np.float32)
            feed(net.nodes["x"], x.reshape((-1, 4, 1, 1)) if spatial else x)
            with sd.training(True):
                net.nodes["y"].forward()
            np.testing.assert_allclose(net.nodes["y"].d.reshape(-1, 4), step["value"],
                                       rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(params["m"].d.ravel(), step["mean"], rtol=1e-5,
                                       atol=1e-7)


@pytest.mark.parametrize("text, message", [
    # TrainingNodes.h:2845-2849: every parameter has the scale's layout ([4] and [4 x 1] differ)
    ("p = ParameterTensor {4} ; q = Parameter (4, 1)\n y = BatchNormalization (x, p, q, p, p)",
     r"Input\[2\] has a layout different from Input\[1\]"),
    # TrainingNodes.h:2797-2801: the running statistics are learnable parameters, updated in place
    ("p = ParameterTensor {4}\n y = BatchNormalization (x, p, p, p * 2, p)",
     r"Inputs \[3\.\.6\] must be learnable parameters \(input 3"),
    ("p = ParameterTensor {4}\n y = BatchNormalization (x, p, p, p, p, runCount = x)",
     r"Inputs \[3\.\.6\] must be learnable parameters \(input 5"),
])
def test_raw_batch_normalization_refuses_what_cntk_exe_refuses(text, message):
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError, match=r"net.bs:2:\d+: BatchNormalization: " + message):
            _network("x = Input {4} ; " + text)


def test_raw_batch_normalization_checks_its_parameters():
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError, match=r"net.bs:2:\d+: .*runMean has 3 values, the input "
                                              r"4 elements a sample"):
            _network("x = Input {4} ; p = ParameterTensor {4} ; q = ParameterTensor {3}\n"
                     " y = BatchNormalization (x, p, p, q, p)")


_XS = [np.arange(8, dtype=np.float32).reshape(4, 2),
       np.arange(10, 16, dtype=np.float32).reshape(3, 2)]
_CS = [np.array([[1], [0], [1], [1]], np.float32), np.array([[0], [1], [0]], np.float32)]


def _unpacked(node) -> list[list]:
    node.forward()
    return [a.tolist() for a in sd.sequence.unpack_value(node)]


def test_scatter_packed_refuses_a_cond_other_than_the_indexs():
    # cntk.exe takes ScatterPacked's result layout from cond (ReshapingNodes.cpp:627-685);
    # Stadyn scatters on the index's condition, so another cond is refused, not ignored
    # (251a701b built the node on c's axis whatever cond was)
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError, match=r"net.bs:2:\d+: ScatterPacked: cond must be the "
                                              r"index's own condition or layout"):
            _network("x = Input {2} ; c = Input {1} ; d = Input {1}\n"
                     " s = ScatterPacked (d, PackedIndex (c, Where (c)), x)", sequences=True)


def test_gather_and_scatter_packed_against_numpy():
    # CNTK.core.bs:896-897: Gather (cond, x) = GatherPacked (PackedIndex (x, Where (cond)), x),
    # Scatter (cond, y) = ScatterPacked (cond, PackedIndex (cond, Where (cond)), y)
    # (ReshapingNodes.cpp:560-685: the kept steps, and put back with 0 elsewhere)
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = _network("""x = Input {2} ; c = Input {1}
            g = GatherPacked (PackedIndex (x, Where (c)), x)
            s = ScatterPacked (c, PackedIndex (c, Where (c)), g * 2)""", sequences=True)
        sd.sequence.feed(net.nodes["x"], _XS)
        sd.sequence.feed(net.nodes["c"], _CS)
        net.nodes["x"].need_grad = True
        kept = [x[c[:, 0] != 0] for x, c in zip(_XS, _CS)]
        assert _unpacked(net.nodes["g"]) == [k.tolist() for k in kept]
        put = [np.where(c != 0, 2 * x, 0) for x, c in zip(_XS, _CS)]
        assert _unpacked(net.nodes["s"]) == [p.tolist() for p in put]
        net.nodes["g"].forward()
        net.nodes["g"].backward()                  # the gradient scattered back: 1 where kept
        np.testing.assert_array_equal(net.nodes["x"].g[0], np.repeat(_CS[0], 2, axis=1))


def test_a_packed_index_not_from_where_is_refused_at_the_users_line():
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError, match=r"net.bs:2:\d+: PackedIndex: the index sequence "
                                              r"must be a Where"):
            _network("x = Input {2} ; c = Input {1}\n i = PackedIndex (x, c)", sequences=True)


def test_embedding_looks_up_columns_and_matches_the_sparse_product():
    # CNTK.core.bs:759-763: Transpose (Parameter (inputDim, embeddingDim)) and, for a dense
    # input of word indices, GatherPacked of its columns; for a one-hot (sparseInput) input the
    # product with the same matrix
    words = [np.array([[4], [0], [2]], np.float32), np.array([[1]], np.float32)]
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        net = _network("w = Input {1} ; o = Input {5}\n"
                       "e = Embedding (3, w, inputDim = 5, initFrom = 'uniform')\n"
                       "E = Transpose (Parameter (5, 3, init = 'uniform'))\n"
                       "f = GatherPacked (w, E) ; p = E * o", sequences=True)
        # cntk.exe's [5 x 3] Parameter is Stadyn's (3, 5), named for Transpose's argument x;
        # CNTK.core.bs's learningRateWeight = 0.0 leaves it untrained
        matrix = dict(registry.items())["e.embedding.x"]
        assert tuple(matrix.shape) == (3, 5) and not matrix.need_grad
        sd.sequence.feed(net.nodes["w"], words)
        got = _unpacked(net.nodes["e"])
        want = [matrix.d.T[w[:, 0].astype(int)] for w in words]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        # GatherPacked of a matrix E and E times one-hot vectors agree
        sd.sequence.feed(net.nodes["o"], [np.eye(5, dtype=np.float32)[w[:, 0].astype(int)]
                                          for w in words])
        for g, p in zip(_unpacked(net.nodes["f"]), _unpacked(net.nodes["p"])):
            np.testing.assert_allclose(g, p, rtol=1e-6)


def test_embedding_input_dim_defaults_to_the_inputs():
    # inputDim = input.dim (ComputationNodeScripting.cpp:39: a sample's elements)
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        _network("o = Input {7} ; e = Embedding (3, o, sparseInput = true)", sequences=True)
        assert [tuple(v.shape) for _, v in registry.items()] == [(3, 7)]


@pytest.mark.parametrize("text, message", [
    # ComputationNetworkBuilder.cpp:70-71, 154: GMMLogLikelihoodNode is COMING_SOON
    ("q = GMMLogLikelihood (x, x, x, x)",
     "GMMLogLikelihood: Attempted to instantiate undefined operation GMMLogLikelihood."),
    # LinearAlgebraNodes.h:1124 reads bitShiftA, CNTK.core.bs:702 passes bitSmoothingA
    ("q = QuantizedTimes (x, x)", "QuantizedTimes: required parameter 'bitShiftA' not found"),
    # a config record's lookup goes on to the enclosing scopes (ScriptableObjects.h:560-565)
    ("q = QuantizedTimes (x, x)", "fails unless an enclosing scope defines bitShiftA/bitShiftB"),
])
def test_names_cntk_exe_cannot_build_are_refused_at_the_users_line(text, message):
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError) as e:
            _network("x = Input {4}\n " + text)
    assert (e.value.path, e.value.line) == ("net.bs", 2)
    assert message in str(e.value)


def test_gather_packed_from_a_sequence_needs_a_packed_index():
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError, match=r"net.bs:2:\d+: GatherPacked: gathering from a "
                                              r"sequence needs an index made by PackedIndex"):
            _network("x = Input {2} ; c = Input {1}\n g = GatherPacked (Where (c), x)",
                     sequences=True)


@pytest.mark.parametrize("shift, count, name, got", [("1e999", "1", "numShifts", "inf"),
                                                     ("1", "1e999 - 1e999", "numNegSamples",
                                                      "nan")])
def test_cos_distance_counts_that_are_not_finite_are_refused_at_the_users_line(shift, count,
                                                                             name, got):
    # the counts were tested with int(v): inf raised OverflowError, nan ValueError, no line
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError, match=rf"net.bs:2:\d+: CosDistanceWithNegativeSamples: "
                                              rf"{name} must be an integer of at least 0 .*got "
                                              rf"{got}"):
            _network(f"a = Input {{3}} ; b = Input {{3}}\n"
                     f" c = CosDistanceWithNegativeSamples (a, b, {shift}, {count})")


def test_gather_packed_from_a_parameter_takes_a_negative_index_as_a_gap():
    # GatherPackedNode::ForwardPropNonLooping (ReshapingNodes.cpp:560-580) is Matrix::
    # DoGatherColumnsOf: "negative index means gap" (CPUMatrixImpl.h:660-662), the column left
    # unwritten (0s here); its backprop, DoScatterColumnsOf, skips it too (ScatterValues,
    # CPUMatrixImpl.h:7507-7509): the gaps give the source no gradient.  On ee9d720a a -1 took
    # the last column, and its gradient
    words = [np.array([[2], [-1], [0], [2]], np.float32), np.array([[-3], [4]], np.float32)]
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        net = _network("w = Input {1}\n E = ParameterTensor {(2:5), init = 'uniform'}\n"
                       "f = GatherPacked (w, E)", sequences=True)
        sd.sequence.feed(net.nodes["w"], words)
        (matrix,) = [v for _, v in registry.items()]
        f = net.nodes["f"]
        f.forward()
        columns = matrix.d          # Stadyn's (5, 2): cntk.exe's [2 x 5], a column a row
        for got, w in zip(_unpacked(f), words):
            want = [columns[int(i)] if i >= 0 else np.zeros(2) for i in w[:, 0]]
            np.testing.assert_array_equal(got, np.array(want, np.float32))
        total = F.sum(f)             # (of the sequences' steps: the padding is no step)
        total.forward()
        total.backward()
        counts = np.zeros(5)
        for i in (2, 0, 2, 4):
            counts[i] += 1
        np.testing.assert_array_equal(matrix.g, np.repeat(counts[:, None], 2, axis=1))


def test_gather_packed_from_a_parameter_refuses_an_index_past_its_columns_in_cntks_words():
    # CPUMatrixImpl.h:663-665: InvalidArgument("DoGatherColumnsOf: Map out of bounds. %ld >=
    # %ld", jIn, a.GetNumCols()); here at the user's line (ee9d720a: torch's IndexError text)
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = _network("w = Input {1}\n E = ParameterTensor {(2:5), init = 'uniform'}\n"
                       "f = GatherPacked (w, E)", sequences=True)
        sd.sequence.feed(net.nodes["w"], [np.array([[1], [5], [0]], np.float32)])
        with pytest.raises(sd.ShapeError, match=r"DoGatherColumnsOf: Map out of bounds\. 5 >= "
                                                r"5 \(created at net\.bs:3\)"):
            net.nodes["f"].forward()


def test_gather_packed_from_a_rank_1_parameter():
    # a [n] node without a dynamic axis is an n x 1 matrix (ComputationNode.h:1681-1713
    # DetermineDataSize: rows the first dimension, columns the others'): one column, gathered
    # whole into a result whose sample Validate declares [1] (ReshapingNodes.cpp:606-616) --
    # refused where n > 1 (ee9d720a took element i of the vector); a [1] is one column of one
    # value, index 0 its value and index 1 out of bounds (1 >= 1)
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError, match=r"net.bs:3:\d+: GatherPacked: the source is \[5\], "
                                              r"which cntk.exe holds as one column of 5 rows"):
            _network("w = Input {1}\n E = ParameterTensor {5, init = 'uniform'}\n"
                     "f = GatherPacked (w, E)", sequences=True)
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = _network("w = Input {1}\n E = ParameterTensor {1, init = 'fixedValue', value = 3}\n"
                       "f = GatherPacked (w, E)", sequences=True)
        sd.sequence.feed(net.nodes["w"], [np.array([[0], [-1], [0]], np.float32)])
        np.testing.assert_array_equal(_unpacked(net.nodes["f"])[0], [[3.0], [0.0], [3.0]])
        sd.sequence.feed(net.nodes["w"], [np.array([[1]], np.float32)])
        with pytest.raises(sd.ShapeError, match=r"Map out of bounds\. 1 >= 1"):
            net.nodes["f"].forward()


def test_gather_packed_from_a_rank_3_parameter():
    # a [a x b x c] node without a dynamic axis is a matrix of a rows and b*c columns
    # (ComputationNode.h:1704-1711 DetermineDataSize); DoGatherColumnsOf copies a column of a
    # values (CPUMatrixImpl.h:650-667) into a result Validate declares [a x b]
    # (ReshapingNodes.cpp:606-616), whose next view exceeds the storage (TensorView.cpp:47-52):
    # refused where b > 1 (0c52e7e4 took the [a x b] slice j of c); with b = 1 column j is the
    # [a x 1] slice j
    with sd.parameter_registry(sd.ParameterRegistry()):
        with pytest.raises(ConfigError, match=r"net.bs:3:\d+: GatherPacked: the source is "
                                              r"\[2 x 3 x 4\], which cntk.exe holds as a matrix "
                                              r"of 2 rows and 12 columns.*\[6 x 4\]"):
            _network("w = Input {1}\n E = ParameterTensor {(2:3:4), init = 'uniform'}\n"
                     "f = GatherPacked (w, E)", sequences=True)
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        net = _network("w = Input {1}\n E = ParameterTensor {(2:1:4), init = 'uniform'}\n"
                       "f = GatherPacked (w, E)", sequences=True)
        (matrix,) = [v for _, v in registry.items()]
        sd.sequence.feed(net.nodes["w"], [np.array([[3], [-1], [0]], np.float32)])
        columns = matrix.d.reshape(4, 2)       # Stadyn's (4, 1, 2): cntk.exe's 2 x 4 matrix
        got = np.asarray(_unpacked(net.nodes["f"])[0]).reshape(3, 2)
        np.testing.assert_array_equal(got, [columns[3], [0, 0], columns[0]])


def test_cos_distance_of_a_zero_vector_is_cntks_0():
    # CosDistanceNode clamps each inverse norm at 1/1e-30 (AssignElementInverseOf,
    # CPUMatrixImpl.h:2213-2232; LinearAlgebraNodes.h:1453-1467): a zero vector's cosine is 0,
    # a NaN's NaN.  CNTK 2.7's C.cosine_distance is that node: its values and where its
    # gradients are NaN (the compat harness's reference, written by CNTK 2.7); a21eddab gave NaN
    ref = np.load(Path(__file__).parents[1] / "compat" / "refs" / "cntk" /
                  "cosine_distance__zero_vector.npz")
    x = np.array([[0, 0, 0], [1, 2, 0], [0, 0, 0], [np.nan, 1, 0], [1, 2, 3]], np.float32)
    y = np.array([[1, 1, 0], [0, 0, 0], [0, 0, 0], [1, 1, 0], [2, -1, 5]], np.float32)
    with sd.parameter_registry(sd.ParameterRegistry()):
        net = _network("a = Input {3} ; b = Input {3}\n c = CosDistance (a, b)")
        for name, value in (("a", x), ("b", y)):
            feed(net.nodes[name], value)
            net.nodes[name].need_grad = True
        c = net.nodes["c"]
        c.forward()
        c.backward()
        np.testing.assert_allclose(c.d.ravel(), ref["eval"].ravel(), rtol=1e-5, atol=1e-6)
        for name, key in (("a", "grad x"), ("b", "grad y")):
            grad = net.nodes[name].g
            np.testing.assert_array_equal(np.isnan(grad), np.isnan(ref[key]))
            # (where a zero vector is; the last row's zero is a cancellation, 4e-9 here)
            np.testing.assert_array_equal(grad[:3] == 0, ref[key][:3] == 0)
