"""Statistics: numbers with uncertainty from scored runs.

* :mod:`~rmbench.results.statistics.summary`: scored groups -> metric records with bootstrap
  CIs, one record per declared metric (:mod:`rmbench.core.metric_registry`) and slice;
* :mod:`~rmbench.results.statistics.slice_statistic`: the metrics of one slice as a function of
  resampled units, in both bootstrap forms, laid out from the metric declarations;
* :mod:`~rmbench.results.statistics.compare`: paired differences of two runs on the same data.

Imports :mod:`rmbench.results.storage`, never publishing.
"""
