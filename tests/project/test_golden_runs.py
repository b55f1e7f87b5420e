"""The golden runs (tests/support/golden_runs.py) give the same metrics and rewards, float for float, as
when they were recorded: a refactor of the metric, record or scoring code changes no number."""

import json

import pytest

from tests.support.golden_runs import GOLDEN, cases, run_case


def _first_difference(got, want, where="") -> str:
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            if got.get(key, "<absent>") != want.get(key, "<absent>"):
                return _first_difference(got.get(key, "<absent>"), want.get(key, "<absent>"), f"{where}.{key}")
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w:
                return _first_difference(g, w, f"{where}[{i}]")
    return f"{where}: got {got!r}, recorded {want!r}"


@pytest.mark.parametrize("name", ["main_job", "ties", "rewardbench2", "rm_bench", "token_shift",
                                  "paraphrase_invariance"])
def test_a_golden_run_is_unchanged(name, tmp_path):
    found = run_case(cases(tmp_path)[name], tmp_path / "out")
    for model, (metrics, rewards) in found.items():
        want_metrics = json.loads((GOLDEN / name / f"{model}.metrics.json").read_text())
        want_rewards = [json.loads(line)
                        for line in (GOLDEN / name / f"{model}.rewards.jsonl").read_text().splitlines()]
        assert metrics == want_metrics, f"{name}/{model}: " + _first_difference(metrics, want_metrics)
        assert rewards == want_rewards, f"{name}/{model}: " + _first_difference(rewards, want_rewards)


def test_the_cases_cover_every_computed_metric():
    metrics = {m["metric"] for name in ("ties", "rm_bench", "token_shift", "paraphrase_invariance", "rewardbench2")
               for t in json.loads((GOLDEN / name / "hashed.metrics.json").read_text()) for m in t["metrics"]}
    from rmbench.core.metric_registry import computed_metrics

    assert {m.name for m in computed_metrics()} <= metrics
    assert {"ties_score", "rewardbench2_score", "rm_bench_score", "pairwise_accuracy_shift_gap"} <= metrics
