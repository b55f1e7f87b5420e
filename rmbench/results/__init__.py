"""Results: the typed run record and everything that reads, summarises or publishes it.

* :mod:`~rmbench.results.record`: ``RunRecord`` and its parts (versioned, typed), comparability keys;
* :mod:`~rmbench.results.folder`: a run folder on disk (``results.json``, ``rewards.jsonl``):
  atomic writes, the reader that validates and migrates old files, ``find_runs``;
* :mod:`~rmbench.results.summary`: scored groups -> metric records with bootstrap CIs;
* :mod:`~rmbench.results.environment`: where a run ran (packages, platform, git revision);
* :mod:`~rmbench.results.reload`: a stored run's task data reloaded and its rewards aligned;
* :mod:`~rmbench.results.leaderboard`, :mod:`~rmbench.results.leaderboard_render`: tables of runs
  (markdown, csv, json, html);
* :mod:`~rmbench.results.compare`, :mod:`~rmbench.results.plot`, :mod:`~rmbench.results.export`,
  :mod:`~rmbench.results.export_names`: paired differences, D-Spec curves, Every Eval Ever export;
* :mod:`~rmbench.results.examples`, :mod:`~rmbench.results.report`, :mod:`~rmbench.results.report_html`,
  :mod:`~rmbench.results.report_svg`: the HTML report (example pairs, assembly, the page, its SVG).

May import: :mod:`rmbench.catalog`, :mod:`rmbench.tasks`, :mod:`rmbench.models`,
:mod:`rmbench.core` and the shared top-level modules; never scoring, rewrite, train or cli.
"""
