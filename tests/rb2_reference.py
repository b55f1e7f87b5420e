"""RewardBench 2's official Ties scoring, written out step by step for tests.

This follows ``rewardbench/utils.py`` (``_compute_prompt_stats`` and the Ties branch of
``process_single_model``) as published by allenai: rows carry ``id`` ("tied:K" / "ref:K"),
``scores`` (correct answers first) and ``num_correct``. It is kept independent of rmbench's
vectorised implementation so the two can be compared.
"""

from collections import defaultdict

import numpy as np


def prompt_stats(samples):
    correct_scores = [s for is_corr, s in samples if is_corr]
    incorrect_scores = [s for is_corr, s in samples if not is_corr]
    best_correct = max(correct_scores)
    worst_correct = min(correct_scores)
    best_incorrect = max(incorrect_scores)
    different_correct_margin = best_correct - worst_correct if len(correct_scores) > 1 else None
    correct_incorrect_margin = worst_correct - best_incorrect
    accurate = correct_incorrect_margin > 0
    return accurate, different_correct_margin, correct_incorrect_margin


def official_ties_score(rows):
    grouped = defaultdict(list)
    for row in rows:
        sample_type, prompt_id_str = row["id"].split(":")
        prompt_id = int(prompt_id_str)
        for i, score in enumerate(row["scores"]):
            grouped[(sample_type, prompt_id)].append((i < row["num_correct"], score))
    ref_stats, tied_stats = {}, {}
    for (sample_type, prompt_id), samples in grouped.items():
        stats = prompt_stats(samples)
        if sample_type == "ref":
            ref_stats[prompt_id] = stats
        else:
            tied_stats[prompt_id] = stats
    ref_accuracy = np.mean([s[0] for s in ref_stats.values()]) if ref_stats else 0.0
    tied_accuracy = np.mean([s[0] for s in tied_stats.values()]) if tied_stats else 0.0
    all_prompts = set(ref_stats) & set(tied_stats)
    diff_corr_margin = np.array([tied_stats[pid][1] for pid in all_prompts])
    corr_incorrect_ties = np.array([tied_stats[pid][2] for pid in all_prompts])
    corr_incorrect_ref = np.array([ref_stats[pid][2] for pid in all_prompts])
    correctness_preferred = np.mean(corr_incorrect_ties > diff_corr_margin)
    correctness_preferred_hard = np.mean(np.minimum(corr_incorrect_ref, corr_incorrect_ties) > diff_corr_margin)
    with np.errstate(divide="ignore", invalid="ignore"):
        margin_scores = np.tanh(np.minimum(corr_incorrect_ref, corr_incorrect_ties) / diff_corr_margin - 1)
    margin_scores = np.nan_to_num(margin_scores, nan=0.0)
    correctness_margin_score = float(np.mean(margin_scores))
    return float(0.30 * tied_accuracy + 0.30 * ref_accuracy + 0.20 * correctness_preferred
                 + 0.20 * correctness_preferred_hard + 0.01 * correctness_margin_score)
