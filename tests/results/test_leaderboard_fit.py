"""Leaderboards of many runs fit the page: a LaTeX build of over 30 tables compiles with no box
wider than the text (and the width estimates hold without the shrinking guard), long labels wrap
or shorten, a table taller than a page runs over pages; the HTML page fits a 1400-px window."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rmbench.results.publishing.latex import escape, render_latex, tabular
from rmbench.results.publishing.latex_fit import (
    COLSEP_EN,
    FLOAT_PT,
    KEY_MAX_EN,
    chunks,
    short_labels,
    text_en,
    wrap_words,
)
from rmbench.results.publishing.leaderboard import build_leaderboard
from rmbench.results.publishing.leaderboard_render import render_html
from rmbench.results.publishing.leaderboard_tables import Column, Table
from rmbench.results.storage.folder import find_runs
from rmbench.results.storage.record import Estimate
from tests.support.browser import find_browser
from tests.support.golden_runs import cases  # noqa: E402
from tests.support.judge_server import ScriptedServer  # noqa: E402

TASKS = ("ties_sample", "paraphrase_shift_sample", "domain_shift_sample", "token_shift_sample",
         "paraphrase_invariance_sample", "ties", "rewardbench2", "rm_bench", "persona")
SLACK_PT = 3.0
"""What a box may stick out (TeX's own rounding of a table cut to the line)."""


@pytest.fixture(scope="module")
def many_runs(tmp_path_factory):
    """Four models (one a python RM in a deep folder with a long function name), two more runs of
    two of them with --limit 5 and 12, and a judge run that failed: over 30 tables."""
    from rmbench.scoring.runner import EvalConfig, evaluate
    from rmbench.scoring.suite import evaluate_models

    base = tmp_path_factory.mktemp("fit")
    (base / "data").mkdir()
    data = tuple(d for case in cases(base / "data").values() for d in case["data"])
    deep = base / "a_rather_long_folder_name_for_reward_models" / "experiments_2026"
    deep.mkdir(parents=True)
    (deep / "my_reward_model_v2.py").write_text(
        "def score_pairs_with_length(pairs):\n    return [float(len(r) % 7) for _, r in pairs]\n")
    models = ["length", "constant", "oracle", f"python:{deep / 'my_reward_model_v2.py'}:score_pairs_with_length"]
    runs = base / "runs"
    evaluate_models([EvalConfig(model=m, tasks=TASKS, data=data, n_bootstrap=20) for m in models], out=runs)
    for limit in (5, 12):
        evaluate_models([EvalConfig(model=m, tasks=TASKS, data=data, n_bootstrap=20, limit=limit)
                         for m in models[:2]], out=runs)
    with ScriptedServer(reply="I will not rate this.") as server:  # a judge that never gives a verdict: failed
        evaluate(EvalConfig(model="judge:judge-model", model_args=(("base_url", server.base_url), ("unparsed", "skip")),
                            tasks=("ties_sample",), limit=4, n_bootstrap=20, cache_dir=str(base / "cache")),
                 out_dir=runs / "judge_with_a_long_run_folder_name_that_failed")
    return runs


def _board(runs: Path):
    return build_leaderboard(find_runs([runs]))


def _compile(folder: Path, tex: str, guard: bool = True) -> str:
    """pdflatex's log of ``tex`` in an article; ``guard=False``: ``\\rmbenchfit`` shrinks nothing."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "board.tex").write_text(tex)
    plain = "" if guard else "\\newcommand{\\rmbenchfit}[1]{#1}\n"
    (folder / "doc.tex").write_text("\\documentclass{article}\n\\usepackage{booktabs,graphicx,longtable}\n" + plain
                                    + "\\begin{document}\n\\input{board.tex}\n\\end{document}\n")
    for _ in range(2):  # longtable settles its column widths on a second pass
        done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=folder,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:]
    return (folder / "doc.log").read_text(errors="replace")


def _overfull(log: str) -> list[float]:
    return [float(x) for x in re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide\)", log)]


needs_pdflatex = pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed (apt-get "
                                    "install texlive-latex-base texlive-latex-recommended)")


@needs_pdflatex
def test_a_31_table_latex_build_fits_the_text_width(many_runs, tmp_path):
    lb = _board(many_runs)
    tex = render_latex(lb)
    assert len(lb.sections()) >= 31, len(lb.sections())
    assert any(s.table.failed for s in lb.sections())  # the failed run is a line, not a table
    assert escape("judge_with_a_long_run_folder_name_that_failed", True) in tex
    log = _compile(tmp_path / "guarded", tex)
    assert max(_overfull(log), default=0.0) <= SLACK_PT, [x for x in _overfull(log) if x > SLACK_PT]
    assert "Float too large" not in log and "Too many unprocessed floats" not in log
    assert r"\begin{longtable}" in tex  # the original-vs-shifted table runs over pages
    # without the guard, the estimates alone keep every table within a few points of the line
    raw = _compile(tmp_path / "raw", tex, guard=False)
    assert max(_overfull(raw), default=0.0) <= 12.0, sorted(_overfull(raw))[-5:]


@needs_pdflatex
def test_the_plus_minus_cells_fit_too(many_runs, tmp_path):
    from rmbench.results.publishing.formats import RenderContext

    log = _compile(tmp_path, render_latex(_board(many_runs), RenderContext({"ci": "pm"})), guard=False)
    assert max(_overfull(log), default=0.0) <= 12.0, sorted(_overfull(log))[-5:]


def test_long_run_labels_become_numbered_runs_named_in_the_notes(many_runs):
    tex = render_latex(_board(many_runs))
    folders = sorted(p.name for p in many_runs.iterdir() if p.is_dir() and p.name.startswith("constant__"))
    assert len(folders) == 3
    # each constant run is "constant (run N)" in the tables, its folder named once in the notes
    shown = set(re.findall(r"constant \(run (\d+)\)", tex))
    assert len(shown) == 3
    for folder in folders:
        assert len(re.findall(r"run \d+: " + re.escape(escape(folder, breakable=True)), tex)) == 1
    # a plain long name (no run folders) wraps instead: a p column and break points after : _ /
    assert r"python:\allowbreak{}my\_\allowbreak{}reward" in tex and r"p{0.3\linewidth}" in tex


def test_short_labels_by_hand():
    long = "constant (constant__ties_sample+paraphrase_shift_sample-075ab545)"
    other = "constant (constant__ties_sample+paraphrase_shift_sample-9f4b955a__limit5)"
    short, runs = short_labels(["oracle", long, other, long, "judge (a)", "python:/" + "x" * 40])
    assert short == {long: "constant (run 1)", other: "constant (run 2)"}  # short ones and non-run names stay
    assert runs == ["run 1: constant__ties_sample+paraphrase_shift_sample-075ab545",
                    "run 2: constant__ties_sample+paraphrase_shift_sample-9f4b955a__limit5"]


def test_width_estimates_and_chunks_by_hand():
    assert text_en("0.712") == pytest.approx(4 * 1.0 + 0.6)
    assert text_en("Ab m") == pytest.approx(1.4 + 1.0 + 0.6 + 1.6)
    assert text_en("[0.69, 0.73]", 7 / 9) == pytest.approx((6 + 6 * 0.6) * 7 / 9)  # 6 digits, 6 narrow signs
    assert wrap_words("acc gap (shifted - original)", 10) == ["acc gap", "(shifted -", "original)"]
    assert wrap_words("Spec", 2) == ["Spec"]  # a word wider than the width is a line of its own
    # 10 en of keys, columns of 20 en: 10 + (1.78 + 20) x 2 = 53.6 fits 60, a third does not
    assert chunks(10.0, [20.0] * 5, 60.0) == [[0, 1], [2, 3], [4]]
    assert chunks(10.0, [80.0, 5.0], 60.0) == [[0], [1]]  # too wide alone: a chunk of its own
    assert COLSEP_EN == pytest.approx(8 / 4.5)


def _table(n_rows: int, n_cols: int, label: str = "model") -> Table:
    cols = tuple(Column("t", "pairwise_accuracy", f"c{j}") for j in range(n_cols))
    rows = tuple(((f"{label} {i}",), tuple(Estimate(0.5 + i / 1000, 0.4, 0.6) for _ in range(n_cols)))
                 for i in range(n_rows))
    return Table("t", ("model",), cols, rows, "value [95% CI]")


def test_a_wide_table_is_cut_into_chunks_each_with_the_model_column():
    pieces = tabular(_table(3, 12), "brackets")
    assert len(pieces) > 1
    assert sum(p.spec.count("r") for p in pieces) == 12 and all(p.spec.startswith("l") for p in pieces)
    assert all(p.head.startswith("model & ") and len(p.rows) == 3 for p in pieces)
    # a label over KEY_MAX_EN wraps in a p column
    wide = tabular(_table(2, 2, label="x" * int(KEY_MAX_EN + 5)), "brackets")
    assert wide[0].spec.startswith(r"p{0.3\linewidth}") and wide[0].rows[0].startswith(r"\raggedright ")


def test_a_table_taller_than_a_page_is_a_longtable_and_a_short_one_a_float():
    from rmbench.results.publishing.leaderboard import Leaderboard

    tall = _table(80, 3)
    assert sum(p.height for p in tabular(tall, "brackets")) > FLOAT_PT
    tex = render_latex(Leaderboard(main=tall))
    assert r"\begin{longtable}" in tex and r"\begin{table}" not in tex and r"\endhead" in tex
    short = render_latex(Leaderboard(main=_table(3, 3)))
    assert r"\begin{table}[htbp]" in short and "longtable" not in short.split("\n", 2)[2]


@pytest.mark.slow
def test_the_html_page_fits_a_1400_px_window(many_runs, tmp_path):
    browser = find_browser()
    page = render_html(_board(many_runs))
    probe = ("<script>window.addEventListener('load',function(){var w=window.innerWidth,f=[],k=0;"
             "document.querySelectorAll('.frame').forEach(function(d){f.push(d.getBoundingClientRect().right)});"
             "document.querySelectorAll('td.key').forEach(function(c){k=Math.max(k,c.getBoundingClientRect().width)});"
             "var o=document.createElement('pre');o.id='probe';o.textContent=JSON.stringify({inner:w,"
             "scroll:document.documentElement.scrollWidth,frames:f,key:k,"
             "em:parseFloat(getComputedStyle(document.body).fontSize)});document.body.appendChild(o);});</script>")
    (tmp_path / "board.html").write_text(page.replace("</body>", probe + "</body>"), encoding="utf-8")
    profile = tmp_path / "profile"
    done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           f"--user-data-dir={profile}", "--window-size=1400,900", "--virtual-time-budget=3000",
                           "--dump-dom", (tmp_path / "board.html").resolve().as_uri()],
                          capture_output=True, text=True, timeout=120,
                          env={"HOME": str(profile), "PATH": "/usr/bin:/bin"})
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout)
    assert found, done.stderr[-2000:]
    m = json.loads(found.group(1).replace("&quot;", '"'))
    assert m["inner"] <= 1400 and m["scroll"] <= m["inner"], m  # the page itself never scrolls sideways
    assert len(m["frames"]) >= 20 and max(m["frames"]) <= m["inner"], m
    assert m["key"] <= 24 * m["em"] + 20, m  # long labels wrap (24em and the cell's padding)
