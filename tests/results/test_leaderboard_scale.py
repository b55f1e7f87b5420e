"""A leaderboard over a real runs folder (several models x several tasks, reruns of one model):
one table per task, only the metrics each task fills, identical rows folded, lines that fit."""

import csv
import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rmbench.cli.app import app
from rmbench.results.publishing.leaderboard import build_leaderboard
from rmbench.results.publishing.leaderboard_render import render
from rmbench.results.storage.folder import find_runs
from rmbench.scoring.runner import EvalConfig, evaluate

TASKS = ("ties_sample", "paraphrase_shift_sample", "domain_shift_sample")
MAX_CELLS = 150
"""Characters a Markdown table line may hold beside its model column (the one table of these runs
has 18 metric columns: over 400)."""


@pytest.fixture(scope="module")
def runs_folder(tmp_path_factory):
    base = tmp_path_factory.mktemp("scale")
    rm = base / "my_rm.py"
    rm.write_text("def score(pairs):\n    return [float(len(r) % 7) for _, r in pairs]\n")
    runs = base / "runs"
    for folder, model, tasks in [("length__all", "length", TASKS), ("length__again", "length", TASKS),
                                 ("length__third", "length", TASKS), ("constant__all", "constant", TASKS),
                                 ("my_rm__ties", f"python:{rm}:score", ("ties_sample",)),
                                 ("oracle__shift", "oracle", ("paraphrase_shift_sample",))]:
        evaluate(EvalConfig(model=model, tasks=tasks, n_bootstrap=20), out_dir=runs / folder)
    return runs


def _table_lines(md: str) -> list[str]:
    return [line for line in md.splitlines() if line.startswith("|")]


def test_many_runs_get_one_table_per_task_with_only_filled_columns(runs_folder):
    lb = build_leaderboard(find_runs([runs_folder]))
    assert [t.title for t in lb.headline] == list(TASKS)
    for table in lb.headline:
        assert table.columns and all(c.task == table.title for c in table.columns)
        for j, col in enumerate(table.columns):  # no column empty in every row
            assert any(cells[j] is not None and cells[j].defined for _, cells in table.rows), (table.title, col)
        assert not any(c.header.startswith(table.title) for c in table.columns)  # the title names the task
    ties = {keys[0] for keys, _ in lb.headline[0].rows}
    paraphrase = {keys[0] for keys, _ in lb.headline[1].rows}
    assert any(label.endswith("my_rm.py:score") for label in ties)
    assert not any(label.endswith("my_rm.py:score") for label in paraphrase)
    assert "oracle" in paraphrase and "oracle" not in ties  # a run is a row only where it ran
    md = render(lb, "md")
    label = max(len(" | ".join(keys)) for t in lb.tables for keys, _ in t.rows)  # the key columns of a row
    assert max(len(line) for line in _table_lines(md)) <= label + MAX_CELLS
    one = render(build_leaderboard(find_runs([runs_folder]), layout="one"), "md")
    assert max(len(line) for line in _table_lines(one)) > label + 2 * MAX_CELLS  # what it was
    assert md.count("value [95% bootstrap CI over groups]") == 1


def test_identical_reruns_fold_into_one_row_naming_their_folders(runs_folder):
    lb = build_leaderboard(find_runs([runs_folder]))
    for table in lb.headline:
        labels = [keys[0] for keys, _ in table.rows]
        length = [label for label in labels if label.startswith("length")]
        assert length == ["length (3 runs: length__again, length__all, length__third)"], labels
    # the one-table layout folds them too, and is still there on request
    one = build_leaderboard(find_runs([runs_folder]), layout="one")
    assert not one.more and len(one.main.columns) > 10
    assert sum(keys[0].startswith("length") for keys, _ in one.main.rows) == 1


def test_runs_of_one_model_with_other_numbers_are_not_folded(runs_folder, tmp_path):
    evaluate(EvalConfig(model="length", tasks=("ties_sample",), n_bootstrap=20, seed=1), out_dir=tmp_path / "seed1")
    lb = build_leaderboard(find_runs([runs_folder, tmp_path / "seed1"]))
    labels = [keys[0] for keys, _ in lb.headline[0].rows if keys[0].startswith("length")]
    assert sorted(labels) == ["length (3 runs: length__again, length__all, length__third)", "length (seed1)"]


def test_csv_json_and_html_hold_the_same_per_task_rows(runs_folder):
    lb = build_leaderboard(find_runs([runs_folder]))
    rows = list(csv.DictReader(io.StringIO(render(lb, "csv"))))
    headline = [(r["model"], r["task"]) for r in rows if r["table"] in {t.title for t in lb.headline}]
    assert headline == [(keys[0], t.title) for t in lb.headline for keys, _ in t.rows]
    assert [r["table"] for r in rows] == [t.title for t in lb.tables for _ in t.rows]  # every table's rows, in order
    data = json.loads(render(lb, "json"))
    assert [t["title"] for t in data["tables"][:len(TASKS)]] == list(TASKS)
    assert len(data["tasks"]) == len(TASKS) and data["tasks"][0].startswith("ties_sample: ")
    page = render(lb, "html")
    assert "white-space:nowrap" in page
    assert page.count("95% bootstrap CI over groups") == 1  # said once, at the top of the page
    for line in lb.legend:  # what each task name is, with its data and metric version
        assert "metric version" in line and "data " in line


def test_the_legend_says_what_a_second_column_group_is(runs_folder, tmp_path):
    evaluate(EvalConfig(model="length", tasks=("ties_sample",), limit=5, n_bootstrap=20), out_dir=tmp_path / "lim")
    lb = build_leaderboard(find_runs([runs_folder, tmp_path / "lim"]))
    assert "ties_sample (limit 5)" in [t.title for t in lb.headline]  # the column group ties_sample#2
    second = [line for line in lb.legend if line.startswith("ties_sample (limit 5): ")]
    # --limit 5 keeps whole tied:K/ref:K units: 6 groups
    assert second and "rb2_ties task v1" in second[0] and "(6 groups)" in second[0]


def test_cli_layout_option_and_a_bad_layout(runs_folder, tmp_path):
    out = tmp_path / "board.md"
    result = CliRunner().invoke(app, ["leaderboard", "build", str(runs_folder), "--layout", "one", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "### ties_sample" not in out.read_text() and "ties_sample acc" in out.read_text()
    result = CliRunner().invoke(app, ["leaderboard", "build", str(runs_folder), "--layout", "wide"])
    assert result.exit_code == 2 and "layout 'wide'" in result.output and "Traceback" not in result.output


def test_eps_reads_like_the_other_eps_values(runs_folder):
    from rmbench.cli.app import _details_grid
    from rmbench.results.storage.folder import load_run
    from rmbench.results.storage.record import eps_display

    assert eps_display(0.754111, "sigma") == "0.754σ" and eps_display(0.1, "sigma") == "0.1σ"
    assert eps_display(0.5, "raw") == "0.5"
    grid = _details_grid(load_run(runs_folder / "length__all").record)
    eps = {row[2] for row in grid.rows if row[1] == "balanced_best" and row[2]}
    assert eps and all(e.endswith("σ") and len(e) <= 6 for e in eps), eps
    assert not any("sigma" in row[2] for row in grid.rows)


def shipped_tables(repo: Path) -> list[Path]:
    """The tables git tracks under ``leaderboards/`` (what a clone ships): a file a user wrote
    there and never committed is not shipped. Skips outside a git checkout, saying why."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--", "leaderboards/"], cwd=repo, capture_output=True,
                                text=True, timeout=60)
    except OSError as e:
        pytest.skip(f"git cannot be run ({e}): which tables are shipped is what git tracks")
    if listed.returncode != 0:
        pytest.skip(f"{repo} is not a git checkout: which tables are shipped is what git tracks "
                    f"({listed.stderr.strip()[:200]})")
    tracked = [repo / name for name in listed.stdout.split("\0") if name]
    if repo / "leaderboards" / "README.md" not in tracked:
        pytest.skip(f"{repo} is no git checkout of rmbench (git tracks no leaderboards/README.md there): which "
                    f"tables are shipped is what git tracks")
    return sorted(p for p in tracked if p.name != "README.md")


def test_shipped_tables_are_of_the_current_metric_version_and_say_how_they_were_made():
    from rmbench.core.metrics import METRIC_VERSION

    repo = Path(__file__).resolve().parents[2]
    folder = repo / "leaderboards"
    readme = (folder / "README.md").read_text()
    shipped = shipped_tables(repo)
    assert shipped
    for path in shipped:
        assert f"`{path.name}`" in readme.split("## Not shipped")[0], path.name  # with its command
        text = path.read_text()
        assert f"metric version {METRIC_VERSION}" in text, path.name
        assert "metric version 1" not in text and "Task keys (comparability)" not in text, path.name


def test_a_file_git_does_not_track_is_not_a_shipped_table(tmp_path):
    """What a user wrote into leaderboards/ (a tutorial's output, say) is no shipped table; outside
    a git checkout the shipped-tables test skips, saying why."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    folder = tmp_path / "leaderboards"
    folder.mkdir()
    for name in ("README.md", "ties_baselines.md", "mine.html"):
        (folder / name).write_text("a table\n")
    with pytest.raises(pytest.skip.Exception, match="git checkout"):
        shipped_tables(tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    with pytest.raises(pytest.skip.Exception, match="git checkout"):
        shipped_tables(tmp_path)  # a checkout, but not of rmbench: no leaderboards/README.md tracked
    subprocess.run(["git", "add", "leaderboards/README.md", "leaderboards/ties_baselines.md"], cwd=tmp_path,
                   check=True)
    assert shipped_tables(tmp_path) == [folder / "ties_baselines.md"]

def test_a_caption_other_than_the_ci_one_is_said_once_too(tmp_path):
    evaluate(EvalConfig(model="length", tasks=TASKS[:2], n_bootstrap=0), out_dir=tmp_path / "nob")
    lb = build_leaderboard(find_runs([tmp_path]), layout="per-task")
    md, page = render(lb, "md"), render(lb, "html")
    assert len(lb.headline) == 2 and "no CIs" in lb.main.caption
    assert md.count(lb.main.caption) == 1 and page.count(lb.main.caption) == 1


def test_the_terminal_prints_a_table_per_task_and_the_caption_once(runs_folder, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    result = CliRunner().invoke(app, ["leaderboard", "build", str(runs_folder)])
    assert result.exit_code == 0, result.output
    assert result.output.count("value [95% bootstrap CI over groups]") == 1
    assert all(f"legend: {name}: " in result.output for name in TASKS)
    assert max(len(line) for line in result.output.splitlines() if not line.startswith(("note:", "legend:"))) <= 120
