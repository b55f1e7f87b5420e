"""``published:`` models: another tool's per-item scores replayed as rewards.

Each source's file is built by the publishing tool's own writer path where it can be run here
(RewardBench 2: run_v2.py's scoring and its ``save_to_hub`` through ``tests/support/rb_official.py``), or
laid out line for line as its writer writes it (JudgeBench's ``run_judge.py``, RMB's
``my_run_rm.py``, each named where it is built), and the replayed official score is checked
against the tool's own number: RewardBench 2's code, JudgeBench's ``utils/metrics.py`` from a
checkout named by ``RMBENCH_JUDGEBENCH_DIR`` (never copied here: it has no licence), RMB's
``is_correct`` mean over a real file pinned by URL and sha256 (through ``RMBENCH_MIRROR``).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from rmbench.errors import DataError, ModelError
from rmbench.models.published_files import verdict_rewards
from rmbench.scoring.runner import EvalConfig, evaluate
from tests.support import rb_official

SUBSETS = ("Factuality", "Precise IF", "Math", "Safety", "Focus")


# --- data -------------------------------------------------------------------------------------

def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "eps"]) for _ in range(n))


def rb2_rows() -> list[dict]:
    """Best-of-4 rows in the five subsets and two tied:K / ref:K Ties prompts."""
    rng = random.Random(11)
    rows = [{"id": f"{s[:4]}-{i}", "prompt": f"{s} question {i}?", "chosen": [_text(rng, 3 + i)],
             "rejected": [_text(rng, 4 + j + i) for j in range(3)], "subset": s} for s in SUBSETS for i in range(4)]
    for k in range(2):
        rows.append({"id": f"tied:{k}", "prompt": f"Several right answers {k}.",
                     "chosen": [_text(rng, 5 + j) for j in range(3)], "rejected": [_text(rng, 9), _text(rng, 2)],
                     "subset": "Ties"})
        rows.append({"id": f"ref:{k}", "prompt": f"One right answer {k}.", "chosen": [_text(rng, 6)],
                     "rejected": [_text(rng, 7), _text(rng, 3)], "subset": "Ties"})
    return rows


def rb2_scores(rows: list[dict]) -> list[list[float]]:
    """Scores in the order chosen + rejected, with ties at the top planted (a 2-way and a 4-way)."""
    rng = random.Random(5)
    scores = [[round(rng.gauss(0, 1), 3) for _ in range(len(r["chosen"]) + len(r["rejected"]))] for r in rows]
    scores[0] = [1.5, 1.5, 0.2, -1.0]
    scores[1] = [0.5, 0.5, 0.5, 0.5]
    return scores


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def rb2_published(tmp_path_factory):
    """(data file, the published scores file, RewardBench 2's own scores) by run_v2.py's code."""
    reason = rb_official.official_unavailable()
    if reason:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("rb2")
    rows = rb2_rows()
    official = rb_official.rb2_official(rows, rb2_scores(rows), write_scores_to=folder, model_name="someorg/some-rm")
    published = folder / "results" / "eval-set-scores" / "someorg" / "some-rm.json"
    return write_jsonl(folder / "rb2.jsonl", rows), published, official


def _official(record, metric: str) -> dict[str | None, float]:
    return {m.subset: m.value for m in record.records() if m.metric == metric and m.shift is None}


def _eval(model: str, task: str, data: Path, out: Path, **kw):
    return evaluate(EvalConfig(model=model, tasks=(task,), data=((task, str(data)),), n_bootstrap=20, use_cache=False,
                               **kw), out_dir=out)


# --- RewardBench 2 ----------------------------------------------------------------------------

def test_rb2_replay_equals_rewardbench2s_own_scores(rb2_published, tmp_path):
    data, published, official = rb2_published
    doc = json.loads(published.read_text())
    assert {"id", "scores", "subset", "num_correct", "results", "text", "model"} <= set(doc)  # run_v2.py's layout
    record = _eval("published:rewardbench2:someorg/some-rm", "rewardbench2", data, tmp_path / "run",
                   model_args=(("path", str(published)),))
    ours = _official(record, "rewardbench2_score")
    assert set(ours) == {None, *SUBSETS, "Ties"}
    assert ours[None] == pytest.approx(official["Score"], abs=1e-9)
    for subset in (*SUBSETS, "Ties"):
        assert ours[subset] == pytest.approx(official[subset], abs=1e-9), subset
    described = record.execution.model
    assert described["rewards"] == "scores" and described["published_model"] == "someorg/some-rm"
    assert described["sha256"] == hashlib.sha256(published.read_bytes()).hexdigest()


def _hub_cache(cache: Path, published: Path, model: str, commit: str) -> None:
    """A hub cache (the layout huggingface_hub writes) holding the RB2 results dataset at ``commit`` as main."""
    base = cache / "datasets--allenai--reward-bench-2-results"
    target = base / "snapshots" / commit / "eval-set-scores" / f"{model}.json"
    target.parent.mkdir(parents=True)
    target.write_bytes(published.read_bytes())
    (base / "refs").mkdir(parents=True)
    (base / "refs" / "main").write_text(commit)


@pytest.fixture
def offline_hub(tmp_path, monkeypatch):
    """An unreachable hub (HF_HUB_OFFLINE) and an empty hub cache of this test's own."""
    from huggingface_hub import constants

    from rmbench import hub

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    hub.unreachable.cache_clear()
    yield tmp_path / "hub"
    hub.unreachable.cache_clear()


def test_rb2_by_hub_id_reads_the_results_dataset_at_its_revision(rb2_published, offline_hub, tmp_path):
    from rmbench.models.published import PublishedRM

    data, published, _ = rb2_published
    commit = "89abcdef0123456789abcdef0123456789abcdef"
    _hub_cache(offline_hub, published, "someorg/some-rm", commit)
    by_hub = PublishedRM("rewardbench2:someorg/some-rm")
    by_commit = PublishedRM("rewardbench2:someorg/some-rm", revision=commit)
    by_path = PublishedRM("rewardbench2:anything", path=str(published))
    assert by_hub.describe()["revision"] == by_commit.describe()["revision"] == commit
    assert by_hub.describe()["dataset"] == "allenai/reward-bench-2-results"
    # the identity is the content: the same file by hub id, commit or path is one model
    assert by_hub.fingerprint() == by_commit.fingerprint() == by_path.fingerprint()
    changed = tmp_path / "changed.json"
    changed.write_bytes(published.read_bytes().replace(b'"model": "someorg/some-rm"', b'"model": "someorg/other"'))
    assert PublishedRM("rewardbench2:someorg/some-rm", path=str(changed)).fingerprint() != by_path.fingerprint()
    record = _eval("published:rewardbench2:someorg/some-rm", "rewardbench2", data, tmp_path / "run")
    assert record.status == "success"
    with pytest.raises(DataError, match=r"cannot get eval-set-scores/someorg/other\.json of the dataset "
                                        r"allenai/reward-bench-2-results at main: the hub is unreachable .*path=FILE"):
        PublishedRM("rewardbench2:someorg/other")


def test_rb2_generative_results_replay_their_official_credit(tmp_path):
    """run_generative_v2.py's file: outside Ties only ``results`` (1, 1/k, 0) and no scores; Ties rows
    carry their ratings. The replayed credit of each row is its result."""
    rows = rb2_rows()
    non_ties = [r for r in rows if r["subset"] != "Ties"]
    ties = [r for r in rows if r["subset"] == "Ties"]
    results = [[1, 0, 0.25, 1 / 3, 0.5][i % 5] for i in range(len(non_ties))]
    ratings = [[4, 4, 3, 1, 2], [5, 2, 1], [3, 3, 3, 1, 1], [4, 1, 2]]
    # run_generative_v2.py: concatenate_datasets([non-ties with results, ties with scores]).to_dict()
    doc = {"id": [r["id"] for r in non_ties + ties], "subset": [r["subset"] for r in non_ties + ties],
           "num_correct": [len(r["chosen"]) for r in non_ties + ties],
           "results": results + [None] * len(ties), "scores": [None] * len(non_ties) + ratings,
           "model": "someorg/judge", "model_type": "Generative RM"}
    published = tmp_path / "judge.json"
    published.write_text(json.dumps(doc, indent=4, sort_keys=True))
    record = _eval("published:rewardbench2:someorg/judge", "rewardbench2", write_jsonl(tmp_path / "rb2.jsonl", rows),
                   tmp_path / "run", model_args=(("path", str(published)),))
    ours = _official(record, "rewardbench2_score")
    for subset in SUBSETS:
        want = [res for r, res in zip(non_ties, results) if r["subset"] == subset]
        assert ours[subset] == pytest.approx(sum(want) / len(want), abs=1e-12), subset
    assert record.execution.model["rewards"] == "mixed"
    reason = rb_official.official_unavailable()
    if reason is None:  # the Ties score by RewardBench's own code on those ratings
        assert ours["Ties"] == pytest.approx(rb_official.rb2_official(ties, ratings)["Ties"], abs=1e-9)


def test_verdict_rewards_give_the_recorded_credit():
    assert verdict_rewards(1.0, 1, 4) == (1.0, 0.0, 0.0, 0.0)
    assert verdict_rewards(0.5, 1, 4) == (1.0, 1.0, 0.0, 0.0)  # credit 1/2: the first shares the top with one
    assert verdict_rewards(0.25, 1, 4) == (1.0, 1.0, 1.0, 1.0)  # 4-way comparison failed to parse: a 4-way tie
    assert verdict_rewards(0.0, 1, 4) == (0.0, 1.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="not 1/k"):
        verdict_rewards(0.4, 1, 4)


def test_a_file_that_does_not_match_the_data_is_one_line(rb2_published, tmp_path):
    data, published, _ = rb2_published
    rows = rb2_rows()
    rows[3]["rejected"] = rows[3]["rejected"][:2]  # one response fewer than the file scored
    rows.append({**rows[0], "id": "extra-1"})  # a row the file does not hold
    changed = write_jsonl(tmp_path / "changed.jsonl", rows)
    with pytest.raises(ModelError) as err:
        _eval("published:rewardbench2:someorg/some-rm", "rewardbench2", changed, tmp_path / "run",
              model_args=(("path", str(published)),))
    message = str(err.value)
    assert "\n" not in message
    assert f"matches {len(rows) - 2} of {len(rows)} items of the task's data" in message
    assert ("the first that does not: group 'Fact-3' (Factuality): the file has 4 scores, the task 3 responses"
            in message)
    assert not (tmp_path / "run").exists()


def _rmbench(*args, cwd: Path, **env):
    paths = (str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH"))
    full = {**os.environ, "COLUMNS": "200", **env, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    return subprocess.run([sys.executable, "-m", "rmbench", *args], capture_output=True, text=True, env=full, cwd=cwd,
                          timeout=300)


@pytest.mark.slow
def test_model_list_eval_leaderboard_report_compare(rb2_published, tmp_path):
    """The recipe of docs/how-to/published.md on two models of a hub cache: one eval over a model
    list, then leaderboard, report and compare on the published runs."""
    data, published, official = rb2_published
    commit = "0123456789abcdef0123456789abcdef01234567"
    _hub_cache(tmp_path / "hub", published, "someorg/some-rm", commit)
    doc = json.loads(published.read_text())
    doc["scores"] = [[-s for s in row] for row in doc["scores"]]  # a second model: the first one negated
    snapshot = tmp_path / "hub/datasets--allenai--reward-bench-2-results/snapshots" / commit
    negated = snapshot / "eval-set-scores/other/neg-rm.json"
    negated.parent.mkdir(parents=True)
    negated.write_text(json.dumps(doc))
    models = tmp_path / "models.txt"
    models.write_text("# RewardBench 2 results, two models\npublished:rewardbench2:someorg/some-rm\n\n"
                      "negated=published:rewardbench2:other/neg-rm\n")  # a line may name its model
    env = {"HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    done = _rmbench("eval", "--model-list", str(models), "--tasks", "rewardbench2", "--data", f"rewardbench2={data}",
                    "--bootstrap", "50", "--out", "runs", cwd=tmp_path, **env)
    assert done.returncode == 0, done.stderr
    runs = sorted(p.parent for p in (tmp_path / "runs").glob("*/results.json"))
    assert len(runs) == 2
    scores = {}
    for run in runs:
        record = json.loads((run / "results.json").read_text())
        scores[record["model"]["name"]] = next(m["value"] for t in record["tasks"] for m in t["metrics"]
                                               if m["metric"] == "rewardbench2_score" and m.get("subset") is None
                                               and m.get("shift") is None)
    assert set(scores) == {"someorg/some-rm", "negated"}  # the file's model id, and the name the list gives
    assert scores["someorg/some-rm"] == pytest.approx(official["Score"], abs=1e-9)
    assert sorted(r.name for r in runs) == ["negated__rewardbench2-rb2", "someorg_some-rm__rewardbench2-rb2"]
    board = next((tmp_path / "runs").glob("leaderboard*.md")).read_text()
    assert "someorg/some-rm" in board and "negated" in board and "published:" not in board
    done = _rmbench("leaderboard", "build", "runs", "--format", "csv", cwd=tmp_path)
    assert done.returncode == 0 and "negated" in done.stdout, done.stderr
    done = _rmbench("report", *map(str, runs), "--out", "report.html", cwd=tmp_path)
    assert done.returncode == 0 and (tmp_path / "report.html").stat().st_size > 0, done.stderr
    done = _rmbench("compare", *map(str, runs), "--bootstrap", "50", cwd=tmp_path)
    assert done.returncode == 0 and "rewardbench2_score" in done.stdout, done.stderr


@pytest.mark.slow
def test_cli_errors_are_one_line(rb2_published, tmp_path):
    data, _, _ = rb2_published
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n\n")
    done = _rmbench("eval", "--model-list", str(empty), "--tasks", "rewardbench2", "--data", f"rewardbench2={data}",
                    cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        f"error: --model-list {empty}: names no model (one model spec per line, or NAME=SPEC; # starts a comment line)"]
    for model, says in (("published:rmb:no/such.json", "no/such.json: cannot read the published file"),
                        ("published:nosuch:x", "the source must be one of rewardbench2, judgebench, rmb"),
                        ("published:judgebench", "published:judgebench needs FILE")):
        done = _rmbench("eval", "--model", model, "--tasks", "rewardbench2", "--data", f"rewardbench2={data}",
                        cwd=tmp_path)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:") and says in lines[0], lines


# --- JudgeBench -------------------------------------------------------------------------------

JB_SOURCES = ("mmlu-pro-law", "livebench-reasoning", "livebench-math", "livecodebench", "mmlu-pro-math")


def judgebench_pairs() -> list[dict]:
    """Pairs in JudgeBench's data layout (data/dataset=judgebench,response_model=*.jsonl)."""
    return [{"pair_id": f"p{i}", "original_id": i, "source": JB_SOURCES[i % 5], "question": f"Question {i}?",
             "response_model": "gpt-4o-2024-05-13", "response_A": f"answer A{i}", "response_B": f"answer B{i}",
             "label": "A>B" if i % 3 else "B>A"} for i in range(10)]


def judgebench_output(pairs: list[dict], judgments: list[list]) -> str:
    """The lines run_judge.py's judge_pairs writes: the pair, ``judge_name`` and ``judgments`` (one per
    game), ``json.dumps(pair, ensure_ascii=False)`` per line."""
    return "".join(json.dumps({**p, "judge_name": "reward_model", "judgments": j}, ensure_ascii=False) + "\n"
                   for p, j in zip(pairs, judgments))


def rm_game(a: float, b: float) -> dict:
    """A reward-model judgment as utils/judges.py's reward-model judges return it."""
    return {"judgment": {"judge_model": "org/rm", "scores": [a, b]}, "decision": "A>B" if a > b else "B>A"}


def _judgebench_eval(tmp_path: Path, output: str, pairs: list[dict], name: str = "run", **kw):
    folder = tmp_path / name
    folder.mkdir()
    out_file = folder / "dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=x,judge_model=org_rm.jsonl"
    out_file.write_text(output, encoding="utf-8")
    return evaluate(EvalConfig(model="published:judgebench", model_args=(("path", str(out_file)),),
                               tasks=("judgebench",), data=(("judgebench", str(write_jsonl(tmp_path / "jb.jsonl",
                                                                                          pairs))),),
                               n_bootstrap=0, use_cache=False, **kw), out_dir=folder / "run")


def _notes(record) -> list[str]:
    from rmbench.results.publishing.leaderboard import run_notes

    return run_notes("M", record)


def test_judgebench_two_games_of_a_reward_model_replay_its_scores(tmp_path):
    pairs = judgebench_pairs()
    rewards = [(0.5 + i, 0.1 * i) if i % 2 else (0.1, 0.2 + i) for i in range(10)]
    rewards[4] = (0.3, 0.3)  # a tie: "B>A" in each game, so the two games disagree: wrong whatever the label
    record = _judgebench_eval(tmp_path, judgebench_output(pairs, [[rm_game(a, b), rm_game(b, a)] for a, b in rewards]),
                              pairs)
    assert record.execution.model["rewards"] == "scores" and record.execution.model["games"] == 2
    # by hand: A wins the odd pairs; labels: A>B where i % 3; pair 4 (a tie) is wrong
    correct = [(a > b and p["label"] == "A>B") or (a < b and p["label"] == "B>A") for p, (a, b) in zip(pairs, rewards)]
    assert correct == [True, True, False, False, False, True, True, True, False, False]
    ours = _official(record, "judgebench_score")
    assert ours[None] == pytest.approx(sum(correct) / 10)
    assert ours["knowledge"] == pytest.approx((correct[0] + correct[4] + correct[5] + correct[9]) / 4)
    assert ours["coding"] == pytest.approx((correct[3] + correct[8]) / 2)
    task = record.tasks[0]
    assert task.args["single_game"] is False  # scored by both games' rule


def test_judgebench_verdicts_replay_as_verdicts(tmp_path):
    """A judge that gives decisions only (arena_hard), one game with A=B and a failed game."""
    pairs = judgebench_pairs()
    decisions = ["A>B", "A>B", "B>A", "A=B", None, "B>A", "A>B", "B>A", "A>B", "A>B"]
    games = [[{"judgment": {"judge_model": "j", "response": "..."}, "decision": d} if d else None] for d in decisions]
    record = _judgebench_eval(tmp_path, judgebench_output(pairs, games), pairs)
    assert record.execution.model["rewards"] == "verdicts"
    assert record.tasks[0].args["single_game"] is False  # a tie or no decision is wrong, whatever the label
    assert any(n.startswith("M: the published judgebench file") and "replays its verdicts as rewards" in n
               and "(" not in n.split("verdicts, not scores")[1] for n in _notes(record))  # no scores: no why
    # compute_final_metrics, one game: correct iff the decision equals the label
    assert _official(record, "judgebench_score")[None] == pytest.approx(
        sum(d == p["label"] for d, p in zip(decisions, pairs)) / 10)


def test_a_published_judgebench_file_and_a_pairwise_judge_declare_pair_verdicts(tmp_path):
    """Giving pair verdicts is a capability a model's class declares, never a test of kind names."""
    from rmbench.core.specs import ModelSpec
    from rmbench.models import build_model
    from rmbench.models.base import PairVerdictModel

    pairs = judgebench_pairs()
    output = tmp_path / "out.jsonl"
    output.write_text(judgebench_output(pairs, [[rm_game(1.0, 0.0)] for _ in pairs]), encoding="utf-8")
    rmb = tmp_path / "rmb_result.json"
    rmb.write_text(json.dumps([{"pair_uid": "1", "category_path": "Pairwise_set/x", "chosen_reward": 1.0,
                                "reject_reward": 0.0}]))
    server = {"base_url": "http://127.0.0.1:9/v1"}  # building a judge calls nothing
    gives = {name: isinstance(build_model(ModelSpec.make(name, kind, args)), PairVerdictModel) for name, kind, args in (
        ("jb", "published", {"target": f"judgebench:{output}"}), ("rmb", "published", {"target": f"rmb:{rmb}"}),
        ("pairwise", "judge", {"model": "m", "mode": "pairwise", **server}),
        ("rating", "judge", {"model": "m", **server}), ("steps", "judge", {"model": "m", "mode": "steps", **server}),
        ("python", "length", {}))}
    assert gives == {"jb": True, "rmb": False, "pairwise": True, "rating": False, "steps": False, "python": False}


def test_plan_run_never_reads_a_handed_task_again(tmp_path):
    """The tasks a caller hands ``plan_run`` are taken as they are for every model: a model that
    gives pair verdicts gets their verdict arguments on the same groups (its data file is gone, so
    reading it again would fail), and the plan keeps them as read for the next model."""
    from rmbench.catalog import load_catalog
    from rmbench.scoring.config import EvalConfig as Config
    from rmbench.scoring.planning import load_tasks, plan_run

    pairs = judgebench_pairs()
    data = write_jsonl(tmp_path / "jb.jsonl", pairs)
    output = tmp_path / "out.jsonl"
    output.write_text(judgebench_output(pairs, [[rm_game(1.0, 0.0), rm_game(0.0, 1.0)] for _ in pairs]),
                      encoding="utf-8")
    config = Config(model=f"published:judgebench:{output}", tasks=("judgebench",), data=(("judgebench", str(data)),))
    read = load_tasks(config.measured, load_catalog(), print)
    data.unlink()
    plan = plan_run(config, tasks=read)
    [task], [as_read] = plan.tasks, read
    assert task.groups is as_read.groups and task.fingerprint == as_read.fingerprint
    assert task.spec.args["single_game"] is False and task.task.single_game is False
    assert "single_game" not in as_read.spec.args and plan.tasks_read == tuple(read)
    given = Config(model=f"published:judgebench:{output}", tasks=("judgebench",), data=(("judgebench", str(data)),),
                   task_args=(("single_game", True),))
    assert plan_run(given, tasks=read).tasks[0].task.single_game is True  # --task-arg sets it: kept
    other = plan_run(Config(model="length", tasks=("judgebench",), data=(("judgebench", str(data)),)),
                     tasks=plan.tasks_read)
    assert other.tasks == plan.tasks_read  # any other model: the tasks as read


def test_a_model_list_scores_each_model_with_its_own_task_arguments(tmp_path):
    """One eval of a published JudgeBench file and a reward model on the same data: the file's
    pairs by both games' rule, the reward model's by one game (the default), whichever comes first."""
    from rmbench.scoring.suite import evaluate_models

    pairs = judgebench_pairs()
    data = write_jsonl(tmp_path / "jb.jsonl", pairs)
    output = tmp_path / "out.jsonl"
    output.write_text(judgebench_output(pairs, [[rm_game(1.0, 0.0), rm_game(0.0, 1.0)] for _ in pairs]),
                      encoding="utf-8")
    configs = [EvalConfig(model=m, tasks=("judgebench",), data=(("judgebench", str(data)),), n_bootstrap=0,
                          use_cache=False) for m in (f"published:judgebench:{output}", "length")]
    result = evaluate_models(configs, out=tmp_path / "runs")
    single_game = [r.tasks[0].args.get("single_game", True) for r in result.records]
    assert single_game == [False, True]


JB_RM_SOURCE = '''import hashlib


def score(pairs):  # a reward from each response's text alone, never tied on these pairs
    return [int(hashlib.sha256(r.encode()).hexdigest()[:8], 16) / 2 ** 32 for _, r in pairs]
'''


def _jb_reward(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 2 ** 32


@pytest.mark.slow
@pytest.mark.parametrize("split", ["gpt", "claude"])
def test_verify_a_judgebench_run_against_its_published_file_offline(split, tmp_path):
    """A run on a local JudgeBench file (either response set: ``--task-arg split=claude`` reads
    Claude's) verified against the JudgeBench output file of the same rewards, with the hub
    unreachable (HF_HUB_OFFLINE, an empty hub cache): the published model is scored on the run's
    own recorded task (its split and file), never on the task re-read by name from the hub; the
    file's pairs are scored by both games' rule, and the verification is equal. A file whose
    rewards are planted upside down is different."""
    model = {"gpt": "gpt-4o-2024-05-13", "claude": "claude-3-5-sonnet-20240620"}[split]
    pairs = [{**p, "response_model": model, "response_A": f"{split} answer A{i}", "response_B": f"{split} answer B{i}"}
             for i, p in enumerate(judgebench_pairs())]
    data = write_jsonl(tmp_path / f"dataset=judgebench,response_model={model}.jsonl", pairs)
    (tmp_path / "my_rm.py").write_text(JB_RM_SOURCE)
    env = {"HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = _rmbench("eval", "--model", "python:my_rm.py:score", "--tasks", "judgebench", "--data",
                    f"judgebench={data}", "--task-arg", f"split={split}", "--bootstrap", "50", "--out", "run",
                    cwd=tmp_path, **env)
    assert done.returncode == 0, done.stderr
    rewards = [(_jb_reward(p["response_A"]), _jb_reward(p["response_B"])) for p in pairs]
    assert all(a != b for a, b in rewards)
    planted = [(b, a) for a, b in rewards]
    verdicts = {}
    for name, scores in (("same", rewards), ("planted", planted)):
        published = tmp_path / f"dataset=judgebench,response_model={model},judge_name=reward_model,{name}.jsonl"
        published.write_text(judgebench_output(pairs, [[rm_game(a, b), rm_game(b, a)] for a, b in scores]),
                             encoding="utf-8")
        done = _rmbench("verify", "run", "--against", f"published:judgebench:{published}", "--out", f"ref-{name}",
                        "--bootstrap", "200", "--json", f"{name}.json", cwd=tmp_path, **env)
        assert done.returncode in (0, 1) and (tmp_path / f"{name}.json").is_file(), done.stderr
        verdicts[name] = (done.returncode, json.loads((tmp_path / f"{name}.json").read_text())["verdict"])
        reference = json.loads((tmp_path / f"ref-{name}" / "results.json").read_text())["tasks"][0]
        assert reference["args"]["split"] == split and reference["args"]["path"] == str(data)  # the run's own
        assert reference["args"]["single_game"] is False  # a published JudgeBench file: both games' rule
    assert verdicts == {"same": (0, "equal"), "planted": (1, "different")}, verdicts


def test_judgebench_one_game_reward_file_with_a_tie_replays_its_rewards(tmp_path):
    """run_judge.py --single_game of a reward model (what JudgeBench's README advises for one) with
    one tied pair: its scores replay as rewards, the tie stays a tie (so D is not flat), and the
    official score is one game's rule, where a tie is "B>A"."""
    pairs = judgebench_pairs()
    rewards = [(20.0 + 0.37 * i, 19.5 + 0.11 * i) if i % 2 else (18.25 - 0.2 * i, 18.5 + 0.3 * i) for i in range(10)]
    rewards[3] = (20.75, 20.75)  # the tie, labelled B>A: the one game says B>A, so it is correct
    record = _judgebench_eval(tmp_path, judgebench_output(pairs, [[rm_game(a, b)] for a, b in rewards]), pairs,
                              eps=(0.0, 0.5, 1.0))
    model = record.execution.model
    assert (model["rewards"], model["games"]) == ("scores", 1)
    assert "single_game" not in record.tasks[0].args  # the task's default, one game; not both games' rule
    replayed = [json.loads(line) for line in (tmp_path / "run" / "run" / "rewards.jsonl").read_text().splitlines()]
    assert [row["reward"] for row in replayed] == [r for ab in rewards for r in ab]
    # by hand, compute_final_metrics of one game: A>B iff r(A) > r(B), else B>A, against the label
    correct = [("A>B" if a > b else "B>A") == p["label"] for p, (a, b) in zip(pairs, rewards)]
    assert correct[3] and pairs[3]["label"] == "B>A"
    assert _official(record, "judgebench_score")[None] == pytest.approx(sum(correct) / 10)
    assert _official(record, "judgebench_score")["coding"] == pytest.approx((correct[3] + correct[8]) / 2)
    d = {m.eps: m.value for m in record.records() if m.metric == "discrimination" and m.subset is None
         and m.shift is None}
    strict = [(a > b) == (p["label"] == "A>B") and a != b for p, (a, b) in zip(pairs, rewards)]
    assert d[0.0] == pytest.approx(sum(strict) / 10)  # the tie orders neither way: not a discrimination
    assert d[0.0] > d[0.5], d  # D moves with eps (sigma units): rewards; 0/1 verdicts would keep it flat
    assert "M: the published judgebench file dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=x," \
           "judge_model=org_rm.jsonl replays its recorded scores as rewards" in _notes(record)


def test_judgebench_reward_reruns_verify_by_their_reward_difference(tmp_path):
    """Two one-game reward files of one model (a rerun: the scores move by at most 0.69, one pair
    tied in the first): verify compares their rewards, not 0/1 verdicts."""
    from rmbench.results.statistics.verify import verify_runs
    from rmbench.results.storage.folder import load_run

    pairs = judgebench_pairs()
    first = [(20.0 + 0.37 * i, 19.5 + 0.11 * i) for i in range(10)]
    first[3] = (20.75, 20.75)
    rerun = [(a + 0.69 * (i % 2), b - 0.01 * i) for i, (a, b) in enumerate(first)]
    for name, rewards in (("a", first), ("b", rerun)):
        _judgebench_eval(tmp_path, judgebench_output(pairs, [[rm_game(a, b)] for a, b in rewards]), pairs, name)
    run = load_run(tmp_path / "a" / "run")
    result = verify_runs(run, load_run(tmp_path / "b" / "run"), n_bootstrap=0)
    assert result.tasks[0].max_abs_diff == pytest.approx(0.69)
    # as `rmbench verify RUN --against published:judgebench --model-arg path=FILE` does: on the run's own tasks
    from rmbench.scoring.rerun import evaluate_on_run_tasks

    b_file = next((tmp_path / "b").glob("*.jsonl"))
    reference = evaluate_on_run_tasks(run, "published:judgebench", tmp_path / "ref",
                                      model_args=(("path", str(b_file)),))
    assert verify_runs(run, reference, n_bootstrap=0).tasks[0].max_abs_diff == pytest.approx(0.69)


def test_judgebench_decisions_its_scores_do_not_give_replay_as_verdicts(tmp_path):
    """A file whose recorded scores do not give its decisions (a judge that decided otherwise)
    holds verdicts: they replay, and the note says so and why."""
    pairs = judgebench_pairs()
    games = [[{"judgment": {"scores": [1.0, 2.0]}, "decision": "A>B" if p["label"] == "A>B" else "B>A"}]
             for p in pairs]
    record = _judgebench_eval(tmp_path, judgebench_output(pairs, games), pairs)
    assert record.execution.model["rewards"] == "verdicts"
    assert _official(record, "judgebench_score")[None] == 1.0  # the decisions, each the label
    note = next(n for n in _notes(record) if "published judgebench file" in n)
    assert "replays its verdicts as rewards (winner 1, the others 0)" in note
    assert "the scores of 6 of its 10 pairs do not give their recorded decisions, the first pair p1" in note


def _judgebench_checkout() -> Path:
    folder = os.environ.get("RMBENCH_JUDGEBENCH_DIR")
    if not folder or not (Path(folder) / "utils" / "metrics.py").is_file():
        pytest.skip("JudgeBench's code and outputs are not here: set RMBENCH_JUDGEBENCH_DIR to a checkout of "
                    "github.com/ScalerLab/JudgeBench at e2c52c2 (no licence, so never copied into this repository)")
    return Path(folder)


def test_judgebench_replay_of_its_own_outputs_equals_its_own_metrics(tmp_path):
    """Every file of the checkout's outputs/ replayed through the judgebench task gives what
    JudgeBench's compute_final_metrics gives on it, overall and per category."""
    import importlib.util

    checkout = _judgebench_checkout()
    spec = importlib.util.spec_from_file_location("judgebench_metrics", checkout / "utils" / "metrics.py")
    assert spec is not None and spec.loader is not None
    metrics = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(metrics)
    prefixes = {"knowledge": "mmlu-pro", "reasoning": "livebench-reasoning", "math": "livebench-math",
                "coding": "livecodebench", None: ""}
    outputs = sorted((checkout / "outputs").glob("*.jsonl"))
    assert outputs
    files = []
    for path in outputs:
        pairs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        for p in pairs:  # a JSON list in the repository's files; a string holding its Python repr is read too
            p["judgments"] = ast.literal_eval(p["judgments"]) if isinstance(p["judgments"], str) else p["judgments"]
        files.append((path, pairs))
        if "judge_name=reward_model" in path.name:  # its first game alone, as run_judge.py --single_game writes it
            one = [{**p, "judgments": p["judgments"][:1]} for p in pairs]
            single = tmp_path / "single" / path.name
            single.parent.mkdir(exist_ok=True)
            single.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in one), encoding="utf-8")
            files.append((single, one))
    ties = 0
    for n, (path, pairs) in enumerate(files):
        two_games = len(pairs[0]["judgments"]) == 2
        response_model = path.name.split("response_model=")[1].split(",")[0]
        data = checkout / "data" / f"dataset=judgebench,response_model={response_model}.jsonl"
        split = "claude" if response_model.startswith("claude") else "gpt"
        record = evaluate(EvalConfig(model="published:judgebench", model_args=(("path", str(path)),),
                                     tasks=("judgebench",), data=(("judgebench", str(data)),),
                                     task_args=(("split", split),), n_bootstrap=0, use_cache=False),
                          out_dir=tmp_path / f"run{n}")
        ours = _official(record, "judgebench_score")
        for category, prefix in prefixes.items():
            theirs = metrics.compute_final_metrics(pairs, two_games,
                                                   include_fn=lambda x, s=prefix: x["source"].startswith(s))
            assert 100 * ours[category] == pytest.approx(theirs, abs=1e-9), (path.name, category)
        if "judge_name=reward_model" in path.name:  # a reward model's file replays its scores, ties and all
            assert record.execution.model["rewards"] == "scores", (path.name, record.execution.model["reading"])
            ties += sum(p["judgments"][0]["judgment"]["scores"][0] == p["judgments"][0]["judgment"]["scores"][1]
                        for p in pairs)
    assert ties == 0 or ties >= 2  # at e2c52c2: Skywork's four ties, in both games and in one


# --- RMB --------------------------------------------------------------------------------------

def test_rmb_result_file_replays_its_accuracy(tmp_path):
    """A file laid out as eval/scripts/my_run_rm.py's add_feature writes it (the dataset row without
    its texts, plus chosen_reward, reject_reward, is_correct; json.dump of the list)."""
    scenario = "Pairwise_set/Helpfulness/Code/Documentation"
    items = [{"pair_uid": str(100 + i), "conversation_input": [{"role": "user", "content": f"q{i}", "language": "en"}],
              "chosen": {"llm_name": "a", "answer": f"good {i}"}, "reject": {"llm_name": "b", "answer": f"bad {i}"},
              "category_path": scenario} for i in range(6)]
    data = tmp_path / "Documentation.json"
    data.write_text(json.dumps(items))
    rewards = [(1.0, 0.5), (0.2, 0.9), (0.4, 0.4), (2.0, -1.0), (0.0, 0.1), (3.0, 2.9)]
    result = [{"pair_uid": it["pair_uid"], "category_path": scenario, "chosen_reward": c, "reject_reward": r,
               "is_correct": 1 if c > r else 0} for it, (c, r) in zip(items, rewards)]
    published = tmp_path / "some-rm_result.json"
    published.write_text(json.dumps(result, indent=2, ensure_ascii=False))
    record = evaluate(EvalConfig(model=f"published:rmb:{published}", tasks=("rmb",), data=(("rmb", str(data)),),
                                 n_bootstrap=0, use_cache=False), out_dir=tmp_path / "run")
    model_acc = sum(r["is_correct"] for r in result) / len(result)  # my_run_rm.py: sum(results) / len(results)
    assert model_acc == pytest.approx(0.5)
    assert _official(record, "rmb_score")[scenario] == pytest.approx(model_acc)


RMB_COMMIT = "2be3180857f2190b7ffa929d43190835627f1f4d"
RMB_RESULT = (f"https://raw.githubusercontent.com/Zhou-Zoey/RMB-Reward-Model-Benchmark/{RMB_COMMIT}/eval/result/"
              "ArmoRM-Llama3-8B-v0.1_result.json#sha256=18720ad7ea64544762e4bd433b3b31d3a01ffddc04d49f2999e15b53eb20622b")
"""RMB's one published result file (849 pairs of one scenario, ArmoRM-Llama3-8B-v0.1), pinned."""
RMB_SCENARIO = "Pairwise_set/Helpfulness/Brainstorming/Idea Development"


def test_rmb_published_result_replays_the_accuracy_it_records(tmp_path):
    """RMB's real result file and its scenario's data, through RMBENCH_MIRROR (or the download
    cache): the replayed scenario accuracy is my_run_rm.py's ``sum(results) / len(results)``."""
    from rmbench.tasks.downloads import MIRROR_ENV, fetch, is_cached, parse_remote
    from rmbench.tasks.rmb import RMB_GIT_BLOBS

    data_source = RMB_GIT_BLOBS[RMB_SCENARIO]
    remote = parse_remote(RMB_RESULT)
    assert remote is not None
    if not os.environ.get(MIRROR_ENV) and not (is_cached(remote)
                                               and is_cached(parse_remote(data_source))):
        pytest.skip(f"RMB's result file and its scenario's data are not in the download cache and {MIRROR_ENV} is not "
                    f"set (tests need no network): point {MIRROR_ENV} at a mirror of raw.githubusercontent.com")
    try:
        result = fetch(remote)
        fetch(parse_remote(data_source))
    except DataError as exc:
        pytest.skip(f"RMB's result file or its scenario's data cannot be had here (set RMBENCH_MIRROR to a mirror "
                    f"that serves raw.githubusercontent.com/Zhou-Zoey/RMB-Reward-Model-Benchmark/{RMB_COMMIT}/...): "
                    f"{exc}")
    items = json.loads(result.read_text(encoding="utf-8"))
    record = evaluate(EvalConfig(model="published:rmb", model_args=(("path", str(result)),), tasks=("rmb",),
                                 task_args=(("set", "pairwise"), ("paths", {}),
                                            ("git_blobs", {RMB_SCENARIO: data_source})),
                                 n_bootstrap=0, use_cache=False), out_dir=tmp_path / "run")
    assert _official(record, "rmb_score")[RMB_SCENARIO] == pytest.approx(
        sum(x["is_correct"] for x in items) / len(items), abs=1e-12)


RM_SOURCE = '''import hashlib


def score(pairs):  # fewer words, higher reward (rb2_rows' chosen answers are the shortest), hash-broken ties
    return [-len(r.split()) + int(hashlib.sha256(r.encode()).hexdigest()[:8], 16) / 2 ** 32 for _, r in pairs]
'''


@pytest.mark.slow
def test_verify_a_run_against_its_published_file(rb2_published, tmp_path):
    """A model's run verified against the RewardBench 2 file of the same scores (written by
    run_v2.py's code): equal; against a file with the scores outside Ties planted upside down: different."""
    import hashlib as h

    reason = rb_official.official_unavailable()
    if reason:
        pytest.skip(reason)
    data, _, _ = rb2_published
    rows = rb2_rows()
    (tmp_path / "my_rm.py").write_text(RM_SOURCE)
    scores = [[-len(r.split()) + int(h.sha256(r.encode()).hexdigest()[:8], 16) / 2 ** 32
               for r in row["chosen"] + row["rejected"]] for row in rows]
    (tmp_path / "same").mkdir()
    (tmp_path / "planted").mkdir()
    rb_official.rb2_official(rows, scores, write_scores_to=tmp_path / "same", model_name="org/my-rm")
    planted = [[-s for s in sc] if row["subset"] != "Ties" else sc for row, sc in zip(rows, scores)]
    rb_official.rb2_official(rows, planted, write_scores_to=tmp_path / "planted", model_name="org/my-rm")
    done = _rmbench("eval", "--model", "python:my_rm.py:score", "--tasks", "rewardbench2", "--data",
                    f"rewardbench2={data}", "--bootstrap", "50", "--out", "run", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    verdicts = {}
    for name in ("same", "planted"):
        published = tmp_path / name / "results" / "eval-set-scores" / "org" / "my-rm.json"
        done = _rmbench("verify", "run", "--against", "published:rewardbench2:org/my-rm", "--model-arg",
                        f"path={published}", "--out", f"ref-{name}", "--bootstrap", "200", "--json", f"{name}.json",
                        cwd=tmp_path)
        verdicts[name] = (done.returncode, json.loads((tmp_path / f"{name}.json").read_text())["verdict"])
    assert verdicts == {"same": (0, "equal"), "planted": (1, "different")}, verdicts


def test_a_replay_keeps_its_models_name_never_a_path(tmp_path):
    """A JudgeBench file replays under the judge_model it records (its run folder too), an RMB
    file under its {model}_result.json name, a RewardBench 2 file under its ORG/MODEL; a file that
    records none under its file name, never its absolute path; two files of one judge keep their
    file names apart."""
    from rmbench.models.published import published_label
    from rmbench.results.publishing.leaderboard_render import render
    from rmbench.scoring.suite import evaluate_models

    pairs = judgebench_pairs()
    data = write_jsonl(tmp_path / "jb.jsonl", pairs)
    out = tmp_path / "dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=x,judge_model=file_rm.jsonl"
    out.write_text(judgebench_output(pairs, [[rm_game(1.0, 0.0), rm_game(0.0, 1.0)] for _ in pairs]), encoding="utf-8")
    assert published_label(f"published:judgebench:{out}") == "org/rm"  # the judgment's judge_model, not the name
    row_level = tmp_path / "row.jsonl"
    row_level.write_text("".join(json.dumps({**json.loads(line), "judge_model": "o1-mini-2024-09-12"}) + "\n"
                                 for line in out.read_text().splitlines()), encoding="utf-8")
    assert published_label("published:judgebench", {"path": str(row_level)}) == "o1-mini-2024-09-12"
    local_judge = tmp_path / "local.jsonl"
    local_judge.write_text(row_level.read_text().replace("o1-mini-2024-09-12", "/srv/models/my-judge"))
    assert published_label(f"published:judgebench:{local_judge}") == "my-judge"  # never a machine's folders
    assert published_label("published:rewardbench2:org/model") == "org/model"
    assert published_label(f"published:rmb:{tmp_path}/ArmoRM-Llama3-8B-v0.1_result.json") == "ArmoRM-Llama3-8B-v0.1"
    assert published_label(f"published:rmb:{tmp_path}/scores.json") == "published:rmb:scores.json"
    assert published_label("length") is None
    configs = [EvalConfig(model=f"published:judgebench:{out}", tasks=("judgebench",), data=(("judgebench", str(data)),),
                          n_bootstrap=0, use_cache=False)]
    result = evaluate_models(configs, out=tmp_path / "one")
    assert result.records[0].model.name == "org/rm"
    from rmbench.results.publishing.export_names import model_id

    assert model_id(result.records[0]) == "org/rm"  # exports: the judge's Hub id, never the file's path
    board = render(result.leaderboard, "md")
    assert "org/rm" in board and str(tmp_path) not in board
    copy = tmp_path / "copy.jsonl"
    copy.write_text(out.read_text(encoding="utf-8") + "\n", encoding="utf-8")  # another file of the same judge
    twice = [EvalConfig(model=f"published:judgebench:{p}", tasks=("judgebench",),
                        data=(("judgebench", str(data)),), n_bootstrap=0, use_cache=False) for p in (out, copy)]
    result = evaluate_models(twice, out=tmp_path / "two")
    assert [r.model.name for r in result.records] == [f"org/rm ({out.name})", "org/rm (copy.jsonl)"]
    assert [d.name[:6] for d in result.plan.run_dirs] == ["org_rm"] * 2  # the folders carry the judge's name


def test_model_list_lines_may_name_their_model(tmp_path):
    from rmbench.models.model_list import ListedModel, read_model_list

    existing = tmp_path / "a=b"
    existing.mkdir()
    listed = tmp_path / "models.txt"
    listed.write_text(f"# comment\nmine=length\npublished:judgebench:out/dataset=judgebench,x=y.jsonl\n"
                      f"org/rm = python:rm.py:score\n{existing}\n", encoding="utf-8")
    assert read_model_list(listed) == [ListedModel("length", "mine"),
                                       ListedModel("published:judgebench:out/dataset=judgebench,x=y.jsonl"),
                                       ListedModel("python:rm.py:score", "org/rm"), ListedModel(str(existing))]


def test_a_verdict_replays_legend_says_how_acc_and_the_official_score_count_a_tie(tmp_path):
    """A hand-built two-game verdict file: 3 of its 10 pairs' games cancel. JudgeBench's Overall
    counts them wrong, acc half right (acc = Overall + 3/20), and the leaderboard's legend says so;
    a reward model's run on the same task (one game, scores) gets no such sentence."""
    from rmbench.core.judgebench import CANCELLED_VERDICT_RULE
    from rmbench.results.publishing.leaderboard import build_leaderboard
    from rmbench.results.publishing.leaderboard_render import render

    pairs = judgebench_pairs()
    flip = {"A>B": "B>A", "B>A": "A>B"}
    # game 1, then game 2 (the swapped order: its decision is of the swapped pair)
    plan = [("right", "right"), ("right", "right"), ("wrong", "wrong"), ("right", "wrong"), ("right", "right"),
            ("wrong", "right"), ("right", "right"), ("right", "wrong"), ("wrong", "wrong"), ("right", "right")]
    games = []
    for p, (g1, g2) in zip(pairs, plan):
        first = p["label"] if g1 == "right" else flip[p["label"]]
        second_as_read = p["label"] if g2 == "right" else flip[p["label"]]  # in the original order
        games.append([{"judgment": {"judge_model": "my-judge"}, "decision": first},
                      {"judgment": {"judge_model": "my-judge"}, "decision": flip[second_as_read]}])
    record = _judgebench_eval(tmp_path, judgebench_output(pairs, games), pairs)
    assert record.execution.model["rewards"] == "verdicts" and record.tasks[0].args["single_game"] is False
    right, ties = sum(p == ("right", "right") for p in plan), sum(p[0] != p[1] for p in plan)
    assert (right, ties) == (5, 3)  # by hand
    official = _official(record, "judgebench_score")[None]
    acc = next(m.value for m in record.tasks[0].metrics if m.metric == "pairwise_accuracy" and m.subset is None
               and m.shift is None)
    assert official == pytest.approx(right / 10) and acc == pytest.approx(right / 10 + ties / 20)
    board = build_leaderboard([record])
    assert board.legend[0].endswith(f"; {CANCELLED_VERDICT_RULE}")
    assert CANCELLED_VERDICT_RULE in render(board, "md")
    scores = _judgebench_eval(tmp_path, judgebench_output(pairs, [[rm_game(1.0, 0.0)] for _ in pairs]), pairs,
                              name="rm")
    assert CANCELLED_VERDICT_RULE not in " ".join(build_leaderboard([scores]).legend)


def test_a_file_of_another_format_is_named_as_such(tmp_path):
    """Each reader names the format it sees when a file is another published format, not the
    first thing its parser tripped on (an RMB result as JudgeBench outputs is not "line 1: not JSON")."""
    from rmbench.models.published_files import read_published

    pairs = judgebench_pairs()
    rmb = tmp_path / "ArmoRM_result.json"
    rmb.write_text(json.dumps([{"pair_uid": "1", "category_path": "x", "chosen_reward": 1.0, "reject_reward": 0.0,
                                "is_correct": 1}], indent=2))
    jb = tmp_path / "out.jsonl"
    jb.write_text(judgebench_output(pairs, [[rm_game(1.0, 0.0)] for _ in pairs]))
    data = write_jsonl(tmp_path / "jb.jsonl", pairs)
    rb2 = tmp_path / "rb2.json"
    rb2.write_text(json.dumps({"id": ["a"], "scores": [[1.0, 0.0]], "num_correct": [1]}))
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"model": "o/m", "model_type": "x", "chat_template": "t", "Math": 0.5}))
    cases = [("judgebench", rmb, "an RMB result file, not JudgeBench outputs"),
             ("rmb", jb, "JudgeBench outputs, not an RMB result file"),
             ("rewardbench2", jb, "JudgeBench outputs, not a RewardBench 2 eval-set-scores file"),
             ("judgebench", rb2, "a RewardBench 2 eval-set-scores file, not JudgeBench outputs"),
             ("rmb", rb2, "a RewardBench 2 eval-set-scores file, not an RMB result file"),
             ("rewardbench2", rmb, "an RMB result file, not a RewardBench 2 eval-set-scores file"),
             ("judgebench", data, "JudgeBench data (pairs without judgments), not JudgeBench outputs"),
             ("rewardbench2", summary, "a RewardBench 2 eval-set summary (per-subset scores, no per-item scores), "
                                       "not a RewardBench 2 eval-set-scores file")]
    for source, path, says in cases:
        with pytest.raises(DataError) as err:
            read_published(source, path)
        assert str(err.value).startswith(f"{path}: {says}"), (source, str(err.value))
    assert read_published("judgebench", jb).model == "org/rm"  # its own format reads


@pytest.mark.slow
def test_a_file_that_does_not_bind_never_says_done(tmp_path):
    """A JudgeBench file on a task whose items it does not hold: one error line, and no progress
    line saying the responses were done before it."""
    pairs = judgebench_pairs()
    out = tmp_path / "out.jsonl"
    out.write_text(judgebench_output(pairs[:5], [[rm_game(1.0, 0.0)] for _ in pairs[:5]]))
    data = write_jsonl(tmp_path / "jb.jsonl", pairs)
    done = _rmbench("eval", "--model", f"published:judgebench:{out}", "--tasks", "judgebench", "--data",
                    f"judgebench={data}", "--bootstrap", "0", "--no-cache", cwd=tmp_path)
    assert done.returncode != 0
    assert "done" not in done.stderr and "done" not in done.stdout, done.stderr
    assert "matches 5 of 10 items of the task's data" in done.stderr, done.stderr


@pytest.mark.parametrize("source, text", [("judgebench", "[" * 100_000 + "]" * 100_000 + "\n"),
                                          ("rmb", "[" * 100_000 + "]" * 100_000),
                                          ("rewardbench2", '{"a": ' * 100_000 + "1" + "}" * 100_000)])
def test_a_deeply_nested_published_file_is_one_line_not_a_recursion_error(tmp_path, source, text):
    from rmbench.models.published_files import read_published

    path = tmp_path / "deep.json"
    path.write_text(text)
    with pytest.raises(DataError, match="nested deeper") as info:
        read_published(source, path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)
