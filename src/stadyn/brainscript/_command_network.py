"""The network a command builds from its ``BrainScriptNetworkBuilder`` and the reader that feeds
its inputs: :class:`CommandNetwork` (a network built with :class:`StadynLibrary`, with name
lookups; :meth:`CommandNetwork.input_source` makes the reader the source of the network's
inputs, :class:`._input_source.InputSource`) and :class:`Validation` (a train command's
``cvReader`` set after each epoch).  Used by the runner (:mod:`._runner`) and the ``write``
action (:mod:`._write`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


from .. import functions as F
from .. import io
from .._errors import ConfigError
from ..graph import Variable, topological_nodes
from ..parametric import current_registry, get_parameters
from ..train import evaluate_sums
from ._accumulators import EpochAccumulators, counted_once, holds_accumulated_result
from ._blocks import CommandConfig, per_epoch
from ._bptt_source import TruncatedSequenceSource
from ._build import build_network
from ._cntk_log import CNTKLog, results_line, validation_line
from ._config import BrainScriptSource, ConfigRecord
from ._model_files import inputs_tag, multiplier_tags, operation_tag
from ._ndl import NDLSource
from ._network import Network
from ._input_source import InputSource
from ._network_library import reached_ids
from ._precompute_library import PreComputeNode
from ._reader_blocks import ReaderConfig
from ._readers import make_source
from ._simple_network import SimpleNetworkSource
from ._stadyn_library import StadynLibrary
from ._state_carry import StateCarry, whole_sequences_instead

__all__ = ["CommandNetwork", "SharedMinibatches", "Validation", "criterion_total", "loc_of",
           "node_inputs", "record_loc"]


class CommandNetwork:
    """A network built from BrainScript in the current parameter registry, with name lookups;
    ``sequence_inputs``: the streams the readers feed sequences of several steps (Inputs of
    those names are sequences: :class:`StadynLibrary`)."""

    def __init__(self, source: BrainScriptSource, dropout_rate: float,
                 sequence_inputs: Iterable[str] = ()):
        self.library = StadynLibrary(dropout_rate, sequence_inputs=sequence_inputs)
        self.net = build_network(source, self.library)
        self.source = source
        tagged = self.library.tagged
        self.criterion_nodes = self.net.criterion_nodes or tagged["criterion"]
        self.evaluation_nodes = self.net.evaluation_nodes or tagged["evaluation"]
        self.output_nodes = self.net.output_nodes or tagged["output"]
        # pre-computed values renamed to cntk.exe's names (and NDL's unnamed<n> parameters,
        # Network.older_names): new name -> the name an older Stadyn saved them under
        # (mean/value, anonymous_1/W, ...), for the model files it wrote
        self.precompute_aliases: dict[str, str | tuple[str, ...]] = dict(self.net.older_names)
        self._owner_map: dict[int, str] | None = None
        self._name_precomputed()

    # -- pre-computed nodes -----------------------------------------------------------------
    def precompute_name(self, node: PreComputeNode, alone: str | None = None) -> str:
        """cntk.exe's name of a pre-computed node (its log's and model file's): its member
        name, else (made inside ``MeanVarNorm`` or ``LogPrior``) the member that holds it, dot,
        the name in CNTK's definition (``featNorm.mean``; for a copy ``CloneFunction`` or
        ``Edit`` made: the original's name, else ``alone``)."""
        name = self.net.name_of(node.value)
        if name is not None:
            return name
        if node.original is None and node.member and node.path:
            return f"{node.path}.{node.member}"    # (BrainScriptEvaluator.cpp's paths)
        owner = self._owners().get(id(node.value))
        if owner is not None:
            original = node.original
            inner = node.member or node.operation if original is None else \
                self.precompute_name(original, original.member or original.operation)
            return f"{owner}.{inner}"
        return node.name if alone is None else alone

    def _owners(self) -> dict[int, str]:
        """The first computed named node (in ``net.nodes``' order) whose graph reaches each
        Variable (:func:`reached_ids`' rule), in one walk of the network: a function node an
        earlier owner's walk visited is not walked again (all it reaches is that owner's)."""
        if self._owner_map is None:
            owners: dict[int, str] = {}
            visited: set[int] = set()
            for name, value in self.net.nodes.items():
                if not isinstance(value, Variable) or value.parent is None:
                    continue
                owners.setdefault(id(value), name)
                stack = [value.parent]
                while stack:
                    fn = stack.pop()
                    if id(fn) in visited:
                        continue
                    visited.add(id(fn))
                    for v in (*fn.inputs, *fn.outputs):
                        if v is not None:
                            owners.setdefault(id(v), name)
                    stack.extend(v.parent for v in fn.inputs
                                 if v is not None and v.parent is not None)
            self._owner_map = owners
        return self._owner_map

    def _name_precomputed(self) -> None:
        """Register the values of the pre-computed nodes made for this network (made under
        their expression paths, ``z.featNorm.mean``) under cntk.exe's names
        (:meth:`precompute_name`: a member's own name where one holds the node), and remember
        the names older Stadyns gave them (``mean/value`` ...) to read their model files; one
        whose name another parameter has (or another pre-computed node took first) keeps the
        name it was made under."""
        registry = current_registry()
        claimed: set[str] = set()   # the owner-based names 01cf9a0 gave, first come
        # the renames, made at once at the end (one by one, each rebuilds the registry's
        # order: quadratic in the parameters); ``moved``: the names they free or take, each
        # -> its value then (None: freed), read before the registry's own
        renames: list[tuple[str, str]] = []
        moved: dict = {}

        def holding(name: str):
            return moved[name] if name in moved else registry.get(name)

        for node in self.library.precompute_nodes:
            if node.older_name is None or holding(node.name) is not node.value:
                continue            # (a loaded network's: its file's name)
            name = self.precompute_name(node)
            # the name the Stadyn before expression paths (01cf9a0) gave it: the first named
            # node reaching it, dot, its member (z.mean for z.x.x.mean), if no earlier value
            # had that name; else it kept mean_<n>/value
            owner = self._owners().get(id(node.value))
            before = None if owner is None or node.original is not None or \
                self.net.name_of(node.value) is not None else \
                f"{owner}.{node.member or node.operation}"
            if before in claimed:
                before = None
            elif before is not None:
                claimed.add(before)
            if name != node.name and holding(name) is None:
                renames.append((node.name, name))
                moved[node.name], moved[name] = None, node.value
                node.name = name
            if node.name != node.older_name:
                self.precompute_aliases[node.name] = node.older_name \
                    if before in (None, node.name) else (before, node.older_name)
        registry.rename_all(renames)

    def name(self, node: Variable) -> str:
        name = self.net.name_of(node)
        if name is None:
            raise ConfigError("a node of the network has no name (give it a member name, "
                              "e.g. ce = CrossEntropyWithSoftmax(...))", *loc_of(self.source))
        return name

    def node(self, name: str, where: tuple) -> Variable:
        node = self.net.nodes.get(name)
        if node is None:
            for key, value in self.net.nodes.items():
                if key.lower() == name.lower():
                    return value
            names = ", ".join(self.net.nodes)
            raise ConfigError(f"the network has no node '{name}' (its nodes: {names})", *where)
        return node

    def inputs_of(self, roots: Sequence[Variable]) -> list[tuple[str, Variable]]:
        """The ``Input`` nodes ``roots`` depend on, with their names."""
        reached = reached_ids(list(roots))
        return [(self.name(v), v) for v in self.library.inputs if id(v) in reached]

    def input_source(self, roots: Sequence[Variable], source: io.MinibatchSource,
                     reader_loc: tuple, command: str) -> InputSource:
        """The reader ``source`` as the source of the Inputs ``roots`` depend on, with the
        library's default-layout and one-sample Inputs (:class:`InputSource`)."""
        return InputSource(self.inputs_of(roots), source, reader_loc,
                           self.library.default_axis_inputs, command, self.library.framed_inputs)

    def accumulated(self, nodes: Sequence[Variable]) -> list[bool]:
        """Per node, whether it holds an accumulated result (computed from ``EpochAccumulator``
        nodes and in no recurrence loop: :func:`holds_accumulated_result`): logged as its value
        counted once, as cntk.exe."""
        return [holds_accumulated_result(n) for n in nodes]

    def nodes_with_gradient(self, criterion: Variable) -> int | None:
        """cntk.exe's "and M nodes with gradient" (SGD.cpp): the nodes the criterion is computed
        from (itself too) that are trained parameters or are computed from one; ``None`` where
        the network's nodes are not all named as cntk.exe's (BrainScript's) or some are in a
        loop (a recurrence Stadyn runs as one node); an NDL or SimpleNetworkBuilder network's
        from its nodes as cntk.exe made them (:meth:`Network.nodes_with_gradient`), loops
        included."""
        if self.net.cntk_nodes is None:     # a loaded network whose file lists the inputs
            self.net.cntk_nodes = _loaded_cntk_nodes(self.net, self.library)
        if self.net.cntk_nodes is not None:
            return self.net.nodes_with_gradient(criterion)
        if not isinstance(self.source, (NDLSource, SimpleNetworkSource)):
            return None
        trained = {id(v) for v in get_parameters().values() if v.need_grad}
        grad = set(trained)
        for n in topological_nodes([criterion]):
            if any(id(v) in grad for v in n.inputs if v is not None):
                grad.update(id(v) for v in n.outputs if v is not None)
        reached = reached_ids([criterion])
        named = [v for v in self.net.nodes.values() if isinstance(v, Variable)]
        if any(id(v) not in reached and v.parent is not None and v.parent.name == "recurrence"
               for v in named):
            return None     # a loop's nodes: Stadyn's graph of the criterion does not show them
        return len({id(v) for v in named} & grad & reached)

    def counted(self, node: Variable, roots: Sequence[Variable]) -> Variable:
        """The Variable whose samples a minibatch counts for the criterion ``node`` (cntk.exe's
        rule, ``CriterionAccumulator::GetNumSamples``): a criterion per sample (per step, per
        sequence) counts its own; one that is a single number for the minibatch (``SumElements``
        of a per-frame criterion: it has no MBLayout) counts the network's samples
        (``GetNumSamplesWithLabelOfNetwork``: the real steps of the default sequence axis).  In
        Stadyn that axis is the sequence axis of the inputs, or, where the network declares a
        ``DynamicAxis`` of its own, the batch axis of the inputs that are not on it (one sample
        a sequence); ``roots`` are the nodes trained or evaluated with ``node``, whose inputs
        are fed."""
        if self.library.has_batch_axis(node) or node.sequence_lengths is not None:
            return node
        fed = [v for _, v in self.inputs_of(list(roots))]
        plain = [v for v in fed if v.sequence_lengths is None]
        default = plain if plain and len(plain) < len(fed) else fed
        return default[0] if default else node

    def model_file_parts(self) -> tuple[dict[str, Variable], dict[str, Variable],
                                        dict[str, list[str]]]:
        """What the model file holds: every named node computed by the graph, the inputs
        (those the description names in its order, then the others as made), and the tags of
        the named nodes that are criterion, evaluation or output nodes (CNTK keeps a node's
        tag in its model file: ``BS.Network.Load`` gives them back)."""
        outputs = {name: v for name, v in self.net.nodes.items()
                   if isinstance(v, Variable) and v.parent is not None}
        inner = {name: v for name, v in self.net.inner_nodes.items()   # (cntk.exe's names of
                 if name not in outputs}                               # the functions' nodes)
        outputs.update(inner)
        inputs = [v for v in self.library.inputs     # a loaded network's unused inputs: out
                  if self.net.name_of(v) is not None or not self.library.is_loaded(v)]
        order = {id(v): k for k, v in enumerate(self.net.nodes.values())}
        inputs.sort(key=lambda v: order.get(id(v), len(order)))
        named = {id(v): name for name, v in outputs.items() if self.net.name_of(v) == name}
        inputs_by_name = {self.name(v): v for v in inputs}
        named.update((id(v), name) for name, v in inputs_by_name.items())
        tags: dict[str, list[str]] = {}
        reached = reached_ids(list(outputs.values()))
        for node in self.library.precompute_nodes:   # what a pre-computed node is computed
            if id(node.value) not in reached:       # from: its input, tagged (for a model
                continue                            # saved before the data pass: edit)
            key = named.get(id(node.input))
            if key is None:
                key = named[id(node.input)] = f"{node.name}$input"
                outputs[key] = node.input
            tags.setdefault(key, []).append(
                f"precompute:{node.operation}:{node.name}:{node.member or ''}")
            # cntk.exe's hasComputed, saved with the node (a real NaN from the data is a value)
            tags[key].append(f"hasComputed:{node.name}:{str(node.computed).lower()}")
        for tag, nodes in (("criterion", self.criterion_nodes),
                           ("evaluation", self.evaluation_nodes), ("output", self.output_nodes)):
            for name, v in list(outputs.items()):
                if any(v is n for n in nodes) and self.net.name_of(v) == name:
                    tags.setdefault(name, []).append(tag)
        for name, v in outputs.items():      # (what a network loaded from the file logs)
            operation = self.library.operation_of(v)
            if operation is not None and (self.net.name_of(v) == name or name in inner):
                tags.setdefault(name, []).append(operation_tag(operation))
        for name, links in node_inputs(self.net, self.library, outputs).items():
            tags.setdefault(name, []).append(inputs_tag(links))     # for MEL's SetInput
        rates = self.library.learning_rate_multipliers
        multiplier_tags(tags, outputs, {name: rates[id(v)][1]
                                        for name, v in get_parameters().items() if id(v) in rates})
        return outputs, inputs_by_name, tags

    def learnable(self, root: Variable) -> dict[str, Variable]:
        """The trainable parameters ``root`` depends on, by registry name."""
        leaves = {id(v) for n in topological_nodes([root]) for v in n.inputs if v.parent is None}
        return {k: v for k, v in get_parameters().items() if id(v) in leaves}


def _loaded_cntk_nodes(net: Network, library: Any) -> list[tuple[Any, list[int], bool]] | None:
    """cntk.exe's nodes (:attr:`Network.cntk_nodes`) of a network whose computed nodes all come
    from a model file that lists their inputs (an NDL network's or a MEL edit's, loaded), or
    None: its named nodes, inputs and parameters, each with its inputs' indices."""
    table: dict[str, Variable] = dict(current_registry().items())
    table.update((n, v) for n, v in net.nodes.items() if isinstance(v, Variable))
    links = {}
    for name, v in table.items():
        if v.parent is not None:
            links[name] = library.loaded_inputs(v)
            if links[name] is None or any(i not in table for i in links[name]):
                return None
    if not links:
        return None
    index = {name: k for k, name in enumerate(table)}
    return [(v, [index[i] for i in links.get(name, [])],
             v.parent is None and bool(getattr(v, "need_grad", False)))
            for name, v in table.items()]


def node_inputs(net: Network, library: Any, outputs: dict[str, Variable]) -> dict[str, list[str]]:
    """Each node of ``outputs``' inputs in cntk.exe's order, by name, where the network knows
    them: an NDL network's nodes (:attr:`Network.cntk_nodes`), a loaded network's nodes whose
    model file said (``BS.Network.Load``), a BrainScript function's node whose inputs all have
    names (:meth:`Library.made_inputs`): what MEL's ``SetInput (node, k, x)`` counts in."""
    links: dict[str, list[str]] = {}
    names: dict[int, str] = {}
    for name, v in [*net.nodes.items(), *net.inner_nodes.items()]:
        names.setdefault(id(v), name)
    for name, p in current_registry().items():
        names.setdefault(id(p), name)
    if net.cntk_nodes is not None:
        nodes = net.cntk_nodes
        for v, inputs, _ in nodes:
            name = names.get(id(v))
            found = [names.get(id(nodes[i][0])) for i in inputs]
            if name in outputs and outputs[name] is v and None not in found:
                links[name] = [str(f) for f in found]
    for name, v in outputs.items():
        known = library.loaded_inputs(v)
        if name not in links and known is not None:
            links[name] = known
        made = library.made_inputs(v)
        if name not in links and made is not None and all(id(i) in names for i in made):
            links[name] = [names[id(i)] for i in made]
    return links


def criterion_total(node: Variable) -> Variable:
    """A criterion's sum over a minibatch: over each sequence's real steps where it is per
    step (a padded step adds nothing), as the trainer sums its loss."""
    if node.sequence_lengths is not None:
        node = F.sequence_reduce_sum(node, node.sequence_lengths)
    return F.sum(node)


def loc_of(source: Any) -> tuple:
    loc = getattr(source, "loc", None)
    return () if loc is None else (loc.path, loc.line, loc.column)


def record_loc(record: ConfigRecord, key: str) -> tuple:
    try:
        loc = record.location(key)
    except KeyError:
        loc = record.loc
    return () if loc is None else (loc.path, loc.line, loc.column)


class Validation:
    """A train command's ``cvReader`` set, evaluated after each epoch as CNTK's SGD did: the
    criterion and evaluation nodes over one sweep, in minibatches of the epoch's training
    ``minibatchSize``, in the inference phase; it logs CNTK's ``Final Results: ...`` and
    ``Finished Epoch[...]: [Validate] ...`` lines and gives the averages.

    The reader is opened once (of the deserializers ``opened`` where given: those
    ``sequence_streams`` indexed) and set back to its start before each pass, as cntk.exe
    makes the cvReader once a train command (TrainActions.cpp:121-123) and starts each
    validation at its epoch 0 (SimpleEvaluator.h:99, ``StartMinibatchLoop (mbSize, 0, ...)``;
    BlockRandomizer.cpp:84-88, ``SetState`` at 0).  A randomized reader whose window left
    chunks behind in the pass before seeks before them, which shuffles the sweep's sequences
    anew with the seed 0 in place of ``randomizationSeed`` (SequenceRandomizer.cpp:281-288):
    the second and later passes give another order than the first where ``randomizationSeed``
    is not 0 (``make_source``'s ``set_back``).  :meth:`close` closes it.

    ``shares``: the number of workers of a data-parallel job that read the set distributed
    (cntk.exe's evaluator, SimpleEvaluator.h:96-97), 0 where they do not.  The sums are the
    whole set's (each minibatch's are aggregated over the workers, SimpleEvaluator.h:179-214),
    but every worker loops until an aggregated minibatch holds no sample, and counts that one
    too (SimpleEvaluator.h:124-126, 234-235): ``Final Results: Minibatch[1-M+1]``, M the most
    minibatches any worker's share gives (a randomized set's chunks or sequences of several
    lengths split unevenly: not the single-process count).  Rank 0 evaluates the whole set
    here and counts M from each share's sequence lengths (:class:`SharedMinibatches`)."""

    def __init__(self, network: CommandNetwork, nodes: list[Variable], names: list[str],
                 cmd: CommandConfig, log: CNTKLog, opened: list | None = None, *,
                 shares: int = 0):
        self.network, self.nodes, self.names, self.cmd, self.log = network, nodes, names, cmd, log
        self.shares = shares
        self._shared: SharedMinibatches | None = None     # the shares' counts, when read
        self._opened, self._source, self._start = opened, None, None
        self._carry: StateCarry | None = None     # a truncated cvReader's recurrent state
        self._inputs: InputSource | None = None       # of the source, made with it
        self.sums = [criterion_total(n) for n in nodes]
        # the criterion is summed; an evaluation node holding an accumulated result is its
        # last value, counted once
        self.accumulated = [False] + network.accumulated(nodes[1:])
        self.accumulators = EpochAccumulators(nodes)

    def __call__(self, epoch: int) -> dict[str, float]:
        cmd = self.cmd
        if self._source is None:
            opened, self._opened = self._opened, None
            self._source = make_source(cmd.cv_reader, max_sweeps=1, opened=opened,
                                       evaluating=not whole_sequences_instead(self.nodes),
                                       set_back=True)
            self._start = self._source.get_checkpoint_state()
            self._inputs = self.network.input_source(
                self.nodes, self._source, record_loc(cmd.record, "cvReader"), cmd.name)
            if isinstance(self._source, TruncatedSequenceSource):   # truncated pieces
                self._carry = StateCarry(self.nodes, self._source)
        else:
            self._source.restore_from_checkpoint(self._start)
        inputs = self._inputs
        last: list[float] = [0.0] * len(self.sums)      # the last minibatch's values

        def keep(record: dict) -> None:
            last[:] = record["sums"]
        self.accumulators.reset()      # cntk.exe's evaluator starts the pass (OnEpochStart)
        try:
            # samples as CNTK counted them: the criterion's (a per-frame criterion over
            # sequences counts frames, whatever axes its inputs are on)
            result = evaluate_sums(self.sums, inputs, inputs.input_map,
                                   minibatch_size=per_epoch(cmd.sgd.minibatch_size, epoch),
                                   count=self.network.counted(self.nodes[0], self.nodes),
                                   on_minibatch=keep, carry=self._carry)
        except BaseException:
            self.close()
            raise
        totals = counted_once([[t, result["samples"]] for t in result["sums"]], last,
                              self.accumulated)
        perplexity = [self.network.library.shows_perplexity(n) for n in self.nodes]
        minibatches = result["minibatches"]
        if self.shares > 1:
            # (read distributed: the longest share, and the empty aggregated minibatch that
            # ends the loop is counted)
            if self._shared is None:
                self._shared = SharedMinibatches(cmd.cv_reader, self.shares,
                                                 evaluating=not whole_sequences_instead(
                                                     self.nodes))
            minibatches = self._shared.most(per_epoch(cmd.sgd.minibatch_size, epoch)) + 1
        self.log(results_line(1, minibatches, self.names, totals,
                              [[0.0, 0]] * len(totals), perplexity, True))
        self.log(validation_line(epoch, cmd.sgd.max_epochs, self.names, totals))
        return {n: t / c if c else 0.0 for n, (t, c) in zip(self.names, totals)}

    def close(self) -> None:
        """Close the reader (a later pass opens it again)."""
        for d in self._opened or ():
            d.close()
        if self._source is not None:
            self._source.close()
        if self._shared is not None:
            self._shared.close()
        self._opened = self._source = self._inputs = self._carry = self._shared = None


class SharedMinibatches:
    """The most minibatches holding a sample that one of ``workers`` reads from its share of
    ``reader`` (a cvReader read distributed) in each validation pass, as
    ``next_minibatch(..., num_data_partitions=workers, partition_index=r)`` gives them.

    Each share has a source of its own, opened once and set back to its start before each
    pass as cntk.exe sets each worker's reader back (SimpleEvaluator.h:96-99): a randomized
    share's second and later passes read the order the sweep is shuffled into again
    (``make_source``'s ``set_back``; CNTK 2.7 with 3 workers, seed 11, gives one share 9
    minibatches in the first pass and 8 in later ones).  Later passes all read that same
    order, so a count is made once for the first pass and once for the later ones, per
    minibatch size: from the sequences' lengths (:func:`stadyn.io.count_minibatches`, the walk
    ``next_minibatch`` takes), no minibatch decoded.

    >>> from stadyn.brainscript import parse_config, reader_config
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cv.txt"
    >>> _ = path.write_text("".join(f"|x {i}\\n" for i in range(5)))
    >>> reader = reader_config(parse_config(f'''cv = [ readerType = "CNTKTextFormatReader"
    ...     file = "{path}" ; randomize = false
    ...     input = [ x = [ dim = 1 ; format = "dense" ] ] ]''')["cv"])
    >>> shares = SharedMinibatches(reader, 2, evaluating=True)
    >>> shares.most(2), shares.most(2)
    (3, 3)
    >>> shares.close()
    """

    def __init__(self, reader: ReaderConfig, workers: int, *, evaluating: bool):
        self.reader, self.workers, self.evaluating = reader, workers, evaluating
        self._sources: list = []
        self._starts: list = []
        self._passes = 0
        self._counts: dict[tuple[int, bool], int] = {}

    def most(self, minibatch_size: int) -> int:
        """The longest share's minibatch count in the next pass."""
        key = (minibatch_size, self._passes > 0)
        self._passes += 1
        if key in self._counts:
            return self._counts[key]
        if not self._sources:
            for _ in range(self.workers):
                source = make_source(self.reader, max_sweeps=1, evaluating=self.evaluating,
                                     set_back=True)
                self._sources.append(source)
                self._starts.append(source.get_checkpoint_state())
        most = 0
        for rank, (source, start) in enumerate(zip(self._sources, self._starts)):
            source.restore_from_checkpoint(start)
            most = max(most, io.count_minibatches(source, minibatch_size, self.workers, rank))
        self._counts[key] = most
        return most

    def close(self) -> None:
        """Close the shares' sources."""
        for source in self._sources:
            source.close()
        self._sources, self._starts = [], []
