import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmbench.core.specs import ModelSpec
from rmbench.core.types import ComparisonGroup, Message, PairIndex, data_fingerprint


def test_preference_pair_and_pairs():
    g = ComparisonGroup.preference_pair("p1", "Hi?", "Hello!", "Go away.")
    assert g.utilities == (1, 0)
    assert g.discrimination_pairs() == [(0, 1)]
    assert g.specificity_pairs() == []


def test_pairs_follow_utilities_and_equivalence_levels():
    g = ComparisonGroup("g", "q", ["a", "b", "c", "d", "e"], [2, 1, 1, 0, 0])
    assert sorted(g.discrimination_pairs()) == [(0, 1), (0, 2), (0, 3), (0, 4), (1, 3), (1, 4), (2, 3), (2, 4)]
    assert g.specificity_pairs() == [(1, 2), (3, 4)]
    only_top = ComparisonGroup("g", "q", ["a", "b", "c", "d", "e"], [2, 1, 1, 0, 0], equivalence_levels=[1])
    assert only_top.specificity_pairs() == [(1, 2)]
    none = ComparisonGroup("g", "q", ["a", "b", "c"], [1, 1, 0], equivalence_levels=())
    assert none.specificity_pairs() == []


def test_groups_are_frozen_hashable_and_validated():
    g = ComparisonGroup("g", [{"role": "user", "content": "hi"}], ["a", "b"], [1, 0], meta={"src": "x"})
    assert g.prompt == (Message("user", "hi"),)
    assert hash(g) == hash(ComparisonGroup("g", (Message("user", "hi"),), ("a", "b"), (1, 0), meta={"src": "x"}))
    assert g.meta_dict == {"src": "x"}
    with pytest.raises(AttributeError):  # frozen: dataclasses.FrozenInstanceError
        g.id = "other"
    with pytest.raises(ValueError, match="2 responses but 3 utilities"):
        ComparisonGroup("g", "q", ["a", "b"], [1, 0, 0])
    with pytest.raises(ValueError, match="utilities must be integers"):
        ComparisonGroup("g", "q", ["a", "b"], [1.5, 0])
    with pytest.raises(ValueError, match="at least 2"):
        ComparisonGroup("g", "q", ["a"], [1])


def test_fingerprint_is_canonical_and_sensitive():
    a = [ComparisonGroup("g", "q", ["a", "b"], [1, 0], meta={"x": 1, "y": 2})]
    b = [ComparisonGroup("g", "q", ["a", "b"], [1, 0], meta={"y": 2, "x": 1})]
    c = [ComparisonGroup("g", "q", ["a", "b"], [0, 1])]
    assert data_fingerprint(a) == data_fingerprint(b)
    assert data_fingerprint(a) != data_fingerprint(c)
    assert len(data_fingerprint(a)) == 64


def test_spec_is_hashable_and_round_trips():
    s = ModelSpec.make("my", "python", {"target": "m:f", "opts": {"b": 1, "a": [1, 2]}})
    assert s == ModelSpec.make("my", "python", {"opts": {"a": [1, 2], "b": 1}, "target": "m:f"})
    assert {s: 1}[s] == 1
    assert s.args_dict == {"target": "m:f", "opts": {"a": [1, 2], "b": 1}}
    assert s.fingerprint() == ModelSpec.make("my", "python", s.args_dict).fingerprint()


group_shapes = st.lists(st.lists(st.integers(0, 3), min_size=2, max_size=5), min_size=1, max_size=8)


@settings(max_examples=100, deadline=None)
@given(group_shapes, st.data())
def test_select_groups_matches_rebuilding_from_the_selected_groups(shapes, data):
    groups = [ComparisonGroup(f"g{i}", "q", [f"r{j}" for j in range(len(u))], u) for i, u in enumerate(shapes)]
    rewards = np.arange(sum(len(u) for u in shapes), dtype=float) * 1.5
    index = PairIndex.from_groups(groups)
    sel = np.array(data.draw(st.lists(st.integers(0, len(groups) - 1), min_size=1, max_size=10)))
    sub = index.select_groups(sel)
    r = index.gather_rewards(rewards, sel)
    # reference: rebuild from the selected groups with their rewards
    offsets = np.concatenate([[0], np.cumsum([len(u) for u in shapes])])
    ref_groups = [groups[i] for i in sel]
    ref_rewards = np.concatenate([rewards[offsets[i]:offsets[i + 1]] for i in sel])
    ref = PairIndex.from_groups(ref_groups)
    assert np.array_equal(r, ref_rewards)
    assert sorted(zip(r[sub.diff_better], r[sub.diff_worse])) == sorted(zip(ref_rewards[ref.diff_better],
                                                                            ref_rewards[ref.diff_worse]))
    assert sorted(zip(r[sub.eq_a], r[sub.eq_b])) == sorted(zip(ref_rewards[ref.eq_a], ref_rewards[ref.eq_b]))


def _pairs_by_loops(g):
    """The pair lists as plain loops (the definition): discrimination (better, worse) row by row,
    specificity a < b within a declared equivalence level."""
    u, levels = g.utilities, g.equivalence_levels
    diff = [(a, b) for a in range(len(u)) for b in range(len(u)) if u[a] > u[b]]
    same = [(a, b) for a in range(len(u)) for b in range(a + 1, len(u))
            if u[a] == u[b] and (levels is None or u[a] in levels)]
    return diff, same


@settings(max_examples=150, deadline=None)
@given(utilities=st.lists(st.integers(-2, 3), min_size=2, max_size=9),
       levels=st.one_of(st.none(), st.lists(st.integers(-2, 3), max_size=3).map(tuple)))
def test_pair_arrays_equal_the_definition_in_order(utilities, levels):
    g = ComparisonGroup("g", "p", [f"r{i}" for i in range(len(utilities))], utilities, equivalence_levels=levels)
    diff, same = _pairs_by_loops(g)
    assert g.discrimination_pairs() == diff
    assert g.specificity_pairs() == same
    better, worse, a, b = g.pair_arrays()
    assert all(x.dtype == np.int64 for x in (better, worse, a, b))


def test_pair_index_of_rewrites_lists_pairs_forms_and_flips_in_order():
    # Two originals (u 1, 0) and their paraphrases: forms split pairs into within- and cross-form,
    # and the paraphrases' preference is a flip pair of the originals'.
    g = ComparisonGroup("g", "p", ["a", "b", "a2", "b2"], [1, 0, 1, 0],
                        forms=("original", "original", "paraphrase", "paraphrase"), rewrite_of=(0, 1, 0, 1))
    plain = ComparisonGroup("h", "q", ["x", "y", "z"], [2, 2, 0])
    idx = PairIndex.from_groups([plain, g])
    assert idx.diff_better.tolist() == [0, 1, 3, 3, 5, 5] and idx.diff_worse.tolist() == [2, 2, 4, 6, 4, 6]
    assert idx.diff_group.tolist() == [0, 0, 1, 1, 1, 1]
    assert idx.diff_cross.tolist() == [False, False, False, True, True, False]
    assert idx.eq_a.tolist() == [0, 3, 4] and idx.eq_b.tolist() == [1, 5, 6]
    assert idx.eq_cross.tolist() == [False, True, True]
    flips = (idx.flip_a.tolist(), idx.flip_b.tolist(), idx.flip_oa.tolist(), idx.flip_ob.tolist())
    assert flips == ([5], [6], [3], [4])
    assert idx.response_group.tolist() == [0, 0, 0, 1, 1, 1, 1]
    assert idx.response_length.tolist() == [1, 1, 1, 1, 1, 2, 2]
    empty = PairIndex.from_groups([])
    assert empty.diff_better.dtype == np.int64 and len(empty.eq_a) == 0 and empty.diff_cross.dtype == bool
