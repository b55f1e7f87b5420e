"""The plugins a run used: every installed distribution whose entry point registered something the
run ran, recorded in results.json's ``environment.plugins`` so that a number can be traced to the
code that made it (as the model's fingerprint and the task's key are keyed by it)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rmbench.core.metric_registry import METRICS
from rmbench.models.base import RewardModel, parts
from rmbench.registry import PluginSource
from rmbench.scoring.engines import ENGINES
from rmbench.scoring.planning import LoadedTask


def run_plugins(model: RewardModel, tasks: Sequence[LoadedTask], engine: str,
                metrics: Iterable[str]) -> tuple[PluginSource, ...]:
    """The distinct sources (sorted) of the model's kind and its parts' (a judge's protocol too:
    :meth:`RewardModel.plugins`), the tasks' kinds, the ``metrics`` the run recorded, and the engine."""
    found = {source for part in parts(model) for source in part.plugins()}
    found |= {t.task.plugin for t in tasks if t.task.plugin is not None}
    found |= {s for s in (METRICS.source(name) for name in set(metrics)) if s is not None}
    engine_source = ENGINES.source(engine)
    if engine_source is not None:
        found.add(engine_source)
    return tuple(sorted(found))
