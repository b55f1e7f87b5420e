import json
import math

import numpy as np
import pytest

from rmbench.catalog import load_catalog
from rmbench.errors import ConfigError, DataError, ModelError
from rmbench.results.statistics.summary import summarize
from rmbench.results.storage.folder import RESULTS_FILE, REWARDS_FILE, load_rewards
from rmbench.results.storage.record import MetricRecord
from rmbench.scoring.runner import EvalConfig, evaluate
from rmbench.tasks.loading import load_groups
from tests.conftest import shared_file

FAST = dict(n_bootstrap=50)


def overall(run, metric, eps=None, task="ties_sample"):
    record = run.metric(task, metric, eps=eps)
    assert record is not None, metric
    return record


def test_oracle_is_perfect(tmp_path):
    res = evaluate(EvalConfig(model="oracle", tasks=("ties_sample",), **FAST), out_dir=tmp_path)
    for eps in (0.0, 0.1):
        assert overall(res, "discrimination", eps).value == 1.0
        assert overall(res, "specificity", eps).value == 1.0
    assert overall(res, "ds_auc").value == 1.0
    assert overall(res, "pairwise_accuracy").value == 1.0
    assert overall(res, "sign_accuracy").value == 1.0
    # every tied answer is equal and every correct answer beats every wrong one:
    # different_correct_margin = 0 < correct_incorrect_margin = 1, so both preference terms are 1;
    # the tanh term averages over prompts with a margin > 0 only (rewardbench 0.1.4), and there
    # are none, so it is 0: score = 0.3 + 0.3 + 0.2 + 0.2 + 0.01 * 0.
    assert overall(res, "ties_score").value == pytest.approx(1.0)


def test_constant_discriminates_nothing_and_ties_everything(tmp_path):
    res = evaluate(EvalConfig(model="constant", tasks=("ties_sample",), **FAST))
    assert overall(res, "discrimination", 0.1).value == 0.0
    assert overall(res, "specificity", 0.1).value == 1.0
    assert overall(res, "ds_auc").value == 0.0
    assert overall(res, "pairwise_accuracy").value == 0.5


def test_results_contract_and_rewards_recompute_every_metric(tmp_path):
    evaluate(EvalConfig(model="length", tasks=("ties_sample",), eps=(0.0, 0.1, 0.5), **FAST), out_dir=tmp_path)
    doc = json.loads((tmp_path / RESULTS_FILE).read_text())
    for key in ("schema_version", "status", "rmbench_version", "created", "model", "tasks", "config", "execution",
                "environment"):
        assert key in doc
    assert doc["schema_version"] == 2 and doc["status"] == "success"
    assert set(doc["model"]) >= {"name", "spec", "fingerprint"}
    assert set(doc["environment"]) >= {"python", "platform", "packages", "git_revision", "git_dirty"}
    assert doc["environment"]["packages"]["numpy"]
    task = doc["tasks"][0]
    assert set(task) >= {"name", "version", "data_fingerprint", "comparability_key", "task_key", "counts", "eps",
                         "headline", "official", "status", "metrics"}
    assert task["counts"]["groups"] == 40 and task["status"] == "success" and task["error"] is None
    assert task["official"]["metric"] == "ties_score" and "ties_score" in task["headline"]
    for m in task["metrics"]:
        assert set(m) == {"task", "subset", "shift", "metric", "eps", "eps_unit", "value", "ci_low", "ci_high", "n"}
        if m["ci_low"] is not None:
            assert m["ci_low"] <= m["value"] + 1e-12 or m["metric"] == "balanced_best"
    assert {m["metric"] for m in task["metrics"]} == {
        "pairwise_accuracy", "sign_accuracy", "ds_auc", "balanced_best", "reward_margin", "discrimination",
        "specificity", "ties_score", "length_correlation", "accuracy_longer_better", "accuracy_shorter_better",
        "length_bias_gap"}  # no rewrite metrics: the Ties groups hold no rewrites
    assert {m["subset"] for m in task["metrics"]} == {None, "tied", "ref"}

    # Recompute from rewards.jsonl + the task's groups, without the model.
    rows = load_rewards(tmp_path)
    _, groups = load_groups(load_catalog().task_spec("ties_sample"))
    rewards = np.array([r.reward for r in rows])
    assert [(r.group_id, r.response_index) for r in rows] == [(g.id,
                                                               i) for g in groups for i in range(len(g.responses))]
    task_obj, _ = load_groups(load_catalog().task_spec("ties_sample"))
    again = summarize("ties_sample", groups, rewards, (0.0, 0.1, 0.5), "sigma", task_obj.bootstrap_units(groups),
                      task_obj.extra_metrics(groups, rewards), n_bootstrap=50, seed=0)
    assert [r.to_json() for r in again] == task["metrics"]


def test_sigma_units_are_invariant_to_affine_rewards(tmp_path):
    f = tmp_path / "rm.py"
    f.write_text("def base(pairs):\n    return [float(len(r) % 7) for _, r in pairs]\n"
                 "def moved(pairs):\n    return [3.0 * x - 11.0 for x in base(pairs)]\n")
    a = evaluate(EvalConfig(model=f"python:{f}:base", tasks=("ties_sample",), **FAST))
    b = evaluate(EvalConfig(model=f"python:{f}:moved", tasks=("ties_sample",), **FAST))
    for ma, mb in zip(a.records(), b.records()):
        assert ma.metric == mb.metric
        assert ma.eps == pytest.approx(mb.eps, abs=1e-9)  # balanced_best's eps, in sigma units
        # every metric, the Ties score included (its tanh term is a ratio of margins), is affine invariant
        assert ma.value == pytest.approx(mb.value, abs=1e-9, nan_ok=True), ma.metric


def test_raw_eps_unit(tmp_path):
    res = evaluate(EvalConfig(model="length", tasks=("ties_sample",), eps=(5.0,), eps_unit="raw", **FAST))
    d = overall(res, "discrimination", 5.0)
    assert d.eps_unit == "raw" and d.eps == 5.0


def test_shared_rb2_sample_runs(tmp_path):
    path = shared_file("rb2/ties_sample.jsonl")
    res = evaluate(EvalConfig(model="length", tasks=("ties_sample",), data=(("ties_sample", str(path)),), **FAST),
                   out_dir=tmp_path)
    assert res.tasks[0].counts.groups == 6
    assert res.tasks[0].args["path"] == str(path.resolve())
    assert (tmp_path / REWARDS_FILE).is_file()


def test_bad_data_writes_nothing(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "tied:0", "prompt": "q", "chosen": ["a"], "rejected": "b"}\n')
    out = tmp_path / "run"
    with pytest.raises(DataError, match="bad.jsonl, line 1, field 'rejected'"):
        evaluate(EvalConfig(model="length", tasks=("ties_sample",), data=(("ties_sample", str(bad)),)), out_dir=out)
    assert not out.exists()


@pytest.mark.parametrize("body, message", [
    ("def f(pairs):\n    return [1.0]\n", "returned 1 rewards for a batch of"),
    ("def f(pairs):\n    return [float('nan')] * len(pairs)\n", "non-finite reward"),
    ("def f(pairs):\n    return ['x'] * len(pairs)\n", "not numbers"),
    ("def f(pairs):\n    raise KeyError('oops')\n", "KeyError"),
])
def test_bad_model_output_is_a_clear_error(tmp_path, body, message):
    f = tmp_path / "rm.py"
    f.write_text(body)
    with pytest.raises(ModelError, match=message):
        evaluate(EvalConfig(model=f"python:{f}:f", tasks=("ties_sample",)), out_dir=tmp_path / "run")
    assert not (tmp_path / "run" / RESULTS_FILE).exists()


def test_config_errors():
    with pytest.raises(ConfigError, match="not among the tasks"):
        evaluate(EvalConfig(model="length", tasks=("ties_sample",), data=(("other", "x"),)))
    with pytest.raises(ConfigError, match="names a task twice"):
        EvalConfig(tasks=("ties_sample", "ties_sample"))
    with pytest.raises(ConfigError, match="--eps"):
        EvalConfig(eps=(-1.0,))
    with pytest.raises(ConfigError, match="did you mean 'oracle'"):
        evaluate(EvalConfig(model="orcale"))
    with pytest.raises(ConfigError, match="unknown task"):
        evaluate(EvalConfig(tasks=("nope",)))


def test_limit_and_bootstrap_are_reproducible():
    a = evaluate(EvalConfig(model="length", limit=10, n_bootstrap=100, seed=5))
    b = evaluate(EvalConfig(model="length", limit=10, n_bootstrap=100, seed=5))
    assert a.tasks[0].counts.groups == 10
    assert [m.to_json() for m in a.records()] == [m.to_json() for m in b.records()]


def test_shift_slices_are_reported(tmp_path):
    from rmbench.core.types import ComparisonGroup

    groups = [ComparisonGroup("o1", "q", ["good", "bad!"], [1, 0]),
              ComparisonGroup("p1", "q", ["fine", "poor!!"], [1, 0], source_id="o1", shift="paraphrase")]
    recs = summarize("t", groups, np.array([2.0, 1.0, 0.0, 1.0]), (0.0,), n_bootstrap=20)
    shifts = {(r.shift, r.metric): r.value for r in recs if r.metric == "pairwise_accuracy"}
    assert shifts == {(None, "pairwise_accuracy"): 0.5, ("none", "pairwise_accuracy"): 1.0,
                      ("paraphrase", "pairwise_accuracy"): 0.0}
    assert all(isinstance(r, MetricRecord) for r in recs)
    assert math.isnan([r for r in recs if r.metric == "specificity"][0].value)


def test_written_files_get_the_usual_permissions(tmp_path):
    import os
    import stat

    from rmbench.files import atomic_write_text

    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "x.txt", "hi")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "x.txt").stat().st_mode) == 0o644


CLOSING_RM = '''
import os
from rmbench import RewardModel


class Closing(RewardModel):
    """Writes a line to $CLOSE_LOG when closed; ``fail``: its score raises."""

    def __init__(self, fail: bool = False):
        self.fail = fail

    def score(self, batch):
        if self.fail:
            raise RuntimeError("scoring broke")
        return [float(len(r.response)) for r in batch]

    def close(self):
        with open(os.environ["CLOSE_LOG"], "a") as f:
            f.write("closed\\n")
'''


@pytest.mark.parametrize("fail", [False, True])
def test_the_runner_closes_the_model_once_scoring_ends(tmp_path, monkeypatch, fail):
    """An adapter's ``close`` (vLLM's engine processes) runs when scoring ends, once, also when
    scoring failed, and before the run's record is built (the record does not need the engine)."""
    (tmp_path / "closing_rm.py").write_text(CLOSING_RM)
    log = tmp_path / "close.log"
    monkeypatch.setenv("CLOSE_LOG", str(log))
    config = EvalConfig(model=f"{tmp_path / 'closing_rm.py'}:Closing", tasks=("ties_sample",), use_cache=False,
                        model_args=(("fail", fail),))
    if fail:
        with pytest.raises(ModelError, match="scoring broke"):
            evaluate(config, out_dir=tmp_path / "run")
    else:
        evaluate(config, out_dir=tmp_path / "run")
        assert (tmp_path / "run" / RESULTS_FILE).exists()
    assert log.read_text() == "closed\n"


def test_close_parts_closes_every_part_even_when_one_raises():
    from rmbench.models.base import CompositeModel, RewardModel, close_parts

    closed = []

    class Part(RewardModel):
        def __init__(self, name, boom=False):
            self.name, self.boom = name, boom

        def score(self, batch):
            return [0.0] * len(batch)

        def close(self):
            closed.append(self.name)
            if self.boom:
                raise OSError(f"{self.name} would not close")

    class Whole(Part, CompositeModel):
        def __init__(self, *kids):
            super().__init__("whole", boom=True)
            self.kids = list(kids)

        def children(self):
            return self.kids

    with pytest.raises(OSError, match="whole would not close"):
        close_parts(Whole(Part("a", boom=True), Part("b")))
    assert closed == ["whole", "a", "b"]
