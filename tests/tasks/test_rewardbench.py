"""RewardBench 1 and 2 scores by hand, and their loaders on local files in the official schemas."""

import json

import numpy as np
import pytest

from rmbench.core.metrics import ties_score
from rmbench.scoring.runner import EvalConfig, evaluate
from rmbench.tasks.rewardbench import RewardBench2Task, RewardBenchTask, best_of_n_credit, rb1_score
from tests.conftest import shared_file


def test_rb1_score_by_hand():
    acc = {"alpacaeval-easy": np.array([1, 1, 0, 1]), "mt-bench-hard": np.array([0, 1]),
           "math-prm": np.array([1, 0]), "hep-python": np.array([1, 1]), "shp": np.array([1, 0, 0, 0])}
    chat, chat_hard = 0.75, 0.5
    reasoning = (0.5 * 984 + 1.0 * 164) / (984 + 164)  # math-prm counts 984, as the code subsets together
    expected = (chat + chat_hard + reasoning + 0.5 * 0.25) / 3.5
    assert rb1_score(acc) == pytest.approx(expected, abs=1e-12)


def test_best_of_n_credit_splits_ties():
    assert best_of_n_credit(np.array([3.0]), np.array([1.0, 2.0, 0.0])) == 1.0
    assert best_of_n_credit(np.array([2.0]), np.array([2.0, 1.0, 2.0])) == pytest.approx(1 / 3)
    assert best_of_n_credit(np.array([1.0]), np.array([2.0, 0.0, 0.0])) == 0.0


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_rewardbench2_score_on_a_local_file(tmp_path):
    rows = [
        {"id": "1", "prompt": "p1", "chosen": ["good answer"], "rejected": ["b", "bb", "bbb"], "subset": "Focus"},
        {"id": "2", "prompt": "p2", "chosen": ["x"], "rejected": ["a much longer wrong one", "yy", "zzz"],
         "subset": "Math"},
        {"id": "tied:0", "prompt": "p3", "chosen": ["1", "22"], "rejected": ["333", "4444"], "subset": "Ties"},
        {"id": "ref:0", "prompt": "p4", "chosen": ["55555"], "rejected": ["6"], "subset": "Ties"},
    ]
    path = write(tmp_path / "rb2.jsonl", rows)
    res = evaluate(EvalConfig(model="length", tasks=("rewardbench2",), data=(("rewardbench2", path),), n_bootstrap=20))
    score = res.value("rewardbench2", "rewardbench2_score")
    ties = ties_score([("tied:0", [1.0, 2.0], [3.0, 4.0]), ("ref:0", [5.0], [1.0])])
    assert score == pytest.approx(np.mean([1.0, 0.0, ties]), abs=1e-12)  # Focus 1, Math 0, Ties
    bad = write(tmp_path / "bad.jsonl", [{**rows[2], "id": "tie-zero"}])
    from rmbench.errors import DataError
    with pytest.raises(DataError, match="bad.jsonl, line 1, field 'id'"):
        list(RewardBench2Task(path=bad).groups())


def test_ties_rows_match_the_official_ties_score():
    path = shared_file("rb2/ties_sample.jsonl")
    res = evaluate(EvalConfig(model="length", tasks=("rewardbench2", "ties"),
                              data=(("rewardbench2", str(path)), ("ties", str(path))), n_bootstrap=20))
    rb2 = res.value("rewardbench2", "rewardbench2_score")
    ties = res.value("ties", "ties_score")
    assert rb2 == pytest.approx(ties, abs=1e-9)


def test_rewardbench_v1_loader_and_score(tmp_path):
    rows = [{"id": i, "prompt": "q", "chosen": "long good answer", "rejected": "bad", "subset": s}
            for i, s in enumerate(["alpacaeval-easy", "alpacaeval-easy", "hep-go", "shp"])]
    rows[1]["rejected"] = "an even longer wrong answer"
    path = write(tmp_path / "rb1.jsonl", rows)
    res = evaluate(EvalConfig(model="length", tasks=("rewardbench",), data=(("rewardbench", path),), n_bootstrap=20))
    score = res.value("rewardbench", "rewardbench_score")
    assert score == pytest.approx((0.5 + 1.0 + 0.5 * 1.0) / 2.5)
    with pytest.raises(Exception, match="field 'subset': missing"):
        list(RewardBenchTask(path=write(tmp_path / "b.jsonl",
                                        [{"prompt": "q", "chosen": "a", "rejected": "b"}])).groups())
