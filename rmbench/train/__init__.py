"""Training reward models to evaluate (``rmbench train``): an EX-RM and an IM-RM from the same
base, data and loss (arXiv 2507.07981).

* :mod:`~rmbench.train.trainer`: the configuration, the Bradley-Terry loop, resumable trained
  folders that load back as adapters;
* :mod:`~rmbench.train.models`: the two trained models behind one interface;
* :mod:`~rmbench.train.lora`: LoRA adapters with peft (merged on save);
* :mod:`~rmbench.train.progress`: the whole-job plan, rates and ETA.

May import: :mod:`rmbench.models`, :mod:`rmbench.core` and the shared top-level modules;
never results, scoring, rewrite or cli.
"""
