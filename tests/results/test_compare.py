import json

import pytest
from typer.testing import CliRunner

from rmbench.cli.app import app
from rmbench.errors import ConfigError, DataError
from rmbench.results.statistics.compare import compare_runs
from rmbench.results.storage.folder import load_run
from rmbench.scoring.runner import EvalConfig, evaluate


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("cmp")
    for model in ("oracle", "length"):
        evaluate(EvalConfig(model=model, n_bootstrap=20), out_dir=base / model)
    evaluate(EvalConfig(model="length", eps=(0.3,), n_bootstrap=20), out_dir=base / "length-eps")
    return base


def test_paired_difference_matches_the_runs(runs):
    a, b = load_run(runs / "oracle"), load_run(runs / "length")
    rows = compare_runs(a, b, n_bootstrap=200)
    def key(m):  # balanced_best's record eps is where it peaks, not an input
        return m.metric, m.eps if m.metric in ("discrimination", "specificity") else None

    point = {key(m): m.value for m in a.record.records() if m.subset is None and m.shift is None}
    other = {key(m): m.value for m in b.record.records() if m.subset is None and m.shift is None}
    for r in rows:
        # nan where a metric is undefined (the oracle's length correlation: all its tie gaps are 0)
        assert r.value_a == pytest.approx(point[(r.metric, r.eps)], nan_ok=True)
        assert r.value_b == pytest.approx(other[(r.metric, r.eps)], nan_ok=True)
        assert r.diff == pytest.approx(r.value_a - r.value_b, nan_ok=True)
    acc = [r for r in rows if r.metric == "pairwise_accuracy"][0]
    assert acc.ci_low > 0.5 and acc.n_units == 20  # 20 prompt ids: tied:K and ref:K resampled together


def test_a_run_against_itself_differs_by_exactly_zero(runs):
    a = load_run(runs / "length")
    for r in compare_runs(a, a, n_bootstrap=50):
        if r.diff == r.diff:
            assert r.diff == 0.0 and r.ci_low == 0.0 and r.ci_high == 0.0


def test_runs_with_other_eps_compare_at_the_eps_they_share(runs, tmp_path):
    evaluate(EvalConfig(model="length", eps=(0.0, 0.05, 0.1, 0.5), n_bootstrap=20), out_dir=tmp_path / "len")
    rows = compare_runs(load_run(runs / "oracle"), load_run(tmp_path / "len"), n_bootstrap=50)
    assert sorted({r.eps for r in rows if r.metric == "discrimination"}) == [0.0, 0.1]
    with pytest.raises(ConfigError, match=r"share no eps \(A: 0,0.1, B: 0.3\)"):
        compare_runs(load_run(runs / "oracle"), load_run(runs / "length-eps"))


def test_incomparable_or_changed_data_is_refused(runs, tmp_path):
    evaluate(EvalConfig(model="length", limit=5, n_bootstrap=20), out_dir=tmp_path / "limit")
    with pytest.raises(ConfigError, match="not comparable \\(data fingerprint"):
        compare_runs(load_run(runs / "oracle"), load_run(tmp_path / "limit"))
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"id": "tied:0", "prompt": "q", "chosen": ["a", "b"], "rejected": ["c"]}) + "\n")
    with pytest.raises(DataError, match="fingerprint differs"):
        compare_runs(load_run(runs / "oracle"), load_run(runs / "length"), data={"ties_sample": str(other)})


def test_cli_compare(runs):
    result = CliRunner().invoke(app, ["compare", str(runs / "oracle"), str(runs / "length"), "--bootstrap", "50"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "oracle (A) vs length (B)" in result.output and "ds_auc" in result.output and "*" in result.output


def test_compare_reports_every_shift_slice_and_the_gap_differences(tmp_path):
    """issue 32: each shift slice (the originals too) and, for paired copies, A's gap minus B's."""
    from rmbench.results.statistics.compare import compare_runs
    from rmbench.results.storage.folder import load_run
    from rmbench.scoring.runner import EvalConfig, evaluate

    for model in ("length", "oracle"):
        evaluate(EvalConfig(model=model, tasks=("translation_shift_sample",), n_bootstrap=10), out_dir=tmp_path / model)
    rows = compare_runs(load_run(tmp_path / "length"), load_run(tmp_path / "oracle"), n_bootstrap=50)
    acc = {r.shift: r for r in rows if r.metric == "pairwise_accuracy" and r.subset is None}
    assert set(acc) == {None, "none", "translation:fr", "translation:es", "translation:ru"}
    gaps = {r.shift: r for r in rows if r.metric == "pairwise_accuracy_shift_gap"}
    assert set(gaps) == {"translation:fr", "translation:es", "translation:ru"}
    for shift, gap in gaps.items():  # by hand: each run's slice accuracy minus its originals'
        assert gap.value_a == pytest.approx(acc[shift].value_a - acc["none"].value_a)
        assert gap.value_b == pytest.approx(acc[shift].value_b - acc["none"].value_b) == 0.0  # the oracle never errs
        assert gap.diff == pytest.approx(gap.value_a - gap.value_b) and gap.ci_low <= gap.diff <= gap.ci_high
    # the run's own record of the gap agrees
    length = load_run(tmp_path / "length").record
    assert gaps["translation:ru"].value_a == pytest.approx(
        length.value("translation_shift_sample", "pairwise_accuracy_shift_gap", shift="translation:ru"))


def test_compare_of_a_domain_shift_names_its_in_domain_slice_and_pairs_no_gap(tmp_path):
    from rmbench.results.statistics.compare import compare_runs
    from rmbench.results.storage.folder import load_run
    from rmbench.scoring.runner import EvalConfig, evaluate

    for model in ("length", "oracle"):
        evaluate(EvalConfig(model=model, tasks=("domain_shift_sample",), n_bootstrap=10), out_dir=tmp_path / model)
    rows = compare_runs(load_run(tmp_path / "length"), load_run(tmp_path / "oracle"), n_bootstrap=20)
    assert {r.shift for r in rows} == {None, "in-domain (chat)", "domain:math", "domain:code"}
    assert not any(r.metric.endswith("_shift_gap") for r in rows)
