"""The scoring engine: token-budget batches, one score per distinct input, cache, resume."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmbench.core.specs import ModelSpec
from rmbench.core.types import ComparisonGroup
from rmbench.errors import ModelError
from rmbench.models import Runtime, build_model
from rmbench.scoring.cache import ScoreCache
from rmbench.scoring.engine import batch_cost, plan_batches, plan_shared_batches, score_groups
from rmbench.scoring.runner import EvalConfig, evaluate

COUNTER = """
import json, os
LOG = os.environ["RMBENCH_TEST_CALLS"]

def score(pairs):
    calls = json.load(open(LOG)) if os.path.exists(LOG) else []
    if os.environ.get("RMBENCH_TEST_FAIL_AT") and len(calls) + 1 >= int(os.environ["RMBENCH_TEST_FAIL_AT"]):
        raise RuntimeError("killed mid-run")
    calls.append(len(pairs))
    json.dump(calls, open(LOG, "w"))
    return [float(len(r)) * 0.5 + (hash(r) % 7) * 0.01 for _, r in pairs]
"""


@pytest.fixture
def counting_model(tmp_path, monkeypatch):
    f = tmp_path / "counter.py"
    f.write_text(COUNTER)
    log = tmp_path / "calls.json"
    monkeypatch.setenv("RMBENCH_TEST_CALLS", str(log))

    def calls():
        return json.loads(log.read_text()) if log.exists() else []

    return f"python:{f}:score", calls


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 300), max_size=60), st.integers(50, 2000), st.integers(1, 16))
def test_plan_covers_everything_once_within_budget(lengths, budget, max_batch):
    plan = plan_batches(lengths, budget, max_batch)
    assert sorted(i for b in plan for i in b) == list(range(len(lengths)))
    for b in plan:
        assert len(b) <= max_batch
        assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= budget
        assert min(lengths[i] for i in b) >= 0.9 * max(lengths[i] for i in b)
    flat = [lengths[i] for b in plan for i in b]
    assert flat == sorted(flat, reverse=True)  # longest first: neighbours pad little


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(1, 200)), max_size=60), st.integers(50, 4000),
       st.integers(1, 16))
def test_shared_plan_covers_everything_once_within_budget(rows, budget, max_batch):
    keys = [k for k, _ in rows]
    prefix = [10 * k + 5 for k in keys]  # one prompt length per key
    lengths = [p + rest for p, (_, rest) in zip(prefix, rows)]
    plan = plan_shared_batches(lengths, prefix, keys, budget, max_batch)
    assert sorted(i for b in plan for i in b) == list(range(len(lengths)))
    for b in plan:
        assert len(b) <= max_batch
        assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= budget
        work, padded = batch_cost(lengths, prefix, keys, b)
        # Padded, a batch runs at most a plain pass plus one prefix pass per prompt in it (two
        # prompts whose longest rest and longest text are in different rows pad past rows x longest).
        n_prompts, longest_prefix = len({keys[i] for i in b}), max(prefix[i] for i in b)
        assert 0 < work <= padded <= len(b) * max(lengths[i] for i in b) + n_prompts * longest_prefix


def test_shared_plan_padding_bound_with_two_prompts():
    """The case hypothesis found: prompts of 5 and 15 tokens in one batch run 2 x 15 prefix
    tokens and 3 x 115 rest tokens, 375 > 3 x 124 (rows x longest text)."""
    lengths, prefix, keys = [120, 111, 124], [5, 15, 15], [0, 1, 1]
    plan = plan_shared_batches(lengths, prefix, keys, 372, 3)
    assert plan == [[0, 2, 1]]
    assert batch_cost(lengths, prefix, keys, plan[0]) == (5 + 15 + 115 + 96 + 109, 2 * 15 + 3 * 115)


def test_shared_plan_keeps_a_prompts_responses_together():
    """Twelve short answers to each of three prompts: one batch per prompt-group of pieces, and
    each prompt's tokens run once, not twelve times."""
    keys = [k for k in range(3) for _ in range(12)]
    prefix = [40] * 36
    lengths = [40 + 5 + (i % 12) for i in range(36)]
    plan = plan_shared_batches(lengths, prefix, keys, 8192, 64)
    for k in range(3):
        assert sum(any(keys[i] == k for i in b) for b in plan) == 1
    work = sum(batch_cost(lengths, prefix, keys, b)[0] for b in plan)
    assert work == 3 * 40 + sum(n - 40 for n in lengths)
    # A row that would pad more than its prompt costs starts a new piece of that prompt.
    plan = plan_shared_batches([45, 45, 300], [40, 40, 40], [0, 0, 0], 8192, 64)
    assert sorted(map(sorted, plan)) == [[0, 1], [2]]


def test_distinct_inputs_are_scored_once_across_tasks(tmp_path, counting_model):
    model, calls = counting_model
    res = evaluate(EvalConfig(model=model, tasks=("ties_sample", "ties_copy"), include=(str(_copy_entry(tmp_path)),),
                              n_bootstrap=10, cache_dir=str(tmp_path / "c")))
    stats = res.execution.stats
    assert stats.requests == 2 * 514 and stats.distinct == 514  # the copy adds nothing new
    assert sum(calls()) == stats.distinct == stats.computed
    a, b = next(res.records("ties_sample")), next(res.records("ties_copy"))
    assert a.metric == b.metric and a.value == b.value


def _copy_entry(tmp_path):
    from rmbench.catalog import builtin_tasks_dir

    folder = tmp_path / "entries"
    folder.mkdir()
    (folder / "copy.yaml").write_text(f"name: ties_copy\nkind: rb2_ties\nargs:\n  path: "
                                      f"{builtin_tasks_dir() / 'data' / 'ties_builtin.jsonl'}\n")
    return folder


def test_second_run_with_other_eps_does_no_forward_pass(tmp_path, counting_model):
    model, calls = counting_model
    first = evaluate(EvalConfig(model=model, eps=(0.0, 0.1), n_bootstrap=10, cache_dir=str(tmp_path / "c")))
    n_calls = len(calls())
    assert n_calls > 0 and first.execution.stats.batches_computed == n_calls
    second = evaluate(EvalConfig(model=model, eps=(0.5,), n_bootstrap=10, cache_dir=str(tmp_path / "c")))
    assert len(calls()) == n_calls  # no new call to the model
    assert second.execution.stats.batches_computed == 0 and second.execution.stats.cached == 514


def test_interrupted_run_resumes_with_identical_rewards(tmp_path, counting_model, monkeypatch):
    model, calls = counting_model
    runtime = Runtime(token_budget=400)  # many small batches
    fresh = evaluate(EvalConfig(model=model, runtime=runtime, n_bootstrap=10, cache_dir=str(tmp_path / "fresh")),
                     out_dir=tmp_path / "fresh_run")
    n_batches = fresh.execution.stats.batches_computed
    assert n_batches > 4
    (tmp_path / "calls.json").unlink()
    monkeypatch.setenv("RMBENCH_TEST_FAIL_AT", str(n_batches // 2))
    with pytest.raises(ModelError, match="killed mid-run"):
        evaluate(EvalConfig(model=model, runtime=runtime, n_bootstrap=10, cache_dir=str(tmp_path / "resume")),
                 out_dir=tmp_path / "resumed_run")
    assert not (tmp_path / "resumed_run" / "results.json").exists()
    done = len(calls())
    monkeypatch.delenv("RMBENCH_TEST_FAIL_AT")
    resumed = evaluate(EvalConfig(model=model, runtime=runtime, n_bootstrap=10, cache_dir=str(tmp_path / "resume")),
                       out_dir=tmp_path / "resumed_run")
    assert resumed.execution.stats.batches_computed == n_batches - done
    resumed_rewards = (tmp_path / "resumed_run" / "rewards.jsonl").read_text()
    assert resumed_rewards == (tmp_path / "fresh_run" / "rewards.jsonl").read_text()
    assert [m.to_json() for m in resumed.records()] == [m.to_json() for m in fresh.records()]


def test_cache_is_keyed_by_model_fingerprint(tmp_path):
    groups = [ComparisonGroup("g", "q", ["a", "bb"], [1, 0])]
    for kind, args, expected in (("constant", {"value": 1.0}, [1.0, 1.0]), ("constant", {"value": 2.0}, [2.0, 2.0])):
        model = build_model(ModelSpec.make(kind, kind, args))
        cache = ScoreCache(model.fingerprint(), tmp_path)
        rewards, _ = score_groups(model, groups, cache=cache)
        assert list(rewards) == expected


def test_python_adapter_fingerprint_follows_its_source(tmp_path):
    f = tmp_path / "rm.py"
    f.write_text("def score(pairs):\n    return [1.0] * len(pairs)\n")
    a = build_model(ModelSpec.make("p", "python", {"target": f"{f}:score"})).fingerprint()
    f.write_text("def score(pairs):\n    return [2.0] * len(pairs)\n")
    import sys
    for name in [m for m in sys.modules if m.startswith("rmbench_user_")]:
        del sys.modules[name]
    b = build_model(ModelSpec.make("p", "python", {"target": f"{f}:score"})).fingerprint()
    assert a != b


def test_tiny_implicit_end_to_end_with_cache(tiny, tmp_path):
    config = dict(model=f"implicit:{tiny['causal']}", runtime=Runtime(dtype="float32", device="cpu"),
                  n_bootstrap=10, limit=6, cache_dir=str(tmp_path))
    first = evaluate(EvalConfig(**config))
    again = evaluate(EvalConfig(**config))
    assert first.execution.stats.batches_computed > 0 and again.execution.stats.batches_computed == 0
    assert [m.to_json() for m in first.records()] == [m.to_json() for m in again.records()]
    info = first.execution.model
    assert info["dtype"] == "float32" and info["device"] == "cpu" and info["weights"].startswith("sha256:")
    # No --token-budget: the device's default, recorded with how it was chosen; a fully cached re-run plans nothing.
    assert first.execution.runtime["token_budget"] is None
    assert (first.execution.stats.token_budget, first.execution.stats.max_batch) == (8192, 64)
    assert first.execution.stats.batch_limits == "the CPU default"
    assert again.execution.stats.token_budget is None and again.execution.stats.batch_limits is None


def test_discretized_run_resumes_identically(tiny, tmp_path):
    spec = {"model": "discretize:x",
            "model_args": (("inner", {"kind": "implicit", "args": {"model": str(tiny["causal"])}}),
                                                    ("p", 0.2))}
    runtime = Runtime(dtype="float32", device="cpu", token_budget=200)
    a = evaluate(EvalConfig(model=spec["model"], model_args=spec["model_args"], runtime=runtime, limit=4,
                            n_bootstrap=10, cache_dir=str(tmp_path / "a")))
    b = evaluate(EvalConfig(model=spec["model"], model_args=spec["model_args"], runtime=runtime, limit=4,
                            n_bootstrap=10, use_cache=False))
    assert [m.to_json() for m in a.records()] == [m.to_json() for m in b.records()]
    rewards = np.array([m.value for m in a.records() if m.metric == "pairwise_accuracy"])
    assert np.isfinite(rewards).all()
