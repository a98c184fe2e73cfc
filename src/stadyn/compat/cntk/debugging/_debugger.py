"""CNTK 2.7's interactive graph debugger (``cntk.debugging.debug_model``).

``debug_model(model, in_stream, out_stream, exit_func)`` clones ``model`` with a pass-through
user function after each of its nodes (functions, inputs, parameters, constants).  Each one, as
a forward or backward pass reaches it, writes which node it follows to ``out_stream`` and
follows the commands it reads from ``in_stream`` (the text of :data:`DEBUG_USAGE`): its value
is the node's output unchanged and its gradient the one it is given, so the clone computes
what ``model`` does.

Example:
    >>> import io
    >>> import numpy as np
    >>> import stadyn.compat.cntk as C
    >>> x = C.input_variable(2, name="x")
    >>> shown = io.StringIO()
    >>> z = C.debugging.debug_model(C.tanh(x), io.StringIO("c\\n"), shown)
    >>> z.eval({x: np.zeros((1, 2), np.float32)}).tolist()
    [[0.0, 0.0]]
    >>> shown.getvalue().splitlines()[1].strip("= ")
    'forward'
"""

from __future__ import annotations

import sys

import numpy as np

from ....graph import set_sequence_axis
from .. import _graph as G
from .._adapt import unwrap, wrap
from .._clone import rebuild
from .._function import Function
from .._variables import output_variable
from ..logging.graph import depth_first_search
from ..ops.functions import UserFunction
from ..ops.functions import _user_function as user_function
from .._printed import type_text
from ._debug_order import Delayed, stop_order

__all__ = ["DEBUG_USAGE", "debug_model"]

DEBUG_USAGE = """\
    Commands:
        n - execute the next node
        n <number> - execute the next <number> nodes

        u f - execute until forward pass (like 'n' when already in forward pass)
        u b - execute until backward pass (like 'n' when already in backward pass)
        u name - execute until a node with that name is hit
        u <lambda> - execute until the lambda expression is True. Examples:
                     Until a Times node is hit:
                         lambda arg, node: node.op_name == 'Times'
                     Until a node is hit that has 3 dimensions:
                         lambda arg, node: len(node.shape) == 3
                     Until the variance of the input exceeds 1 (np = numpy):
                         lambda arg, node: np.var(arg) > 1

        c - execute until end
        p - print input (forward) or root gradients (backward)
        d - drop into a pdb shell
        q - quit\
"""

_PROMPTS = {"f": "[CNTK forward] >>> ", "b": "[CNTK backward] >>> "}
_BANNERS = {"f": "\n" + "=" * 35 + " forward  " + "=" * 35 + "\n",
            "b": "=" * 35 + " backward " + "=" * 35 + "\n"}


class _Session:
    """What every debug node of one ``debug_model`` call shares: the commands still to
    follow (the last one first), the pass last stopped in, and the model's node names."""

    def __init__(self, nodes, in_stream, out_stream, exit_func):
        self.pending: list = []
        self.last_pass = "<start>"
        self.names = {n.name for n in nodes}
        self.read, self.out, self.exit = in_stream, out_stream, exit_func

    def say(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def _parse(self, line: str):
        """The commands one input line asks for; ``None`` when it is not understood (CNTK
        2.7 then prints the usage and asks again).  (CNTK 2.7 also takes ``b`` and ``f``
        alone, which no debug node then follows: it spins for ever.  Here they are not
        understood.)"""
        if len(line) == 1 and line in "cdp":
            return [line]
        head, rest = line[0], line[1:]
        if head == "n":
            if not rest:
                return ["n"]
            try:
                return ["n"] * int(rest) or None
            except ValueError:
                return None
        if head == "u":
            target = rest.strip()
            if target.startswith("lambda"):
                try:
                    return [eval(target, {})]   # the user's own condition, typed at the prompt
                except SyntaxError:
                    return None
            if target in self.names:
                return [lambda arg, node, name=target: node.name == name]
            if "backward".startswith(target):
                return ["ub"]
            if "forward".startswith(target):
                return ["uf"]
            return None
        if line == "q":
            self.exit(0)
        return None

    def ask(self, pass_: str) -> list:
        """Prompt until a line is understood; the commands it gives."""
        while True:
            self.say(_PROMPTS[pass_])
            line = self.read.readline()
            if not line:
                # (CNTK 2.7 prompts again for ever)
                raise EOFError("debug_model: in_stream ended while the debugger waits for a "
                               "command (end a script of commands with 'c')")
            line = line.strip()
            if not line:
                continue
            commands = self._parse(line)
            if commands:
                return commands
            self.say(DEBUG_USAGE + "\n")


class _DebugNode(UserFunction):
    """The pass-through node after ``arg``: stops both passes there (see the module).

    ``previous`` is the debug node CNTK 2.7 stops at just before this one: read as a second
    input (its value unused, its gradient zero), it makes both passes reach the debug nodes
    in CNTK's order whatever order the ops are run in.  ``quiet_backward``: CNTK 2.7 computes
    no gradient for ``arg`` (no parameter, nor input that needs one, under it), so it does not
    stop here in the backward pass."""

    def __init__(self, arg, session: _Session, name: str = "D", previous=None,
                 quiet_backward: bool = False, delayed: "Delayed | None" = None):
        if getattr(arg, "is_composite", False):
            arg = arg.root_function
        parts = arg.uid.split("_")
        if len(parts) > 2 and parts[-2] == "Output":
            del parts[-2]
        # CNTK 2.7 names the function, not its output (the next node shows its input unnamed)
        super().__init__([arg] if previous is None else [arg, previous], as_numpy=True)
        self.debug_name = f"{name}_{'_'.join(parts)}"
        self.after = arg
        self.session = session
        self.quiet_backward = quiet_backward
        # a loop's delayed values (``arg``: a sequence the loop reads): stopped at in turn,
        # once per step of the minibatch's longest sequence, as CNTK 2.7 stops inside its loop
        self.delayed = delayed
        self._previous = None
        self._steps = 1

    def clone(self, cloned_inputs):
        previous = cloned_inputs[1] if len(cloned_inputs) > 1 else None
        return _DebugNode(cloned_inputs[0], self.session, previous=previous,
                          quiet_backward=self.quiet_backward, delayed=self.delayed)

    def infer_outputs(self):
        arg = self.inputs[0]        # (a sequence's: a sequence, as the input)
        return [output_variable(arg.shape, arg.dtype, arg.dynamic_axes)]

    def _announce(self, pass_: str, node=None) -> None:
        s = self.session
        if pass_ != s.last_pass:
            s.say(_BANNERS[pass_])
        if node is None:
            node = self.after.owner if self.after.is_output else self.after
            s.say(f"\n{node} with uid '{node.uid}'\n")
        else:       # (a delayed value: its inputs as CNTK's clone shows them, leaves included)
            inputs = ", ".join(type_text(i) for i in node.inputs)
            s.say(f"\n{node.op_name}({inputs}) -> {type_text(node.output)} with uid "
                  f"'{node.uid}'\n")

    def _stops(self, pass_: str, value, state=None) -> None:
        """Stop here (a loop's delayed values: at each, once per step; in the backward pass
        of a loop of FutureValues, once)."""
        if self.delayed is None:
            return self._stop(pass_, value, state)
        if pass_ == "f":
            self._steps = max((len(v) for v in value), default=1) \
                if isinstance(value, list) else 1
        # (a FutureValue loop's backward pass: CNTK 2.7 stops at it once, not once a step)
        backwards = pass_ == "b" and any(n.op_name == "FutureValue" for n in self.delayed.nodes)
        for _ in range(1 if backwards else self._steps):
            for node in self.delayed.nodes:
                self._stop(pass_, value, state, node)

    def _stop(self, pass_: str, value, state=None, node=None) -> None:
        """Follow the commands at this node (``node``: a delayed value of a loop) until one
        lets the pass go on."""
        s = self.session
        other = "b" if pass_ == "f" else "f"
        self._announce(pass_, node)
        while True:
            if not s.pending:
                s.pending = s.ask(pass_)
            command = s.pending[-1]
            if command == "c":
                break
            if command == "n":
                s.pending.pop()
                break
            if command == "u" + pass_:          # already in this pass: go on as 'n'
                s.pending.pop()
                if s.last_pass == other:
                    # CNTK 2.7 asks again here, with the forward prompt in both passes
                    s.pending = s.ask("f")
                    continue
                break
            if command == "u" + other:          # runs on until the other pass
                break
            if command == "p":
                if pass_ == "f":
                    s.say(f"Input with shape {value.shape}: \n{value}\n")
                else:
                    if state is not None:
                        s.say(f"State: {state}\n")
                    s.say(f"Root gradients with shape {value.shape}: \n{value}\n")
                s.pending.pop()
                continue
            if command == "d":
                if pass_ == "f":
                    s.pending.pop()
                import pdb
                pdb.set_trace()
                break
            if callable(command):
                if command(value, self.after):
                    s.pending.pop()
                    continue
                break
        s.last_pass = pass_

    def forward(self, arguments, device=None, outputs_to_retain=None):
        if len(self.inputs) > 1:
            arguments, previous = arguments
            self._previous = previous      # (its gradient: zeros of its form)
        self._stops("f", arguments)
        return None, arguments

    def backward(self, state, root_gradients, variables=None):
        if not self.quiet_backward:
            self._stops("b", root_gradients, state)
        if variables is None:
            return root_gradients
        variables[self.inputs[0]] = root_gradients
        if len(self.inputs) > 1:
            previous = self._previous     # (a sequence's: one array per sequence)
            variables[self.inputs[1]] = [np.zeros_like(p) for p in previous] if \
                isinstance(previous, list) else np.zeros_like(previous)
        return None

    def __str__(self):
        return f"_DebugNode(after={self.after})"


def _debugged_graph(model, session: _Session):
    """``model`` rebuilt with a debug node after each of its nodes: each function replayed
    on the debug nodes of its inputs (leaves kept), then followed by a debug node of its own,
    the graph CNTK 2.7's repeated clones give."""
    made: dict = {}
    needs_gradient: dict = {}
    previous = None
    for node, sources in stop_order(model.root_function if isinstance(model, Function)
                                     else model):
        if isinstance(node, Delayed):
            # (stops over the loop's first sequence input: Stadyn's loop is one op)
            after = next((made[s.uid] for s in sources
                          if unwrap(made[s.uid]).sequence_lengths is not None), None)
            if after is None:
                continue
            needs = any(needs_gradient[s.uid] for s in sources)
            debug = _DebugNode(after, session, previous=previous, quiet_backward=not needs,
                               delayed=node)
            made[node.uid] = previous = user_function(debug)
            set_sequence_axis(unwrap(previous), unwrap(after).sequence_lengths)
            previous._own_name = debug.debug_name
            continue
        if isinstance(node, Function):
            subs = {unwrap(s.output if isinstance(s, Function) else s): unwrap(made[s.uid])
                    for s in sources}
            new = rebuild([unwrap(node.output)], subs)[0]
            # (a node over values the walks only show, a Fold's Sequence::Slice over its
            # step's view: the model's own output, made again on nothing; its block is the
            # model's, left as it is)
            block = G.BLOCKS.get(new) if new is not unwrap(node.output) else None
            if block is not None:
                # its parameters now come through debug nodes: arguments, as CNTK 2.7 shows
                # them (``Dense(ParameterTensor[2,3], ParameterTensor[3], Tensor[2])``)
                weights = tuple(subs[unwrap(i)] for i in node.inputs
                                if (i.is_parameter or i.is_constant) and unwrap(i) in subs)
                G.BLOCKS[new] = G.Block(block.op_name, block.name, weights + block.arguments,
                                        block.attributes, block.options)
            after = wrap(new)
            needs = any(needs_gradient[s.uid] for s in sources)
        else:
            after = node
            needs = bool(unwrap(node).need_grad)
        needs_gradient[node.uid] = needs
        debug = _DebugNode(after, session, previous=previous, quiet_backward=not needs)
        made[node.uid] = previous = user_function(debug)
        lengths = unwrap(after).sequence_lengths
        if lengths is not None:
            set_sequence_axis(unwrap(previous), lengths)
        if not G.BATCH(unwrap(after)):      # (the node before it may have a batch axis)
            G.BATCH.unmark(unwrap(previous))
        previous._own_name = debug.debug_name
    return previous


def debug_model(model, in_stream=sys.stdin, out_stream=sys.stdout, exit_func=sys.exit):
    """A clone of ``model`` that stops after every node in its forward and backward passes
    and reads debugging commands (:data:`DEBUG_USAGE`) from ``in_stream``, writing to
    ``out_stream``; ``q`` calls ``exit_func(0)``.

    Example:
        >>> import io
        >>> import numpy as np
        >>> import stadyn.compat.cntk as C
        >>> x = C.input_variable(1, name="x")
        >>> out = io.StringIO()
        >>> z = C.debugging.debug_model(C.negate(x), io.StringIO("n\\np\\nc\\n"), out)
        >>> z.eval({x: np.ones((1, 1), np.float32)}).tolist()
        [[-1.0]]
        >>> print(out.getvalue().strip())
        =================================== forward  ===================================
        <BLANKLINE>
        Input('x', [#], [1]) with uid 'Input...'
        [CNTK forward] >>>
        Negate(Tensor[1]) -> Tensor[1] with uid 'Negate...'
        [CNTK forward] >>> Input with shape (1, 1):
        [[-1.]]
        [CNTK forward] >>>
    """
    session = _Session(depth_first_search(model, lambda n: True), in_stream, out_stream,
                       exit_func)
    return _debugged_graph(model, session)
