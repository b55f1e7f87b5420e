"""A run's ``rewards.jsonl``: one row per scored response (task, group, response index, utility,
reward; null for a response the model gave no reward), and its one reader, :func:`load_rewards`,
which refuses what rmbench never writes (module of :mod:`rmbench.results.storage.folder`'s files)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from rmbench.errors import ConfigError
from rmbench.files import json_error_text

REWARDS_FILE = "rewards.jsonl"


class RewardsFileError(ConfigError):
    """A run's rewards.jsonl holds what rmbench never writes (a row that is not a reward row, a
    reward that is not a finite number or null, a response's second row, a null where the run's
    model gave every response a reward): the file was damaged or edited. Every reader refuses
    it, naming the file and the item; none works around it (a report does not leave the task's
    examples out with a note, as it does for data that cannot be reloaded)."""


@dataclass(frozen=True)
class RewardRow:
    task: str
    group_id: str
    response_index: int
    utility: int
    reward: float


def _no_constant(name: str) -> None:
    raise ValueError(name)


def load_rewards(path: str | Path) -> list[RewardRow]:
    """The rows of a run's rewards.jsonl (or the file itself), one per scored response. Refused in
    one line naming the file and line (and the item: task, group, response): a line that is not a
    reward row; a reward that is not a finite number or null (``NaN``, ``Infinity``, ``1e999``:
    rmbench writes null for a response given no reward, never these); and a response's second row,
    equal to its first (a duplicate) or not (a conflict): a run has one row per response, so a
    second one means the file was edited or joined with another, and no reader may pick one."""
    p = Path(path)
    file = p / REWARDS_FILE if p.is_dir() else p
    if not file.is_file():
        raise ConfigError(f"{file}: no such file (the run folder has no rewards)")
    rows: list[RewardRow] = []
    first: dict[tuple[str, str, int], int] = {}  # item -> index in rows
    lines: list[int] = []
    with file.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line.rstrip("\r\n"), parse_constant=_no_constant)
            except json.JSONDecodeError as exc:
                raise RewardsFileError(f"{file}, line {n}: not valid JSON ({json_error_text(exc)})") from None
            except ValueError as exc:
                raise RewardsFileError(f"{file}, line {n}: {exc} is not a reward (a reward is a finite number, or "
                                       f"null for a response the model gave none)") from None
            try:
                reward = math.nan if d["reward"] is None else float(d["reward"])
                row = RewardRow(str(d["task"]), str(d["group_id"]), int(d["response_index"]), int(d["utility"]),
                                reward)
            except (ValueError, KeyError, TypeError) as exc:
                raise RewardsFileError(f"{file}, line {n}: not a reward row ({type(exc).__name__}: {exc})") from None
            item = (row.task, row.group_id, row.response_index)
            where = f"{file}, line {n}: task {row.task!r}, group {row.group_id!r}, response {row.response_index}"
            if math.isinf(reward):
                raise RewardsFileError(f"{where}: the reward is beyond the largest float (it reads as infinity), "
                                       f"not a finite number (a reward is a finite number, or null for a response "
                                       f"the model gave none)")
            if item in first:
                k = first[item]
                before = rows[k]
                same = before.utility == row.utility and (before.reward == row.reward or (
                    math.isnan(before.reward) and math.isnan(row.reward)))
                what = ("a duplicate of line" if same else
                        f"a second row (utility {row.utility}, reward {_reward_text(row.reward)}) conflicting with "
                        f"the one at line") + f" {lines[k]}"
                if not same:
                    what += f" (utility {before.utility}, reward {_reward_text(before.reward)})"
                raise RewardsFileError(f"{where}: {what}; a run has one row per response, so the file was edited "
                                       f"or joined with another: restore it, or rerun the model") from None
            first[item] = len(rows)
            rows.append(row)
            lines.append(n)
    return rows


def _reward_text(reward: float) -> str:
    return "null" if math.isnan(reward) else repr(reward)
