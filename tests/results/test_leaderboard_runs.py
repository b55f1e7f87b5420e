"""Leaderboards of several runs never fold different data into one row (issue 32): two runs of
one model on different data are two rows named by their folders, in every table (main, official
layout, shifts), and no table is printed with its headers alone."""

from __future__ import annotations

import pytest

from rmbench.results.publishing.leaderboard import build_leaderboard
from rmbench.results.publishing.leaderboard_render import render
from rmbench.results.storage.folder import load_run
from rmbench.scoring.runner import EvalConfig, evaluate
from tests.results.test_export import write_rb2


@pytest.fixture(scope="module")
def rb2_runs(tmp_path_factory):
    """``length`` on a RewardBench 2 file, then on its first 20 groups (other data, other task key)."""
    root = tmp_path_factory.mktemp("rb2_runs")
    rb2 = write_rb2(root / "rb2.jsonl")
    for folder, limit in (("full", None), ("first20", 20)):
        evaluate(EvalConfig(model="length", tasks=("rewardbench2",), data=(("rewardbench2", str(rb2)),), limit=limit,
                            n_bootstrap=20, use_cache=False), out_dir=root / folder)
    return [load_run(root / "full"), load_run(root / "first20")]


@pytest.mark.parametrize("layout", ["one", "per-task"])
def test_two_runs_of_one_model_on_other_data_are_two_rows_everywhere(rb2_runs, layout):
    lb = build_leaderboard(rb2_runs, layout=layout)
    labels = [r[0][0] for t in lb.tables for r in t.rows]
    assert not any("runs:" in label for label in labels), labels  # nothing folded
    assert set(labels) == {"length (full)", "length (first20)"}
    official = {t.title: [r[0][0] for r in t.rows] for t in lb.official}
    assert official == {"RewardBench 2 (rewardbench2): official layout": ["length (full)"],
                        "RewardBench 2 (rewardbench2, limit 20): official layout": ["length (first20)"]}, official
    for t in lb.tables:  # never a table with headers alone
        assert t.rows and all(any(c is not None for c in cells) for _, cells in t.rows), t.title
    md = render(lb, "md")
    assert "rewardbench2 (limit 20) of first20 cannot share cells with rewardbench2 of full: data fingerprint" in md


def test_the_same_numbers_from_two_folders_still_fold(rb2_runs, tmp_path):
    import shutil

    shutil.copytree(rb2_runs[0].path, tmp_path / "copy")
    lb = build_leaderboard([rb2_runs[0], load_run(tmp_path / "copy")])
    assert [r[0][0] for r in lb.main.rows] == ["length (2 runs: full, copy)"]


def test_a_plot_of_runs_on_other_data_says_so(rb2_runs):
    pytest.importorskip("matplotlib")
    from rmbench.results.publishing.plot import ds_figure

    _, notes = ds_figure(rb2_runs, "rewardbench2")
    assert any(n.startswith("rewardbench2: these runs are on other data or settings (data fingerprint ") and
               "length (full): data" in n and "length (first20): data" in n for n in notes), notes
    _, notes = ds_figure(rb2_runs[:1], "rewardbench2")
    assert not any("other data" in n for n in notes)


def test_domain_shift_slices_are_named_and_the_caption_fits_the_task(tmp_path):
    evaluate(EvalConfig(model="length", tasks=("domain_shift_sample",), n_bootstrap=20), out_dir=tmp_path / "ds")
    lb = build_leaderboard([load_run(tmp_path / "ds")])
    assert [r[0][2] for r in lb.shifts.rows] == ["domain:code", "domain:math", "in-domain (chat)"]
    assert "pairs each shifted group" not in lb.shifts.caption  # no paired copies in a domain shift
    assert "one sigma pooled over every domain" in lb.shifts.caption


def test_several_models_on_other_data_are_a_row_each_in_each_variant(rb2_runs, tmp_path):
    rb2 = tmp_path / "rb2.jsonl"
    write_rb2(rb2)
    for folder, limit in (("oracle_full", None), ("oracle_first20", 20)):
        evaluate(EvalConfig(model="oracle", tasks=("rewardbench2",), data=(("rewardbench2", str(rb2)),), limit=limit,
                            n_bootstrap=20, use_cache=False), out_dir=tmp_path / folder)
    runs = rb2_runs + [load_run(tmp_path / "oracle_full"), load_run(tmp_path / "oracle_first20")]
    lb = build_leaderboard(runs)
    official = {t.title: sorted(r[0][0] for r in t.rows) for t in lb.official}
    assert official == {
        "RewardBench 2 (rewardbench2): official layout": ["length (full)", "oracle (oracle_full)"],
        "RewardBench 2 (rewardbench2, limit 20): official layout": ["length (first20)", "oracle (oracle_first20)"]}
    assert sorted(r[0][0] for r in lb.main.rows) == ["length (first20)", "length (full)", "oracle (oracle_first20)",
                                                     "oracle (oracle_full)"]


def test_a_shell_glob_over_a_runs_folder_passes_over_the_leaderboards_beside_the_runs(rb2_runs, tmp_path):
    from rmbench.errors import ConfigError
    from rmbench.results.storage.folder import find_runs

    board = tmp_path / "leaderboard__rewardbench2__length.md"
    board.write_text("| model |\n")
    found = find_runs([rb2_runs[0].path, board, rb2_runs[1].path])  # what `runs/*` expands to
    assert [f.path for f in found] == [rb2_runs[0].path, rb2_runs[1].path]
    with pytest.raises(ConfigError, match=r"leaderboard__rewardbench2__length.md is a file, not a run folder"):
        find_runs([board])
