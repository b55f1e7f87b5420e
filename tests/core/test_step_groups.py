"""Step-level tasks: a solution's steps as a StepGroup (its step-level D/Spec pairs), and the
runner scoring a ``Task.steps`` task with a process reward model (step cache, logit scale,
a response-level model refused in the plan)."""

import json

import numpy as np
import pytest

import rmbench
from rmbench.core import metric_registry as R
from rmbench.core.step_groups import StepGroup
from rmbench.core.types import PairIndex
from rmbench.errors import ConfigError
from rmbench.tasks import TASK_KINDS

PRM = """
import json, os
LOG = os.environ.get("RMBENCH_TEST_STEP_CALLS")

def score(items):
    if LOG:
        calls = json.load(open(LOG)) if os.path.exists(LOG) else []
        json.dump(calls + [len(items)], open(LOG, "w"))
    return [[0.2 if "wrong" in s else 0.9 - 0.1 * i for i, s in enumerate(steps)] for _, steps in items]

def logits(items):
    return [[-1.0 if "wrong" in s else 2.0 for s in steps] for _, steps in items]
"""


def test_pairs_run_to_the_first_wrong_step():
    g = StepGroup(id="s", prompt="p", responses=("a", "b", "c", "d", "e"), utilities=(1, 1, 0, 1, 0))
    assert g.first_error == 2
    assert g.discrimination_pairs() == [(0, 2), (1, 2)]  # each correct step before it, the first wrong one
    assert g.specificity_pairs() == [(0, 1)]  # the correct steps before it; steps after it are in no pair
    ok = StepGroup(id="t", prompt="p", responses=("a", "b", "c"), utilities=(1, 1, 1))
    assert ok.first_error == -1 and ok.discrimination_pairs() == []
    assert ok.specificity_pairs() == [(0, 1), (0, 2), (1, 2)]
    first = StepGroup(id="u", prompt="p", responses=("a", "b"), utilities=(0, 1))
    assert first.discrimination_pairs() == [] and first.specificity_pairs() == []
    one = StepGroup(id="v", prompt="p", responses=("only",), utilities=(1,))  # one step: allowed, no pairs
    index = PairIndex.from_groups([g, ok, first, one])
    assert index.diff_better.tolist() == [0, 1] and index.diff_worse.tolist() == [2, 2]
    assert index.eq_a.tolist() == [0, 5, 5, 6] and index.eq_b.tolist() == [1, 6, 7, 7]


def test_a_step_label_is_0_or_1_and_the_problem_a_string():
    with pytest.raises(ValueError, match="label is 1"):
        StepGroup(id="s", prompt="p", responses=("a", "b"), utilities=(1, 2))
    with pytest.raises(ValueError, match="problem must be a string"):
        StepGroup(id="s", prompt=[{"role": "user", "content": "p"}], responses=("a",), utilities=(1,))
    with pytest.raises(ValueError, match="at least 2 responses"):  # a response group still needs two
        rmbench.ComparisonGroup(id="g", prompt="p", responses=("a",), utilities=(1,))


class StepsTask(rmbench.Task):
    """Solutions from a jsonl file: ``problem``, ``steps``, ``label`` (first wrong step, -1 none);
    its own score: the share of solutions whose first step under 0.5 is the label."""

    steps = True
    scores = (rmbench.MetricDef("first_error_acc", "first error acc", True, False, "groups", "pred == label"),)
    headline = ("first_error_acc", "discrimination", "specificity")

    def __init__(self, path: str) -> None:
        self.path = path

    def groups(self):
        for _, line, row in rmbench.iter_rows(path=self.path):
            n, k = len(row["steps"]), row["label"]
            yield StepGroup(id=str(line), prompt=row["problem"], responses=row["steps"],
                            utilities=[1] * n if k < 0 else [1] * k + [0] * (n - k))

    def extra_metrics(self, groups, rewards):
        hits, start = [], 0
        for g in groups:
            r = rewards[start:start + len(g.responses)]
            start += len(g.responses)
            below = np.flatnonzero(r < 0.5)
            hits.append(float((below[0] if below.size else -1) == g.first_error))
        hit = np.array(hits)
        return {"first_error_acc": lambda units: float(hit[units].mean())}


@pytest.fixture
def steps_task(tmp_path, monkeypatch):
    rows = tmp_path / "solutions.jsonl"
    solutions = [{"problem": "1+1", "steps": ["1+1=2", "so 2"], "label": -1},
                 {"problem": "2+2", "steps": ["2+2=5 wrong", "so 5"], "label": 0},
                 {"problem": "3+3", "steps": ["3+3", "=6", "so 7 wrong", "done"], "label": 2},
                 {"problem": "4+4", "steps": ["4+4=8"], "label": -1}]
    rows.write_text("".join(json.dumps(s) + "\n" for s in solutions))
    prm = tmp_path / "steps_prm.py"
    prm.write_text(PRM)
    log = tmp_path / "calls.json"
    monkeypatch.setenv("RMBENCH_TEST_STEP_CALLS", str(log))
    rmbench.register_task_kind("steps_test_kind", StepsTask)
    yield rows, prm, (lambda: json.loads(log.read_text()) if log.exists() else [])
    TASK_KINDS._entries.pop("steps_test_kind", None)
    R.METRICS.unregister("first_error_acc")


def test_a_step_task_runs_scores_caches_and_reports_step_level_pairs(steps_task, tmp_path):
    rows, prm, calls = steps_task
    config = rmbench.EvalConfig(model=f"python-prm:{prm}:score", tasks=("steps_test_kind",),
                                task_args=(("path", str(rows)),), n_bootstrap=20, cache_dir=str(tmp_path / "cache"),
                                eps=(0.0, 0.2), eps_unit="raw")
    run = rmbench.evaluate(config, out_dir=tmp_path / "run")
    assert sum(calls()) == 4  # every solution once (in length-sorted batches)
    first = calls()
    assert run.value("steps_test_kind", "first_error_acc") == 1.0
    # D pairs: (3+3 steps 0 and 1, its step 2): 0.9 and 0.8 > 0.2; Spec pairs: 1+1's two steps
    # (0.9 vs 0.8) and 3+3's first two (0.9 vs 0.8), each 0.1 apart
    assert run.value("steps_test_kind", "discrimination", eps=0.0) == 1.0
    assert run.value("steps_test_kind", "specificity", eps=0.0) == 0.0  # 0.1 apart: not tied at eps 0
    assert run.value("steps_test_kind", "specificity", eps=0.2) == 1.0
    assert run.value("steps_test_kind", "pairwise_accuracy") == 1.0
    stored = [json.loads(line) for line in (tmp_path / "run" / "rewards.jsonl").read_text().splitlines()] \
        if (tmp_path / "run" / "rewards.jsonl").exists() else None
    if stored is not None:
        assert len(stored) == 2 + 2 + 4 + 1  # one reward per step
    rmbench.evaluate(config, out_dir=tmp_path / "again")
    assert calls() == first  # the step cache answers a second run: no call
    assert (tmp_path / "cache" / "steps").is_dir()


def test_a_logit_scale_prm_reads_as_probabilities(steps_task, tmp_path):
    rows, prm, _ = steps_task
    run = rmbench.evaluate(rmbench.EvalConfig(model=f"python-prm:{prm}:logits", tasks=("steps_test_kind",),
                                              model_args=(("scale", "logit"),), eps=(0.5,), eps_unit="raw",
                                              task_args=(("path", str(rows)),), n_bootstrap=10, use_cache=False))
    assert run.value("steps_test_kind", "first_error_acc") == 1.0  # sigmoid(-1) < 0.5 < sigmoid(2)
    # eps 0.5 in probability units: sigmoid(2) - sigmoid(-1) = 0.88 - 0.27 = 0.61 > 0.5
    assert run.value("steps_test_kind", "discrimination", eps=0.5) == 1.0


def test_a_response_level_model_on_a_step_task_fails_in_the_plan(steps_task):
    rows, _, _ = steps_task
    with pytest.raises(ConfigError, match="scores each step of a solution.*prm:CHECKPOINT"):
        rmbench.evaluate(rmbench.EvalConfig(model="length", tasks=("steps_test_kind",),
                                            task_args=(("path", str(rows)),)))


def test_a_solution_with_an_unscored_step_is_left_out_whole():
    from rmbench.core.unscored import drop_unscored

    groups = [StepGroup(id="a", prompt="p", responses=("x", "y", "z"), utilities=(1, 1, 0)),
              StepGroup(id="b", prompt="p", responses=("x", "y", "z"), utilities=(1, 1, 1))]
    scored = drop_unscored(groups, np.array([0.9, np.nan, 0.1, 0.8, 0.7, 0.9]))
    assert [g.id for g in scored.groups] == ["b"]  # never a solution with a step taken out
    assert scored.dropped_groups == 1 and scored.unscored_responses == 1
    assert scored.rewards.tolist() == [0.8, 0.7, 0.9]
