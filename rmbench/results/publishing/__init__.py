"""Publishing: what users read and put in papers.

* :mod:`~rmbench.results.publishing.leaderboard`: tables of runs, put together from small parts:
  the rows and column groups (``leaderboard_groups``, named by ``leaderboard_variants``), the
  headline tables (``leaderboard_headline``), the official tables (``leaderboard_official``), the
  shifts table (``leaderboard_shifts``), the notes (``leaderboard_notes``) and the legend
  (``leaderboard_legend``), over the table records (``leaderboard_tables``); rendered in every
  format of the format registry (:mod:`~rmbench.results.publishing.formats`; ``leaderboard_render``,
  the LaTeX format in ``latex``);
* :mod:`~rmbench.results.publishing.plot`, ``plot_curve``, ``plot_canvas``, ``plot_marks``,
  ``plot_steps``: D-Spec curves (the curve's numbers, matplotlib's canvas, the marks), shift bars
  and training steps;
* :mod:`~rmbench.results.publishing.export`, ``export_names``: the Every Eval Ever export;
* :mod:`~rmbench.results.publishing.examples`, ``report``, ``report_html``, ``report_svg``: the
  HTML report (example pairs, assembly, the page, its SVG).

The top of :mod:`rmbench.results`: may import statistics and storage.
"""
