"""The lines under a leaderboard's headline tables: the notes, each saying what differs between
the runs or what a number does not mean.

In order: each run's own (skipped rows, truncated texts, a judge's replies, the reading of a
published file: :func:`run_notes`), the column groups that cannot share cells (their task keys
differ: :func:`variant_notes`), runs that lack a group's eps, plugins in several versions
(:func:`plugin_notes`), columns empty in every run with the true reason (:func:`undefined_notes`),
official tables whose rows lack subsets (:func:`missing_subset_notes`), and how a metric is read
where its declaration says so. :func:`build_notes` puts them together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rmbench.core.judge_replies import JudgeReplies
from rmbench.core.metric_registry import Counted
from rmbench.results.publishing.leaderboard_groups import ColumnGroup, RunEntry, eps_notes, possessive
from rmbench.results.publishing.leaderboard_headline import Headline
from rmbench.results.publishing.leaderboard_tables import Column, Table
from rmbench.results.storage.record import RunRecord, TaskResult


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


def plugin_notes(runs: Sequence[RunEntry]) -> list[str]:
    """A note for each plugin distribution the runs used in more than one version (or module code,
    for a local install): which runs used which, since their numbers may differ by it."""
    used: dict[str, dict[str, list[str]]] = {}
    for e in runs:
        for name, text in e.record.environment.plugin_versions().items():
            used.setdefault(name, {}).setdefault(text, []).append(e.label)
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


def missing_subset_notes(official: Sequence[tuple[ColumnGroup, Table]]) -> list[str]:
    """A note for each row of an official table (one row per run, not folded) that lacks some of
    the benchmark's subsets (a file with RewardBench 2's Ties rows alone): its overall score then
    averages only the subsets present, and is not the benchmark's score."""
    out = []
    for group, table in official:
        layout = group.first.official
        assert layout is not None  # an official table is made only for a task with an official layout
        subset_cols = [j for j, c in enumerate(table.columns) if c.subset is not None]
        total = next((c.header for c in table.columns if c.subset is None and c.metric == layout.metric),
                     "score")
        for keys, cells in table.rows:
            missing = [table.columns[j].header for j in subset_cols if cells[j] is None]
            if missing:
                out.append(f"{group.heading} ({keys[0]}): {len(missing)} of its {len(subset_cols)} subset columns "
                           f"have no rows in this data ({', '.join(missing)}), so its {total} averages only the "
                           f"subsets present and is not {possessive(layout.title)} score")
    return out


def variant_notes(groups: Sequence[ColumnGroup]) -> list[str]:
    """A note for each column group after its task's first: ``GROUP of RUN cannot share cells with
    FIRST of RUN0: DIFFERENCES``, each difference naming both values in the order of the names
    (this group's value, then the first group's: ``eps unit raw vs sigma``)."""
    first = {g.task: g for g in groups if g.key == g.task}
    return [f"{g.heading} of {g.first_entry.where} cannot share cells with {first[g.task].heading} of "
            f"{first[g.task].first_entry.where}: {'; '.join(g.first.differences(first[g.task].first))}; shown apart"
            for g in groups if g.key != g.task]


def _run_names(e: RunEntry, groups: Sequence[ColumnGroup]) -> dict[str, str]:
    """A run's tasks by their names in the leaderboard (``ties`` -> ``ties (limit 10)``)."""
    headings = {g.key: g.heading for g in groups}
    return {t.name: headings[key] for key, t in e.tasks.items()}


def build_notes(groups: Sequence[ColumnGroup], headline: Headline,
                official: Sequence[tuple[ColumnGroup, Table]]) -> tuple[str, ...]:
    """Every note, in order (see the module's docstring). ``groups``: as
    :func:`~rmbench.results.publishing.leaderboard_groups.column_groups` made them (their runs in
    the order given); ``official``: the official tables, rows not folded."""
    by_key = {g.key: g for g in groups}
    in_rows = [g.in_order(headline.order) for g in groups]
    notes = [n for e in headline.order for n in run_notes(e.label, e.record, _run_names(e, groups))]
    notes += variant_notes(groups)
    notes += [n for g in groups for n in eps_notes(g)]
    notes += plugin_notes(headline.order)
    notes += undefined_notes(headline.columns, {g.key: g.labelled for g in in_rows},
                             {g.key: g.heading for g in groups})
    notes += missing_subset_notes(official)
    readings = [by_key[c.task].first.metric_def(c.metric).reading for c in headline.shown]
    notes += list(dict.fromkeys(r for r in readings if r))
    return tuple(notes)
