"""Results: the typed run record and everything that reads, summarises or publishes it, in four
subpackages by concern, each importing only those below it:

* :mod:`rmbench.results.trackers`: runs sent to experiment trackers (W&B, MLflow, TensorBoard,
  trackio: ``rmbench eval --log-to``, ``rmbench log``);
* :mod:`rmbench.results.publishing`: what users read and publish: leaderboards (terminal,
  Markdown, CSV, JSON, HTML, LaTeX), plots, the Every Eval Ever export, the HTML report;
* :mod:`rmbench.results.statistics`: from scored groups to metric records with bootstrap CIs
  (``summary``), paired differences between runs (``compare``);
* :mod:`rmbench.results.storage`: the typed run record, run folders on disk (atomic writes, the
  validating reader, locks), where a run ran, a stored run's data reloaded.

May import: :mod:`rmbench.catalog`, :mod:`rmbench.tasks`, :mod:`rmbench.models`,
:mod:`rmbench.core` and the shared top-level modules; never scoring, rewrite, train or cli.
"""
