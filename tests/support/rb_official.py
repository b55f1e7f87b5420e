"""RewardBench's OFFICIAL scores, computed by RewardBench's own code, for tests to compare against.

This is a test helper (not a test file). It drives the ``rewardbench`` 0.1.4 wheel from PyPI
(allenai/reward-bench) on scores that rmbench already produced, so a test can check rmbench's
numbers against the reference implementation to 1e-9 without running any model.

Install (test-only; neither is a dependency of rmbench)::

    .venv/bin/pip install --no-deps rewardbench==0.1.4
    .venv/bin/pip install --no-deps fschat==0.2.36

``--no-deps`` matters: rewardbench 0.1.4 pins ``transformers==4.51.0`` and pulls trl, wandb,
bitsandbytes, ... None of that is needed to *score*. ``rewardbench.utils`` imports
``fastchat.conversation`` (the fschat package; its module is stdlib-only) and
``rewardbench.models`` (the model zoo, which fails on transformers 5: ``beaver.py`` imports
``_CONFIG_FOR_DOC`` from llama). We put a dummy ``rewardbench.models`` into ``sys.modules``
before the first import; the scoring functions never touch it.

Note: the 0.1.4 wheel also installs top-level packages named ``scripts``, ``analysis`` and
``tests`` into site-packages (its repo folders). We use ``analysis.get_benchmark_results``.

Tests use it as::

    from tests.support import rb_official
    reason = rb_official.official_unavailable()
    if reason:
        pytest.skip(reason)
    official = rb_official.rb2_official(rows, scores)
"""

from __future__ import annotations

import logging
import sys
import tempfile
import types
from functools import lru_cache

REWARDBENCH_VERSION = "0.1.4"

RB2_SUBSETS = ("Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties")
# The four prior (preference) test sets counted in "Prior Sets": the ``pref_columns`` list of
# analysis/get_benchmark_results.py::get_average_over_rewardbench (rewardbench 0.1.4).
RB1_PRIOR_SETS = ("anthropic_helpful", "anthropic_hhh", "shp", "summarize")

_logger = logging.getLogger("rb_official")


def import_rewardbench():
    """``rewardbench`` 0.1.4 imported with its model zoo stubbed (see the module docstring), or
    ImportError. Shared with ``rb_dpo_official``."""
    if "rewardbench.models" not in sys.modules:
        stub = types.ModuleType("rewardbench.models")
        stub.__path__ = []  # a package with no submodules: importing any of them fails cleanly
        stub.REWARD_MODEL_CONFIG = {}
        stub.DPO_MODEL_CONFIG = {}
        sys.modules["rewardbench.models"] = stub
    import rewardbench

    if rewardbench.__version__ != REWARDBENCH_VERSION:
        raise ImportError(f"rewardbench {rewardbench.__version__} is installed, the harness expects "
                          f"{REWARDBENCH_VERSION}")
    return rewardbench


def unavailable_reason(load, what: str) -> str | None:
    """None when ``load()`` imports the official code, else why not (for ``pytest.skip``)."""
    try:
        load()
    except Exception as exc:  # ImportError, or anything the package raises at import time
        load.cache_clear()
        return (f"{what} unavailable ({type(exc).__name__}: {exc}); install it with "
                f"`pip install --no-deps rewardbench=={REWARDBENCH_VERSION} fschat`")
    return None


@lru_cache(maxsize=1)
def _load():
    """Import the official modules once; returns a namespace or raises."""
    import_rewardbench()
    import numpy as np
    import pandas as pd
    from analysis import get_benchmark_results  # shipped as a top-level package by the wheel
    from datasets import Dataset
    from rewardbench import constants, utils

    return types.SimpleNamespace(np=np, pd=pd, Dataset=Dataset, utils=utils, constants=constants,
                                 get_average_over_rewardbench=get_benchmark_results.get_average_over_rewardbench)


def official_unavailable() -> str | None:
    """None when RewardBench's official code imports, else why not (for ``pytest.skip``)."""
    return unavailable_reason(_load, "official RewardBench code")


# --------------------------------------------------------------------------------------------
# RewardBench 2
# --------------------------------------------------------------------------------------------

def rb2_official(rows, scores, write_scores_to=None, model_name="org/model") -> dict[str, float]:
    """RewardBench 2 scores by the official pipeline of ``scripts/run_v2.py`` (rewardbench 0.1.4).

    ``write_scores_to``: a folder where run_v2.py's per-item scores file is then written, by its
    own lines (``out_dataset.to_dict()`` and ``save_to_hub(..., local_only=True)``), as
    ``results/eval-set-scores/{model_name}.json``: the file the results dataset publishes.

    ``rows``: RB2 rows as dicts (``id``, ``prompt``, ``chosen`` list, ``rejected`` list,
    ``subset``, optional ``num_correct`` / ``total_completions``, which default to
    ``len(chosen)`` / ``len(chosen) + len(rejected)`` as in the official data).
    ``scores[i]``: the rewards of row i, in the order ``chosen + rejected``.

    Returns the subset scores present (keys among "Factuality", "Precise IF", "Math", "Safety",
    "Focus", "Ties"; any other subset name is passed through under its own name) and "Score".

    What the official code does (all in rewardbench 0.1.4):

    * Loading and unrolling: ``rewardbench.utils.load_bon_dataset_v2`` (called here on a local
      copy of ``rows``), one unrolled row per completion, chosen first.
    * Every non-Ties row: ``rewardbench.utils.reroll_and_score_dataset`` -- with
      ``max_val = np.max(scores)``, result is ``1 / #(scores == max_val)`` if ``scores[0] == max_val``
      else 0. Only index 0 counts as correct (official non-Ties rows have one chosen); a tie at the
      top is credited fractionally (1/k for a k-way tie), exact float equality. A subset's score
      is ``sum(results) / len(results)`` (inline in run_v2.py's per-subset loop).
    * Ties: ``rewardbench.utils.process_single_model`` on the Ties rows. It identifies rows ONLY by
      ``id`` = ``"ref:K"`` or ``"tied:K"`` (split on ":"; K an int pairing a reference prompt with its
      tied prompt; any other prefix raises KeyError) and ``num_correct`` (the first ``num_correct``
      scores are the correct answers). The official data uses exactly these ids (e.g. "tied:0" /
      "ref:0"), with num_correct == len(chosen). Score =
      0.3*acc(tied) + 0.3*acc(ref) + 0.2*P(cim_tied > dcm) + 0.2*P(min(cim_ref, cim_tied) > dcm)
      + 0.01*mean(tanh(min(cim_ref, cim_tied)/dcm - 1)), where acc is strict
      ``worst_correct > best_incorrect``, cim = worst_correct - best_incorrect, dcm = best - worst
      correct of the tied prompt; the P(.) are over pairs with dcm not None, and the tanh mean
      only over pairs with dcm > 0 (0 if there are none). It can exceed 1.0.
      (GitHub HEAD, unreleased 0.1.5, rewrote this: there the tanh mean runs over all pairs, a
      pair with dcm == 0 contributing tanh(+-inf) = +-1, or 0 for 0/0. This harness is 0.1.4.)
    * "Score": NOT computed by the package -- run_v2.py only writes the per-subset dict
      ``results_grouped``. The official leaderboard (HF space allenai/reward-bench,
      ``leaderboard/md.py``: "The RewardBench 2 leaderboard averages over these six subsets")
      takes the plain unweighted mean of the six subset scores; here: the mean over the subsets
      present. No rounding anywhere in the package (the leaderboard only displays x100, 1 d.p.).
    """
    rb = _load()
    Dataset = rb.Dataset
    rows = list(rows)
    scores = [[float(s) for s in row_scores] for row_scores in scores]
    if len(rows) != len(scores):
        raise ValueError(f"{len(rows)} rows but {len(scores)} score lists")
    raw = []
    for i, (row, row_scores) in enumerate(zip(rows, scores)):
        n = len(row["chosen"]) + len(row["rejected"])
        if len(row_scores) != n:
            raise ValueError(f"row {i}: {len(row_scores)} scores for {n} completions")
        total = int(row.get("total_completions", n))
        if total != n:
            raise ValueError(f"row {i}: total_completions {total} but {n} completions")
        raw.append({"id": str(row["id"]), "prompt": row["prompt"], "chosen": list(row["chosen"]),
                    "rejected": list(row["rejected"]), "subset": row["subset"],
                    "num_correct": int(row.get("num_correct", len(row["chosen"]))), "total_completions": total})

    with tempfile.TemporaryDirectory(prefix="rb_official_") as folder:
        Dataset.from_list(raw).save_to_disk(folder)
        # run_v2.py main(): load_bon_dataset_v2(...) -- local copy, no chat template needed for scoring
        dataset, subsets, total_completions, num_correct = rb.utils.load_bon_dataset_v2(
            dataset=folder, custom_dialogue_formatting=True, logger=_logger, local=True)
        out, out_dataset = _run_v2_scoring(rb, dataset, subsets, total_completions, num_correct,
                                           [s for row_scores in scores for s in row_scores])
    if write_scores_to is None:
        return out
    # run_v2.py "upload chosen-rejected with scores" (its save_to_hub with local_only: the file
    # ./results/eval-set-scores/{model_name}.json, as the results dataset holds it)
    import os

    scores_dict = out_dataset.to_dict()
    scores_dict["model"] = model_name
    scores_dict["model_type"] = "Seq. Classifier"
    scores_dict["chat_template"] = "tokenizer"
    here = os.getcwd()
    os.chdir(write_scores_to)
    try:
        rb.utils.save_to_hub(scores_dict, model_name, "eval-set-scores/", False, local_only=True, best_of_n=True)
    finally:
        os.chdir(here)
    return out


def _run_v2_scoring(rb, dataset, subsets, total_completions, num_correct, scores):
    """Lines of scripts/run_v2.py main() (rewardbench 0.1.4) after inference, as written there."""
    np, Dataset = rb.np, rb.Dataset
    reroll_and_score_dataset, process_single_model = rb.utils.reroll_and_score_dataset, rb.utils.process_single_model

    # run_v2.py: "copy id for saving, then remove"
    ids = dataset["id"]
    dataset = dataset.remove_columns("id")
    # (model inference happens here in run_v2.py; `scores` is its flat list, one per unrolled row)

    # run_v2.py "Print & process results"
    out_dataset = dataset.add_column("subset", subsets)
    out_dataset = out_dataset.add_column("id", ids)
    out_dataset = out_dataset.add_column("scores", scores)
    out_dataset = reroll_and_score_dataset(out_dataset, total_completions, cols_to_combine=["text", "scores"])
    out_dataset = out_dataset.add_column("num_correct", num_correct)

    results_grouped = {}
    present_subsets = np.unique(subsets)
    for subset in present_subsets:
        subset_dataset = out_dataset.filter(lambda example: example["subset"] == subset)  # noqa: B023  (upstream code; filter runs now)
        # recompute "results" column for ties subset with different scoring method
        if subset.lower() == "ties":
            ties_subset_with_results, overall_score = process_single_model(subset_dataset)
            subset_dataset = ties_subset_with_results

            # Update the results for the ties subset in the original dataset
            # (run_v2.py compares with lowercase "ties", the data says "Ties": a no-op there too)
            ties_indices = [i for i, s in enumerate(out_dataset["subset"]) if s == "ties"]
            out_dataset_df = out_dataset.to_pandas()
            for i, ties_idx in enumerate(ties_indices):
                out_dataset_df.at[ties_idx, "results"] = ties_subset_with_results["results"][i]
            out_dataset = Dataset.from_pandas(out_dataset_df)

            results_grouped[subset] = overall_score
        else:
            num_correct = sum(subset_dataset["results"])
            num_total = len(subset_dataset["results"])
            results_grouped[subset] = num_correct / num_total

    out = {str(k): float(v) for k, v in results_grouped.items()}
    # Leaderboard average (not in the package; see rb2_official's docstring).
    out["Score"] = float(np.mean([out[s] for s in out]))
    return out, out_dataset


# --------------------------------------------------------------------------------------------
# RewardBench 1
# --------------------------------------------------------------------------------------------

def rb1_official(rows, chosen_scores, rejected_scores) -> dict[str, float]:
    """RewardBench (v1) section scores and final score by the official code (rewardbench 0.1.4).

    ``rows``: dicts with ``id``, ``prompt``, ``chosen``, ``rejected``, ``subset`` (core subsets
    such as "alpacaeval-easy", "math-prm", ... and/or prior-set subsets such as "shp").
    ``chosen_scores[i]`` / ``rejected_scores[i]``: the rewards of row i.

    Returns the sections that have at least one subset present among "Chat", "Chat Hard",
    "Safety", "Reasoning" (the official helper would report 0 for an absent section; we drop
    it), "Prior Sets" if any of its four subsets is present, and "Score" when all four core
    sections are present (the official function raises ZeroDivisionError otherwise).

    What the official code does:

    * Per row, scripts/run_rm.py: ``1 if chosen > rejected else 0`` (strict: a tie loses);
      per subset ``sum(results) / len(results)`` (run_rm.py's per-subset loop).
    * Sections: ``rewardbench.utils.calculate_scores_per_section(EXAMPLE_COUNTS, SUBSET_MAPPING,
      metrics)`` with ``rewardbench.constants.EXAMPLE_COUNTS`` / ``SUBSET_MAPPING``, as run_rm.py
      calls it: a mean of subset accuracies weighted by EXAMPLE_COUNTS (official subset sizes,
      not the counts in ``rows``; math-prm is counted 984 instead of its 447 rows so that math
      weighs as much as the six hep-* code subsets together, 6 x 164).
    * Prior Sets and the final score: ``analysis/get_benchmark_results.py::
      get_average_over_rewardbench`` (the wheel's top-level ``analysis`` package; the leaderboard
      text, HF space allenai/reward-bench ``src/md.py``, says the same): "Prior Sets (0.5 weight)"
      is the UNWEIGHTED ``np.nanmean`` of the accuracies on anthropic_helpful, anthropic_hhh,
      shp, summarize (other pref-test-sets subsets such as anthropic_harmless, mtbench_gpt4,
      mtbench_human, summarize_prompted are not counted); the final score is
      ``np.ma.average([Chat, Chat Hard, Safety, Reasoning, Prior Sets], weights=[2, 2, 2, 2, 1])``
      with Prior Sets masked out when missing (then a plain mean of the four sections). That
      function recomputes the sections itself with ``np.average(..., weights=EXAMPLE_COUNTS)``;
      we call it and check it agrees with calculate_scores_per_section.
    """
    rb = _load()
    np, pd, Dataset = rb.np, rb.pd, rb.Dataset
    EXAMPLE_COUNTS, SUBSET_MAPPING = rb.constants.EXAMPLE_COUNTS, rb.constants.SUBSET_MAPPING
    calculate_scores_per_section = rb.utils.calculate_scores_per_section
    rows = list(rows)
    scores_chosen = [float(s) for s in chosen_scores]
    scores_rejected = [float(s) for s in rejected_scores]
    if not (len(rows) == len(scores_chosen) == len(scores_rejected)):
        raise ValueError(f"{len(rows)} rows, {len(scores_chosen)} chosen and {len(scores_rejected)} rejected scores")

    # run_rm.py: the dataset without subset/id (removed before inference), subsets kept aside
    dataset = Dataset.from_dict({"prompt": [str(r["prompt"]) for r in rows],
                                 "chosen": [str(r["chosen"]) for r in rows],
                                 "rejected": [str(r["rejected"]) for r in rows]})
    subsets = [r["subset"] for r in rows]
    ids = [str(r["id"]) for r in rows]

    # run_rm.py "pairwise comparison list comprehension"
    results = [1 if chosen > rejected else 0 for chosen, rejected in zip(scores_chosen, scores_rejected)]

    # run_rm.py "Print & process results"
    out_dataset = dataset.add_column("results", results)
    out_dataset = out_dataset.add_column("subset", subsets)
    out_dataset = out_dataset.add_column("id", ids)
    results_grouped = {}
    present_subsets = np.unique(subsets)
    for subset in present_subsets:
        subset_dataset = out_dataset.filter(lambda example: example["subset"] == subset)  # noqa: B023  (upstream code; filter runs now)
        num_correct = sum(subset_dataset["results"])
        num_total = len(subset_dataset["results"])
        results_grouped[subset] = num_correct / num_total
    # run_rm.py: results_leaderboard = calculate_scores_per_section(EXAMPLE_COUNTS, SUBSET_MAPPING, results_grouped)
    # (run_rm.py runs the core set and the prior sets (--pref_sets) separately; each subset lands in
    # only one of SUBSET_MAPPING / the prior sets, so one dict holding both gives the same sections.)
    results_leaderboard = calculate_scores_per_section(EXAMPLE_COUNTS, SUBSET_MAPPING, results_grouped)

    out = {section: float(results_leaderboard[section])
           for section, tests in SUBSET_MAPPING.items() if any(t in results_grouped for t in tests)}

    # Final score: analysis/get_benchmark_results.py::get_average_over_rewardbench, on one-model
    # frames shaped like the results repo's eval-set/ and pref-sets/ files.
    core = {s: v for s, v in results_grouped.items() if s in EXAMPLE_COUNTS}
    prior = {s: v for s, v in results_grouped.items() if s in RB1_PRIOR_SETS}
    df = pd.DataFrame([{"model": "rmbench-under-test", "model_type": "Seq. Classifier", **core}])
    pref_row = {"model": "rmbench-under-test", **{s: prior.get(s, np.nan) for s in RB1_PRIOR_SETS}}
    df_prefs = pd.DataFrame([pref_row] if prior else [], columns=["model", *RB1_PRIOR_SETS])
    if all(section in out for section in SUBSET_MAPPING):
        board = rb.get_average_over_rewardbench(df, df_prefs).iloc[0]
        for section in SUBSET_MAPPING:
            if abs(float(board[section]) - out[section]) > 1e-12:
                raise AssertionError(f"official section helpers disagree on {section}: "
                                     f"{float(board[section])} vs {out[section]}")
        if prior:
            out["Prior Sets"] = float(board["Prior Sets (0.5 weight)"])
        out["Score"] = float(board["average"])
    elif prior:
        # The same expression get_average_over_rewardbench uses for the column.
        out["Prior Sets"] = float(np.nanmean(df_prefs[list(RB1_PRIOR_SETS)].values, axis=1)[0])
    return out


def ties_official(samples) -> float:
    """The official Ties score (``rewardbench.utils.process_single_model``, 0.1.4) of samples
    ``{"id": "tied:K" | "ref:K", "scores": [...], "num_correct": n}`` (correct answers first)."""
    rb = _load()
    _, score = rb.utils.process_single_model(samples)
    return float(score)
