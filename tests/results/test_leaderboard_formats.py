"""The leaderboard's format registry: every format in one registry, every renderer in one section
order; the LaTeX format (hand-written expected output, and that pdflatex compiles it); a plugin
format through the ``rmbench.formats`` entry points; the CLI's --format and --format-option."""

import io
import json
import shutil
import subprocess
from importlib.metadata import EntryPoint

import pytest
from typer.testing import CliRunner

from rmbench.cli.app import app
from rmbench.errors import ConfigError
from rmbench.results.publishing import formats
from rmbench.results.publishing.formats import RenderContext, format_for_path, format_names, render
from rmbench.results.publishing.leaderboard import Leaderboard
from rmbench.results.publishing.leaderboard_tables import Column, Table
from rmbench.results.storage.record import Estimate

runner = CliRunner()
CAPTION = "value [95% bootstrap CI over groups]"


def _small() -> Leaderboard:
    """One table: a higher-is-better column (a tie as printed) and a lower-is-better one; names to escape."""
    cols = (Column("t_1", "pairwise_accuracy", "t_1 acc"), Column("t_1", "preference_flip_rate", "t_1 flips"))
    rows = ((("rm_a",), (Estimate(0.7123, 0.69, 0.73), Estimate(0.10, 0.05, 0.15))),
            (("5% & #{x}~^\\",), (Estimate(0.7121, 0.70, 0.72), Estimate(0.20, 0.15, 0.25))),
            (("σ_model",), (Estimate(0.5), None)))
    return Leaderboard(main=Table("rmbench leaderboard", ("model",), cols, rows, CAPTION),
                       legend=("t_1: a task",), notes=("50% of $ & co",))


EXPECTED_LATEX = r"""% rmbench leaderboard: \input{} this file in a document with \usepackage{booktabs,graphicx,longtable}
\providecommand{\rmbenchfit}[1]{\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{#1}}

\begin{table}[htbp]
\centering
\small\setlength{\tabcolsep}{4pt}
\rmbenchfit{\begin{tabular}{lrr}
\toprule
model & t\_1 acc & t\_1 flips \\
\midrule
rm\_a & \begin{tabular}[t]{@{}r@{}}\textbf{0.712}\\\scriptsize {[}0.69, 0.73{]}\end{tabular} & \begin{tabular}[t]{@{}r@{}}\textbf{0.100}\\\scriptsize {[}0.05, 0.15{]}\end{tabular} \\
5\% \& \#\{x\}\textasciitilde{}\textasciicircum{}\textbackslash{} & \begin{tabular}[t]{@{}r@{}}\textbf{0.712}\\\scriptsize {[}0.70, 0.72{]}\end{tabular} & \begin{tabular}[t]{@{}r@{}}0.200\\\scriptsize {[}0.15, 0.25{]}\end{tabular} \\
$\sigma$\_model & 0.500 & -- \\
\bottomrule
\end{tabular}}
\par\smallskip
{\raggedright\footnotesize
value {[}95\% bootstrap CI over groups{]}. Bold: the best value of its column.\par
}
\end{table}
{\raggedright\footnotesize
\textit{Tasks:} t\_\allowbreak{}1: a task\par
\textit{Notes:} 50\% of \$ \& co\par
}
"""


def test_latex_by_hand_escaped_with_the_best_of_each_column_bold():
    assert render(_small(), "latex") == EXPECTED_LATEX


def test_latex_plus_minus_option():
    text = render(_small(), "latex", RenderContext({"ci": "pm"}))
    assert r"rm\_a & \textbf{0.712} $\pm$ 0.02 & \textbf{0.100} $\pm$ 0.05 \\" in text
    assert r"& \textbf{0.712} $\pm$ 0.01 & 0.200 $\pm$ 0.05 \\" in text
    assert "[0." not in text  # no bracketed CI left
    assert r"value {[}95\% bootstrap CI over groups{]} (shown as value $\pm$ half its width)." in text


def test_latex_does_not_rank_mixed_rows_or_signed_bias_metrics():
    from rmbench.results.publishing.latex import best_rows

    small = _small().main
    assert best_rows(small) == [{0, 1}, {0}]
    shifts = Table("shifts", ("model", "task", "shift"), small.columns,
                   tuple(((keys[0], "t", "none"), cells) for keys, cells in small.rows))
    assert best_rows(shifts) == [set(), set()]
    bias = Table("bias", ("model",), (Column("t", "length_correlation", "len corr"),),
                 ((("a",), (Estimate(0.1),)), (("b",), (Estimate(0.3),))))
    assert best_rows(bias) == [set()]


def _four_sections() -> Leaderboard:
    """A table per task (two), an official layout and a shifts table, each titled plainly."""
    col = (Column("t", "pairwise_accuracy", "acc"),)
    rows = ((("m",), (Estimate(0.5, 0.4, 0.6),)), (("n",), (Estimate(0.6, 0.5, 0.7),)))
    shift_rows = ((("m", "t", "none"), (Estimate(0.5, 0.4, 0.6),)),)
    return Leaderboard(main=Table("Alpha one", ("model",), col, rows, CAPTION),
                       official=(Table("Gamma three", ("model",), col, rows, "official scores"),),
                       shifts=Table("Delta four", ("model", "task", "shift"), col, shift_rows, CAPTION),
                       more=(Table("Beta two", ("model",), col, rows, CAPTION),),
                       legend=("Legend line",), notes=("Note line",))


TITLES = ("Alpha one", "Beta two", "Gamma three", "Delta four")


def _terminal(lb: Leaderboard, monkeypatch) -> str:
    from rmbench.cli import common
    from rmbench.cli.tables import OutputConsole

    buffer = io.StringIO()
    monkeypatch.setattr(common, "console", OutputConsole(file=buffer))
    common._print_leaderboard(lb)
    return buffer.getvalue()


def test_one_section_order_and_caption_rule():
    lb = _four_sections()
    found = lb.sections()
    assert [s.table.title for s in found] == list(TITLES)
    assert [s.heading for s in found] == [True] * 4
    assert [s.caption for s in found] == [CAPTION, "", "official scores", ""]  # said once, then only what differs
    assert [s.notes_after for s in found] == [False, True, False, False]
    assert [s.caption for s in lb.sections(said=CAPTION)] == ["", "", "official scores", ""]
    assert not _small().sections()[0].heading  # a lone table: the document's own


@pytest.mark.parametrize("fmt", format_names())
def test_every_format_renders_every_section_in_the_one_order(fmt):
    text = render(_four_sections(), fmt)
    at = [text.index(title) for title in TITLES]
    assert at == sorted(at), (fmt, text)
    if fmt not in ("json", "csv"):  # documents: the legend and notes come after the last headline table
        assert at[1] < text.index("Legend line") < text.index("Note line") < at[2], fmt


def test_the_terminal_renders_every_section_in_the_one_order(monkeypatch):
    text = _terminal(_four_sections(), monkeypatch)
    at = [text.index(title) for title in TITLES]
    assert at == sorted(at) and at[1] < text.index("legend: Legend line") < at[2]
    assert text.count("bootstrap") == 1 and "official scores" in text  # the caption once (wrapped to the table)


def test_csv_and_json_keep_every_section():
    lb = _four_sections()
    lines = render(lb, "csv").splitlines()
    assert lines[0].startswith("model,task,shift,table,acc,acc ci_low,acc ci_high")
    assert [line.split(",")[3] for line in lines[1:]] == [t.title for t in lb.tables for _ in t.rows]
    data = json.loads(render(lb, "json"))
    assert [t["title"] for t in data["tables"]] == list(TITLES)
    assert [t["caption"] for t in data["tables"]] == [CAPTION, "", "official scores", ""]


def test_figures_are_computed_only_for_a_format_that_asks():
    def figures():
        raise AssertionError("asked")

    for fmt in format_names():
        if fmt != "html":
            render(_small(), fmt, RenderContext(figures=figures))
    page = render(_small(), "html", RenderContext(figures=lambda: {"t_1": "<svg></svg>"}))
    assert "data:image/svg+xml;base64," in page


def test_suffixes_and_options_come_from_the_registry():
    assert format_for_path("board.tex") == "latex" and format_for_path("x/board.HTML") == "html"
    assert format_for_path("board.txt") == "md"
    assert formats.output_format("latex").resolve_options(["ci=pm"]) == {"ci": "pm"}
    with pytest.raises(ConfigError, match="use one of brackets, pm"):
        formats.output_format("latex").resolve_options(["ci=round"])
    with pytest.raises(ConfigError, match="'md' has no option 'ci' .it takes none"):
        formats.output_format("md").resolve_options({"ci": "pm"})
    with pytest.raises(ConfigError, match="expected NAME=VALUE"):
        formats.output_format("latex").resolve_options(["pm"])


def test_an_unknown_format_is_one_line_listing_the_registry(tmp_path):
    result = runner.invoke(app, ["leaderboard", "build", str(tmp_path), "--format", "pdf"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "error: unknown leaderboard format 'pdf': use one of " + ", ".join(format_names())]
    assert format_names()[:5] == ["md", "csv", "json", "html", "latex"]
    result = runner.invoke(app, ["leaderboard", "build", str(tmp_path), "-f", "latex", "--format-option", "ci=x"])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1 and "brackets, pm" in result.output


PLUGIN = '''
from rmbench import OutputFormat

def render_titles(lb, context):
    return " | ".join(s.table.title for s in lb.sections()) + "\\n"

TITLES = OutputFormat("titles", ".titles", "the tables' titles", render_titles)
'''


def test_a_plugin_format_through_the_entry_points(tmp_path, monkeypatch):
    import sys

    from rmbench import registry

    (tmp_path / "titles_format_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    fresh = registry.Registry("leaderboard format", entry_point_group=formats.ENTRY_POINT_GROUP,
                              kind=formats.FORMATS.kind, key=formats.FORMATS.key)
    for name in format_names():
        fresh.register(name, formats.output_format(name), description=name, origin="built-in")
    monkeypatch.setattr(formats, "FORMATS", fresh)
    point = EntryPoint("titles", "titles_format_plugin:TITLES", formats.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "entry_points", lambda group: [point] if group == formats.ENTRY_POINT_GROUP else [])
    monkeypatch.setenv(registry.PLUGINS_VARIABLE, "all")  # the suite runs with none (tests/conftest.py)
    assert format_names()[-1] == "titles" and "titles_format_plugin" not in sys.modules  # listed, not imported
    assert render(_four_sections(), "titles") == " | ".join(TITLES) + "\n"
    assert format_for_path("a.titles") == "titles"


def _compile(tmp_path, tex: str) -> None:
    (tmp_path / "board.tex").write_text(tex)
    (tmp_path / "doc.tex").write_text("\\documentclass{article}\n\\usepackage{booktabs,graphicx,longtable}\n"
                                      "\\begin{document}\n\\input{board.tex}\n\\end{document}\n")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and (tmp_path / "doc.pdf").is_file(), done.stdout[-3000:]


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed (apt-get install "
                    "texlive-latex-base texlive-latex-recommended)")
def test_the_latex_compiles_with_pdflatex(tmp_path):
    from rmbench.scoring.runner import EvalConfig, evaluate

    for model in ("oracle", "length"):
        evaluate(EvalConfig(model=model, tasks=("ties_sample", "paraphrase_shift_sample"), n_bootstrap=10),
                 out_dir=tmp_path / "runs" / model)
    out = tmp_path / "board.tex"
    result = runner.invoke(app, ["leaderboard", "build", str(tmp_path / "runs"), "--out", str(out), "--layout",
                                 "per-task", "--format-option", "ci=pm"])
    assert result.exit_code == 0, result.output
    assert "\\caption{Original vs shifted}" in out.read_text() and "$\\pm$" in out.read_text()
    (tmp_path / "real").mkdir()
    _compile(tmp_path / "real", out.read_text())
    nasty = _small()
    greek = Table("Ünïcode: αβγ ΔΣΩ – — × ≤ ≥ … | < > [x] \"q\"", ("model",), nasty.main.columns, nasty.main.rows, "")
    (tmp_path / "nasty").mkdir()
    _compile(tmp_path / "nasty", render(Leaderboard(main=nasty.main, official=(greek,), legend=nasty.legend,
                                                    notes=nasty.notes), "latex"))
