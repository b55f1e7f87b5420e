"""Scoring: from specs to a written run, the only layer that calls a reward model's ``score``.

* :mod:`~rmbench.scoring.engine`: plans batches (sorted by length, prompts shared), scores
  through a backend and the cache, resumes;
* :mod:`~rmbench.scoring.backends`: in-process, accelerate and Ray execution of a batch plan;
* :mod:`~rmbench.scoring.cache`: the SQLite score cache keyed by model and request identity;
* :mod:`~rmbench.scoring.runner`: ``evaluate``: one model on a list of tasks -> a run folder;
* :mod:`~rmbench.scoring.suite`: ``evaluate_models``: several models, every run planned and
  checked before any scoring, then the leaderboard beside them.

May import: :mod:`rmbench.results`, :mod:`rmbench.catalog`, :mod:`rmbench.tasks`,
:mod:`rmbench.models`, :mod:`rmbench.core` and the shared top-level modules; never rewrite,
train or cli.
"""
