"""The leaderboard from small parts (issue 55): column groups as value objects, each part built on
its own from them, ``Leaderboard`` built by keyword, and no publishing module over 400 lines."""

from pathlib import Path

import pytest

from rmbench.errors import ConfigError
from rmbench.results.publishing.leaderboard import Leaderboard, build_leaderboard
from rmbench.results.publishing.leaderboard_groups import column_groups, eps_notes
from rmbench.results.publishing.leaderboard_headline import build_headline
from rmbench.results.publishing.leaderboard_legend import build_legend
from rmbench.results.publishing.leaderboard_notes import variant_notes
from rmbench.results.publishing.leaderboard_official import official_tables
from rmbench.results.publishing.leaderboard_shifts import shift_table
from rmbench.results.publishing.leaderboard_tables import Column, Table
from rmbench.results.storage.folder import load_run
from rmbench.results.storage.record import Estimate
from rmbench.scoring.runner import EvalConfig, evaluate

PUBLISHING = Path(__file__).resolve().parents[2] / "rmbench" / "results" / "publishing"
FULL = "0bee14202bc0"
"""The built-in ties_sample data's fingerprint (pinned in test_leaderboard.py)."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """ties_sample three ways, given in this order: length on its first 5 groups (another task
    key), the oracle, and length at eps 0.2 only (the same key, another eps list)."""
    base = tmp_path_factory.mktemp("parts")
    evaluate(EvalConfig(model="length", limit=5, n_bootstrap=20, use_cache=False), out_dir=base / "limit")
    evaluate(EvalConfig(model="oracle", n_bootstrap=20, use_cache=False), out_dir=base / "oracle")
    evaluate(EvalConfig(model="length", eps=(0.2,), n_bootstrap=20, use_cache=False), out_dir=base / "eps")
    return [load_run(base / name) for name in ("limit", "oracle", "eps")]


def test_column_groups_are_value_objects_of_one_task_key_each(runs):
    entries, groups = column_groups(runs)
    assert [e.label for e in entries] == ["length (limit)", "oracle", "length (eps)"]  # the order given
    # the group of the task's own data first (its key the task's name), although a limited run came first
    assert [(g.key, g.task, g.heading, g.qualifier) for g in groups] == [
        ("ties_sample", "ties_sample", "ties_sample", ""),
        ("ties_sample#2", "ties_sample", "ties_sample (limit 5)", "limit 5")]
    full, limited = groups
    assert [e.label for e, _ in full.runs] == ["oracle", "length (eps)"]
    assert full.first_entry.label == "oracle" and full.first is full.runs[0][1]
    assert full.first.data_fingerprint.startswith(FULL) and not limited.first.data_fingerprint.startswith(FULL)
    # no eps both runs of the full data have: the first run's smallest non-zero one, and a note for the other
    assert full.eps == 0.1 and limited.eps == 0.1
    assert eps_notes(full) == ["length (eps) on ties_sample: no D/Spec at eps=0.1 (its eps: 0.2); those cells are "
                               "empty"]
    assert eps_notes(limited) == []
    reordered = full.in_order([entries[2], entries[1]])
    assert [e.label for e, _ in reordered.runs] == ["length (eps)", "oracle"]
    assert reordered.first is full.first  # the group's first result is its first given run's, whatever the order
    _, asked = column_groups(runs, eps=0.0)
    assert [g.eps for g in asked] == [0.0, 0.0]
    with pytest.raises(ConfigError, match=r"task 'ties_sample \(limit 5\)': no run has D/Spec at eps=0\.2 \(they "
                                          r"have 0,0\.1\)"):
        column_groups(runs, eps=0.2)  # the full data's group has it (length at eps 0.2), the limited one not


def test_each_part_is_built_from_the_groups(runs):
    entries, groups = column_groups(runs)
    headline = build_headline(entries, groups, layout="per-task")
    assert [t.title for t in headline.tables] == ["ties_sample", "ties_sample (limit 5)"]
    assert headline.order[0].label == "oracle"  # best accuracy first
    assert {c.task for c in headline.columns} == {"ties_sample", "ties_sample#2"}
    in_rows = [g.in_order(headline.order) for g in groups]
    assert official_tables(in_rows) == () and shift_table(in_rows, headline.order) is None  # neither applies
    legend = build_legend(groups, official=())
    assert [line.split(":")[0] for line in legend] == ["ties_sample", "ties_sample (limit 5)"]
    # issue 54: the values follow the names' order, the limited group's fingerprint first
    limited = groups[1].first.data_fingerprint[:12]
    assert variant_notes(groups) == [
        f"ties_sample (limit 5) of limit cannot share cells with ties_sample of oracle: data fingerprint {limited} "
        f"vs {FULL}; shown apart"]
    lb = build_leaderboard(runs, layout="per-task")
    assert lb.legend == legend and lb.main == headline.tables[0] and lb.more == headline.tables[1:]
    assert lb.names == {g.key: g.heading for g in groups} and lb.eps == {g.key: (0.1, "sigma") for g in groups}
    assert variant_notes(groups)[0] in lb.notes and eps_notes(groups[0])[0] in lb.notes


def test_a_leaderboard_is_built_by_keyword():
    table = Table("t", ("model",), (Column("t", "pairwise_accuracy", "acc"),), ((("m",), (Estimate(0.5),)),))
    with pytest.raises(TypeError):
        Leaderboard(table)  # type: ignore[misc]
    lb = Leaderboard(main=table, notes=("a note",))
    assert lb.headline == (table,) and lb.tables == (table,) and lb.notes == ("a note",)


def test_no_publishing_module_is_over_400_lines():
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in PUBLISHING.glob("*.py")}
    assert "leaderboard_groups.py" in sizes and "plot_curve.py" in sizes
    assert {name: n for name, n in sizes.items() if n > 400} == {}
