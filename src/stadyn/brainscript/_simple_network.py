"""cntk.exe's ``SimpleNetworkBuilder``: the standard networks a config describes by a few keys
(``layerSizes = 363:512:512:132``, ``trainingCriterion``, ``evalCriterion``, ``layerTypes``,
``initValueScale``, ``uniformInit``, ``applyMeanVarNorm``, ``needPrior``, ``addDropoutNodes``).

The network is the one cntk.exe's ``SimpleNetworkBuilder::BuildFFDNNFromDescription`` builds
(Source/ActionsLib/SimpleNetworkBuilder.cpp), written as a BrainScript description that Stadyn's
BrainScript engine builds like any other, so training, evaluation, model files and the
``write`` action treat it as a ``BrainScriptNetworkBuilder`` network.  Its nodes have
cntk.exe's names (``features``, ``MeanOfFeatures``, ``InvStdOfFeatures``,
``MVNormalizedFeatures``, ``W0``, ``B0``, ``W0*features``, ``W0*features+B0``, ``H1``, ...,
``HLast``, ``labels``, ``CrossEntropyWithSoftmax``, ``EvalClassificationError``, ``Prior``,
``LogOfPrior``, ``ScaledLogLikelihood``, ``PosteriorProb``), its parameters cntk.exe's
initialisation: weight ``W<i>`` drawn ``uniform`` (U(+-0.05)) or ``gaussian``
(N(0, 0.2/sqrt(fanIn))) times ``initValueScale`` with the seed ``i + 1`` (SimpleNetworkBuilder
numbers its weights from 1 in each network; ``randomSeedOffset`` does not reach it), biases 0.

``rnnType = CLASSLSTM`` builds ``BuildClassLSTMNetworkFromDescription``'s class-based LSTM
language model (PennTreebank's ``rnn.cntk``): a ``LookupTable`` of one word, cntk.exe's LSTM
with peepholes (``BuildLSTMComponent``) per layer, whose unnamed nodes are ``AutoName<n>``
numbered in the order cntk.exe makes them, and ``ClassBasedCrossEntropyWithSoftmax``;
``rnnType = CLASSLM`` ``BuildClassEntropyRNNFromDescription``'s class-based simple RNN (the
RNNLM configs); ``rnnType = LSTM`` ``BuildLSTMNetworkFromDescription``'s LSTM network (SLU's
``rnnlu.cntk``).  The other kinds (``SIMPLERNN``, ``NPLM``, ...) and the criteria Stadyn has no
node for (``squareError``, ``logistic``, ...) are refused by name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ._block_values import _err
from ._config import BrainScriptSource, ConfigList, ConfigRecord

__all__ = ["SimpleNetworkSource", "simple_network_source"]

# rnnType values of cntk.exe's SimpleNetworkBuilder::InitRecurrentConfig, tried in this order
# (a list of them picks the first kind found), with what each builds
_KINDS = (("SIMPLENET", "feed-forward"), ("SIMPLERNN", "simple recurrent"), ("LSTM", "LSTM"),
          ("CLASSLM", "class-based recurrent"), ("LBLM", "log-bilinear"),
          ("NPLM", "DNN language model"), ("CLASSLSTM", "class-based LSTM"),
          ("NCELSTM", "NCE LSTM"), ("CLSTM", "conditional LSTM"), ("CRF", "CRF LSTM"))

# nonlinearities of ApplyNonlinearFunction (case-sensitive: cntk.exe compares the operation name)
_ACTIVATIONS = {"Sigmoid": "Sigmoid", "RectifiedLinear": "ReLU", "Tanh": "Tanh", "None": None,
                "none": None, "": None}

# ParseTrainingCriterionString / ParseEvalCriterionString (case-insensitive)
_TRAINING = ("crossEntropyWithSoftmax", "squareError", "logistic", "noiseContrastiveEstimation",
             "classCrossEntropyWithSoftmax", "sequenceWithSoftmax")
_EVALUATION = ("classificationError", "errorPrediction", "crossEntropyWithSoftmax", "logistic",
               "noiseContrastiveEstimation", "squareError", "classCrossEntropyWithSoftmax",
               "sequenceWithSoftmax")

_PREFIX = "_simpleNet"     # member names that stand for cntk.exe's (``W0*features``, ...)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPECIAL = ("featureNodes", "labelNodes", "criterionNodes", "evaluationNodes", "outputNodes")


@dataclass(frozen=True)
class SimpleNetworkSource(BrainScriptSource):
    """A command's ``SimpleNetworkBuilder`` block as a network description: :meth:`parse` gives
    the BrainScript of cntk.exe's network (made when the network is built, as cntk.exe reads
    the block when the command runs), :meth:`name_nodes` gives the built network's nodes
    cntk.exe's names, which are not BrainScript identifiers.  ``text`` stays empty."""

    block: ConfigRecord | None = field(default=None, compare=False, repr=False)

    def description(self) -> str:
        """The BrainScript text of the network (one line: errors point at the block)."""
        return _describe(self.block)[0]

    def parse(self):
        from ._parser import parse_expression
        return parse_expression(self.description(), self.path, line=self.line,
                                 column=self.column)

    def name_nodes(self, network: Any) -> None:
        """Rename the stand-in members of a network built from :meth:`parse`, and give it
        cntk.exe's nodes (``Network.cntk_nodes``): each member of the description is one node
        cntk.exe's builder makes, its inputs the members its expression names."""
        text, names = _describe(self.block)
        lines = [line.partition(" = ") for line in text[2:-2].split(" ; ")]
        lines = [(m, e) for m, _, e in lines if m not in _SPECIAL]
        members = {m: k for k, (m, _) in enumerate(lines)}
        cntk_nodes = []
        for member, expression in lines:
            var = network.nodes.get(member)
            inputs = [members[w] for w in _WORD.findall(expression) if w in members]
            trained = expression.startswith("Parameter (") and \
                bool(getattr(var, "need_grad", False))
            cntk_nodes.append((var, inputs, trained))
        network.cntk_nodes = None if any(v is None for v, _, _ in cntk_nodes) else cntk_nodes
        network.nodes = {names.get(k, k): v for k, v in network.nodes.items()}


def simple_network_source(block: Any, loc: Any = None) -> SimpleNetworkSource:
    """The description of a ``SimpleNetworkBuilder`` value (a config block)."""
    where = getattr(block, "loc", None) or loc
    if not isinstance(block, ConfigRecord):
        raise _err("SimpleNetworkBuilder must be a block: SimpleNetworkBuilder = [ layerSizes "
                   "= ... ]", where)
    return SimpleNetworkSource("", getattr(where, "path", None), getattr(where, "line", 1),
                               getattr(where, "column", 1), block=block)


# ---------------------------------------------------------------------------------------------
# reading the block
# ---------------------------------------------------------------------------------------------
def _loc(rec: ConfigRecord, key: str):
    """Where ``key`` is written: in the block or the nearest block around it."""
    owner: ConfigRecord | None = rec
    while owner is not None and key not in owner:
        owner = owner.parent
    return rec.loc if owner is None else owner.location(key)


def _names(rec: ConfigRecord, key: str, default: str) -> list[str]:
    value = rec.lookup(key, None)
    if value is None:
        return [default]
    items = value if isinstance(value, ConfigList) else [value]
    return [part.strip() for item in items for part in str(item).split(":")] or [""]


def _choice(rec: ConfigRecord, key: str, allowed: tuple[str, ...]) -> str:
    if rec.lookup(key, None) is None:
        raise _err(f"SimpleNetworkBuilder needs '{key}' ({', '.join(allowed[:3])}, ...)",
                   rec.loc)
    value = str(rec.get_str(key, inherited=True)).strip()
    for name in allowed:
        if value.lower() == name.lower():
            return name
    raise _err(f"SimpleNetworkBuilder: {key} '{value}' is not one of {', '.join(allowed)}",
               _loc(rec, key))


def _kind(rec: ConfigRecord) -> str:
    types = _names(rec, "rnnType", "SIMPLENET")
    for name, what in _KINDS:
        if name in types:
            if name in ("SIMPLENET", "LSTM", "CLASSLM", "CLASSLSTM"):
                return name
            raise _err(f"SimpleNetworkBuilder: rnnType '{name}' (cntk.exe's {what} network) is "
                       "not supported by Stadyn; the feed-forward (rnnType SIMPLENET, the "
                       "default), LSTM (LSTM) and class-based recurrent (CLASSLM) and LSTM "
                       "(CLASSLSTM) networks are, or write the network in BrainScript "
                       "(BrainScriptNetworkBuilder)", _loc(rec, "rnnType"))
    raise _err(f"SimpleNetworkBuilder: unknown rnnType '{types[0]}' (cntk.exe's are "
               f"{', '.join(n for n, _ in _KINDS)})", _loc(rec, "rnnType"))


# ---------------------------------------------------------------------------------------------
# the description
# ---------------------------------------------------------------------------------------------
def _describe(rec: ConfigRecord) -> tuple[str, dict[str, str]]:
    """BrainScript for the network and the names of its stand-in members."""
    kind = _kind(rec)
    if kind == "CLASSLSTM":
        return _describe_class_lstm(rec)
    if kind == "CLASSLM":
        return _describe_class_rnn(rec)
    if kind == "LSTM":
        return _describe_lstm(rec)
    return _describe_ffdnn(rec)


def _layer_sizes(rec: ConfigRecord) -> list[int]:
    sizes = rec.get_ints("layerSizes", [100], inherited=True)
    if len(sizes) < 2:
        raise _err("SimpleNetworkBuilder: layerSizes needs at least two layers (one input and "
                   "one output), e.g. layerSizes = 363:512:132",
                   _loc(rec, "layerSizes") if rec.lookup("layerSizes", None) is not None
                   else rec.loc)
    for size in sizes:
        if size < 1:
            raise _err(f"SimpleNetworkBuilder: layer sizes must be >= 1, got {size}",
                       _loc(rec, "layerSizes"))
    return sizes


def _settings(rec: ConfigRecord) -> dict[str, Any]:
    """The keys every kind reads (Init: cntk.exe's defaults)."""
    return {"scale": rec.get_float("initValueScale", 1.0, inherited=True),
            "init": "uniform" if rec.get_bool("uniformInit", True, inherited=True)
            else "gaussian",
            "mvn": rec.get_bool("applyMeanVarNorm", False, inherited=True),
            "prior": rec.get_bool("needPrior", False, inherited=True),
            "dropout": rec.get_bool("addDropoutNodes", False, inherited=True)}


def _describe_ffdnn(rec: ConfigRecord) -> tuple[str, dict[str, str]]:
    """BuildFFDNNFromDescription."""
    sizes = _layer_sizes(rec)
    training = _choice(rec, "trainingCriterion", _TRAINING)
    evaluation = _choice(rec, "evalCriterion", _EVALUATION)
    if training != "crossEntropyWithSoftmax":
        raise _err(f"SimpleNetworkBuilder: trainingCriterion '{training}' is not supported by "
                   "Stadyn (crossEntropyWithSoftmax is"
                   + ("; cntk.exe builds the class-based and NCE criteria only for the "
                      "recurrent rnnTypes)" if training in (
                          "classCrossEntropyWithSoftmax", "noiseContrastiveEstimation")
                      else ")"), _loc(rec, "trainingCriterion"))
    if evaluation not in ("classificationError", "errorPrediction", "crossEntropyWithSoftmax"):
        raise _err(f"SimpleNetworkBuilder: evalCriterion '{evaluation}' is not supported by "
                   "Stadyn (classificationError and crossEntropyWithSoftmax are)",
                   _loc(rec, "evalCriterion"))
    activations = _names(rec, "layerTypes", "Sigmoid")
    for name in activations[:len(sizes) - 2]:
        if name not in _ACTIVATIONS:
            raise _err(f"SimpleNetworkBuilder: layerTypes '{name}' is not one of cntk.exe's "
                       "Sigmoid, RectifiedLinear, Tanh, None", _loc(rec, "layerTypes"))
    settings = _settings(rec)
    scale, init, mvn = settings["scale"], settings["init"], settings["mvn"]
    prior, dropout = settings["prior"], settings["dropout"]

    lines: list[str] = []
    names: dict[str, str] = {}

    def stand_in(name: str) -> str:
        member = f"{_PREFIX}{len(names)}"
        names[member] = name
        return member

    lines.append(f"features = Input {{{sizes[0]}}}")
    x = "features"
    if mvn:
        lines += ["MeanOfFeatures = Mean (features)", "InvStdOfFeatures = InvStdDev (features)",
                  "MVNormalizedFeatures = PerDimMeanVarNormalization (features, MeanOfFeatures,"
                  " InvStdOfFeatures)"]
        x = "MVNormalizedFeatures"
    hidden = len(sizes) - 2
    for i in range(hidden + 1):
        w, b = f"W{i}", f"B{i}"
        lines.append(f"{w} = Parameter ({sizes[i + 1]}, {sizes[i]}, init = '{init}', "
                     f"initValueScale = {scale!r}, randomSeed = {i + 1})")
        lines.append(f"{b} = Parameter ({sizes[i + 1]}, 1, init = 'fixedValue', value = 0)")
        # cntk.exe's names: W0*features, then W<i>*H<i>; the last one W<n>*H<n-1> (so W2*H1
        # for the product with H2, and W0*H-1 without hidden layers)
        previous = f"H{i - 1}" if i == hidden else "features" if i == 0 else f"H{i}"
        times = stand_in(f"{w}*{previous}")
        lines.append(f"{times} = Times ({w}, {x})")
        if i == hidden:
            lines.append(f"HLast = Plus ({times}, {b})")
            break
        h = f"H{i + 1}"
        activation = _ACTIVATIONS[activations[min(i, len(activations) - 1)]]
        if activation is None:                 # a linear layer: the sum is named H<i+1>
            lines.append(f"{h} = Plus ({times}, {b})")
        else:
            plus = stand_in(f"{w}*{previous}+{b}")
            lines.append(f"{plus} = Plus ({times}, {b})")
            lines.append(f"{h} = {activation} ({plus})")
        x = h
        if dropout:
            lines.append(f"Drop{h} = Dropout ({h})")
            x = f"Drop{h}"
    lines.append(f"labels = Input {{{sizes[-1]}}}")
    criterion = stand_in("CrossEntropyWithSoftmax")
    lines.append(f"{criterion} = CrossEntropyWithSoftmax (labels, HLast)")
    evaluations = criterion
    if evaluation != "crossEntropyWithSoftmax":
        lines.append("EvalClassificationError = ClassificationError (labels, HLast)")
        evaluations = "EvalClassificationError"
    output = "HLast"
    if prior:
        lines += ["Prior = Mean (labels)", "LogOfPrior = Log (Prior)",
                  "ScaledLogLikelihood = Minus (HLast, LogOfPrior)"]
        output = "ScaledLogLikelihood"
    lines += ["PosteriorProb = Softmax (HLast)", "featureNodes = (features)",
              "labelNodes = (labels)", f"criterionNodes = ({criterion})",
              f"evaluationNodes = ({evaluations})", f"outputNodes = ({output})"]
    return "{ " + " ; ".join(lines) + " }", names


# ---------------------------------------------------------------------------------------------
# rnnType = CLASSLSTM: BuildClassLSTMNetworkFromDescription
# ---------------------------------------------------------------------------------------------
class _Nodes:
    """The members of a generated description: each node a stand-in member named as cntk.exe
    names it, the unnamed ones ``AutoName<n>`` numbered in the order cntk.exe makes them."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, str] = {}
        self.unnamed = 0

    def reserve(self, name: str | None = None) -> str:
        """The member for a node named ``name`` (the next ``AutoName<n>`` if None): the name
        itself where it is an identifier (so a parameter is registered under it)."""
        if name is None:
            self.unnamed += 1
            name = f"AutoName{self.unnamed}"
        if name.isidentifier():
            return name
        member = f"{_PREFIX}{len(self.names)}"
        self.names[member] = name
        return member

    def define(self, member: str, expression: str) -> str:
        self.lines.append(f"{member} = {expression}")
        return member

    def __call__(self, expression: str, name: str | None = None) -> str:
        return self.define(self.reserve(name), expression)


def _class_based(rec: ConfigRecord, kind: str, refused: tuple[str, ...]):
    """What the class-based kinds share: their criteria (both class-based, so one node), the
    keys Stadyn refuses for them, the number of classes, and the weight and bias makers
    (cntk.exe's seeds counting from 1)."""
    for key, value in (("trainingCriterion", _choice(rec, "trainingCriterion", _TRAINING)),
                       ("evalCriterion", _choice(rec, "evalCriterion", _EVALUATION))):
        if value != "classCrossEntropyWithSoftmax":
            raise _err(f"SimpleNetworkBuilder: {key} '{value}' is not supported by Stadyn for "
                       f"rnnType {kind} (classCrossEntropyWithSoftmax is)", _loc(rec, key))
    for key in refused:
        if rec.get_bool(key, False, inherited=True):
            raise _err(f"SimpleNetworkBuilder: {key} = true is not supported by Stadyn for "
                       f"rnnType {kind}", _loc(rec, key))
    classes = rec.get_int("nbrClass", -1, inherited=True)
    if classes < 1:
        raise _err(f"SimpleNetworkBuilder: rnnType {kind} needs nbrClass (the number of word "
                   "classes)", rec.loc)
    return (classes, *_makers(rec))


def _makers(rec: ConfigRecord):
    """The nodes of a generated description and its weight and bias makers (cntk.exe's seeds
    counting from 1 in the order made)."""
    settings = _settings(rec)
    init, scale = settings["init"], settings["scale"]
    nodes, seed = _Nodes(), iter(range(1, 1 << 30))

    def weight(name: str, rows: int, cols: int) -> str:
        return nodes(f"Parameter ({rows}, {cols}, init = '{init}', initValueScale = {scale!r}, "
                     f"randomSeed = {next(seed)})", name)

    def bias(name: str, rows: int, value: float) -> str:
        return nodes(f"Parameter ({rows}, 1, init = 'fixedValue', value = {value!r})", name)

    return nodes, weight, bias


def _class_output(nodes: _Nodes, weight, sizes: list[int], classes: int, features: str,
                  x: str) -> tuple[str, str]:
    """The output layer of the class-based kinds: ``W<n>`` [hidden x vocabulary], ``labels``
    (4 rows), ``WeightForClassPostProb``, ``ClassPostProb`` and the criterion."""
    hidden = len(sizes) - 2
    w = weight(f"W{hidden}", sizes[hidden], sizes[-1])
    labels = nodes("Input {4}", "labels")
    class_weight = weight("WeightForClassPostProb", classes, sizes[hidden])
    class_scores = nodes(f"Times ({class_weight}, {x})", "ClassPostProb")
    criterion = nodes(f"ClassBasedCrossEntropyWithSoftmax ({labels}, {x}, {w}, {class_scores})",
                      "TrainNodeClassBasedCrossEntropy")
    nodes.lines += [f"featureNodes = ({features})", f"labelNodes = ({labels})",
                    f"criterionNodes = ({criterion})", f"evaluationNodes = ({criterion})"]
    return w, criterion


def _describe_class_rnn(rec: ConfigRecord) -> tuple[str, dict[str, str]]:
    """BuildClassEntropyRNNFromDescription (rnnType CLASSLM): sigmoid layers, those listed
    in ``recurrentLayer`` (1-based) with ``W<i> * PastValue`` of their own output."""
    sizes = _layer_sizes(rec)
    classes, nodes, weight, bias = _class_based(rec, "CLASSLM", (
        "addDropoutNodes", "applyMeanVarNorm", "needPrior"))
    if rec.get_int("vocabSize", -1, inherited=True) != sizes[-1]:
        raise _err("SimpleNetworkBuilder: rnnType CLASSLM needs vocabSize, the same as the "
                   "output layer's size (the last of layerSizes)", _loc(rec, "vocabSize")
                   if rec.lookup("vocabSize", None) is not None else rec.loc)
    recurrent = rec.get_ints("recurrentLayer", [], inherited=True)
    hidden_activity = rec.get_float("defaultHiddenActivity", 0.1, inherited=True)
    activations = _names(rec, "layerTypes", "Sigmoid")
    if activations[0] not in _ACTIVATIONS:
        raise _err(f"SimpleNetworkBuilder: layerTypes '{activations[0]}' is not one of "
                   "cntk.exe's Sigmoid, RectifiedLinear, Tanh, None", _loc(rec, "layerTypes"))
    activation = _ACTIVATIONS[activations[0]]    # cntk.exe applies the first to every layer
    features = nodes(f"SparseInput {{{sizes[0]}}}", "features")
    x, hidden, done = features, len(sizes) - 2, 0
    for i in range(hidden):
        u = weight(f"U{i}", sizes[i + 1], sizes[i])
        if done < len(recurrent) and recurrent[done] == i + 1:
            w = weight(f"W{i}", sizes[i + 1], sizes[i + 1])
            past = nodes.reserve()
            # Times (W, past) is made (numbered) first: cntk.exe's compiler evaluated a call's
            # arguments right to left
            recurrence = nodes(f"Times ({w}, {past})")
            total = nodes(f"Plus ({nodes(f'Times ({u}, {x})')}, {recurrence})")
            x = nodes(f"{activation} ({total})") if activation else total
            nodes.define(past, f"PastValue ({sizes[i + 1]}, {x}, defaultHiddenActivation = "
                               f"{hidden_activity!r})")
            done += 1
        elif i == 0:
            b = weight("B0", sizes[1], 1)
            total = nodes(f"Plus ({nodes(f'Times ({u}, {x})')}, {b})")
            x = nodes(f"{activation} ({total})") if activation else total
        else:     # cntk.exe adds B0 here (its bug): only the first layer may be feed-forward
            raise _err(f"SimpleNetworkBuilder: rnnType CLASSLM: hidden layer {i + 1} is not in "
                       "recurrentLayer; Stadyn builds only recurrent layers after the first",
                       _loc(rec, "recurrentLayer") if recurrent else rec.loc)
    _, criterion = _class_output(nodes, weight, sizes, classes, features, x)
    nodes.lines.append(f"outputNodes = ({criterion})")
    return "{ " + " ; ".join(nodes.lines) + " }", nodes.names


def _describe_class_lstm(rec: ConfigRecord) -> tuple[str, dict[str, str]]:
    """BuildClassLSTMNetworkFromDescription (rnnType CLASSLSTM)."""
    sizes = _layer_sizes(rec)
    classes, nodes, weight, bias = _class_based(rec, "CLASSLSTM", (
        "addDropoutNodes", "applyMeanVarNorm", "constInputGateValue", "constForgetGateValue",
        "constOutputGateValue"))
    order = rec.get_int("lookupTableOrder", 0, inherited=True)
    if order != 1:
        raise _err(f"SimpleNetworkBuilder: lookupTableOrder {order} is not supported by Stadyn "
                   "for rnnType CLASSLSTM (1 is: a LookupTable of one word; cntk.exe needs one)",
                   _loc(rec, "lookupTableOrder") if rec.lookup("lookupTableOrder", None)
                   is not None else rec.loc)
    if len(sizes) < 4:
        raise _err("SimpleNetworkBuilder: rnnType CLASSLSTM needs layerSizes = vocabulary : "
                   "embedding : LSTM ... : vocabulary", _loc(rec, "layerSizes"))
    lstm_settings = _lstm_settings(rec, "CLASSLSTM")
    features = nodes(f"SparseInput {{{sizes[0]}}}", "features")
    embedding = weight("E0", sizes[1], sizes[0])
    x = nodes(f"Times ({embedding}, {features})", "LookupTable")
    hidden = len(sizes) - 2
    for layer in [0] + list(range(2, hidden)):
        n_in, n_out = (sizes[1], sizes[2]) if layer == 0 else (sizes[layer], sizes[layer + 1])
        x = _lstm(nodes, weight, bias, layer, n_in, n_out, x, *lstm_settings)
    w, _ = _class_output(nodes, weight, sizes, classes, features, x)
    outputs = nodes(f"TransposeTimes ({w}, {x})", "outputs")
    nodes(f"Softmax ({outputs})", "PosteriorProb")
    nodes.lines.append(f"outputNodes = ({outputs})")
    return "{ " + " ; ".join(nodes.lines) + " }", nodes.names


def _lstm_settings(rec: ConfigRecord, kind: str) -> tuple[float, dict[str, float], str]:
    """BuildLSTMComponent's keys: the states' start, the gates' bias values and function."""
    hidden_activity = rec.get_float("defaultHiddenActivity", 0.1, inherited=True)
    gates = {g: rec.get_float(f"{g}GateInitVal", -1.0, inherited=True)
             for g in ("input", "forget", "output")}
    gate_type = _names(rec, "layerTypes", "Sigmoid")[0]   # BuildLSTMComponent's gates: layer 0's
    if _ACTIVATIONS.get(gate_type) is None:
        raise _err(f"SimpleNetworkBuilder: rnnType {kind}'s gates take layerTypes' first, "
                   f"'{gate_type}': Stadyn builds them with Sigmoid, RectifiedLinear or Tanh "
                   "(cntk.exe's None builds another LSTM)", _loc(rec, "layerTypes"))
    return hidden_activity, gates, _ACTIVATIONS[gate_type]


def _describe_lstm(rec: ConfigRecord) -> tuple[str, dict[str, str]]:
    """BuildLSTMNetworkFromDescription (rnnType LSTM): ``features``, a ``LookupTable`` of
    ``lookupTableOrder`` words (if > 0; E0 [embedding x vocabulary/order]), an LSTM for layer 0
    and each later layer listed in ``recurrentLayer`` (the others ``layerTypes``' function of
    ``U<i> * x + B<i>``), ``W<n>``, and the criterion on ``W<n> *
    h`` (the feed-forward kind's criteria), ``outputs = W<n> * h`` and ``PosteriorProb``."""
    sizes = _layer_sizes(rec)
    training = _choice(rec, "trainingCriterion", _TRAINING)
    evaluation = _choice(rec, "evalCriterion", _EVALUATION)
    if training != "crossEntropyWithSoftmax" or evaluation not in (
            "crossEntropyWithSoftmax", "classificationError", "errorPrediction"):
        raise _err("SimpleNetworkBuilder: rnnType LSTM: Stadyn builds trainingCriterion "
                   "crossEntropyWithSoftmax with evalCriterion crossEntropyWithSoftmax or "
                   "classificationError", _loc(rec, "trainingCriterion"))
    for key in ("addDropoutNodes", "applyMeanVarNorm", "needPrior"):
        if rec.get_bool(key, False, inherited=True):
            raise _err(f"SimpleNetworkBuilder: {key} = true is not supported by Stadyn for "
                       "rnnType LSTM", _loc(rec, key))
    if len(sizes) < 3:
        raise _err("SimpleNetworkBuilder: rnnType LSTM needs a hidden layer", _loc(
            rec, "layerSizes"))
    nodes, weight, bias = _makers(rec)
    lstm_settings = _lstm_settings(rec, "LSTM")
    order = rec.get_int("lookupTableOrder", 0, inherited=True)
    recurrent = rec.get_ints("recurrentLayer", [], inherited=True)
    sparse = rec.get_bool("sparseInput", False, inherited=True)
    features = nodes(f"{'SparseInput' if sparse else 'Input'} {{{sizes[0]}}}", "features")
    x, offset = features, 0
    if order > 0:
        if sizes[0] % order:
            raise _err(f"SimpleNetworkBuilder: lookupTableOrder {order} does not divide the "
                       f"input's {sizes[0]} rows", _loc(rec, "lookupTableOrder"))
        vocab = sizes[0] // order
        embedding = weight("E0", sizes[1], vocab)
        x = nodes(f"Times ({embedding}, {features})" if order == 1 else
                  f"Reshape (Times ({embedding}, Reshape ({features}, {vocab}:{order})), "
                  f"{sizes[1] * order})", "LookupTable")
        offset = 1
    hidden = len(sizes) - 2
    x = _lstm(nodes, weight, bias, 0, sizes[offset] * max(order, 1) if offset else sizes[0],
              sizes[offset + 1], x, *lstm_settings)
    activations = _names(rec, "layerTypes", "Sigmoid")
    done = 0
    for i in range(1 + offset, hidden):
        if done < len(recurrent) and recurrent[done] == i:
            x = _lstm(nodes, weight, bias, i, sizes[i], sizes[i + 1], x, *lstm_settings)
            done += 1
            continue
        # a layer not in recurrentLayer: U<i> * x + B<i> through layerTypes' function of the
        # layer (SimpleNetworkBuilder.cpp:1280-1286, ApplyNonlinearFunction(..., i))
        name = activations[min(i, len(activations) - 1)]
        if name not in _ACTIVATIONS:
            raise _err(f"SimpleNetworkBuilder: layerTypes '{name}' is not one of cntk.exe's "
                       "Sigmoid, RectifiedLinear, Tanh, None", _loc(rec, "layerTypes"))
        u = weight(f"U{i}", sizes[i + 1], sizes[i])
        b = bias(f"B{i}", sizes[i + 1], 0.0)
        x = nodes(f"Plus ({nodes(f'Times ({u}, {x})')}, {b})")
        if _ACTIVATIONS[name] is not None:
            x = nodes(f"{_ACTIVATIONS[name]} ({x})")
    w = weight(f"W{hidden}", sizes[hidden + 1], sizes[hidden])
    labels = nodes(f"Input {{{sizes[-1]}}}", "labels")
    z = nodes(f"Times ({w}, {x})")
    criterion = f"{_PREFIX}{len(nodes.names)}"      # its name is the function's: a stand-in
    nodes.names[criterion] = "CrossEntropyWithSoftmax"
    nodes.define(criterion, f"CrossEntropyWithSoftmax ({labels}, {z})")
    evaluations = criterion
    if evaluation != "crossEntropyWithSoftmax":
        evaluations = nodes(f"ClassificationError ({labels}, {z})", "EvalClassificationError")
    outputs = nodes(f"Times ({w}, {x})", "outputs")
    nodes(f"Softmax ({outputs})", "PosteriorProb")
    nodes.lines += [f"featureNodes = ({features})", f"labelNodes = ({labels})",
                    f"criterionNodes = ({criterion})", f"evaluationNodes = ({evaluations})",
                    f"outputNodes = ({outputs})"]
    return "{ " + " ; ".join(nodes.lines) + " }", nodes.names


def _lstm(nodes: _Nodes, weight, bias, layer: int, n_in: int, n_out: int, x: str,
          hidden_activity: float, gates: dict[str, float], gate_function: str) -> str:
    """BuildLSTMComponent: an LSTM with peepholes whose nodes are made, and numbered, as
    cntk.exe makes them (the arguments of a call right to left, as its compiler did: its
    logs name them so); its gates apply ``gate_function`` (``ApplyNonlinearFunction(..., 0)``:
    layerTypes' first, Sigmoid by default)."""
    w = {g: weight(f"WX{g}{layer}", n_out, n_in) for g in "OIFC"}
    b = {"o": bias(f"bo{layer}", n_out, gates["output"]), "c": bias(f"bc{layer}", n_out, 0.0),
         "i": bias(f"bi{layer}", n_out, gates["input"]),
         "f": bias(f"bf{layer}", n_out, gates["forget"])}
    h = {}
    for g in ("I", "F", "O"):
        h[g] = weight(f"WH{g}{layer}", n_out, n_out)
        h["c" + g] = weight(f"WC{g}{layer}", n_out, 1)
    h["C"] = weight(f"WHC{layer}", n_out, n_out)
    # the delays: of the output for the gates' and the cell input's H, of the cell for C
    past = {k: nodes.reserve() for k in ("HI", "HF", "HO", "HC", "CI", "CF", "CC")}

    def gate(g: str, cell: str) -> str:     # f (Wx x + b + Wh h(t-1) + Diag (Wc) c)
        peephole = nodes(f"DiagTimes ({h['c' + g]}, {cell})")
        recurrent = nodes(f"Times ({h[g]}, {past['H' + g]})")
        term = nodes(f"Times ({w[g]}, {x})")
        term = nodes(f"Plus ({term}, {b[g.lower()]})")
        total = nodes(f"Plus ({term}, {recurrent})")
        return nodes(f"{gate_function} ({nodes(f'Plus ({total}, {peephole})')})")

    it = gate("I", past["CI"])
    recurrent = nodes(f"Times ({h['C']}, {past['HC']})")
    recurrent = nodes(f"Plus ({recurrent}, {b['c']})")
    term = nodes(f"Times ({w['C']}, {x})")
    cell_input = nodes(f"Tanh ({nodes(f'Plus ({term}, {recurrent})')})")
    bit = nodes(f"ElementTimes ({it}, {cell_input})")
    ft = gate("F", past["CF"])
    kept = nodes(f"ElementTimes ({ft}, {past['CC']})")
    ct = nodes(f"Plus ({kept}, {bit})")
    ot = gate("O", ct)
    output = nodes(f"ElementTimes ({ot}, {nodes(f'Tanh ({ct})')})")
    for key, member in past.items():
        nodes.define(member, f"PastValue ({n_out}, {output if key[0] == 'H' else ct}, "
                             f"defaultHiddenActivation = {hidden_activity!r})")
    return output
