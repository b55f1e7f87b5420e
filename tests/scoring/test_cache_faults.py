"""The score cache's faults never end a run (issue 24): a damaged file is moved aside and
replaced, an unwritable folder or a full database turns the cache off with one warning, and the
run's numbers are those of a run without a cache."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from typer.testing import CliRunner

import rmbench
from rmbench.cli import app
from rmbench.scoring.cache import ScoreCache


def _run(cache_dir, warnings_seen=None):
    seen = warnings_seen if warnings_seen is not None else []
    return rmbench.evaluate(rmbench.EvalConfig(model="length", n_bootstrap=20, cache_dir=str(cache_dir)),
                            warn=seen.append), seen


def _the_cache(folder):
    files = [p for p in folder.iterdir() if p.suffix == ".sqlite"]
    assert len(files) == 1
    return files[0]


@pytest.mark.parametrize("damage", ["garbage", "cut"])
def test_a_damaged_cache_is_moved_aside_and_replaced(tmp_path, damage):
    clean, _ = _run(tmp_path / "c")
    path = _the_cache(tmp_path / "c")
    data = path.read_bytes()
    path.write_bytes(b"this is no database\n" * 50 if damage == "garbage" else data[: len(data) // 2])
    for side in ("-wal", "-shm"):
        path.with_name(path.name + side).unlink(missing_ok=True)
    again, seen = _run(tmp_path / "c")
    assert len(seen) == 1 and "was damaged" in seen[0] and ".corrupt-" in seen[0], seen
    assert [p.name for p in path.parent.glob("*.corrupt-*") if not p.name.endswith(("-wal", "-shm"))]
    assert again.value("ties_sample", "ds_auc") == clean.value("ties_sample", "ds_auc")
    third, seen = _run(tmp_path / "c")  # the new cache works: the third run reuses the second's scores
    assert seen == [] and third.execution.stats.computed == 0


def test_an_unusable_cache_folder_turns_the_cache_off(tmp_path):
    clean, _ = _run(tmp_path / "c")
    (tmp_path / "afile").write_text("not a folder")
    run, seen = _run(tmp_path / "afile" / "scores")
    assert len(seen) == 1 and "score cache off for this run" in seen[0] and "cannot create" in seen[0]
    assert run.value("ties_sample", "pairwise_accuracy") == clean.value("ties_sample", "pairwise_accuracy")


def test_a_full_database_keeps_the_scores_and_warns_once(tmp_path):
    seen = []
    cache = ScoreCache("f" * 64, tmp_path, warn=seen.append)
    cache.put_many([("a", np.array([1.0]))])
    cache._db.execute("PRAGMA max_page_count = 2")  # SQLite's own limit: the next pages do not fit
    big = [(f"k{i}", np.arange(50.0)) for i in range(200)]
    cache.put_many(big)  # SQLITE_FULL: 'database or disk is full'
    cache.put_many(big)
    assert len(seen) == 1 and "full" in seen[0] and cache.disabled is not None
    assert cache.get_many(["a"]) == {}  # off for the rest of the run
    cache.close()
    with sqlite3.connect(tmp_path / ("f" * 64 + ".sqlite")) as db:  # nothing half-written: the first batch only
        assert db.execute("SELECT key FROM scores").fetchall() == [("a",)]


def test_the_cli_says_one_line_and_finishes(tmp_path):
    runner = CliRunner()
    args = ["eval", "--model", "length", "--bootstrap", "10", "--cache-dir", str(tmp_path / "c")]
    assert runner.invoke(app, [*args, "--out", str(tmp_path / "r1")]).exit_code == 0
    _the_cache(tmp_path / "c").write_bytes(b"\x00garbage" * 100)
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "r2")])
    assert result.exit_code == 0, result.output
    assert "was damaged" in result.output and "Traceback" not in result.output
    assert (tmp_path / "r2" / "results.json").is_file()


def test_out_that_is_a_file_is_refused_before_scoring(tmp_path):
    (tmp_path / "afile.txt").write_text("mine")
    runner = CliRunner()
    for out, words in ((tmp_path / "afile.txt", "is a file, not a folder"),
                       (tmp_path / "afile.txt" / "run", "is a file, so no folder can be made under it")):
        result = runner.invoke(app, ["eval", "--model", "length", "--no-cache", "--out", str(out)])
        assert result.exit_code == 2 and words in result.output and "Traceback" not in result.output, result.output
        assert "responses" not in result.output  # refused before any scoring
    assert (tmp_path / "afile.txt").read_text() == "mine"


def _limited(limit: int):
    """Files of this process may grow to ``limit`` bytes (a real EFBIG from the OS past it, as a full disk
    gives ENOSPC)."""
    import resource
    import signal

    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.slow  # a subprocess (its file-size limit must not bind pytest)
def test_a_run_folder_that_cannot_be_written_is_one_line_and_no_half_file(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "rmbench", "eval", "--model", "length", "--bootstrap", "10",
                           "--cache-dir", str(tmp_path / "c"), "--out", str(tmp_path / "run")],
                          cwd=tmp_path, capture_output=True, text=True, preexec_fn=_limited(20_000))
    assert done.returncode == 2, done.stderr
    assert "cannot write the run to" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "run" / "results.json").exists()
    if (tmp_path / "run").exists():  # absent: the writer removed the folder it made (empty once it failed)
        assert [p.name for p in (tmp_path / "run").iterdir() if not p.name.startswith(".")] in ([], ["rewards.jsonl"])
    assert not list((tmp_path / "run").glob(".*.tmp"))  # the atomic writes leave no temporary file


SLOW_RM = """
import time

def score(pairs):
    time.sleep(0.1)
    return [float(len(r)) for _, r in pairs]
"""


@pytest.mark.slow  # a subprocess, interrupted by a real SIGINT
def test_ctrl_c_says_what_was_kept_and_the_rerun_says_it_resumed(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    (tmp_path / "rm.py").write_text(SLOW_RM)
    args = [sys.executable, "-m", "rmbench", "eval", "--model", "python:rm.py:score", "--model-arg", "max_batch=8",
            "--bootstrap", "10", "--cache-dir", str(tmp_path / "c"), "--out", str(tmp_path / "run")]
    # SIGINT as a terminal delivers it, even where this test runs with SIGINT ignored (a background job
    # inherits SIG_IGN, and Python then installs no KeyboardInterrupt handler)
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 60
    while time.time() < deadline and not list((tmp_path / "c").glob("*.sqlite")):
        time.sleep(0.1)
    time.sleep(2.0)  # some batches scored and committed
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted:" in err and "the same command resumes" in err and "Traceback" not in err, err
    assert not (tmp_path / "run" / "results.json").exists()
    again = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "resumed from the score cache:" in again.stderr, again.stderr
    assert (tmp_path / "run" / "results.json").is_file()
