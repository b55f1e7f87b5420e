"""The plugin API: every name a package needs to add a task kind, a metric, a leaderboard format,
an export format, an engine, a model kind, an LLM judge's protocol or an experiment tracker to
rmbench, and nothing else.

A plugin imports from here only (``from rmbench.plugins import Task, MetricDef``) and registers
each addition with one entry point of its own package (``rmbench.tasks``, ``rmbench.metrics``,
``rmbench.formats``, ``rmbench.export_formats``, ``rmbench.engines``, ``rmbench.models``,
``rmbench.judge_protocols``, ``rmbench.trackers``), or in one process with the ``register_*``
function beside it, every one called the same way, ``register_X(name, value, *,
description="")``: the name the entry point would give, and the object (or a lazy
``"module:attr"`` naming it). The names, by what they serve:

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
* an export format (``rmbench export --format``): :class:`ExportFormat` (its build function,
  given the :class:`RunFolder` of each run and the :class:`ExportOptions`, returns an
  :class:`Export`, its files each an :class:`ExportFile`, which rmbench writes); :func:`register_export_format`;
* an engine: :class:`Engine` (with its options, each an :class:`Option`: ``--engine-arg
  KEY=VALUE``), :class:`Backend`, :class:`BackendOptions`, :func:`score_batch`,
  :class:`MemoryRetries`; :func:`register_engine`;
* a model kind: :class:`RewardModel`, :class:`ScoreRequest`, :class:`Runtime`, :class:`Truncation`
  and the capabilities :class:`TokenizedModel`, :class:`StochasticModel`, :class:`CompositeModel`,
  :class:`GroupContextModel`, :class:`CallingModel`, :class:`PairVerdictModel` (its pairs scored as
  verdicts), :class:`StepScoringModel` (a process RM, scoring each step of a :class:`StepRequest`);
  :func:`register_model_kind`;
* a judge protocol: :class:`JudgeProtocol`, :class:`Official`; :func:`register_judge_protocol`;
* a tracker (``--log-to``): :class:`TrackerSink` (its options, each an :class:`Option`), logging a
  :class:`TrackedRun` (its metrics, each a :class:`TrackedMetric`); :func:`register_tracker`;
* errors a plugin raises for a user's mistake: :class:`RMBenchError`, :class:`ConfigError`,
  :class:`DataError`.

Layer: the top, beside :mod:`rmbench.cli`. It may import any layer, but imports none at import
time: the names are declared once, in the type stub beside this file
(``rmbench/plugins/__init__.pyi``), and each loads from the module the stub names on first use
(as ``rmbench``'s own do), so that loading one plugin (a format's entry point) does not import
what another part needs (torch, pandas). Type checkers read the same stub, and lint-imports
checks its imports against the layers (``pyproject.toml``: the ``stub_layers`` contract).
"""

from __future__ import annotations

from rmbench import _attach_stub

__getattr__, __dir__, __all__ = _attach_stub(__name__, __file__, globals())
