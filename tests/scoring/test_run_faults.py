"""Faults around a run's folder and its plan (issue 24): two runs given one ``--out`` at once, a
``--model-arg`` that a later model of the command does not take, SIGTERM (and Ctrl-C) while
scoring and while writing. Each is made real: real processes, real signals, a real flock."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rmbench.cli.app import app
from rmbench.results.storage.folder_lock import LOCK_SUFFIX, RunFolderBusy, lock_file, run_folders_locked
from tests.scoring.test_reliability import SLOW_RM, cache_rows, cli_env, normalise, rmbench

RUN_FILES = ["leaderboard.md", "results.json", "rewards.jsonl"]


def _lock_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.parent.glob(f"*{LOCK_SUFFIX}"))


# --- checks before any scoring -----------------------------------------------------------------

def test_a_model_arg_the_second_model_does_not_take_fails_before_the_first_scores(tmp_path):
    """``--model A,B --model-arg max_batch=4``: A takes it, B (length) does not; B's error comes
    before A scored anything (today's code scored A first, then failed on B)."""
    marker = tmp_path / "scored"
    (tmp_path / "rm.py").write_text(f"def score(pairs):\n    open({str(marker)!r}, 'a').write('x')\n"
                                    f"    return [float(len(r)) for _, r in pairs]\n")
    result = CliRunner().invoke(app, ["eval", "--model", f"python:{tmp_path / 'rm.py'}:score,length",
                                      "--model-arg", "max_batch=4", "--bootstrap", "10", "--no-cache",
                                      "--out", str(tmp_path / "runs")])
    assert result.exit_code == 2, result.output
    assert "error:" in result.output and "unknown argument 'max_batch' for kind 'length'" in result.output, \
        result.output
    assert "Traceback" not in result.output
    assert not marker.exists()  # nothing was scored
    assert not (tmp_path / "runs").exists()  # and no folder made


def test_a_bad_model_arg_is_named_before_the_run_folder_check(tmp_path, monkeypatch):
    """Issue 25: the default folder holds the run without the argument; the answer is the
    argument's error, not the folder's 'holds another run'."""
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    first = runner.invoke(app, ["eval", "--model", "length", "--bootstrap", "10", "--no-cache"])
    assert first.exit_code == 0, first.output
    result = runner.invoke(app, ["eval", "--model", "length", "--model-arg", "foo=1", "--bootstrap", "10",
                                 "--no-cache"])
    assert result.exit_code == 2, result.output
    assert "unknown argument 'foo' for kind 'length'" in result.output and "holds another run" not in result.output, \
        result.output


# --- one writer per run folder -----------------------------------------------------------------

def test_a_folder_another_process_locks_is_refused_naming_its_pid(tmp_path):
    """A real flock held through another open file (as another process holds it): refused before
    scoring, with the holder's pid; free again once the holder lets go, and no lock file is left."""
    import fcntl

    from rmbench.scoring.runner import EvalConfig, evaluate

    out = tmp_path / "run"
    path = lock_file(out)
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, b"4242\n")
    config = EvalConfig(model="length", n_bootstrap=10, use_cache=False)
    try:
        with pytest.raises(RunFolderBusy, match=r"run is being written by another rmbench run \(pid 4242\)"):
            evaluate(config, out_dir=out)
        assert not out.exists()
    finally:
        os.close(fd)  # the holder ends: the OS releases its lock (its file stays, as after a SIGKILL)
    evaluate(config, out_dir=out)
    assert sorted(p.name for p in out.iterdir()) == ["results.json", "rewards.jsonl"]
    assert _lock_files(out) == []


def test_the_lock_is_reentrant_in_one_process_and_leaves_nothing(tmp_path):
    out = tmp_path / "new" / "run"
    with run_folders_locked([out]):
        assert lock_file(out).is_file() and lock_file(out).read_text() == f"{os.getpid()}\n"
        with run_folders_locked([out, tmp_path / "new" / "other"]):  # evaluate inside evaluate_models
            pass
        assert lock_file(out).is_file()  # still held by the outer block
    assert not (tmp_path / "new").exists()  # the folder made for the lock file is gone with it


@pytest.mark.slow  # two rmbench processes at once
def test_two_runs_on_one_out_one_wins_the_other_is_refused(tmp_path):
    (tmp_path / "slow_rm.py").write_text(SLOW_RM)
    out = tmp_path / "run"

    def args(cache: str) -> list[str]:
        return [sys.executable, "-m", "rmbench", "eval", "--model", f"python:{tmp_path / 'slow_rm.py'}:score",
                "--tasks", "ties_sample", "--bootstrap", "20", "--token-budget", "1",
                "--cache-dir", str(tmp_path / cache), "--out", str(out)]

    env = cli_env(tmp_path, RMBENCH_TEST_SLEEP="0.02")
    first = subprocess.Popen(args("c1"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not lock_file(out).is_file() or cache_rows(tmp_path / "c1") < 5:  # the first is scoring
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first run did not start scoring within 120 s"
            time.sleep(0.02)
        second = subprocess.run(args("c2"), env=env, capture_output=True, text=True, timeout=120)
        assert first.poll() is None, "the first run ended before the second one was refused"
        _, first_err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0, first_err
    assert second.returncode == 2, second.stderr
    lines = [line for line in second.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), second.stderr
    assert f"{out} is being written by another rmbench run (pid {first.pid})" in lines[0], lines[0]
    assert not list((tmp_path / "c2").glob("*.sqlite"))  # refused before it scored anything
    assert sorted(p.name for p in out.iterdir()) == RUN_FILES  # one run's files, no lock file
    assert _lock_files(out) == []
    stats = json.loads((out / "results.json").read_text())["execution"]["stats"]
    assert stats["computed"] == stats["distinct"] == cache_rows(tmp_path / "c1")


# --- SIGTERM and Ctrl-C ------------------------------------------------------------------------

def _reference(tmp_path: Path, args: list[str], out: Path, cache: Path) -> Path:
    """An uninterrupted run of ``args`` moved to ``reference/``, its cache cleared."""
    done = rmbench(args, cli_env(tmp_path))
    assert done.returncode == 0, done.stderr
    ref = tmp_path / "reference"
    out.rename(ref)
    shutil.rmtree(cache)
    return ref


def _assert_same_run(out: Path, ref: Path) -> dict:
    """``out`` holds the run ``ref`` holds (timestamps and the engine's counters aside); ``out``'s counters."""
    assert sorted(p.name for p in out.iterdir()) == RUN_FILES
    for name in ("rewards.jsonl", "leaderboard.md"):
        assert (out / name).read_bytes() == (ref / name).read_bytes(), name
    a = json.loads(normalise((out / "results.json").read_text()))
    b = json.loads(normalise((ref / "results.json").read_text()))
    stats = a["execution"].pop("stats")
    b["execution"].pop("stats")
    assert a == b
    return stats


@pytest.mark.slow  # a subprocess stopped by a real SIGTERM
def test_sigterm_while_scoring_says_what_was_kept_and_the_rerun_resumes(tmp_path, slow_model_file):
    out, cache = tmp_path / "run", tmp_path / "cache"
    args = ["eval", "--model", f"python:{slow_model_file}:score", "--tasks", "ties_sample", "--bootstrap", "50",
            "--token-budget", "1", "--cache-dir", str(cache), "--out", str(out)]
    ref = _reference(tmp_path, args, out, cache)
    proc = subprocess.Popen([sys.executable, "-m", "rmbench", *args], env=cli_env(tmp_path, RMBENCH_TEST_SLEEP="0.02"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while cache_rows(cache) < 20:
            assert proc.poll() is None, "the run ended before it could be stopped"
            assert time.monotonic() < deadline, "the run wrote no scores within 120 s"
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, err
    assert "interrupted:" in err and "the same command resumes" in err and "Traceback" not in err, err
    assert not out.exists() or [p for p in out.rglob("*") if p.is_file()] == []  # absent, never half a run
    assert _lock_files(out) == []
    kept = cache_rows(cache)
    assert kept >= 20

    again = rmbench(args, cli_env(tmp_path))
    assert again.returncode == 0, again.stderr
    assert "resumed from the score cache:" in again.stderr, again.stderr
    stats = _assert_same_run(out, ref)
    assert stats["cached"] >= kept and stats["computed"] > 0


# Writing results.json takes a second here, and says when it starts: a signal then lands mid-write.
SLOW_WRITE = """
import os, pathlib, sys, time
from rmbench import files
real = files.atomic_write_bytes
def slow(path, data):
    if pathlib.Path(path).name == "results.json":
        pathlib.Path(os.environ["RMBENCH_TEST_MARK"]).touch()
        time.sleep(1.5)
    return real(path, data)
files.atomic_write_bytes = slow
from rmbench.cli import main
main()
"""


@pytest.mark.slow  # a subprocess stopped by a real signal
@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["sigterm", "sigint"])
def test_a_signal_while_writing_leaves_the_run_whole(tmp_path, slow_model_file, signum, code):
    """The signal comes while results.json is being written: rmbench writes the folder's files to
    the end, then stops with the interrupted line; the run folder holds the whole run."""
    out, cache, mark = tmp_path / "run", tmp_path / "cache", tmp_path / "writing"
    args = ["eval", "--model", f"python:{slow_model_file}:score", "--tasks", "ties_sample", "--bootstrap", "50",
            "--cache-dir", str(cache), "--out", str(out)]
    ref = _reference(tmp_path, args, out, cache)
    proc = subprocess.Popen([sys.executable, "-c", SLOW_WRITE, *args],
                            env=cli_env(tmp_path, RMBENCH_TEST_MARK=str(mark)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as a terminal sends it
    try:
        deadline = time.monotonic() + 120
        while not mark.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the run did not start writing within 120 s"
            time.sleep(0.01)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err
    assert "interrupted:" in err and "Traceback" not in err, err
    # The run is whole: both its files, as an uninterrupted run writes them (the leaderboard, made
    # from them, comes with the re-run).
    assert sorted(p.name for p in out.iterdir()) == ["results.json", "rewards.jsonl"]
    assert (out / "rewards.jsonl").read_bytes() == (ref / "rewards.jsonl").read_bytes()
    assert _lock_files(out) == []

    again = rmbench(args, cli_env(tmp_path))
    assert again.returncode == 0, again.stderr
    stats = _assert_same_run(out, ref)
    assert stats["computed"] == 0  # every score was kept


@pytest.fixture
def slow_model_file(tmp_path) -> Path:
    f = tmp_path / "slow_rm.py"
    f.write_text(SLOW_RM)
    return f
