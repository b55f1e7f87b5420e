"""``--model-arg batch=openai|anthropic``: a judge run through a provider's batch API gives the
same judgments, parses and scores as the synchronous run, against one real scripted server on
127.0.0.1 (tests/support/batch_server.py) that serves both the batch endpoints and ``/chat/completions``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from rmbench.errors import ConfigError, RMBenchError  # noqa: E402
from rmbench.scoring.runner import EvalConfig, evaluate  # noqa: E402
from tests.models.judge.test_judge import MODEL, judgments, rb2_rows, write_pairs  # noqa: E402
from tests.models.judge.test_judge_fidelity import arena_reply, rating_reply  # noqa: E402
from tests.support.batch_server import BatchServer  # noqa: E402

PARSE_FIELDS = ("group_id", "response_index", "parsed", "text", "finish_reason", "order", "attempt", "call")


def run(server: BatchServer, tmp_path: Path, out: str, tasks=("preference",), data=(), **args):
    model_args = (("base_url", server.base_url), *args.items())
    cfg = EvalConfig(model=f"judge:{MODEL}", model_args=model_args, tasks=tasks, data=data, n_bootstrap=50,
                     cache_dir=str(tmp_path / f"cache-{out}"))
    return evaluate(cfg, out_dir=tmp_path / out, overwrite=True)


def same_scores(a, b) -> None:
    np.testing.assert_equal([(m.metric, m.subset, m.eps, m.value) for m in a.tasks[0].metrics],
                            [(m.metric, m.subset, m.eps, m.value) for m in b.tasks[0].metrics])
    assert a.tasks[0].judge_replies == b.tasks[0].judge_replies


def parses(folder: Path) -> list[tuple]:
    return sorted(tuple(str(j.get(k)) for k in PARSE_FIELDS) for j in judgments(folder))


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_batch_run_equals_the_synchronous_run(tmp_path, kind, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-secret")
    rows = [("q0", "good score=9", "bad score=2"), ("q1", "good cut score=8", "bad score=3"),
            ("q2", "good think score=7", "bad refuse"), ("q3", "good score=6", "bad cut think score=1")]
    pairs = write_pairs(tmp_path / "p.jsonl", rows)
    data = (("preference", str(pairs)),)
    with BatchServer(reply=rating_reply) as server:
        sync = run(server, tmp_path, "sync", data=data)
        batch = run(server, tmp_path, "batch", data=data, batch=kind, batch_poll=0.01, price_in=1.0,
                    price_out=2.0)
        assert server.batches_created == 1  # one batch for the task, not one per request
    same_scores(sync, batch)
    assert parses(tmp_path / "sync") == parses(tmp_path / "batch")
    calls = batch.execution.stats.ran_with["judge_calls"]
    assert calls["batches"][0]["completed"] == 8 and calls["calls"] == 8
    tokens = calls["prompt_tokens"] * 1.0 + calls["completion_tokens"] * 2.0
    assert calls["cost_usd"] == pytest.approx(0.5 * tokens / 1e6)  # the batch price: half
    assert "submitted batch" in capsys.readouterr().err


def test_arena_hard_follow_ups_go_in_a_second_batch_and_equal_the_synchronous_run(tmp_path):
    rows = [("q0", "a score=9", "b score=1"), ("q1", "a cutlabel score=9", "b score=2"),
            ("q2", "a cutnone score=9", "b score=2"), ("q3", "a think2 score=9", "b score=3")]
    data = (("preference", str(write_pairs(tmp_path / "p.jsonl", rows))),)
    with BatchServer(reply=arena_reply) as server:
        sync = run(server, tmp_path, "sync", data=data, mode="pairwise", prompt="arena_hard")
        batch = run(server, tmp_path, "batch", data=data, mode="pairwise", prompt="arena_hard", batch="openai",
                    batch_poll=0.01)
        assert server.batches_created == 2  # the first calls, then the two follow-ups
    same_scores(sync, batch)
    assert parses(tmp_path / "sync") == parses(tmp_path / "batch")


def test_a_stopped_batch_run_re_attaches_and_a_re_run_makes_no_call(tmp_path):
    data = (("rewardbench2", str(tmp_path / "rb2.jsonl")),)
    (tmp_path / "rb2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rb2_rows()))
    with BatchServer(reply=rating_reply, in_progress_polls=50) as server:
        with pytest.raises(RMBenchError):  # stops waiting; the batch runs on
            run(server, tmp_path, "a", tasks=("rewardbench2",), data=data, batch="openai", batch_poll=0.01,
                batch_wait=0.05)
        cfg_cache = tmp_path / "cache-a"
        model_args = (("base_url", server.base_url), ("batch", "openai"), ("batch_poll", 0.01))
        cfg = EvalConfig(model=f"judge:{MODEL}", model_args=model_args, tasks=("rewardbench2",), data=data,
                         n_bootstrap=50, cache_dir=str(cfg_cache))
        first = evaluate(cfg, out_dir=tmp_path / "b", overwrite=True)
        assert server.batches_created == 1  # re-attached, not submitted again
        again = evaluate(cfg, out_dir=tmp_path / "c", overwrite=True)
        assert server.batches_created == 1 and again.execution.stats.ran_with["judge_calls"]["calls"] == 0
    same_scores(first, again)


def test_batch_arguments_are_checked(tmp_path):
    from rmbench.models.judge.adapter import JudgeRM

    with pytest.raises(ConfigError, match="judge batch must be one of openai, anthropic, vllm"):
        JudgeRM("m", base_url="http://127.0.0.1:9/v1", batch="opneai")
    judge = JudgeRM("m", batch="anthropic")
    assert judge.base_url == "https://api.anthropic.com/v1" and judge.api_key_env == "ANTHROPIC_API_KEY"
    assert JudgeRM("m", batch="vllm", batch_model="/models/m").served() == {"id": "m", "root": "/models/m"}


def test_a_bad_batch_line_is_retried_synchronously_and_billed_at_the_synchronous_price(tmp_path):
    rows = [("q0", "good score=9", "bad score=2"), ("q1", "good score=8", "bad score=3"),
            ("q2", "good score=7", "bad score=4")]
    data = (("preference", str(write_pairs(tmp_path / "p.jsonl", rows))),)
    with BatchServer(reply=rating_reply) as server:
        sync = run(server, tmp_path, "sync", data=data)
    with BatchServer(reply=rating_reply, output_faults={0: "infinity_usage", 3: "nan_logprobs"}) as server:
        batch = run(server, tmp_path, "batch", data=data, batch="openai", batch_poll=0.01, price_in=1.0,
                    price_out=2.0)
        assert (server.batches_created, server.billed, len(server.chat_requests())) == (1, 8, 2)
    same_scores(sync, batch)
    assert parses(tmp_path / "sync") == parses(tmp_path / "batch")
    calls = batch.execution.stats.ran_with["judge_calls"]
    [outcome] = calls["batches"]
    assert (outcome["completed"], outcome["failed"], outcome["retried_sync"]) == (4, 2, 2)
    sync_cost = (outcome["sync_prompt_tokens"] * 1.0 + outcome["sync_completion_tokens"] * 2.0) / 1e6
    batch_cost = 0.5 * ((outcome["prompt_tokens"] - outcome["sync_prompt_tokens"]) * 1.0
                        + (outcome["completion_tokens"] - outcome["sync_completion_tokens"]) * 2.0) / 1e6
    assert sync_cost > 0 and batch_cost > 0
    assert calls["cost_usd_sync"] == pytest.approx(sync_cost) and calls["cost_usd_batch"] == pytest.approx(batch_cost)
    assert calls["cost_usd"] == pytest.approx(sync_cost + batch_cost)


CHILD = """
import sys
from rmbench.scoring.runner import EvalConfig, evaluate
base_url, data, cache, out = sys.argv[1:5]
args = (("base_url", base_url), ("batch", "openai"), ("batch_poll", 0.05))
cfg = EvalConfig(model="judge:judge-model", model_args=args, tasks=("preference",), data=(("preference", data),),
                 n_bootstrap=50, cache_dir=cache)
evaluate(cfg, out_dir=out, overwrite=True)
"""


@pytest.mark.slow  # two rmbench processes at once
def test_two_runs_of_the_same_requests_at_once_pay_for_one_batch(tmp_path):
    import os
    import subprocess

    from rmbench.results.storage.folder import read_run

    rows = [("q0", "good score=9", "bad score=2"), ("q1", "good score=8", "bad score=3")]
    pairs = write_pairs(tmp_path / "p.jsonl", rows)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])}
    with BatchServer(reply=rating_reply, in_progress_polls=60) as server:
        procs = [subprocess.Popen([sys.executable, "-c", CHILD, server.base_url, str(pairs), str(tmp_path / "cache"),
                                   str(tmp_path / out)], env=env, stderr=subprocess.PIPE, text=True)
                 for out in ("a", "b")]
        errs = [p.communicate(timeout=120)[1] for p in procs]
        assert [p.returncode for p in procs] == [0, 0], errs
        assert (server.batches_created, server.billed) == (1, 4)
        sync = run(server, tmp_path, "sync", data=(("preference", str(pairs)),))
    assert sum("holds the batch of these 4 requests" in e for e in errs) == 1
    a, b = (read_run(tmp_path / out) for out in ("a", "b"))
    same_scores(a, sync)
    same_scores(b, sync)
    calls = sorted((r.execution.stats.ran_with["judge_calls"]["calls"],
                    r.execution.stats.ran_with["judge_calls"]["cached_calls"]) for r in (a, b))
    assert calls == [(0, 4), (4, 0)]
