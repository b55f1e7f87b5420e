"""``rmbench verify RUN --against SPEC``: per-item agreement, score differences with paired CIs,
and a verdict (issue 45, item 2). The run is a python RM on RewardBench 2-shaped data written
here (its six subsets, so the official score's slices are real) and two embedded offline tasks;
the references are the same RM again, the RM with a planted difference, and the RM with tiny noise.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rmbench.cli.app import app
from rmbench.core.items import item_correct, item_max_abs_diff, item_order_agrees
from rmbench.core.types import ComparisonGroup, PairIndex
from rmbench.errors import ConfigError
from rmbench.results.statistics.compare import compare_runs
from rmbench.results.statistics.verify import verify_runs
from rmbench.results.storage.folder import load_run
from rmbench.scoring.config import ExecutionSettings
from rmbench.scoring.rerun import evaluate_on_run_tasks, reference_dir
from rmbench.scoring.runner import EvalConfig, evaluate

HERE = Path(__file__).resolve()
TASKS = ("rewardbench2", "ties_sample", "paraphrase_shift_sample")
N_BOOTSTRAP = 50
PLANTED = 5
"""Math rows whose prompt starts with "planted ": planted_rm reverses their rewards."""
runner = CliRunner()


def _unit(text: str, salt: str = "") -> float:
    return int(hashlib.sha256((salt + text).encode()).hexdigest()[:12], 16) / 16 ** 12


def base_rm(pairs):
    """A chosen RewardBench 2 answer ("good ...") scores 100 more; the rest a spread hash of the text."""
    return [100.0 * r.startswith("good ") + 10.0 * _unit(r) for _, r in pairs]


def planted_rm(pairs):
    """base_rm, but every answer of a planted prompt scores the negative: those rows turn incorrect."""
    return [-x if json.dumps(p).startswith('"planted ') else x for (p, _), x in zip(pairs, base_rm(pairs))]


def noisy_rm(pairs):
    """base_rm plus or minus 1e-5 x max(1, |reward|): no order changes, but no reward is equal within 1e-6."""
    return [x + (1e-5 if _unit(r, "noise") < 0.5 else -1e-5) * max(1.0, abs(x))
            for (_, r), x in zip(pairs, base_rm(pairs))]


def _model(fn: str) -> str:
    return f"python:{HERE}:{fn}"


def _rb2_file(path: Path) -> tuple[Path, list[str]]:
    """60 RewardBench 2 rows (tests/support/golden_runs.py), chosen answers marked, the first PLANTED Math rows
    planted."""
    from tests.support.golden_runs import _rb2_rows

    rows = _rb2_rows(random.Random(45), ("Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties"))
    planted = []
    for row in rows:
        row["chosen"] = ["good " + c for c in row["chosen"]]
        row["rejected"] = ["bad " + c for c in row["rejected"]]
        if row["subset"] == "Math" and len(planted) < PLANTED:
            row["prompt"] = "planted " + row["prompt"]
            planted.append(row["id"])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, planted


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    base = tmp_path_factory.mktemp("verify")
    data, planted = _rb2_file(base / "rb2.jsonl")
    evaluate(EvalConfig(model=_model("base_rm"), tasks=TASKS, data=(("rewardbench2", str(data)),),
                         n_bootstrap=N_BOOTSTRAP), out_dir=base / "run")
    return base, planted


def _verify(*args: str):
    return runner.invoke(app, ["verify", *args, "--bootstrap", str(N_BOOTSTRAP)], env={"COLUMNS": "250"})


def test_item_correctness_and_agreement_by_hand():
    groups = [ComparisonGroup("a", "q", ("c", "r1", "r2"), (1, 0, 0)),          # best-of-n row
              ComparisonGroup("b", "q", ("c1", "c2", "r"), (1, 1, 0)),          # Ties-like: worst correct > best
              ComparisonGroup("c", "q", ("x", "y"), (1, 1), equivalence_levels=())]  # no discrimination pair
    index = PairIndex.from_groups(groups)
    rewards = np.array([2.0, 1.0, 2.0,   3.0, 1.0, 0.5,   1.0, 0.0])
    # a: the chosen ties a rejected at the top (not correct); b: 1.0 > 0.5 (correct); c: no pair
    assert np.array_equal(item_correct(index, rewards), [0.0, 1.0, np.nan], equal_nan=True)
    scaled = 3 * rewards - 7  # another scale, the same order everywhere
    assert item_order_agrees(groups, rewards, scaled).all()
    swapped = rewards.copy()
    swapped[[3, 4]] = swapped[[4, 3]]
    assert item_order_agrees(groups, rewards, swapped).tolist() == [True, False, True]
    assert item_max_abs_diff(groups, rewards, swapped).tolist() == [0.0, 2.0, 0.0]


def test_a_rerun_of_itself_is_equal(setup, tmp_path):
    base, _ = setup
    run = load_run(base / "run")
    reference = evaluate_on_run_tasks(run, _model("base_rm"), tmp_path / "again",
                                      execution=ExecutionSettings(use_cache=True))
    result = verify_runs(run, reference, n_bootstrap=N_BOOTSTRAP)
    assert [t.task for t in result.tasks] == list(TASKS) and result.verdict == "equal"
    for t in result.tasks:
        assert t.verdict == "equal" and t.correctness_agrees == t.n_judged == t.n_items
        assert t.rewards_equal == t.n_responses and t.max_abs_diff == 0.0 and t.largest == () and t.disagreeing == ()
        assert t.scores and all(s.comparison.diff == 0.0 for s in t.scores)
    rb2 = result.tasks[0]
    assert [s.slice_name for s in rb2.scores] == ["all", "Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties"]
    # the other tasks: Ties' official score; pairwise accuracy, overall and per shift slice
    assert [s.comparison.metric for s in result.tasks[1].scores] == ["ties_score"]
    assert {s.slice_name for s in result.tasks[2].scores} == {"all", "none", "paraphrase"}
    # the score differences are compare's, row for row
    compared = {(c.task, c.metric, c.subset, c.shift): c for c in compare_runs(run, reference,
                                                                                 n_bootstrap=N_BOOTSTRAP)}
    for t in result.tasks:
        for s in t.scores:
            c = s.comparison
            assert compared[(c.task, c.metric, c.subset, c.shift)] == c


def test_cli_planted_difference_is_different_and_names_the_items(setup, tmp_path):
    base, planted = setup
    out = tmp_path / "planted"
    result = _verify(str(base / "run"), "--against", _model("planted_rm"), "--out", str(out),
                     "--json", str(tmp_path / "v.json"), "--top", "10")
    assert result.exit_code == 1, result.output
    for item in planted:
        assert f" {item} " in result.output
    assert "verdict: different" in result.output
    report = json.loads((tmp_path / "v.json").read_text())
    assert report["verdict"] == "different" and report["reference"] == str(out)
    rb2, ties, para = report["tasks"]
    assert rb2["verdict"] == "different" and ties["verdict"] == para["verdict"] == "equal"
    assert rb2["items"] == {"total": 60, "judged": 60, "correctness_agrees": 60 - PLANTED,
                            "order_agrees": 60 - PLANTED, "disagreeing": PLANTED}
    assert sorted(i["item"] for i in rb2["disagreeing_items"]) == sorted(planted)
    assert all(i["correct_run"] and not i["correct_reference"] for i in rb2["disagreeing_items"])
    assert {i["item"] for i in rb2["largest_differences"]} == set(planted)  # only they differ at all
    math_score = next(s for s in rb2["scores"] if s["subset"] == "Math")
    assert math_score["difference"] == pytest.approx(PLANTED / 10) and not math_score["covers_zero"]
    assert math_score["ci_low"] > 0
    assert next(s for s in rb2["scores"] if s["subset"] == "Focus")["difference"] == 0.0

    # the same reference as a run folder: the same verification
    again = verify_runs(load_run(base / "run"), load_run(out), n_bootstrap=N_BOOTSTRAP, top=10)
    assert json.loads(json.dumps(again.to_json())) == report
    folder = _verify(str(base / "run"), "--against", str(out))
    assert folder.exit_code == 1 and "verdict: different" in folder.output


def test_tiny_noise_is_within_noise(setup, tmp_path):
    base, _ = setup
    result = _verify(str(base / "run"), "--against", _model("noisy_rm"), "--out", str(tmp_path / "noisy"),
                     "--json", str(tmp_path / "v.json"))
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "v.json").read_text())
    assert report["verdict"] == "within noise"
    for t in report["tasks"]:
        assert t["verdict"] == "within noise"
        assert t["items"]["correctness_agrees"] == t["items"]["judged"] and t["items"]["disagreeing"] == 0
        assert t["responses"]["rewards_equal"] == 0 and 0 < t["responses"]["max_abs_diff"] < 2e-3
    assert "within noise: 60 of 60 items' correctness agrees" in result.output


def test_default_reference_folder_is_beside_the_run_and_never_the_run(setup):
    base, _ = setup
    run = load_run(base / "run")
    assert reference_dir(run.path, "length") == base / "run__vs__length"
    with pytest.raises(ConfigError, match="is the run being verified"):
        evaluate_on_run_tasks(run, "length", base / "run")


def _error_line(result) -> str:
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def test_wrong_inputs_are_one_line(setup, tmp_path):
    base, _ = setup
    (tmp_path / "empty").mkdir()
    assert "is " + str(tmp_path / "empty") + " a run folder" in _error_line(
        _verify(str(tmp_path / "empty"), "--against", "length"))
    assert "no-such-model" in _error_line(_verify(str(base / "run"), "--against", "no-such-model"))
    evaluate(EvalConfig(model="length", tasks=("ties_sample",), n_bootstrap=0), out_dir=tmp_path / "ties_only")
    line = _error_line(_verify(str(base / "run"), "--against", str(tmp_path / "ties_only")))
    assert "does not cover tasks rewardbench2, paraphrase_shift_sample" in line
    assert "no task 'ties'" in _error_line(_verify(str(base / "run"), "--against", "length", "--task", "ties"))
    assert "--tolerance" in _error_line(_verify(str(base / "run"), "--against", str(tmp_path / "ties_only"),
                                                "--task", "ties_sample", "--tolerance", "-1"))
    (tmp_path / "v.json").write_text("{}")
    assert "pass --force" in _error_line(_verify(str(base / "run"), "--against", "length", "--json",
                                                 str(tmp_path / "v.json")))


def test_a_model_is_scored_on_the_runs_limit_sample_and_eps(setup, tmp_path):
    base, _ = setup
    data = (("rewardbench2", str(base / "rb2.jsonl")),)
    evaluate(EvalConfig(model=_model("base_rm"), tasks=("rewardbench2",), data=data, limit=13, eps=(0.2,),
                        n_bootstrap=0), out_dir=tmp_path / "run")
    run = load_run(tmp_path / "run")
    reference = evaluate_on_run_tasks(run, "length", tmp_path / "length")
    mine, theirs = run.record.task("rewardbench2"), reference.record.task("rewardbench2")
    assert theirs.comparability_key == mine.comparability_key and theirs.counts.groups == mine.counts.groups < 60
    assert reference.record.config.limit == 13 and reference.record.config.eps == (0.2,)
    assert verify_runs(run, reference, n_bootstrap=20).tasks[0].n_items == mine.counts.groups


def test_against_a_missing_folder_or_a_trained_model_folder(setup, tmp_path):
    """``--against`` a folder that is not there names it as a missing folder (never an unknown
    model with the model kinds); a folder that holds neither a run nor a model says so; a folder
    written by ``rmbench train`` (its rmbench_model.yaml) is a model, scored on the run's tasks
    as docs/how-to/verify.md says."""
    base, _ = setup
    missing = tmp_path / "no" / "such_run"
    line = _error_line(_verify(str(base / "run"), "--against", str(missing)))
    assert line == (f"error: --against {missing}: no such folder (give a run folder, a folder written by rmbench "
                    f"train, or a model SPEC such as python:my_rm.py:score)")
    assert "known" not in line
    (tmp_path / "neither").mkdir()
    assert "holds neither a run (results.json) nor a trained model (rmbench_model.yaml)" in _error_line(
        _verify(str(base / "run"), "--against", str(tmp_path / "neither")))
    trained = tmp_path / "trained"
    trained.mkdir()
    (trained / "rmbench_model.yaml").write_text(json.dumps({"kind": "python", "args": {"target": f"{HERE}:base_rm"}}))
    result = _verify(str(base / "run"), "--against", str(trained), "--out", str(tmp_path / "ref"))
    assert result.exit_code == 0, result.output
    assert "equal" in result.output and (tmp_path / "ref" / "results.json").is_file()
