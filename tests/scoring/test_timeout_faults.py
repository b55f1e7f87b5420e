"""A model that hangs (issue 24): ``--score-timeout`` stops the run with one line naming the
batch, every earlier batch stays in the score cache, and the re-run computes only the rest."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from rmbench.core.types import ComparisonGroup
from rmbench.errors import ConfigError, ModelError
from rmbench.models.base import RewardModel
from rmbench.scoring.backends import LocalBackend
from rmbench.scoring.engine import score_groups
from rmbench.scoring.runner import EvalConfig, evaluate
from rmbench.scoring.timeout import BatchDeadline

# Hangs on its fourth batch when RM_HANG is set: "python" in a Python loop (the alarm interrupts
# it), "blocked" in a call that never sees the signal (SIGALRM blocked, as in C code that never
# returns to Python: the watchdog ends the process).
HANG_RM = """
import os, signal, time
CALLS = []

def score(pairs):
    CALLS.append(len(pairs))
    hang = os.environ.get("RM_HANG")
    if hang and len(CALLS) == 4:
        if hang == "blocked":
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        while True:
            try:
                time.sleep(3600)
            except Exception:  # a reward function that swallows errors still stops
                pass
    return [len(r) * 0.37 + sum(map(ord, r)) % 11 for _, r in pairs]
"""


@pytest.mark.slow  # subprocesses: the hang, then the re-run
@pytest.mark.parametrize("hang", ["python", "blocked"])
def test_a_hanging_reward_function_stops_with_one_line_and_the_rerun_resumes(tmp_path, hang):
    import os

    (tmp_path / "rm.py").write_text(HANG_RM)
    args = [sys.executable, "-m", "rmbench", "eval", "--model", "python:rm.py:score", "--model-arg", "max_batch=8",
            "--bootstrap", "10", "--score-timeout", "1", "--cache-dir", str(tmp_path / "c"),
            "--out", str(tmp_path / "run")]
    started = time.monotonic()
    hung = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "RM_HANG": hang})
    assert hung.returncode == 2, hung.stderr
    assert time.monotonic() - started < 60  # the timeout (and the watchdog's grace), not a hang
    err = hung.stderr
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    assert re.search(r"error: model 'python:rm\.py:score' took longer than --score-timeout 1 s on a batch of \d+ "
                     r"responses? starting at group '[^']+', response \d+", lines[0]), lines[0]
    assert "raise --score-timeout" in lines[0] and "the same command resumes" in lines[0]
    if hang == "blocked":
        assert "signals cannot interrupt" in lines[0]
    assert not (tmp_path / "run" / "results.json").exists()

    again = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    m = re.search(r"resumed from the score cache: (\d+) responses cached, (\d+) computed", again.stderr)
    assert m, again.stderr
    record = json.loads((tmp_path / "run" / "results.json").read_text())
    stats = record["execution"]["stats"]
    assert int(m.group(1)) == stats["cached"] > 0 and int(m.group(2)) == stats["computed"] > 0
    assert stats["cached"] + stats["computed"] == stats["distinct"]
    assert record["execution"]["runtime"]["score_timeout"] == 1.0


class _Sleeper(RewardModel):
    """Sleeps ``seconds`` on every batch; ``block``: with SIGALRM blocked, as C code that never
    returns to Python would be."""

    def __init__(self, seconds: float, block: bool = False) -> None:
        self.seconds, self.block = seconds, block

    def score(self, batch):
        if self.block:
            old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            try:
                time.sleep(self.seconds)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)  # the pending alarm runs its handler now
        else:
            time.sleep(self.seconds)
        return [1.0] * len(batch)


GROUPS = [ComparisonGroup("g1", "q", ["a", "bb", "ccc"], [2, 1, 0])]


def test_a_batch_past_the_deadline_is_a_model_error_naming_it():
    before = signal.getsignal(signal.SIGALRM)
    backend = LocalBackend(deadline=BatchDeadline(0.2, "sleeper"))
    with pytest.raises(ModelError, match=r"^model 'sleeper' took longer than --score-timeout 0\.2 s on a batch of \d "
                                         r"responses? starting at group 'g1', response \d"):
        score_groups(_Sleeper(30.0), GROUPS, backend=backend, name="sleeper")
    assert signal.getsignal(signal.SIGALRM) == before  # the handler is put back
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    rewards, _ = score_groups(_Sleeper(0.0), GROUPS, backend=backend)  # a batch in time is untouched
    assert list(rewards) == [1.0, 1.0, 1.0]


def test_the_watchdog_speaks_when_the_model_never_returns_to_python():
    seen = []
    backend = LocalBackend(deadline=BatchDeadline(0.1, "stuck", grace=0.2, stuck=seen.append))
    with pytest.raises(ModelError, match="took longer than --score-timeout 0.1 s"):
        score_groups(_Sleeper(0.8, block=True), GROUPS, backend=backend, name="stuck")
    assert len(seen) == 1 and seen[0].startswith("model 'stuck' took longer than --score-timeout 0.1 s")
    assert "signals cannot interrupt" in seen[0]


def test_the_timeout_is_checked_and_recorded(tmp_path):
    for bad in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ConfigError, match="--score-timeout must be a number of seconds > 0"):
            EvalConfig(model="length", score_timeout=bad)
    with pytest.raises(ConfigError, match="--score-timeout works with an engine that scores in this process"):
        EvalConfig(model="length", score_timeout=5.0, engine="ray")
    record = evaluate(EvalConfig(model="length", score_timeout=30.0, n_bootstrap=10, use_cache=False))
    assert record.execution.runtime["score_timeout"] == 30.0
    assert evaluate(EvalConfig(model="length", n_bootstrap=10, use_cache=False)).execution.runtime["score_timeout"] \
        is None


def test_outside_the_main_thread_the_timeout_is_refused_not_ignored():
    errors = []

    def run():
        try:
            score_groups(_Sleeper(0.0), GROUPS, backend=LocalBackend(deadline=BatchDeadline(1.0)))
        except ConfigError as exc:
            errors.append(str(exc))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert len(errors) == 1 and "main thread" in errors[0]
