"""Reliability: a run killed with SIGKILL resumes to the same result, processes share a cache,
files appear whole or not at all, and the same command gives the same bytes."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rmbench import files
from rmbench.cli.app import app
from rmbench.results.storage import folder as run_folder

# Rewards depend on the text only (no hash(): it differs between processes); the sleep paces the
# run so that a test can stop it half-way.
SLOW_RM = """
import os, time

def score(pairs):
    time.sleep(float(os.environ.get("RMBENCH_TEST_SLEEP", "0")))
    return [len(r) * 0.25 + (sum(map(ord, r)) % 13) * 0.01 for _, r in pairs]
"""

TIMESTAMP_FIELDS = re.compile(r'("created": )"[^"]*"|("seconds": )[-+0-9.eE]+')
# What the thread policy saw of the machine (execution.stats.threads): the other processes' load
# and what it did about it, which another moment on a shared machine changes.
MACHINE_FIELDS = re.compile(r'("(?:others_at_start|thread_changes)": )[-+0-9.eEnul]+'
                            r'|("batches_by_threads": )\{[^}]*\}|("wait_policy(?:_from)?": )"[^"]*"')


def normalise(text: str) -> str:
    """results.json with its timestamp, durations and the thread policy's observations of the
    machine replaced, and nothing else touched."""
    text = TIMESTAMP_FIELDS.sub(lambda m: (m.group(1) or m.group(2)) + '"X"', text)
    return MACHINE_FIELDS.sub(lambda m: next(g for g in m.groups() if g) + '"X"', text)


def cli_env(tmp_path: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RMBENCH_TEST_")}
    env.update({"XDG_CACHE_HOME": str(tmp_path / "xdg"), "COLUMNS": "200", "PYTHONHASHSEED": "random"})
    env.update(extra)
    return env


def rmbench(args: list[str], env: dict, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rmbench", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, **kwargs)


def cache_rows(cache_dir: Path) -> int:
    """Rows in the score cache (0 while it or its table does not exist yet)."""
    files = list(cache_dir.glob("*.sqlite"))
    if not files:
        return 0
    assert len(files) == 1, files
    db = sqlite3.connect(files[0], timeout=30)
    try:
        return db.execute("SELECT count(*) FROM scores").fetchone()[0]
    except sqlite3.OperationalError:  # the table is not created yet
        return 0
    finally:
        db.close()


def integrity(cache_dir: Path) -> list[str]:
    out = []
    for f in sorted(cache_dir.glob("*.sqlite")):
        db = sqlite3.connect(f, timeout=30)
        try:
            out.append(db.execute("PRAGMA integrity_check").fetchone()[0])
        finally:
            db.close()
    return out


@pytest.fixture
def slow_model(tmp_path) -> str:
    f = tmp_path / "slow_rm.py"
    f.write_text(SLOW_RM)
    return f"python:{f}:score"


@pytest.mark.slow
def test_sigkill_mid_run_resumes_to_the_uninterrupted_result(tmp_path, slow_model):
    out, cache = tmp_path / "run", tmp_path / "cache"
    # --token-budget 1: every response is its own batch and its own cache transaction.
    args = ["eval", "--model", slow_model, "--tasks", "ties_sample", "--bootstrap", "100", "--token-budget", "1",
            "--cache-dir", str(cache), "--out", str(out)]
    reference = rmbench(args, cli_env(tmp_path))
    assert reference.returncode == 0, reference.stderr
    ref_dir = tmp_path / "reference"
    out.rename(ref_dir)
    shutil.rmtree(cache)
    total = json.loads((ref_dir / "results.json").read_text())["execution"]["stats"]["distinct"]
    assert total > 200

    proc = subprocess.Popen([sys.executable, "-m", "rmbench", *args], env=cli_env(tmp_path, RMBENCH_TEST_SLEEP="0.02"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while cache_rows(cache) < 20:
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "the run wrote no scores within 120 s"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    done = cache_rows(cache)
    assert 20 <= done < total, (done, total)
    assert integrity(cache) == ["ok"]
    # Killed while scoring: no results, no rewards, no leaderboard, no temporary files.
    assert not out.exists() or list(out.rglob("*")) == []

    resumed = rmbench(args, cli_env(tmp_path))
    assert resumed.returncode == 0, resumed.stderr
    assert integrity(cache) == ["ok"] and cache_rows(cache) == total
    assert sorted(p.name for p in out.iterdir()) == ["leaderboard.md", "results.json", "rewards.jsonl"]
    for name in ("rewards.jsonl", "leaderboard.md"):
        assert (out / name).read_bytes() == (ref_dir / name).read_bytes(), name
    a = json.loads(normalise((out / "results.json").read_text()))
    b = json.loads(normalise((ref_dir / "results.json").read_text()))
    # The engine's counters say how the run went (from the cache or computed), so they differ.
    sa, sb = a["execution"].pop("stats"), b["execution"].pop("stats")
    assert a == b
    assert sa["distinct"] == sb["distinct"] == total and sa["requests"] == sb["requests"]
    assert sa["cached"] >= done and sa["cached"] + sa["computed"] == total and sa["computed"] > 0


@pytest.mark.slow
def test_two_processes_share_one_cache(tmp_path, slow_model):
    """The same model on two tasks at once: both write the same SQLite file, batch by batch."""
    cache = tmp_path / "cache"
    env = cli_env(tmp_path, RMBENCH_TEST_SLEEP="0.001")
    runs = {task: ["eval", "--model", slow_model, "--tasks", task, "--bootstrap", "20", "--token-budget", "1",
                   "--cache-dir", str(cache), "--out", str(tmp_path / task)] for task in ("ties_sample", "persona")}
    procs = {task: subprocess.Popen([sys.executable, "-m", "rmbench", *args], env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True) for task, args in runs.items()}
    errors = {}
    for task, proc in procs.items():
        try:
            _, errors[task] = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert {t: p.returncode for t, p in procs.items()} == {"ties_sample": 0, "persona": 0}, errors
    assert len(list(cache.glob("*.sqlite"))) == 1  # one model, one file, two writers
    assert integrity(cache) == ["ok"]
    distinct = sum(json.loads((tmp_path / t / "results.json").read_text())["execution"]["stats"]["distinct"]
                   for t in runs)
    assert cache_rows(cache) == distinct  # the tasks share no response
    for task, args in runs.items():  # the cache holds both: a rerun computes nothing
        again = rmbench(args[:-1] + [str(tmp_path / f"{task}_again")], cli_env(tmp_path))
        assert again.returncode == 0, again.stderr
        stats = json.loads((tmp_path / f"{task}_again" / "results.json").read_text())["execution"]["stats"]
        assert stats["computed"] == 0 and stats["cached"] == stats["distinct"]


def test_cache_is_in_wal_mode_with_a_busy_timeout(tmp_path):
    from rmbench.scoring.cache import BUSY_TIMEOUT_S, ScoreCache

    cache = ScoreCache("f" * 64, tmp_path)
    try:
        assert cache._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert cache._db.execute("PRAGMA busy_timeout").fetchone()[0] == int(BUSY_TIMEOUT_S * 1000) >= 10_000
    finally:
        cache.close()


# --- atomic writes -----------------------------------------------------------------------------

class _DiskFull:
    """A file object that writes part of the text, then fails as a full disk does."""

    def __init__(self, f):
        self.f = f

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()

    def write(self, text):
        self.f.write(text[: len(text) // 2])
        self.f.flush()
        raise OSError(28, "No space left on device")


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp_file(tmp_path, monkeypatch):
    target = tmp_path / "results.json"
    files.atomic_write_text(target, "old contents\n")
    real_fdopen = os.fdopen
    monkeypatch.setattr(files.os, "fdopen", lambda fd, *a, **k: _DiskFull(real_fdopen(fd, *a, **k)))
    with pytest.raises(OSError, match="No space left"):
        files.atomic_write_text(target, "new contents " * 1000)
    monkeypatch.undo()
    assert target.read_text() == "old contents\n"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]

    def no_rename(*_):
        raise OSError("rename failed")

    monkeypatch.setattr(files.os, "replace", no_rename)
    with pytest.raises(OSError, match="rename failed"):
        files.atomic_write_text(target, "new contents")
    monkeypatch.undo()
    assert target.read_text() == "old contents\n"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
    with pytest.raises(UnicodeEncodeError):  # text that cannot be encoded at all
        files.atomic_write_text(target, "bad \ud800 surrogate")
    assert target.read_text() == "old contents\n" and [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_a_rerun_that_dies_never_pairs_old_results_with_new_rewards(tmp_path, monkeypatch):
    from rmbench.scoring.runner import EvalConfig, evaluate

    old = evaluate(EvalConfig(model="length", n_bootstrap=10, use_cache=False), out_dir=tmp_path)
    real = files.atomic_write_bytes

    def dies_on_results(path, data):
        if Path(path).name == run_folder.RESULTS_FILE:
            raise KeyboardInterrupt  # killed after rewards.jsonl, before results.json
        return real(path, data)

    monkeypatch.setattr(files, "atomic_write_bytes", dies_on_results)
    with pytest.raises(KeyboardInterrupt):
        run_folder.write_run(tmp_path, old, [run_folder.RewardRow("t", "g", 0, 1, 2.0)])
    # No results.json: the folder reads as an unfinished run, not as the old run with new rewards.
    assert sorted(p.name for p in tmp_path.iterdir()) == [run_folder.REWARDS_FILE]
    from rmbench.errors import ConfigError

    with pytest.raises(ConfigError, match="no such file"):
        run_folder.load_run(tmp_path)


def test_every_file_written_under_out_goes_through_atomic_write(tmp_path, monkeypatch):
    """eval (one and several models) and leaderboard build in every format: each file that
    appears under the output folders was written by atomic_write_bytes, and by nothing else."""
    written: list[Path] = []
    real = files.atomic_write_bytes

    def recording(path, data):
        written.append(Path(path).resolve())
        return real(path, data)

    monkeypatch.setattr(files, "atomic_write_bytes", recording)
    runner = CliRunner()
    out = tmp_path / "out"
    for args in (["eval", "--model", "length", "--bootstrap", "10", "--out", str(out / "one")],
                 ["eval", "--model", "oracle,constant", "--bootstrap", "10", "--out", str(out / "many")]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
    for fmt in ("md", "csv", "json", "html"):
        result = runner.invoke(app,
                               ["leaderboard", "build", str(out / "one"), str(out / "many" / "oracle__ties_sample"),
                                     "--format", fmt, "--out", str(out / "boards" / f"board.{fmt}")])
        assert result.exit_code == 0, result.output
    on_disk = sorted(p.resolve() for p in out.rglob("*") if p.is_file())
    assert on_disk == sorted(set(written))
    assert {p.name for p in on_disk} >= {"results.json", "rewards.jsonl", "leaderboard.md", "board.md", "board.csv",
                                         "board.json", "board.html"}


# --- determinism -------------------------------------------------------------------------------

@pytest.mark.slow
def test_the_same_command_gives_the_same_bytes(tiny, tmp_path):
    """Implicit scoring, MC dropout and the bootstrap, in separate processes with other hash
    seeds: a warm cache, a fresh out folder and a cleared cache all give identical files."""
    cache = tmp_path / "cache"

    def run(name: str, hash_seed: str) -> Path:
        out = tmp_path / name
        result = rmbench(["eval", "--model", f"discretize:implicit:{tiny['causal']}", "--model-arg", "seed=7",
                          "--model-arg", "T=3", "--model-arg", "p=0.2", "--tasks", "ties_sample", "--limit", "6",
                          "--bootstrap", "200", "--seed", "3", "--dtype", "float32", "--device", "cpu",
                          "--cache-dir", str(cache), "--out", str(out)],
                         cli_env(tmp_path, PYTHONHASHSEED=hash_seed))
        assert result.returncode == 0, result.stderr
        return out

    cold = run("cold", "1")
    warm = run("warm", "2")
    shutil.rmtree(cache)
    cleared = run("cleared", "3")

    text = {d: (d / "results.json").read_text() for d in (cold, warm, cleared)}
    assert normalise(text[cold]) == normalise(text[cleared])  # byte for byte, timestamps and the machine's load aside
    for name in ("rewards.jsonl", "leaderboard.md"):
        assert (cold / name).read_bytes() == (warm / name).read_bytes() == (cleared / name).read_bytes()
    a, b = json.loads(normalise(text[cold])), json.loads(normalise(text[warm]))
    stats_cold, stats_warm = a["execution"].pop("stats"), b["execution"].pop("stats")
    assert a == b  # only the counters of what came from the cache differ
    assert stats_warm["computed"] == 0 and stats_warm["cached"] == stats_cold["computed"] == stats_cold["distinct"]

    doc = json.loads(text[cold])
    assert doc["config"]["seed"] == 3 and doc["config"]["n_bootstrap"] == 200  # the bootstrap's seed
    assert doc["execution"]["model"]["discretize"]["seed"] == 7  # the MC-dropout seed
    assert doc["model"]["spec"]["args"]["seed"] == 7
    values = {m["value"] for t in doc["tasks"] for m in t["metrics"] if m["value"] is not None}
    assert len(values) > 3  # not a degenerate run
