"""The prmbench task: PRMBench's solutions as step groups, its official F1s and PRMScore.

The official scores are checked against PRMBench's own code (``tests/support/prmbench_official.py``:
``load_data_function``, ``evaluate_function``, ``eval_on_hallucination_step`` and the paper
table's ``get_prmscore_from_current_res_dict``, copied from ssmisya/PRMBench at a1ae4ea) on the
same step predictions, and by hand.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

import rmbench
from rmbench.catalog import load_catalog
from rmbench.core import metric_registry as R
from rmbench.core.prmbench import CATEGORIES, CORRECT, PRMBENCH_LAYOUT, f1_pair, official_f1, prm_score
from rmbench.core.step_groups import StepGroup
from rmbench.errors import DataError
from rmbench.tasks import TASK_KINDS, downloads, schemas
from rmbench.tasks.prmbench import PRMBENCH_COMMIT, PRMBENCH_FILES, PRMBenchTask
from tests.support import prmbench_official as official

REPO = Path(__file__).resolve().parents[2]


def row(idx, kind, steps, errors, original=None, question="q"):
    return {"idx": idx, "classification": kind, "original_question": "oq " + question,
            "modified_question": question, "original_process": original or ["o1", "o2"],
            "modified_process": steps, "error_steps": errors, "modified_steps": errors, "reason": "r"}


def write_lines(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def task_of(tmp_path, rows, **args) -> tuple[PRMBenchTask, list[StepGroup]]:
    task = PRMBenchTask(path=str(write_lines(tmp_path / "prmbench.jsonl", rows)), **args)
    return task, list(task.groups())  # type: ignore[arg-type]


def records(task, groups, rewards) -> dict:
    scores = task.extra_metrics(groups, np.asarray(rewards, dtype=np.float64))
    return dict(zip(scores.labels, scores.statistic(np.arange(len(groups)))))


# --- the solutions ------------------------------------------------------------------------------

def test_each_row_is_its_modified_solution_and_a_redundency_row_adds_the_original(tmp_path):
    rows = [row("p0", "redundency", ["a", "b", "c"], [2], original=["x", "y"]),
            row("p0", "circular", ["a", "b"], [1, 2]),
            row("p0", "redundency", ["dup"], [1]),                   # the same id again: dropped, as PRMBench's loader
            row("p1", "deception", ["a", "b"], [2, 7]),              # step 7 does not exist: labels nothing
            row(2, "multi_solutions", ["m1", "m2"], [])]
    _, groups = task_of(tmp_path, rows)
    assert [g.id for g in groups] == ["correct_p0", "redundency_p0", "circular_p0", "deception_p1",
                                      "multi_solutions_2"]
    assert [g.utilities for g in groups] == [(1, 1), (1, 0, 1), (0, 0), (1, 0), (1, 1)]
    assert groups[0].responses == ("x", "y") and groups[0].prompt == "oq q" and groups[1].prompt == "q"
    assert [g.subset for g in groups] == [CORRECT, "redundency", "circular", "deception", "multi_solutions"]
    assert groups[4].meta_dict == {"idx": "2", "classification": "multi_solutions"}
    assert all(isinstance(g, StepGroup) for g in groups)
    # official loader: the same solutions, ids, steps and error steps
    meta = official.load_data_function(rows)
    assert [(m["idx"], tuple(m["steps"])) for m in meta] == [(g.id, g.responses) for g in groups]


def test_bad_rows_name_file_line_and_field(tmp_path):
    for bad, field in ((dict(error_steps=["2"]), "error_steps"), (dict(modified_process=[]), "modified_process"),
                       (dict(classification="correct"), "classification"), (dict(idx=None), "idx")):
        path = write_lines(tmp_path / "bad.jsonl", [row("p0", "circular", ["a"], [1]),
                                                    {**row("p1", "circular", ["a"], [1]), **bad}])
        with pytest.raises(DataError) as info:
            list(PRMBenchTask(path=str(path)).groups())
        assert info.value.line == 2 and info.value.field == field, (bad, str(info.value))


def test_skip_bad_rows_leaves_a_bad_row_out(tmp_path):
    from rmbench.tasks.loading import load_task, task_spec_with_data

    path = write_lines(tmp_path / "p.jsonl", [{**row("p0", "redundency", ["a"], [1]), "error_steps": "1"},
                                              row("p1", "circular", ["a", "b"], [2])])
    _, groups, bad = load_task(task_spec_with_data(entry(), str(path)), skip_bad_rows=True)
    assert [g.id for g in groups] == ["circular_p1"] and len(bad) == 1 and bad[0].field == "error_steps"


def test_a_row_of_another_format_says_which_format_prmbench_reads(tmp_path):
    path = write_lines(tmp_path / "pairs.jsonl", [{"prompt": "q", "chosen": "a", "rejected": "b"}])
    with pytest.raises(DataError, match="PRMBench rows"):
        list(PRMBenchTask(path=str(path)).groups())


def test_bad_arguments_are_refused():
    for args in ({"threshold": "high"}, {"threshold": float("nan")}, {"source": "s3"}, {"dataset": None}):
        with pytest.raises(ValueError):
            PRMBenchTask(**args)


# --- the official scores by hand ----------------------------------------------------------------

HAND = [row("p0", "redundency", ["a", "b", "c"], [2], original=["x", "y"]), row("p0", "circular", ["a", "b"], [1, 2])]
HAND_REWARDS = [0.6, 0.4,        # the original solution of p0 (correct): TP, FN
                0.9, 0.8, 0.2,   # redundency: TP (correct, 0.9), FP (error step, 0.8), FN (correct, 0.2)
                0.1, 0.7]        # circular: both steps wrong: TN (0.1), FP (0.7)


def test_prmscore_by_hand(tmp_path):
    task, groups = task_of(tmp_path, HAND)
    got = records(task, groups, HAND_REWARDS)
    # overall (redundency + circular, not the original): TP 1, FP 2, TN 1, FN 1
    # F1: P = 1/3, R = 1/2 -> 0.4; negative: P = TN/(TN+FN) = 1/2, R = TN/(TN+FP) = 1/3 -> 0.4
    assert got["prmbench_f1", None] == pytest.approx(0.4) and got["prmbench_negative_f1", None] == pytest.approx(0.4)
    assert got["prmbench_score", None] == pytest.approx(0.4)
    # redundency: TP 1, FP 1, FN 1, TN 0: F1 1/2; negative P = 0, R = 0 -> PRMBench's -1; 0.25 - 0.5 < 0 -> 0
    assert got["prmbench_f1", "redundency"] == pytest.approx(0.5) and got["prmbench_negative_f1", "redundency"] == -1
    assert got["prmbench_score", "redundency"] == 0
    # circular: TP 0, FP 1, TN 1: F1 P = 0, R = -1 -> 0; negative P = 1, R = 1/2 -> 2/3; score 1/3
    assert got["prmbench_f1", "circular"] == 0 and got["prmbench_negative_f1", "circular"] == pytest.approx(2 / 3)
    assert got["prmbench_score", "circular"] == pytest.approx(1 / 3)
    assert got["prmbench_score", "simplicity"] == pytest.approx(1 / 6)  # the mean of its two types
    # the original solution (correct): TP 1, FN 1: F1 2/3; negative P = 0, R = -1 -> 0
    assert got["prmbench_f1", CORRECT] == pytest.approx(2 / 3) and got["prmbench_negative_f1", CORRECT] == 0
    assert ("prmbench_score", CORRECT) not in got and ("prmbench_score", "soundness") not in got
    # threshold 0.95: every step predicted wrong: TP 0, FP 0, TN 3, FN 2 -> F1 0, negative 2(3/5)/(8/5) = 3/4
    task, groups = task_of(tmp_path, HAND, threshold=0.95)
    high = records(task, groups, HAND_REWARDS)
    assert high["prmbench_f1", None] == 0 and high["prmbench_negative_f1", None] == pytest.approx(0.75)
    assert high["prmbench_score", None] == pytest.approx(0.375)


def test_a_score_at_the_threshold_predicts_wrong(tmp_path):
    task, groups = task_of(tmp_path, [row("p", "confidence", ["a", "b"], [2])])
    got = records(task, groups, [0.5, 0.5])  # both wrong: FN for step 1, TN for step 2
    # F1: P = -1 (nothing predicted correct), R = 0 -> 0; negative: P = 1/2, R = 1 -> 2/3
    assert got["prmbench_f1", None] == 0 and got["prmbench_negative_f1", None] == pytest.approx(2 / 3)


def test_prmscore_properties():
    rng = np.random.default_rng(3)
    for _ in range(200):
        tp, fp, tn, fn = rng.integers(0, 4, size=4)
        f, n = f1_pair([tp, fp, tn, fn])
        s = prm_score(f, n)
        assert s == max(0.0, 0.5 * f + 0.5 * n) and 0 <= s <= 1
        if f >= 0 and n >= 0:
            assert min(f, n) <= s <= max(f, n)
    assert official_f1(3, 0, 0) == 1 and prm_score(1.0, 1.0) == 1 and prm_score(0.9, -1.0, True) == 0.9
    assert np.isnan(prm_score(np.nan, 0.5))


def test_perfect_predictions_score_one_and_inverted_ones_zero(tmp_path):
    task, groups = task_of(tmp_path, conformance_rows())
    truth = np.concatenate([np.asarray(g.utilities, dtype=np.float64) for g in groups])
    perfect = records(task, groups, truth)
    assert all(v == 1 for (metric, subset), v in perfect.items()
               if metric == "prmbench_score"), perfect
    inverted = records(task, groups, 1 - truth)
    assert all(v == 0 for (metric, _), v in inverted.items() if metric == "prmbench_score")


# --- PRMBench's own code on the same predictions ---------------------------------------------

def conformance_rows() -> list[dict]:
    """Every error type, a few solutions each, of different lengths and error positions."""
    rng = np.random.default_rng(11)
    rows = []
    for i in range(4):
        for _, types in CATEGORIES:
            for kind, _ in types:
                n = int(rng.integers(1, 7))
                errors = [] if kind == "multi_solutions" else sorted(
                    {int(e) for e in rng.integers(1, n + 2, size=int(rng.integers(1, 3)))})
                rows.append(row(f"p{i}", kind, [f"{kind} {i} step {k}" for k in range(n)], errors,
                                original=[f"orig {i} {k}" for k in range(int(rng.integers(1, 5)))]))
    return rows


def official_report(meta, groups, rewards, threshold):
    """PRMBench's evaluate_function on the predictions score > threshold, and its table."""
    by_id = dict(zip([g.id for g in groups], np.split(rewards, np.cumsum([len(g.responses) for g in groups])[:-1])))
    results = [{"idx": m["idx"],
                "scores": {"step_level_validity_labels": [bool(s > threshold) for s in by_id[m["idx"]]]}}
               for m in meta]
    return official.evaluate_function(results, meta)


@pytest.mark.parametrize("threshold", [0.5, 0.3, 0.8])
def test_scores_equal_prmbenchs_own_code(tmp_path, threshold):
    rows = conformance_rows()
    task, groups = task_of(tmp_path, rows, threshold=threshold)
    meta = official.load_data_function(rows)
    n = sum(len(g.responses) for g in groups)
    rng = np.random.default_rng(int(threshold * 10))
    for draw in range(6):
        rewards = rng.random(n) if draw < 4 else np.full(n, 0.9 if draw == 4 else 0.1)  # and all one way
        rewards[rng.integers(0, n, size=3)] = threshold  # exactly at the threshold: predicted wrong
        res = official_report(meta, groups, rewards, threshold)
        ours = records(task, groups, rewards)
        assert ours["prmbench_score", None] == pytest.approx(official.get_prmscore_from_current_res_dict(res), abs=1e-9)
        for metric, key in (("prmbench_f1", "f1"), ("prmbench_negative_f1", "negative_f1")):
            assert ours[metric, None] == pytest.approx(res["total_hallucination_results"][key], abs=1e-9)
            for kind, value in res["hallucination_type_results"][key].items():
                assert ours[metric, kind] == pytest.approx(value, abs=1e-9), (metric, kind)
        for category, types in CATEGORIES:
            kinds = [k for k, _ in types]
            for kind in kinds:
                assert ours["prmbench_score", kind] == pytest.approx(
                    official.get_prmscore_from_current_res_dict(res, kind), abs=1e-9), kind
            assert ours["prmbench_score", category] == pytest.approx(
                official.get_avg_prmscore_from_current_res_dict(res, kinds), abs=1e-9), category


def test_the_layout_is_the_papers_table():
    assert [c.label for c in PRMBENCH_LAYOUT.columns] == [
        "Overall", "NR.", "NCL.", "Simplicity Avg.", "ES.", "SC.", "DC.", "CI.", "Soundness Avg.",
        "PS.", "DR.", "MS.", "Sensitivity Avg."]


def test_the_kind_declares_its_scores_and_row_schema():
    kind = TASK_KINDS.get("prmbench")
    assert kind.steps and kind.official == PRMBENCH_LAYOUT and kind.headline[0] == "prmbench_score"
    assert all(R.METRICS.get(d.name) == d and d.official for d in kind.scores)
    assert "prmbench" in schemas.kinds_reading(schemas.PRMBENCH)


# --- where the data comes from ---------------------------------------------------------------

def entry():
    return load_catalog([REPO / "tasks"], builtin=False).task_spec("prmbench")


def test_the_entry_reads_the_hub_and_the_kind_pins_the_official_files():
    args = entry().args_dict
    assert args["dataset"] == "hitsmy/PRMBench_Preview" and args["split"] == "train" and args["threshold"] == 0.5
    assert len(PRMBENCH_FILES) == 25
    for pinned in PRMBENCH_FILES:
        remote = downloads.parse_remote(pinned)
        assert remote.url.startswith(f"https://raw.githubusercontent.com/ssmisya/PRMBench/{PRMBENCH_COMMIT}/"
                                     "mr_eval/tasks/prmtest_classified/data/") and len(remote.sha256) == 64


def test_the_hub_path_loads_through_datasets(monkeypatch):
    datasets = pytest.importorskip("datasets")
    calls = []

    def fake_load(name, config=None, split=None, revision=None, data_files=None):
        calls.append((name, split, revision))
        return HAND

    monkeypatch.setattr("rmbench.hub.unreachable", lambda: None)
    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    from rmbench.tasks.loading import load_groups

    _, groups = load_groups(entry())
    assert calls == [("hitsmy/PRMBench_Preview", "train", "main")]
    assert [g.id for g in groups] == ["correct_p0", "redundency_p0", "circular_p0"]


def test_the_github_files_come_through_the_mirror_and_a_wrong_file_is_refused(tmp_path, monkeypatch):
    from rmbench.tasks.loading import load_groups, task_spec_with_args

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    body = "".join(json.dumps(r) + "\n" for r in HAND).encode()
    remote = downloads.parse_remote(PRMBENCH_FILES[6])  # prm800k_test_p1_4o_redundency.jsonl
    mirrored = tmp_path / "mirror" / downloads.mirror_tail(remote.url)
    mirrored.parent.mkdir(parents=True)
    mirrored.write_bytes(body)
    monkeypatch.setenv(downloads.MIRROR_ENV, str(tmp_path / "mirror"))
    spec = task_spec_with_args(entry(), {"source": "github", "paths": [PRMBENCH_FILES[6]]})
    with pytest.raises(DataError, match=rf"has sha256 {hashlib.sha256(body).hexdigest()}, not the declared"):
        load_groups(spec)  # the synthetic file is not the published one
    pinned = f"{remote.url}#sha256={hashlib.sha256(body).hexdigest()}"
    _, groups = load_groups(task_spec_with_args(spec, {"paths": [pinned]}))
    assert [g.id for g in groups] == ["correct_p0", "redundency_p0", "circular_p0"]


# --- end to end --------------------------------------------------------------------------------

PRM = '''
import re

def score(items):
    """Each step's P(correct) is written in it: "... [p=0.9]"."""
    return [[float(re.search(r"p=([0-9.]+)", s).group(1)) for s in steps] for _, steps in items]
'''


def tagged(rows, rewards):
    """The rows with each step's score written into its text, in the order the task reads them."""
    out, it = [], iter(rewards)
    for r in rows:
        original = [f"{s} [p={next(it)}]" for s in r["original_process"]] if r["classification"] == "redundency" \
            else r["original_process"]
        steps = [f"{s} [p={next(it)}]" for s in r["modified_process"]]
        out.append({**r, "modified_process": steps, "original_process": original})
    return out


def test_the_cli_prints_the_official_table_and_records_step_level_d_and_spec(tmp_path):
    from typer.testing import CliRunner

    from rmbench.cli.app import app

    (tmp_path / "my_prm.py").write_text(PRM)
    data = write_lines(tmp_path / "prmbench.jsonl", tagged(HAND, HAND_REWARDS))
    result = CliRunner().invoke(app, ["eval", "--model", f"python-prm:{tmp_path / 'my_prm.py'}:score",
                                      "--tasks", "prmbench", "--data", f"prmbench={data}", "--bootstrap", "20",
                                      "--no-cache", "--out", str(tmp_path / "run")], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "PRMBench" in result.output and "NCL." in result.output and "Simplicity Avg." in result.output
    record = rmbench.read_run(tmp_path / "run")
    assert record.value("prmbench", "prmbench_score") == pytest.approx(0.4)
    assert record.value("prmbench", "prmbench_score", subset="circular") == pytest.approx(1 / 3)
    m = record.metric("prmbench", "prmbench_score")
    assert m.n == 2 and m.ci_low <= m.value <= m.ci_high
    # step-level pairs: redundency's (step 1, its first error step 2): 0.9 > 0.8; the circular solution
    # starts with an error (no pair); the original's two correct steps 0.6, 0.4 are one Spec pair
    d = record.metric("prmbench", "discrimination", eps=0.0)
    assert d.value == 1 and d.n == 1
    spec = [x for x in record.task("prmbench").metrics if x.metric == "specificity" and x.subset is None]
    assert spec and all(x.n == 1 for x in spec)
    assert {x.value for x in spec if x.eps is not None and x.eps >= 0.2 + 1e-9} <= {1.0}
    assert re.search(r"Overall\s*│\s*0\.400 ", result.output) and re.search(r"NCL\.\s*│\s*0\.333 ", result.output)
    assert "PRMScore's CIs may reach 0.000" in " ".join(result.output.split())  # why a CI starts at 0


DATA_ENV = "RMBENCH_PRMBENCH_DATA"


@pytest.mark.skipif(not os.environ.get(DATA_ENV), reason=f"{DATA_ENV} is not set: point it at PRMBench's data "
                    "folder (mr_eval/tasks/prmtest_classified/data of ssmisya/PRMBench at a1ae4ea, not shipped here)")
def test_scores_on_prmbenchs_own_data_equal_its_code():
    """The whole benchmark (its 25 files) read as the github source reads them, scored with random
    step scores, against PRMBench's loader and evaluate_function on the same files."""
    folder = Path(os.environ[DATA_ENV])
    files = sorted(str(p) for p in folder.glob("*.jsonl"))
    assert len(files) == 25
    task = PRMBenchTask(source="github", paths=files)
    groups = list(task.groups())
    raw = [json.loads(line) for f in files for line in open(f)]
    meta = official.load_data_function(raw)
    assert len(raw) == 6216 and sorted(g.id for g in groups) == sorted(m["idx"] for m in meta)
    rewards = np.random.default_rng(0).random(sum(len(g.responses) for g in groups))
    res = official_report(meta, groups, rewards, 0.5)
    ours = records(task, groups, rewards)
    assert ours["prmbench_score", None] == pytest.approx(official.get_prmscore_from_current_res_dict(res), abs=1e-9)
    for category, types in CATEGORIES:
        assert ours["prmbench_score", category] == pytest.approx(
            official.get_avg_prmscore_from_current_res_dict(res, [k for k, _ in types]), abs=1e-9)


def test_a_prmbench_file_given_to_processbench_says_which_options_read_it(tmp_path):
    """The mix-up's hint is in command-line terms: the options that read the file as PRMBench."""
    from rmbench.tasks.processbench import ProcessBenchTask

    f = tmp_path / "prm.jsonl"
    f.write_text(json.dumps({"idx": "p1", "classification": "circular", "modified_question": "q",
                             "modified_process": ["a", "b"], "error_steps": [2]}) + "\n")
    with pytest.raises(DataError) as err:
        list(ProcessBenchTask(path=str(f)).groups())
    message = str(err.value)
    assert "looks like PRMBench rows" in message and f"--tasks prmbench --data prmbench={f}" in message, message
    assert "args path" not in message and "\n" not in message
