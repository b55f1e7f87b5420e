"""Statistics: numbers with uncertainty from scored runs.

* :mod:`~rmbench.results.statistics.summary`: scored groups -> metric records with bootstrap
  CIs, one record per declared metric (:mod:`rmbench.core.metric_registry`) and slice;
* :mod:`~rmbench.results.statistics.compare`: paired differences of two runs on the same data.

Imports :mod:`rmbench.results.storage`, never publishing.
"""
