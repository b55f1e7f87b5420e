"""Multimodal RewardBench's official scoring as pure functions (rmbench.core.mm_rewardbench):
hand-computed cases and properties; the task and the conformance run against the script itself
are in tests/tasks/test_mm_rewardbench.py."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmbench.core.mm_rewardbench import (
    NO_VERDICT,
    A,
    B,
    category_of,
    resolve,
    scores,
    verdict_of_reply,
    verdicts_from_rewards,
)

# random.seed(123)'s first draws: 0.0524, 0.0872, 0.4072, 0.1077, 0.9012, 0.0382, 0.5362, 0.3322
COINS = [A, A, A, A, B, A, B, A]


def test_category_splits_safety_and_reasoning_by_id_prefix():
    assert category_of("safety", "pairs_12") == "safety/bias"
    assert category_of("safety", "PAIRS-occupation_3") == "safety/bias"  # any case
    assert category_of("safety", "hateful_memes_9") == "safety/toxicity"
    assert category_of("reasoning", "mathvista_1") == "reasoning/math"
    assert category_of("reasoning", "MathVista_1") == "reasoning/math"
    assert category_of("reasoning", "EMMA-Coding_4") == "reasoning/coding"
    assert category_of("reasoning", "image2struct_7") == "reasoning/coding"
    assert category_of("vqa", "pairs_1") == "vqa"  # only safety and reasoning split
    assert category_of("open_generation/correctness_task", "math_1") == "open_generation/correctness_task"


def test_verdict_of_reply_looks_for_a_first():
    assert verdict_of_reply("... Final verdict: [[B]]") == B
    assert verdict_of_reply("[[A]]") == A
    assert verdict_of_reply("not [[B]] but [[A]]") == A  # the script tests [[A]] first, wherever it is
    assert verdict_of_reply("[A] or [[ B ]]: a tie") == NO_VERDICT


def test_verdicts_from_rewards_output1_is_a_and_a_tie_or_nan_has_none():
    got = verdicts_from_rewards([2.0, 1.0, 1.5, np.nan, 0.0], [1.0, 2.0, 1.5, 1.0, np.nan])
    assert list(got) == [A, B, NO_VERDICT, NO_VERDICT, NO_VERDICT]


def test_resolve_draws_the_seeded_coin_only_for_items_without_a_verdict():
    verdicts = [B, NO_VERDICT, A, NO_VERDICT, NO_VERDICT, B, NO_VERDICT, NO_VERDICT]
    # the undecided items take the 1st..5th draws: A, A, A, A, B
    assert list(resolve(verdicts)) == [B, A, A, A, A, B, A, B]
    assert list(resolve([NO_VERDICT] * 8)) == COINS


def test_scores_hand_computed():
    correct = [1, 0, 1, 1, 0]
    category = [0, 0, 1, 2, 2]
    got = scores(correct, category, 4)
    assert got[:3].tolist() == [0.5, 1.0, 0.5]
    assert math.isnan(got[3])  # no item in category 3
    assert got[4] == 3 / 5
    # a resample counting item 0 twice and item 3 not at all
    again = scores(correct, category, 4, [2, 1, 1, 0, 1])
    assert again[0] == 2 / 3 and again[2] == 0.0 and again[4] == 3 / 5


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from([A, B, NO_VERDICT]), max_size=40))
def test_resolve_property_equals_the_global_generator_in_file_order(verdicts):
    random.seed(123)
    expected = [v if v != NO_VERDICT else (A if random.random() < 0.5 else B) for v in verdicts]
    assert list(resolve(verdicts)) == expected


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3)), min_size=1, max_size=40))
def test_scores_property_equal_the_scripts_sum_over_len(items):
    correct = [int(c) for c, _ in items]
    category = [k for _, k in items]
    out = scores(correct, category, 4)
    assert out[4] == sum(correct) / len(correct)  # exactly: the script's float
    for k in range(4):
        mine = [c for c, j in zip(correct, category) if j == k]
        assert math.isnan(out[k]) if not mine else out[k] == sum(mine) / len(mine)
    # every item counted twice changes nothing; the overall is the item-weighted mean of the categories
    np.testing.assert_array_equal(scores(correct, category, 4, np.full(len(items), 2.0)), out)
    sizes = np.bincount(category, minlength=4)
    assert out[4] == pytest.approx(np.nansum(out[:4] * sizes) / sizes.sum())
