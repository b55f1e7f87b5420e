"""The loopback judge server the judge benchmarks start (``bench.judge``, ``bench.judge_followups``):
where its code lives and the API key they send it (a placeholder, never a secret)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests" / "support"  # the loopback server lives with the tests
KEY = "sk-bench-not-a-secret"
