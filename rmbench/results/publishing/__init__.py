"""Publishing: what users read and put in papers.

* :mod:`~rmbench.results.publishing.leaderboard`, ``leaderboard_tables``, ``leaderboard_render``:
  tables of runs, rendered in every format of the format registry
  (:mod:`~rmbench.results.publishing.formats`; the LaTeX format in ``latex``);
* :mod:`~rmbench.results.publishing.plot`, ``plot_marks``: D-Spec curves;
* :mod:`~rmbench.results.publishing.export`, ``export_names``: the Every Eval Ever export;
* :mod:`~rmbench.results.publishing.examples`, ``report``, ``report_html``, ``report_svg``: the
  HTML report (example pairs, assembly, the page, its SVG).

The top of :mod:`rmbench.results`: may import statistics and storage.
"""
