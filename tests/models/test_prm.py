"""Process reward models: the step-scoring capability, python-prm, step-score caching, and a
PRM as a response-level RM (steps split at blank lines, aggregate min/last/prod/mean)."""

import json
import math

import pytest

from rmbench.core.specs import ModelSpec
from rmbench.core.types import ComparisonGroup, Message
from rmbench.errors import ConfigError, ModelError
from rmbench.models import build_model
from rmbench.models.step_model import StepRequest, StepScoringModel
from rmbench.models.steps import aggregate, checked_step_scores, problem_text, split_steps
from rmbench.scoring.engine import score_groups
from rmbench.scoring.steps import score_steps, step_cache

PRM = """
import json, os
LOG = os.environ.get("RMBENCH_TEST_PRM_CALLS")

def score(items):
    if LOG:
        calls = json.load(open(LOG)) if os.path.exists(LOG) else []
        json.dump(calls + [len(items)], open(LOG, "w"))
    # P(step correct): 0.1 for a step that says "wrong", else 0.9 - 0.1 * (its index)
    return [[0.1 if "wrong" in s else 0.9 - 0.1 * i for i, s in enumerate(steps)] for _, steps in items]

def logits(items):
    return [[-2.0 if "wrong" in s else 2.0 for s in steps] for _, steps in items]

def short(items):
    return [[0.5] for _ in items]

def outside(items):
    return [[1.5] * len(steps) for _, steps in items]
"""


@pytest.fixture
def prm_file(tmp_path, monkeypatch):
    f = tmp_path / "my_prm.py"
    f.write_text(PRM)
    log = tmp_path / "calls.json"
    monkeypatch.setenv("RMBENCH_TEST_PRM_CALLS", str(log))
    return f, (lambda: json.loads(log.read_text()) if log.exists() else [])


def _prm(f, fn="score", **args):
    return build_model(ModelSpec(name="p", kind="python-prm", args={"target": f"{f}:{fn}", **args}))


def test_split_steps_at_blank_lines():
    assert split_steps("a\nb\n\nc\n \n\n d ") == ("a\nb", "c", "d")
    assert split_steps("one line") == ("one line",)
    assert split_steps("") == ("",)
    assert split_steps("\n\nx\n\n") == ("x",)


def test_problem_text_reads_the_last_user_turn():
    chat = (Message("system", "s"), Message("user", "q1"), Message("assistant", "a"),
            Message("user", "q2"))
    assert problem_text(chat) == "q2" and problem_text("plain") == "plain"


def test_aggregates_by_hand():
    p = [0.9, 0.5, 0.8]
    assert aggregate(p, "min") == 0.5
    assert aggregate(p, "last") == 0.8
    assert aggregate(p, "prod") == pytest.approx(0.36, abs=1e-12)
    assert aggregate(p, "mean") == pytest.approx(2.2 / 3, abs=1e-12)
    s = 1 / (1 + math.exp(-2.0))  # a logit of 2 is P = sigmoid(2)
    assert aggregate([2.0, -2.0], "prod", "logit") == pytest.approx(s * (1 - s), abs=1e-12)


def test_python_prm_is_a_step_scoring_model_with_its_scale(prm_file):
    f, _ = prm_file
    model = _prm(f)
    assert isinstance(model, StepScoringModel) and model.step_scale == "probability"
    assert _prm(f, "logits", scale="logit").step_scale == "logit"
    out = model.score_steps([StepRequest("q", ("a", "wrong", "c"))])
    assert [list(map(float, s)) for s in out] == [[0.9, 0.1, 0.7]]


def test_bad_arguments_and_bad_step_scores_are_one_line(prm_file):
    f, _ = prm_file
    with pytest.raises(ConfigError, match="aggregate must be one of min, last, prod, mean, got 'max'"):
        _prm(f, aggregate="max")
    with pytest.raises(ConfigError, match="scale must be one of probability, logit"):
        _prm(f, scale="odds")
    req = [StepRequest("q", ("a", "b"), "g7")]
    with pytest.raises(ModelError, match="1 step scores for solution 'g7' with 2 steps"):
        score_steps(_prm(f, "short"), req)
    with pytest.raises(ModelError, match="outside \\[0, 1\\].*scale=logit"):
        score_steps(_prm(f, "outside"), req)
    with pytest.raises(ModelError, match="not numbers"):
        checked_step_scores(req, [["x", 1.0]], "probability")
    with pytest.raises(ModelError, match="not finite"):
        checked_step_scores(req, [[float("nan"), 1.0]], "logit")


def test_step_scores_are_cached_and_shared_across_aggregates(prm_file, tmp_path):
    f, calls = prm_file
    reqs = [StepRequest("q", ("a", "b")), StepRequest("q", ("wrong",)), StepRequest("q", ("a", "b"))]
    by_min, by_last = _prm(f), _prm(f, aggregate="last")
    assert by_min.fingerprint() != by_last.fingerprint()  # the aggregate is part of the RM's identity
    assert by_min.step_fingerprint() == by_last.step_fingerprint()  # ... not of the step scores'
    cache = step_cache(by_min, tmp_path / "cache")
    first, _ = score_steps(by_min, reqs, cache=cache)
    assert [s.tolist() for s in first] == [[0.9, 0.8], [0.1], [0.9, 0.8]]
    assert sum(calls()) == 2  # the duplicate scored once
    again, _ = score_steps(by_last, reqs, cache=step_cache(by_last, tmp_path / "cache"))
    assert [s.tolist() for s in again] == [s.tolist() for s in first] and sum(calls()) == 2  # all cached
    assert (tmp_path / "cache" / "steps" / f"{by_min.step_fingerprint()}.sqlite").exists()
    before = by_min.step_fingerprint()
    f.write_text(PRM + "\n# edited\n")  # an edited function is another model: scored again
    assert _prm(f).step_fingerprint() != before


@pytest.mark.parametrize("how, expected", [("min", [0.8, 0.1]), ("last", [0.8, 0.7]), ("prod", [0.72, 0.063]),
                                           ("mean", [0.85, (0.9 + 0.1 + 0.7) / 3])])
def test_prm_ranks_responses_with_each_aggregate(prm_file, how, expected):
    f, _ = prm_file
    group = ComparisonGroup(id="g", prompt="2+2?", responses=("x\n\ny", "x\n\nwrong\n\nz"), utilities=(1, 0))
    rewards, _ = score_groups(_prm(f, aggregate=how), [group])
    assert rewards == pytest.approx(expected, abs=1e-12)


def test_prm_runs_on_an_existing_task(prm_file, tmp_path):
    from rmbench.scoring.runner import EvalConfig, evaluate

    f, _ = prm_file
    base = dict(model=f"python-prm:{f}:score", tasks=("ties_sample",), limit=4, n_bootstrap=0,
                cache_dir=str(tmp_path / "c"))
    record = evaluate(EvalConfig(**base))
    assert record.task_names == ("ties_sample",) and record.execution.stats.computed > 0
    assert record.model.kind == "python-prm"
    other = evaluate(EvalConfig(**base, model_args=(("aggregate", "mean"),)))
    assert other.model.fingerprint != record.model.fingerprint and other.model.spec["args"]["aggregate"] == "mean"
    assert other.execution.stats.computed == record.execution.stats.computed  # cached apart: scored again


PPE_PRM = """
def score(items):  # each step is its own score, written as a number
    return [[float(s) for s in steps] for _, steps in items]
"""


@pytest.mark.parametrize("how, expected", [("min", 0.0), ("last", 0.5), ("prod", 0.5), ("mean", 0.75)])
def test_a_prm_ranks_ppe_correctness_with_each_aggregate(tmp_path, how, expected):
    """Two math rows, one sampled (correct, wrong) pair each, steps scored as written:
    row 1: correct 0.9, 0.3 vs wrong 0.5, 0.5 (min .3 < .5, last .3 < .5, prod .27 > .25, mean .6 > .5);
    row 2: correct 0.2, 0.8 vs wrong 0.6, 0.4 (min .2 < .4, last .8 > .4, prod .16 < .24, mean .5 = .5,
    a tie: 1/2). Accuracy by hand: min 0, last 1/2, prod 1/2, mean 3/4."""
    import rmbench

    prm = tmp_path / "ppe_prm.py"
    prm.write_text(PPE_PRM)
    rows = [{"question_id": "1", "model_name": "m", "prompt": "q1?", "scores": [True, False], "mean_score": 0.5,
             "response_1": "0.9\n\n0.3", "response_2": "0.5\n\n0.5", "sampled_conflict_pairs": [[0, 1]]},
            {"question_id": "2", "model_name": "m", "prompt": "q2?", "scores": [True, False], "mean_score": 0.5,
             "response_1": "0.2\n\n0.8", "response_2": "0.6\n\n0.4", "sampled_conflict_pairs": [[0, 1]]}]
    (tmp_path / "ppe").mkdir()
    (tmp_path / "ppe" / "math.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = rmbench.evaluate(rmbench.EvalConfig(model=f"python-prm:{prm}:score", tasks=("ppe_correctness",),
                                              model_args=(("aggregate", how),), n_bootstrap=10, use_cache=False,
                                              data=(("ppe_correctness", str(tmp_path / "ppe")),)))
    assert run.value("ppe_correctness", "ppe_accuracy", subset="math") == pytest.approx(expected)
    assert run.model.spec["args"]["aggregate"] == how  # the aggregate is part of the model's identity
