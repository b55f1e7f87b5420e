"""Where the engine's batches run: this process (``local``), a Ray cluster (``ray``) or the
processes of ``accelerate launch`` (``accelerate``).

rmbench does not grow its own distributed system. The engine (:mod:`rmbench.scoring.engine`) still
dedupes the requests, plans the batches, reads and writes the score cache, and checks and
post-processes the rewards; a backend only turns a list of planned batches into raw scores,
yielding ``(batch index, values)`` as batches finish, in any order. Because the plan is the
same whatever runs it, every backend computes the same batches and so the same scores.

* ``local``: the batches in order, in this process.
* ``ray``: Ray Data ``map_batches`` over the batches with an actor class that builds the model
  once per worker (``concurrency`` actors, each with ``num_cpus``/``num_gpus``), streaming
  results back; the driver writes each to the cache as it arrives, so a restart resumes.
  Connects to ``address`` (an existing cluster) or starts a local one.
* ``accelerate``: one process per GPU (or CPU process) under ``accelerate launch``; batch j
  goes to rank ``j % world_size``, so ranks get interleaved batches of the length-sorted plan
  (equal work), and the results are gathered on every rank; only rank 0 writes cache and files.

Workers rebuild the model from a picklable ``factory`` and check that its fingerprint equals
the driver's, so a worker with other weights or code fails loudly instead of mixing scores.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterable, Iterator, Sequence

import numpy as np

from rmbench.core.types import prompt_from_json, prompt_to_json
from rmbench.errors import ConfigError, ModelError, RMBenchError
from rmbench.models.base import RewardModel, ScoreRequest
from rmbench.models.batching import BatchLimits
from rmbench.models.threads import ThreadGovernor
from rmbench.scoring.memory import MemoryRetries, failure_text, is_out_of_memory, score_in_halves
from rmbench.scoring.timeout import BatchDeadline

ENGINES = ("local", "ray", "accelerate")
Factory = Callable[[], RewardModel]


def request_to_json(r: ScoreRequest) -> dict:
    return {"prompt": prompt_to_json(r.prompt), "response": r.response, "group_id": r.group_id, "index": r.index,
            "utility": r.utility, "context": list(r.context), "subset": r.subset}


def request_from_json(d: dict) -> ScoreRequest:
    return ScoreRequest(prompt_from_json(d["prompt"]), d["response"], d["group_id"], int(d["index"]), d["utility"],
                        tuple(d.get("context", ())), d.get("subset"))


def score_batch(model: RewardModel, batch: Sequence[ScoreRequest], retries: MemoryRetries | None = None
                ) -> np.ndarray:
    """``model.score(batch)`` as checked floats (:func:`checked_rewards`), with a failure
    reported as where it happened. Every backend scores through it, in whatever process; its
    errors say what the model did, and the engine adds which model it was. A batch that runs out
    of memory is scored again in halves (:mod:`rmbench.scoring.memory`), counted in ``retries``."""
    try:
        out = model.score(batch)
    except RMBenchError:  # already says what is wrong (a model that cannot load, a bad setting)
        raise
    except Exception as exc:  # the model's own failure, reported with where it happened
        if not is_out_of_memory(exc):
            raise ModelError(f"failed on a batch starting at group {batch[0].group_id!r}, "
                             f"response {batch[0].index}: {type(exc).__name__}: {exc}") from exc
        failure = failure_text(exc)
    else:
        return checked_rewards(batch, out)
    # Out of the except clause, so the failed attempt's frames (and their tensors) are freed first.
    retries = retries if retries is not None else MemoryRetries()
    return score_in_halves(batch, failure, retries, lambda half: score_batch(model, half, retries))


def checked_rewards(batch: Sequence[ScoreRequest], out: Any) -> np.ndarray:
    """One finite float (or one fixed-length vector) per request, or a ModelError that names the
    offending request: a value that is not a number (a string or a bool is refused even where
    numpy would convert it), the wrong count, or NaN/infinity."""
    if isinstance(out, (str, bytes)) or not isinstance(out, Iterable):
        raise ModelError(f"returned {type(out).__name__}, not a list of floats, for a batch of "
                         f"{len(batch)} responses starting at group {batch[0].group_id!r}, response "
                         f"{batch[0].index}")
    if not isinstance(out, np.ndarray):
        out = list(out)
        for request, value in zip(batch, out):
            if value is None or isinstance(value, (str, bytes, bool, np.bool_)):
                raise ModelError(f"returned rewards that are not numbers: {type(value).__name__} "
                                 f"{str(value)[:60]!r} for group {request.group_id!r}, response {request.index}; "
                                 f"return one float per (prompt, response) pair")
    try:
        values = np.asarray(out, dtype=np.float64)
    except (TypeError, ValueError):
        raise ModelError(f"returned rewards that are not numbers: {str(out)[:200]}") from None
    if values.ndim == 0 or values.shape[0] != len(batch) or values.ndim > 2:
        raise ModelError(f"returned {values.shape[0] if values.ndim else 'a scalar'} rewards for a "
                         f"batch of {len(batch)} responses (group {batch[0].group_id!r}, response {batch[0].index} "
                         f"to group {batch[-1].group_id!r}, response {batch[-1].index}); return one reward per "
                         f"(prompt, response) pair, in order")
    bad = np.flatnonzero(~np.isfinite(values.reshape(len(batch), -1)).all(axis=1))
    if bad.size:
        request = batch[int(bad[0])]
        raise ModelError(f"returned a non-finite reward ({values[bad[0]]}) for group "
                         f"{request.group_id!r}, response {request.index}")
    return values


class LocalBackend:
    """The batches in order, in this process; with a thread governor
    (:mod:`rmbench.models.threads`), each batch on the threads the machine's load leaves free."""

    name = "local"
    workers = 1
    is_main = True
    scores_here = True  # this process's device decides the batch limits (rmbench.models.batching)
    device: str | None = None  # the device this process must use, when the backend decides it

    def __init__(self, threads: ThreadGovernor | None = None, deadline: BatchDeadline | None = None) -> None:
        self.threads, self.deadline = threads, deadline
        self.memory = MemoryRetries()

    def run(self, model: RewardModel, factory: Factory | None, batches: Sequence[Sequence[ScoreRequest]]
            ) -> Iterator[tuple[int, Any]]:
        for j, batch in enumerate(batches):
            if self.threads is not None:
                self.threads.before_batch()
            if self.deadline is None:
                values = score_batch(model, batch, self.memory)
            else:  # the deadline covers the scoring only, not the cache write while the engine holds the batch
                values = self.deadline.call(batch, lambda: score_batch(model, batch, self.memory))
            yield j, values

    def agree(self, limits: BatchLimits) -> BatchLimits:
        """The batch limits every process plans with (one process: its own)."""
        return limits

    def describe(self) -> dict:
        return {"name": self.name, "workers": self.workers}


class _RayScorer:
    """A Ray Data actor: builds the model once, then scores one planned batch per call."""

    def __init__(self, factory: Factory, fingerprint: str) -> None:
        self.model = factory()
        if self.model.fingerprint() != fingerprint:
            raise ModelError(f"a Ray worker built the model with fingerprint "
                             f"{self.model.fingerprint()[:12]}, not the driver's {fingerprint[:12]}: the worker has "
                             f"other weights or another rmbench; give every node the same files and versions")

    def __call__(self, rows: dict) -> dict:
        import json

        out = []
        for payload in rows["requests"]:
            batch, retries = [request_from_json(d) for d in json.loads(payload)], MemoryRetries()
            values = score_batch(self.model, batch, retries)
            out.append(json.dumps({"values": values.tolist(), "splits": retries.splits, "first": retries.first}))
        return {"j": rows["j"], "values": np.array(out, dtype=object)}


@dataclass
class RayBackend:
    """Ray Data across a cluster; see the module docstring."""

    address: str | None = None
    concurrency: int = 2
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    name: ClassVar[str] = "ray"
    is_main: ClassVar[bool] = True  # the driver writes cache and files; workers only score
    scores_here: ClassVar[bool] = False  # the driver plans for workers' devices it cannot see: --token-budget
    device: ClassVar[str | None] = None  # each worker picks its own

    def __post_init__(self) -> None:
        self.memory = MemoryRetries()  # the workers' out-of-memory splits, summed as their batches arrive
        if self.concurrency < 1:
            raise ConfigError(f"--workers must be >= 1, got {self.concurrency}")
        if self.num_cpus <= 0 or self.num_gpus < 0:
            raise ConfigError(f"--worker-cpus must be > 0 and --worker-gpus >= 0, got {self.num_cpus}, {self.num_gpus}")
        try:
            import ray.data  # noqa: F401
        except ImportError:
            raise ConfigError("--engine ray needs Ray Data: pip install 'rmbench[ray]' (or pip install 'ray[data]')"
                              ) from None

    @property
    def workers(self) -> int:
        return self.concurrency

    def _init(self) -> None:
        import ray

        if ray.is_initialized():
            return
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                  "configure_logging": False}
        if self.address:
            kwargs["address"] = self.address
        else:  # a local cluster just big enough for the workers
            kwargs["num_cpus"] = max(int(np.ceil(self.concurrency * self.num_cpus)), 1)
            if self.num_gpus:
                kwargs["num_gpus"] = int(np.ceil(self.concurrency * self.num_gpus))
        try:
            ray.init(**kwargs)
        except Exception as exc:  # noqa: BLE001
            where = f"the cluster at {self.address}" if self.address else "a local Ray cluster"
            raise ConfigError(f"--engine ray: cannot start or reach {where}: {type(exc).__name__}: {exc}") from None

    def run(self, model: RewardModel, factory: Factory | None, batches: Sequence[Sequence[ScoreRequest]]
            ) -> Iterator[tuple[int, Any]]:
        import json

        import ray.data

        if not batches:
            return
        if factory is None:
            raise ConfigError("--engine ray needs a model factory that workers can rebuild the model from")
        self._init()
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.verbose_stats_logs = False
        ctx.print_on_execution_start = False
        rows = [{"j": j, "requests": json.dumps([request_to_json(r) for r in b])} for j, b in enumerate(batches)]
        ds = ray.data.from_items(rows, override_num_blocks=len(rows))
        scored = ds.map_batches(_RayScorer, fn_constructor_kwargs={"factory": factory,
                                                                   "fingerprint": model.fingerprint()},
                                batch_size=1, compute=ray.data.ActorPoolStrategy(size=self.concurrency),
                                num_cpus=self.num_cpus,
                                num_gpus=self.num_gpus or None, batch_format="numpy")
        try:
            for row in scored.iter_rows():
                done = json.loads(row["values"])
                self.memory.add(done["splits"], done["first"])
                yield int(row["j"]), np.asarray(done["values"])
        except Exception as exc:  # noqa: BLE001 - a worker's error arrives wrapped by Ray
            raise _unwrap_ray_error(exc) from None

    def agree(self, limits: BatchLimits) -> BatchLimits:
        return limits  # one driver plans

    def describe(self) -> dict:
        return {"name": self.name, "workers": self.concurrency, "num_cpus": self.num_cpus,
                "num_gpus": self.num_gpus, "address": self.address or "local"}


def _unwrap_ray_error(exc: BaseException) -> Exception:
    """The rmbench error a worker raised, out of Ray's wrappers (which carry it as text), or a
    ModelError that quotes the worker's failure."""
    import re

    texts, seen = [], exc
    while seen is not None and len(texts) < 10:
        texts.append(str(seen))
        seen = getattr(seen, "cause", None) or seen.__cause__
    for text in texts:
        m = re.search(r"rmbench\.errors\.(ModelError|ConfigError|DataError): (.+)", text)
        if m:
            return {"ModelError": ModelError, "ConfigError": ConfigError}.get(m.group(1), ModelError)(m.group(2).strip())
    first = next((line for t in texts for line in t.splitlines() if line.strip()), type(exc).__name__)
    return ModelError(f"--engine ray: scoring failed on a worker: {type(exc).__name__}: {first[:300]}")


class AccelerateBackend:
    """One rank per process of ``accelerate launch``; see the module docstring."""

    name = "accelerate"
    scores_here = True

    def __init__(self) -> None:
        try:
            from accelerate import PartialState
        except ImportError:
            raise ConfigError("--engine accelerate needs accelerate: pip install 'rmbench[accelerate]'") from None
        import torch

        # Without GPUs, the ranks that torchrun (or ``accelerate launch --multi_gpu``) starts are
        # joined as CPU processes over gloo.
        self.state = PartialState(cpu=not torch.cuda.is_available())
        self.rank, self.workers = self.state.process_index, self.state.num_processes
        self.is_main = self.state.is_main_process
        self.device = str(self.state.device)
        self.memory = MemoryRetries()  # every rank's out-of-memory splits, gathered with the scores
        if self.device == "cpu" and self.workers > 1:  # share the cores instead of oversubscribing them
            local = int(os.environ.get("LOCAL_WORLD_SIZE", self.workers))
            torch.set_num_threads(max(1, (os.cpu_count() or 1) // local))

    def run(self, model: RewardModel, factory: Factory | None, batches: Sequence[Sequence[ScoreRequest]]
            ) -> Iterator[tuple[int, Any]]:
        from accelerate.utils import gather_object

        retries = MemoryRetries()
        mine = [(j, score_batch(model, batches[j], retries).tolist())
                for j in range(self.rank, len(batches), self.workers)]
        mine.append((-1, [retries.splits, retries.first]))  # this rank's splits ride with its scores
        gathered = gather_object(mine) if self.workers > 1 else mine
        for j, values in sorted(gathered, key=lambda t: t[0]):
            if j < 0:
                self.memory.add(*values)
            else:
                yield j, np.asarray(values)

    def agree(self, limits: BatchLimits) -> BatchLimits:
        """Every rank must plan the same batches (batch j runs on rank j % world size): the
        smallest token budget of all ranks (each measured its own GPU's free memory)."""
        if self.workers == 1:
            return limits
        from accelerate.utils import gather_object

        budgets = gather_object([limits.token_budget])
        if min(budgets) == max(budgets):
            return limits
        return dataclasses.replace(limits, token_budget=min(budgets),
                                   chosen_by=f"{limits.chosen_by}; the smallest of the {self.workers} ranks' budgets")

    def describe(self) -> dict:
        return {"name": self.name, "workers": self.workers, "device": self.device}


def is_main_process(engine: str) -> bool:
    """False on the ranks of ``accelerate launch`` other than 0 (they score, but write nothing)."""
    if engine != "accelerate":
        return True
    return AccelerateBackend().is_main  # the process group is joined as the engine joins it


def make_backend(engine: str = "local", *, workers: int = 2, ray_address: str | None = None,
                 worker_cpus: float = 1.0, worker_gpus: float = 0.0, threads: ThreadGovernor | None = None,
                 deadline: BatchDeadline | None = None):
    """``deadline`` (``--score-timeout``): the local engine's only (EvalConfig refuses it for the others)."""
    if engine == "local":
        return LocalBackend(threads, deadline)
    if engine == "ray":
        return RayBackend(address=ray_address, concurrency=workers, num_cpus=worker_cpus, num_gpus=worker_gpus)
    if engine == "accelerate":
        return AccelerateBackend()
    raise ConfigError(f"--engine {engine!r}: use one of {', '.join(ENGINES)}")
