"""rmbench report: example selection on hand cases, the page from built-in model runs, the CLI,
and (slow) the page in a real headless Chromium."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from rmbench.core.metrics import reward_sigma
from rmbench.core.types import ComparisonGroup
from rmbench.results.publishing.examples import (
    Selection,
    discrimination_failures,
    length_points,
    oversensitive_pairs,
    preference_flips,
    word_diff,
)
from rmbench.results.publishing.report import ReportOptions, build_report, write_report
from rmbench.results.storage.folder import RunFolder, load_run
from rmbench.scoring.runner import EvalConfig, evaluate
from tests.support.browser import find_browser

HOSTILE = '<script>document.title="pwned"</script><img src=x onerror="document.title=\'pwned\'">'


def _g(gid: str, utilities, subset=None, **kw) -> ComparisonGroup:
    return ComparisonGroup(id=gid, prompt=f"prompt {gid}",
                           responses=tuple(f"answer {gid}{i}" for i in range(len(utilities))),
                           utilities=tuple(utilities), subset=subset, **kw)


# --- selection on hand cases ------------------------------------------------------------------

def test_top_oversensitive_pair_is_the_largest_equal_utility_gap():
    groups = [_g("a", (1, 1, 0)), _g("b", (2, 2, 2))]
    rewards = np.array([0.0, 0.5, 9.0, 1.0, 4.0, 2.0])  # a: |0-0.5|=0.5; b: 3, 1, 2
    sel = oversensitive_pairs("t", groups, rewards, top=2)
    assert sel.total == 4
    top = sel.examples[0]
    assert (top.group_id, top.a.index, top.b.index) == ("b", 1, 0)  # higher reward shown first
    assert top.gap == pytest.approx(3.0)
    assert top.gap_sigma == pytest.approx(3.0 / reward_sigma(rewards))
    assert [(p.group_id, round(p.gap, 6)) for p in sel.examples] == [("b", 3.0), ("b", 2.0)]


def test_one_prompt_fills_at_most_two_rows_of_a_list():
    groups = [_g("big", (1,) * 6), _g("small", (1, 1))]  # 15 equal-utility pairs in "big", 1 in "small"
    rewards = np.array([0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 0.0, 1.0])
    sel = oversensitive_pairs("t", groups, rewards, top=5)
    assert [p.group_id for p in sel.examples] == ["big", "big", "small"]
    assert [round(p.gap, 6) for p in sel.examples] == [50.0, 40.0, 1.0]
    assert sel.left_out == 13 and sel.total == 16  # big's other 13 pairs ranked above small's


def test_ties_in_the_gap_keep_group_and_pair_order():
    groups = [_g("a", (1, 1)), _g("b", (1, 1)), _g("c", (1, 1))]
    rewards = np.array([0.0, 1.0, 5.0, 4.0, 0.0, 1.0])  # every gap is 1
    assert [p.group_id for p in oversensitive_pairs("t", groups, rewards, top=3).examples] == ["a", "b", "c"]


def test_utility_levels_and_groups_without_equal_answers():
    # utility 0 is no equivalence level of "a": its pair is no specificity pair; "b" has none at all
    # (a group of one answer cannot exist: ComparisonGroup refuses it)
    groups = [_g("a", (1, 1, 0, 0), equivalence_levels=(1,)), _g("b", (3, 2))]
    rewards = np.array([1.0, 1.2, -5.0, 5.0, 100.0, 0.0])
    over = oversensitive_pairs("t", groups, rewards, top=5)
    assert over.total == 1 and (over.examples[0].a.index, over.examples[0].b.index) == (1, 0)
    fail = discrimination_failures("t", groups, rewards, top=5)
    assert fail.total == 5
    worst = fail.examples[0]
    assert (worst.group_id, worst.a.index, worst.b.index, worst.gap) == ("a", 0, 3, pytest.approx(-4.0))
    assert worst.a.utility > worst.b.utility
    # at most two pairs of one prompt: a's 6.0 and 6.2 are passed over for b's 100
    assert [round(p.gap, 6) for p in fail.examples] == [-4.0, -3.8, 100.0] and fail.left_out == 2
    assert oversensitive_pairs("t", [_g("b", (3, 2))], np.array([1.0, 0.0]), top=5) == Selection((), 0)
    with pytest.raises(ValueError, match="at least 2"):
        _g("solo", (3,))


def test_length_points_and_sigma_zero():
    g = ComparisonGroup(id="g", prompt="p", responses=("a", "abc", "abcdef"), utilities=(1, 1, 1))
    pts = length_points([g], np.array([1.0, 2.0, 4.0]), limit=10)
    assert pts.total == 3 and pts.length_diff == (-2.0, -5.0, -3.0)
    assert pts.correlation == pytest.approx(1.0)
    flat = oversensitive_pairs("t", [g], np.zeros(3), top=1)
    assert flat.examples[0].gap == 0 and math.isnan(flat.examples[0].gap_sigma)


def test_preference_flips_and_rewrite_diff():
    g = ComparisonGroup(id="r", prompt="p", responses=("good answer here", "bad one", "good answer there", "bad two"),
                        utilities=(1, 0, 1, 0), forms=("original", "original", "paraphrase", "paraphrase"),
                        rewrite_of=(0, 1, 0, 1))
    rewards = np.array([2.0, 1.0, 0.0, 3.0])  # originals prefer the good one; the rewrites flip it
    sel = preference_flips("t", [g], rewards, top=5)
    assert sel.total == 1
    f = sel.examples[0]
    assert (f.original.a.index, f.original.b.index, f.rewritten.a.index, f.rewritten.b.index) == (0, 1, 2, 3)
    over = oversensitive_pairs("t", [g], rewards, top=5)
    rewrite = [p for p in over.examples if {p.a.index, p.b.index} == {0, 2}][0]
    assert [(s.op, s.text) for s in rewrite.diff] == [("equal", "good answer"), ("delete", "here"), ("insert", "there")]
    assert word_diff("a b", "a b") == (word_diff("a b", "a b")[0],)


# --- the page from real (built-in model) runs ---------------------------------------------------

def _run(root: Path, name: str, model: str, task: str = "ties_sample", **kw) -> RunFolder:
    evaluate(EvalConfig(model=model, tasks=(task,), n_bootstrap=20, use_cache=False, **kw), out_dir=root / name)
    return load_run(root / name)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, RunFolder]:
    root = tmp_path_factory.mktemp("report_runs")
    return {"length": _run(root, "len", "length"), "oracle": _run(root, "oracle", "oracle")}


def _hand_top_pair(folder: RunFolder, task: str) -> tuple[set[str], float]:
    """The largest equal-utility reward gap in sigma and the groups that have it, from rewards.jsonl
    and the task's declared equivalence levels (Ties: equal correct answers only)."""
    from rmbench.results.storage.reload import reload_task

    levels = {g.id: g for g in reload_task(folder.record.task(task), None).groups}
    rows = [json.loads(line) for line in (folder.path / "rewards.jsonl").read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["task"] == task]
    gaps: dict[str, float] = {}
    for gid in dict.fromkeys(r["group_id"] for r in rows):
        rs = [r for r in rows if r["group_id"] == gid]
        gaps[gid] = max([abs(a["reward"] - b["reward"]) for i, a in enumerate(rs) for b in rs[i + 1:]
                         if a["utility"] == b["utility"] and levels[gid].is_equivalence_level(a["utility"])],
                        default=-1.0)
    best = max(gaps.values())
    sigma = float(np.std([r["reward"] for r in rows], ddof=1))
    return {g for g, v in gaps.items() if v == best}, best / sigma


def test_top_pair_matches_a_hand_computation_from_rewards_jsonl(runs):
    folder = runs["length"]
    report = build_report([folder], ReportOptions(top=3))
    top = report.tasks[0].examples[0].oversensitive.examples[0]
    gids, gap_sigma = _hand_top_pair(folder, "ties_sample")
    assert top.group_id in gids and top.gap_sigma == pytest.approx(gap_sigma)
    assert top.a.reward - top.b.reward == pytest.approx(gap_sigma * reward_sigma(
        [r.reward for r in folder.rewards()]))


def test_page_has_the_sections_and_is_self_contained(runs, tmp_path):
    out = write_report([runs["length"], runs["oracle"]], tmp_path / "r.html", ReportOptions(top=4))
    text = out.read_text(encoding="utf-8")
    for part in ("Headline", "Most oversensitive equal-utility pairs", "Worst discrimination failures",
                 "length bias", "top 4 of", "<svg", "data:image/svg+xml;base64,"):
        assert part in text
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "").replace(
        "http://www.w3.org/1999/xlink", "").replace("http://purl.org/dc", "").replace(
        "http://creativecommons.org", "").replace("http://www.w3.org/1999/02/22-rdf-syntax-ns#", "")
    assert "src=\"http" not in text and "<link" not in text


def test_existing_output_is_refused_and_lost_data_is_said(runs, tmp_path):
    from rmbench.errors import ConfigError

    out = tmp_path / "r.html"
    out.write_text("keep")
    with pytest.raises(ConfigError, match="exists"):
        write_report([runs["length"]], out)
    assert out.read_text() == "keep"
    copy = tmp_path / "copy"
    shutil.copytree(runs["length"].path, copy)
    (copy / "rewards.jsonl").unlink()
    report = build_report([load_run(copy)])
    assert report.tasks[0].examples == () and "cannot be reloaded" in report.tasks[0].notes[0]


def _hostile_run(tmp_path: Path) -> RunFolder:
    data = tmp_path / "hostile.jsonl"
    rows = [{"id": f"g{i}", "prompt": HOSTILE, "responses": [HOSTILE + "x" * i, "plain " * (i + 1), HOSTILE],
             "utilities": [1, 1, 0]} for i in range(4)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "entries").mkdir()
    (tmp_path / "entries" / "hostile.yaml").write_text(
        f"name: hostile\nkind: groups\nversion: 1\ndescription: hostile texts\nargs:\n  path: {data}\n")
    evaluate(EvalConfig(model="length", tasks=("hostile",), include=(str(tmp_path / "entries"),), n_bootstrap=10,
                        use_cache=False), out_dir=tmp_path / "run")
    return load_run(tmp_path / "run")


def test_hostile_text_is_escaped(tmp_path):
    folder = _hostile_run(tmp_path)
    text = write_report([folder], tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<script>document" not in text and "<img src=x" not in text
    assert "&lt;script&gt;" in text


def test_cli_report(runs, tmp_path):
    from typer.testing import CliRunner

    from rmbench.cli import app

    out = tmp_path / "r.html"
    res = CliRunner().invoke(app, ["report", str(runs["length"].path), "--out", str(out), "--top", "2"])
    assert res.exit_code == 0, res.output
    assert "top 2 of" in out.read_text()
    again = CliRunner().invoke(app, ["report", str(runs["length"].path), "--out", str(out)])
    assert again.exit_code == 2 and "error:" in again.output and "Traceback" not in again.output
    bad = CliRunner().invoke(app, ["report", str(tmp_path / "nope"), "--out", str(tmp_path / "x.html")])
    assert bad.exit_code == 2 and "nope" in bad.output


# --- a real headless browser ---------------------------------------------------------------------

def _browser() -> str:
    return find_browser()


def _chromium(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           f"--user-data-dir={profile}", "--virtual-time-budget=3000", *args],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(profile)})


class _Rows(HTMLParser):
    """Group ids (data-v of the pair cell) of the rows of the table with id ``tid``, and tag counts."""

    def __init__(self, tid: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tid, self.inside, self.ids, self.tags, self.title, self.hidden = tid, False, [], [], "", 0
        self.attrs: list[tuple[str, str | None]] = []
        self._title = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        self.attrs += attrs
        self._title = tag == "title"
        if tag == "table":
            self.inside = a.get("id") == self.tid
        if self.inside and tag == "td" and a.get("data-v", "").startswith("g"):
            self.ids.append(a["data-v"])
        if self.inside and tag == "tr" and "none" in (a.get("style") or ""):
            self.hidden += 1

    def handle_data(self, data):
        if self._title:
            self.title += data

    def handle_endtag(self, tag):
        self._title = False


@pytest.mark.slow
def test_page_in_a_headless_browser(tmp_path):
    browser = _browser()
    folder = _hostile_run(tmp_path)
    page = write_report([folder], tmp_path / "r.html", ReportOptions(top=10))
    profile = tmp_path / "profile"
    dom = _chromium(browser, profile, "--dump-dom", page.resolve().as_uri())
    assert dom.returncode == 0 and "<html" in dom.stdout, dom.stderr[-2000:]
    parsed = _Rows("over-0-0")
    parsed.feed(dom.stdout)
    assert "pwned" not in parsed.title and parsed.tags.count("table") >= 3 and "svg" in parsed.tags
    # the hostile tags are no elements (the one script is the page's; an img only the curve's data URI)
    assert parsed.tags.count("script") == 1 and "onerror" not in [k for k, _ in parsed.attrs]
    assert all(v.startswith("data:image/svg+xml;base64,") for k, v in parsed.attrs if k == "src")
    assert "&lt;script&gt;document.title" in dom.stdout and "onerror=" in dom.stdout  # ... but text
    before = parsed.ids
    # click the gap header twice (ascending, then descending) and read the row order back
    clicked = tmp_path / "clicked.html"
    clicked.write_text(page.read_text(encoding="utf-8").replace(
        "</body>", "<script>var th=document.querySelector('#over-0-0 th:nth-child(4)');th.click();</script></body>"),
        encoding="utf-8")
    dom2 = _chromium(browser, profile, "--dump-dom", clicked.resolve().as_uri())
    after = _Rows("over-0-0")
    after.feed(dom2.stdout)
    assert sorted(after.ids) == sorted(before) and len(before) >= 2
    report = build_report([folder], ReportOptions(top=10))
    by_gap = sorted(report.tasks[0].examples[0].oversensitive.examples, key=lambda p: p.gap_sigma)
    assert after.ids == [p.group_id for p in by_gap]
    # filter by gap: rows under the threshold are hidden
    threshold = by_gap[len(by_gap) // 2].gap_sigma
    filtered = tmp_path / "filtered.html"
    filtered.write_text(page.read_text(encoding="utf-8").replace(
        "</body>", "<script>var i=document.querySelector('.filter[data-for=over-0-0] input[name=gap]');"
        f"i.value='{threshold!r}';i.dispatchEvent(new Event('input'));</script></body>"), encoding="utf-8")
    dom3 = _Rows("over-0-0")
    dom3.feed(_chromium(browser, profile, "--dump-dom", filtered.resolve().as_uri()).stdout)
    assert dom3.hidden == sum(abs(p.gap_sigma) < threshold for p in by_gap) > 0
    shot = tmp_path / "shot.png"
    res = _chromium(browser, profile, "--hide-scrollbars", "--window-size=1200,1600", f"--screenshot={shot}",
                    page.resolve().as_uri())
    assert res.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_rewrite_task_shows_flips_with_both_forms(tmp_path):
    folder = _run(tmp_path, "para", "length", "paraphrase_invariance_sample")
    report = build_report([folder], ReportOptions(top=5))
    x = report.tasks[0].examples[0]
    assert x.flips is not None
    for f in x.flips.examples:
        assert f.original.a.form == "original" and f.rewritten.a.form not in (None, "original")
        assert (f.original.gap > 0) != (f.rewritten.gap > 0) or (f.original.gap == 0) != (f.rewritten.gap == 0)
    text = write_report([folder], tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Preference flips under rewriting" in text


def test_eval_report_writes_report_html_in_the_run_folder(tmp_path):
    from typer.testing import CliRunner

    from rmbench.cli import app

    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["eval", "--model", "length", "--tasks", "ties_sample", "--out", str(out),
                                   "--bootstrap", "10", "--no-cache", "--report"])
    assert res.exit_code == 0, res.output
    assert "Most oversensitive equal-utility pairs" in (out / "report.html").read_text(encoding="utf-8")


def test_bars_take_a_signed_axis_for_negative_values():
    from rmbench.results.publishing.report_svg import Bar, bars_svg

    rates = bars_svg("t", [Bar("all", 0, 0.5, 0.4, 0.6)], ["run"])
    signed = bars_svg("t", [Bar("all", 0, -0.2, -0.3, 0.1)], ["run"])
    assert ">0.5</text>" in rates and ">-1</text>" not in rates
    assert ">-1</text>" in signed and "&lt;" not in signed
    assert "&lt;b&gt;" in bars_svg("<b>", [Bar("<b>", 0, 0.5, None, None)], ["<b>", "x"])


@pytest.mark.real_model
def test_report_of_smollm2_on_ties_sample(tmp_path):
    """The done-check of the report: a real SmolLM2-135M run, its page, and its top pair by hand."""
    pytest.importorskip("torch")
    from typer.testing import CliRunner

    from rmbench.cli import app
    from tests.conftest import smollm2_gguf

    smollm2_gguf()
    run = tmp_path / "smol"
    res = CliRunner().invoke(app, ["eval", "--model", "smollm2-135m", "--tasks", "ties_sample", "--out", str(run),
                                   "--dtype", "float32", "--bootstrap", "50", "--no-cache"])
    assert res.exit_code == 0, res.output
    out = tmp_path / "report.html"
    assert CliRunner().invoke(app, ["report", str(run), "--out", str(out)]).exit_code == 0
    text = out.read_text(encoding="utf-8")
    for part in ("Headline", "D-Spec curve", "Most oversensitive equal-utility pairs", "Worst discrimination failures",
                 "length bias"):
        assert part in text
    folder = load_run(run)
    top = build_report([folder]).tasks[0].examples[0].oversensitive.examples[0]
    gids, gap_sigma = _hand_top_pair(folder, "ties_sample")
    assert top.group_id in gids and top.gap_sigma == pytest.approx(gap_sigma)


def test_the_scatter_labels_sit_below_the_points_and_the_figures_scale_to_the_page():
    import re

    from rmbench.results.publishing.examples import LengthPoints
    from rmbench.results.publishing.report_svg import Bar, bars_svg, scatter_svg

    points = [(0, LengthPoints((-40.0, 10.0, 40.0), (-1.0, 0.2, 1.0), 0.5, 3)),
              (1, LengthPoints((-20.0, 30.0), (0.5, -0.5), -1.0, 2))]
    svg = scatter_svg("length", points, ["a", "b"])
    circles = [float(y) for y in re.findall(r'<circle cx="[^"]+" cy="([^"]+)"', svg)]
    labels = [float(y) for y in re.findall(r'<text x="[^"]+" y="([^"]+)"[^>]*>[^<]*rho =', svg)]
    assert len(labels) == 2 and min(labels) > max(circles) + 20  # under the plot and its axis label
    height = float(re.search(r'viewBox="0 0 [^ ]+ ([^"]+)"', svg).group(1))
    assert max(labels) < height
    for drawn in (svg, bars_svg("t", [Bar("all", 0, 0.5, 0.4, 0.6)], ["run"])):
        assert 'width="100%"' in drawn and "viewBox=" in drawn  # as wide as the page's column
