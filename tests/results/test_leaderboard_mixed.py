"""Leaderboards of mixed runs folders (issue 44, items 4 and 5): a run whose task failed is one
line under its task's table, never a row or a table of empty cells; a task's column groups on
other data or settings are headed by what differs (``ties_sample (limit 5)``), in every format;
and a column empty in every run has a note with the true reason (the task failed, the model gave
no reward to any response, no pair of a better and a worse answer, no pair of equal ones)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from rmbench.results.publishing.formats import format_names  # noqa: E402
from rmbench.results.publishing.leaderboard import build_leaderboard  # noqa: E402
from rmbench.results.publishing.leaderboard_render import render  # noqa: E402
from rmbench.results.publishing.leaderboard_variants import qualifiers  # noqa: E402
from rmbench.results.storage.folder import find_runs, load_run  # noqa: E402
from rmbench.scoring.runner import EvalConfig, evaluate  # noqa: E402
from tests.support.judge_server import ScriptedServer  # noqa: E402

NO_REWARD_TIES = "ModelError: the model gave no reward to 58 responses, which leaves no pair to score"
"""The error of a judge that never gave a parsable rating, on ties_sample --limit 4 (58 responses)."""
JUDGE_TIES = f"judge:judge-model (run folder judge_ties): failed: {NO_REWARD_TIES}"
JUDGE_PREF = ("judge:judge-model (run folder judge_pref): failed: ModelError: the model gave no reward to 8 "
              "responses, which leaves no pair to score")


def _pairs(path: Path, n: int = 4) -> Path:
    path.write_text("".join(json.dumps({"prompt": f"q{i}", "chosen": "a good and long answer", "rejected": "bad"})
                            + "\n" for i in range(n)))
    return path


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """A runs folder as a user has it: two models on ties_sample, one with --limit 5, a judge whose
    every reply is unparsable on ties_sample --limit 4 (failed) and on preference pairs (failed,
    beside a length run that scored them)."""
    base = tmp_path_factory.mktemp("mixed")
    runs = base / "runs"
    for folder, model, limit in (("length", "length", None), ("oracle", "oracle", None),
                                 ("length_limit5", "length", 5)):
        evaluate(EvalConfig(model=model, limit=limit, n_bootstrap=20, use_cache=False), out_dir=runs / folder)
    pairs = _pairs(base / "pairs.jsonl")
    evaluate(EvalConfig(model="length", tasks=("preference",), data=(("preference", str(pairs)),), n_bootstrap=20,
                        use_cache=False), out_dir=runs / "length_pref")
    with ScriptedServer(reply="I will not rate this.") as server:
        for folder, tasks, data, limit in (("judge_ties", ("ties_sample",), (), 4),
                                           ("judge_pref", ("preference",), (("preference", str(pairs)),), None)):
            evaluate(EvalConfig(model="judge:judge-model", model_args=(("base_url", server.base_url),
                                                                       ("unparsed", "skip")),
                                tasks=tasks, data=data, limit=limit, n_bootstrap=20,
                                cache_dir=str(base / "cache")), out_dir=runs / folder)
    return runs


def _by_title(lb):
    return {t.title: t for t in lb.tables}


def test_the_fixture_has_failed_runs(mixed):
    judge = load_run(mixed / "judge_ties").record.tasks[0]
    assert judge.status == "error" and judge.error == NO_REWARD_TIES
    assert judge.judge_replies is not None and judge.judge_replies.left_out == judge.counts.responses == 58


def test_a_failed_run_is_a_line_under_its_tasks_table_never_an_empty_table(mixed):
    lb = build_leaderboard(find_runs([mixed]), layout="per-task")
    tables = _by_title(lb)
    assert list(tables) == ["ties_sample", "ties_sample (limit 5)", "ties_sample (limit 4)", "preference"]
    # every run failed: no columns, no rows, the line alone
    alone = tables["ties_sample (limit 4)"]
    assert (alone.columns, alone.rows, alone.failed_lines()) == ((), (), [JUDGE_TIES])
    # some runs scored: their rows, and the failed run under them
    pref = tables["preference"]
    assert [r[0][0] for r in pref.rows] == ["length (length_pref)"] and pref.failed_lines() == [JUDGE_PREF]
    assert not tables["ties_sample"].failed and {r[0][0] for r in tables["ties_sample"].rows} == {
        "oracle", "length (length)"}
    # the internal column keys stay as they were, for the code that reads them
    assert lb.names == {"ties_sample": "ties_sample", "ties_sample#2": "ties_sample (limit 5)",
                        "ties_sample#3": "ties_sample (limit 4)", "preference": "preference"}
    assert set(lb.eps) == set(lb.keys) == set(lb.names)

    md = render(lb, "md")
    assert f"### ties_sample (limit 4)\n\n* {JUDGE_TIES}\n" in md
    assert re.search(r"\| length \(length_pref\) +\| .*\|\n\n\* " + re.escape(JUDGE_PREF), md), md
    assert not re.search(r"\| model +\|\n\|[-:]+\|", md), md  # never a table of headers alone
    assert "#2" not in md and "#3" not in md
    assert md.count("value [95% bootstrap CI over groups].") == 1  # under the first table with cells


def test_one_table_lists_the_failed_runs_under_it_with_their_task(mixed):
    lb = build_leaderboard(find_runs([mixed]), layout="one")
    assert [r[0][0] for r in lb.main.rows] == ["oracle", "length (length)", "length (length_limit5)",
                                               "length (length_pref)"]
    assert "judge:judge-model" not in str(lb.main.rows)
    assert lb.main.failed_lines() == [
        f"judge:judge-model (run folder judge_ties) on ties_sample (limit 4): failed: {NO_REWARD_TIES}",
        JUDGE_PREF.replace(" (run folder judge_pref): ", " (run folder judge_pref) on preference: ")]
    headers = [c.header for c in lb.main.columns]
    assert "ties_sample (limit 5) acc" in headers and "preference acc" in headers
    assert not any(h.startswith("ties_sample (limit 4)") for h in headers)  # every run failed: no column


@pytest.mark.parametrize("fmt", format_names())
def test_every_format_shows_failed_runs_and_names_what_differs(mixed, fmt):
    lb = build_leaderboard(find_runs([mixed]), layout="per-task")
    text = render(lb, fmt)
    plain = text.replace("\\allowbreak{}", "").replace("\\_", "_")  # LaTeX: break points and escapes
    assert "the model gave no reward to 58 responses" in text and "judge_ties" in plain
    if fmt == "csv":
        rows = text.splitlines()
        assert rows[0].startswith("model,task,table,failed,acc,")
        assert ("judge:judge-model (judge_ties),ties_sample#3,ties_sample (limit 4),"
                f'"{NO_REWARD_TIES}"' + "," * 15) in rows  # its task and error, no values
        return
    if fmt == "json":
        doc = json.loads(text)
        alone = next(t for t in doc["tables"] if t["title"] == "ties_sample (limit 4)")
        assert alone["rows"] == [] and alone["failed"] == [
            {"model": "judge:judge-model", "folder": "judge_ties", "task": "ties_sample#3",
             "task_name": "ties_sample (limit 4)", "error": NO_REWARD_TIES}]
        assert doc["task_names"]["ties_sample#2"] == "ties_sample (limit 5)"
        return
    assert "ties_sample (limit 5)" in plain and "ties_sample (limit 4)" in plain and "#2" not in plain
    if fmt == "html":
        assert f'<h2>ties_sample (limit 4)</h2><ul class="failed"><li>{JUDGE_TIES}</li></ul>' in text
        assert "<tbody></tbody>" not in text
    if fmt == "latex":
        assert "\\caption{ties\\_sample (limit 4)}\n\\par\\smallskip" in text  # no tabular before its line
        assert "\\textit{Failed:} judge:judge-model (run folder judge_ties): failed: ModelError" in plain
        assert "\\begin{tabular}{l}" not in text


def test_column_groups_are_named_by_what_differs(mixed, tmp_path):
    own = tmp_path / "mine.jsonl"
    builtin = Path(__file__).parents[2] / "tasks" / "data" / "ties_builtin.jsonl"
    own.write_text("".join(builtin.read_text().splitlines(keepends=True)[:12]))
    evaluate(EvalConfig(model="length", data=(("ties_sample", str(own)),), n_bootstrap=20, use_cache=False),
             out_dir=tmp_path / "mine")
    evaluate(EvalConfig(model="length", eps_unit="raw", n_bootstrap=20, use_cache=False), out_dir=tmp_path / "raw")
    lb = build_leaderboard(find_runs([mixed / "length", mixed / "length_limit5", tmp_path / "mine",
                                      tmp_path / "raw"]))
    assert [lb.names[k] for k in lb.names] == ["ties_sample", "ties_sample (limit 5)",
                                               "ties_sample (data: mine.jsonl)", "ties_sample (eps raw)"]
    md = render(lb, "md")
    assert "### ties_sample (data: mine.jsonl)\n" in md and "### ties_sample (eps raw)\n" in md
    assert "* ties_sample (data: mine.jsonl): rb2_ties task v1, data " in md  # the legend, by the same name
    # the values follow the names: the raw group's unit first, as it is named first (issue 54)
    assert ("ties_sample (eps raw) of raw cannot share cells with ties_sample of length: eps unit raw vs sigma; "
            "shown apart") in lb.notes

    # a task version and a file edited between runs (nothing recorded tells them apart but the data)
    config, task = load_run(mixed / "length").record.config, load_run(mixed / "length").record.tasks[0]
    newer = dataclasses.replace(task, version=2)
    assert qualifiers("ties_sample", [(config, task), (config, newer)]) == ["task v1", "task v2"]
    edited = dataclasses.replace(task, data_fingerprint="f" * 64)
    assert qualifiers("ties_sample", [(config, task), (config, edited)]) == [
        f"data {task.data_fingerprint[:12]}", "data ffffffffffff"]
    assert qualifiers("ties_sample", [(config, task)]) == [""]


# --- why a column is empty: the true reason (item 5) -----------------------------------------

def test_a_judge_that_gave_no_reward_says_so_not_that_the_groups_lack_pairs(mixed):
    lb = build_leaderboard(find_runs([mixed / "judge_ties", mixed / "judge_pref"]))
    notes = [n for n in lb.notes if "undefined" in n]
    assert notes == [
        "judge:judge-model (judge_ties) on ties_sample: the task failed: the model gave no reward to any of its 58 "
        "responses (58 of its 58 judge replies gave no verdict), so acc, D@0.1σ, Spec@0.1σ, ds_auc, ties_score are "
        "undefined",
        "judge:judge-model (judge_pref) on preference: the task failed: the model gave no reward to any of its 8 "
        "responses (8 of its 8 judge replies gave no verdict), so acc, D@0.1σ, Spec@0.1σ, ds_auc are undefined"]
    assert not any("equally good" in n for n in lb.notes)
    md = render(lb, "md")  # every run failed: the lines alone (each naming its task), no empty table
    assert "| model" not in md
    on_ties = JUDGE_TIES.replace(" (run folder judge_ties): ", " (run folder judge_ties) on ties_sample: ")
    assert md.startswith(f"* {on_ties}\n* judge:judge-model (run folder judge_pref) on preference: failed: "), md


def test_a_task_that_failed_gives_its_error(tmp_path):
    (tmp_path / "broken_task.py").write_text(
        "from rmbench.errors import DataError\n"
        "from rmbench.tasks.jsonl import PreferenceTask\n"
        "class Broken(PreferenceTask):\n"
        "    def extra_metrics(self, groups, rewards):\n"
        "        def fail(units):\n"
        "            raise DataError('the score needs a field this data lacks')\n"
        "        return {'broken_score': fail}\n")
    pairs = _pairs(tmp_path / "pairs.jsonl")
    (tmp_path / "broken.yaml").write_text(f"name: broken\nkind: {tmp_path / 'broken_task.py'}:Broken\nversion: 1\n"
                                          f"args: {{path: {pairs}}}\n")
    evaluate(EvalConfig(model="length", tasks=("ties_sample", "broken"), include=(str(tmp_path),), n_bootstrap=10,
                        use_cache=False), out_dir=tmp_path / "run")
    lb = build_leaderboard([load_run(tmp_path / "run")])
    error = "DataError: the score needs a field this data lacks"
    assert [n for n in lb.notes if "undefined" in n] == [
        f"length on broken: the task failed ({error}), so acc, D@0.1σ, Spec@0.1σ, ds_auc are undefined"]
    assert lb.main.failed_lines() == [f"length (run folder run) on broken: failed: {error}"]
    assert [r[0][0] for r in lb.main.rows] == ["length"]  # its other task scored: the row stays
    assert not any(c.task == "broken" for c in lb.main.columns)


def test_data_without_equally_good_answers_says_so_for_spec_only(mixed):
    lb = build_leaderboard([load_run(mixed / "length_pref")])
    assert [n for n in lb.notes if "undefined" in n] == [
        "preference: Spec@0.1σ, ds_auc undefined: its groups hold no pair of equally good answers (0 specificity "
        "pairs, 4 of a better and a worse one)"]


def test_data_without_a_better_and_a_worse_answer_says_so_for_acc_and_d(tmp_path):
    groups = tmp_path / "equal.jsonl"
    groups.write_text("".join(json.dumps({"id": f"g{i}", "prompt": f"q{i}", "responses": ["yes", "yes indeed"],
                                          "utilities": [1, 1]}) + "\n" for i in range(4)))
    evaluate(EvalConfig(model="length", tasks=("groups",), data=(("groups", str(groups)),), n_bootstrap=10,
                        use_cache=False), out_dir=tmp_path / "run")
    lb = build_leaderboard([load_run(tmp_path / "run")])
    notes = [n for n in lb.notes if "undefined" in n]
    assert len(notes) == 1 and notes[0].startswith("groups: acc, D@0.1σ")
    assert notes[0].endswith("undefined: its groups hold no pair of a better and a worse answer (0 discrimination "
                             "pairs, 4 of equally good ones)")
    assert "Spec@0.1σ" not in notes[0]


def test_the_terminal_view_prints_failed_runs_as_lines_not_an_empty_grid(mixed):
    from typer.testing import CliRunner

    from rmbench.cli import app

    result = CliRunner().invoke(app, ["leaderboard", "build", str(mixed), "--layout", "per-task"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    out = result.output
    assert JUDGE_TIES in " ".join(out.split()) and JUDGE_PREF in " ".join(out.split())
    section = out[out.index("ties_sample (limit 4)"):out.index("preference")]
    lines = [line.strip(" │┃|") for line in section.splitlines()[1:]]
    assert [line for line in lines if line] == [JUDGE_TIES]  # the title, the failed run: no empty grid
