"""A whole training step — forward, backward and solver update — captured as one program.

:func:`compile_step` traces the static graph of a loss together with the gradient computation and
the solver's update maths (:mod:`stadyn.solvers._functional`) into one ATen graph with
``make_fx``, then (by default) compiles it with inductor — on CPU directly (no TorchDynamo
guards to evaluate on every call), on CUDA through ``torch.compile``; on CUDA the program is then
captured once in a CUDA graph and replayed (no kernel launches from Python).  Solver
hyperparameters that change between steps (learning rates, bias-corrected step sizes) are fed as
0-d tensors, so a schedule never forces a recompile (or a recapture).  Compiled programs are
cached by PyTorch's inductor cache, which Stadyn keeps under ``~/.cache/stadyn/inductor`` so a
second run of the same model starts in seconds.

Where the update runs is chosen by measurement (``update="auto"``): on CPU, with a solver that
has torch's fused kernel (Adam, AdamW), the compiled program computes forward and backward and
the fused kernel updates right after it — inductor's loop for the same maths is twice as slow
there — and a large affine weight's gradient is multiplied after the program into a buffer kept
across steps (:func:`stadyn.graph.defer_products`).  Elsewhere the update is traced into the
program.
"""

from __future__ import annotations

import os
import time
from contextlib import nullcontext
from typing import Sequence

import torch
import torch.fx as fx

from .._errors import StadynError
from .._memory import keep_freed_cpu_memory
from .._logging import logger
from ..graph import (Subgraph, Variable, collector_paused, defer_products, interpret,
                     labels_enabled, labels_off, leaf_tensor, plan_layout, plan_passes, realize,
                     shapes_changed, standard_layout, trace_fake, untraceable_ops)
from ..ops import kernels_as_torch_ops
from ..solvers import Optimizer
from ._generators import lift_generators
from ._kernels import keep_max_pooling

__all__ = ["compile_step", "CompiledStep"]

_CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"


def _inductor_default_cache() -> str | None:
    try:
        from torch._inductor.runtime.cache_dir_utils import default_cache_dir
    except ImportError:                                   # pragma: no cover - other torch
        return None
    return os.path.abspath(default_cache_dir())


def _use_persistent_cache() -> None:
    """Keep inductor's cache under ``~/.cache/stadyn/inductor`` (inductor's default is under
    ``/tmp``, which a reboot clears) unless the user chose a directory.  Inductor writes its
    default into ``TORCHINDUCTOR_CACHE_DIR`` the first time it asks, so a value equal to that
    default was not the user's choice."""
    current = os.environ.get(_CACHE_ENV)
    if current is None or os.path.abspath(current) == _inductor_default_cache():
        os.environ[_CACHE_ENV] = os.path.join(os.path.expanduser("~"), ".cache", "stadyn",
                                              "inductor")


class CompiledStep:
    """One training iteration as a single program; call it to run a step.

    Each call reads the graph's inputs and parameters (``x.d = ...`` as usual; a parameter
    given new memory since, NNabla's ``W.data.fill(v)``, too), runs forward + backward +
    ``solver``'s update, and fills ``loss`` (and the ``outputs`` asked for).  Each parameter's
    ``.grad`` is then the step's gradient, as after ``zero_grad()``, ``backward()`` and
    ``update()`` (not accumulated across steps; a large weight's, multiplied after the program
    into a buffer kept across steps, is overwritten by the next step).  ``solver`` is any optimizer
    (:class:`~stadyn.solvers.Optimizer`: an NNabla solver, a CNTK learner, a
    :class:`~stadyn.schedules.ScheduledSolver`), driven through its protocol: its
    ``step_scalars`` are the program's 0-d tensor inputs, its ``apply_step`` is traced into the
    program (or runs after it), its ``finish_step`` counts the step.

    Example:
        >>> import numpy as np, stadyn as sd, stadyn.functions as F, stadyn.solvers as S
        >>> import stadyn.parametric_functions as PF
        >>> with sd.parameter_registry(sd.ParameterRegistry()):
        ...     x, t = sd.Variable((8, 4)), sd.Variable((8, 1))
        ...     loss = F.mean(F.softmax_cross_entropy(PF.affine(x, 3), t))
        ...     solver = S.Sgd(lr=0.1)
        ...     solver.set_parameters(sd.get_parameters())
        ...     step = sd.compile_step(loss, solver, compile=False)
        ...     x.d, t.d = np.ones((8, 4)), np.zeros((8, 1))
        ...     first = float(step().d); second = float(step().d)
        >>> second < first
        True
    """

    def __init__(self, loss: Variable, solver, outputs: Sequence[Variable] = (), *,
                 compile: bool = True, mode: str | None = None, backend: str = "inductor",
                 fullgraph: bool = True, cuda_graph: bool | None = None,
                 update: str = "auto"):
        if update not in ("auto", "inside", "outside"):
            raise StadynError(f"compile_step: update must be 'auto', 'inside' or 'outside', "
                              f"got {update!r}")
        if loss.parent is None:
            raise StadynError("compile_step: the loss must be computed by the graph")
        if loss.size != 1:
            raise StadynError(f"compile_step: the loss must be a scalar, got shape {loss.shape}")
        if not isinstance(solver, Optimizer):
            raise StadynError(f"compile_step: {solver!r} is not an optimizer (a stadyn.solvers "
                              "solver, a stadyn.learners learner or a ScheduledSolver)")
        self.loss = loss
        self.solver = solver
        self.outputs = list(outputs)
        self.compile = compile
        self.mode = mode
        self.backend = backend
        self.fullgraph = fullgraph
        self._program = None
        self._key = None
        self.compile_seconds = 0.0
        self.cuda_graph = cuda_graph          # None: on when the program runs on CUDA
        self._graph = None
        self._graph_outs: tuple = ()
        self._graph_key: list[int] | None = None
        self._calls = 0
        self._sample_leaf = None                # see _default_samples
        self.update = update
        self._outside = False                   # the update runs after the program (see _build)
        self._deferred: list[tuple[int, int, int]] = []
        self._buffers: dict[tuple, torch.Tensor] = {}   # gradients' buffers kept across steps
        self._subgraph: Subgraph | None = None   # what _build traced (its signature keys it)
        self._keys: list[torch.Tensor] = []     # the draws' generators' keys (_generators.py)
        self._cacheable = True

    # -- building -------------------------------------------------------------------------------
    def _parameters(self, leaves: list[Variable]) -> tuple[list[int], list[str]]:
        by_id = {id(v): name for name, v in self.solver.named_parameters().items()}
        idx, names = [], []
        for i, v in enumerate(leaves):
            if id(v) in by_id and leaf_tensor(v).requires_grad:
                idx.append(i)
                names.append(by_id[id(v)])
        if not idx:
            raise StadynError("compile_step: none of the solver's parameters reaches the loss")
        return idx, names

    def _update_outside(self, device: torch.device) -> bool:
        """Whether the solver's update runs after the program instead of inside it.

        On CPU, torch's fused Adam kernel updates the parameters in one pass over memory, twice
        as fast as the loop inductor generates from the same maths (6 vs 14 ms per step for the
        digits CNN's 6.7 M parameters), so the program computes the gradients and the fused
        kernel runs after it.  On CUDA the update stays inside: one program is what a CUDA
        graph captures (the two placements were not compared there).
        """
        if self.update != "auto":
            return self.update == "outside"
        return self.compile and device.type == "cpu" and self.solver.fused_update

    def _build(self, samples: int) -> None:
        self._sample_leaf = None
        roots = [self.loss] + [v for v in self.outputs if v is not self.loss]
        subgraph = Subgraph(roots)
        nodes, leaves = subgraph.nodes, subgraph.leaves
        untraceable = untraceable_ops(nodes)
        if untraceable:
            raise StadynError(
                f"compile_step: the graph holds op(s) that cannot be traced into a step "
                f"program: {', '.join(untraceable)} (e.g. packed recurrences read sequence "
                "lengths on the host); train without compile (a static plan runs such a "
                "graph eagerly)")
        fill = subgraph.filled(keep_all=False)
        param_idx, names = self._parameters(leaves)
        solver = self.solver
        state_names = list(solver.state_names())
        state_lists = solver.state_tensors(names)
        states = [t for k in state_names for t in state_lists[k]]
        scalar_values = solver.step_scalars(names, samples)
        scalar_keys = list(scalar_values)
        for k in scalar_keys:
            if not isinstance(scalar_values[k], (int, float)):
                raise StadynError(f"compile_step: {solver.name}'s '{k}' differs between "
                                  "parameters; a compiled step needs one value per step")
        leaf_tensors = subgraph.leaf_tensors()
        device = leaf_tensors[0].device
        if device.type == "cpu":
            keep_freed_cpu_memory()              # each step reuses the last one's pages
        outside = self._update_outside(device)
        self._scalars = [] if outside else \
            [torch.tensor(float(scalar_values[k]), device=device) for k in scalar_keys]
        n_leaves, n_states, n_params = len(leaves), len(states), len(names)
        loss_pos = fill.index(self.loss)
        layout = plan_layout(nodes, leaf_tensors)       # as a static plan's (graph/_layout.py)

        def gradients(ts):
            with torch.enable_grad():
                values = interpret(nodes, leaves, ts, fill, channels_last=layout)
                params = [ts[i] for i in param_idx]
                grads = torch.autograd.grad(values[loss_pos], params, allow_unused=True)
            grads = [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads)]
            if layout:          # what the program hands out, in the standard layout again
                grads = [standard_layout(g) for g in grads]
                values = [standard_layout(v) for v in values]
            return values, params, grads

        # torch.compile cannot compile torch's fused optimizer kernels: a compiled program traces
        # the multi-tensor maths instead (inductor fuses it anyway); uncompiled ones keep them.
        fused = not self.compile

        def step(*flat):
            values, params, grads = gradients(flat[:n_leaves])
            state = flat[n_leaves:n_leaves + n_states]
            scalars = dict(zip(scalar_keys, flat[n_leaves + n_states:]))
            with torch.no_grad():
                lists = {k: list(state[j * n_params:(j + 1) * n_params])
                         for j, k in enumerate(state_names)}
                solver.apply_step(params, grads, lists, scalars, fused=fused)
            return tuple(values) + tuple(grads)     # the gradients: each parameter's .grad

        def forward_backward(*ts):
            values, _, grads = gradients(ts)
            return tuple(values) + tuple(grads)

        # While the profiler records, an uncompiled program is traced with its ops' ranges, its
        # backward's too (graph/_labels.py); inductor's fused kernels have no per-op time, so a
        # compiled one is traced without them (the key keeps the two apart: __call__).
        try:
            # (compiled: CNTK's NaN-rule kernels as torch ops, which inductor fuses)
            with torch.enable_grad(), (labels_off() if self.compile else nullcontext()), \
                    (kernels_as_torch_ops() if self.compile else nullcontext()), \
                    collector_paused():         # a trace's objects live until it ends
                if outside:
                    gm = trace_fake(forward_backward, *leaf_tensors)
                else:
                    gm = trace_fake(step, *leaf_tensors, *states, *self._scalars)
        except StadynError:
            raise
        except Exception as exc:     # torch's own tracing errors run to pages: one line here
            first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
            raise StadynError(f"compile_step: tracing the training step failed "
                              f"({type(exc).__name__}: {first}); train without compile "
                              "(a static plan falls back to running eagerly)") from exc
        # A static plan's passes (graph/_passes.py): a channels-last convolution and its ReLU
        # as one oneDNN call (inductor calls it as it calls a convolution), and ReLUs in place
        # only uncompiled (inductor plans its own buffers).
        plan_passes(gm, in_place=not self.compile)
        if self.compile and device.type == "cpu":
            keep_max_pooling(gm)                # ATen's kernels, not inductor's loops
        # compiled: the draws' generators as inputs, which inductor's on-disk cache can keep
        # (compile/_generators.py); the keys are the program's last inputs
        self._keys, self._cacheable = lift_generators(gm) if self.compile else ([], True)
        self._outside = outside
        self._deferred = defer_products(gm, len(fill)) if outside else []
        self._buffers = {}
        self.graph_module = realize(gm)         # its code, generated after the last pass
        self._subgraph = subgraph
        self._leaves, self._fill, self._states, self._names = leaves, fill, states, names
        self._params: list[torch.Tensor] = []     # the parameters' tensors at each call
        self._param_idx = param_idx
        self._state_lists = {k: states[j * n_params:(j + 1) * n_params]
                             for j, k in enumerate(state_names)}
        self._scalar_keys = scalar_keys
        self._n_nodes = len(nodes)
        program = gm.forward
        if self.compile:
            _use_persistent_cache()
            mode = self.mode
            where = "after it, in the solver's fused kernel" if outside else "inside it"
            logger.info(f"compiling the training step ({len(nodes)} ops, {n_params} parameters, "
                        f"{solver.name} update {where}) with "
                        + ("inductor" if self.backend == "inductor"
                           else f"torch.compile(backend={self.backend!r})")
                        + f" (mode={mode!r}); a cold compile takes tens of seconds on a CPU, "
                        "a cached one a few")
            start = time.perf_counter()
            if self.backend == "inductor" and device.type == "cpu":
                program = self._inductor(gm, leaf_tensors)
            else:
                program = torch.compile(gm, backend=self.backend, mode=mode,
                                        fullgraph=self.fullgraph, dynamic=False)
            self._run(program, samples)     # the first step (torch.compile compiles here)
            self.compile_seconds = time.perf_counter() - start
            logger.info(f"compiled the training step in {self.compile_seconds:.1f} s")
            self._program = program
            self._first_done = True
            return
        self._program = program
        self._first_done = False

    def _inductor(self, gm: fx.GraphModule, leaf_tensors: list[torch.Tensor]):
        """``gm`` compiled by inductor directly, without TorchDynamo in front (on CPU).

        The program is already one ATen graph with static shapes, so Dynamo has nothing to
        capture; what it would add is a guard check on every call (~0.1 ms per step for the
        digits MLP, a quarter of its compiled step).  Stadyn checks the leaves' signature
        itself and rebuilds on a change (:meth:`__call__`), and inductor's code asserts the
        sizes and strides it was compiled for.  On CUDA the step is replayed from a CUDA graph,
        so there ``torch.compile`` stays (its per-call cost is not paid on replay).
        """
        from torch._guards import TracingContext, tracing
        from torch._inductor import list_mode_options
        from torch._inductor.compile_fx import compile_fx
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import ShapeEnv
        inputs = [t.detach() for t in leaf_tensors]
        if not self._outside:
            inputs += [*self._states, *self._scalars]
        inputs += self._keys
        patches = list_mode_options(self.mode, dynamic=False) if self.mode else None
        if not self._cacheable:     # a generator left in the graph: the cache cannot keep it
            logger.info("the training step draws from a generator only a torch operator "
                        "takes: compiled without inductor's on-disk cache")
            patches = {**(patches or {}), "fx_graph_cache": False}
        # Fake inputs with a (symbol-free) shape environment, as Dynamo would hand them over:
        # without one inductor bypasses its on-disk graph cache.
        fake_mode = FakeTensorMode(shape_env=ShapeEnv())
        with tracing(TracingContext(fake_mode)):
            fakes = [fake_mode.from_tensor(t, static_shapes=True) for t in inputs]
            return compile_fx(gm, fakes, config_patches=patches)

    # -- running --------------------------------------------------------------------------------
    def _run(self, program, samples: int) -> None:
        solver = self.solver
        values = solver.step_scalars(self._names, samples)
        if list(values) != self._scalar_keys:
            raise StadynError(f"compile_step: {solver.name}'s step now needs the scalars "
                              f"{list(values)}, the program was built for {self._scalar_keys}")
        args = [leaf_tensor(v).detach() for v in self._leaves]
        # A parameter may hold new memory since the build (NNabla's W.data.fill): its tensor now
        self._params = [args[i] for i in self._param_idx]
        self._calls += 1
        if self._outside:
            with torch.no_grad():
                outs = program(*args, *self._keys)
                grads = self._gradients(outs)
                solver.apply_step(self._params, grads, self._state_lists, values)
        else:
            for tensor, k in zip(self._scalars, self._scalar_keys):
                tensor.fill_(float(values[k]))
            inputs = [*args, *self._states, *self._scalars, *self._keys]
            if self._use_graph(inputs):
                outs = self._replay(program, inputs)
            else:
                with torch.no_grad():
                    outs = program(*inputs)
            grads = self._grad_outputs(outs)
        solver.finish_step(self._names, samples, values)
        for v, t in zip(self._fill, outs):
            if v.shape != tuple(t.shape):
                shapes_changed()        # (a new batch size: what was read from shapes goes)
            v._data = t
        for k, (i, g) in enumerate(zip(self._param_idx, grads)):
            Variable.grad.fset(self._leaves[i], self._dense(k, g))  # (NNabla's setter copies)

    def _dense(self, k: int, grad: torch.Tensor) -> torch.Tensor:
        """Parameter ``k``'s gradient as a tensor of its own elements: a program may return a
        broadcast (stride-0) view, as the gradient of ``W + x`` is, and one kept as ``.grad``
        would make every element one (a write to ``W.g[0, 0]`` writes them all, and an eager
        backward that accumulates into it fails).  Such a gradient is copied into a buffer
        kept across steps; a dense one is kept as it is."""
        if grad.is_contiguous():
            return grad
        return self._buffer(("dense", k), grad.shape, grad.dtype, grad.device).copy_(grad)

    def _buffer(self, key: tuple, shape, dtype, device) -> torch.Tensor:
        """The tensor kept across steps under ``key``, made anew when it is not of ``shape``,
        ``dtype`` and ``device``."""
        buffer = self._buffers.get(key)
        if buffer is None or (buffer.shape, buffer.dtype, buffer.device) != (
                torch.Size(shape), dtype, device):
            buffer = self._buffers[key] = torch.empty(shape, dtype=dtype, device=device)
        return buffer

    def _grad_outputs(self, outs) -> tuple:
        """The parameters' gradients among a program's outputs (after the filled values)."""
        first = len(self._fill)
        return tuple(outs[first:first + len(self._param_idx)])

    def _gradients(self, outs) -> list[torch.Tensor]:
        """The parameters' gradients from a forward-backward program's outputs; a deferred
        product (:func:`stadyn.graph.defer_products`) is computed here, into a buffer kept
        across steps."""
        grads = list(self._grad_outputs(outs))
        for k, a, b in self._deferred:
            param, dtype = self._params[k], outs[a].dtype
            product = torch.mm(outs[a], outs[b], out=self._buffer(
                ("product", k), param.shape, dtype, param.device))
            if dtype != param.dtype:    # a half-precision product, into the gradient's dtype
                product = self._buffer(("grad", k), param.shape, param.dtype,
                                       param.device).copy_(product)
            grads[k] = product
        return grads

    # -- CUDA graphs ----------------------------------------------------------------------------
    def _use_graph(self, inputs: list[torch.Tensor]) -> bool:
        on_cuda = inputs[0].device.type == "cuda"
        if not (self.cuda_graph if self.cuda_graph is not None else on_cuda):
            return False
        if not on_cuda:
            raise StadynError("compile_step(cuda_graph=True) needs the graph on a CUDA device")
        return self._calls > 2          # two ordinary steps first: warm-up (and autotuning)

    def _replay(self, program, inputs: list[torch.Tensor]) -> tuple:
        """Replay the step from a CUDA graph; capture it on first use, and again whenever an
        input lives at another address (the graph reads its inputs where they were)."""
        key = [t.data_ptr() for t in inputs]
        if self._graph is None or key != self._graph_key:
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            graph = torch.cuda.CUDAGraph()
            with torch.no_grad(), torch.cuda.stream(stream):
                # Capturing records the kernels without running them; replay() runs the step.
                with torch.cuda.graph(graph, stream=stream):
                    outs = program(*inputs)
            torch.cuda.current_stream().wait_stream(stream)
            self._graph, self._graph_outs, self._graph_key = graph, tuple(outs), key
            logger.info(f"captured the training step in a CUDA graph ({self._n_nodes} ops)")
        self._graph.replay()
        return self._graph_outs

    def __call__(self, samples: int | None = None) -> Variable:
        """One step.  ``samples`` is the minibatch's sample count (CNTK learners need it; by
        default the first axis of the first input)."""
        if samples is None:
            samples = self._default_samples()
        key = self._signature() if self._program is not None else None
        if self._program is None or key != self._key:
            self._build(samples)
            self._key = self._signature()
            if self._first_done:
                return self.loss
        self._run(self._program, samples)
        return self.loss

    def _signature(self):
        """What the program was built for: the graph's signature, for an uncompiled
        program whether the profiler labels op calls (its program then holds their ranges),
        and the solver's state tensors (``set_states`` may hand it others)."""
        return (self._subgraph.signature(), labels_enabled() and not self.compile,
                getattr(self.solver, "state_version", 0))

    def _default_samples(self) -> int:
        """The first axis of the loss's first data input (found once: walking the graph on
        every step would cost more than a small model's whole step)."""
        if self._sample_leaf is None:
            self._sample_leaf = next((v for v in Subgraph([self.loss]).inputs if v.ndim), False)
        return int(self._sample_leaf.shape[0]) if self._sample_leaf is not False else 1


def compile_step(loss: Variable, solver, outputs: Sequence[Variable] = (), *,
                 compile: bool = True, mode: str | None = None, backend: str = "inductor",
                 fullgraph: bool = True, cuda_graph: bool | None = None,
                 update: str = "auto") -> CompiledStep:
    """Capture forward + backward + ``solver.update()`` of ``loss`` as one program.

    ``compile=False`` keeps the traced program uncompiled (no compile time; still one program
    with no per-op Python).  ``mode`` selects inductor's options as ``torch.compile``'s does
    (``backend`` other than ``"inductor"`` goes through ``torch.compile``).  On CUDA the program is
    also captured in a CUDA graph after two warm-up steps and replayed (``cuda_graph=False``
    turns that off).  ``update`` places the solver's update: ``"inside"`` the program,
    ``"outside"`` (after it, in the solver's own kernel, with large weight gradients multiplied
    into reused buffers), or ``"auto"``: outside when compiling on CPU with a fused solver
    (Adam's fused kernel is twice as fast as inductor's loop there), inside otherwise.
    See :class:`CompiledStep`.
    """
    return CompiledStep(loss, solver, outputs, compile=compile, mode=mode, backend=backend,
                        fullgraph=fullgraph, cuda_graph=cuda_graph, update=update)

