"""``--engine ray``: Ray Data ``map_batches`` over the planned batches with an actor class that
builds the model once per worker (``concurrency`` actors, each with ``num_cpus``/``num_gpus``),
streaming results back; the driver writes each to the cache as it arrives, so a restart resumes.
Connects to ``address`` (an existing cluster) or starts a local one. Ray is imported when a run
uses the engine, never before.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

from rmbench.errors import ConfigError, ModelError
from rmbench.models.base import RewardModel
from rmbench.models.batching import BatchLimits
from rmbench.scoring.backends import score_batch
from rmbench.scoring.engines import BackendOptions, Factory
from rmbench.scoring.memory import MemoryRetries
from rmbench.scoring.requests import Request, request_from_json, request_to_json


class _RayScorer:
    """A Ray Data actor: builds the model once, then scores one planned batch per call (of
    responses or of solutions' steps: :mod:`rmbench.scoring.requests`)."""

    def __init__(self, factory: Factory, fingerprint: str) -> None:
        self.model = factory()
        if self.model.fingerprint() != fingerprint:
            raise ModelError(f"a Ray worker built the model with fingerprint "
                             f"{self.model.fingerprint()[:12]}, not the driver's {fingerprint[:12]}: the worker has "
                             f"other weights or another rmbench; give every node the same files and versions")

    def __call__(self, rows: dict[str, Any]) -> dict[str, Any]:
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
            raise ConfigError(f"--engine ray: option workers must be >= 1, got {self.concurrency}")
        if self.num_cpus <= 0 or self.num_gpus < 0:
            raise ConfigError(f"--engine ray: options worker_cpus must be > 0 and worker_gpus >= 0, got "
                              f"{self.num_cpus}, {self.num_gpus}")
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

    def run(self, model: RewardModel, factory: Factory | None, batches: Sequence[Sequence[Request]]
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

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "workers": self.concurrency, "worker_cpus": self.num_cpus,
                "worker_gpus": self.num_gpus, "ray_address": self.address or "local"}


def _unwrap_ray_error(exc: BaseException) -> Exception:
    """The rmbench error a worker raised, out of Ray's wrappers (which carry it as text), or a
    ModelError that quotes the worker's failure."""
    import re

    texts: list[str] = []
    seen: BaseException | None = exc
    while seen is not None and len(texts) < 10:
        texts.append(str(seen))
        seen = getattr(seen, "cause", None) or seen.__cause__
    for text in texts:
        m = re.search(r"rmbench\.errors\.(ModelError|ConfigError|DataError): (.+)", text)
        if m:
            error = {"ModelError": ModelError, "ConfigError": ConfigError}.get(m.group(1), ModelError)
            return error(m.group(2).strip())
    first = next((line for t in texts for line in t.splitlines() if line.strip()), type(exc).__name__)
    return ModelError(f"--engine ray: scoring failed on a worker: {type(exc).__name__}: {first[:300]}")


def build_ray(options: BackendOptions) -> RayBackend:
    """``--engine ray``'s build (:data:`rmbench.scoring.engines.RAY_ENGINE` declares its options,
    read and checked into ``options.args``)."""
    args = options.args
    return RayBackend(address=cast(str | None, args["ray_address"]), concurrency=cast(int, args["workers"]),
                      num_cpus=cast(float, args["worker_cpus"]), num_gpus=cast(float, args["worker_gpus"]))
