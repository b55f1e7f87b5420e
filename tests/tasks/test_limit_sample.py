"""``--limit N`` is a sample of the whole task (issue 32): deterministic, spread over every slice
in proportion, paired groups together, nested (a larger N keeps what a smaller one kept), and
recorded in results.json; runs written before it reload with their first-N rule."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmbench.catalog import load_catalog
from rmbench.core.splits import LIMIT_SAMPLING, LIMIT_SAMPLING_V1, limit_sample
from rmbench.core.types import ComparisonGroup
from rmbench.tasks.loading import load_groups


def groups_in(slices: dict[str, int]) -> list[ComparisonGroup]:
    return [ComparisonGroup(f"{s}-{i}", "q", ["a", "b"], [1, 0], subset=s) for s, n in slices.items() for i in range(n)]


def test_every_slice_keeps_its_share_by_hand():
    groups = groups_in({"chat": 30, "code": 10})  # the rows in file order: chat first
    keep = limit_sample(groups, np.arange(40), 8)
    subsets = [groups[i].subset for i in keep]
    assert (subsets.count("chat"), subsets.count("code")) == (6, 2) and keep == sorted(keep)
    keep = limit_sample(groups, np.arange(40), 1)
    assert len(keep) == 1
    assert len(limit_sample(groups, np.arange(40), 2)) == 2 and {groups[i].subset for i in limit_sample(
        groups, np.arange(40), 4)} == {"chat", "code"}


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.integers(1, 30), min_size=1), st.integers(1, 60),
       st.randoms(use_true_random=False))
def test_the_sample_is_nested_proportional_and_ignores_the_row_order(slices, n, rnd):
    groups = groups_in(slices)
    units = np.arange(len(groups))
    small, large = limit_sample(groups, units, n), limit_sample(groups, units, n + 7)
    assert len(small) == min(n, len(groups)) and set(small) <= set(large)
    shuffled = list(groups)
    rnd.shuffle(shuffled)
    assert {groups[i].id for i in small} == {shuffled[i].id for i in limit_sample(shuffled, units, n)}
    total = len(groups)
    for s, k in slices.items():  # within one group of its proportional share
        taken = sum(groups[i].subset == s for i in small)
        assert abs(taken - k * len(small) / total) <= 1.0 + 1e-9, (s, taken, k, len(small), total)
    # The rule since issue 44 (every reported slice first): nested too, one of every slice when n
    # allows, and the same sample wherever every slice's share is a group or more.
    labels = [g.subset for g in groups]
    floor, floor_large = limit_sample(groups, units, n, labels), limit_sample(groups, units, n + 7, labels)
    assert len(floor) == min(n, len(groups)) and set(floor) <= set(floor_large)
    assert {groups[i].id for i in floor} == {shuffled[i].id for i in limit_sample(
        shuffled, units, n, [g.subset for g in shuffled])}
    if n >= len(slices):
        assert {groups[i].subset for i in floor} == set(slices)
    if n * min(slices.values()) >= total:
        assert floor == small


def test_a_small_slice_keeps_a_unit_once_the_limit_allows():
    groups = groups_in({"pairs": 60, "bon": 2})  # RMB at --limit 10 drew no Best-of-N item (issue 44)
    old = limit_sample(groups, np.arange(62), 10)
    assert {groups[i].subset for i in old} == {"pairs"}
    labels = [g.subset for g in groups]
    keep = limit_sample(groups, np.arange(62), 10, labels)
    subsets = [groups[i].subset for i in keep]
    assert (subsets.count("pairs"), subsets.count("bon")) == (9, 1)
    assert [groups[i].subset for i in limit_sample(groups, np.arange(62), 1, labels)] == ["pairs"]  # the larger first


def test_paired_groups_stay_together():
    groups = [ComparisonGroup(f"{kind}:{k}", "q", ["a", "b"], [1, 0]) for k in range(10) for kind in ("tied", "ref")]
    units = np.repeat(np.arange(10), 2)
    keep = limit_sample(groups, units, 5)
    assert len(keep) == 6 and all(units[i] in {units[j] for j in keep} for i in keep)
    assert len({int(units[i]) for i in keep}) == 3  # three whole units


def test_domain_shift_with_a_limit_keeps_every_domain():
    spec = load_catalog().task_spec("domain_shift_sample")
    _, every = load_groups(spec)
    _, sample = load_groups(spec, limit=30)
    shifts = {g.shift for g in every}
    assert len(shifts) > 1 and {g.shift for g in sample} == shifts
    first_30 = {g.shift for g in every[:30]}
    assert len(first_30) == 1  # what "the first N groups" kept: one domain only


def test_results_record_the_rule_and_old_runs_reload_their_first_groups(tmp_path):
    from rmbench.results.storage.folder import load_run
    from rmbench.results.storage.reload import task_rewards
    from rmbench.scoring.runner import EvalConfig, evaluate

    evaluate(EvalConfig(model="length", tasks=("domain_shift_sample",), limit=30, n_bootstrap=10),
             out_dir=tmp_path / "r")
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    assert results["config"]["limit"] == 30 and results["config"]["limit_sampling"] == LIMIT_SAMPLING
    td, rewards = task_rewards(load_run(tmp_path / "r"), "domain_shift_sample")
    assert len({g.shift for g in td.groups}) > 1 and len(rewards) == sum(len(g.responses) for g in td.groups)
    # A run written before the sample existed took the first 30 groups and records no limit_sampling:
    # made here from a whole run (its rewards cover every group) with the old record's fields.
    from rmbench.core.types import data_fingerprint

    spec = load_catalog().task_spec("domain_shift_sample")
    evaluate(EvalConfig(model="length", tasks=("domain_shift_sample",), n_bootstrap=10), out_dir=tmp_path / "old")
    _, first = load_groups(spec, 30, "first")
    assert [g.id for g in first] == [g.id for g in load_groups(spec)[1][:30]]
    path = tmp_path / "old" / "results.json"
    old = json.loads(path.read_text())
    old["config"]["limit"] = 30
    old["tasks"][0]["data_fingerprint"] = data_fingerprint(first)
    del old["tasks"][0]["comparability_key"]  # derived from the fields; an old record's would match them
    path.write_text(json.dumps(old))
    td, _ = task_rewards(load_run(tmp_path / "old"), "domain_shift_sample")
    assert [g.id for g in td.groups] == [g.id for g in first]


def test_the_rules_are_versioned_old_ones_reload_and_an_unknown_one_is_refused(tmp_path):
    from rmbench.errors import DataError

    assert LIMIT_SAMPLING != LIMIT_SAMPLING_V1  # results.json tells the two draws apart
    spec = load_catalog().task_spec("domain_shift_sample")
    _, v1 = load_groups(spec, 30, LIMIT_SAMPLING_V1)
    units = np.arange(len(load_groups(spec)[1]))
    _, every = load_groups(spec)
    assert [g.id for g in v1] == [every[i].id for i in limit_sample(every, units, 30)]
    with pytest.raises(DataError, match="unknown --limit sampling"):
        load_groups(spec, 30, "stratified v9")


def test_a_limit_too_small_for_the_slices_says_which_it_leaves_out():
    spec = load_catalog().task_spec("domain_shift_sample")
    task, every = load_groups(spec)
    slices = {task.limit_slice(g) for g in every}
    heard: list[str] = []
    _, sample = load_groups(spec, 1, warn=heard.append)
    assert len(heard) == 1 and "--limit 1 is too small" in heard[0] and len(slices) > 1
    left = slices - {task.limit_slice(sample[0])}
    assert heard[0].endswith("left out: " + ", ".join(s for s in dict.fromkeys(task.limit_slice(g) for g in every)
                                                      if s in left))
    heard.clear()
    load_groups(spec, len(slices) * 2, warn=heard.append)
    assert heard == []


def test_the_progress_line_says_what_a_limit_scores():
    from rmbench.scoring.runner import limit_note

    class Loaded:
        def __init__(self, name, sizes):
            self.groups = [ComparisonGroup(f"{name}{i}", "q", ["a"] * k, [1] + [0] * (k - 1)) for i, k in
                           enumerate(sizes)]
            self.n_responses = sum(sizes)

    assert limit_note(None, [Loaded("t", [2])]) == ""
    assert limit_note(1, [Loaded("t", [2, 3])]) == " (--limit 1: 2 groups, paired groups kept together; 5 responses)"
    assert limit_note(2, [Loaded("a", [2, 2]), Loaded("b", [4])]) == " (--limit 2 per task: 3 groups; 8 responses)"
