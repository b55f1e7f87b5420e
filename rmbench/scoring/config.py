"""A run's configuration in two parts: what it measures and how it runs.

* :class:`RunSpec` (frozen): the model, the tasks and their data, eps, the sample, the
  bootstrap, truncation, the display name: everything that decides the numbers. A run's
  identity and its tasks' comparability keys come from it alone.
* :class:`ExecutionSettings` (frozen): the runtime (device, dtype, threads...), the score cache
  and the engine with its options (``--engine``, :mod:`rmbench.scoring.engines`): how the
  numbers are computed, which never changes them beyond float rounding.
* :class:`EvalConfig`: the pair, what :func:`~rmbench.scoring.runner.evaluate` and
  :func:`~rmbench.scoring.suite.evaluate_models` take. ``EvalConfig(model="length",
  tasks=("ties",), engine="ray")`` takes the flat keywords of both parts (each field is defined
  once, in its part); ``EvalConfig(spec, settings)`` takes the parts, and keywords given beside a
  part replace its fields (``EvalConfig(config.measured, config.execution, eps=(0.2,))``, as
  ``dataclasses.replace(config, eps=(0.2,))`` does).

Each part checks its own fields in ``__post_init__``; a user's mistake is one ConfigError
naming the option.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from rmbench.core.choices import EPS_UNITS, EpsUnit, TruncationSide, choice
from rmbench.core.options import OptionValue
from rmbench.errors import ConfigError
from rmbench.models import Runtime, Truncation
from rmbench.models.threads import ThreadGovernor, check_threads
from rmbench.scoring.engines import BackendOptions, Engine, engine_args, engine_named
from rmbench.scoring.timeout import BatchDeadline, check_score_timeout
from rmbench.tasks.loading import DataOverride

DEFAULT_EPS: tuple[float, ...] = (0.0, 0.1)
DEFAULT_MODEL = "smollm2-135m"


@dataclass(frozen=True)
class RunSpec:
    """What a run measures. ``data``: local files that replace tasks' own data sources
    (:class:`DataOverride`, or ``(task, path)`` pairs); ``eps`` is in ``eps_unit``
    (``sigma`` or ``raw``)."""

    model: str = DEFAULT_MODEL
    tasks: tuple[str, ...] = ("ties_sample",)
    data: tuple[DataOverride, ...] = ()
    eps: tuple[float, ...] = DEFAULT_EPS
    eps_unit: EpsUnit = "sigma"
    limit: int | None = None
    include: tuple[str, ...] = ()
    n_bootstrap: int = 1000
    seed: int = 0
    model_args: tuple[tuple[str, Any], ...] = ()
    task_args: tuple[tuple[str, Any], ...] = ()
    """``--task-arg [TASK.]KEY=VALUE``: ``(KEY, value)`` sets an argument of every task of the run,
    ``(TASK.KEY, value)`` of that task only (:func:`rmbench.tasks.loading.task_spec_with_args`)."""
    skip_bad_rows: bool = False
    max_length: int | None = None
    truncation: TruncationSide = "left"
    name: str | None = None
    """``--name``: the model's display name (tables, records) and its run folder's name; default
    the ``--model`` text (and a short folder name, :func:`rmbench.scoring.suite.short_model_name`)."""
    metrics: tuple[str, ...] = ()
    """``--metrics``: declared metrics each task shows beside its headline (leaderboard columns,
    recorded in the task's ``headline``), where the task reports them; every metric is computed
    and recorded whatever this says."""

    def __post_init__(self) -> None:
        data = tuple(d if isinstance(d, DataOverride) else DataOverride(*d) for d in self.data)
        object.__setattr__(self, "data", data)
        if len(set(data)) != len(data):
            raise ConfigError("--data gives one file of a task twice")
        if not self.tasks:
            raise ConfigError("no tasks given")
        if len(set(self.tasks)) != len(self.tasks):
            raise ConfigError(f"--tasks names a task twice: {', '.join(self.tasks)}")
        choice(self.eps_unit, EPS_UNITS, "--eps-unit")
        if not self.eps or any(not math.isfinite(e) or e < 0 for e in self.eps):
            raise ConfigError(f"--eps must be a non-empty list of finite numbers >= 0, got {list(self.eps)}")
        # One record per eps, in order: a repeated eps would double every eps-dependent record.
        object.__setattr__(self, "eps", tuple(sorted({float(e) for e in self.eps})))
        if isinstance(self.n_bootstrap, bool) or not isinstance(self.n_bootstrap, int) or self.n_bootstrap < 0:
            raise ConfigError(f"--bootstrap must be a whole number >= 0 (0: no CIs), got {self.n_bootstrap!r}")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"--limit must be >= 1, got {self.limit}")
        Truncation(self.max_length, self.truncation)  # checks --max-length and --truncation
        if any(not isinstance(m, str) or not m for m in self.metrics) or len(set(self.metrics)) != len(self.metrics):
            raise ConfigError(f"--metrics must name metrics, each once, got {','.join(map(str, self.metrics))!r}")
        if self.name is not None and (not isinstance(self.name, str) or not self.name.strip()):
            raise ConfigError(f"--name must be a non-empty name, got {self.name!r}")

    @property
    def truncation_policy(self) -> Truncation | None:
        """The ``--max-length``/``--truncation`` policy models are built with (None: neither set)."""
        if self.max_length is None and self.truncation == "left":
            return None
        return Truncation(self.max_length, self.truncation)


@dataclass(frozen=True)
class ExecutionSettings:
    """How a run computes its scores: the runtime, the score cache and the engine."""

    runtime: Runtime = field(default_factory=Runtime)
    cache_dir: str | None = None
    use_cache: bool = True
    engine: str = "local"
    """``--engine``: a name registered in :data:`rmbench.scoring.engines.ENGINES`."""
    engine_args: tuple[tuple[str, OptionValue], ...] = ()
    """``--engine-arg KEY=VALUE``: options the engine declares (``Engine.options``; ray:
    ``workers``, ``ray_address``, ``worker_cpus``, ``worker_gpus``), given as ``(KEY, value)``
    pairs or a mapping, the values words or Python values; kept read and checked, in the
    engine's order (:meth:`engine_options` adds the defaults)."""
    workers: int | None = None
    """Deprecated: ``engine_args={"workers": N}``; folded into ``engine_args`` (so None after init)."""
    ray_address: str | None = None
    """Deprecated: ``engine_args={"ray_address": ...}``, as ``workers``."""
    worker_cpus: float | None = None
    """Deprecated: ``engine_args={"worker_cpus": ...}``, as ``workers``."""
    worker_gpus: float | None = None
    """Deprecated: ``engine_args={"worker_gpus": ...}``, as ``workers``."""
    score_timeout: float | None = None
    """``--score-timeout``: seconds one batch may take on an in-process engine (None: no limit;
    :mod:`rmbench.scoring.timeout`)."""

    def __post_init__(self) -> None:
        engine = engine_named(self.engine)
        given = list(self.engine_args.items() if isinstance(self.engine_args, Mapping) else self.engine_args)
        for old in DEPRECATED_ENGINE_FIELDS:
            value = getattr(self, old)
            if value is None:
                continue
            warnings.warn(f"ExecutionSettings({old}=...) is deprecated: give engine_args={{{old!r}: {value!r}}} "
                          f"(--engine-arg {old}={value})", DeprecationWarning, stacklevel=_caller_level())
            given.append((old, value))
            object.__setattr__(self, old, None)
        object.__setattr__(self, "engine_args", tuple(engine_args(self.engine, given, defaults=False).items()))
        check_threads(self.runtime.threads)
        check_score_timeout(self.score_timeout)
        if self.score_timeout is not None and not engine.in_process:
            raise ConfigError(f"--score-timeout works with an engine that scores in this process (--engine local), "
                              f"not --engine {self.engine} (it interrupts a batch through a signal in this process)")

    @property
    def engine_kind(self) -> Engine:
        """The registered engine ``engine`` names."""
        return engine_named(self.engine)

    def engine_options(self) -> dict[str, OptionValue]:
        """Every option the engine declares: its ``--engine-arg`` value, else its default."""
        return engine_args(self.engine, self.engine_args)

    def backend_options(self, threads: ThreadGovernor | None = None,
                        deadline: BatchDeadline | None = None) -> BackendOptions:
        """The options the engine's backend is built with: its ``--engine-arg`` options (the
        defaults filled in), with a run's thread policy and ``--score-timeout`` deadline (an
        in-process engine's)."""
        return BackendOptions(args=self.engine_options(), threads=threads, deadline=deadline)


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside this module (and the ``__init__`` dataclasses
    write), for a warning about how that code called it."""
    frame: FrameType | None = sys._getframe(2)
    level = 2  # 1: __post_init__, which warns
    while frame is not None and (frame.f_code.co_filename == __file__ or
                                 (frame.f_code.co_name == "__init__" and frame.f_code.co_filename.startswith("<"))):
        frame, level = frame.f_back, level + 1
    return level


DEPRECATED_ENGINE_FIELDS = ("workers", "ray_address", "worker_cpus", "worker_gpus")
"""Ray's options before engines declared theirs: ``ExecutionSettings(workers=8)`` (and ``--workers 8``)
still work, as ``--engine-arg workers=8``, with a deprecation note."""


_PARTS = {part: frozenset(f.name for f in dataclasses.fields(part)) for part in (RunSpec, ExecutionSettings)}


@dataclass(frozen=True, init=False)
class EvalConfig:
    """Everything that defines a run: what it measures and how it runs (the module docstring)."""

    measured: RunSpec
    execution: ExecutionSettings

    def __init__(self, measured: RunSpec | None = None, execution: ExecutionSettings | None = None,
                 **fields: Any) -> None:
        if not isinstance(measured, RunSpec | None) or not isinstance(execution, ExecutionSettings | None):
            raise TypeError("EvalConfig(measured, execution) takes a RunSpec and ExecutionSettings; give the "
                            "fields by keyword: EvalConfig(model=..., tasks=...)")
        unknown = sorted(set(fields).difference(*_PARTS.values()))
        if unknown:
            raise TypeError(f"EvalConfig() got an unexpected keyword argument {unknown[0]!r}")
        parts = []
        for part, given in ((RunSpec, measured), (ExecutionSettings, execution)):
            own = {k: v for k, v in fields.items() if k in _PARTS[part]}
            if given is None:
                parts.append(part(**own))
            else:
                parts.append(dataclasses.replace(given, **own) if own else given)
        object.__setattr__(self, "measured", parts[0])
        object.__setattr__(self, "execution", parts[1])
