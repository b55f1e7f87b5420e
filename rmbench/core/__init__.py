"""The bottom layer: rmbench's data model and its pure metrics, with no I/O.

* :mod:`~rmbench.core.types`: ``ComparisonGroup`` (answers of one prompt with utility levels),
  ``PairIndex`` (its pairs as arrays), ``group_slices``/``split_by_group`` (a flat per-response
  array cut into groups), data fingerprints;
* :mod:`~rmbench.core.specs`: ``TaskSpec`` and ``ModelSpec``, distinct frozen types, their
  arguments a hashable ``FrozenArgs`` mapping (:mod:`~rmbench.core.canonical`: the canonical
  JSON every fingerprint is taken over);
* :mod:`~rmbench.core.choices`: the closed word sets (statuses, eps unit, truncation side,
  device, dtype) as ``Literal`` types, each checked in one place;
* :mod:`~rmbench.core.metrics`: discrimination, specificity, ds_auc, the Ties score, the
  bootstraps: arrays in, numbers out;
* :mod:`~rmbench.core.metrics_bias`: length bias and rewrite flips, also pure;
* :mod:`~rmbench.core.weighted` and :mod:`~rmbench.core.weighted_order`: the same metrics for
  blocks of bootstrap resamples at once, from resample weights over pairs sorted once
  (:mod:`~rmbench.core.pair_columns`: the per-pair columns they sum);
* :mod:`~rmbench.core.pairs`: a slice's or a resample's pairs as reward gaps, and the pooled view
  of one resample;
* :mod:`~rmbench.core.arrays`: the array types of the signatures;
* :mod:`~rmbench.core.judgebench`: JudgeBench's official accuracy (verdicts, categories), pure;
* :mod:`~rmbench.core.processbench`: ProcessBench's official scores (first-error prediction,
  error/correct accuracy and their F1 per split, mean F1), pure;
* :mod:`~rmbench.core.rmb`: RMB's official accuracies (pairwise and Best-of-N; scenarios, sections), pure;
* :mod:`~rmbench.core.prmbench`: PRMBench's official step F1s and PRMScore (types, categories), pure;
* :mod:`~rmbench.core.best_of_k`: exact best-of-K curves over ranks (PPE's correctness sets), pure;
* :mod:`~rmbench.core.metric_registry`: every metric declared once (label, direction, eps use)
  and the official table layouts; :mod:`~rmbench.core.metric_def` (``MetricDef``, ``Counted``),
  :mod:`~rmbench.core.metric_declaration` (``ComputedMetric``: a metric with its computation in
  both bootstrap forms) and :mod:`~rmbench.core.computed_metrics` (the built-in ones);
* :mod:`~rmbench.core.progress`: the text of a plain progress line (off a terminal) and its interval;
* :mod:`~rmbench.core.options`: ``Option``, the one record of an option that a leaderboard
  format, an engine or a tracker declares, and the one check of what a user gives it.

May import: numpy and the shared top-level modules (``rmbench.errors``). Nothing else in rmbench.
"""
