"""What a leaderboard calls the column groups of one task on other data or settings.

Runs of one task whose task keys differ (other data, ``--limit``, task or metric version, eps
unit) cannot share cells: each task key is a column group of its own. Its key stays what other
code reads (:attr:`~rmbench.results.publishing.leaderboard_tables.Column.task`, the leaderboard's
``eps`` and ``keys``, the JSON's ``task``): the task's name for the first group, ``TASK#2``,
``TASK#3`` for the others. What a reader sees (headings, headers, notes, the legend) is the
task's name with what differs in its runs' settings (:func:`qualifiers`)::

    ties_sample                      the task's own data, no limit
    ties_sample (limit 10)           --limit 10
    ties_sample (data: mine.jsonl)   --data ties_sample=mine.jsonl
    ties_sample (task v2)            a newer task version (then the other group says "task v1")

Only what differs between the groups is said: the data file, the limit and a raw eps unit
where a group has them, a task argument or score argument where its values differ (not the data
source's, where a ``--data`` file replaced it; a score argument at its default too:
``threshold=0.5``), the task and metric versions for every group where they differ; a group that
differs by nothing a run records (the same settings, other data: a file edited between
runs) is named by its data fingerprint.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any

from rmbench.core.splits import LIMIT_FIRST
from rmbench.results.storage.record import RunConfig, TaskResult

MAX_ARG_TEXT = 40
"""A task argument's value in a name is cut to this many characters."""


def display_name(task: str, qualifier: str) -> str:
    """``ties_sample (limit 10)``; the task's name alone where nothing is to be said."""
    return f"{task} ({qualifier})" if qualifier else task


def _short_source(source: str) -> str:
    """``--data`` sources as a name says them: ``[SHIFT=]FILE`` without its folders."""
    parts = []
    for part in source.split("; "):
        shift, sep, path = part.partition("=")
        if not sep or "/" in shift or "\\" in shift:  # no SHIFT= before the path
            shift, sep, path = "", "", part
        parts.append(f"{shift}{sep}{PurePath(path).name or path}")
    return ", ".join(parts)


def _arg_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    if isinstance(value, str) and ("/" in value or "\\" in value):
        text = PurePath(value).name or value
    return text if len(text) <= MAX_ARG_TEXT else text[: MAX_ARG_TEXT - 3] + "..."


def _facets(task: str, config: RunConfig, result: TaskResult) -> dict[str, str | None]:
    """What a run of ``task`` says of its data and settings, each as a name would say it; None
    for a default (the task's own data, no limit)."""
    data = config.data.get(task)
    limit = None
    if config.limit is not None:
        limit = f"first {config.limit} groups" if config.limit_sampling == LIMIT_FIRST else f"limit {config.limit}"
    return {"data": f"data: {_short_source(data)}" if data else None, "limit": limit,
            "eps_unit": "eps raw" if result.eps_unit == "raw" else None,
            "version": f"task v{result.version}", "metric_version": f"metric v{result.metric_version}"}


_DEFAULTED = ("data", "limit", "eps_unit")
"""Facets said only where a group has them (None: the task's own data, no limit, eps in σ)."""
_ALWAYS_SAID = ("version", "metric_version")
"""Facets said for every group where they differ (no value is a default)."""
SOURCE_ARGS = frozenset({"path", "paths", "dataset", "revision", "split", "config"})
"""The task arguments a ``--data`` file replaces: where a group has one, its ``data: FILE`` says them."""


def qualifiers(task: str, groups: Sequence[tuple[RunConfig, TaskResult]]) -> list[str]:
    """What each column group of ``task`` is called beside the task's name (``""``: nothing), one
    per group, from one run of each (its settings and task result): what differs between the
    groups, never the same words for two groups. One group: ``[""]``."""
    if len(groups) < 2:
        return [""] * len(groups)
    facets = [_facets(task, config, result) for config, result in groups]
    args = [{**result.args, **result.score_args} for _, result in groups]  # a score argument at its default too
    said: list[list[str]] = [[] for _ in groups]
    for facet in _DEFAULTED:
        if len({f[facet] for f in facets}) > 1:
            for words, f in zip(said, facets):
                if (text := f[facet]) is not None:
                    words.append(text)
    overridden = any(f["data"] for f in facets)
    keys = [k for k in dict.fromkeys(k for a in args for k in a) if not (overridden and k in SOURCE_ARGS)]
    for key in keys:
        values = [json.dumps(a.get(key), sort_keys=True, default=str) for a in args]
        if len(set(values)) > 1:
            for words, a in zip(said, args):
                if key in a:
                    words.append(f"{key}={_arg_text(a[key])}")
    for facet in _ALWAYS_SAID:
        if len({f[facet] for f in facets}) > 1:
            for words, f in zip(said, facets):
                words.append(str(f[facet]))
    out = [", ".join(words) for words in said]
    alike = [out.count(o) > 1 for o in out]  # nothing recorded tells them apart: their data does
    out = [", ".join(words + [f"data {result.data_fingerprint[:12]}"]) if same else o
           for o, words, same, (_, result) in zip(out, said, alike, groups)]
    return [f"{o}, #{i + 1}" if out.count(o) > 1 else o for i, o in enumerate(out)]
