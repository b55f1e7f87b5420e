"""A cached reward is the reward (issue 32): keys in the cache are never scored again nor
overwritten, a batch with some cached responses scores only the others, and an earlier command
re-run returns its earlier rewards bit for bit, whatever ran in between."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rmbench.models import Runtime
from rmbench.scoring.cache import ScoreCache
from rmbench.scoring.runner import EvalConfig, evaluate


def rewards(folder) -> dict[tuple[str, int], float]:
    rows = [json.loads(line) for line in (folder / "rewards.jsonl").read_text().splitlines()]
    return {(r["group_id"], r["response_index"]): r["reward"] for r in rows}


def test_the_first_write_wins(tmp_path):
    cache = ScoreCache("fp", tmp_path)
    assert cache.put_many([("a", np.array([1.0])), ("b", np.array([2.0]))]) == {"a": [1.0], "b": [2.0]}
    stored = cache.put_many([("a", np.array([5.0])), ("c", np.array([3.0]))])
    assert stored["a"] == [1.0] and stored["c"] == [3.0]  # "a" kept its first value
    assert cache.get_many(["a", "b", "c"]) == {"a": [1.0], "b": [2.0], "c": [3.0]}
    cache.close()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_limit_4_then_8_then_4_again_gives_the_first_rewards_bit_for_bit(tiny, tmp_path, dtype):
    # A budget of a few rows per batch, so the second run's batches mix cached and new responses.
    runtime = Runtime(dtype=dtype, device="cpu", token_budget=160)
    common = dict(model=f"implicit:{tiny['causal']}", tasks=("ties_sample",), n_bootstrap=10, runtime=runtime,
                  cache_dir=str(tmp_path / "cache"))
    first = evaluate(EvalConfig(limit=4, **common), out_dir=tmp_path / "a")
    second = evaluate(EvalConfig(limit=8, **common), out_dir=tmp_path / "b")
    third = evaluate(EvalConfig(limit=4, **common), out_dir=tmp_path / "c")
    a, b, c = rewards(tmp_path / "a"), rewards(tmp_path / "b"), rewards(tmp_path / "c")
    assert a == c  # bit for bit
    assert all(b[k] == v for k, v in a.items())  # the extended run took the cached rewards as they were
    assert second.execution.stats.cached == first.execution.stats.distinct
    assert second.execution.stats.computed == second.execution.stats.distinct - first.execution.stats.distinct
    assert third.execution.stats.computed == 0


def test_a_partly_cached_batch_scores_only_the_rest(tiny):
    from rmbench.core.types import ComparisonGroup
    from rmbench.models.implicit import ImplicitRM
    from rmbench.scoring.cache import request_key
    from rmbench.scoring.engine import model_requests, score_groups

    runtime = Runtime(dtype="float32", device="cpu")
    rm = ImplicitRM(str(tiny["causal"]), runtime=runtime)
    groups = [ComparisonGroup("g", "Pick a number", ["7", "8", "9"], [1, 0, 0])]
    scored: list[int] = []
    original = rm.score
    rm.score = lambda batch: (scored.append(len(batch)), original(batch))[1]

    class Planted:  # a cache that holds one response's score
        def __init__(self):
            self.key = request_key(model_requests(rm, groups)[1])
            self.puts = []

        def get_many(self, keys):
            return {self.key: np.array(123.0)} if self.key in keys else {}

        def put_many(self, items):
            items = list(items)
            self.puts += [k for k, _ in items]
            return dict(items)

    cache = Planted()
    out, stats = score_groups(rm, groups, runtime, cache=cache)
    assert out[1] == 123.0 and scored == [2] and cache.key not in cache.puts
    assert (stats.cached, stats.computed) == (1, 2)


@pytest.mark.real_model
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_real_smollm2_limit_6_then_12_then_6_again_is_bit_for_bit(tmp_path, dtype):
    from tests.conftest import smollm2_gguf

    smollm2_gguf()
    common = dict(model="smollm2-135m", tasks=("ties_sample",), n_bootstrap=10, cache_dir=str(tmp_path / "cache"),
                  runtime=Runtime(dtype=dtype, device="cpu", token_budget=1024))
    evaluate(EvalConfig(limit=6, **common), out_dir=tmp_path / "a")
    evaluate(EvalConfig(limit=12, **common), out_dir=tmp_path / "b")
    evaluate(EvalConfig(limit=6, **common), out_dir=tmp_path / "c")
    a, b, c = rewards(tmp_path / "a"), rewards(tmp_path / "b"), rewards(tmp_path / "c")
    assert a == c and all(b[k] == v for k, v in a.items())
