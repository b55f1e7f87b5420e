"""bench/judge.py runs end to end on a small load (its numbers are measured, not asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_bench_judge_runs_and_reports_every_ratio():
    out = subprocess.run([sys.executable, "-m", "bench.judge", "--n", "24", "--latency", "0.01", "--reps", "1"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "vs RewardBench pool" in out.stdout and "re-run from the call cache" in out.stdout
    assert "with 0 calls" in out.stdout  # the cached re-run made no call
