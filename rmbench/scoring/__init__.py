"""Scoring: from specs to a written run, the only layer that calls a reward model's ``score``.

* :mod:`~rmbench.scoring.engine`: plans batches (sorted by length, prompts shared), scores
  through a backend and the cache, resumes;
* :mod:`~rmbench.scoring.engines`: ``--engine``: the registry of engines and the ``Backend``
  protocol; :mod:`~rmbench.scoring.backends` (in-process, and what every backend shares),
  :mod:`~rmbench.scoring.ray_backend` and :mod:`~rmbench.scoring.accelerate_backend` execute a batch plan;
* :mod:`~rmbench.scoring.cache`: the SQLite score cache keyed by model and request identity;
* :mod:`~rmbench.scoring.config`: ``EvalConfig``: what a run measures (``RunSpec``) and how it
  runs (``ExecutionSettings``);
* :mod:`~rmbench.scoring.planning`: ``plan_run``: every check and read before any scoring;
* :mod:`~rmbench.scoring.runner`: ``evaluate``: one model on a list of tasks -> a run folder;
* :mod:`~rmbench.scoring.suite`: ``evaluate_models``: several models, every run planned and
  checked before any scoring, then the leaderboard beside them;
* :mod:`~rmbench.scoring.training_eval`: ``TrainingEval``: a model under training evaluated
  through the same plan and runner, a run folder per step (the TRL callback, ``rmbench train
  --eval-every``).

May import: :mod:`rmbench.results`, :mod:`rmbench.catalog`, :mod:`rmbench.tasks`,
:mod:`rmbench.models`, :mod:`rmbench.core` and the shared top-level modules; never rewrite,
train or cli.
"""
