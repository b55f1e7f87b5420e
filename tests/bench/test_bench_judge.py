"""bench/judge.py runs end to end on a small load (its numbers are measured, not asserted; the counts
of requests, follow-ups included, are)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_bench_judge_runs_and_reports_every_ratio():
    out = subprocess.run([sys.executable, "-m", "bench.judge", "--n", "24", "--latency", "0.01", "--reps", "1"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "vs RewardBench pool" in out.stdout and "re-run from the call cache" in out.stdout
    assert "with 0 calls" in out.stdout  # the cached re-run made no call


def test_bench_judge_arena_hard_workload_runs_without_judgebench():
    env = {k: v for k, v in os.environ.items() if k != "RMBENCH_JUDGEBENCH_DIR"}
    out = subprocess.run([sys.executable, "-m", "bench.judge", "--workload", "arena_hard", "--n", "8", "--latency",
                          "0.005", "--reps", "1", "--concurrency", "3"],
                         cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "JudgeBench: left out: no JudgeBench checkout" in out.stdout  # the reason, printed
    assert "follow-ups in the slot / two rounds" in out.stdout and "| JudgeBench run_judge" not in out.stdout


def test_arena_hard_counts_every_follow_up_for_each_rmbench_contender():
    from bench.judge_followups import measure

    result = measure(n=8, latency=0.0, reps=1, concurrency=3, judgebench=None)
    rows = result["conditions"]["quiet"]["rows"]
    assert set(rows) == {"judgerm", "follow", "two-rounds"}
    assert result["expected"] == 12  # 8 games (4 pairs in both orders) + a follow-up for every other game
    for row in rows.values():
        assert (row["requests"], row["client_requests"]) == (12, 12)  # the server's count and the client's


@pytest.mark.skipif(not os.environ.get("RMBENCH_JUDGEBENCH_DIR"),
                    reason="RMBENCH_JUDGEBENCH_DIR (a JudgeBench checkout, github ScalerLab/JudgeBench) is not set")
def test_bench_judge_arena_hard_runs_judgebench_client():
    out = subprocess.run([sys.executable, "-m", "bench.judge", "--workload", "arena_hard", "--n", "8", "--latency",
                          "0.005", "--reps", "1", "--concurrency", "3"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    counted = re.findall(r"^quiet rep 1 (.+?) +[\d.]+ s  (\d+) requests \((\d+) by the client\)", out.stdout, re.M)
    assert {label.split()[0] for label, _, _ in counted} == {"JudgeBench", "rmbench"} and len(counted) == 4
    assert all((server, client) == ("12", "12") for _, server, client in counted)  # follow-ups included
    assert "rmbench JudgeRM / JudgeBench:" in out.stdout
