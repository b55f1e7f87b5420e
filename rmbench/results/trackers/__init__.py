"""Trackers: a run sent to the experiment trackers people log training to (``rmbench eval --log-to``).

* :mod:`~rmbench.results.trackers.payload`: what one run logs, tracker-neutral: its config, each
  headline metric with its CI under one naming rule, the leaderboard's tables, results.json and
  the HTML report;
* :mod:`~rmbench.results.trackers.sink` and :mod:`~rmbench.results.trackers.registry`: the
  sink a tracker implements, its options, the missing-extra error, the registry of sinks;
* one module per tracker, each importing its library only when used: ``wandb_sink``,
  ``mlflow_sink``, ``tensorboard_sink``, ``trackio_sink``;
* :mod:`~rmbench.results.trackers.send`: every run to every chosen tracker, a failing tracker
  one line that never touches the run's results.

The top of :mod:`rmbench.results`: may import publishing, statistics and storage.
"""
