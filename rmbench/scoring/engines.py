"""``--engine``: where the scoring engine's batches run, as a registry of engines.

An engine is a :class:`Backend` factory and what it allows (:class:`Engine`). ``local``,
``ray`` and ``accelerate`` register here as lazy ``"module:attr"`` strings, the way model kinds
do (:mod:`rmbench.models`), so nothing heavy is imported until a run uses one; a third-party
engine registers through the ``rmbench.engines`` entry-point group (the entry point names an
:class:`Engine`, or a ``build(options) -> Backend`` callable) or :func:`register_engine` in this
process. ``--engine``'s check and help list come from :data:`ENGINES`.

This module imports no backend: it is what the configuration and the CLI read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from rmbench.errors import ConfigError
from rmbench.registry import Registry, RegistryError

if TYPE_CHECKING:  # types only: importing them here would load the backends' dependencies
    from rmbench.models.base import RewardModel
    from rmbench.models.batching import BatchLimits
    from rmbench.models.threads import ThreadGovernor
    from rmbench.scoring.memory import MemoryRetries
    from rmbench.scoring.requests import Request
    from rmbench.scoring.timeout import BatchDeadline

Factory = Callable[[], "RewardModel"]
"""Rebuilds the run's model (in a worker process: it must pickle)."""


class Backend(Protocol):
    """What the scoring engine (:func:`rmbench.scoring.engine.score_requests`) and the runner use
    of a backend. A backend turns planned batches into raw scores; a batch holds responses
    (:class:`~rmbench.models.base.ScoreRequest`) or solutions whose steps a process RM scores
    (:class:`~rmbench.models.step_model.StepRequest`), and every batch must be scored through
    :func:`rmbench.scoring.backends.score_batch`, which knows which (it checks the values, one
    flat float array per batch, and splits a batch that runs out of memory, counting the splits
    in ``memory``)."""

    @property
    def is_main(self) -> bool:
        """Whether this process writes the score cache (and the run folder)."""

    @property
    def scores_here(self) -> bool:
        """Whether this process's device decides the batch limits (:mod:`rmbench.models.batching`)."""

    @property
    def device(self) -> str | None:
        """The device this process must use, when the backend decides it (None: the runtime's)."""

    @property
    def memory(self) -> MemoryRetries:
        """Batches scored again in halves after running out of memory, over the whole run."""

    def run(self, model: RewardModel, factory: Factory | None, batches: Sequence[Sequence[Request]]
            ) -> Iterator[tuple[int, Any]]:
        """``(batch index, values)`` for every batch, in any order, as they finish."""

    def agree(self, limits: BatchLimits) -> BatchLimits:
        """The batch limits every process plans with (one process: its own)."""

    def describe(self) -> dict[str, Any]:
        """What ``results.json`` records as ``execution.backend`` (at least ``name``)."""


@dataclass(frozen=True)
class BackendOptions:
    """What a run gives an engine's ``build``; each engine reads the options it has."""

    workers: int = 2
    """``--workers``: processes or actors that score (ray)."""
    ray_address: str | None = None
    worker_cpus: float = 1.0
    worker_gpus: float = 0.0
    threads: ThreadGovernor | None = None
    """This process's thread policy (:mod:`rmbench.models.threads`), for an ``in_process`` engine."""
    deadline: BatchDeadline | None = None
    """``--score-timeout``: given to an ``in_process`` engine only."""


@dataclass(frozen=True)
class Engine:
    """An engine: how to build its backend, and what it allows."""

    build: Callable[[BackendOptions], Backend]
    in_process: bool = False
    """Its batches run one after another in this process, as the local engine's do, and its
    backend honours ``options.threads`` and ``options.deadline`` (as
    :class:`~rmbench.scoring.backends.LocalBackend` does): the thread policy governs its batches,
    ``--score-timeout`` can interrupt one, and a model that calls a server (an LLM judge, whose
    calls are cached and written from this process) may run on it."""
    main_process: Callable[[], bool] | None = None
    """Whether this process writes the run (None: always; accelerate: on rank 0 only)."""

    def is_main(self) -> bool:
        return self.main_process is None or self.main_process()


BuildBackend = Callable[[BackendOptions], Backend]
"""``build(options)``: an engine that allows nothing in-process, as a plain callable."""

ENGINES: Registry[Engine | BuildBackend] = Registry("engine", entry_point_group="rmbench.engines")
ENGINES.register("local", "rmbench.scoring.backends:LOCAL_ENGINE", description="this process")
ENGINES.register("ray", "rmbench.scoring.ray_backend:RAY_ENGINE",
                 description="Ray Data actors; pip install 'rmbench[ray]'")
ENGINES.register("accelerate", "rmbench.scoring.accelerate_backend:ACCELERATE_ENGINE",
                 description="under 'accelerate launch'")


def register_engine(name: str, engine: Engine | BuildBackend | str,
                    description: str = "") -> None:
    """Register an engine in this process (public API: ``rmbench.register_engine``): an
    :class:`Engine`, a ``build(options) -> Backend`` callable (an engine that allows nothing
    in-process), or a lazy ``"module:attr"`` string naming either. ``--engine {name}`` then works
    as a built-in one does; a name already registered is a
    :class:`~rmbench.registry.RegistryError`. An installed package registers through the
    ``rmbench.engines`` entry-point group instead, so that every process sees it."""
    ENGINES.register(name, engine, description=description, origin=f"register_engine({name!r})")


def engine_named(name: str) -> Engine:
    """The registered engine ``name``; an unknown name (or one that fails to load) is a
    one-line ConfigError naming ``--engine``."""
    if not isinstance(name, str) or name not in ENGINES:
        raise ConfigError(f"--engine {name!r}: use one of {', '.join(ENGINES.names())}")
    try:
        found = ENGINES.get(name)
    except RegistryError as exc:
        raise ConfigError(f"--engine {name}: {exc}") from None
    if isinstance(found, Engine):
        return found
    if callable(found):
        return Engine(build=found)
    raise ConfigError(f"--engine {name}: {ENGINES.describe(name)[1]} registered a {type(found).__name__}, not an "
                      f"Engine or a build(options) callable")


def engines_help() -> str:
    """``local (this process), ray (...)``: the registered engines, for ``--engine``'s help."""
    return ", ".join(f"{n} ({d})" if (d := ENGINES.describe(n)[0]) else n for n in ENGINES.names())


def make_backend(engine: str = "local", options: BackendOptions | None = None) -> Backend:
    """The backend of engine ``engine``, built with ``options``."""
    return engine_named(engine).build(options or BackendOptions())
