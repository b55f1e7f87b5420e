"""Run folders on disk: ``results.json`` (the :class:`~rmbench.results.storage.record.RunRecord`),
``rewards.jsonl`` (one reward per response) and the rules that keep results from being lost.

* :func:`read_run` is the one reader: it validates every field (a bad file names the file and
  the field, :class:`~rmbench.results.storage.fields.Fields`; a status, an eps unit or a
  truncation side must be a word of its :mod:`rmbench.core.choices` set) and migrates older
  schemas (version 1, written before the typed record) to the current one, so every consumer
  sees the same :class:`RunRecord`.
* :func:`write_run` writes rewards.jsonl, then results.json, each atomically, and refuses to
  replace a folder that holds a *different* run (another model, other tasks or another
  comparability key) unless ``overwrite``; re-running the same command replaces its own run.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rmbench.core.choices import EPS_UNITS, RUN_STATUSES, TASK_STATUSES, TRUNCATION_SIDES
from rmbench.core.judge_replies import JudgeReplies
from rmbench.core.metric_registry import (
    DEFAULT_HEADLINE,
    RB1_LAYOUT,
    RB2_LAYOUT,
    TIES_LAYOUT,
    MetricSpec,
    OfficialColumn,
    OfficialLayout,
)
from rmbench.errors import ConfigError, write_error_text
from rmbench.files import atomic_write_text, json_error_text, signals_deferred
from rmbench.registry import PluginSource
from rmbench.results.storage.engine_stats import EngineStats
from rmbench.results.storage.fields import Fields
from rmbench.results.storage.record import (
    SCHEMA_VERSION,
    Counts,
    Environment,
    Execution,
    MetricRecord,
    ModelIdentity,
    RunConfig,
    RunIdentity,
    RunRecord,
    SkippedRow,
    SkippedRows,
    TaskResult,
)
from rmbench.results.storage.rewards_file import REWARDS_FILE, RewardRow, load_rewards

RESULTS_FILE = "results.json"
JUDGMENTS_FILE = "judgments.jsonl"
"""An LLM judge's calls: one JSON row per call (task, group, response, mode, order or slot, the
prompt's hash, the raw text, the parsed value, tokens, latency, retries, whether it was cached)."""
READABLE_SCHEMAS = (1, 2)


# --- writing ------------------------------------------------------------------------------

def task_to_json(t: TaskResult) -> dict:
    return {
        "name": t.name, "kind": t.kind, "version": t.version, "args": dict(t.args), "status": t.status,
        "error": t.error, "data_fingerprint": t.data_fingerprint,
        **({"score_args": dict(t.score_args)} if t.score_args else {}), "task_key": t.task_key,
        "comparability_key": t.comparability_key, "metric_version": t.metric_version, "eps": list(t.eps),
        "eps_unit": t.eps_unit, "counts": vars(t.counts).copy(), "sigma": t.sigma,
        "skipped_rows": {"count": t.skipped_rows.count, "first": [vars(r).copy() for r in t.skipped_rows.first]},
        "truncated_texts": t.truncated_texts, **({"unparsed": t.unparsed} if t.unparsed is not None else {}),
        **({"judge_replies": t.judge_replies.to_json()} if t.judge_replies is not None else {}),
        "headline": list(t.headline),
        "official": t.official.to_json() if t.official else None,
        **({"metric_specs": [m.to_json() for m in t.metric_specs]} if t.metric_specs else {}),
        "metrics": [m.to_json() for m in t.metrics],
    }


def record_to_json(run: RunRecord) -> dict:
    c, x, e = run.config, run.execution, run.environment
    return {
        "schema_version": run.schema_version, "status": run.status, "rmbench_version": run.rmbench_version,
        "created": run.created,
        "model": {"name": run.model.name, "spec": dict(run.model.spec), "fingerprint": run.model.fingerprint},
        "tasks": [task_to_json(t) for t in run.tasks],
        "config": {"eps": list(c.eps), "eps_unit": c.eps_unit, "limit": c.limit, "skip_bad_rows": c.skip_bad_rows,
                   "max_length": c.max_length, "truncation": c.truncation, "n_bootstrap": c.n_bootstrap,
                   "seed": c.seed, "metric_version": c.metric_version, "ci_level": c.ci_level, "data": dict(c.data),
                   **({"limit_sampling": c.limit_sampling} if c.limit_sampling is not None else {})},
        "execution": {"runtime": dict(x.runtime), "model": dict(x.model), "backend": dict(x.backend),
                      "stats": x.stats.to_json() if x.stats is not None else {}, "cache": x.cache},
        "environment": {"python": e.python, "platform": e.platform, "packages": dict(e.packages),
                        "git_revision": e.git_revision, "git_dirty": e.git_dirty, "git_root": e.git_root,
                        "plugins": [p.to_json() for p in e.plugins]},
    }


def existing_run(out_dir: str | Path) -> RunRecord | None:
    """The run a folder already holds (None for a new folder); an unreadable one is refused."""
    file = Path(out_dir) / RESULTS_FILE
    if not file.exists():
        return None
    try:
        return read_run(file)
    except ConfigError as exc:
        raise ConfigError(f"{out_dir} already holds a results.json that cannot be read ({exc}); "
                          f"pass --overwrite to replace it, or choose another --out") from None


def check_writable(out_dir: Path) -> None:
    """``out_dir`` can become a run folder: it is a folder (or can be made one) that may be written."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"--out {out_dir} is a file, not a folder; give a folder for the run (it is created)")
    ancestor = out_dir
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ConfigError(f"--out {out_dir}: {ancestor} is a file, so no folder can be made under it")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ConfigError(f"--out {out_dir}: {ancestor} is not writable; choose another --out")


@dataclass(frozen=True)
class Destination:
    """A run folder :func:`check_destination` accepted for the run of ``identity``: its writer
    holds the folder's lock (:mod:`rmbench.results.storage.folder_lock`) from the check until
    :func:`write_run` has written it, so the check stands and is not made again."""

    path: Path
    identity: RunIdentity


def check_destination(out_dir: str | Path, identity: RunIdentity, overwrite: bool = False) -> Destination:
    """Refuse (ConfigError) when ``out_dir`` cannot be a run folder (a file, under a file, not
    writable) or holds a different run and ``overwrite`` is off. Called before any scoring,
    under the folder's lock; the run is written to the :class:`Destination` it returns."""
    check_writable(Path(out_dir))
    old = None if overwrite else existing_run(out_dir)
    if old is not None and (differences := old.identity.differences(identity)):
        raise ConfigError(f"{out_dir} holds another run ({'; '.join(differences)}; written {old.created}); pass "
                          f"--overwrite to replace it, or choose another --out (or --name)")
    return Destination(Path(out_dir), identity)


def write_run(out_dir: str | Path | Destination, run: RunRecord, rewards: Iterable[RewardRow],
              overwrite: bool = False, judgments: Sequence[dict] | None = None) -> Path:
    """Write rewards.jsonl (and an LLM judge's judgments.jsonl), then results.json; returns the
    results.json path. ``out_dir``: a folder, checked here (:func:`check_destination`), or the
    :class:`Destination` of a check made for this run (the caller holds the folder's lock).

    An earlier run's results.json goes first: killed in between (SIGKILL, a crash), the folder
    must not pair the old results with the new rewards (no results.json means the run did not
    finish). Ctrl-C and SIGTERM wait until both files are written (:func:`signals_deferred`).
    """
    if not isinstance(out_dir, Destination):
        out_dir = check_destination(out_dir, run.identity, overwrite)
    elif out_dir.identity.differences(run.identity):  # a caller's mistake, not a user's
        raise ValueError(f"{out_dir.path} was checked for another run: "
                         f"{'; '.join(out_dir.identity.differences(run.identity))}")
    out = out_dir.path
    lines = [json.dumps({"task": r.task, "group_id": r.group_id, "response_index": r.response_index,
                         "utility": r.utility, "reward": None if math.isnan(r.reward) else r.reward},
                        ensure_ascii=False) for r in rewards]  # null: no reward (a judge's unparsed answer)
    path = out / RESULTS_FILE
    text = json.dumps(record_to_json(run), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    try:
        with signals_deferred():  # Ctrl-C or SIGTERM now takes effect after both files, never between
            path.unlink(missing_ok=True)
            atomic_write_text(out / REWARDS_FILE, "\n".join(lines) + ("\n" if lines else ""))
            if judgments is not None:
                atomic_write_text(out / JUDGMENTS_FILE, "".join(json.dumps(j, ensure_ascii=False) + "\n"
                                                                for j in judgments))
            else:
                (out / JUDGMENTS_FILE).unlink(missing_ok=True)  # an earlier judge run's, overwritten
            atomic_write_text(path, text)
    except OSError as exc:  # a full disk, a folder gone read-only: no half file is left (atomic writes)
        where = f" ({exc.filename})" if exc.filename else ""
        kept = ("every call the judge call cache kept" if judgments is not None  # a judge keeps calls, not scores
                else "every score the score cache kept")
        raise ConfigError(f"cannot write the run to {out}{where}: {write_error_text(exc)}; no results.json was written "
                          f"there. The same command with another --out reuses {kept} (all of them, unless "
                          f"--no-cache or a warning above said the cache was off)") from None
    return path


# --- reading ------------------------------------------------------------------------------

def _metric(f: Fields) -> MetricRecord:
    for k in ("task", "subset", "shift", "metric", "eps", "eps_unit", "value", "ci_low", "ci_high", "n"):
        if k not in f.data:
            raise f.fail(k, "missing")
    f.string("task"), f.opt_string("subset"), f.opt_string("shift"), f.string("metric")
    f.opt_word("eps_unit", EPS_UNITS)
    f.opt_number("eps"), f.opt_number("value"), f.opt_number("ci_low"), f.opt_number("ci_high"), f.integer("n")
    return MetricRecord.from_json(f.data)


def _metric_spec(f: Fields) -> MetricSpec:
    return MetricSpec(f.string("name"), f.string("label"), bool(f.get("higher_is_better", (bool,))),
                      bool(f.get("eps_dependent", (bool,))), f.string("n_counts"),
                      bool(f.get("official", (bool,), False)), f.opt_string("reading"),
                      _plugin(f.obj("plugin")) if "plugin" in f.data else None)


def _layout(f: Fields) -> OfficialLayout:
    """A task's official layout as written, its provenance too (absent: none, which claims nothing)."""
    o = f.obj("official")
    columns = tuple(OfficialColumn(c.string("label"), c.opt_string("subset"), c.opt_string("metric"))
                    for c in o.items("columns"))
    return OfficialLayout(o.string("title"), o.string("metric"), columns, o.strings("beside", ()),
                          o.opt_string("provenance"))


def _layout_for_v1(metrics: Sequence[MetricRecord]) -> OfficialLayout | None:
    """Version 1 did not record a task's official layout: take the one whose score it has."""
    names = {m.metric for m in metrics}
    return next((layout for layout in (RB2_LAYOUT, RB1_LAYOUT, TIES_LAYOUT) if layout.metric in names), None)


def _task(f: Fields, config: RunConfig, metrics: Sequence[MetricRecord] | None) -> TaskResult:
    counts = f.obj("counts")
    skipped = f.obj("skipped_rows", required=False)
    first = tuple(SkippedRow(r.opt_string("path"), r.opt_integer("line"), r.opt_string("field"), r.string("error"))
                  for r in skipped.items("first", []))
    name = f.string("name")
    if metrics is None:  # version 2: the task holds its records
        records = tuple(_metric(m) for m in f.items("metrics"))
        layout = _layout(f) if f.data.get("official") is not None else None
        headline = f.strings("headline", DEFAULT_HEADLINE)
        eps, eps_unit, metric_version = f.numbers("eps"), f.word("eps_unit", EPS_UNITS), f.integer("metric_version")
    else:  # version 1: records were one list for the run; every task had the run's eps
        records = tuple(m for m in metrics if m.task == name)
        layout = _layout_for_v1(records)
        headline = DEFAULT_HEADLINE + ((layout.metric,) if layout else ())
        eps, eps_unit, metric_version = config.eps, config.eps_unit, config.metric_version
    status = f.word("status", TASK_STATUSES, "success")
    task = TaskResult(
        name=name, kind=f.string("kind", ""), version=f.integer("version", 0),
        args=f.mapping("args"), data_fingerprint=f.string("data_fingerprint"),
        metric_version=metric_version, eps=eps, eps_unit=eps_unit,
        counts=Counts(counts.integer("groups"), counts.integer("responses"),
                      counts.integer("discrimination_pairs", 0), counts.integer("specificity_pairs", 0)),
        sigma=f.opt_number("sigma"), metrics=records,
        skipped_rows=SkippedRows(skipped.integer("count", 0), first),
        truncated_texts=f.opt_integer("truncated_texts"), headline=headline, official=layout, status=status,
        error=f.opt_string("error"), unparsed=f.opt_integer("unparsed"), judge_replies=_judge_replies(f),
        metric_specs=tuple(_metric_spec(m) for m in f.items("metric_specs", [])), score_args=f.mapping("score_args"))
    recorded = f.data.get("comparability_key")
    if metrics is None and recorded is not None and recorded != task.comparability_key:
        raise f.fail("comparability_key", "does not match the task's fields (the file was edited?)")
    return task


def _config(f: Fields) -> RunConfig:
    data = f.mapping("data")
    return RunConfig(eps=f.numbers("eps", (0.0, 0.1)), eps_unit=f.word("eps_unit", EPS_UNITS, "sigma"),
                     limit=f.opt_integer("limit"), skip_bad_rows=bool(f.get("skip_bad_rows", (bool,), False)),
                     max_length=f.opt_integer("max_length"), truncation=f.word("truncation", TRUNCATION_SIDES, "left"),
                     n_bootstrap=f.integer("n_bootstrap", 1000), seed=f.integer("seed", 0),
                     metric_version=f.integer("metric_version", 1), ci_level=f.number("ci_level", 0.95),
                     data={str(k): str(v) for k, v in data.items()},
                     limit_sampling=f.opt_string("limit_sampling"))


def _stats(execution: Fields) -> EngineStats | None:
    """``execution.stats`` (None when a file recorded none: it is written back as ``{}``)."""
    stats = execution.mapping("stats")
    if not stats:
        return None
    try:
        return EngineStats.from_json(stats)
    except ValueError as exc:
        raise execution.obj("stats").fail(*exc.args) from None


def _plugins(env: Fields) -> tuple[PluginSource, ...]:
    """``environment.plugins``: name, version, module and sha256 (a local install's, else null) each;
    none in files written before plugins were recorded."""
    return tuple(_plugin(p) for p in env.items("plugins", []))


def _plugin(p: Fields) -> PluginSource:
    return PluginSource(p.string("name"), p.string("version"), p.string("module", ""), p.opt_string("sha256"))


def parse_record(data: Any, file: Path) -> RunRecord:
    """Validate a results.json document (any readable schema) and build the current record."""
    top = Fields(data, file, "")
    version = top.integer("schema_version")
    if version not in READABLE_SCHEMAS:
        raise top.fail("schema_version", f"{version} is not supported (this rmbench reads versions "
                                         f"{', '.join(map(str, READABLE_SCHEMAS))}; a newer rmbench wrote it?)")
    model = top.obj("model")
    config = _config(top.obj("config", required=False))
    v1_metrics = tuple(_metric(m) for m in top.items("metrics")) if version == 1 else None
    tasks = tuple(_task(t, config, v1_metrics) for t in top.items("tasks"))
    execution = top.obj("execution" if version >= 2 else "engine", required=False)
    env = top.obj("environment", required=False)
    status = top.word("status", RUN_STATUSES, "success")
    return RunRecord(
        rmbench_version=top.string("rmbench_version"), created=top.string("created"),
        model=ModelIdentity(model.string("name"), model.mapping("spec"), model.string("fingerprint", "")),
        tasks=tasks, config=config,
        execution=Execution(execution.mapping("runtime"), execution.mapping("model"), execution.mapping("backend"),
                            _stats(execution), execution.opt_string("cache")),
        environment=Environment(env.string("python", ""), env.string("platform", ""), env.mapping("packages"),
                                env.opt_string("git_revision"), env.get("git_dirty", (bool, type(None)), None),
                                env.opt_string("git_root"), _plugins(env)),
        status=status, schema_version=SCHEMA_VERSION)


@dataclass(frozen=True)
class RunFolder:
    """A run read from disk: its record and where it lies (for its rewards.jsonl)."""

    path: Path
    """The run's folder (its ``results.json``, ``rewards.jsonl``, ...)."""
    record: RunRecord
    """The run's record, as ``results.json`` holds it."""

    @property
    def label(self) -> str:
        """The folder's name, how listings name the run."""
        return self.path.name

    def rewards(self) -> list[RewardRow]:
        """Every scored response's reward (``rewards.jsonl``)."""
        return load_rewards(self.path)

    def judgments(self) -> list[dict[str, Any]]:
        """An LLM judge's calls (judgments.jsonl: one JSON object per call), or [] for a run
        without them; a line that is not JSON is a one-line error naming the file and line."""
        file = self.path / JUDGMENTS_FILE
        if not file.is_file():
            return []
        out = []
        with file.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    try:
                        out.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise ConfigError(f"{file}, line {n}: not valid JSON ({json_error_text(exc)})") from None
        return out


def _results_file(path: str | Path) -> Path:
    p = Path(path)
    return p / RESULTS_FILE if p.is_dir() else p


def read_run(path: str | Path) -> RunRecord:
    """Read and validate a run folder's results.json (or the file itself), migrating old schemas."""
    return load_run(path).record


def load_run(path: str | Path) -> RunFolder:
    p = Path(path)
    file = _results_file(p)
    if not file.is_file():
        raise ConfigError(f"{file}: no such file (is {p} a run folder written by 'rmbench eval'?)")
    try:
        data: Any = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{file}, line {exc.lineno}: not valid JSON ({json_error_text(exc)})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{file}: not UTF-8 text (byte {exc.start + 1})") from None
    return RunFolder(file.parent, parse_record(data, file))


def find_runs(paths: Sequence[str | Path]) -> list[RunFolder]:
    """Every run folder among ``paths``: a run folder itself (or its results.json), or every run
    folder under a folder. Other files (a shell's ``runs/*`` also names the leaderboards rmbench
    writes beside the run folders) are passed over when the other paths hold runs; paths that
    hold none are one error naming them."""
    out: list[RunFolder] = []
    other: list[Path] = []
    for p in map(Path, paths):
        if p.is_file() and p.name != RESULTS_FILE:
            other.append(p)
        elif p.is_dir() and not (p / RESULTS_FILE).is_file():
            found = sorted(f.parent for f in p.rglob(RESULTS_FILE))
            if not found:
                raise ConfigError(f"{p}: no run folders under it (no results.json)")
            out += [load_run(f) for f in found]
        else:
            out.append(load_run(p))
    if other and not out:
        raise ConfigError(f"{other[0]} is a file, not a run folder (a run folder holds {RESULTS_FILE}); give run "
                          f"folders, or a folder that holds them")
    return out


def _judge_replies(f: Fields) -> JudgeReplies | None:
    """A task's ``judge_replies`` (absent in files of models that call no judge, and in older files)."""
    if f.data.get("judge_replies") is None:
        return None
    r = f.obj("judge_replies")
    return JudgeReplies(fidelity=r.string("fidelity"), calls=r.integer("calls"), cut_off=r.integer("cut_off"),
                        think=r.integer("think"), no_verdict=r.integer("no_verdict"),
                        responses_no_verdict=r.integer("responses_no_verdict"), left_out=r.integer("left_out"),
                        reading=r.string("reading", ""), no_verdict_scored=r.string("no_verdict_scored", ""))
