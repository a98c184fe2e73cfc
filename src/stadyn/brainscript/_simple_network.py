"""cntk.exe's ``SimpleNetworkBuilder``: the standard feed-forward network a config describes by
a few keys (``layerSizes = 363:512:512:132``, ``trainingCriterion``, ``evalCriterion``,
``layerTypes``, ``initValueScale``, ``uniformInit``, ``applyMeanVarNorm``, ``needPrior``,
``addDropoutNodes``).

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

The recurrent and class-based kinds (``rnnType`` other than ``SIMPLENET``) and the criteria
Stadyn has no node for (``squareError``, ``logistic``, ...) are refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._block_values import _err
from ._config import BrainScriptSource, ConfigList, ConfigRecord

__all__ = ["SimpleNetworkSource", "simple_network_source", "network_of_block"]

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
        """Rename the stand-in members of a network built from :meth:`parse`."""
        names = _describe(self.block)[1]
        network.nodes = {names.get(k, k): v for k, v in network.nodes.items()}


def simple_network_source(block: Any, loc: Any = None) -> SimpleNetworkSource:
    """The description of a ``SimpleNetworkBuilder`` value (a config block)."""
    where = getattr(block, "loc", None) or loc
    if not isinstance(block, ConfigRecord):
        raise _err("SimpleNetworkBuilder must be a block: SimpleNetworkBuilder = [ layerSizes "
                   "= ... ]", where)
    return SimpleNetworkSource("", getattr(where, "path", None), getattr(where, "line", 1),
                               getattr(where, "column", 1), block=block)


def network_of_block(block: ConfigRecord) -> BrainScriptSource:
    """The network a command block builds itself: its ``SimpleNetworkBuilder`` (cntk.exe
    looks for it first), else its ``BrainScriptNetworkBuilder``."""
    if "SimpleNetworkBuilder" in block:
        return simple_network_source(block["SimpleNetworkBuilder"], block.loc)
    return block["BrainScriptNetworkBuilder"]


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


def _kind(rec: ConfigRecord) -> None:
    types = _names(rec, "rnnType", "SIMPLENET")
    for name, what in _KINDS:
        if name in types:
            if name == "SIMPLENET":
                return
            raise _err(f"SimpleNetworkBuilder: rnnType '{name}' (cntk.exe's {what} network) is "
                       "not supported by Stadyn; the feed-forward network (rnnType SIMPLENET, "
                       "the default) is, or write the network in BrainScript "
                       "(BrainScriptNetworkBuilder)", _loc(rec, "rnnType"))
    raise _err(f"SimpleNetworkBuilder: unknown rnnType '{types[0]}' (cntk.exe's are "
               f"{', '.join(n for n, _ in _KINDS)})", _loc(rec, "rnnType"))


# ---------------------------------------------------------------------------------------------
# the description
# ---------------------------------------------------------------------------------------------
def _describe(rec: ConfigRecord) -> tuple[str, dict[str, str]]:
    """BrainScript for BuildFFDNNFromDescription and the names of its stand-in members."""
    _kind(rec)
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
    scale = rec.get_float("initValueScale", 1.0, inherited=True)
    init = "uniform" if rec.get_bool("uniformInit", True, inherited=True) else "gaussian"
    mvn = rec.get_bool("applyMeanVarNorm", False, inherited=True)
    prior = rec.get_bool("needPrior", False, inherited=True)
    dropout = rec.get_bool("addDropoutNodes", False, inherited=True)

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
