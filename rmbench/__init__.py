"""rmbench: a benchmark harness for reward models that splits accuracy into discrimination
and specificity (arXiv 2606.21795) and measures generalisation under token-level and domain
shift (arXiv 2507.07981).

The public API is what this module exports (``rmbench.__all__``); plugins, scripts and the
examples in README.md and CONTRIBUTING.md use only these names. Everything else (the modules of
``rmbench.core``, ``rmbench.scoring``, ``rmbench.results``...) may move between releases without
notice. Names load on first use, so ``import rmbench`` imports no numpy, torch or subpackage:

* evaluating: :func:`evaluate` (one model, a list of tasks, a written run), :class:`EvalConfig`
  (the pair of :class:`RunSpec`, what a run measures, and :class:`ExecutionSettings`, how it
  runs), :func:`evaluate_models` (several models and their leaderboard), :class:`RMBenchCallback`
  (evaluation during TRL training; loading it imports transformers);
* reading runs: :func:`load_run` (a :class:`RunFolder`: record and rewards), :func:`read_run`
  (the :class:`RunRecord` only), :func:`find_runs`, :func:`load_rewards`, :func:`write_report` with
  :class:`ReportOptions` and :func:`build_report` (the HTML report of runs),
  :func:`compare_runs` (paired bootstrap differences of two runs), :func:`verify_runs` (a
  :class:`Verification`: does a run reproduce a reference?) with :func:`evaluate_on_run_tasks`
  (any model scored on exactly a run's tasks);
* the record types: :class:`RunRecord`, :class:`TaskResult`, :class:`MetricRecord`,
  :class:`Estimate`, :class:`RewardRow`; the data model: :class:`ComparisonGroup`,
  :class:`Message`, :class:`TaskSpec`, :class:`ModelSpec`;
* writing a task: :class:`Task`, :class:`TaskScores` and :func:`grouped` (a score per category
  and in total), :class:`RowSchema`, :class:`RowReader`, :func:`iter_rows`,
  :func:`load_groups`, :func:`load_catalog`, :class:`OfficialLayout`;
* writing a model: :class:`RewardModel`, :class:`ScoreRequest`, :class:`Runtime`,
  :class:`Truncation` and the declared capabilities :class:`TokenizedModel`,
  :class:`StochasticModel`, :class:`CompositeModel`, :class:`GroupContextModel`, :class:`CallingModel`,
  :class:`PairVerdictModel`;
* registering: :func:`register_task_kind`, :func:`register_model_kind`, :func:`register_engine`
  with :class:`Engine`, :class:`Backend`, :class:`BackendOptions`, :func:`score_batch` and
  :class:`MemoryRetries`, :func:`register_format` with :class:`OutputFormat` and
  :class:`RenderContext` (a leaderboard output format), :class:`Option` (an option an engine or a
  format declares; ``FormatOption`` is its older name),
  :func:`register_judge_protocol` with :class:`JudgeProtocol` and :class:`Official` (an LLM
  judge's protocol), :func:`register_metric` with :class:`MetricDef`, all in this process (a
  package uses the ``rmbench.tasks`` / ``rmbench.models`` / ``rmbench.engines`` /
  ``rmbench.formats`` / ``rmbench.judge_protocols`` / ``rmbench.metrics`` entry points instead,
  and imports what it needs from :mod:`rmbench.plugins`, the plugin API);
* errors: :class:`RMBenchError` (every user mistake), :class:`ConfigError`, :class:`DataError`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__version__ = "0.1.0"

# name -> "module:attribute". Strings, not imports: the layers below import this package for
# __version__, and a static import here would make every layer depend on every other one.
_PUBLIC: dict[str, str] = {
    "evaluate": "rmbench.scoring.runner:evaluate",
    "EvalConfig": "rmbench.scoring.config:EvalConfig",
    "RunSpec": "rmbench.scoring.config:RunSpec",
    "ExecutionSettings": "rmbench.scoring.config:ExecutionSettings",
    "evaluate_models": "rmbench.scoring.suite:evaluate_models",
    "RMBenchCallback": "rmbench.integrations.trl:RMBenchCallback",
    "load_run": "rmbench.results.storage.folder:load_run",
    "read_run": "rmbench.results.storage.folder:read_run",
    "find_runs": "rmbench.results.storage.folder:find_runs",
    "load_rewards": "rmbench.results.storage.rewards_file:load_rewards",
    "RunFolder": "rmbench.results.storage.folder:RunFolder",
    "compare_runs": "rmbench.results.statistics.compare:compare_runs",
    "verify_runs": "rmbench.results.statistics.verify:verify_runs",
    "Verification": "rmbench.results.statistics.verify:Verification",
    "evaluate_on_run_tasks": "rmbench.scoring.rerun:evaluate_on_run_tasks",
    "write_report": "rmbench.results.publishing.report:write_report",
    "build_report": "rmbench.results.publishing.report:build_report",
    "ReportOptions": "rmbench.results.publishing.report:ReportOptions",
    "RewardRow": "rmbench.results.storage.rewards_file:RewardRow",
    "RunRecord": "rmbench.results.storage.record:RunRecord",
    "TaskResult": "rmbench.results.storage.record:TaskResult",
    "MetricRecord": "rmbench.results.storage.record:MetricRecord",
    "Estimate": "rmbench.results.storage.record:Estimate",
    "ComparisonGroup": "rmbench.core.types:ComparisonGroup",
    "Message": "rmbench.core.types:Message",
    "TaskSpec": "rmbench.core.specs:TaskSpec",
    "ModelSpec": "rmbench.core.specs:ModelSpec",
    "Task": "rmbench.tasks.base:Task",
    "TaskScores": "rmbench.tasks.base:TaskScores",
    "grouped": "rmbench.tasks.grouped:grouped",
    "RowSchema": "rmbench.tasks.schemas:RowSchema",
    "RowReader": "rmbench.tasks.rows:RowReader",
    "iter_rows": "rmbench.tasks.sources:iter_rows",
    "load_groups": "rmbench.tasks.loading:load_groups",
    "load_catalog": "rmbench.catalog:load_catalog",
    "OfficialLayout": "rmbench.core.metric_registry:OfficialLayout",
    "MetricDef": "rmbench.core.metric_registry:MetricDef",
    "register_metric": "rmbench.core.metric_registry:register_metric",
    "RewardModel": "rmbench.models.base:RewardModel",
    "ScoreRequest": "rmbench.models.base:ScoreRequest",
    "Runtime": "rmbench.models.base:Runtime",
    "Truncation": "rmbench.models.base:Truncation",
    "TokenizedModel": "rmbench.models.base:TokenizedModel",
    "StochasticModel": "rmbench.models.base:StochasticModel",
    "CompositeModel": "rmbench.models.base:CompositeModel",
    "GroupContextModel": "rmbench.models.base:GroupContextModel",
    "CallingModel": "rmbench.models.base:CallingModel",
    "PairVerdictModel": "rmbench.models.base:PairVerdictModel",
    "register_task_kind": "rmbench.tasks:register_task_kind",
    "register_model_kind": "rmbench.models:register_model_kind",
    "register_engine": "rmbench.scoring.engines:register_engine",
    "Engine": "rmbench.scoring.engines:Engine",
    "Backend": "rmbench.scoring.engines:Backend",
    "BackendOptions": "rmbench.scoring.engines:BackendOptions",
    "score_batch": "rmbench.scoring.backends:score_batch",
    "MemoryRetries": "rmbench.scoring.memory:MemoryRetries",
    "register_format": "rmbench.results.publishing.formats:register_format",
    "OutputFormat": "rmbench.results.publishing.formats:OutputFormat",
    "Option": "rmbench.core.options:Option",
    "FormatOption": "rmbench.core.options:FormatOption",
    "RenderContext": "rmbench.results.publishing.formats:RenderContext",
    "register_judge_protocol": "rmbench.models.judge.judge_protocol:register_judge_protocol",
    "JudgeProtocol": "rmbench.models.judge.judge_protocol:JudgeProtocol",
    "Official": "rmbench.models.judge.judge_protocol:Official",
    "RMBenchError": "rmbench.errors:RMBenchError",
    "ConfigError": "rmbench.errors:ConfigError",
    "DataError": "rmbench.errors:DataError",
}

__all__ = ["__version__", *_PUBLIC]
# rmbench/__init__.pyi declares the same names for type checkers and editors (a test keeps them equal).


def _lazy_exports(module: str, table: dict[str, str], namespace: dict[str, Any]
                  ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module's ``__getattr__`` and ``__dir__`` that load the names of ``table`` (name ->
    ``"module:attribute"``) on first use and keep each in ``namespace`` (the module's globals), so
    that later lookups skip ``__getattr__``. Here, not in :mod:`rmbench.registry`, so that importing
    it imports nothing (``rmbench.plugins`` uses it too)."""

    def get(name: str) -> Any:
        target = table.get(name)
        if target is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        where, _, attr = target.partition(":")
        value = getattr(importlib.import_module(where), attr)
        namespace[name] = value
        return value

    def names() -> list[str]:
        return sorted(set(namespace) | set(table))

    return get, names


__getattr__, __dir__ = _lazy_exports("rmbench", _PUBLIC, globals())
