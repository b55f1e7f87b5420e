"""Storage: what a run is on disk and in memory.

* :mod:`~rmbench.results.storage.record`: ``RunRecord`` and its parts (versioned, typed),
  comparability keys;
* :mod:`~rmbench.results.storage.folder`: a run folder (``results.json``, ``rewards.jsonl``):
  atomic writes, the reader that validates and migrates old files, ``find_runs``;
* :mod:`~rmbench.results.storage.fields`: the reader's typed field reads (errors name file and field);
* :mod:`~rmbench.results.storage.engine_stats`: ``EngineStats``, what the scoring engine did in a run;
* :mod:`~rmbench.results.storage.folder_lock`: one writer per run folder;
* :mod:`~rmbench.results.storage.environment`: where a run ran (packages, platform, git revision);
* :mod:`~rmbench.results.storage.reload`: a stored run's task data reloaded and its rewards aligned.

The bottom of :mod:`rmbench.results`: imports neither statistics nor publishing.
"""
