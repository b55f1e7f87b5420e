"""The run record: results.json (a versioned contract other tools read) and rewards.jsonl.

Files are written to a temporary name and renamed into place, results.json last, so a run
folder never holds a half-written file and a results.json means the run finished.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from rmbench.errors import ConfigError
from rmbench.summary import MetricRecord
from rmbench.types import canonical_json, sha256_hex

SCHEMA_VERSION = 1
KEY_VERSION = 1
"""Version of the comparability key's recipe; bump it when the recipe changes."""

RESULTS_FILE = "results.json"
REWARDS_FILE = "rewards.jsonl"


def comparability_key(task_name: str, task_version: int, data_fingerprint: str, metric_version: int,
                      eps: Sequence[float], eps_unit: str) -> str:
    """sha256 over exactly what changes the scores of a task, and nothing else.

    Task name and version, the data fingerprint, the metric version and the eps spec (unit and
    the sorted eps values). Not the batch size, device, seed of the CIs, or rmbench version.
    """
    payload = {"key_version": KEY_VERSION, "task": task_name, "task_version": int(task_version),
               "data": data_fingerprint, "metric_version": int(metric_version),
               "eps": sorted(float(e) for e in eps), "eps_unit": eps_unit}
    return sha256_hex(canonical_json(payload))


def atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual permissions
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@dataclass(frozen=True)
class RewardRow:
    task: str
    group_id: str
    response_index: int
    utility: int
    reward: float


def write_run(out_dir: str | Path, results: dict, rewards: Iterable[RewardRow]) -> Path:
    """Write rewards.jsonl, then results.json; returns the results.json path.

    An earlier run's results.json goes first: killed in between, the folder must not pair the
    old results with the new rewards (no results.json means the run did not finish).
    """
    out = Path(out_dir)
    lines = [json.dumps({"task": r.task, "group_id": r.group_id, "response_index": r.response_index,
                         "utility": r.utility, "reward": r.reward}, ensure_ascii=False) for r in rewards]
    path = out / RESULTS_FILE
    path.unlink(missing_ok=True)
    atomic_write_text(out / REWARDS_FILE, "\n".join(lines) + ("\n" if lines else ""))
    atomic_write_text(path, json.dumps(results, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    return path


@dataclass(frozen=True)
class LoadedRun:
    path: Path
    results: dict

    @property
    def model_name(self) -> str:
        return self.results["model"]["name"]

    @property
    def metrics(self) -> list[MetricRecord]:
        return [MetricRecord.from_json(m) for m in self.results["metrics"]]

    def task(self, name: str) -> dict | None:
        return next((t for t in self.results["tasks"] if t["name"] == name), None)


_REQUIRED = ("schema_version", "rmbench_version", "created", "model", "tasks", "metrics")


def load_run(path: str | Path) -> LoadedRun:
    """Read a run folder (or its results.json) and check it against the schema."""
    p = Path(path)
    file = p / RESULTS_FILE if p.is_dir() else p
    if not file.is_file():
        raise ConfigError(f"{file}: no such file (is {p} a run folder written by 'rmbench eval'?)")
    try:
        data: Any = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{file}: expected a JSON object")
    for key in _REQUIRED:
        if key not in data:
            raise ConfigError(f"{file}: field {key!r}: missing")
    if data["schema_version"] != SCHEMA_VERSION:
        raise ConfigError(f"{file}: field 'schema_version': {data['schema_version']!r} is not supported "
                          f"(this rmbench reads version {SCHEMA_VERSION})")
    for i, m in enumerate(data["metrics"]):
        missing = [k for k in ("task", "subset", "shift", "metric", "eps", "eps_unit", "value", "ci_low", "ci_high", "n")
                   if k not in m]
        if missing:
            raise ConfigError(f"{file}: metrics[{i}]: field {missing[0]!r}: missing")
    return LoadedRun(file, data)


def load_rewards(path: str | Path) -> list[RewardRow]:
    p = Path(path)
    file = p / REWARDS_FILE if p.is_dir() else p
    rows = []
    with file.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                d = json.loads(line)
                rows.append(RewardRow(d["task"], d["group_id"], int(d["response_index"]), int(d["utility"]),
                                      float(d["reward"])))
    return rows
