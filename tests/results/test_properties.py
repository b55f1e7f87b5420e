"""Hypothesis properties of whole scored tasks (tests/core/test_metrics.py holds those of the metric
functions on bare gap arrays): what summarize reports does not depend on the order of groups or
of a group's responses, sigma-unit numbers (CIs included) survive r -> c r + b, probabilities
stay in [0, 1], Prop. 2.1 holds on every slice, and any change to a task's data changes its
fingerprint and comparability key."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rmbench.core.metrics import METRIC_VERSION
from rmbench.core.types import ComparisonGroup, Message, data_fingerprint
from rmbench.results.statistics.summary import summarize
from rmbench.results.storage.record import comparability_key

EPS = (0.0, 0.3)
PROBABILITIES = ("pairwise_accuracy", "sign_accuracy", "ds_auc", "balanced_best", "discrimination", "specificity")


@st.composite
def scored_tasks(draw, max_groups: int = 7):
    """Groups with subsets, declared equivalence levels and shifted copies, and integer rewards
    (exact in float64 under the affine maps below)."""
    groups, rewards = [], []
    originals: list[str] = []
    for i in range(draw(st.integers(1, max_groups))):
        k = draw(st.integers(2, 5))
        shift = source = None
        if originals and draw(st.booleans()):
            source, shift = draw(st.sampled_from(originals)), draw(st.sampled_from(["paraphrase", "translation:de"]))
        groups.append(ComparisonGroup(
            f"g{i}", f"prompt {i}", [f"response {i}.{j}" for j in range(k)],
            draw(st.lists(st.integers(0, 2), min_size=k, max_size=k)),
            subset=draw(st.sampled_from([None, "a", "b"])), source_id=source, shift=shift,
            equivalence_levels=draw(st.sampled_from([None, (1,), (0, 2), ()]))))
        if shift is None:
            originals.append(f"g{i}")
        rewards += draw(st.lists(st.integers(-6, 6), min_size=k, max_size=k))
    return groups, np.array(rewards, dtype=np.float64)


def _thresholds_clear(groups, rewards, eps=EPS) -> bool:
    """No pair gap within rounding of an eps * sigma threshold, where float noise could flip it."""
    sigma = float(np.std(rewards, ddof=1)) if rewards.size > 1 else 0.0
    gaps = np.abs(rewards[:, None] - rewards[None, :]).ravel()
    return all(np.min(np.abs(gaps - e * sigma)) > 1e-6 for e in eps if e > 0)


def _table(records, with_ci: bool = False) -> dict:
    out = {}
    for r in records:
        key = (r.task, r.subset, r.shift, r.metric, None if r.eps is None or r.metric == "balanced_best" else r.eps)
        out[key] = (r.value, r.n) + ((r.ci_low, r.ci_high) if with_ci else ())
    return out


def _same(a: dict, b: dict, approx=("reward_margin", "balanced_best", "reward_margin_shift_gap")) -> None:
    assert a.keys() == b.keys()
    for key in a:
        for x, y in zip(a[key], b[key]):
            if x is None or y is None or (isinstance(x, float) and math.isnan(x)):
                assert (x is None and y is None) or (math.isnan(x) and math.isnan(y)), (key, a[key], b[key])
            elif key[3] in approx:
                assert x == pytest.approx(y, rel=1e-9, abs=1e-12), (key, a[key], b[key])
            else:
                assert x == y, (key, a[key], b[key])


def _segments(groups):
    starts = np.cumsum([0] + [len(g.responses) for g in groups])
    return [slice(int(starts[i]), int(starts[i + 1])) for i in range(len(groups))]


@settings(max_examples=120, deadline=None)
@given(scored_tasks(), st.data())
def test_summary_ignores_the_order_of_groups(task, data):
    groups, rewards = task
    assume(_thresholds_clear(groups, rewards))
    order = data.draw(st.permutations(range(len(groups))))
    seg = _segments(groups)
    moved_rewards = np.concatenate([rewards[seg[i]] for i in order])
    base = summarize("t", groups, rewards, EPS, n_bootstrap=0)
    moved = summarize("t", [groups[i] for i in order], moved_rewards, EPS, n_bootstrap=0)
    _same(_table(base), _table(moved))


@settings(max_examples=120, deadline=None)
@given(scored_tasks(), st.data())
def test_summary_ignores_the_order_of_responses_within_a_group(task, data):
    groups, rewards = task
    assume(_thresholds_clear(groups, rewards))
    moved_groups, moved_rewards = [], []
    for g, sl in zip(groups, _segments(groups)):
        p = data.draw(st.permutations(range(len(g.responses))))
        moved_groups.append(ComparisonGroup(g.id, g.prompt, [g.responses[j] for j in p], [g.utilities[j] for j in p],
                                            subset=g.subset, source_id=g.source_id, shift=g.shift,
                                            equivalence_levels=g.equivalence_levels))
        moved_rewards += [rewards[sl][j] for j in p]
    base = summarize("t", groups, rewards, EPS, n_bootstrap=0)
    moved = summarize("t", moved_groups, np.array(moved_rewards), EPS, n_bootstrap=0)
    _same(_table(base), _table(moved))


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(scored_tasks(), st.integers(1, 64), st.integers(-50, 50))
def test_sigma_unit_summary_and_its_cis_survive_affine_rewards(task, c4, b):
    """r -> c r + b (c > 0): every reported number in sigma units, bootstrap CIs included (same
    seed, same draws), is unchanged. c = k/4 and integer b keep the rewards exact."""
    groups, rewards = task
    assume(rewards.size > 1 and np.std(rewards) > 0 and _thresholds_clear(groups, rewards))
    base = summarize("t", groups, rewards, EPS, n_bootstrap=30, seed=4)
    moved = summarize("t", groups, (c4 / 4) * rewards + b, EPS, n_bootstrap=30, seed=4)
    _same(_table(base, with_ci=True), _table(moved, with_ci=True))


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(scored_tasks(), st.integers(0, 3))
def test_probabilities_and_their_cis_stay_in_the_unit_interval(task, seed):
    groups, rewards = task
    for r in summarize("t", groups, rewards, EPS, n_bootstrap=25, seed=seed):
        lo_bound, hi_bound = (-1.0, 1.0) if r.metric.endswith("_shift_gap") else (0.0, 1.0)
        if r.metric.startswith("reward_margin"):
            lo_bound, hi_bound = (-math.inf, math.inf) if r.metric.endswith("_shift_gap") else (0.0, math.inf)
        elif r.metric.removesuffix("_shift_gap") not in PROBABILITIES:
            continue
        for v in (r.value, r.ci_low, r.ci_high):
            assert v is None or math.isnan(v) or lo_bound - 1e-12 <= v <= hi_bound + 1e-12, r
        if r.ci_low is not None:
            assert r.ci_low <= r.ci_high + 1e-12, r
        assert r.n >= 0


@settings(max_examples=150, deadline=None)
@given(scored_tasks())
def test_prop_2_1_holds_on_every_slice(task):
    """accuracy over all pairs at eps = 0 (sign agreement) = Spec(0) P(equal) + D(0) P(different),
    with the pair counts the records report (arXiv 2606.21795, Prop. 2.1)."""
    groups, rewards = task
    table = _table(summarize("t", groups, rewards, (0.0,), n_bootstrap=0))
    slices = {(k[1], k[2]) for k in table if not k[3].endswith("_shift_gap")}
    for subset, shift in slices:
        acc, n_all = table[("t", subset, shift, "sign_accuracy", None)]
        d, n_diff = table[("t", subset, shift, "discrimination", 0.0)]
        spec, n_eq = table[("t", subset, shift, "specificity", 0.0)]
        assert n_all == n_diff + n_eq
        if n_all == 0:
            assert math.isnan(acc)
            continue
        expected = (0.0 if n_eq == 0 else spec * n_eq / n_all) + (0.0 if n_diff == 0 else d * n_diff / n_all)
        assert acc == pytest.approx(expected, abs=1e-12), (subset, shift)


# --- the data fingerprint and the comparability key --------------------------------------------

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=10)


@st.composite
def task_data(draw):
    groups = []
    for i in range(draw(st.integers(1, 5))):
        k = draw(st.integers(2, 4))
        prompt = draw(st.one_of(text, st.lists(st.builds(Message, st.sampled_from(["system", "user"]), text),
                                               min_size=1, max_size=2).map(tuple)))
        groups.append(ComparisonGroup(
            draw(text) + f"#{i}", prompt, draw(st.lists(text, min_size=k, max_size=k)),
            draw(st.lists(st.integers(-3, 3), min_size=k, max_size=k)),
            subset=draw(st.sampled_from([None, "x"])), equivalence_levels=draw(st.sampled_from([None, (0,)])),
            meta=draw(st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 3), max_size=2))))
    return groups


def _other_char(c: str) -> str:
    return "b" if c == "a" else "a"


def _edit(s: str, pos: int) -> str:
    """One character of ``s`` changed (or one added to an empty string)."""
    if not s:
        return "a"
    pos %= len(s)
    return s[:pos] + _other_char(s[pos]) + s[pos + 1:]


def _replace(g: ComparisonGroup, **changes) -> ComparisonGroup:
    fields = dict(id=g.id, prompt=g.prompt, responses=g.responses, utilities=g.utilities, subset=g.subset,
                  source_id=g.source_id, shift=g.shift, equivalence_levels=g.equivalence_levels, meta=g.meta_dict)
    fields.update(changes)
    return ComparisonGroup(**fields)


MUTATIONS = ("response_char", "prompt_char", "utility", "id", "subset", "levels", "meta", "shift",
             "swap_groups", "swap_responses", "drop_group", "duplicate_response")


def _mutate(groups, kind: str, data) -> list[ComparisonGroup]:
    gi = data.draw(st.integers(0, len(groups) - 1))
    g = groups[gi]
    pos = data.draw(st.integers(0, 100))
    ri = data.draw(st.integers(0, len(g.responses) - 1))
    out = list(groups)
    if kind == "response_char":
        out[gi] = _replace(g, responses=[_edit(r, pos) if j == ri else r for j, r in enumerate(g.responses)])
    elif kind == "prompt_char":
        prompt = (_edit(g.prompt, pos) if isinstance(g.prompt, str)
                  else (Message(g.prompt[0].role, _edit(g.prompt[0].content, pos)),) + g.prompt[1:])
        out[gi] = _replace(g, prompt=prompt)
    elif kind == "utility":
        out[gi] = _replace(g, utilities=[u + 1 if j == ri else u for j, u in enumerate(g.utilities)])
    elif kind == "id":
        out[gi] = _replace(g, id=_edit(g.id, pos))
    elif kind == "subset":
        out[gi] = _replace(g, subset="y" if g.subset else "x")
    elif kind == "levels":
        out[gi] = _replace(g, equivalence_levels=None if g.equivalence_levels is not None else (0,))
    elif kind == "meta":
        out[gi] = _replace(g, meta={**g.meta_dict, "c": 1})
    elif kind == "shift":
        out[gi] = _replace(g, source_id=g.id, shift="paraphrase")
    elif kind == "swap_groups":
        assume(len(groups) > 1)
        gj = (gi + 1) % len(groups)
        out[gi], out[gj] = groups[gj], groups[gi]
    elif kind == "swap_responses":
        rj = (ri + 1) % len(g.responses)
        assume((g.responses[ri], g.utilities[ri]) != (g.responses[rj], g.utilities[rj]))
        order = list(range(len(g.responses)))
        order[ri], order[rj] = rj, ri
        out[gi] = _replace(g, responses=[g.responses[j] for j in order], utilities=[g.utilities[j] for j in order])
    elif kind == "drop_group":
        assume(len(groups) > 1)
        del out[gi]
    elif kind == "duplicate_response":
        out[gi] = _replace(g, responses=g.responses + (g.responses[ri],), utilities=g.utilities + (g.utilities[ri],))
    return out


def _key(groups, version: int = 1, eps=(0.0, 0.1), unit: str = "sigma") -> str:
    return comparability_key("t", version, data_fingerprint(groups), METRIC_VERSION, eps, unit)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(task_data(), st.sampled_from(MUTATIONS), st.data())
def test_any_change_to_the_data_changes_fingerprint_and_key(groups, kind, data):
    """Order counts: rewards.jsonl rows are matched by position, and the bootstrap draws by index."""
    changed = _mutate(groups, kind, data)
    assert data_fingerprint(changed) != data_fingerprint(groups), kind
    assert _key(changed) != _key(groups), kind


@settings(max_examples=100, deadline=None)
@given(task_data(), st.permutations([0.0, 0.1, 0.5]))
def test_fingerprint_and_key_follow_content_not_form(groups, eps):
    rebuilt = [ComparisonGroup(**{**g.to_json(), "meta": dict(reversed(list(g.meta_dict.items())))}) for g in groups]
    assert data_fingerprint(rebuilt) == data_fingerprint(groups)
    assert _key(groups, eps=eps) == _key(groups, eps=(0.0, 0.1, 0.5))  # the eps list is a set
    others = {_key(groups, version=2, eps=eps), _key(groups, eps=(0.0, 0.1)), _key(groups, eps=eps, unit="raw"),
              _key(groups, eps=eps)}
    assert len(others) == 4


def test_a_task_file_fingerprint_follows_rows_not_formatting(tmp_path):
    """Loaded through the ``groups`` kind: reformatted JSON keeps the fingerprint, swapped rows
    or one changed character do not."""
    from rmbench.core.specs import TaskSpec
    from rmbench.tasks.loading import load_groups

    rows = [ComparisonGroup(f"g{i}", f"q{i}", [f"a{i}", f"b{i}", f"c{i}"], [2, 1, 1]).to_json() for i in range(3)]

    def fingerprint(lines: list[str]) -> str:
        path = tmp_path / "groups.jsonl"
        path.write_text("\n".join(lines) + "\n")
        return data_fingerprint(load_groups(TaskSpec.make("t", "groups", {"path": str(path)}, version=1))[1])

    base = fingerprint([json.dumps(r) for r in rows])
    assert fingerprint([json.dumps(r, indent=None, separators=(", ", " : "), sort_keys=True) for r in rows]) == base
    assert fingerprint([json.dumps(r) for r in (rows[1], rows[0], rows[2])]) != base
    edited = json.loads(json.dumps(rows))
    edited[2]["responses"][1] = "b3"
    assert fingerprint([json.dumps(r) for r in edited]) != base
