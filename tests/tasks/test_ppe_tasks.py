"""PPE (Preference Proxy Evaluations, arXiv 2410.14872): the exact best-of-K curve against brute
force, the correctness and human-preference loaders on files in the hub schema (local files, a
folder, the hub path through a stand-in for ``datasets``), their errors, and runs end to end
whose official numbers are checked against a hand computation.

Every file is written here in the published schemas (``lmarena-ai/PPE-*-Best-of-K``:
``question_id``, ``model_name``, ``prompt``, ``scores``, ``response_1..N``,
``sampled_conflict_pairs``; ``lmarena-ai/PPE-Human-Preference-V1``: ``question_id``,
``model_a``, ``model_b``, ``winner``, ``prompt``, ``response_1``, ``response_2``, ``language``
and the category flags); no row of the real data is copied.
"""

from __future__ import annotations

import itertools
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rmbench
from rmbench.catalog import load_catalog
from rmbench.core.best_of_k import (
    best_of_k_curves,
    conflict_pair_counts,
    curve_gap,
    oracle_curves,
    pick_probabilities,
    ratio_table,
)
from rmbench.core.metric_registry import metric_def
from rmbench.core.types import Message
from rmbench.errors import DataError
from rmbench.tasks.loading import load_groups, load_task, task_spec_with_args, task_spec_with_data
from rmbench.tasks.ppe import (
    PPE_DATASETS,
    PPE_SETS,
    PPECorrectnessTask,
    parse_subsets,
    ppe_correctness_layout,
    set_from_columns,
    set_from_name,
)
from rmbench.tasks.ppe_human import PPE_HUMAN_DATASET, PPE_HUMAN_LAYOUT, PPEHumanTask
from rmbench.tasks.sources import data_status
from tests.tasks.test_rmb_task import leaderboard_from_disk

REPO = Path(__file__).resolve().parents[2]


# --- best-of-K by brute force ------------------------------------------------------------------

def brute_best_of_k(rewards, correct, k):
    """E[correct(pick)] over every K-subset, the pick uniform among the subset's top rewards."""
    total, count = Fraction(0), 0
    for subset in itertools.combinations(range(len(rewards)), k):
        top = max(rewards[i] for i in subset)
        tied = [i for i in subset if rewards[i] == top]
        total += Fraction(sum(int(correct[i]) for i in tied), len(tied))
        count += 1
    return total / count


def brute_oracle(correct, k):
    subsets = list(itertools.combinations(range(len(correct)), k))
    return Fraction(sum(any(correct[i] for i in s) for s in subsets), len(subsets))


def test_a_hand_computed_curve_and_gap():
    # rewards 3 > 2 > 1 on answers wrong, right, right: K=1 picks at random (2/3); K=2 picks answer 0 unless
    # the pair is {1, 2} (1 of 3 pairs): 1/3; K=3 always answer 0: 0. The oracle: 2/3, 1, 1.
    model = best_of_k_curves([3.0, 2.0, 1.0], [0, 1, 1], [3])[0]
    oracle = oracle_curves([0, 1, 1], [3])[0]
    assert model == pytest.approx([2 / 3, 1 / 3, 0.0], abs=1e-15)
    assert oracle == pytest.approx([2 / 3, 1.0, 1.0], abs=1e-15)
    assert curve_gap(model, oracle) == pytest.approx((0 + 2 / 3 + 1) / 3)


def test_tied_rewards_pick_uniformly_among_the_top():
    # all rewards equal: every K picks a uniformly random answer, so the curve stays at the mean
    assert best_of_k_curves([5.0] * 4, [1, 0, 0, 0], [4])[0] == pytest.approx([0.25] * 4)
    # two answers tied at the top, one right: K=3 always draws both of them, 1/2; K=2 draws both (1 of 3 pairs
    # that hold one of them... enumerated): checked against brute force
    r, c = [2.0, 2.0, 1.0], [1, 0, 1]
    got = best_of_k_curves(r, c, [3])[0]
    assert [Fraction(x).limit_denominator(100) for x in got] == [brute_best_of_k(r, c, k) for k in (1, 2, 3)]
    assert got[2] == pytest.approx(0.5)


def test_the_curve_equals_brute_force_on_random_small_groups():
    rng = np.random.default_rng(7)
    for _ in range(60):
        sizes = rng.integers(1, 7, size=rng.integers(1, 4))
        rewards = rng.integers(0, 3, size=sizes.sum()).astype(float)  # few values: many ties
        correct = rng.integers(0, 2, size=sizes.sum())
        got, oracle = best_of_k_curves(rewards, correct, sizes), oracle_curves(correct, sizes)
        start = 0
        for g, n in enumerate(sizes):
            r, c = rewards[start:start + n], correct[start:start + n]
            for k in range(1, n + 1):
                assert got[g, k - 1] == pytest.approx(float(brute_best_of_k(r, c, k)), abs=1e-12)
                assert oracle[g, k - 1] == pytest.approx(float(brute_oracle(c, k)), abs=1e-12)
            assert np.isnan(got[g, n:]).all() and np.isnan(oracle[g, n:]).all()  # K past the group's answers
            start += n


def test_pick_probabilities_and_ratios():
    p = pick_probabilities(np.array([[1.0, 3.0, 3.0, 2.0, 0.5]]))
    assert p.sum(axis=1) == pytest.approx(np.ones((1, 5)))
    assert p[0, :, 0] == pytest.approx([0.2] * 5)  # K=1: uniform
    assert p[0, :, 4] == pytest.approx([0, 0.5, 0.5, 0, 0])  # K=n: the tied top answers, half each
    assert ratio_table(32, 32)[32, 16] == 1.0 and ratio_table(32, 32)[31, 32] == 0.0
    assert ratio_table(60, 30)[50, 30] == pytest.approx(float(Fraction(*_binoms(50, 60, 30))), rel=1e-13)
    with pytest.raises(ValueError, match="NaN"):
        best_of_k_curves([1.0, float("nan")], [1, 0], [2])
    with pytest.raises(ValueError, match="sizes add up"):
        best_of_k_curves([1.0, 2.0], [1, 0], [3])


def _binoms(t, n, k):
    from math import comb
    return comb(t, k), comb(n, k)


def test_conflict_pair_counts_by_hand():
    # prompt 0: correct answers 0 (r=3), 2 (r=1); incorrect 1 (r=1), 3 (r=2): pairs (0,1) right, (0,3) right,
    # (2,1) tie, (2,3) wrong. Prompt 1: all correct, no pair.
    wins, ties, total = conflict_pair_counts([3, 1, 1, 2, 5, 5], [1, 0, 1, 0, 1, 1], [4, 2])
    assert wins.tolist() == [2, 0] and ties.tolist() == [1, 0] and total.tolist() == [4, 0]


groups_strategy = st.lists(st.tuples(st.integers(0, 4), st.booleans()), min_size=1, max_size=9)


@settings(max_examples=150, deadline=None)
@given(groups_strategy, st.floats(0.01, 100.0), st.floats(-50.0, 50.0))
def test_curve_properties(answers, scale, shift):
    rewards = np.array([float(r) for r, _ in answers])
    correct = np.array([int(c) for _, c in answers])
    n = len(answers)
    curve = best_of_k_curves(rewards, correct, [n])[0]
    oracle = oracle_curves(correct, [n])[0]
    assert curve[0] == pytest.approx(correct.mean())  # K=1: a random answer
    assert oracle[0] == pytest.approx(correct.mean())
    assert np.all(np.diff(oracle) >= -1e-12)  # the oracle never loses by seeing more answers
    assert np.all(oracle >= curve - 1e-12)  # and no reward model beats it
    assert np.all((curve >= -1e-12) & (curve <= 1 + 1e-12))
    # only the order of rewards matters: a positive affine or any increasing map gives the same curve
    assert best_of_k_curves(rewards * scale + shift, correct, [n])[0] == pytest.approx(curve, abs=1e-12)
    assert best_of_k_curves(np.exp(rewards / 4), correct, [n])[0] == pytest.approx(curve, abs=1e-12)
    # the oracle is the best-of-K of rewards = correctness
    assert best_of_k_curves(correct.astype(float), correct, [n])[0] == pytest.approx(oracle, abs=1e-12)


# --- the correctness loader ------------------------------------------------------------------------

def crow(qid, scores, texts=None, model="m1", pairs=..., **extra):
    """A row of a PPE-*-Best-of-K set (the hub schema)."""
    texts = texts or [f"answer {k} to {qid}" for k in range(len(scores))]
    row = {"question_id": qid, "model_name": model, "prompt": f"question {qid}?", "scores": list(scores),
           "mean_score": sum(scores) / len(scores)}
    row.update({f"response_{k + 1}": t for k, t in enumerate(texts)})
    if pairs is ...:
        pairs = [[i, j] for i in range(len(scores)) for j in range(len(scores)) if scores[i] and not scores[j]][:2]
    if pairs is not None:
        row["sampled_conflict_pairs"] = pairs
    row.update(extra)
    return row


def write_lines(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_row_is_a_group_of_its_answers_with_equal_utility_pairs(tmp_path):
    path = write_lines(tmp_path / "math.jsonl", [crow("q1", [True, False, True, False], pairs=[[0, 1]])])
    (g,) = PPECorrectnessTask(path=str(path)).groups()
    assert g.id == "math:q1:m1" and g.subset == "math" and g.utilities == (1, 0, 1, 0)
    assert g.responses[2] == "answer 2 to q1" and g.prompt == "question q1?"
    assert g.specificity_pairs() == [(0, 2), (1, 3)]  # equally correct and equally wrong answers
    assert len(g.discrimination_pairs()) == 4
    assert g.meta_dict == {"question_id": "q1", "model_name": "m1", "answers": 4, "sampled_conflict_pairs": [[0, 1]]}


def test_the_set_comes_from_the_file_name_the_columns_or_the_one_set_named(tmp_path):
    assert set_from_name("PPE-MMLU-Pro-Best-of-K.parquet") == "mmlu_pro"
    assert set_from_name("mbpp_plus.jsonl") == "mbpp_plus" and set_from_name("gpqa/train.parquet") == "gpqa"
    assert set_from_name("rows.jsonl") is None and set_from_name("math_and_gpqa.jsonl") is None
    assert set_from_columns({"correct_choice_index": 1}) == "gpqa"
    assert set_from_columns({"answer_index": 1, "options": []}) == "mmlu_pro"
    assert parse_subsets("MMLU-Pro, mbpp_plus") == ("mmlu_pro", "mbpp_plus")
    rows = tmp_path / "rows.jsonl"
    write_lines(rows, [crow("a", [1, 0], instruction_id_list=["x"]), crow("b", [0, 1], test_list=["assert f()"])])
    assert [g.subset for g in PPECorrectnessTask(path=str(rows)).groups()] == ["ifeval", "mbpp_plus"]
    plain = write_lines(tmp_path / "plain.jsonl", [crow("a", [1, 0])])
    assert [g.subset for g in PPECorrectnessTask(path=str(plain), subsets="gpqa").groups()] == ["gpqa"]
    with pytest.raises(DataError, match=r"plain.jsonl, line 1: cannot tell which PPE set.*--task-arg subsets"):
        list(PPECorrectnessTask(path=str(plain)).groups())


def test_a_folder_reads_every_file_and_subsets_picks_sets(tmp_path):
    write_lines(tmp_path / "ppe" / "math.jsonl", [crow("1", [1, 0]), crow("2", [0, 1])])
    write_lines(tmp_path / "ppe" / "PPE-GPQA-Best-of-K" / "data" / "train.jsonl", [crow("1", [1, 1, 0])])
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa
    pq.write_table(pa.Table.from_pylist([crow("7", [True, False, False])]), tmp_path / "ppe" / "ifeval.parquet")
    spec = task_spec_with_data(load_catalog([REPO / "tasks"], builtin=False).task_spec("ppe_correctness"),
                               str(tmp_path / "ppe"))
    assert spec.args_dict["path"] == str((tmp_path / "ppe").resolve()) and "dataset" not in spec.args_dict
    task, groups = load_groups(spec)
    assert sorted(g.id for g in groups) == ["gpqa:1:m1", "ifeval:7:m1", "math:1:m1", "math:2:m1"]
    assert [c.label for c in task.official.columns] == ["MMLU-Pro", "MATH", "GPQA", "IFEval", "MBPP-Plus", "Mean"]
    task, groups = load_groups(task_spec_with_args(spec, {"subsets": "math,ifeval"}))
    assert sorted(g.subset for g in groups) == ["ifeval", "math", "math"]
    assert [c.label for c in task.official.columns] == ["MATH", "IFEval", "Mean"]


def test_a_csv_file_holds_lists_as_json(tmp_path):
    path = tmp_path / "gpqa.csv"
    path.write_text('question_id,prompt,scores,response_1,response_2,sampled_conflict_pairs\n'
                    'q9,"2+2?","[true, false]",4,5,"[[0, 1]]"\n')
    (g,) = PPECorrectnessTask(path=str(path)).groups()
    assert g.utilities == (1, 0) and g.responses == ("4", "5") and g.meta_dict["sampled_conflict_pairs"] == [[0, 1]]


BAD = {
    "scores": (dict(crow("2", [1, 0]), scores="yes"), r"line 2, field 'scores'.*list of booleans"),
    "scores_item": (dict(crow("2", [1, 0]), scores=[True, "x"]), r"line 2, field 'scores'.*item 1"),
    "response_2": ({k: v for k, v in crow("2", [1, 0]).items() if k != "response_2"},
                   r"line 2, field 'response_2'.*missing"),
    "pairs_index": (crow("2", [1, 0], pairs=[[0, 5]]), r"line 2, field 'sampled_conflict_pairs'.*0 to 1"),
    "pairs_same": (crow("2", [1, 1, 0], pairs=[[0, 1]]), r"line 2, field 'sampled_conflict_pairs'.*not a conflict"),
    "pairs_shape": (crow("2", [1, 0], pairs=[[0]]), r"line 2, field 'sampled_conflict_pairs'.*item 0"),
    "question_id": (crow("1", [1, 0]), r"line 2, field 'question_id'.*duplicate"),
    "one_answer": (crow("2", [1]), r"line 2, field 'scores'.*has 1 answer"),
    "prompt": (crow("2", [1, 0], prompt=None), r"line 2, field 'prompt'.*missing"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_correctness_rows_name_file_line_and_field(tmp_path, name):
    bad, message = BAD[name]
    path = write_lines(tmp_path / f"math_{name}.jsonl", [crow("1", [1, 0]), bad])
    with pytest.raises(DataError, match=rf"math_{name}.jsonl, {message}"):
        list(PPECorrectnessTask(path=str(path)).groups())


def test_a_row_of_another_format_says_what_the_task_reads(tmp_path):
    path = write_lines(tmp_path / "math.jsonl", [{"prompt": "q", "chosen": "a", "rejected": "b"}])
    with pytest.raises(DataError, match=r"line 1, field 'scores'.*missing; this task reads PPE correctness rows.*"
                                        r"looks like preference pairs"):
        list(PPECorrectnessTask(path=str(path)).groups())


def test_bad_arguments_are_refused():
    for kwargs, message in (({"subsets": "aime"}, "not one of PPE's"), ({"subsets": ","}, "empty"),
                            ({"pairs": "some"}, "sampled.*or all"), ({"dataset": {"math": "x/y"}}, "no hub id")):
        with pytest.raises(ValueError, match=message):
            PPECorrectnessTask(**kwargs)
    with pytest.raises(ValueError, match="bothbad"):
        PPEHumanTask(bothbad="drop")


def test_skip_bad_rows_leaves_a_bad_row_out(tmp_path):
    rows = [crow("1", [1, 0]), dict(crow("2", [1, 0]), scores=3), crow("3", [0, 1])]
    path = write_lines(tmp_path / "math.jsonl", rows)
    spec = task_spec_with_data(load_catalog().task_spec("ppe_correctness"), str(path))
    _, groups, bad = load_task(spec, skip_bad_rows=True)
    assert [g.id for g in groups] == ["math:1:m1", "math:3:m1"] and bad[0].field == "scores"


# --- the hub path, through a stand-in for datasets ------------------------------------------------

def test_the_entries_name_the_hub_datasets():
    catalog = load_catalog([REPO / "tasks"], builtin=False)
    args = catalog.task_spec("ppe_correctness").args_dict
    assert args["dataset"] == PPE_DATASETS and args["split"] == "train"
    assert PPE_DATASETS["mbpp_plus"] == "lmarena-ai/PPE-MBPP-Plus-Best-of-K"
    assert data_status(args) == "hub, 5 datasets: not cached"
    human = catalog.task_spec("ppe_human").args_dict
    assert human["dataset"] == PPE_HUMAN_DATASET == "lmarena-ai/PPE-Human-Preference-V1" and human["split"] == "test"


def test_the_hub_path_loads_each_set_through_datasets(monkeypatch):
    datasets = pytest.importorskip("datasets")
    calls = []

    def fake_load(name, config=None, split=None, revision=None, data_files=None):
        calls.append((name, split, revision))
        if "Human" in name:
            return [hrow("h1", "model_a"), hrow("h2", "tie")]
        return [crow("1", [True, False]), crow("2", [False, True])]  # no set columns: the dataset says which

    monkeypatch.setattr("rmbench.hub.unreachable", lambda: None)
    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    catalog = load_catalog([REPO / "tasks"], builtin=False)
    spec = task_spec_with_args(catalog.task_spec("ppe_correctness"), {"subsets": ["gpqa", "math"]})
    _, groups = load_groups(spec)
    assert calls == [("lmarena-ai/PPE-MATH-Best-of-K", "train", "main"),
                     ("lmarena-ai/PPE-GPQA-Best-of-K", "train", "main")]
    assert [g.id for g in groups] == ["math:1:m1", "math:2:m1", "gpqa:1:m1", "gpqa:2:m1"]
    calls.clear()
    _, groups = load_groups(catalog.task_spec("ppe_human"))
    assert calls == [("lmarena-ai/PPE-Human-Preference-V1", "test", "main")] and [g.utilities for g in groups] == [
        (1, 0), (0, 0)]


def test_offline_the_hub_fails_in_one_line(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(DataError, match=r"could not load the dataset from the hub.*--data TASK=PATH") as info:
        load_groups(load_catalog([REPO / "tasks"], builtin=False).task_spec("ppe_correctness"))
    assert "\n" not in str(info.value) and "PPE-MMLU-Pro-Best-of-K" in str(info.value)


# --- the human preference loader -------------------------------------------------------------------

def hrow(qid, winner, a="answer a", b="answer b", language="English", **extra):
    row = {"question_id": qid, "model_a": "model-x", "model_b": "model-y", "winner": winner, "prompt": f"ask {qid}",
           "response_1": a, "response_2": b, "language": language, "hard_prompt": False, "easy_prompt": False,
           "if_prompt": False, "math_prompt": False, "is_code": False, "conv_metadata": {"turns": 1}}
    row.update(extra)
    return row


def test_a_battle_is_a_pair_and_a_tie_a_specificity_pair(tmp_path):
    path = write_lines(tmp_path / "human.jsonl", [hrow("1", "model_a", hard_prompt=True), hrow("2", "model_b"),
                                                   hrow("3", "tie"), hrow("4", "tie (bothbad)", is_code=True)])
    groups = list(PPEHumanTask(path=str(path)).groups())
    assert [g.utilities for g in groups] == [(1, 0), (0, 1), (0, 0), (0, 0)]
    assert [len(g.specificity_pairs()) for g in groups] == [0, 0, 1, 1]
    assert groups[0].meta_dict == {"question_id": "1", "model_a": "model-x", "model_b": "model-y", "winner": "model_a",
                                   "language": "English", "categories": ["hard"], "turns": 1}
    assert groups[3].meta_dict["categories"] == ["code"]
    assert [g.id for g in PPEHumanTask(path=str(path), bothbad="exclude").groups()] == ["1", "2", "3"]


def test_a_human_csv_file_reads_its_flags_as_text(tmp_path):
    path = tmp_path / "human.csv"
    path.write_text("question_id,winner,prompt,response_1,response_2,language,hard_prompt,is_code\n"
                    "7,model_b,hi,a,b,English,True,\n")
    (g,) = PPEHumanTask(path=str(path)).groups()
    assert g.utilities == (0, 1) and g.meta_dict["categories"] == ["hard"]


def test_conversations_stay_conversations(tmp_path):
    conv = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "and now?"}]
    rows = [hrow("1", "model_a", prompt=conv), hrow("2", "model_b", prompt=json.dumps(conv)),
            hrow("3", "tie", prompt="ignored", a=conv + [{"role": "assistant", "content": "A"}],
                 b=conv + [{"role": "assistant", "content": "B"}])]
    path = write_lines(tmp_path / "human.jsonl", rows)
    groups = list(PPEHumanTask(path=str(path)).groups())
    want = (Message("user", "hi"), Message("assistant", "hello"), Message("user", "and now?"))
    assert [g.prompt for g in groups] == [want] * 3
    assert groups[2].responses == ("A", "B")


BAD_HUMAN = {
    "winner": (hrow("2", "both"), r"line 2, field 'winner'.*'both'.*model_a"),
    "response_2": ({k: v for k, v in hrow("2", "tie").items() if k != "response_2"},
                   r"line 2, field 'response_2'.*missing"),
    "is_code": (hrow("2", "tie", is_code="yes"), r"line 2, field 'is_code'.*true or false"),
    "question_id": (hrow("1", "tie"), r"line 2, field 'question_id'.*duplicate"),
    "sides": (hrow("2", "tie", a=[{"role": "user", "content": "u"}, {"role": "assistant", "content": "A1"},
                                  {"role": "user", "content": "v"}, {"role": "assistant", "content": "A2"}],
                   b=[{"role": "user", "content": "u"}, {"role": "assistant", "content": "B1"},
                      {"role": "user", "content": "v"}, {"role": "assistant", "content": "B2"}]),
              r"line 2, field 'response_2'.*differ before their last reply"),
}


@pytest.mark.parametrize("name", sorted(BAD_HUMAN))
def test_bad_human_rows_name_file_line_and_field(tmp_path, name):
    bad, message = BAD_HUMAN[name]
    path = write_lines(tmp_path / f"human_{name}.jsonl", [hrow("1", "model_a"), bad])
    with pytest.raises(DataError, match=rf"human_{name}.jsonl, {message}"):
        list(PPEHumanTask(path=str(path)).groups())


# --- end to end ----------------------------------------------------------------------------------

CORRECTNESS = {
    "math.jsonl": [
        # rewards (length) 4, 2, 2, 6; sampled pairs (0 right, 1 wrong): 4 > 2 right; (3 wrong, 2 right): 2 < 6 wrong
        crow("1", [True, False, True, False], ["aaaa", "bb", "cc", "dddddd"], pairs=[[0, 1], [3, 2]]),
        # no sampled pairs: every (right, wrong) pair, (1, 0) and (2, 0): 2 > 1 both right
        crow("2", [False, True, True], ["x", "yy", "zz"], pairs=None),
    ],
    "gpqa.jsonl": [
        # sampled pair (0 right, 2 wrong): lengths 4 and 4, a tie: 1/2
        crow("1", [True, True, False, False], ["same", "also", "four", "x"], pairs=[[0, 2]]),
    ],
}


def expected_correctness(files):
    """PPE's numbers for the length RM, with loops and brute-force enumeration (module doc of the task)."""
    sets = {}
    for name, rows in files.items():
        acc_hit = acc_n = 0.0
        curves = []
        for row in rows:
            n = len(row["scores"])
            r = [len(row[f"response_{k + 1}"]) for k in range(n)]
            c = [int(s) for s in row["scores"]]
            pairs = row.get("sampled_conflict_pairs") or [[i, j] for i in range(n) for j in range(n) if c[i] > c[j]]
            for i, j in pairs:
                good, bad = (i, j) if c[i] > c[j] else (j, i)
                acc_hit += 1.0 if r[good] > r[bad] else 0.5 if r[good] == r[bad] else 0.0
                acc_n += 1
            curves.append(([float(brute_best_of_k(r, c, k)) for k in range(1, n + 1)],
                           [float(brute_oracle(c, k)) for k in range(1, n + 1)]))
        k_max = max(len(m) for m, _ in curves)
        model = [np.mean([m[k] for m, _ in curves if len(m) > k]) for k in range(k_max)]
        oracle = [np.mean([o[k] for _, o in curves if len(o) > k]) for k in range(k_max)]
        sets[Path(name).stem] = (acc_hit / acc_n, model, float(np.mean(np.subtract(oracle, model))))
    return sets


def test_a_correctness_run_records_ppe_numbers_as_computed_by_hand(tmp_path):
    for name, rows in CORRECTNESS.items():
        write_lines(tmp_path / "ppe" / name, rows)
    out = tmp_path / "run"
    rmbench.evaluate(rmbench.EvalConfig(model="length", tasks=("ppe_correctness",),
                                        data=(("ppe_correctness", str(tmp_path / "ppe")),), eps=(0.0,),
                                        n_bootstrap=20), out_dir=out)
    sets = expected_correctness(CORRECTNESS)
    # by hand: math accuracy (1 + 0 + 1 + 1) / 4 = 3/4, gpqa 1/2; the total is their mean, 5/8 (pooled: 7/10)
    assert sets["math"][0] == 0.75 and sets["gpqa"][0] == 0.5
    assert sets["math"][1][0] == pytest.approx((2 / 4 + 2 / 3) / 2)  # K=1: the mean correctness of each row
    record = rmbench.read_run(out)
    assert record.task("ppe_correctness").official.provenance == ppe_correctness_layout(tuple(PPE_SETS)).provenance
    assert record.task("ppe_correctness").official.provenance in leaderboard_from_disk(out)
    value = {(m.metric, m.subset): m.value for m in record.task("ppe_correctness").metrics}
    assert value[("ppe_accuracy", "math")] == 0.75 and value[("ppe_accuracy", "gpqa")] == 0.5
    assert value[("ppe_accuracy", None)] == pytest.approx(5 / 8, abs=1e-15)
    for s, (_, model, gap) in sets.items():
        assert value[("ppe_bok_gap", s)] == pytest.approx(gap, abs=1e-12), s
        for k, v in enumerate(model, start=1):
            assert value[("ppe_best_of_k", f"{s}/K={k}")] == pytest.approx(v, abs=1e-12), (s, k)
    assert value[("ppe_bok_gap", None)] == pytest.approx((sets["math"][2] + sets["gpqa"][2]) / 2, abs=1e-12)
    for k in (1, 2, 3):
        mean = (sets["math"][1][k - 1] + sets["gpqa"][1][k - 1]) / 2
        assert value[("ppe_best_of_k", f"K={k}")] == pytest.approx(mean)
    assert value[("ppe_best_of_k", "math/K=4")] == pytest.approx(float(brute_best_of_k([4, 2, 2, 6], [1, 0, 1, 0], 4)))
    # equally correct answers are specificity pairs: (0,2), (1,3) | (1,2) | (0,1), (2,3); |gap| = 0 for
    # math row 2's (1,2) and gpqa's (0,1): Spec@0 = 1 - 3/5
    spec = record.metric("ppe_correctness", "specificity", eps=0.0)
    assert spec.value == pytest.approx(2 / 5) and spec.n == 5
    task = record.task("ppe_correctness")
    # the table has a column per set asked for (all five): the absent ones stay empty, and the leaderboard
    # notes that this Mean is over the sets present, not PPE's
    assert task.official.metric == "ppe_accuracy" and [c.label for c in task.official.columns] == [
        "MMLU-Pro", "MATH", "GPQA", "IFEval", "MBPP-Plus", "Mean"]
    results = json.loads((out / "results.json").read_text())
    math_k = [m for m in results["tasks"][0]["metrics"] if m["metric"] == "ppe_best_of_k" and m["subset"] == "math/K=4"]
    assert math_k[0]["n"] == 1  # only math's first row has 4 answers
    assert metric_def("ppe_accuracy").official and not metric_def("ppe_bok_gap").higher_is_better


HUMAN = [
    hrow("1", "model_a", "long answer", "short", hard_prompt=True),            # right
    hrow("2", "model_b", "aaaa", "bbbb", hard_prompt=True, is_code=True),       # reward tie: 1/2
    hrow("3", "model_b", "long long", "x", language="Chinese", math_prompt=True),  # wrong
    hrow("4", "tie", "same", "diff", language="Chinese"),                       # tie, equal rewards
    hrow("5", "tie (bothbad)", "a", "bb", language="German"),                   # tie, unequal rewards
]


def test_a_human_preference_run_records_accuracy_per_category_and_language(tmp_path):
    path = write_lines(tmp_path / "human.jsonl", HUMAN)
    out = tmp_path / "run"
    rmbench.evaluate(rmbench.EvalConfig(model="length", tasks=("ppe_human",), data=(("ppe_human", str(path)),),
                                        eps=(0.0,), n_bootstrap=20), out_dir=out)
    record = rmbench.read_run(out)
    value = {m.subset: m.value for m in record.task("ppe_human").metrics if m.metric == "ppe_human_accuracy"}
    # by hand over the battles with a winner (1, 2, 3): (1 + 1/2 + 0) / 3
    assert value == pytest.approx({None: 0.5, "hard": 0.75, "code": 0.5, "math": 0.0, "lang:English": 0.75,
                                   "lang:Chinese": 0.0})
    assert record.value("ppe_human", "pairwise_accuracy") == pytest.approx(0.5)
    # Spec over the two tied battles: 4's rewards are equal, 5's are not
    assert record.metric("ppe_human", "specificity", eps=0.0).value == pytest.approx(0.5)
    assert [c.label for c in record.task("ppe_human").official.columns][:2] == ["Overall", "Hard"]
    assert record.task("ppe_human").official == PPE_HUMAN_LAYOUT  # its provenance too, read back from disk
    assert PPE_HUMAN_LAYOUT.provenance in leaderboard_from_disk(out)
    res = rmbench.evaluate(rmbench.EvalConfig(model="length", tasks=("ppe_human",), data=(("ppe_human", str(path)),),
                                              eps=(0.0,), task_args=(("bothbad", "exclude"),), n_bootstrap=0))
    assert res.value("ppe_human", "specificity", eps=0.0) == pytest.approx(1.0)
    assert res.value("ppe_human", "ppe_human_accuracy") == pytest.approx(0.5)


def test_the_cli_reads_a_folder_and_the_results_reach_compare_and_export(tmp_path):
    from typer.testing import CliRunner

    from rmbench.cli.app import app

    for name, rows in CORRECTNESS.items():
        write_lines(tmp_path / "ppe" / name, rows)
    runner = CliRunner()
    for model in ("length", "constant"):
        result = runner.invoke(app, ["eval", "--model", model, "--tasks", "ppe_correctness", "--data",
                                     f"ppe_correctness={tmp_path / 'ppe'}", "--bootstrap", "10",
                                     "--out", str(tmp_path / model)], env={"COLUMNS": "250"})
        assert result.exit_code == 0, result.output
    assert "PPE correctness" in result.output and "MATH" in result.output
    constant = rmbench.read_run(tmp_path / "constant")
    # a constant RM ties everything: accuracy 1/2 on every pair, best-of-K = the mean correctness at every K
    assert constant.value("ppe_correctness", "ppe_accuracy") == pytest.approx(0.5)
    assert constant.value("ppe_correctness", "ppe_best_of_k", subset="gpqa/K=4") == pytest.approx(0.5)
    result = runner.invoke(app, ["compare", str(tmp_path / "length"), str(tmp_path / "constant"), "--bootstrap", "10"],
                           env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "ppe_accuracy" in result.output or "PPE acc" in result.output
    result = runner.invoke(app, ["export", str(tmp_path / "length"), "--format", "every-eval-ever",
                                 "--out", str(tmp_path / "eee")])
    assert result.exit_code == 0, result.output
    log = json.loads(next((tmp_path / "eee").glob("*.json")).read_text())
    names = {r["evaluation_name"] for r in log["evaluation_results"]}
    assert any("ppe_accuracy" in n for n in names)
