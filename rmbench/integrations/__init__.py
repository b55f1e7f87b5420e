"""rmbench inside other tools' loops: the top layer beside :mod:`rmbench.cli`.

* :mod:`~rmbench.integrations.trl`: :class:`~rmbench.integrations.trl.RMBenchCallback`, rmbench
  tasks evaluated during TRL's ``RewardTrainer`` and ``DPOTrainer`` training (``pip install
  'rmbench[trl]'``).

May import every layer below (train, rewrite, scoring, results, catalog, tasks, models, core) and
the shared modules; never cli. Each module imports its tool (transformers, trl) at import: import
it only when you use that tool.
"""
