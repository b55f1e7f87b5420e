"""ProcessBench: its official scores against the official scripts' own metric lines, by hand and
as properties; the loader on files in ProcessBench's schema (local, the hub path) and its errors;
a process reward model end to end through the CLI; a response-level model refused in one line.

Every row here is written for the test in ProcessBench's published schema (``id``,
``generator``, ``problem``, ``steps``, ``final_answer_correct``, ``label``); none of the real
data is copied. A step's text ends with ``p=P``: the test PRM's P(step correct) for it.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import rmbench
from rmbench.catalog import load_catalog
from rmbench.cli.app import app
from rmbench.core.metric_registry import metric_def
from rmbench.core.processbench import (
    NO_PREDICTION,
    PROCESSBENCH_SPLITS,
    first_error_prediction,
    harmonic_f1,
    processbench_layout,
    processbench_scores,
    split_accuracies,
)
from rmbench.core.step_groups import StepGroup
from rmbench.errors import DataError
from rmbench.tasks.loading import load_groups, task_spec_with_args, task_spec_with_data
from rmbench.tasks.processbench import ProcessBenchTask

REPO = Path(__file__).resolve().parents[2]

PRM = """
def score(items):
    # each step's text ends with p=P: its P(step correct)
    return [[float(s.rsplit("p=", 1)[1]) for s in steps] for _, steps in items]

def logits(items):
    import math
    return [[math.log(p / (1 - p)) for p in ps] for ps in score(items)]
"""


def row(rid, ps, label, generator="Qwen2-7B-Instruct", final=None):
    """A ProcessBench row whose step i says p=ps[i]."""
    return {"id": rid, "generator": generator, "problem": f"problem {rid}?",
            "steps": [f"step {i} of {rid}. p={p}" for i, p in enumerate(ps)],
            "final_answer_correct": (label == -1) if final is None else final, "label": label}


# Per split: a label-0 row, label -1 rows, one-step solutions, errors found early / late / never.
ROWS = [
    row("gsm8k-0", [0.9, 0.2, 0.8], 1),            # predicted 1 = label: right
    row("gsm8k-1", [0.3, 0.9], 0),                 # label 0, predicted 0: right
    row("gsm8k-2", [0.9, 0.9], -1),                # correct, none judged wrong: right
    row("gsm8k-3", [0.7], -1),                     # one step, correct: right
    row("gsm8k-4", [0.6, 0.5, 0.9], -1),           # p = 0.5 is not above the threshold: predicted 1, wrong
    row("math-0", [0.9, 0.9, 0.9], 2),             # error missed: predicted -1, wrong
    row("math-1", [0.1], 0),                       # one step, wrong, caught: right
    row("math-2", [0.2, 0.9], -1),                 # a false alarm: wrong
    row("math-3", [0.8, 0.9, 0.4, 0.3], -1),       # wrong
    row("math-4", [0.95, 0.7], -1),                # right
    row("olympiadbench-0", [0.8, 0.3, 0.1], 2),    # found too early: wrong
    row("olympiadbench-1", [0.9], -1),             # right
    row("olympiadbench-2", [0.4, 0.9], 0),         # right
    row("omnimath-0", [0.2], 0),                   # right
    row("omnimath-1", [0.9, 0.9, 0.2], 2),         # right
    row("omnimath-2", [0.51, 0.52], -1),           # right
    row("omnimath-3", [0.8, 0.7, 0.6], 1),         # missed: wrong
]


def write_lines(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def entry():
    return load_catalog([REPO / "tasks"], builtin=False).task_spec("processbench")


def load(tmp_path, rows=ROWS, **args):
    spec = task_spec_with_data(entry(), str(write_lines(tmp_path / "pb.jsonl", rows)))
    task, groups = load_groups(task_spec_with_args(spec, args) if args else spec)
    rewards = np.array([float(s.rsplit("p=", 1)[1]) for g in groups for s in g.responses])
    return task, groups, rewards


def records(task, groups, rewards):
    """The task's records on the identity resample: (metric, subset) -> value."""
    scores = task.extra_metrics(groups, rewards)
    values = scores.statistic(np.arange(len(groups)))
    return dict(zip(scores.labels, values.tolist())), dict(zip(scores.labels, scores.counts))


# --- ProcessBench's own code --------------------------------------------------------------------
# Copied verbatim (the lines named), as functions, from the official scripts; only the wrapping
# `def` and its arguments are added.

def official_run_eval_scores(res_data):
    """QwenLM/ProcessBench @ e8024636bcabdf8bd514440551b531d3f90dd18b, code/run_eval.py lines
    117-118 and 127-129 (the same lines are 70-71 and 79-81 of code/run_eval_prm_rlhflow.py);
    ``res_data`` rows hold ``label`` and ``match`` (line 112: ``d['match'] = (pred == d['label'])``)."""
    error_data = [e for e in res_data if e['label'] != -1]
    correct_data = [e for e in res_data if e['label'] == -1]
    acc1 = np.mean([e['match'] for e in error_data]) * 100
    acc2 = np.mean([e['match'] for e in correct_data]) * 100
    f1 = 2 * acc1 * acc2 / (acc1 + acc2)
    return acc1, acc2, f1


def official_get_prediction_index(outputs, label_for_true: str = "LABEL_1") -> int:
    """huggingface/ProcessBench @ 79916a4812bbfe5a97f810494700d9198fdb8a51, code/run_eval_prm_trl.py
    lines 142-160 (its TODO comments left out): the first step whose label is not LABEL_1."""
    for i, output in enumerate(outputs):
        prediction = True if output[-1]["entity"] == label_for_true else False
        if prediction is False:
            return i
    return -1


def official_precision_recall_f1(results):
    """The same file, lines 182-194 (``precision_recall``) and 48-51 (``f1_score``)."""
    errors = []
    corrects = []
    for result in results:
        if result["label"] == -1:
            corrects.append(result["match"])
        else:
            errors.append(result["match"])
    precision = np.mean(errors) * 100 if len(errors) > 0 else None
    recall = np.mean(corrects) * 100 if len(corrects) > 0 else None
    if (precision is None) or (recall is None):
        return precision, recall, 0
    return precision, recall, 2 * precision * recall / (precision + recall)


def pipeline_outputs(ps):
    """What transformers' token-classification pipeline gives a two-class PRM for each step's
    prefix (the entity of its last token): ``id2label[scores.argmax()]`` over (1 - p, p), numpy's
    argmax taking the first class, LABEL_0, at a tie."""
    return [[{"entity": f"LABEL_{int(np.argmax([1 - p, p]))}"}] for p in ps]


def test_the_official_scripts_give_the_task_s_scores(tmp_path):
    task, groups, rewards = load(tmp_path)
    mine, _ = records(task, groups, rewards)
    f1s = []
    for split in PROCESSBENCH_SPLITS:
        res_data = []
        for r in ROWS:
            if r["id"].startswith(split + "-"):
                ps = [float(s.rsplit("p=", 1)[1]) for s in r["steps"]]
                pred = official_get_prediction_index(pipeline_outputs(ps))
                assert pred == first_error_prediction(ps)
                res_data.append({"label": r["label"], "match": pred == r["label"]})
        acc1, acc2, f1 = official_run_eval_scores(res_data)
        assert official_precision_recall_f1(res_data) == pytest.approx((acc1, acc2, f1), abs=1e-9)
        assert mine[("processbench_error_acc", split)] == pytest.approx(acc1 / 100, abs=1e-9)
        assert mine[("processbench_correct_acc", split)] == pytest.approx(acc2 / 100, abs=1e-9)
        assert mine[("processbench_f1", split)] == pytest.approx(f1 / 100, abs=1e-9)
        f1s.append(f1)
    assert mine[("processbench_f1", None)] == pytest.approx(np.mean(f1s) / 100, abs=1e-9)  # the paper's Avg. F1


# --- by hand ----------------------------------------------------------------------------------

def test_the_scores_by_hand(tmp_path):
    task, groups, rewards = load(tmp_path)
    mine, n = records(task, groups, rewards)
    # gsm8k: erroneous 0, 1 both right (1); correct 2, 3 right, 4 wrong (2/3); F1 = 2 * 2/3 / (5/3) = 0.8
    # math: erroneous 0 wrong, 1 right (1/2); correct 2, 3 wrong, 4 right (1/3); F1 = 2 * 1/6 / (5/6) = 0.4
    # olympiadbench: erroneous 0 wrong, 2 right (1/2); correct 1 right (1); F1 = 1 / 1.5 = 2/3
    # omnimath: erroneous 0, 1 right, 3 wrong (2/3); correct 2 right (1); F1 = (4/3) / (5/3) = 0.8
    expected = {"gsm8k": (1, 2 / 3, 0.8), "math": (1 / 2, 1 / 3, 0.4), "olympiadbench": (1 / 2, 1, 2 / 3),
                "omnimath": (2 / 3, 1, 0.8)}
    for split, (err, cor, f1) in expected.items():
        assert mine[("processbench_error_acc", split)] == pytest.approx(err, abs=1e-12)
        assert mine[("processbench_correct_acc", split)] == pytest.approx(cor, abs=1e-12)
        assert mine[("processbench_f1", split)] == pytest.approx(f1, abs=1e-12)
    assert mine[("processbench_f1", None)] == pytest.approx((0.8 + 0.4 + 2 / 3 + 0.8) / 4, abs=1e-12)
    assert mine[("processbench_error_acc", None)] == pytest.approx((1 + 1 / 2 + 1 / 2 + 2 / 3) / 4, abs=1e-12)
    assert n[("processbench_f1", None)] == 17 and n[("processbench_f1", "math")] == 5
    assert n[("processbench_error_acc", "gsm8k")] == 2 and n[("processbench_correct_acc", "gsm8k")] == 3
    right = task.item_correct(groups, rewards)
    assert right.tolist() == [1, 1, 1, 1, 0, 0, 1, 0, 0, 1, 0, 1, 1, 1, 1, 1, 0]


def test_the_threshold_moves_the_prediction(tmp_path):
    assert first_error_prediction([0.6, 0.5, 0.9]) == 1  # at the threshold: judged wrong, as the argmax's tie
    assert first_error_prediction([0.6, 0.5, 0.9], threshold=0.4) == -1
    assert first_error_prediction([0.6, 0.5, 0.9], threshold=0.6) == 0
    assert first_error_prediction([0.9, float("nan")]) == 1
    task, groups, rewards = load(tmp_path, threshold=0.45)
    assert task.threshold == 0.45
    mine, _ = records(task, groups, rewards)
    assert mine[("processbench_correct_acc", "gsm8k")] == 1.0  # gsm8k-4's 0.5 is now above


def test_a_solution_with_no_scored_step_matches_no_label_as_run_eval_s_none():
    assert first_error_prediction([float("nan")] * 3) == NO_PREDICTION
    labels, preds = [0, 2, -1], [first_error_prediction([float("nan")] * 3)] * 3
    official = [{"label": lab, "match": None == lab} for lab in labels]  # run_eval.py: pred None  # noqa: E711
    with np.errstate(invalid="ignore"):
        acc1, acc2, _ = official_run_eval_scores(official)
    report = processbench_scores(preds, labels, ["math"] * 3)["math"]
    assert (report["error_acc"], report["correct_acc"]) == (acc1 / 100, acc2 / 100) == (0.0, 0.0)


def test_an_unscored_step_leaves_its_whole_solution_out_never_moving_its_first_error():
    from rmbench.core.types import ComparisonGroup
    from rmbench.core.unscored import drop_unscored

    solution = StepGroup(id="s", prompt="p", responses=("a", "b", "c"), utilities=(1, 1, 0))
    pair = ComparisonGroup(id="g", prompt="p", responses=("x", "y", "z"), utilities=(1, 1, 0))
    scored = drop_unscored([solution, pair], np.array([0.9, np.nan, 0.2, 0.9, np.nan, 0.2]))
    # without the StepGroup rule the solution would keep steps a, c as (1, 0): its first error at 1, not 2
    assert [g.id for g in scored.groups] == ["g"] and scored.dropped_groups == 1 and scored.unscored_responses == 2
    assert scored.groups[0].utilities == (1, 0) and scored.rewards.tolist() == [0.9, 0.2]


def test_both_accuracies_zero_is_an_f1_of_zero_where_the_script_divides_zero_by_zero():
    with np.errstate(invalid="ignore"):
        _, _, official = official_run_eval_scores([{"label": 0, "match": False}, {"label": -1, "match": False}])
    assert math.isnan(official)  # the script's 0/0; the harmonic mean's limit is 0
    assert harmonic_f1([0.0, 0.5, float("nan")], [0.0, 0.0, 1.0]).tolist()[:2] == [0.0, 0.0]
    assert math.isnan(harmonic_f1(float("nan"), 1.0))
    report = processbench_scores([1, 0], [0, -1], ["gsm8k", "gsm8k"])
    assert report == {"gsm8k": {"error_acc": 0.0, "correct_acc": 0.0, "f1": 0.0}, "average": {"f1": 0.0}}


def test_a_split_without_correct_solutions_has_no_f1():
    err, cor = split_accuracies([1, 0], [0, 2], [0, 0], 2)
    assert err[0] == 0.5 and math.isnan(cor[0]) and math.isnan(err[1])
    report = processbench_scores([0, 1, -1], [0, 1, -1], ["gsm8k", "gsm8k", "math"])
    assert report["gsm8k"]["error_acc"] == 1.0 and math.isnan(report["gsm8k"]["f1"])
    assert math.isnan(report["average"]["f1"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 3), st.integers(-1, 3)), min_size=1, max_size=30))
def test_f1_is_symmetric_bounded_and_between_min_and_max(pairs):
    preds, labels = [p for p, _ in pairs], [lab for _, lab in pairs]
    err, cor = split_accuracies(np.equal(preds, labels), labels, [0] * len(pairs), 1)
    f1 = harmonic_f1(err, cor)[0]
    assert np.array_equal(harmonic_f1(cor, err), harmonic_f1(err, cor), equal_nan=True)
    if not (math.isnan(err[0]) or math.isnan(cor[0])):
        assert 0 <= f1 <= 1
        assert min(err[0], cor[0]) - 1e-12 <= f1 <= max(err[0], cor[0]) + 1e-12
        assert f1 <= (err[0] + cor[0]) / 2 + 1e-12  # the harmonic mean is at most the arithmetic
    else:
        assert math.isnan(f1)


def test_resample_weights_count_a_row_as_often_as_drawn(tmp_path):
    task, groups, rewards = load(tmp_path, rows=ROWS[:5], split="gsm8k")
    scores = task.extra_metrics(groups, rewards)
    once = dict(zip(scores.labels, scores.statistic(np.array([0, 2, 4])).tolist()))
    # rows 0 (right) / 2 (right), 4 (wrong): error acc 1, correct acc 1/2, F1 2/3
    assert once[("processbench_f1", "gsm8k")] == pytest.approx(2 / 3)
    twice = dict(zip(scores.labels, scores.statistic(np.array([0, 2, 2, 4])).tolist()))
    assert twice[("processbench_correct_acc", "gsm8k")] == pytest.approx(2 / 3)


# --- reading ------------------------------------------------------------------------------------

def test_each_row_is_a_step_group_of_all_its_steps(tmp_path):
    _, groups, _ = load(tmp_path)
    g = groups[0]
    assert isinstance(g, StepGroup) and g.id == "gsm8k-0" and g.subset == "gsm8k" and g.prompt == "problem gsm8k-0?"
    assert len(g.responses) == 3 and g.utilities == (1, 0, 0) and g.first_error == 1
    assert g.meta_dict == {"generator": "Qwen2-7B-Instruct", "label": 1, "final_answer_correct": False}
    assert groups[1].utilities == (0, 0) and groups[2].utilities == (1, 1) and groups[3].utilities == (1,)
    assert [g.subset for g in groups].count("olympiadbench") == 3
    # pairs only up to the first error: gsm8k-0 has D pair (0, 1) and no Spec pair; math-0 two D, one Spec
    better, worse, a, b = groups[0].pair_arrays()
    assert (better.tolist(), worse.tolist(), a.tolist()) == ([0], [1], [])
    better, worse, a, b = groups[5].pair_arrays()
    assert (sorted(zip(better.tolist(), worse.tolist())), a.tolist(), b.tolist()) == ([(0, 2), (1, 2)], [0], [1])


def test_a_parquet_file_as_the_hub_stores_the_splits(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "math-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist([r for r in ROWS if r["id"].startswith("math-")]), path)
    task, groups = load_groups(task_spec_with_args(task_spec_with_data(entry(), str(path)), {"split": "math"}))
    assert [g.id for g in groups] == [f"math-{i}" for i in range(5)] and groups[0].utilities == (1, 1, 0)
    assert [g.meta_dict["final_answer_correct"] for g in groups] == [False, False, True, True, True]


def test_a_csv_file_holds_the_steps_as_json(tmp_path):
    import csv

    path = tmp_path / "pb.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(ROWS[0]))
        w.writeheader()
        for r in ROWS[:3]:
            w.writerow({**r, "steps": json.dumps(r["steps"]), "final_answer_correct": str(r["final_answer_correct"])})
    _, groups = load_groups(task_spec_with_data(entry(), str(path)))
    assert [g.utilities for g in groups] == [(1, 0, 0), (0, 0), (1, 1)]
    assert [g.meta_dict["final_answer_correct"] for g in groups] == [False, False, True]


def test_one_split_reads_its_rows_and_refuses_another_split_s(tmp_path):
    task, groups, _ = load(tmp_path, rows=ROWS[:5], split="gsm8k")
    assert len(groups) == 5 and [c.label for c in task.official.columns] == [
        "GSM8K error", "GSM8K correct", "GSM8K F1", "Avg F1"]
    rows = [dict(ROWS[0], id="7"), dict(ROWS[1], id="sample-2")]  # ids without a split: the arg says
    _, groups, _ = load(tmp_path, rows=rows, split="math")
    assert [g.subset for g in groups] == ["math", "math"]
    with pytest.raises(DataError, match=r"line 6, field 'id'.*'math-0', a row of ProcessBench's math split.*"
                                        r"split=math or split=all"):
        load(tmp_path, rows=ROWS[:6], split="gsm8k")
    with pytest.raises(DataError, match=r"field 'id'.*names none of ProcessBench's splits.*--task-arg split=SPLIT"):
        load(tmp_path, rows=rows)


def test_a_limit_keeps_an_erroneous_and_a_correct_solution_of_every_split(tmp_path):
    spec = task_spec_with_data(entry(), str(write_lines(tmp_path / "pb.jsonl", ROWS)))
    _, groups = load_groups(spec, limit=8)
    kept = sorted((g.subset, g.first_error == -1) for g in groups)
    assert kept == sorted((s, c) for s in PROCESSBENCH_SPLITS for c in (True, False))


@pytest.mark.parametrize("bad, field, words", [
    (dict(label=3), "label", "0..1 (2 steps)"),
    (dict(label=-2), "label", "-1 when none"),
    (dict(label="1"), "label", "integer"),
    (dict(steps=[]), "steps", "empty"),
    (dict(steps="one step"), "steps", "list of strings"),
    (dict(final_answer_correct="yes"), "final_answer_correct", "true, false or null"),
])
def test_bad_rows_name_file_line_and_field(tmp_path, bad, field, words):
    rows = [ROWS[0], dict(ROWS[1], **bad)]
    with pytest.raises(DataError) as info:
        load(tmp_path, rows=rows)
    assert info.value.line == 2 and info.value.field == field and words in str(info.value)


def test_a_duplicate_id_and_bad_arguments_are_refused(tmp_path):
    with pytest.raises(DataError, match="duplicate id 'gsm8k-0'"):
        load(tmp_path, rows=[ROWS[0], ROWS[0]])
    for args, words in ((dict(split="aime"), "gsm8k, math, olympiadbench, omnimath, or all"),
                        (dict(threshold=1.5), "in \\[0, 1\\]"), (dict(threshold="high"), "a number")):
        with pytest.raises(ValueError, match=words):
            ProcessBenchTask(**args)


def test_the_entry_reads_the_hub_splits_through_datasets(monkeypatch):
    datasets = pytest.importorskip("datasets")
    calls = []

    def fake_load(name, config=None, split=None, revision=None, data_files=None):
        calls.append((name, config, split, revision))
        return [r for r in ROWS if r["id"].startswith(split + "-")]

    monkeypatch.setattr("rmbench.hub.unreachable", lambda: None)
    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    spec = entry()
    assert spec.kind == "processbench" and spec.args_dict["dataset"] == "Qwen/ProcessBench"
    task, groups = load_groups(spec)
    # the official scripts' call: load_dataset('Qwen/ProcessBench', split=config), each split in turn
    assert calls == [("Qwen/ProcessBench", None, s, "main") for s in PROCESSBENCH_SPLITS]
    assert len(groups) == len(ROWS) and task.official == processbench_layout()
    calls.clear()
    load_groups(task_spec_with_args(spec, {"split": "omnimath"}))
    assert calls == [("Qwen/ProcessBench", None, "omnimath", "main")]


def test_a_hub_run_exports_every_official_column_as_hub_eval_results(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    from rmbench.results.publishing.export_formats import ExportOptions
    from rmbench.results.publishing.hf_eval_results import task_entries

    monkeypatch.setattr("rmbench.hub.unreachable", lambda: None)
    monkeypatch.setattr(datasets, "load_dataset", lambda name, config=None, split=None, revision=None,
                        data_files=None: [r for r in ROWS if r["id"].startswith(split + "-")])
    (tmp_path / "prm.py").write_text(PRM)
    record = rmbench.evaluate(rmbench.EvalConfig(model=f"python-prm:{tmp_path / 'prm.py'}:score",
                                                 tasks=("processbench",), n_bootstrap=0,
                                                 task_args=(("dataset", "Qwen/ProcessBench"),)))
    task = record.task("processbench")
    dataset, entries = task_entries(task, record, ExportOptions())
    values = {e.task_id: e.value for e in entries}
    assert dataset == "Qwen/ProcessBench" and len(values) == 13
    assert values["math_error"] == pytest.approx(1 / 2) and values["math_correct"] == pytest.approx(1 / 3)
    assert values["math_f1"] == pytest.approx(0.4) and values["default"] == pytest.approx((0.8 + 0.4 + 2 / 3 + 0.8) / 4)


def test_offline_the_hub_fails_in_one_line(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(DataError, match=r"could not load the dataset from the hub.*--data TASK=PATH") as info:
        load_groups(entry())
    assert "\n" not in str(info.value) and "Qwen/ProcessBench" in str(info.value)


def test_an_official_column_may_name_its_own_metric_and_it_round_trips():
    layout = processbench_layout(("gsm8k",))
    assert [(c.label, layout.metric_of(c), c.subset) for c in layout.columns] == [
        ("GSM8K error", "processbench_error_acc", "gsm8k"), ("GSM8K correct", "processbench_correct_acc", "gsm8k"),
        ("GSM8K F1", "processbench_f1", "gsm8k"), ("Avg F1", "processbench_f1", None)]
    assert layout.metrics == ("processbench_f1", "processbench_error_acc", "processbench_correct_acc")
    written = layout.to_json()
    assert "metric" not in written["columns"][2] and written["columns"][0]["metric"] == "processbench_error_acc"
    assert type(layout).from_json(json.loads(json.dumps(written))) == layout


def test_the_metrics_are_declared_official():
    for name in ("processbench_f1", "processbench_error_acc", "processbench_correct_acc"):
        assert metric_def(name).official and metric_def(name).higher_is_better


# --- end to end ---------------------------------------------------------------------------------

runner = CliRunner()


def test_a_prm_end_to_end_through_the_cli(tmp_path):
    (tmp_path / "prm.py").write_text(PRM)
    data = write_lines(tmp_path / "pb.jsonl", ROWS)
    result = runner.invoke(app, ["eval", "--model", f"python-prm:{tmp_path / 'prm.py'}:score", "--tasks",
                                 "processbench", "--data", f"processbench={data}", "--bootstrap", "20",
                                 "--out", str(tmp_path / "run")], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    out = result.output
    assert "ProcessBench (processbench): official layout" in out
    for header in ("GSM8K error", "GSM8K correct", "GSM8K F1", "Omni-MATH F1", "Avg F1", "D@", "Spec@"):
        assert header in out, header
    record = rmbench.read_run(tmp_path / "run")
    assert record.value("processbench", "processbench_f1") == pytest.approx((0.8 + 0.4 + 2 / 3 + 0.8) / 4)
    assert record.value("processbench", "processbench_f1", subset="math") == pytest.approx(0.4)
    layout = record.task("processbench").official
    assert layout.metric_of(layout.columns[0]) == "processbench_error_acc"  # written and read back
    # step-level D: of the 8 (correct step before the first error, first wrong step) pairs, those
    # ordered right (a strictly higher P(correct) for the correct step): gsm8k-0 (0.9 > 0.2);
    # math-0 (0.9, 0.9 vs 0.9: no, no); olympiadbench-0 (0.8, 0.3 vs 0.1: yes, yes); omnimath-1
    # (0.9, 0.9 vs 0.2: yes, yes); omnimath-3 (0.8 vs 0.7: yes) -> 6 of 8
    d = record.metric("processbench", "discrimination", eps=0.0)
    assert d.n == 8 and d.value == pytest.approx(6 / 8)
    spec = record.metric("processbench", "specificity", eps=0.0)
    assert spec.n > 0 and 0 <= spec.value <= 1
    rewards = [json.loads(line) for line in (tmp_path / "run" / "rewards.jsonl").read_text().splitlines()]
    assert len(rewards) == sum(len(r["steps"]) for r in ROWS)


def test_a_logit_scale_prm_passes_through_the_sigmoid(tmp_path):
    (tmp_path / "prm.py").write_text(PRM)
    data = write_lines(tmp_path / "pb.jsonl", [r for r in ROWS if 0.5 not in [float(s.rsplit("p=", 1)[1])
                                                                              for s in r["steps"]]])
    res = rmbench.evaluate(rmbench.EvalConfig(model=f"python-prm:{tmp_path / 'prm.py'}:logits", tasks=("processbench",),
                                              data=(("processbench", str(data)),), n_bootstrap=0,
                                              model_args=(("scale", "logit"),)))
    assert res.value("processbench", "processbench_f1", subset="gsm8k") == pytest.approx(1.0)  # 4 rows, all right


# An LLM critic (judge mode critic, ProcessBench's run_eval.py) on the same rows: its answer is
# parsed as run_eval.py parses it (tests/support/processbench_official.py).

CRITIQUES = {"gsm8k-0": r"Paragraph 1 is wrong. \boxed{1}", "gsm8k-1": r"\boxed{ 1 }", "gsm8k-2": r"\boxed{-1}",
             "gsm8k-3": r"\boxed{-1}", "gsm8k-4": r"first \boxed{2}, no: \boxed{0}", "math-0": r"\boxed{-1}",
             "math-1": r"\boxed{0}", "math-2": r"\boxed{1}", "math-3": r"\boxed{-1}", "math-4": r"\boxed{-1}",
             "olympiadbench-0": r"\boxed{2}", "olympiadbench-1": r"\boxed{-1}", "olympiadbench-2": r"\boxed{1}",
             "omnimath-0": r"\boxed{0}", "omnimath-1": r"\boxed{-1}", "omnimath-2": r"\boxed{0}",
             "omnimath-3": r"\boxed{1}"}
"""A critique per solution (every one names a step of its solution: a verdict)."""


def critic_run(tmp_path, critiques, n_bootstrap=0):
    """``judge:critic`` (mode critic) on ROWS against the scripted server, which answers each
    problem with its critique; each split's official scores checked against run_eval.py's."""
    from tests.support.judge_server import ScriptedServer
    from tests.support.processbench_official import critic_prediction

    def reply(body):
        return critiques[re.search(r"problem (\S+)\?", body["messages"][-1]["content"]).group(1)]

    data = write_lines(tmp_path / "pb.jsonl", ROWS)
    with ScriptedServer(reply=reply, model_id="critic") as server:
        record = rmbench.evaluate(rmbench.EvalConfig(
            model="judge:critic", tasks=("processbench",), data=(("processbench", str(data)),),
            n_bootstrap=n_bootstrap, model_args=(("base_url", server.base_url), ("mode", "critic")), use_cache=False))
    f1s = []
    for split in PROCESSBENCH_SPLITS:
        res_data = [{"label": r["label"], "match": critic_prediction(critiques[r["id"]]) == r["label"]}
                    for r in ROWS if r["id"].startswith(split + "-")]
        acc1, acc2, f1 = official_run_eval_scores(res_data)
        assert record.value("processbench", "processbench_error_acc", subset=split) == pytest.approx(acc1 / 100)
        assert record.value("processbench", "processbench_correct_acc", subset=split) == pytest.approx(acc2 / 100)
        assert record.value("processbench", "processbench_f1", subset=split) == pytest.approx(f1 / 100, abs=1e-9)
        f1s.append(f1)
    assert record.value("processbench", "processbench_f1") == pytest.approx(np.mean(f1s) / 100, abs=1e-9)
    return record


def test_an_llm_critic_s_scores_equal_run_eval_s_on_its_answers(tmp_path):
    record = critic_run(tmp_path, CRITIQUES)
    assert not record.task("processbench").unparsed  # every answer a verdict


def test_a_response_level_model_is_refused_in_one_line(tmp_path):
    data = write_lines(tmp_path / "pb.jsonl", ROWS)
    result = runner.invoke(app, ["eval", "--model", "length", "--tasks", "processbench", "--data",
                                 f"processbench={data}", "--bootstrap", "0", "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: task 'processbench' scores each step"), result.output
    assert not (tmp_path / "run").exists()


def test_a_processbench_file_given_to_ties_names_processbench(tmp_path):
    data = write_lines(tmp_path / "pb.jsonl", ROWS[:2])
    result = runner.invoke(app, ["eval", "--model", "length", "--tasks", "ties", "--data", f"ties={data}",
                                 "--bootstrap", "0", "--out", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert "ProcessBench rows" in result.output and "--tasks processbench" in result.output


def test_runs_at_other_thresholds_are_never_compared(tmp_path):
    """``threshold`` is a score argument: recorded apart from the data fingerprint (the same data:
    the same fingerprint) and part of the task key, so two runs at other thresholds get other task
    keys (two columns, never one, with a note naming the thresholds, not the data), and each
    reloads against its own."""
    from rmbench.results.publishing.leaderboard import build_leaderboard
    from rmbench.results.statistics.compare import paired_task
    from rmbench.results.storage.folder import load_run
    from rmbench.scoring.rerun import run_tasks_loaded

    (tmp_path / "prm.py").write_text(PRM)
    data = write_lines(tmp_path / "pb.jsonl", ROWS)
    runs = {}
    for threshold in (0.5, 0.3):
        out = tmp_path / f"t{threshold}"
        runs[threshold] = rmbench.evaluate(rmbench.EvalConfig(
            model=f"python-prm:{tmp_path / 'prm.py'}:score", tasks=("processbench",), n_bootstrap=0,
            data=(("processbench", str(data)),), task_args=(("threshold", threshold),)), out_dir=out)
    keys = {t: r.task("processbench").comparability_key for t, r in runs.items()}
    assert keys[0.5] != keys[0.3]
    tasks = {t: r.task("processbench") for t, r in runs.items()}
    assert tasks[0.5].data_fingerprint == tasks[0.3].data_fingerprint  # the same data
    assert [dict(t.score_args) for t in tasks.values()] == [{"threshold": 0.5}, {"threshold": 0.3}]
    assert tasks[0.5].differences(tasks[0.3]) == ["threshold 0.5 vs 0.3"]
    runs_on_disk = [load_run(tmp_path / "t0.5"), load_run(tmp_path / "t0.3")]
    board = build_leaderboard(runs_on_disk)
    headers = [c.header for c in board.main.columns]
    assert "processbench (threshold=0.3) ProcessBench F1" in headers  # shown apart, each named
    assert "processbench (threshold=0.5) ProcessBench F1" in headers
    [note] = [n for n in board.notes if "cannot share cells" in n]
    assert note.startswith("processbench (threshold=0.3) of t0.3 cannot share cells with processbench "
                           "(threshold=0.5) of t0.5: "), note
    assert note.endswith(": threshold 0.3 vs 0.5; shown apart") and "data fingerprint" not in note, note  # names' order
    with pytest.raises(rmbench.ConfigError, match=r"not comparable \(threshold 0\.5 vs 0\.3\)"):
        paired_task(*runs_on_disk, "processbench")
    for run in runs_on_disk:  # each reloads: the fingerprint check holds its own threshold
        assert run_tasks_loaded(run)[0].task.threshold == run.record.task("processbench").args["threshold"]


def test_a_results_json_that_folds_the_threshold_into_its_data_fingerprint_still_loads(tmp_path):
    """A file written before score arguments were recorded apart (no ``score_args``; its
    ``data_fingerprint`` is sha256 of the data and the threshold) loads, keeps its task key (the
    same as a new run's at that threshold: they share cells), reloads its data, and against a run
    at another threshold gets one note naming both hashes."""
    from rmbench.core.canonical import canonical_json, sha256_hex
    from rmbench.results.storage.folder import load_run
    from rmbench.scoring.rerun import run_tasks_loaded

    (tmp_path / "prm.py").write_text(PRM)
    data = write_lines(tmp_path / "pb.jsonl", ROWS)
    runs = {}
    for threshold in (0.5, 0.3):
        runs[threshold] = rmbench.evaluate(rmbench.EvalConfig(
            model=f"python-prm:{tmp_path / 'prm.py'}:score", tasks=("processbench",), n_bootstrap=0,
            data=(("processbench", str(data)),), task_args=(("threshold", threshold),)),
            out_dir=tmp_path / f"t{threshold}")
    new = runs[0.5].task("processbench")
    old_file = tmp_path / "t0.5" / "results.json"
    doc = json.loads(old_file.read_text())
    task = doc["tasks"][0]
    assert task.pop("score_args") == {"threshold": 0.5}
    # as the earlier rmbench wrote it (tasks/base.py:task_fingerprint of that version)
    task["data_fingerprint"] = sha256_hex(canonical_json({"data": task["data_fingerprint"],
                                                          "score_args": {"threshold": 0.5}}))
    old_file.write_text(json.dumps(doc))
    old = load_run(tmp_path / "t0.5")  # its recorded keys still match its fields
    loaded = old.record.task("processbench")
    assert not loaded.score_args and loaded.data_fingerprint == task["data_fingerprint"]
    assert (loaded.task_key, loaded.comparability_key) == (new.task_key, new.comparability_key)
    assert loaded.differences(new) == []
    assert run_tasks_loaded(old)[0].fingerprint == new.data_fingerprint  # its data reloads, checked
    [line] = loaded.differences(runs[0.3].task("processbench"))
    assert line.startswith("data or score arguments ") and "threshold 0.3" in line, line


def test_a_critique_that_names_no_step_counts_as_run_eval_counts_it(tmp_path):
    """run_eval.py counts an answer it cannot parse (or one naming no step) as a wrong prediction:
    the official scores count the solution, the pairs leave it out, and ``unparsed`` counts it."""
    critiques = {**CRITIQUES, "gsm8k-0": "I cannot tell.", "math-0": r"\boxed{two}", "omnimath-1": r"\boxed{}"}
    record = critic_run(tmp_path, critiques, n_bootstrap=20)
    task = record.task("processbench")
    assert task.status == "success" and task.unparsed is not None and task.unparsed > 0
    f1 = record.metric("processbench", "processbench_f1")
    assert f1.n == len(ROWS) and f1.ci_low is not None  # every solution counted, with a CI
    d = record.metric("processbench", "discrimination", eps=0.0)
    assert d.n < 8  # the pairs of the three solutions with no verdict are left out
