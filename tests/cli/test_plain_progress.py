"""Progress off a terminal (CI logs, nohup, a pipe): plain lines every RMBENCH_PROGRESS_EVERY
seconds and at the end, for eval's scoring, train and downloads (issue 25); rich bars stay for
terminals."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

from rmbench.cli.progress import PlainProgress
from rmbench.core.progress import EVERY_ENV, progress_every, progress_line
from rmbench.errors import ConfigError

LINE = re.compile(r": (\d+)/(\d+) (\w+) \(\d+%\), [\d,.–]+ \w+/s, elapsed \d:\d\d:\d\d, eta (\?|~?\d:\d\d:\d\d)$")


def test_the_line_says_what_done_total_rate_elapsed_and_eta():
    assert progress_line("m on ties", 120, 480, "responses", 30.0) == \
        "m on ties: 120/480 responses (25%), 4.0 responses/s, elapsed 0:00:30, eta 0:01:30"
    assert progress_line("m on ties", 0, 480, "responses", 3.0) == \
        "m on ties: 0/480 responses (0%), – responses/s, elapsed 0:00:03, eta ?"
    assert progress_line("m", 480, 480, "responses", 120.0, finished=True) == \
        "m: done, 480/480 responses (100%) in 0:02:00, 4.0 responses/s"
    assert progress_line("all", 5, 10, "pairs", 10.0, eta="eta ~0:40:00").endswith("elapsed 0:00:10, eta ~0:40:00")
    assert progress_line("dl", 3, None, "MB", 2.0) == "dl: 3 MB, 1.5 MB/s, elapsed 0:00:02, eta ?"


def test_the_interval_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(EVERY_ENV, raising=False)
    assert progress_every() == 30.0
    monkeypatch.setenv(EVERY_ENV, "0.5")
    assert progress_every() == 0.5
    for bad in ("0", "-1", "soon", "nan"):
        monkeypatch.setenv(EVERY_ENV, bad)
        with pytest.raises(ConfigError, match=EVERY_ENV):
            progress_every()


def test_plain_progress_reports_on_start_periodically_and_once_at_the_end():
    lines: list[str] = []
    with PlainProgress(lines.append, unit="responses", every=0.05) as progress:
        task = progress.add_task("m on ties", total=10)
        progress.advance(task, 4)
        time.sleep(0.3)  # a long batch: lines keep coming, with the count so far
        progress.advance(task, 6)
        time.sleep(0.15)  # finished: no more lines for it
    assert lines[0].startswith("m on ties: 0/10 responses (0%)")
    periodic = [line for line in lines[1:] if line.startswith("m on ties: 4/10 responses (40%)")]
    assert len(periodic) >= 2 and all(LINE.search(line) for line in periodic), lines
    assert lines[-1].startswith("m on ties: done, 10/10 responses (100%) in ")
    assert sum("done" in line for line in lines) == 1


def _rmbench(args, cwd, every="0.3"):
    env = {**os.environ, "COLUMNS": "200", EVERY_ENV: every}
    return subprocess.run([sys.executable, "-m", "rmbench", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


SLOW_RM = "import time\n\ndef score(pairs):\n    time.sleep(0.15)\n    return [float(len(r)) for _, r in pairs]\n"


HEAD = ("python:slow_rm.py:score on ties_sample (--limit 3: 4 groups, paired groups kept together; 58 responses): ")


@pytest.mark.slow
def test_eval_on_a_pipe_prints_progress_lines_while_scoring(tmp_path):
    (tmp_path / "slow_rm.py").write_text(SLOW_RM)
    done = _rmbench(["eval", "--model", "python:slow_rm.py:score", "--limit", "3", "--token-budget", "64",
                     "--no-cache", "--bootstrap", "20", "--out", str(tmp_path / "run")], tmp_path)
    assert done.returncode == 0, done.stderr
    ours = [line for line in done.stderr.splitlines() if line.startswith(HEAD)]
    periodic = [m for m in map(LINE.search, ours) if m]
    counts = [int(m.group(1)) for m in periodic]
    assert len(periodic) >= 3 and counts == sorted(counts) and 0 < max(counts) < int(periodic[0].group(2)), ours
    # --limit 3: two tied:K/ref:K units (paired groups stay together), 58 responses, as the line says
    assert ours[-1].startswith(HEAD + "done, 58/58 responses (100%)"), ours
    assert "━" not in done.stderr and "\x1b[" not in done.stderr  # no bar, no terminal codes


@pytest.mark.slow
def test_train_on_a_pipe_prints_the_whole_jobs_progress(tiny, tmp_path):
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"Pick {i}", "chosen": f"The answer is {i}", "rejected": "no"})
                            + "\n" for i in range(24)))
    done = _rmbench(["train", "--base", str(tiny["causal"]), "--data", str(data), "--out", str(tmp_path / "rm"),
                     "--epochs", "2", "--batch-size", "2", "--kind", "ex", "--split", "all"], tmp_path, every="0.05")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("plan: 24 pairs x 2 epochs")
    overall = [line for line in lines if line.startswith("all: ex, 2 epochs: ")]
    assert overall[0].startswith("all: ex, 2 epochs: 0/48 pairs (0%)")
    assert any(LINE.search(line) and "eta " in line for line in overall[1:-1]), overall
    assert overall[-1].startswith("all: ex, 2 epochs: done, 48/48 pairs (100%)"), overall
    assert any(line.startswith("ex-rm epoch 2/2") and "done, 24/24 pairs" in line for line in lines), lines
