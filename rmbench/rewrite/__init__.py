"""Rewriting datasets for token-level shift (``rmbench shift``).

* :mod:`~rmbench.rewrite.shift`: rewriters (python function, an OpenAI-compatible server, an
  lm-eval model, the offline style rules) and writing a shifted copy of a preference or
  RewardBench 2 file in the paired-shift format, with its ``.meta.json``;
* :mod:`~rmbench.rewrite.style`: the offline, deterministic style rewriters (``style:NAME``).

May import: :mod:`rmbench.tasks`, :mod:`rmbench.models`, :mod:`rmbench.core` and the shared
top-level modules; never results, scoring, train or cli.
"""
