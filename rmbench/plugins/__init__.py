"""The plugin API: every name a package needs to add a task kind, a metric, a leaderboard format,
an engine, a model kind or an LLM judge's protocol to rmbench, and nothing else.

A plugin imports from here only (``from rmbench.plugins import Task, MetricDef``) and registers
each addition with one entry point of its own package (``rmbench.tasks``, ``rmbench.metrics``,
``rmbench.formats``, ``rmbench.engines``, ``rmbench.models``, ``rmbench.judge_protocols``), or in
one process with the ``register_*`` function beside it. The names, by what they serve:

* a task kind: :class:`Task` (its ``scores``, ``row_schemas``, ``headline`` and ``official``
  declarations), :class:`TaskScores`, :func:`grouped`, :class:`RowSchema`, :class:`RowReader`,
  :func:`iter_rows`, :class:`ComparisonGroup`, :class:`Message`, :class:`MetricDef`,
  :class:`OfficialLayout` with :class:`OfficialColumn`, and for a step-level task (``steps =
  True``, scored by a process RM) :class:`StepGroup`; :func:`register_task_kind`;
* a computed metric: :class:`ComputedMetric` (its :class:`MetricDef`, counting a kind of pair of
  :class:`Counted`, and its two forms: ``ComputedMetric.of_columns`` derives both from its
  columns, each a :class:`PairColumn` over a :class:`PairSet`) with :class:`Computation`, :class:`PooledPairs`
  (the pooled form's input), :class:`WeightedBlock` (the weighted form's), :func:`ratio`;
  :func:`check_metric` (its test: both forms agree, and it is invariant to affine reward
  changes and group order); :func:`register_metric`;
* a leaderboard format: :class:`OutputFormat`, :class:`Option` (its options; ``FormatOption`` is
  the same class under its older name), :class:`RenderContext`, and
  what its render function walks: :class:`Leaderboard` (``lb.sections()``), :class:`Section`,
  :class:`Table`, :class:`Column`, :class:`Estimate`; :func:`register_format`;
* an engine: :class:`Engine` (with its options, each an :class:`Option`: ``--engine-arg
  KEY=VALUE``), :class:`Backend`, :class:`BackendOptions`, :func:`score_batch`,
  :class:`MemoryRetries`; :func:`register_engine`;
* a model kind: :class:`RewardModel`, :class:`ScoreRequest`, :class:`Runtime`, :class:`Truncation`
  and the capabilities :class:`TokenizedModel`, :class:`StochasticModel`, :class:`CompositeModel`,
  :class:`GroupContextModel`, :class:`CallingModel`, :class:`PairVerdictModel` (its pairs scored as
  verdicts), :class:`StepScoringModel` (a process RM, scoring each step of a :class:`StepRequest`);
  :func:`register_model_kind`;
* a judge protocol: :class:`JudgeProtocol`, :class:`Official`; :func:`register_judge_protocol`;
* errors a plugin raises for a user's mistake: :class:`RMBenchError`, :class:`ConfigError`,
  :class:`DataError`.

Layer: the top, beside :mod:`rmbench.cli`. It may import any layer, but imports none at import
time: each name is a ``"module:attribute"`` string loaded on first use (as ``rmbench``'s own are),
so that loading one plugin (a format's entry point) does not import what another part needs
(torch, pandas).
``rmbench/plugins/__init__.pyi`` declares the same names for type checkers (a test keeps them equal).
"""

from __future__ import annotations

from rmbench import _PUBLIC as _RMBENCH
from rmbench import _lazy_exports

_NAMES: dict[str, tuple[str, ...]] = {
    "a task kind": (
        "Task", "TaskScores", "grouped", "RowSchema", "RowReader", "iter_rows", "ComparisonGroup", "Message",
        "MetricDef", "OfficialLayout", "OfficialColumn", "StepGroup", "register_task_kind"),
    "a computed metric": (
        "ComputedMetric", "Computation", "Counted", "PooledPairs", "WeightedBlock", "PairColumn", "PairSet", "ratio",
        "check_metric", "register_metric"),
    "a leaderboard format": (
        "OutputFormat", "Option", "FormatOption", "RenderContext", "Leaderboard", "Section", "Table", "Column",
        "Estimate", "register_format"),
    "an engine": ("Engine", "Backend", "BackendOptions", "score_batch", "MemoryRetries", "register_engine"),
    "a model kind": (
        "RewardModel", "ScoreRequest", "Runtime", "Truncation", "TokenizedModel", "StochasticModel", "CompositeModel",
        "GroupContextModel", "CallingModel", "PairVerdictModel", "StepScoringModel", "StepRequest",
        "register_model_kind"),
    "a judge protocol": ("JudgeProtocol", "Official", "register_judge_protocol"),
    "errors": ("RMBenchError", "ConfigError", "DataError"),
}
"""The plugin API's names, by what they serve (the order of the API reference's table)."""

_OWN: dict[str, str] = {  # name -> "module:attribute", for the names that rmbench itself does not export
    "OfficialColumn": "rmbench.core.metric_registry:OfficialColumn",
    "StepGroup": "rmbench.core.step_groups:StepGroup",
    "ComputedMetric": "rmbench.core.metric_declaration:ComputedMetric",
    "Computation": "rmbench.core.metric_declaration:Computation",
    "Counted": "rmbench.core.metric_def:Counted",
    "PooledPairs": "rmbench.core.pairs:PooledPairs",
    "WeightedBlock": "rmbench.core.weighted:WeightedBlock",
    "PairColumn": "rmbench.core.weighted:PairColumn",
    "PairSet": "rmbench.core.weighted:PairSet",
    "ratio": "rmbench.core.weighted_order:ratio",
    "check_metric": "rmbench.core.metric_check:check_metric",
    "Leaderboard": "rmbench.results.publishing.leaderboard:Leaderboard",
    "Section": "rmbench.results.publishing.leaderboard_tables:Section",
    "Table": "rmbench.results.publishing.leaderboard_tables:Table",
    "Column": "rmbench.results.publishing.leaderboard_tables:Column",
    "StepScoringModel": "rmbench.models.step_model:StepScoringModel",
    "StepRequest": "rmbench.models.step_model:StepRequest",
}

_PUBLIC: dict[str, str] = {name: _OWN.get(name) or _RMBENCH[name] for names in _NAMES.values() for name in names}
"""Every name -> where it lives: one place each (rmbench's own table for the names both export)."""

__all__ = list(_PUBLIC)


__getattr__, __dir__ = _lazy_exports("rmbench.plugins", _PUBLIC, globals())
