"""JudgeBench: the official accuracy by hand, the loader on files in JudgeBench's schema (local, the
hub path, the pinned GitHub files through RMBENCH_MIRROR), its errors, and a run end to end.

Every file is written here in JudgeBench's published schema (``pair_id``, ``original_id``,
``source``, ``question``, ``response_model``, ``response_A``, ``response_B``, ``label``); no row
of the real data is copied. The formula is written out independently of JudgeBench's code
(``ScalerLab/JudgeBench`` at e2c52c2: ``utils/metrics.py::compute_final_metrics``,
``run_judge.py::main``, the reward-model judges' ``get_judgment`` in ``utils/judges.py``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

import rmbench
from rmbench.catalog import load_catalog
from rmbench.core.judgebench import (
    JUDGEBENCH_CATEGORIES,
    combined_verdicts,
    decision_verdict,
    judgebench_accuracies,
    judgebench_category,
    judgebench_correct,
    judgebench_scores,
    reward_model_verdicts,
    reward_verdicts,
)
from rmbench.core.metric_registry import metric_def
from rmbench.errors import DataError
from rmbench.tasks import downloads
from rmbench.tasks.judgebench import JUDGEBENCH_COMMIT, JUDGEBENCH_FILES, JudgeBenchTask
from rmbench.tasks.loading import load_groups, load_task, task_spec_with_args, task_spec_with_data

REPO = Path(__file__).resolve().parents[2]
GPT = "gpt-4o-2024-05-13"
CLAUDE = "claude-3-5-sonnet-20240620"


def row(i, source="mmlu-pro-law", label="A>B", a=None, b=None, model=GPT, **extra):
    out = {"pair_id": f"p{i}", "original_id": i if i % 2 else None, "source": source, "question": f"question {i}?",
           "response_model": model, "response_A": a if a is not None else f"answer A {i}",
           "response_B": b if b is not None else f"answer B {i}", "label": label}
    out.update(extra)
    return out


def write_lines(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def accuracy(correct):
    return sum(correct) / len(correct)


# --- the formula by hand ---------------------------------------------------------------------

def test_categories_are_run_judge_prefixes():
    # run_judge.py::main loops over ["mmlu-pro", "livebench-reasoning", "livebench-math", "livecodebench", ""]
    # with x["source"].startswith(prefix): mmlu-pro-math is knowledge, not math.
    assert [judgebench_category(s) for s in ("mmlu-pro-law", "mmlu-pro-computer science", "mmlu-pro-math",
                                             "livebench-reasoning", "livebench-math", "livecodebench")] == [
        "knowledge", "knowledge", "knowledge", "reasoning", "math", "coding"]
    assert judgebench_category("arena-hard") is None and judgebench_category("livebench") is None


def test_a_reward_tie_is_b_better_in_one_game():
    # utils/judges.py, every reward_model judge's get_judgment: 'A>B' if score_A > score_B else 'B>A'
    assert reward_verdicts([2.0, 1.0, 1.5], [1.0, 2.0, 1.5]).tolist() == [1, -1, -1]
    assert reward_model_verdicts([2.0, 1.0, 1.5], [1.0, 2.0, 1.5]).tolist() == [1, -1, -1]
    # both orders (run_judge.py without --single_game): the game (B, A) at a tie also says "B>A", i.e.
    # A better once flipped back, so the two games disagree: verdict 0
    assert reward_model_verdicts([2.0, 1.0, 1.5], [1.0, 2.0, 1.5], single_game=False).tolist() == [1, -1, 0]


def test_single_game_accuracy_by_hand():
    # utils/metrics.py::compute_final_metrics, reverse_order=False: correct iff decision == label, over all pairs
    decisions = ["A>B", "B>A", "A=B", None, "B>A"]
    labels = ["A>B", "A>B", "A>B", "B>A", "B>A"]
    v = combined_verdicts([decision_verdict(d) for d in decisions])
    assert v.tolist() == [1, -1, 0, 0, -1]
    correct = judgebench_correct(v, labels)
    assert correct.tolist() == [1, 0, 0, 0, 1]  # a tie (A=B) and a failed judgment (None) are wrong
    assert judgebench_scores(v, labels, ["mmlu-pro-law"] * 5) == {None: 2 / 5, "knowledge": 2 / 5}


def test_two_games_inconsistent_and_tie_decisions_are_wrong():
    # utils/metrics.py::compute_final_metrics, reverse_order=True: decision2 = flip_judgment(game 2); counter = +1 per
    # decision equal to the label, -1 per decision equal to the flipped label; correct iff counter > 0
    first = ["A>B", "A>B", "A>B", "A=B", "A=B", None, "B>A"]
    second_shown_b_first = ["B>A", "A>B", "A=B", "B>A", "A=B", "B>A", "B>A"]  # game (B, A): "B>A" means A better
    label = "A>B"
    v = combined_verdicts([decision_verdict(d) for d in first],
                          [-decision_verdict(d) for d in second_shown_b_first])  # flipped back to (A, B)
    # counters by hand: +2, 0 (inconsistent), +1 (win vs tie), +1, 0 (two ties), +1 (None vs win), 0 (inconsistent)
    assert v.tolist() == [1, 0, 1, 1, 0, 1, 0]
    assert judgebench_correct(v, [label] * 7).tolist() == [1, 0, 1, 1, 0, 1, 0]
    assert judgebench_scores(v, [label] * 7, ["livecodebench"] * 7) == {None: 4 / 7, "coding": 4 / 7}


def test_overall_is_over_pairs_not_the_mean_of_categories():
    # run_judge.py::main: the overall line is compute_final_metrics over every pair (prefix ""), 100 * correct / pairs
    sources = ["mmlu-pro-law"] * 4 + ["livebench-math"] * 1 + ["livecodebench"] * 3
    labels = ["A>B", "B>A", "A>B", "A>B", "B>A", "A>B", "A>B", "B>A"]
    verdicts = [1, -1, -1, -1, 1, 1, 1, 1]
    # knowledge: pairs 1, 2 right of 4 = 0.5; math: 0 of 1; coding: 2 of 3; reasoning: no pairs
    assert judgebench_scores(verdicts, labels, sources) == pytest.approx(
        {None: 4 / 8, "knowledge": 2 / 4, "math": 0.0, "coding": 2 / 3})
    assert (0.5 + 0 + 2 / 3) / 3 != pytest.approx(4 / 8)  # the mean of categories would differ


def test_accuracies_take_resample_weights_and_leave_empty_categories_nan():
    correct = [1, 0, 1, 1]
    category_of = [0, 0, 2, 3]
    acc = judgebench_accuracies(correct, category_of)
    assert acc[0] == 0.75 and acc[1] == 0.5 and np.isnan(acc[2]) and acc[3] == 1.0 and acc[4] == 1.0
    # pair 1 (wrong) drawn twice, pair 0 never: knowledge 0/2, overall 2/4
    weighted = judgebench_accuracies(correct, category_of, weights=[0, 2, 1, 1])
    assert weighted[0] == 0.5 and weighted[1] == 0.0
    assert judgebench_accuracies(correct, [-1, 0, 0, 0])[0] == 0.75  # a pair in no category counts overall only


def test_the_metric_is_declared_official():
    m = metric_def("judgebench_score")
    assert m.official and m.higher_is_better and not m.eps_dependent


# --- the loader --------------------------------------------------------------------------------

def test_each_row_is_a_pair_a_then_b_with_the_label_as_utilities(tmp_path):
    path = write_lines(tmp_path / "jb.jsonl", [row(1, "mmlu-pro-math", "A>B"), row(2, "livebench-reasoning", "B>A"),
                                                row(3, "livebench-math"), row(4, "livecodebench", "B>A")])
    groups = list(JudgeBenchTask(path=str(path)).groups())
    assert [g.id for g in groups] == ["p1", "p2", "p3", "p4"]
    assert [g.subset for g in groups] == ["knowledge", "reasoning", "math", "coding"]
    assert [g.utilities for g in groups] == [(1, 0), (0, 1), (1, 0), (0, 1)]
    assert groups[1].responses == ("answer A 2", "answer B 2") and groups[1].prompt == "question 2?"
    assert groups[0].meta_dict == {"pair_id": "p1", "original_id": 1, "source": "mmlu-pro-math", "response_model": GPT}
    assert groups[1].meta_dict["original_id"] is None
    assert all(g.specificity_pairs() == [] for g in groups)


def test_identical_responses_are_kept(tmp_path):
    # the published claude set has one pair whose two responses are the same text, labelled B>A
    path = write_lines(tmp_path / "jb.jsonl", [row(1, "livecodebench", "B>A", a="same", b="same", model=CLAUDE)])
    (g,) = JudgeBenchTask(path=str(path), split="claude").groups()
    assert g.responses == ("same", "same") and g.utilities == (0, 1)


def test_bad_rows_name_file_line_and_field(tmp_path):
    cases = {
        "label": (row(2, label="A=B"), r"line 2, field 'label'.*'A=B'.*A>B or B>A"),
        "source": (row(2, source="arena-hard"), r"line 2, field 'source'.*'arena-hard'.*mmlu-pro-\*"),
        "pair_id": (row(1), r"line 2, field 'pair_id'.*duplicate"),
        "response_B": ({k: v for k, v in row(2).items() if k != "response_B"}, r"line 2, field 'response_B'.*missing"),
        "response_A": (row(2, a=["not", "text"]), r"line 2, field 'response_A'.*expected a string"),
        "original_id": (row(2, original_id={"x": 1}), r"line 2, field 'original_id'"),
        "question": (row(2, question=None), r"line 2, field 'question'.*missing"),
    }
    for name, (bad, message) in cases.items():
        path = write_lines(tmp_path / f"{name}.jsonl", [row(1), bad])
        with pytest.raises(DataError, match=rf"{name}.jsonl, {message}"):
            list(JudgeBenchTask(path=str(path)).groups())


def test_a_row_of_another_format_says_it_is_not_judgebench(tmp_path):
    path = write_lines(tmp_path / "pairs.jsonl", [{"prompt": "q", "chosen": "a", "rejected": "b"}])
    with pytest.raises(DataError, match=r"line 1, field 'pair_id'.*missing; this task reads JudgeBench rows.*"
                                        r"looks like preference pairs"):
        list(JudgeBenchTask(path=str(path)).groups())


def test_the_other_response_set_is_refused_unless_the_split_says_so(tmp_path):
    path = write_lines(tmp_path / "claude.jsonl", [row(1, model=CLAUDE)])
    with pytest.raises(DataError, match=r"line 1, field 'response_model'.*claude set.*--task-arg split=claude"):
        list(JudgeBenchTask(path=str(path)).groups())
    assert len(list(JudgeBenchTask(path=str(path), split="claude").groups())) == 1
    mine = write_lines(tmp_path / "mine.jsonl", [row(1, model="my-model"), row(2, model=None)])
    assert len(list(JudgeBenchTask(path=str(mine)).groups())) == 2  # any other model: a JudgeBench-format file


def test_bad_arguments_are_refused():
    for kwargs, message in (({"split": "llama"}, "gpt and claude"), ({"source": "web"}, "hub.*or github"),
                            ({"single_game": "yes"}, "true or false"), ({"source": "github", "paths": {}}, "no file")):
        with pytest.raises(ValueError, match=message):
            JudgeBenchTask(**kwargs)


def test_skip_bad_rows_leaves_a_bad_row_out(tmp_path):
    path = write_lines(tmp_path / "jb.jsonl", [row(1), row(2, label="tie"), row(3, "livecodebench")])
    spec = task_spec_with_data(load_catalog().task_spec("judgebench"), str(path))
    _, groups, bad = load_task(spec, skip_bad_rows=True)
    assert [g.id for g in groups] == ["p1", "p3"] and len(bad) == 1 and bad[0].field == "label"


# --- where the data comes from ---------------------------------------------------------------

def entry():
    return load_catalog([REPO / "tasks"], builtin=False).task_spec("judgebench")


def test_the_entry_reads_the_hub_split_and_pins_the_github_files():
    spec = entry()
    args = spec.args_dict
    assert spec.kind == "judgebench" and args["dataset"] == "ScalerLab/JudgeBench" and args["split"] == "gpt"
    assert args["source"] == "hub" and args["paths"] == JUDGEBENCH_FILES  # the entry and the kind's default agree
    for split, model in (("gpt", GPT), ("claude", CLAUDE)):
        remote = downloads.parse_remote(args["paths"][split])
        assert remote.url == (f"https://raw.githubusercontent.com/ScalerLab/JudgeBench/{JUDGEBENCH_COMMIT}/data/"
                              f"dataset=judgebench,response_model={model}.jsonl")
        assert len(remote.sha256) == 64


def test_the_hub_path_loads_the_split_through_datasets(monkeypatch):
    datasets = pytest.importorskip("datasets")
    calls = []

    def fake_load(name, config=None, split=None, revision=None, data_files=None):
        calls.append((name, config, split, revision, data_files))
        return [row(1, model=CLAUDE), row(2, "livebench-math", "B>A", model=CLAUDE)]

    monkeypatch.setattr("rmbench.hub.unreachable", lambda: None)
    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    spec = task_spec_with_args(entry(), {"split": "claude"})
    _, groups = load_groups(spec)
    assert calls == [("ScalerLab/JudgeBench", None, "claude", "main", None)]
    assert [g.subset for g in groups] == ["knowledge", "math"]


def test_offline_the_hub_fails_in_one_line_naming_both_ways_out(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(DataError, match=r"could not load the dataset from the hub.*--data TASK=PATH.*"
                                        r"--task-arg source=github") as info:
        load_groups(entry())
    assert "\n" not in str(info.value) and "ScalerLab/JudgeBench" in str(info.value)


def test_the_github_files_come_through_the_mirror_and_a_wrong_file_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    body = "".join(json.dumps(row(i, model=CLAUDE)) + "\n" for i in range(3)).encode()
    remote = downloads.parse_remote(JUDGEBENCH_FILES["claude"])
    mirrored = tmp_path / "mirror" / downloads.mirror_tail(remote.url)
    mirrored.parent.mkdir(parents=True)
    mirrored.write_bytes(body)
    monkeypatch.setenv(downloads.MIRROR_ENV, str(tmp_path / "mirror"))
    spec = task_spec_with_args(entry(), {"split": "claude", "source": "github"})
    # the synthetic file is not the published one: its sha256 differs and nothing is cached
    with pytest.raises(DataError, match=rf"has sha256 {hashlib.sha256(body).hexdigest()}, not the declared "
                                        rf"{remote.sha256}.*not kept"):
        load_groups(spec)
    assert not downloads.is_cached(remote)
    # the same mechanism with the synthetic file's own checksum (an entry pinning it) reads it
    pinned = f"{remote.url}#sha256={hashlib.sha256(body).hexdigest()}"
    spec = task_spec_with_args(spec, {"paths": {"claude": pinned}})
    _, groups = load_groups(spec)
    assert [g.id for g in groups] == ["p0", "p1", "p2"]
    assert downloads.is_cached(downloads.parse_remote(pinned))


# --- end to end --------------------------------------------------------------------------------

def by_hand(rows, single_game=True):
    """JudgeBench's report for the length model, written out with loops (independent of the task)."""
    report = {}
    prefixes = {"knowledge": "mmlu-pro", "reasoning": "livebench-reasoning", "math": "livebench-math",
                "coding": "livecodebench", None: ""}
    for name, prefix in prefixes.items():
        mine = [r for r in rows if r["source"].startswith(prefix)]
        if not mine:
            continue
        right = 0
        for r in mine:
            a, b = len(r["response_A"]), len(r["response_B"])
            if single_game:
                decision = "A>B" if a > b else "B>A"  # a tie is B>A
            else:
                first = "A>B" if a > b else "B>A"
                second = "B>A" if b > a else "A>B"  # game (B, A), flipped back: its tie says A>B
                decision = first if first == second else "inconsistent"
            right += decision == r["label"]
        report[name] = right / len(mine)
    return report


ROWS = [
    row(1, "mmlu-pro-law", "A>B", a="a long and right answer", b="short"),
    row(2, "mmlu-pro-math", "B>A", a="wrong but long answer", b="right"),
    row(3, "mmlu-pro-health", "B>A", a="same", b="size"),          # a tie: B>A, so right in one game
    row(4, "livebench-reasoning", "A>B", a="tie!", b="tie?"),      # a tie: B>A, so wrong
    row(5, "livebench-reasoning", "B>A", a="x", b="the longer one"),
    row(6, "livebench-math", "A>B", a="22", b="1"),
    row(7, "livecodebench", "A>B", a="def f(): return 1", b="pass"),
    row(8, "livecodebench", "B>A", a="def g():\n  pass", b="def g(): return 2"),
]


def test_a_run_records_the_official_scores_per_category(tmp_path):
    path = write_lines(tmp_path / "dataset=judgebench,response_model=gpt-4o-2024-05-13.jsonl", ROWS)
    out = tmp_path / "run"
    rmbench.evaluate(rmbench.EvalConfig(model="length", tasks=("judgebench",), data=(("judgebench", str(path)),),
                                        n_bootstrap=20), out_dir=out)
    expected = by_hand(ROWS)
    # by hand: knowledge rows 1, 2, 3 -> right, wrong, right (tie, B>A) = 2/3; reasoning 4, 5 -> wrong, right = 1/2;
    # math 6 -> right; coding 7 right, 8: lengths 16 vs 17 -> B>A right = 1; overall 6/8
    assert expected == pytest.approx({"knowledge": 2 / 3, "reasoning": 1 / 2, "math": 1.0, "coding": 1.0, None: 6 / 8})
    record = rmbench.read_run(out)
    for subset, value in expected.items():
        m = record.metric("judgebench", "judgebench_score", subset=subset)
        assert m.value == pytest.approx(value, abs=1e-12), subset
        assert m.ci_low <= m.value <= m.ci_high
    assert record.metric("judgebench", "judgebench_score", subset="coding").n == 2
    assert record.task("judgebench").official.metric == "judgebench_score"
    assert [c.label for c in record.task("judgebench").official.columns] == [
        "Knowledge", "Reasoning", "Math", "Coding", "Overall"]
    # rmbench's own accuracy counts the two ties 1/2 each: 5 right + 2 halves of 8
    assert record.value("judgebench", "pairwise_accuracy") == pytest.approx(6 / 8)
    results = json.loads((out / "results.json").read_text())
    task = results["tasks"][0]
    assert task["args"]["split"] == "gpt" and task["args"]["path"] == str(path.resolve())
    assert {m["subset"] for m in task["metrics"] if m["metric"] == "judgebench_score"} == {
        None, *JUDGEBENCH_CATEGORIES}


def test_both_orders_count_a_tie_wrong_end_to_end(tmp_path):
    path = write_lines(tmp_path / "jb.jsonl", ROWS)
    res = rmbench.evaluate(rmbench.EvalConfig(model="length", tasks=("judgebench",), data=(("judgebench", str(path)),),
                                              task_args=(("single_game", False),), n_bootstrap=0))
    expected = by_hand(ROWS, single_game=False)
    assert expected["knowledge"] == pytest.approx(1 / 3) and expected[None] == pytest.approx(5 / 8)
    for subset, value in expected.items():
        assert res.value("judgebench", "judgebench_score", subset=subset) == pytest.approx(value, abs=1e-12)


def test_the_cli_reads_a_file_named_as_judgebench_names_its_files(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from rmbench.cli.app import app

    name = "dataset=judgebench,response_model=claude-3-5-sonnet-20240620.jsonl"
    write_lines(tmp_path / name, [dict(r, response_model=CLAUDE) for r in ROWS])
    monkeypatch.chdir(tmp_path)  # the file name holds '=': --data judgebench=NAME still reads it as a path
    result = CliRunner().invoke(app, ["eval", "--model", "length", "--tasks", "judgebench", "--data",
                                      f"judgebench={name}", "--task-arg", "split=claude", "--bootstrap", "0",
                                      "--out", str(tmp_path / "run")], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "JudgeBench" in result.output and "Knowledge" in result.output
    record = rmbench.read_run(tmp_path / "run")
    assert record.value("judgebench", "judgebench_score") == pytest.approx(6 / 8)
    assert record.task("judgebench").args["split"] == "claude"
