"""Leaderboards: run records -> tables (rows = runs, columns = declared metrics) -> every format of
:mod:`rmbench.results.publishing.formats`.

A leaderboard has a main table (per task, the metrics the task declares as its headline), one
table per official layout (RewardBench 2: Factuality ... Ties and the score, beside D, Spec and
ds_auc), and an original-vs-shifted table for shift tasks. Every number carries its 95% CI.

Comparability is per cell: a cell is (task key, metric, eps), where the task key covers task
version, data fingerprint, metric version and eps unit but not the eps list. Runs with
different eps lists share the D/Spec columns at an eps they all have (a note names a run that
lacks it); runs whose task keys differ cannot share the task's cells: each key's columns are
shown apart (column group ``TASK#2`` inside), headed by what differs in the runs' settings,
``TASK (limit 10)``, ``TASK (data: mine.jsonl)`` (:mod:`~rmbench.results.publishing.leaderboard_variants`),
and a note names what differs in the task keys, with both values.

A run whose task failed is no row of empty cells: it is one line under its task's table
(``MODEL (run folder F): failed: ERROR``), and a table whose every run failed is those lines
alone. A column empty in every row has a note with the true reason (:func:`undefined_notes`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

from rmbench.core.judge_replies import JudgeReplies
from rmbench.core.metric_registry import Counted, OfficialLayout
from rmbench.errors import ConfigError, did_you_mean
from rmbench.results.publishing.leaderboard_tables import (
    MAX_ONE_TABLE_COLUMNS,
    Column,
    FailedRun,
    RowSource,
    Section,
    Table,
    defined_cell,
    fold_rows,
    sections,
    split_by_task,
    without_empty_columns,
)
from rmbench.results.publishing.leaderboard_variants import display_name, qualifiers
from rmbench.results.storage.folder import RunFolder
from rmbench.results.storage.record import Estimate, RunRecord, TaskResult, eps_text, score_args_text

LAYOUTS = ("auto", "one", "per-task")
"""``one``: a single main table of every task's metrics; ``per-task``: a table per task (column
group); ``auto``: per task when the single table would have more than
:data:`~rmbench.results.publishing.leaderboard_tables.MAX_ONE_TABLE_COLUMNS` metric columns over several tasks."""
CAPTION = "value [95% bootstrap CI over groups]"
DEFAULT_EPS = 0.1
SHIFT_METRICS = ("pairwise_accuracy", "discrimination", "specificity", "reward_margin", "pairwise_accuracy_shift_gap")

RunLike = RunRecord | RunFolder


def possessive(name: str) -> str:
    """``name``'s, or ``name``' for a name that ends in s ("Topic pairs' own scores", "RewardBench's")."""
    return f"{name}'" if name.endswith(("s", "S")) else f"{name}'s"


@dataclass(frozen=True)
class Leaderboard:
    """A built leaderboard, ready for a format to render: its tables in order
    (:meth:`sections`), each a :class:`~rmbench.results.publishing.leaderboard_tables.Table`, and
    what the runs have in common."""

    main: Table
    """The single table, or (per-task layout) the first task's table."""
    official: tuple[Table, ...] = ()
    """The benchmarks' official tables (:class:`~rmbench.core.metric_registry.OfficialLayout`), one per
    task that has one."""
    shifts: Table | None = None
    """Original against shifted, per task and shift; None: no run measured a shift."""
    eps: dict[str, tuple[float, str]] = field(default_factory=dict)
    """task -> (eps, unit) of its D/Spec columns."""
    keys: dict[str, str] = field(default_factory=dict)
    """task -> task key (comparability without the eps list)."""
    notes: tuple[str, ...] = ()
    """Lines under the headline tables: what differs between the runs, what a number does not mean."""
    more: tuple[Table, ...] = ()
    """Per-task layout: the other tasks' tables, after ``main``."""
    legend: tuple[str, ...] = ()
    """What each task (column group) of the tables is: kind, version, data, metric version, key."""
    names: dict[str, str] = field(default_factory=dict)
    """task (column group, as in ``eps`` and ``keys``) -> its name in headings: ``ties#2`` ->
    ``ties (limit 10)``; the task's name where its runs share one task key."""

    @property
    def headline(self) -> tuple[Table, ...]:
        """The tables of the tasks' headline metrics: ``main``, then ``more``."""
        return (self.main,) + self.more

    @property
    def tables(self) -> tuple[Table, ...]:
        """Every table: the headline ones, the official ones, then the shifts table."""
        return self.headline + self.official + ((self.shifts,) if self.shifts is not None else ())

    def sections(self, said: str = "") -> tuple[Section, ...]:
        """The tables in the order every format renders them, with the one caption rule (:func:`sections`)."""
        return sections(self, said)


@dataclass
class _Entry:
    """One run as a leaderboard row: its label and its tasks under their column groups (a task
    whose key differs from another run's of that name gets a column group of its own)."""

    label: str
    record: RunRecord
    folder: str | None
    tasks: dict[str, TaskResult] = field(default_factory=dict)

    def has_task(self, name: str) -> bool:
        return name in self.tasks

    def task(self, name: str) -> TaskResult:
        return self.tasks[name]


def _where(e: _Entry) -> str:
    return e.folder or e.record.model.name


def _assign_variants(entries: list[_Entry]) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """Put each run's tasks under column groups, one per task key of a task: ``ties`` for the
    first, ``ties#2``... for the others, the group of the task's own data and settings first, then
    in the order of the runs, those that scored before those that failed (tasks too). Returns each group's name
    (``ties (limit 10)``), what the name says beside the task's (``limit 10``, or ""), and a note
    per other group naming what differs from the first group's task key, both values."""
    found: dict[str, list[list[tuple[_Entry, TaskResult]]]] = {}
    runs = [(e, t) for e in entries for t in e.record.tasks]
    for e, t in sorted(runs, key=lambda run: run[1].status != "success"):  # tasks in the order they scored
        groups = found.setdefault(t.name, [])
        group = next((g for g in groups if g[0][1].task_key == t.task_key), None)
        if group is None:
            groups.append([(e, t)])
        else:
            group.append((e, t))
    names: dict[str, str] = {}
    said: dict[str, str] = {}
    notes = []
    for task, groups in found.items():
        words = qualifiers(task, [(g[0][0].record.config, g[0][1]) for g in groups])
        order = sorted(range(len(groups)), key=lambda i: (words[i] != "", i))
        for rank, i in enumerate(order):
            key = task if rank == 0 else f"{task}#{rank + 1}"
            names[key], said[key] = display_name(task, words[i]), words[i]
            for e, t in groups[i]:
                e.tasks[key] = t
            if rank:
                (e0, first), (e1, other) = groups[order[0]][0], groups[i][0]
                notes.append(f"{names[key]} of {_where(e1)} cannot share cells with {names[task]} of {_where(e0)}: "
                             f"{'; '.join(first.differences(other))}; shown apart")
    return names, said, notes


def model_label(name: str) -> str:
    """A model's name as a table shows it: an absolute path (``judge:/srv/models/SmolLM2`` or
    ``/srv/models/rm``, ``published:judgebench:/srv/f.jsonl``) by its last part (``judge:SmolLM2``,
    ``published:judgebench:f.jsonl``), so that published tables never carry
    a machine's folders; hub ids and relative names as they are."""
    if name.startswith(("/", "~")):
        return PurePath(name.rstrip("/")).name if name.rstrip("/") else name
    parts = name.split(":")  # each KIND: (published:judgebench:/srv/f.jsonl) kept, a path after it cut
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith(("/", "~")) and part.rstrip("/"):
            parts[i:] = [PurePath(":".join(parts[i:]).rstrip("/")).name]
            break
    return ":".join(parts)


def _entries(runs: Sequence[RunLike]) -> tuple[list[_Entry], dict[str, str], dict[str, str], list[str]]:
    """Rows: the model name as label, with the folder name where one model has several runs
    (every row has a label of its own: two runs of one model on different data are two rows,
    each named by its folder, never one); the column groups' names (:func:`_assign_variants`)."""
    entries = [_Entry("", r.record, r.label) if isinstance(r, RunFolder) else _Entry("", r, None) for r in runs]
    names, said, notes = _assign_variants(entries)
    count: dict[str, int] = {}
    for e in entries:
        count[model_label(e.record.model.name)] = count.get(model_label(e.record.model.name), 0) + 1
    clash = {model for model, n in count.items() if n > 1}
    labels: set[str] = set()
    for e in entries:
        model = model_label(e.record.model.name)
        e.label = model
        if model in clash:
            if e.folder is None:
                raise ConfigError(f"model {model!r} has several runs; give run folders so that their rows "
                                  f"can be told apart")
            e.label = f"{model} ({e.folder})"
            if e.label in labels:
                raise ConfigError(f"two runs of {model!r} on one task are both in folders named {e.folder!r}")
        labels.add(e.label)
    return entries, names, said, notes


def _pick_eps(name: str, tasks: list[tuple[str, TaskResult]], wanted: float | None) -> tuple[float, list[str]]:
    """The eps of a task's D/Spec columns: ``wanted``, else 0.1, else the smallest non-zero eps
    every run has; notes for runs that lack it."""
    lists = [t.eps for _, t in tasks]
    common = [e for e in lists[0] if all(any(math.isclose(e, f, abs_tol=1e-12) for f in other) for other in lists)]
    if wanted is not None:
        if not any(t.has_eps(wanted) for _, t in tasks):
            raise ConfigError(f"task {name!r}: no run has D/Spec at eps={wanted:g} (they have "
                              f"{'; '.join(sorted({eps_text(x) for x in lists}))})")
        eps = wanted
    elif any(math.isclose(DEFAULT_EPS, e) for e in common):
        eps = DEFAULT_EPS
    elif common:
        eps = ([e for e in sorted(common) if e > 0] or sorted(common))[0]
    else:
        eps = ([e for e in sorted(lists[0]) if e > 0] or sorted(lists[0]))[0]
    notes = [f"{label} on {name}: no D/Spec at eps={eps:g} (its eps: {eps_text(t.eps)}); those cells are empty"
             for label, t in tasks if not t.has_eps(eps)]
    return eps, notes


def _eps_header(label: str, eps: float, unit: str) -> str:
    return f"{label}@{eps:g}{'σ' if unit == 'sigma' else ''}"


def _column(task: TaskResult, metric: str, eps: float, prefix: str, subset: str | None = None,
            header: str | None = None, column_task: str | None = None) -> Column:
    d, name = task.metric_def(metric), column_task or task.name
    if d.eps_dependent:
        return Column(name, metric, prefix + _eps_header(d.label, eps, task.eps_unit), eps, task.eps_unit, subset,
                      d.higher_is_better)
    return Column(name, metric, prefix + (header or d.label), None, None, subset, d.higher_is_better)


def _cell(rec: _Entry, col: Column, shift: str | None = None) -> Estimate | None:
    if not rec.has_task(col.task):
        return None
    m = rec.task(col.task).metric(col.metric, col.eps, col.subset, shift)
    return None if m is None else m.estimate


def _sorted_rows(rows: list, higher_is_better: bool, column: int = 0) -> list:
    """Best first on ``column``; missing or undefined cells last."""
    def key(row):
        cell = row[1][column] if row[1] else None
        missing = cell is None or not cell.defined
        return (missing, 0.0 if missing else (-cell.value if higher_is_better else cell.value))
    return sorted(rows, key=key)


def _reply_notes(label: str, task: str, responses: int, r: JudgeReplies) -> list[str]:
    """What a judge's replies on a task were, and how they were read (fidelity) and scored."""
    notes = []
    if r.fidelity == "strict":
        notes.append(f"{label} on {task}: the judge's replies are read strictly (fidelity=strict), not as the "
                     f"official client reads them: {r.reading}")
    if r.cut_off or r.think or r.no_verdict:
        notes.append(f"{label} on {task}: of {r.calls} judge replies, {r.cut_off} were cut off by max_tokens and "
                     f"{r.think} held a <think> block, read {r.reading}; {r.no_verdict} gave no verdict "
                     f"({r.responses_no_verdict} of {responses} responses), {r.no_verdict_scored}")
    return notes


def plugin_notes(runs: Sequence[tuple[str, _Entry]]) -> list[str]:
    """A note for each plugin distribution the ``(label, entry)`` runs used in more than one version (or
    module code, for a local install): which runs used which, since their numbers may differ by it."""
    used: dict[str, dict[str, list[str]]] = {}
    for label, e in runs:
        for name, text in e.record.environment.plugin_versions().items():
            used.setdefault(name, {}).setdefault(text, []).append(label)
    return [f"plugin {name} differs between runs: " + "; ".join(f"{text} in {', '.join(labels)}"
                                                                for text, labels in texts.items())
            for name, texts in used.items() if len(texts) > 1]


def run_notes(label: str, rec: RunRecord, names: Mapping[str, str] | None = None) -> list[str]:
    """Footnotes for a run: skipped bad rows, truncated texts and judge replies, where non-zero,
    and which reading of a published file (``published:``) gave its rewards
    (a failed task is a line under its table, and a note where it leaves a column empty:
    :func:`undefined_notes`). ``names``: a task's name in the leaderboard (``ties (limit 10)``)."""
    notes = []
    for t in rec.tasks:
        name = (names or {}).get(t.name, t.name)
        if t.skipped_rows.count:
            n = t.skipped_rows.count
            notes.append(f"{label} on {name}: {n} bad data row{'s' * (n != 1)} skipped (--skip-bad-rows); "
                         f"scored on the {t.counts.groups} groups kept")
        if t.truncated_texts:
            side = rec.config.truncation
            how = f" to {rec.config.max_length} tokens on the {side}" if rec.config.max_length else ""
            notes.append(f"{label} on {name}: {t.truncated_texts} of {t.counts.responses} texts "
                         f"truncated{how} (--max-length)")
        if t.judge_replies is not None:
            notes += _reply_notes(label, name, t.counts.responses, t.judge_replies)
        elif t.unparsed:
            notes.append(f"{label} on {name}: {t.unparsed} of {t.counts.responses} responses have no reward (the "
                         f"judge's answer did not parse): left out of the pairs and the official scores")
    reading = rec.execution.model.get("reading") if rec.model.kind == "published" else None
    if isinstance(reading, str):  # which reading of a published file gave the rewards: its scores or its verdicts
        notes.append(f"{label}: {reading}")
    mode = rec.model.verdicts
    if mode is not None:
        what = ("P(the verdict follows the utility order) and P(the verdict is a tie)" if mode == "pairwise" else
                "P(the pick is the better answer) and P(neither of two equal answers is picked)")
        notes.append(f"{label} is a {mode} judge: its rewards are verdicts, so eps does not apply; its D and Spec "
                     f"are {what}, the same at every eps below one verdict (a raw gap of 1)")
    return notes


_PAIRS = {"discrimination": "pair of a better and a worse answer", "specificity": "pair of equally good answers"}
_NEEDS = {Counted.DISCRIMINATION_PAIRS: ("discrimination",), Counted.SPECIFICITY_PAIRS: ("specificity",),
          Counted.ALL_PAIRS: ("discrimination", "specificity")}
"""The pairs a metric needs, by what its ``n`` counts (ds_auc and balanced_best: both kinds)."""


def unrewarded(t: TaskResult) -> int:
    """Responses the model gave no reward (a judge's reply with no verdict, left out)."""
    return t.judge_replies.left_out if t.judge_replies is not None else (t.unparsed or 0)


def _failed_reason(t: TaskResult) -> str:
    """Why a failed task has no numbers: the model gave no reward to any (or enough) of its
    responses, else the task's error."""
    n, none = t.counts.responses, unrewarded(t)
    if none and none >= n:
        r = t.judge_replies
        replies = f" ({r.no_verdict} of its {r.calls} judge replies gave no verdict)" if r and r.no_verdict else ""
        return f"the task failed: the model gave no reward to any of its {n} responses{replies}"
    if none:
        return (f"the task failed: the model gave no reward to {none} of its {n} responses, which leaves no group "
                f"to score")
    return f"the task failed ({t.error or 'no error recorded'})"


def _data_reason(t: TaskResult, kinds: Sequence[str]) -> str:
    """Why a task's data gives no pair of ``kinds``."""
    d, e = t.counts.discrimination_pairs, t.counts.specificity_pairs
    if len(kinds) == 2:
        return "its groups hold no pair of answers (0 discrimination and 0 specificity pairs)"
    if kinds[0] == "discrimination":
        return f"its groups hold no {_PAIRS['discrimination']} (0 discrimination pairs, {e} of equally good ones)"
    why = f"its groups hold no {_PAIRS['specificity']} (0 specificity pairs, {d} of a better and a worse one)"
    if t.kind == "paired_shift":
        why += ("; an answer beside its own paraphrase is such a pair: rewrite_specificity on a "
                "rewrite_invariance task (paraphrase_invariance, in token_shift) measures it")
    return why


def _undefined_reason(col: Column, label: str, t: TaskResult) -> tuple[str | None, str] | None:
    """Why ``col`` is empty for a run's task: (None, the data's reason) or (the run's label, its
    own reason: the task failed, the model gave no reward...); None where no count says."""
    if t.status != "success":
        return label, _failed_reason(t)
    m = t.metric(col.metric, col.eps, col.subset)
    if m is None:  # not reported (an eps the run lacks: its own note)
        return None
    d = t.metric_def(col.metric)
    kinds = _NEEDS.get(d.counted) if d.counted is not None else None
    if kinds is None:
        return (None, f"0 {d.n_counts}") if m.n == 0 and not unrewarded(t) else None
    counts = {"discrimination": t.counts.discrimination_pairs, "specificity": t.counts.specificity_pairs}
    empty = [k for k in kinds if counts[k] == 0]
    if empty:
        return None, _data_reason(t, empty)
    if unrewarded(t):
        need = " or ".join(_PAIRS[k] for k in kinds)
        return label, (f"the model gave no reward to {unrewarded(t)} of its {t.counts.responses} responses (left out), "
                       f"which leaves no {need}")
    return None


def undefined_notes(columns: Sequence[Column], having: Mapping[str, Sequence[tuple[str, TaskResult]]],
                    names: Mapping[str, str] | None = None) -> list[str]:
    """Why a task's columns are empty in every run that has it, with the true reason: the task
    failed (its error; every run's, where none succeeded), the model gave no reward to any
    response or to enough of them (a judge's replies with no verdict, left out), or the data holds
    no pair of a better and a worse answer (acc, D) or of equally good answers (Spec, ds_auc,
    balanced_best, length correlation). ``having``: column group -> (row label, task) of each run
    of it; ``names``: a column group's name in headings (its header prefix)."""
    names = names or {}
    reasons: dict[str, dict[tuple[str | None, str], list[str]]] = {}
    for col in columns:
        runs = having.get(col.task, ())
        if any((m := t.metric(col.metric, col.eps, col.subset)) is not None and m.estimate.defined for _, t in runs):
            continue
        name = names.get(col.task, col.task)
        header = col.header.removeprefix(f"{name} ")
        scored = [(label, t) for label, t in runs if t.status == "success"]
        for label, t in scored or runs:  # a failed run beside runs that scored is a line under the table
            why = _undefined_reason(col, label, t)
            if why is not None:
                headers = reasons.setdefault(name, {}).setdefault(why, [])
                if header not in headers:
                    headers.append(header)
    notes = []
    for name, by_reason in reasons.items():
        for (who, reason), headers in by_reason.items():
            if who is None:
                notes.append(f"{name}: {', '.join(headers)} undefined: {reason}")
            else:
                notes.append(f"{who} on {name}: {reason}, so {', '.join(headers)} "
                             f"{'is' if len(headers) == 1 else 'are'} undefined")
    return notes


def ci_caption(entries: Sequence[_Entry], what: str = CAPTION) -> str:
    """``what``, unless runs were made with ``--bootstrap 0`` (they have no CIs): then say so."""
    without = [e.label for e in entries if e.record.config.n_bootstrap == 0]
    if not without:
        return what
    if len(without) == len(entries):
        none = "no CIs: the runs used --bootstrap 0"
        return f"value ({none})" if what.startswith("value") else none
    return f"{what}; no CI for {', '.join(without)} (--bootstrap 0)"


def _official_table(name: str, task: TaskResult, layout: OfficialLayout, entries: list[tuple[str, _Entry]],
                    eps: float, said: str = "") -> Table:
    """The official layout of column group ``name`` (``said``: what its name says beside the
    task's, ``limit 10``); a run whose task failed has no row (a line under the task's table says so)."""
    cols = [_column(task, layout.metric_of(c), eps, "", c.subset, c.label, name) for c in layout.columns]
    cols += [_column(task, m, eps, "", column_task=name) for m in layout.beside]
    rows = [((label,), tuple(_cell(rec, c) for c in cols)) for label, rec in entries
            if rec.has_task(name) and rec.task(name).status == "success"]
    total = next((i for i, c in enumerate(layout.columns) if c.subset is None and c.metric is None), 0)
    rows = _sorted_rows(rows, task.metric_def(layout.metric).higher_is_better, total)
    strict = [label for label, e in entries if e.has_task(name) and (r := e.task(name).judge_replies) is not None
              and r.fidelity == "strict"]
    reading = (f"; the judge replies of {', '.join(strict)} are read strictly (fidelity=strict), not as the official "
               f"client reads them" if strict else "")
    provenance = f", {layout.provenance}" if layout.provenance else ""
    return Table(f"{layout.title} ({', '.join(filter(None, (task.name, said)))}): official layout", ("model",),
                 tuple(cols), tuple(rows),
                 f"{possessive(layout.title)} own scores{provenance}{reading}; "
                 + ci_caption([e for _, e in entries if e.has_task(name)], "95% bootstrap CIs"))


def _shift_table(task_order: list[str], entries: list[tuple[str, _Entry]], first: dict[str, TaskResult],
                 eps_by_task: dict[str, tuple[float, str]], names: Mapping[str, str] | None = None) -> Table | None:
    rows = []
    columns: tuple[Column, ...] = ()
    for name in task_order:
        task = first[name]
        if not task.shifts:
            continue
        cols = tuple(_column(task, m, eps_by_task[name][0], "", column_task=name) for m in SHIFT_METRICS)
        columns = columns or tuple(Column("", c.metric, c.header.replace(
            "acc gap", "acc gap (shifted - original)"), c.eps, c.eps_unit) for c in cols)
        for label, rec in entries:
            if not rec.has_task(name):
                continue
            for shift in rec.task(name).shifts:
                rows.append(((label, (names or {}).get(name, name), shift_label(rec.task(name), shift)),
                             tuple(_cell(rec, c, shift) for c in cols)))
    if not rows:
        return None
    having = [e for _, e in entries if any(e.has_task(n) for n in task_order)]
    gap = [j for j, c in enumerate(columns) if c.metric.endswith("_shift_gap")]
    paired = any(defined_cell(cells[j]) for _, cells in rows for j in gap)
    kinds = {first[n].kind for n in task_order if first[n].shifts}
    parts = []
    if kinds - {"domain_shift"}:
        parts.append("shift 'none' = the originals" + ("; the gap pairs each shifted group with its original"
                                                       if paired else ""))
    if "domain_shift" in kinds:
        parts.append("a domain shift's slices are separate data beside its in-domain set, not paired copies, and "
                     "its D@eps uses one sigma pooled over every domain (the same reward difference in every slice), "
                     "so a domain whose rewards spread less than the others' shows a lower D at the same eps: compare "
                     "accuracy across domains, D within one")
    parts.append(ci_caption(having, "paired bootstrap 95% CI") if paired else ci_caption(having))
    caption = "; ".join(parts)
    return Table("Original vs shifted", ("model", "task", "shift"), columns, tuple(rows), caption)


def shift_label(task: TaskResult, shift: str) -> str:
    """A shift slice's name in a table: a domain shift's originals are its in-domain set."""
    if shift == "none" and task.kind == "domain_shift":
        return f"in-domain ({task.args.get('in_domain', 'chat')})"
    return shift


def missing_subset_notes(official: Sequence[tuple[str, Table]], first: dict[str, TaskResult],
                         names: Mapping[str, str] | None = None) -> list[str]:
    """A note for each row of an official table that lacks some of the benchmark's subsets (a
    file with RewardBench 2's Ties rows alone): its overall score then averages only the subsets
    present, and is not the benchmark's score."""
    out = []
    for name, table in official:
        layout = first[name].official
        assert layout is not None  # an official table is made only for a task with an official layout
        subset_cols = [j for j, c in enumerate(table.columns) if c.subset is not None]
        total = next((c.header for c in table.columns if c.subset is None and c.metric == layout.metric),
                     "score")
        shown = (names or {}).get(name, name)
        for keys, cells in table.rows:
            missing = [table.columns[j].header for j in subset_cols if cells[j] is None]
            if missing:
                out.append(f"{shown} ({keys[0]}): {len(missing)} of its {len(subset_cols)} subset columns have no rows "
                           "in "
                           f"this data ({', '.join(missing)}), so its {total} averages only the subsets present and "
                           f"is not {possessive(layout.title)} score")
    return out


def task_legend(name: str, task: TaskResult, eps: float) -> str:
    """What a column group's name (``ties``, ``ties (limit 10)``) stands for: kind, version, data,
    score arguments, metric version, eps and task key."""
    unit = "σ" if task.eps_unit == "sigma" else " (raw reward units)"
    what = f"{task.kind} task v{task.version}" + (f" {task.name!r}" if not name.startswith(task.name) else "")
    scored_by = f", {score_args_text(task.score_args)}" if task.score_args else ""
    return (f"{name}: {what}, data {task.data_fingerprint[:12]} "
            f"({task.counts.groups} groups){scored_by}, metric version {task.metric_version}, "
            f"D/Spec at eps {eps:g}{unit}; "
            f"task key {task.task_key[:12]}")


def gives_verdicts(record: RunRecord) -> bool:
    """Whether a run's rewards are verdicts: a judge's (``model.verdicts``), or a published file
    read as verdicts (``execution.model.rewards``)."""
    return record.model.verdicts is not None or (
        record.model.kind == "published" and record.execution.model.get("rewards") in ("verdicts", "mixed"))


def _tie_rule(name: str, having: Sequence[tuple[str, TaskResult]], ordered: Sequence[tuple[str, _Entry]],
              official_shown: bool) -> str:
    """``; {how the official table and acc each count a cancelled verdict}`` for a task whose
    official table is shown beside ``acc`` for a verdict model and counts a tie otherwise
    (:func:`rmbench.core.judgebench.counts_ties_apart`), else empty."""
    from rmbench.core.judgebench import CANCELLED_VERDICT_RULE, counts_ties_apart

    records = dict((label, e.record) for label, e in ordered)
    verdict_runs = [t for label, t in having if t.status == "success" and gives_verdicts(records[label])
                    and counts_ties_apart(t.kind, t.args, t.official)]
    return f"; {CANCELLED_VERDICT_RULE}" if official_shown and verdict_runs else ""


def _sources(entries: list[_Entry]) -> dict[str, RowSource]:
    return {e.label: RowSource(e.record.model.name, json.dumps(e.record.model.spec, sort_keys=True, default=str),
                               e.folder) for e in entries}


def build_leaderboard(runs: Sequence[RunLike], eps: float | None = None, layout: str = "auto",
                      metrics: Sequence[str] = ()) -> Leaderboard:
    """One leaderboard over ``runs`` (records, or folders read by :func:`rmbench.results.storage.folder.load_run`);
    ``layout``: one of :data:`LAYOUTS`. Rows of one model identity with the same numbers are folded;
    a run whose task failed is a line under the task's table, never a row of empty cells.
    ``metrics`` (``--metrics``): more columns, each task's after its headline's, where a run
    reports the metric for the task; a name no run reports is an error. Labels, directions and
    eps dependence come from the runs' records of the metrics' declarations."""
    if not runs:
        raise ConfigError("no runs given")
    if layout not in LAYOUTS:
        raise ConfigError(f"unknown leaderboard layout {layout!r}; use one of {', '.join(LAYOUTS)}")
    entries, names, said, notes = _entries(runs)
    task_order = list(names)
    first: dict[str, TaskResult] = {}
    eps_by_task: dict[str, tuple[float, str]] = {}
    scored: set[str] = set()
    for name in task_order:
        having = [(e.label, e.task(name)) for e in entries if e.has_task(name)]
        ok = [(label, t) for label, t in having if t.status == "success"]
        scored |= {name} if ok else set()
        first[name] = (ok or having)[0][1]
        chosen, eps_notes = _pick_eps(names[name], ok or having, eps)
        eps_by_task[name] = (chosen, first[name].eps_unit)
        notes += eps_notes
    columns: list[Column] = []
    extra = _extra_metrics(entries, metrics)
    for name in task_order:
        shown = list(dict.fromkeys(m for e in entries if e.has_task(name) for m in e.task(name).headline))
        shown += [m for m in extra if m not in shown and any(_reports(e.task(name), m) for e in entries
                                                             if e.has_task(name))]
        columns += [_column(first[name], m, eps_by_task[name][0], f"{names[name]} ", column_task=name)
                    for m in shown]
    keep = [j for j, c in enumerate(columns) if c.task in scored]  # a group whose every run failed: lines only
    by_label = {e.label: e for e in entries}
    rows = [((e.label,), tuple(_cell(e, c) for c in columns)) for e in entries]
    rows = _sorted_rows(rows, columns[keep[0]].higher_is_better is not False if keep else True,
                        keep[0] if keep else 0)
    ordered = [(r[0][0], by_label[r[0][0]]) for r in rows]
    failed = tuple(FailedRun(e.record.model.name, e.folder, name, names[name], e.task(name).error or "(no error)")
                   for name in task_order for _, e in ordered if e.has_task(name) and e.task(name).status != "success")
    caption = ci_caption(entries)
    one = Table("rmbench leaderboard", ("model",), tuple(columns[j] for j in keep),
                tuple((k, tuple(cells[j] for j in keep)) for k, cells in rows
                      if any(cells[j] is not None for j in keep)
                      or all(t.status == "success" for t in by_label[k[0]].tasks.values())), caption, failed)
    named_official = []
    for name in task_order:
        official_layout = first[name].official
        if official_layout is None or len(official_layout.columns) <= 1:  # a one-number layout is in the main table
            continue
        table = _official_table(name, first[name], official_layout, ordered, eps_by_task[name][0], said[name])
        if any(any(c is not None for c in cells) for _, cells in table.rows):  # never headers alone
            named_official.append((name, table))
    official = tuple(table for _, table in named_official)
    having_by_task = {name: [(label, e.task(name)) for label, e in ordered if e.has_task(name)] for name in task_order}
    notes = ([n for label, e in ordered for n in run_notes(label, e.record, _run_names(e, names))] + notes
             + plugin_notes(ordered) + undefined_notes(columns, having_by_task, names))
    notes += missing_subset_notes(named_official, first, names)
    readings = [first[columns[j].task].metric_def(columns[j].metric).reading for j in keep]
    notes += list(dict.fromkeys(r for r in readings if r))
    keys = {name: first[name].task_key for name in task_order}
    legend = tuple(task_legend(names[name], first[name], eps_by_task[name][0])
                   + _tie_rule(name, having_by_task[name], ordered, name in dict(named_official))
                   for name in task_order)
    sources = _sources(entries)
    per_task = layout == "per-task" or (layout == "auto" and len(task_order) > 1
                                        and len(keep) > MAX_ONE_TABLE_COLUMNS)
    full = Table(one.title, one.key_headers, tuple(columns), tuple(rows), caption, failed)
    headline = split_by_task(full, names) if per_task and columns else (one,)
    headline = tuple(fold_rows(t, sources) for t in headline)
    shifts = _shift_table(task_order, ordered, first, eps_by_task, names)
    return Leaderboard(headline[0], tuple(fold_rows(t, sources) for t in official),
                       None if shifts is None else fold_rows(without_empty_columns(shifts), sources), eps_by_task, keys,
                       tuple(notes), headline[1:], legend, names)


def _reports(t: TaskResult, metric: str) -> bool:
    return any(m.metric == metric for m in t.metrics)


def _extra_metrics(entries: Sequence[_Entry], metrics: Sequence[str]) -> list[str]:
    """``--metrics``, each once; a name that no run reports for any task is refused, with the
    nearest reported names."""
    wanted = list(dict.fromkeys(m.strip() for m in metrics if m.strip()))
    reported = {m.metric for e in entries for t in e.tasks.values() for m in t.metrics}
    for m in wanted:
        if m not in reported:
            raise ConfigError(f"--metrics: no run reports a metric {m!r}{did_you_mean(m, reported)}")
    return wanted


def _run_names(e: _Entry, names: Mapping[str, str]) -> dict[str, str]:
    """A run's tasks by their names in the leaderboard (``ties`` -> ``ties (limit 10)``)."""
    return {t.name: names[key] for key, t in e.tasks.items()}
