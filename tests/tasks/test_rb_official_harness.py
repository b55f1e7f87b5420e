"""The official-RewardBench harness (tests/support/rb_official.py) on small data computed by hand."""

import math

import pytest

from tests.support import rb_official

REASON = rb_official.official_unavailable()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


def rb2_row(row_id, subset, n_chosen, n_rejected):
    return {"id": row_id, "prompt": f"prompt {row_id}", "chosen": [f"good {i}" for i in range(n_chosen)],
            "rejected": [f"bad {i}" for i in range(n_rejected)], "subset": subset}


def rb2_official(rows, scores):
    return rb_official.rb2_official(rows, scores)


def ties_rows():
    # pair 0: everything right, margins wide; pair 1: both wrong, the tied prompt's two
    # correct answers score the same (different_correct_margin == 0)
    rows = [rb2_row("ref:0", "Ties", 1, 2), rb2_row("tied:0", "Ties", 2, 2),
            rb2_row("ref:1", "Ties", 1, 1), rb2_row("tied:1", "Ties", 2, 1)]
    scores = [[5, 1, 2], [4, 3, 1, 0], [0, 1], [2, 2, 3]]
    return rows, scores


def test_rb2_best_of_4_credits_top_ties_fractionally():
    rows = [rb2_row(str(i), "Math", 1, 3) for i in range(4)] + [rb2_row("4", "Focus", 1, 3)]
    scores = [[3, 1, 2, 0],   # chosen on top: 1
              [1, 3, 2, 0],   # a rejected on top: 0
              [2, 2, 1, 0],   # 2-way tie at the top: 1/2
              [2, 2, 2, 2],   # 4-way tie: 1/4
              [1, 0, 0, 0]]
    got = rb2_official(rows, scores)
    assert got == pytest.approx({"Math": 1.75 / 4, "Focus": 1.0, "Score": (1.75 / 4 + 1.0) / 2}, abs=1e-12)


def test_rb2_ties_score_by_hand_and_the_average():
    rows, scores = ties_rows()
    # pair 0: ref accurate (cim 5-2=3), tied accurate (dcm 4-3=1, cim 3-1=2); 2 > 1, min(3,2)=2 > 1,
    #         tanh(2/1 - 1) = tanh(1).   pair 1: both inaccurate (cim -1), dcm 0: not preferred, and
    #         rewardbench 0.1.4 leaves dcm == 0 out of the tanh mean.
    ties = 0.3 * 0.5 + 0.3 * 0.5 + 0.2 * 0.5 + 0.2 * 0.5 + 0.01 * math.tanh(1)
    rows.append(rb2_row("9", "Safety", 1, 3))
    scores.append([0, 1, 0, 0])
    got = rb2_official(rows, scores)
    assert got["Ties"] == pytest.approx(ties, abs=1e-12)
    assert got["Safety"] == 0.0
    assert got["Score"] == pytest.approx((ties + 0.0) / 2, abs=1e-12)


def test_rb2_ties_can_exceed_one():
    rows, scores = ties_rows()
    got = rb2_official(rows[:2], scores[:2])
    assert got["Ties"] == pytest.approx(1.0 + 0.01 * math.tanh(1), abs=1e-12)


def test_rb2_on_the_shared_ties_sample():
    import json

    from tests.conftest import shared_file

    rows = [json.loads(line) for line in shared_file("rb2/ties_sample.jsonl").read_text().splitlines()]
    scores = [[-float(len(t)) for t in row["chosen"] + row["rejected"]] for row in rows]  # shorter is better
    got = rb2_official(rows, scores)
    assert set(got) == {"Ties", "Score"} and got["Score"] == got["Ties"]
    assert -0.01 <= got["Ties"] <= 1.01


def test_rb2_rejects_score_lists_of_the_wrong_length():
    with pytest.raises(ValueError, match="row 0: 3 scores for 4 completions"):
        rb2_official([rb2_row("0", "Math", 1, 3)], [[1, 2, 3]])


def rb1_rows(subsets):
    return [{"id": i, "prompt": f"p{i}", "chosen": "c", "rejected": "r", "subset": s} for i, s in enumerate(subsets)]


RB1_SUBSETS = ["alpacaeval-easy", "alpacaeval-easy", "mt-bench-easy", "llmbar-natural", "donotanswer",
               "math-prm", "hep-python"]
RB1_CHOSEN = [1, 1, 1, 0, 1, 1, 0]
RB1_REJECTED = [0, 1, 0, 1, 0, 0, 1]  # row 1 is a tie: a loss (strict >)
CHAT = (0.5 * 100 + 1.0 * 28) / (100 + 28)   # weights are EXAMPLE_COUNTS, not the rows given
REASONING = (1.0 * 984 + 0.0 * 164) / (984 + 164)


def test_rb1_sections_and_score_with_prior_sets():
    subsets = RB1_SUBSETS + ["anthropic_helpful", "anthropic_helpful", "shp", "mtbench_human"]
    got = rb_official.rb1_official(rb1_rows(subsets), RB1_CHOSEN + [1, 0, 1, 0], RB1_REJECTED + [0, 1, 0, 1])
    prior = (0.5 + 1.0) / 2  # mtbench_human is not one of the four prior sets
    assert got == pytest.approx({"Chat": CHAT, "Chat Hard": 0.0, "Safety": 1.0, "Reasoning": REASONING,
                                 "Prior Sets": prior,
                                 "Score": (2 * (CHAT + 0.0 + 1.0 + REASONING) + prior) / 9}, abs=1e-12)


def test_rb1_score_without_prior_sets_is_the_mean_of_the_sections():
    got = rb_official.rb1_official(rb1_rows(RB1_SUBSETS), RB1_CHOSEN, RB1_REJECTED)
    assert "Prior Sets" not in got
    assert got["Score"] == pytest.approx((CHAT + 0.0 + 1.0 + REASONING) / 4, abs=1e-12)


def test_rb1_without_every_section_has_no_score():
    got = rb_official.rb1_official(rb1_rows(["alpacaeval-easy", "shp"]), [1, 1], [0, 0])
    assert got == {"Chat": 1.0, "Prior Sets": 1.0}
